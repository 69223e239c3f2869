"""A tiny deterministic environment for testing the contract, wrappers, rollout and evaluation.

State: a step counter `count` and a start value drawn at reset. Observation `[start + count]`.
Reward of a step = the action (a float in [-1, 1]) + 1, so returns are easy to derive by hand.
Terminates when `count` reaches `params.terminate_at` (0 disables termination).
"""

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field


@struct.dataclass
class CounterParams:
    terminate_at: int = 3


@struct.dataclass
class CounterState:
    start: jax.Array
    count: jax.Array


class Counter(Environment):
    def __init__(self, random_start: bool = True):
        self.random_start = random_start

    @property
    def default_params(self):
        return CounterParams()

    def validate_params(self, params):
        check_field(params, "terminate_at", lambda v: v >= 0, "an integer >= 0", self.name)

    def reset_env(self, key, params):
        start = jax.random.randint(key, (), 0, 1000) if self.random_start else jnp.zeros((), int)
        state = CounterState(start.astype(jnp.float32), jnp.zeros((), jnp.int32))
        return self._obs(state), state

    def step_env(self, key, state, action, params):
        state = CounterState(state.start, state.count + 1)
        terminated = (params.terminate_at > 0) & (state.count >= params.terminate_at)
        reward = action[0] + 1.0
        return (
            self._obs(state),
            state,
            reward,
            terminated,
            jnp.zeros((), bool),
            {"count": state.count},
        )

    def _obs(self, state):
        return jnp.reshape(state.start + state.count, (1,)).astype(jnp.float32)

    def observation_space(self, params):
        return Box(-jnp.inf, jnp.inf, (1,))

    def action_space(self, params):
        return Box(-1.0, 1.0, (1,))
