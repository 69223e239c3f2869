"""A tiny task family for testing the RL^2 wrapper and trial evaluation; returns are easy to derive
by hand.

The task is `params.bonus`, drawn by `sample_task` as a whole number in [1, 1000). State: the
step count `count`. Observation `[count, bonus]`; three actions (`Discrete(3)`); reward of a step
= bonus + 10 * count (after the step) + action; `info["regret"] = 2 - action` (action 2 is the
best). It never ends: `TimeLimit(Task(), 2)` gives episodes of two steps.
"""

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete


@struct.dataclass
class TaskParams:
    bonus: float = 0.0


@struct.dataclass
class TaskState:
    count: jax.Array


def sample_task(key, params):
    return params.replace(bonus=jax.random.randint(key, (), 1, 1000).astype(jnp.float32))


class Task(Environment):
    @property
    def default_params(self):
        return TaskParams()

    def reset_env(self, key, params):
        state = TaskState(jnp.zeros((), jnp.int32))
        return self._obs(state, params), state

    def step_env(self, key, state, action, params):
        state = TaskState(state.count + 1)
        reward = params.bonus + 10.0 * state.count + action
        info = {"regret": (2 - action).astype(jnp.float32)}
        no = jnp.zeros((), bool)
        return self._obs(state, params), state, reward.astype(jnp.float32), no, no, info

    def _obs(self, state, params):
        return jnp.stack([state.count.astype(jnp.float32), jnp.float32(params.bonus)])

    def observation_space(self, params):
        return Box(-jnp.inf, jnp.inf, (2,))

    def action_space(self, params):
        return Discrete(3)
