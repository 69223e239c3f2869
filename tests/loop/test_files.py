"""The files of a run, a sweep or a population (rlsuite.loop.files): strict JSON, written whole
or not at all, and a full disk said in one line that names the file, leaving nothing in the way
of the same command run again."""

import errno
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from rlsuite.app import cli
from rlsuite.loop.files import WriteError, float32_value, json_text, strict, write_json

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--no-progress"]
RUN = [
    "train",
    "ppo",
    "--env",
    "cartpole",
    *TINY,
    "--total-timesteps",
    "256",
    "--eval-episodes",
    "1",
]


def strict_load(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def full_disk_at(name: str):
    """`os.replace` that fails as a full disk does when it would put `name` in place."""
    real = os.replace

    def replace(src, dst):
        if pathlib.Path(dst).name == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(src, dst)

    return replace


def test_files_are_strict_json_and_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    value = {"a": np.float32(np.nan), "b": [1.5, np.inf, -np.inf], "c": np.arange(2), "d": (1,)}
    assert strict(value) == {"a": None, "b": [1.5, None, None], "c": [0, 1], "d": [1]}
    assert strict_load(json_text(value)) == strict(value)
    assert json_text({"x": float("nan")}, indent=None) == '{"x": null}\n'
    # A float32's shortest decimal: the same float32 when read back, without float32 noise.
    assert float(np.float32(3e-4)) == 0.0003000000142492354 and float32_value(3e-4) == 3e-4
    assert np.float32(float32_value(1 / 3)) == np.float32(1 / 3) and float32_value(1 / 3) != 1 / 3
    path = write_json(tmp_path / "x.json", {"v": 1})
    monkeypatch.setattr(os, "replace", full_disk_at("x.json"))
    with pytest.raises(WriteError) as caught:
        write_json(path, {"v": 2})
    assert str(caught.value) == f"could not write {path}: No space left on device"
    assert strict_load(path.read_text()) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]  # no temporary file left


def test_a_full_disk_as_a_run_starts_leaves_nothing_in_the_way(tmp_path, monkeypatch, capsys):
    out = tmp_path / "runs" / "a"
    monkeypatch.setattr(os, "replace", full_disk_at("config.json"))
    assert cli.main([*RUN, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"rlsuite train: error: could not write {out / 'config.json'}: No space left on device"
    )
    assert not (tmp_path / "runs").exists()  # the folders it made are gone again
    monkeypatch.undo()
    # A run killed before it saved anything left its config.json only: not a run to --out.
    out.mkdir(parents=True)
    (out / "config.json").write_text("")  # (as an in-place write cut short by a full disk did)
    assert cli.main([*RUN, "--out", str(out)]) == 0
    assert "is that of a run that saved nothing" in capsys.readouterr().err
    record = strict_load((out / "config.json").read_text())
    assert record["algo"] == "ppo" and strict_load((out / "final.json").read_text())["num_seeds"]
    # Now it holds a run, and the same command is refused without touching it.
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert cli.main([*RUN, "--out", str(out)]) == 2
    assert "already holds a run; continue it with --resume" in capsys.readouterr().err
    assert before == {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_a_full_disk_at_a_checkpoint_is_one_line_and_the_run_resumes(tmp_path, monkeypatch, capsys):
    from rlsuite.loop import checkpoint

    out = tmp_path / "run"
    write_items = checkpoint._write_items

    def full_disk_at_update_4(path, *args):
        if path.name.endswith("4"):  # orbax wraps the OSError in its own errors
            try:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path / "d" / "x"))
            except OSError as error:
                raise RuntimeError("commit failed in a background thread") from error
        return write_items(path, *args)

    monkeypatch.setattr(checkpoint, "_write_items", full_disk_at_update_4)
    args = [*RUN[:-4], "--total-timesteps", "384", "--chunks", "3", "--eval-episodes", "1"]
    assert cli.main([*args, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        f"rlsuite train: error: could not write checkpoint 4 in {out / 'checkpoints'}: No space "
        "left on device; stopped at update 4 of 6; the last complete checkpoint is update 2; "
        "continue "
        f"with: rlsuite train --resume {out}"
    )
    monkeypatch.undo()
    assert checkpoint.all_steps(out / "checkpoints") == [2]
    assert cli.main(["train", "--resume", str(out)]) == 0
    assert checkpoint.all_steps(out / "checkpoints") == [2, 4, 6]
    rows = [strict_load(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # Rows per 100 env steps within a chunk of two 64-step updates (320 and 384 share one).
    assert [r["env_steps"] for r in rows if r["seed"] == 0] == [64, 128, 192, 256, 384]


def test_ctrl_c_is_one_line_with_the_checkpoint_and_the_command_that_resumes(tmp_path):
    out = tmp_path / "run"
    args = [*RUN[:-4], "--total-timesteps", str(64 * 4000), "--chunks", "400"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlsuite.app.cli", *args, "--eval-episodes", "1", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while checkpoint_steps(out) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert checkpoint_steps(out) >= 2, proc.communicate()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    # At once, a line saying when it stops; then, the chunk saved, the line saying where.
    line = re.fullmatch(
        r"\nrlsuite: stopping once this chunk is saved \(Ctrl-C again to stop at once\)\n"
        r"rlsuite train: interrupted at update (\d+) of 4000; the last complete checkpoint is "
        rf"update (\d+); continue with: rlsuite train --resume {re.escape(str(out))}\n",
        stderr,
    )
    assert line is not None, stderr
    update, saved = map(int, line.groups())
    assert saved % 10 == 0 and update == saved and saved >= 20
    from rlsuite.loop import checkpoint

    assert checkpoint.latest_step(out / "checkpoints") == saved


def test_ctrl_c_while_compiling_stops_before_the_first_chunk(tmp_path, capsys, monkeypatch):
    # A SIGINT that arrives while XLA compiles is a stop request too, never raised where the
    # interpreter may drop it (a weakref finaliser); it used to be lost and the run went on.
    from rlsuite.loop import runner

    steady_layout = runner.steady_layout

    def interrupted_while_compiling(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return steady_layout(*args, **kwargs)

    monkeypatch.setattr(runner, "steady_layout", interrupted_while_compiling)
    out = tmp_path / "run"
    assert cli.main([*RUN, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert err.startswith("\nrlsuite: stopping once this chunk is saved"), err
    assert "rlsuite train: interrupted at update 0 of " in err, err
    assert not (out / "metrics.jsonl").exists() or not (out / "metrics.jsonl").read_text()
    assert not (out / "final.json").exists()


def checkpoint_steps(out: pathlib.Path) -> int:
    folder = out / "checkpoints"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


@pytest.mark.skipif(not pathlib.Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_every_command_refuses_an_output_it_cannot_write_before_it_works(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main([*RUN, "--out", str(run)]) == 0
    capsys.readouterr()
    cases = {
        ("report", run, "--out", "/proc/r.md"): "--out /proc/r.md: /proc cannot be written to",
        (
            "report",
            run,
            "--out",
            tmp_path / "no" / "r.md",
        ): f"{tmp_path / 'no'} is not a directory",
        ("stats", run, "--out", "/proc/s"): "--out /proc/s: /proc cannot be written to",
        ("plot", run, "--out", "/proc/p.png"): "--out /proc/p.png: /proc cannot be written to",
        ("render", run, "--out", "/proc/v.gif"): "--out /proc/v.gif: /proc cannot be written to",
        ("train", "ppo", "--out", "/proc/run"): "--out /proc/run: /proc cannot be written to",
    }
    for args, message in cases.items():
        assert cli.main(list(map(str, args))) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (args, err)
    assert sorted(p.name for p in run.iterdir()) == [
        "checkpoints", "config.json", "final.json", "metrics.csv", "metrics.jsonl"
    ]  # fmt: skip
