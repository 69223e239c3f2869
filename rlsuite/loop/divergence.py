"""Diverged runs: a run whose parameters are no longer finite numbers.

After every chunk `fit` checks each run's trainable state (`Agent.trainable(state)`: its networks'
parameters and optimiser state; the whole state where an agent declares none) for a NaN or an
infinity. A run that holds one has diverged; the other runs of the batch go on (a vmapped run
never reads another's values), and so does it, to the end, so that a run and its resume keep the
same chunks. Losses that are not finite while the parameters are (an off-policy agent before its
first gradient step logs NaN losses) are not divergence.

The update at which a run diverged is located within its chunk by its losses: the first update
from which every later update of the chunk has a `losses/*` value that is not finite (the chunk's
last update where its losses stayed finite). Updates count from 1. Where it is reported:

- the terminal: one line per run as it diverges (`rlsuite: warning: seed 2 diverged ...`);
- `metrics.jsonl`: from the first chunk in which a run diverged, every row has `charts/diverged`,
  1 from the row of that update on, else 0 (rows of a run that never diverges lack it);
- the checkpoints' metadata (`diverged`), so that a resume reports the same;
- `final.json`: `diverged_at_update` (per run, null where it did not diverge) and
  `diverged_seeds`; every `*_per_seed` result of a diverged run is null, and the matching `*_mean`
  is the mean over the runs that did not diverge (null where none is left).

`rlsuite train` exits with status `EXIT_DIVERGED` (3) when every run diverged, else 0: one run
left is a result; none is a failure that a script or a scheduler should see. `rlsuite sweep`,
`rlsuite pbt`, `rlsuite stats`, `plot` and `report` rank a diverged run last (docs/design.md,
section 4).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

DIVERGED = "charts/diverged"  # the metrics column
EXIT_DIVERGED = 3  # `rlsuite train`'s exit status when every run diverged
LOSSES = "losses/"


def finite_check(trainable: Callable[[Any], Any] | None) -> Callable[[Any], np.ndarray]:
    """A jitted `states -> [runs] bool`: whether each run's trainable part (`trainable(state)`
    of one run; the whole state for None) holds finite numbers only (integers always do)."""

    def finite(states):
        parts = states if trainable is None else jax.vmap(trainable)(states)
        runs = jax.tree.leaves(states)[0].shape[0]
        ok = jnp.ones((runs,), bool)
        for leaf in jax.tree.leaves(parts):
            if jnp.issubdtype(leaf.dtype, jnp.inexact):
                ok &= jnp.isfinite(leaf.reshape(runs, -1)).all(axis=1)
        return ok

    return jax.jit(finite)


def located(metrics: dict, run: int) -> int:
    """The index, within a chunk's `metrics` (`[runs, updates]` each), of the first update of
    `run` from which every update has a `losses/*` value that is not finite; the last index where
    the last update's losses are finite (or the agent logs none)."""
    losses = [np.asarray(v[run], np.float64) for k, v in metrics.items() if k.startswith(LOSSES)]
    if not losses:
        return jax.tree.leaves(metrics)[0].shape[1] - 1
    bad = ~np.all([np.isfinite(v) for v in losses], axis=0)
    start = len(bad)
    while start > 0 and bad[start - 1]:
        start -= 1
    return min(start, len(bad) - 1)


@dataclasses.dataclass
class Divergence:
    """Per run, the update at which it diverged (None while it has not); `observe` after each
    chunk. A run whose state is finite again (population-based training replaced it with a
    better member's) is no longer diverged."""

    at: list[int | None]
    steps_per_update: int = 1
    seeds_per_config: int | None = None  # a sweep's: its runs are configurations x seeds
    hparams_batch: bool = False  # one set of hparams per run (a sweep, a population)

    @classmethod
    def start(cls, num_runs: int, saved: list | None, steps_per_update: int, schedule=None):
        """A run's record: none diverged, or what its last checkpoint saved (`saved`); its runs
        are named as `schedule` (`rlsuite.loop.runner.Schedule`) batches them."""
        at = [None] * num_runs if saved is None else [None if u is None else int(u) for u in saved]
        if schedule is None:
            return cls(at, steps_per_update)
        batch = schedule.hparams_axis is not None
        return cls(at, steps_per_update, schedule.seeds_per_config, batch)

    def name(self, run: int) -> str:
        """`seed i` of a seed batch, `run i` of a batch of hparams, with its configuration and
        seed in a sweep."""
        if self.seeds_per_config is not None:
            per = self.seeds_per_config
            return f"run {run} (configuration {run // per}, seed {run % per})"
        return f"run {run}" if self.hparams_batch else f"seed {run}"

    def observe(self, finite: np.ndarray, metrics: dict, first_update: int) -> dict:
        """Record the runs that diverged in the chunk whose first update is `first_update` (say
        so on stderr), and return its `metrics` with the `charts/diverged` column where any run
        has diverged."""
        for run, ok in enumerate(np.asarray(finite)):
            if ok:
                self.at[run] = None
            elif self.at[run] is None:
                self.at[run] = first_update + located(metrics, run)
                self._say(run)
        if not self.any:
            return metrics
        updates = first_update + np.arange(jax.tree.leaves(metrics)[0].shape[1])
        since = np.array([np.inf if u is None else u for u in self.at])
        column = (updates[None, :] >= since[:, None]).astype(np.float32)
        return {**metrics, DIVERGED: column}

    @property
    def any(self) -> bool:
        return any(u is not None for u in self.at)

    def _say(self, run: int) -> None:
        update = self.at[run]
        left = sum(u is None for u in self.at)
        rest = {0: "every run has diverged", 1: "the other run goes on"}.get(
            left, f"the other {left} go on"
        )
        print(
            f"rlsuite: warning: {self.name(run)} diverged at update {update} (env step "
            f"{update * self.steps_per_update:,}): its parameters are no longer finite numbers; "
            f"{rest}",
            file=sys.stderr,
            flush=True,
        )

    def summarize(self, summary: dict) -> dict:
        """`summary` (what `final.json` holds) with the diverged runs' results left out: their
        `*_per_seed` entries null, each `*_mean` over the others, and `diverged_at_update` and
        `diverged_seeds` added. Unchanged where no run diverged."""
        if not self.any:
            return summary
        gone = [run for run, u in enumerate(self.at) if u is not None]
        summary = dict(summary)
        for key, values in list(summary.items()):
            if not key.endswith("_per_seed") or not isinstance(values, list):
                continue
            if len(values) != len(self.at):
                continue
            kept = [None if run in gone else v for run, v in enumerate(values)]
            summary[key] = kept
            mean = key.removesuffix("_per_seed") + "_mean"
            if mean in summary:
                finite = [float(v) for v in kept if _number(v)]
                summary[mean] = float(np.mean(finite)) if finite else None
        summary["diverged_at_update"] = list(self.at)
        summary["diverged_seeds"] = gone
        return summary


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def diverged_runs(summary: dict) -> list[int]:
    """The runs a `final.json` summary reports as diverged (none for older files)."""
    return list(summary.get("diverged_seeds") or [])


def every_run_diverged(summary: dict) -> bool:
    """Whether every run of a `final.json` summary diverged."""
    at = summary.get("diverged_at_update")
    return bool(at) and all(u is not None for u in at)
