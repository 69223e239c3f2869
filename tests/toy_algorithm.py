"""A toy algorithm family for the registry's tests: epsilon-greedy around the constant action 0 of
a discrete action space, learning nothing. Its `update` steps a batch of environments with
`rlsuite.loop.rollout` and reports their episodes as the real agents do, so the command line can
train, checkpoint and evaluate it like any registered family.

`ALGORITHM` is its record; importing this module registers nothing (a test registers it).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.agents import registry
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import EpisodeStatistics, episode_metrics
from rlsuite.loop.agent import Agent
from rlsuite.loop.rollout import EnvBatch, reset_batch, rollout
from rlsuite.ops.validators import check_positive_ints


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    num_envs: int = 2
    """parallel environments"""
    num_steps: int = 8
    """steps per environment in each update"""
    total_timesteps: int = 64
    """environment steps of the whole run"""

    def __post_init__(self):
        check_positive_ints(self, ("num_envs", "num_steps", "total_timesteps"))

    @property
    def num_updates(self) -> int:
        return max(1, self.total_timesteps // (self.num_envs * self.num_steps))


@struct.dataclass
class ToyHparams:
    epsilon: float = 0.5
    """probability of a uniformly random action instead of action 0"""


@struct.dataclass
class ToyState:
    epsilon: jax.Array  # [], from the hparams the run started with
    env: EnvBatch
    key: jax.Array
    update_step: jax.Array  # [] int32


def check_hparams(hp: ToyHparams) -> None:
    if not isinstance(hp, ToyHparams):
        raise TypeError(f"toy: hparams must be a ToyHparams, got {type(hp).__name__}")
    if not np.all((np.asarray(hp.epsilon) >= 0) & (np.asarray(hp.epsilon) <= 1)):
        raise ValueError(f"toy: hparams.epsilon={hp.epsilon}; allowed: a value in [0, 1]")


def make(config: ToyConfig, env, env_params=None) -> Agent:
    """The toy agent on `env` (a `Discrete` action space)."""
    env_params = env.check_params(env_params)
    space = env.action_space(env_params)
    if not isinstance(space, Discrete):
        raise ValueError(f"toy handles Discrete action spaces, got {type(space).__name__}")
    env = EpisodeStatistics(env)

    def act(state: ToyState, obs, key, deterministic: bool = False):
        """Actions `obs.shape[:-1]` (one observation or a batch of vectors)."""
        shape = obs.shape[:-1]
        if deterministic:
            return jnp.zeros(shape, jnp.int32)
        key_explore, key_action = jax.random.split(key)
        explore = jax.random.bernoulli(key_explore, state.epsilon, shape)
        random = jax.random.randint(key_action, shape, 0, space.n)
        return jnp.where(explore, random, 0).astype(jnp.int32)

    def init(key, hp: ToyHparams) -> ToyState:
        key, key_env = jax.random.split(key)
        return ToyState(
            epsilon=jnp.asarray(hp.epsilon, jnp.float32),
            env=reset_batch(env, env_params, key_env, config.num_envs),
            key=key,
            update_step=jnp.zeros((), jnp.int32),
        )

    def update(state: ToyState, hp: ToyHparams):
        key, key_rollout = jax.random.split(state.key)
        policy = lambda k, obs: (act(state, obs, k), {})
        batch, tr = rollout(env, env_params, policy, key_rollout, state.env, config.num_steps)
        state = state.replace(env=batch, key=key, update_step=state.update_step + 1)
        return state, episode_metrics(tr.info)

    return Agent(
        name="toy",
        config=config,
        env=env,
        env_params=env_params,
        default_hparams=ToyHparams(),
        init=init,
        update=update,
        act=act,
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.num_steps,
    )


ALGORITHM = registry.Algorithm(
    name="toy",
    make=make,
    config_cls=ToyConfig,
    hparams_cls=ToyHparams,
    offline=False,
    default_env="cartpole",
)
