"""Schaul et al.'s Blind Cliffwalk (2016, arXiv:1511.05952, figure 1), the task on which they show
prioritized replay helping: a chain of `length` states seen as one-hot vectors; in each, one of
the two actions (which one is drawn per state, fixed for the environment) moves on with reward
0, the other ends the episode with reward 0; the right action in the last state ends it with
reward 1. A uniformly random policy reaches the reward once in `2^length` episodes, so the few
transitions that carry it are rare in a replay buffer.
"""

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete


@struct.dataclass
class CliffwalkParams:
    pass


class Cliffwalk(Environment):
    def __init__(self, length: int = 8, seed: int = 0):
        self.length = length
        self.right = jax.random.bernoulli(jax.random.key(seed), 0.5, (length,)).astype(jnp.int32)

    @property
    def default_params(self):
        return CliffwalkParams()

    def reset_env(self, key, params):
        state = jnp.zeros((), jnp.int32)
        return self._obs(state), state

    def step_env(self, key, state, action, params):
        right = action == self.right[state]
        last = state == self.length - 1
        reward = (right & last).astype(jnp.float32)
        terminated = ~right | last
        state = jnp.where(terminated, state, state + 1)
        return self._obs(state), state, reward, terminated, jnp.zeros((), bool), {}

    def _obs(self, state):
        return jax.nn.one_hot(state, self.length)

    def observation_space(self, params):
        return Box(0.0, 1.0, (self.length,))

    def action_space(self, params):
        return Discrete(2)
