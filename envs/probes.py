"""Probe environments for debugging agents (after Andy Jones, "Debugging RL, Without the Agonizing
Pain"). Each isolates one piece of an agent and has a known answer. Observations have shape `(1,)`.

| env                     | steps | reward                                | known answer           |
|-------------------------|-------|---------------------------------------|------------------------|
| ConstantReward          | 1     | 1                                     | V = 1                  |
| ObservationReward       | 1     | obs, obs in {-1, +1}                  | V(obs) = obs           |
| OneStepDiscount         | 2     | 0, then 1; obs 0 then 1               | V(0) = gamma, V(1) = 1 |
| ActionReward            | 1     | discrete: +1 for action 1, -1 for 0;  | pi(1) = 1, V = 1       |
|                         |       | continuous: -(a - 0.5)^2              | a = 0.5                |
| ObservationActionReward | 1     | discrete: +1 if action == (obs > 0),  | pi(obs > 0) = 1        |
|                         |       | else -1; continuous: -(a - 0.5 obs)^2 | a = 0.5 obs            |
| MemoryCue               | 4     | a cue c in {-1, +1} is the obs of the | best return 1; without |
|                         |       | first step only (0 after); last step: | memory 0 (discrete),   |
|                         |       | as ObservationActionReward with c,    | -0.25 (continuous)     |
|                         |       | 0 before                              |                        |
| MaskedAction            | 1     | actions 0, 1, 2 pay 0, 0.5, 1; obs in | legal best: 1 at -1,   |
|                         |       | {-1, +1}; at +1 action 2 is masked    | 0.5 at +1 (mean 0.75)  |

Every probe takes `continuous=False` (action space `Discrete(2)`) or `continuous=True`
(`Box(-1, 1, (1,))`); where the reward ignores the action, so does the answer. MaskedAction is
discrete only (`Discrete(3)`): it tests action masks (`rlsuite.environment.masks`), the action
that pays the most being illegal in half the episodes; `masked=False` drops the mask (every
action legal), and `info["illegal_action"]` says whether the step took an action its mask forbade
(counted with the mask or without it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete


@struct.dataclass
class ProbeParams:
    """Probes have no parameters; the empty pytree keeps the contract uniform."""


@struct.dataclass
class ProbeState:
    obs: jax.Array  # shape (1,)
    time: jax.Array  # steps taken in this episode


class Probe(Environment):
    """Base for the probes: a one-number observation and an episode of `episode_length` steps."""

    episode_length = 1
    max_episode_steps = None  # episodes end by termination

    def __init__(self, continuous: bool = False):
        self.continuous = bool(continuous)

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams()

    def initial_obs(self, key: jax.Array) -> jax.Array:
        return jnp.zeros((1,), jnp.float32)

    def reward(self, state: ProbeState, action: jax.Array) -> jax.Array:
        raise NotImplementedError

    def next_obs(self, state: ProbeState) -> jax.Array:
        return state.obs

    def reset_env(self, key: jax.Array, params: ProbeParams):
        obs = self.initial_obs(key)
        return obs, ProbeState(obs, jnp.zeros((), jnp.int32))

    def step_env(self, key, state: ProbeState, action, params: ProbeParams):
        reward = jnp.asarray(self.reward(state, action), jnp.float32).reshape(())
        time = state.time + 1
        obs = self.next_obs(state)
        terminated = time >= self.episode_length
        return obs, ProbeState(obs, time), reward, terminated, jnp.zeros((), bool), {}

    def observation_space(self, params: ProbeParams) -> Box:
        return Box(-1.0, 1.0, (1,))

    def action_space(self, params: ProbeParams) -> Discrete | Box:
        return Box(-1.0, 1.0, (1,)) if self.continuous else Discrete(2)

    def __repr__(self) -> str:
        return f"{self.name}(continuous={self.continuous})"


def _random_sign(key: jax.Array) -> jax.Array:
    return jnp.where(jax.random.bernoulli(key, shape=(1,)), 1.0, -1.0).astype(jnp.float32)


class ConstantReward(Probe):
    def reward(self, state, action):
        return 1.0


class ObservationReward(Probe):
    def initial_obs(self, key):
        return _random_sign(key)

    def reward(self, state, action):
        return state.obs[0]


class OneStepDiscount(Probe):
    episode_length = 2

    def next_obs(self, state):
        return jnp.ones((1,), jnp.float32)

    def reward(self, state, action):
        return (state.time == 1).astype(jnp.float32)


class ActionReward(Probe):
    def reward(self, state, action):
        if self.continuous:
            return -((action[0] - 0.5) ** 2)
        return jnp.where(action == 1, 1.0, -1.0)


class ObservationActionReward(Probe):
    def initial_obs(self, key):
        return _random_sign(key)

    def reward(self, state, action):
        if self.continuous:
            return -((action[0] - 0.5 * state.obs[0]) ** 2)
        return jnp.where(action == (state.obs[0] > 0), 1.0, -1.0)


@struct.dataclass
class MemoryCueState(ProbeState):
    cue: jax.Array  # shape (1,): the sign shown at the first step


class MemoryCue(ObservationActionReward):
    """Memory: the cue is seen at the first step only and rewarded at the last (a feed-forward
    policy sees 0 there whatever the cue, so it cannot beat chance)."""

    episode_length = 4

    def reset_env(self, key, params):
        obs, state = super().reset_env(key, params)
        return obs, MemoryCueState(obs, state.time, cue=obs)

    def next_obs(self, state):
        return jnp.zeros((1,), jnp.float32)

    def reward(self, state, action):
        last = state.time == self.episode_length - 1
        return jnp.where(last, super().reward(state.replace(obs=state.cue), action), 0.0)

    def step_env(self, key, state, action, params):
        obs, next_state, reward, terminated, truncated, info = super().step_env(
            key, state, action, params
        )
        next_state = MemoryCueState(next_state.obs, next_state.time, cue=state.cue)
        return obs, next_state, reward, terminated, truncated, info


class MaskedAction(Probe):
    """Action masks: the masked action would pay the most (see the module docstring)."""

    def __init__(self, continuous: bool = False, masked: bool = True):
        if continuous:
            raise ValueError(
                "probe/masked_action: continuous=True; allowed: False (its masks "
                "are over Discrete(3) actions)"
            )
        super().__init__(continuous=False)
        self.masked = bool(masked)

    @property
    def has_action_mask(self) -> bool:
        return self.masked

    def initial_obs(self, key):
        return _random_sign(key)

    def legal(self, obs: jax.Array) -> jax.Array:
        """The mask of the state whose observation is `obs`: action 2 is illegal at +1."""
        return jnp.stack([jnp.asarray(True), jnp.asarray(True), obs[0] < 0])

    def action_mask(self, state, params):
        return self.legal(state.obs)

    def reward(self, state, action):
        return 0.5 * action.astype(jnp.float32)

    def step_env(self, key, state, action, params):
        result = super().step_env(key, state, action, params)
        illegal = ~self.legal(state.obs)[action]
        return *result[:5], {**result[5], "illegal_action": illegal}

    def action_space(self, params):
        return Discrete(3)

    def __repr__(self) -> str:
        return f"{self.name}(masked={self.masked})"


PROBES = {
    "constant_reward": ConstantReward,
    "observation_reward": ObservationReward,
    "one_step_discount": OneStepDiscount,
    "action_reward": ActionReward,
    "observation_action_reward": ObservationActionReward,
    "memory_cue": MemoryCue,
    "masked_action": MaskedAction,
}
