"""Bad input, reported as the command line reports it.

A check of the suite that refuses its input raises `UsageError` (or a `ValueError`, `TypeError`,
...: `INPUT_ERRORS`); `rlsuite` prints it as `rlsuite COMMAND: error: ...` and exits with status 2,
and an experiment script does the same through `run_script`:

    if __name__ == "__main__":
        run_script(main, sys.argv[1:])

An error raised inside a library (jax, orbax, h5py, ...) is a fault rather than bad input, and
keeps its traceback (`raised_here`).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import pathlib
import re
import sys
import traceback
import warnings


class UsageError(ValueError):
    """A bad command line: reported as `error: ...` with exit status 2."""


# What a check that refuses the input raises (and, raised elsewhere, a fault).
INPUT_ERRORS = (UsageError, ValueError, TypeError, FileExistsError, MemoryError)


def choose(kind: str, name: str, allowed) -> None:
    """Refuse `name` unless it is one of `allowed`, naming the closest and every allowed value."""
    if name not in allowed:
        close = closest(name, allowed)
        hint = f"; did you mean {close!r}?" if close else ""
        raise UsageError(f"unknown {kind} {name!r}{hint} (allowed: {', '.join(allowed)})")


def closest(name: str, allowed) -> str | None:
    """The allowed value that `name` most likely stands for, or None: one whose words' initials
    it is (`--lr`: `--learning-rate`), else one whose words it begins, each in its place
    (`--num-env`: `--num-envs`, `--learning`: `--learning-rate`), else the closest spelling
    (difflib's, at least 0.6 alike); among several, the closest spelling. Words are parted by
    `-`, `_`, `.` and `/`, and leading dashes are not compared."""
    allowed, typed = list(allowed), _words(name)
    joined = "".join(typed)

    def initials(value: str) -> bool:
        return "".join(w[0] for w in _words(value)) == joined

    def begun(value: str) -> bool:
        words = _words(value)
        return len(words) >= len(typed) and all(
            w.startswith(t) for w, t in zip(words, typed, strict=False)
        )

    for matches in (initials, begun):
        found = [value for value in allowed if len(joined) > 1 and matches(value)]
        if found:
            return difflib.get_close_matches(name, found, n=1, cutoff=0.0)[0]
    bare = {value.lstrip("-"): value for value in allowed}
    close = difflib.get_close_matches(name.lstrip("-"), list(bare), n=1)
    return bare[close[0]] if close else None


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_./]+", name.lstrip("-").lower()) if w]


@contextlib.contextmanager
def said_warnings(prefix: str):
    """Within it, a config's warning (`rlsuite.ops.validators.ConfigWarning`) is printed as one
    line, `<prefix>: warning: ...` (`rlsuite train`, a script's name); any other as Python
    prints it."""
    from rlsuite.ops.validators import ConfigWarning

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, ConfigWarning):
                print(f"{prefix}: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def raised_here(error: BaseException, *files: str | pathlib.Path) -> bool:
    """Whether `error` was raised in the suite's own code (`rlsuite`, `envs`) or in one of
    `files` (a script's): one of its checks refusing the input, reported in one line. One raised
    inside a library (jax, orbax, h5py, ...) is a fault rather than bad input, and keeps its
    traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    roots = [pathlib.Path(__file__).parents[1]]  # rlsuite/
    spec = importlib.util.find_spec("rlsuite.envs")  # installed from the repository's envs/
    if spec is not None and spec.origin is not None:
        roots.append(pathlib.Path(spec.origin).parent)
    last = pathlib.Path(frames[-1].filename).resolve()
    return any(last.is_relative_to(root.resolve()) for root in roots) or any(
        last == pathlib.Path(f).resolve() for f in files
    )


INTERRUPTED = 130  # the exit status of Ctrl-C: 128 + SIGINT, as a shell reports it


def stopped(error: BaseException, resume: str | None = None) -> str:
    """One line for a run stopped by Ctrl-C (`KeyboardInterrupt`) or a failed write
    (`rlsuite.loop.files.WriteError`): what happened, how far the run got, its last complete
    checkpoint and, with `resume` (the command that continues a run, without its directory),
    how to go on. `error.where` (`rlsuite.loop.runner.Where`) says how far; without it (stopped
    before training, or outside a run) the line says what happened only."""
    what = "interrupted" if isinstance(error, KeyboardInterrupt) else f"error: {error}"
    where = getattr(error, "where", None)
    if where is None or where.out_dir is None:
        return what
    if where.checkpoint is None:
        kept = "no checkpoint yet, so a resume starts it again"
    else:
        kept = f"the last complete checkpoint is update {where.checkpoint}"
    at = f"at update {where.update} of {where.num_updates}"
    line = f"{what} {at}; {kept}" if what == "interrupted" else f"{what}; stopped {at}; {kept}"
    return line if resume is None else f"{line}; continue with: {resume} {where.out_dir}"


def run_script(main, *args):
    """Call an experiment script's `main(*args)` and return what it returns, reporting bad input
    as `rlsuite` does: an error that a check of the suite, or of the script itself, raised is
    printed as `<script>: error: <message>` and exits with status 2; Ctrl-C and a failed write
    (a full disk) are one line each too (exit status 130 and 1); any other keeps its traceback.
    A config's warning is one line (`said_warnings`). The compilation cache is on first
    (`rlsuite.loop.compile_cache`).

        if __name__ == "__main__":
            run_script(main, sys.argv[1:])
    """
    from rlsuite.loop.compile_cache import use_compilation_cache
    from rlsuite.loop.files import WriteError

    script = pathlib.Path(main.__code__.co_filename)
    use_compilation_cache()  # (RLSUITE_COMPILATION_CACHE=off: none)
    try:
        with said_warnings(script.name):
            return main(*args)
    except INPUT_ERRORS as error:
        if not raised_here(error, script):
            raise
        print(f"{script.name}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except (WriteError, KeyboardInterrupt) as error:  # a full disk, Ctrl-C: one line each
        print(f"{script.name}: {stopped(error)}", file=sys.stderr)
        raise SystemExit(1 if isinstance(error, WriteError) else INTERRUPTED) from None
