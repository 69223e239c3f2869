"""The files a run, a sweep or a population writes: each whole or not at all, and JSON strict.

    write_json(out / "final.json", summary)   # NaN and infinities become null
    write_text(out / "sweep.md", text)

A file is written to a temporary file beside it (`.NAME.tmp`), flushed to disk and renamed over
`path`, so that a reader (or a resume after a kill or a full disk) finds the old file or the new
one, never a part. JSON has no literal for a number that is not finite: `strict` writes it as
`null` (as `metrics.jsonl` does, `rlsuite.loop.loggers`), so that every file parses with a strict
JSON parser. A write that fails (`OSError`: a full disk, a folder that cannot be written) leaves
`path` as it was, removes the temporary file and raises `WriteError`, one line naming the path and
the cause.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np


class WriteError(OSError):
    """A file of the suite could not be written: `path` (or `what` was being written there)
    and the cause, in one line. `where` is set by the loop that was writing it
    (`rlsuite.loop.runner.Where`: how far the run got)."""

    where = None

    def __init__(self, path, error: OSError, what: str | None = None):
        self.path = pathlib.Path(path)
        cause = error.strerror or str(error)
        super().__init__(error.errno, f"could not write {what or self.path}: {cause}")

    def __str__(self) -> str:
        return self.strerror


def os_error_in(error: BaseException) -> OSError | None:
    """The first `OSError` with an errno in `error`'s causes and contexts (and, for a group, its
    exceptions), or an error whose message carries one (tensorstore's `[os_error_code='28']`,
    which orbax raises as a `ValueError`): what a library's own wrapping of a failed write
    hides."""
    seen, todo = set(), [error]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None:
            return e
        code = re.search(r"\[os_error_code='(\d+)'\]", str(e))  # tensorstore's, under orbax
        if code is not None:
            return OSError(int(code.group(1)), os.strerror(int(code.group(1))))
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return None


def strict(value: Any) -> Any:
    """`value` with every float that is not finite as None, numpy scalars and arrays as Python
    numbers and lists, and tuples as lists: what `json.dumps(..., allow_nan=False)` accepts."""
    if isinstance(value, Mapping):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    if isinstance(value, np.ndarray):
        return strict(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def float32_value(value) -> float:
    """`value` as the float32 a run computes with, as the shortest decimal that is that float32:
    0.001, not 0.0010000000474974513 (what `float(np.float32(0.001))` prints); reading it back
    as a float32 gives the same bits."""
    exact = np.float32(value)
    shortest = float(str(exact))
    return shortest if np.float32(shortest) == exact else float(exact)  # (read through float64)


def json_text(value: Any, indent: int | None = 2) -> str:
    """`value` as strict JSON text, ending with a newline."""
    return json.dumps(strict(value), indent=indent, allow_nan=False) + "\n"


def write_text(path, text: str) -> pathlib.Path:
    """Write `text` to `path` atomically (a temporary file beside it, then a rename)."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise WriteError(path, error) from None
    sync_dir(path.parent)
    return path


def write_json(path, value: Any, indent: int | None = 2) -> pathlib.Path:
    """Write `value` to `path` as strict JSON, atomically."""
    return write_text(path, json_text(value, indent))


def append_text(path, text: str) -> None:
    """Append `text` to `path` and flush it to disk (for files that grow by lines)."""
    path = pathlib.Path(path)
    try:
        with open(path, "a", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as error:
        raise WriteError(path, error) from None


def unwritable(path) -> str | None:
    """Why nothing could be written at `path` (a file, or a folder to make and fill), probed
    before any work by making a temporary file in `path`'s nearest folder that exists; None
    where it can be."""
    path = pathlib.Path(path).absolute()
    folder = next(p for p in (path, *path.parents) if p.exists())
    if not folder.is_dir():
        return f"{folder} is a file, not a directory"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return f"{folder} cannot be written to ({error.strerror or error})"
    return None


def sync_dir(directory) -> None:
    """Make a rename in `directory` durable (where the platform allows opening a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_in_the_way(path) -> pathlib.Path | None:
    """The first of `path` and its parents that exists and is not a directory (so that no
    directory can be made at `path`), or None."""
    path = pathlib.Path(path)
    return next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)


def derived(path, what: str, suffix: str = ".png") -> pathlib.Path:
    """The file a command writes beside `path`, named for what it holds: `demo.md`'s curves are
    `demo.curves.png`. Each command derives its own words (`rlsuite render`: `first-frame`;
    `rlsuite report`: `curves`, `environment`), so two commands given one stem never collide."""
    path = pathlib.Path(path)
    return path.with_name(f"{path.stem}.{what}{suffix}")


def check_new_file(
    path, flag: str = "--out", overwrite: bool = False, hint: str = ""
) -> pathlib.Path:
    """Refuse, before anything runs, a `path` that a new file cannot be written to: one under a
    file or where no folder can be made or written to, a directory, or (unless `overwrite`) an
    existing file; `hint` ends the message of that last.
    Returns `path` as a `pathlib.Path`."""
    path = pathlib.Path(path)
    blocked = file_in_the_way(path.parent)
    if blocked is not None:
        raise ValueError(f"{flag} {path}: {blocked} is a file, not a directory")
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give the name of a file")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; choose another {flag}{hint}")
    reason = unwritable(path.parent)
    if reason is not None:
        raise ValueError(f"{flag} {path}: {reason}")
    return path
