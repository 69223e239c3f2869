"""The step folders of a checkpoint directory (``rlsuite.loop.checkpoint``): which steps are
complete (``all_steps``, ``latest_step``), which were cut short (``incomplete_steps``), a step
found by number or the latest, its JSON items read (``read_metadata``), a step deleted whole, and
what a cut-short save or delete left removed. ``CheckpointError`` is every refusal of the
checkpoint modules; ``checkpoint`` re-exports it and the public names here.
"""

import contextlib
import io
import os
import pathlib
import re
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any

_STATE, _METADATA, _MANIFEST = "state", "metadata", "manifest"


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be used as asked (missing, corrupt, foreign)."""


# What orbax's reads or writes still running when another failed print once orbax has closed its
# event loop: tensorstore's threads post their results to the closed loop (asyncio's
# `call_soon_threadsafe`), a traceback each, ending `RuntimeError: Event loop is closed`.
_CLOSED_LOOP = re.compile(
    r"Traceback \(most recent call last\):"
    r"|File \"[^\"]*asyncio[/\\]base_events\.py\", line \d+, in "
    r"(call_soon_threadsafe|_check_closed)"
    r"|self\._check_closed\(\)"
    r"|raise RuntimeError\('Event loop is closed'\)"
    r"|RuntimeError: Event loop is closed"
)


@contextlib.contextmanager
def _closed_loop_reports_dropped(settle: float = 0.2, limit: float = 2.0):
    """Hold what is printed to `sys.stderr` while an orbax call runs and pass it on after;
    where the call failed, first wait until its stragglers stop printing (`settle` seconds of
    quiet, `limit` at most) and drop their closed-loop tracebacks (`_CLOSED_LOOP`), so that a
    corrupt checkpoint or a full disk is said in its one line."""
    held, failed = io.StringIO(), False
    try:
        with contextlib.redirect_stderr(held):
            try:
                yield
            except BaseException:
                failed = True
                start, size = time.monotonic(), -1
                while held.tell() != size and time.monotonic() - start < limit:
                    size = held.tell()
                    time.sleep(settle)
                raise
    finally:
        text = held.getvalue()
        if failed:
            text = _CLOSED_LOOP.sub("", text)
            text = text if text.strip() else ""
        sys.stderr.write(text)


def _brief(error: Exception, limit: int = 300) -> str:
    """``Type: message`` cut to ``limit`` characters (the full error is chained)."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[:limit] + " ..."


def _ocp():
    import orbax.checkpoint as ocp  # heavy: imported on first use

    return ocp


_COMPLETE = "COMPLETE"  # written last into a staged step, before its rename to <step>
_STAGING, _DELETING = ".staging-", ".deleting-"


def _is_complete(step_dir: pathlib.Path) -> bool:
    """Whether a directory named by a step holds a whole checkpoint: the marker ``save`` writes
    last, or (a step saved by an earlier version, without it) all three items and orbax's own
    top-level metadata (a delete cut short removes some of these first)."""
    if (step_dir / _COMPLETE).is_file():
        return True
    items = all((step_dir / name).is_dir() for name in (_STATE, _METADATA, _MANIFEST))
    return items and (step_dir / "_CHECKPOINT_METADATA").is_file()


def _step_dirs(directory: pathlib.Path) -> dict[int, pathlib.Path]:
    """Complete step directories named by a plain integer."""
    if not directory.is_dir():
        return {}
    return {
        int(p.name): p
        for p in directory.iterdir()
        if p.name.isdigit() and p.is_dir() and _is_complete(p)
    }


def incomplete_steps(directory) -> list[int]:
    """Steps whose save was cut short: a staged step never committed, or a directory named by a
    step that is not complete (an earlier version's save or delete cut short). ``latest_step``
    and ``restore`` ignore them; the next ``save`` removes them."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        return []
    steps = set()
    for path in directory.iterdir():
        name = path.name.split(".orbax-checkpoint-tmp")[0]
        if name.startswith(_STAGING) and name[len(_STAGING) :].isdigit():
            steps.add(int(name[len(_STAGING) :]))
        elif path.name.isdigit() and path.is_dir() and not _is_complete(path):
            steps.add(int(path.name))
    return sorted(steps)


def all_steps(directory) -> list[int]:
    """Sorted steps of the complete checkpoints in ``directory`` (``[]`` if there is none)."""
    return sorted(_step_dirs(pathlib.Path(directory)))


def latest_step(directory) -> int | None:
    """Newest complete step in ``directory``; ``None`` if none (temporary dirs are ignored)."""
    steps = all_steps(directory)
    return steps[-1] if steps else None


def _find_step(directory: pathlib.Path, step: int | None) -> tuple[int, pathlib.Path]:
    if not directory.exists():
        raise CheckpointError(f"checkpoint directory {directory} does not exist.")
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory {directory} is not a directory.")
    steps = _step_dirs(directory)
    if not steps:
        raise CheckpointError(f"checkpoint directory {directory} holds no complete checkpoint.")
    if step is None:
        step = max(steps)
    if step not in steps:
        raise CheckpointError(
            f"checkpoint directory {directory} has no complete step {step} "
            f"(complete steps: {sorted(steps)})."
        )
    return step, steps[step]


def _read_json_items(step_dir: pathlib.Path, names: Sequence[str]) -> dict[str, Any]:
    ocp = _ocp()
    args = ocp.args.Composite(**{name: ocp.args.JsonRestore() for name in names})
    try:
        handler = ocp.CompositeCheckpointHandler()
        with ocp.Checkpointer(handler) as checkpointer:
            restored = checkpointer.restore(step_dir, args=args)
        items = {name: restored[name] for name in names}
    except Exception as e:
        raise CheckpointError(
            f"checkpoint {step_dir} is unreadable or corrupt ({', '.join(names)}): {_brief(e)}"
        ) from e
    for name, item in items.items():
        if not isinstance(item, dict):
            raise CheckpointError(f"checkpoint {step_dir} has a corrupt {name!r} item.")
    return items


def read_metadata(directory, step: int | None = None) -> dict:
    """The metadata dict saved with ``step`` (latest complete step by default)."""
    _, step_dir = _find_step(pathlib.Path(directory), step)
    return _read_json_items(step_dir, [_METADATA])[_METADATA]


def _delete_step(directory: pathlib.Path, step: int) -> None:
    """Remove a complete step: renamed away first, so that it is never seen half-deleted."""
    doomed = directory / f"{_DELETING}{step}"
    os.replace(directory / str(step), doomed)
    shutil.rmtree(doomed)


def _remove_leftovers(directory: pathlib.Path) -> None:
    """What a save or delete cut short left: staged and doomed directories, orbax temporary
    directories, and step-named directories that are not complete (``incomplete_steps``)."""
    for path in directory.iterdir():
        name = path.name
        leftover = name.startswith((_STAGING, _DELETING)) or ".orbax-checkpoint-tmp" in name
        leftover = leftover or (name.isdigit() and path.is_dir() and not _is_complete(path))
        if leftover and path.is_dir():
            shutil.rmtree(path)
