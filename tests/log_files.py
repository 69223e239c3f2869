"""Readers of the files the logging backends write, for tests: TensorBoard event files and
W&B offline run files, read without the backends' own readers (tensorboardX has none; wandb's
is internal)."""

import json
import struct
import time


def tensorboard_events(out_dir) -> list[list]:
    """The events of each file under ``out_dir/tensorboard``, oldest file first, read with the
    TFRecord framing (8-byte length, 4-byte CRC, payload, 4-byte CRC) and tensorboardX's
    ``Event`` message: ``("scalar", tag, step, value)`` or ``("start", step)``."""
    from tensorboardX.proto.event_pb2 import Event, SessionLog

    files = []
    for path in sorted((out_dir / "tensorboard").glob("events.out.tfevents.*")):
        data, pos, events = path.read_bytes(), 0, []
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            event = Event.FromString(data[pos + 12 : pos + 12 + length])
            pos += 12 + length + 4
            if event.HasField("summary"):
                events += [
                    ("scalar", v.tag, event.step, v.simple_value) for v in event.summary.value
                ]
            elif event.session_log.status == SessionLog.START:
                events.append(("start", event.step))
        files.append(events)
    return files


def wandb_history(out_dir, timeout: float = 60.0) -> dict[str, list[dict]]:
    """The rows each offline W&B run under ``out_dir/wandb`` holds, by run folder, read from its
    ``run-<id>.wandb`` file: a ':W&B' header of 7 bytes, then LevelDB log records in 32 KiB
    blocks (4-byte CRC, 2-byte length, 1-byte type: 1 full, 2 first, 3 middle, 4 last), each
    record a ``wandb_internal_pb2.Record``.

    wandb's service process writes the file and may still be writing it when ``finish()`` has
    returned (seen on a loaded machine: a file with none of its rows yet), so each file is read
    again until it holds the run's exit record, for up to ``timeout`` seconds."""
    runs = {}
    for path in sorted((out_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        deadline = time.monotonic() + timeout
        rows, ended = _wandb_records(path)
        while not ended and time.monotonic() < deadline:
            time.sleep(0.1)
            rows, ended = _wandb_records(path)
        assert ended, f"{path} has no exit record after {timeout} s"
        runs[path.parent.name] = rows
    return runs


def _wandb_records(path) -> tuple[list[dict], bool]:
    """(history rows, whether the exit record is there) of one offline run file."""
    from wandb.proto.wandb_internal_pb2 import Record

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, pending, rows, ended = 7, b"", [], False
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            break
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record, pending = Record.FromString(pending), b""
            which = record.WhichOneof("record_type")
            ended = ended or which == "exit"
            if which == "history":
                item = record.history.item  # a key is `key` or, split at "/", `nested_key`
                items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in item}
                rows.append({k: v for k, v in items.items() if not k.startswith("_")})
    return rows, ended
