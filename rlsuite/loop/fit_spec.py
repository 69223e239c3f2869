"""What `rlsuite.loop.runner.fit` is asked, as records, and their checks: what runs and for how long
(`Schedule`), where its files go (`Output`), what is called between chunks (`Callbacks`), the
evaluation at the end (`Final`), and what comes back (`FitResult`). `checked` refuses a bad value
of any of them before anything is compiled; `chunk_length` sets how long a chunk is.

`runner` re-exports every name here, so `runner.Schedule(...)` is how a caller writes them.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from rlsuite.loop.files import file_in_the_way
from rlsuite.loop.loggers import check_backends

INT32_MAX = 2**31 - 1  # the largest step count a run's 32-bit counters on device hold


@dataclasses.dataclass
class FitResult:
    states: Any  # the batched learner state, leading axis [num_seeds]
    metrics: dict  # name -> np.ndarray [num_seeds, updates run in this call]
    eval_returns: np.ndarray  # [num_seeds, eval_episodes]
    summary: dict  # what final.json holds


@dataclasses.dataclass(frozen=True)
class Schedule:
    """What runs, and for how long: `num_seeds` runs (one set of hparams for all, or with
    `hparams_axis=0` one per run, `seeds_per_config` seeds of each configuration) of
    `num_updates` updates (default: the agent's), in chunks of `chunk_updates` (default:
    `chunk_length(num_updates)`)."""

    num_seeds: int = 1
    num_updates: int | None = None
    chunk_updates: int | None = None
    hparams_axis: int | None = None
    seeds_per_config: int | None = None


@dataclasses.dataclass(frozen=True)
class Output:
    """Where a run's files go (none without `out_dir`) and what they say: `resume` continues the
    run in `out_dir`; `env_name` and `metadata` are saved with each checkpoint (a resume must
    present the same); `logger_options` are `MetricsLogger`'s."""

    out_dir: str | pathlib.Path | None = None
    resume: bool = False
    env_name: str = ""
    progress: bool = True
    logger_options: dict | None = None
    metadata: dict | None = None


@dataclasses.dataclass(frozen=True)
class Callbacks:
    """`on_chunk(update, metrics)` after each chunk is saved; `between_chunks(states, metrics,
    update)` returns the states the next chunk starts from (see `fit`)."""

    on_chunk: Callable[[int, dict], None] | None = None
    between_chunks: Callable[[Any, dict, int], Any] | None = None


@dataclasses.dataclass(frozen=True)
class Final:
    """The evaluation at the end: `eval_episodes` per run, and with `reference_returns=(random,
    expert)` D4RL's normalised scores."""

    eval_episodes: int = 10
    reference_returns: tuple[float, float] | None = None


def checked(agent, schedule: Schedule, output: Output, final: Final) -> Schedule:
    """`schedule` with its lengths resolved, after every check of the values."""
    num_updates = schedule.num_updates
    num_updates = agent.config.num_updates if num_updates is None else num_updates
    chunk_updates = schedule.chunk_updates
    for name, value in (
        ("num_seeds", schedule.num_seeds),
        ("num_updates", num_updates),
        ("chunk_updates", 1 if chunk_updates is None else chunk_updates),
        ("eval_episodes", final.eval_episodes),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"fit: {name} must be an int >= 1, got {value!r}")
    num_updates = int(num_updates)
    check_int32_steps(agent, num_updates)
    chunk_updates = chunk_length(num_updates) if chunk_updates is None else int(chunk_updates)
    hparams_axis, seeds_per_config = schedule.hparams_axis, schedule.seeds_per_config
    if hparams_axis not in (None, 0):
        raise ValueError(
            f"fit: hparams_axis must be None (one hparams for every run) or 0 (a batch of "
            f"hparams, one per run), got {hparams_axis!r}"
        )
    if seeds_per_config is not None and (
        hparams_axis != 0
        or not isinstance(seeds_per_config, int)
        or seeds_per_config < 1
        or schedule.num_seeds % seeds_per_config
    ):
        raise ValueError(
            f"fit: seeds_per_config={seeds_per_config!r} needs hparams_axis=0 and must divide "
            f"num_seeds={schedule.num_seeds}"
        )
    if output.resume and output.out_dir is None:
        raise ValueError("fit: resume=True needs the out_dir of the run to continue")
    if output.out_dir is not None:
        blocked = file_in_the_way(output.out_dir)
        if blocked is not None:
            raise ValueError(f"fit: out_dir {output.out_dir}: {blocked} is a file, not a directory")
        check_backends(**(output.logger_options or {}))
    return dataclasses.replace(schedule, num_updates=num_updates, chunk_updates=chunk_updates)


def check_int32_steps(agent, num_updates: int) -> None:
    """Refuse a run whose steps per seed (`num_updates` x `env_steps_per_update`), or whose
    config's `total_timesteps`, pass what JAX's default 32-bit integers hold on device."""
    steps = num_updates * agent.env_steps_per_update
    asked = getattr(agent.config, "total_timesteps", 0)
    if max(steps, asked) > INT32_MAX:
        raise ValueError(
            f"fit: {agent.name} would take {max(steps, asked):,} steps per seed; a run counts its "
            f"steps in 32-bit integers on device, at most {INT32_MAX:,} (2^31 - 1): lower "
            "total_timesteps (--total-timesteps) or the updates"
        )


def chunk_length(num_updates: int, chunks: int = 10) -> int:
    """The updates per chunk for about `chunks` chunks of a `num_updates`-update run.

    Each chunk length is a compilation, so where some count of chunks between half and twice
    `chunks` divides `num_updates`, the one nearest `chunks` (the larger on a tie) sets a length
    that every chunk has: 976 updates in 8 chunks of 122, not 10 of 97 and one of 6. Otherwise
    `num_updates // chunks` (at least 1), and the last chunk is shorter.
    """
    counts = range(max(1, -(-chunks // 2)), min(2 * chunks, num_updates) + 1)
    dividing = [c for c in counts if num_updates % c == 0]
    if dividing:
        return num_updates // min(dividing, key=lambda c: (abs(c - chunks), -c))
    return max(1, num_updates // chunks)
