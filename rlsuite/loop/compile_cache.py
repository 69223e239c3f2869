"""JAX's persistent compilation cache, on by default for `rlsuite` and the experiment scripts:
a run compiled once starts its next identical run from the cached programs.

    rlsuite train ppo --env cartpole                        # cached in ~/.cache/rlsuite/jax
    RLSUITE_COMPILATION_CACHE=/scratch/jax rlsuite train ...  # elsewhere
    rlsuite train ppo --compilation-cache off               # not at all (also the variable's "off")

The folder: `--compilation-cache` (train, sweep, pbt), else `RLSUITE_COMPILATION_CACHE`, else
JAX's own `JAX_COMPILATION_CACHE_DIR`, else `$XDG_CACHE_HOME/rlsuite/jax` (`~/.cache/...`).
Every program is cached however short its compilation (a warm start then loads them all).
`use_compilation_cache` is what the command line calls before anything compiles; a notebook or
a script of one's own calls it at its top. `saved()` says what the cache saved this process.
JAX keeps the cache from where it was first turned on: a later call changes nothing.
"""

from __future__ import annotations

import os
import pathlib

import jax

VARIABLE = "RLSUITE_COMPILATION_CACHE"
OFF = "off"
_saved = {"programs": 0, "seconds": 0.0, "listening": False}


def default_dir() -> pathlib.Path:
    """`$XDG_CACHE_HOME/rlsuite/jax`, or `~/.cache/rlsuite/jax`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "rlsuite" / "jax"


def use_compilation_cache(where: str | os.PathLike | None = None) -> pathlib.Path | None:
    """Turn the persistent compilation cache on in `where` (`"off"`: leave it off), else where
    `RLSUITE_COMPILATION_CACHE`, `JAX_COMPILATION_CACHE_DIR` or `default_dir()` says; returns
    the folder, or None where it is off."""
    chosen = where if where is not None else os.environ.get(VARIABLE)
    if chosen is None:
        chosen = jax.config.jax_compilation_cache_dir or default_dir()
    if str(chosen).strip().lower() == OFF:
        jax.config.update("jax_enable_compilation_cache", False)
        return None
    folder = pathlib.Path(chosen).expanduser()
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    if not _saved["listening"]:
        jax.monitoring.register_event_duration_secs_listener(_count)
        _saved["listening"] = True
    return folder


def _count(event: str, seconds: float, **_) -> None:
    if event == "/jax/compilation_cache/compile_time_saved_sec":
        _saved["programs"] += 1
        _saved["seconds"] += max(seconds, 0.0)


def saved() -> tuple[int, float]:
    """The programs this process loaded from the cache, and the compiling that saved (their
    compile times as recorded, less the time reading them)."""
    return _saved["programs"], _saved["seconds"]


def said() -> str:
    """A few words on what the cache did, for a run's last line: `""` where it is off."""
    if not jax.config.jax_enable_compilation_cache or not jax.config.jax_compilation_cache_dir:
        return ""
    programs, seconds = saved()
    where = jax.config.jax_compilation_cache_dir
    if not programs:
        return f"; the compiled programs are cached in {where} for the next run"
    plural = "" if programs == 1 else "s"
    return f"; {programs} program{plural} loaded from {where}, {seconds:.1f} s of compiling saved"
