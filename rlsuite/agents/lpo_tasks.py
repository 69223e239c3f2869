"""The levels LPO's inner runs train on over a task distribution (`LPOConfig.num_tasks`), as
values: a `Curriculum` chooses a generation's levels, every member of the population trains one
inner run on each, and it observes how the ES mean's drift did on them.

- `DR`: `num_tasks` levels drawn fresh each generation from the environment's own distribution
  (`levels().generate`, as domain randomisation draws them).
- `GROOVE` (Jackson, Goldie, Lu, Foerster and Whiteson 2023, arXiv:2310.02782): prioritised level
  replay over the levels, scored by *algorithmic regret*, the return an antagonist algorithm
  reaches on a level minus the return of the ES mean's drift there. The antagonist is PPO with
  its clip, trained from the same keys. A generation replays `num_tasks` levels from the buffer
  (`rlsuite.data.level_buffer`, PLR's, at its defaults) when `should_replay` says so and the
  buffer holds that many, and otherwise draws new ones and inserts them with their regret; a
  replay updates the replayed levels' scores.

A curriculum's functions are pure over its state, which the LPO state holds (`LPOState.levels`),
so a run with one resumes exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.data import level_buffer as buffer
from rlsuite.environment import select


class Curriculum(NamedTuple):
    """init: `(setup, key) -> state`. choose: `(setup, state, key) -> (state, tasks, chosen)`,
    `tasks` the environment params of `num_tasks` levels (leading axis) and `chosen` what
    `observe` needs of the choice. observe: `(setup, state, chosen, fitness [N], antagonist) ->
    (state, metrics)`, `fitness` the ES mean's inner runs' on the tasks and `antagonist()` the
    antagonist's (computed only where called)."""

    init: Callable
    choose: Callable
    observe: Callable


def drawn(setup, key):
    """`(levels, tasks)`: `num_tasks` levels drawn by the environment and their params."""
    keys = jax.random.split(key, setup.config.num_tasks)
    levels = jax.vmap(setup.levels.generate)(keys)
    return levels, setup.levels.params_for(setup.inner.env_params, levels)


def _dr_choose(setup, state, key):
    return state, drawn(setup, key)[1], None


DR = Curriculum(
    init=lambda setup, key: None,
    choose=_dr_choose,
    observe=lambda setup, state, chosen, fitness, antagonist: (state, {}),
)

REPLAY = buffer.LevelBufferConfig()  # GROOVE's level replay: PLR's defaults (minimax's maze)


def _groove_init(setup, key):
    return buffer.init(setup.config.buffer_capacity, setup.levels.generate(key))


def _groove_choose(setup, state, key):
    """Replayed levels where the buffer is warm, holds `num_tasks` levels and a draw says so;
    new ones otherwise (the replay's state only kept where it is taken)."""
    key_replay, key_sample, key_new = jax.random.split(key, 3)
    n = setup.config.num_tasks
    replay = buffer.should_replay(state, key_replay, REPLAY) & (state.size >= n)
    sampled, indices, old = buffer.sample(state, key_sample, n, REPLAY)
    new, _ = drawn(setup, key_new)
    levels = select(replay, old, new)
    state = select(replay, sampled, state)
    return state, setup.levels.params_for(setup.inner.env_params, levels), (replay, indices, levels)


def algorithmic_regret(antagonist, fitness):
    """GROOVE's score of each level: the antagonist's return minus the learned algorithm's."""
    return antagonist - fitness


def _groove_observe(setup, state, chosen, fitness, antagonist):
    replay, indices, levels = chosen
    regret = algorithmic_regret(antagonist(), fitness)
    replayed = buffer.update(state, indices, regret)
    inserted, _ = buffer.insert_batch(state, levels, regret, None, REPLAY)
    metrics = {"lpo/regret": regret.mean(), "lpo/replayed": replay.astype(jnp.float32)}
    return select(replay, replayed, inserted), metrics


GROOVE = Curriculum(init=_groove_init, choose=_groove_choose, observe=_groove_observe)

CURRICULA: dict[str, Any] = {"dr": DR, "groove": GROOVE}
