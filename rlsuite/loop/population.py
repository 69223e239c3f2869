"""Population-based training (Jaderberg et al., 2017) over a vmapped population of runs.

    member = population_agent(agent)          # any agent: its hparams move into its state
    step = PBT(fields=..., low=..., high=..., members=8, seed=0)
    result = runner.fit(member, key, hparams, runner.Schedule(num_seeds=8, hparams_axis=0),
                        callbacks=runner.Callbacks(between_chunks=step))  # exploit, explore

`population_agent(agent)` keeps each run's hyperparameters in its learner state (`Member`), so that
they can change between chunks and are saved and restored with the checkpoint; its `update`
trains with them (the driver's hparams argument only initialises them) and logs each swept field
as `hparams/<field>`.

`PBT` is the host loop's `between_chunks` step. After a chunk, within each population (`members`
consecutive runs; several independent populations make the seeds of a PBT experiment), it ranks
the members by the chunk's mean of `metric` (default the episodic return; a member that diverged,
`rlsuite.loop.divergence`, ranks last), and each member of the
bottom `fraction` copies the whole learner state of a member drawn from the top `fraction`
(exploit) and multiplies each swept hyperparameter by a factor drawn from `factors`, or with
probability `resample` draws it anew from its range, clipped to `[low, high]` and kept on a log
scale where `log` says (explore). The choice is drawn on the host from `(seed, update)`, so a
resumed run makes the same choices; the copy and the perturbation run on the device, one jitted
gather over the batched state. `PBT.lineage` holds what each step did, for the run's files.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.loop.agent import Agent
from rlsuite.loop.divergence import DIVERGED
from rlsuite.loop.files import float32_value


@struct.dataclass
class Member:
    """A population member's learner state: the agent's state and the hparams it trains with."""

    state: Any
    hparams: Any


def population_agent(agent: Agent, logged: tuple[str, ...] = ()) -> Agent:
    """`agent` with its hyperparameters in its state (`Member`); `logged` fields are added to the
    metrics as `hparams/<field>`. The same contract: any agent, with or without memory or data."""

    def init(key, hparams, **extra):
        return Member(agent.init(key, hparams, **extra), hparams)

    def update(member, _hparams, **extra):
        state, metrics = agent.update(member.state, member.hparams, **extra)
        for field in logged:
            metrics[f"hparams/{field}"] = jnp.asarray(getattr(member.hparams, field), jnp.float32)
        return Member(state, member.hparams), metrics

    def act(member, obs, key, deterministic=False, *carry, **mask):
        return agent.act(member.state, obs, key, deterministic, *carry, **mask)

    carry, part = agent.initial_carry, agent.trainable
    return agent._replace(
        init=init,
        update=update,
        act=act,
        initial_carry=None if carry is None else (lambda member, n: carry(member.state, n)),
        trainable=lambda member: member.state if part is None else part(member.state),
    )


@dataclasses.dataclass
class PBT:
    """The exploit-and-explore step between chunks (see the module docstring)."""

    fields: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    log: tuple[bool, ...]
    members: int
    seed: int = 0
    metric: str = "charts/episodic_return"
    fraction: float = 0.25
    factors: tuple[float, ...] = (0.8, 1.25)
    resample: float = 0.25
    lineage: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if self.members < 2:
            raise ValueError(
                f"PBT: a population needs at least 2 members to exploit, got {self.members}"
            )
        if not 0 < self.fraction <= 0.5:
            raise ValueError(f"PBT: fraction must be in (0, 0.5], got {self.fraction}")
        if not 0 <= self.resample <= 1:
            raise ValueError(f"PBT: resample must be a probability, got {self.resample}")
        self._apply = jax.jit(_exploit_explore, static_argnums=(4,))

    def choose(self, fitness: np.ndarray, update: int) -> tuple[np.ndarray, np.ndarray]:
        """For fitness `[runs]`: each run's parent (itself where kept) and its factor per field
        `[runs, fields]` (1 where kept; NaN where the field is drawn anew, `redraw`)."""
        runs = fitness.shape[0]
        if runs % self.members:
            raise ValueError(f"PBT: {runs} runs are not populations of {self.members}")
        rng = np.random.default_rng([self.seed, update])
        parents = np.arange(runs)
        factors = np.ones((runs, len(self.fields)))
        count = max(1, int(self.members * self.fraction))
        for start in range(0, runs, self.members):
            scores = np.nan_to_num(fitness[start : start + self.members], nan=-np.inf)
            if not np.isfinite(scores).any():
                continue  # nothing to rank by yet (no member finished an episode)
            order = np.argsort(-scores, kind="stable")  # best first; ties keep their order
            top, bottom = order[:count], order[-count:]
            for loser in bottom:
                parents[start + loser] = start + top[rng.integers(count)]
                drawn = rng.choice(self.factors, size=len(self.fields))
                redraw = rng.random(len(self.fields)) < self.resample
                factors[start + loser] = np.where(redraw, np.nan, drawn)
        return parents, factors

    def redraw(self, shape, update: int) -> np.ndarray:
        """Fresh values `[runs, fields]` from each field's range (used where a factor is NaN)."""
        rng = np.random.default_rng([self.seed, update, 1])
        u = rng.random(shape)
        low, high = np.asarray(self.low), np.asarray(self.high)
        log = np.asarray(self.log)
        linear = low + u * (high - low)
        low_log, high_log = np.where(log, low, 1.0), np.where(log, high, 1.0)  # > 0 where log
        logged = np.exp(np.log(low_log) + u * (np.log(high_log) - np.log(low_log)))
        return np.where(log, logged, linear)

    def __call__(self, states: Member, metrics: dict, update: int) -> Member:
        """The step: `states` (batched `Member`s) after exploit and explore, from a chunk's
        host `metrics` (`[runs, updates]` each)."""
        values = np.asarray(metrics[self.metric], np.float64)
        finite = np.isfinite(values)
        counts = finite.sum(axis=1)
        fitness = np.where(finite, values, 0.0).sum(axis=1) / np.maximum(counts, 1)
        fitness = np.where(counts > 0, fitness, np.nan)  # no episode ended in the chunk
        if DIVERGED in metrics:  # a member whose parameters are not finite ranks last
            fitness = np.where(np.asarray(metrics[DIVERGED])[:, -1] > 0, -np.inf, fitness)
        parents, factors = self.choose(fitness, update)
        fresh = self.redraw(factors.shape, update)
        bounds = (np.asarray(self.low), np.asarray(self.high))
        states = self._apply(states, parents, factors, fresh, self.fields, bounds)
        new = np.stack([np.asarray(getattr(states.hparams, f)) for f in self.fields], axis=1)
        self.lineage.append(
            {
                "update": update,
                "fitness": fitness.tolist(),
                "parent": parents.tolist(),
                "hparams": {
                    f: list(map(float32_value, new[:, i])) for i, f in enumerate(self.fields)
                },
            }
        )
        return states


def _exploit_explore(states: Member, parents, factors, fresh, fields, bounds) -> Member:
    """Every leaf's run `i` from run `parents[i]` (a gather on the run axis), then each swept
    field scaled by `factors[:, j]` (or `fresh[:, j]` where it is NaN), clipped to its range."""
    states = jax.tree.map(lambda x: jnp.take(x, parents, axis=0), states)
    low, high = bounds
    columns = {}
    for j, field in enumerate(fields):
        value = getattr(states.hparams, field)
        scaled = jnp.where(jnp.isnan(factors[:, j]), fresh[:, j], value * factors[:, j])
        columns[field] = jnp.clip(scaled, low[j], high[j]).astype(value.dtype)
    return states.replace(hparams=states.hparams.replace(**columns))
