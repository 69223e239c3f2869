"""The loop the offline agents (BC, TD3+BC, CQL, IQL, CSVE, SAQ) share: minibatches sampled on
the device from a fixed dataset, a number of gradient steps per update, evaluation in the
environment.

An algorithm is an off-policy `Learner` (`rlsuite.agents.learner.Learner`: `init`, `explore`,
`greedy`, `learn` over batches `{"obs", "action", "reward", "discount", "next_obs"}`);
`make_agent` binds one to an environment (used for evaluation only) and returns an `Agent` whose
`init` and `update` take the dataset as `data` (declared in its `extra_args`), which
`rlsuite.loop.driver` passes, shared by every run and never copied into a checkpoint:

    agent = iql.make(IQLConfig(), env, env_params)
    state, metrics = driver.train(agent, key, hparams, num_updates, data=dataset)

Choices, written down:

- A batch's `discount` is `hparams.gamma * (1 - terminals)`: a timeout (time-limit truncation)
  bootstraps from its `next_observations`, a terminal does not.
- With `normalize_observations`, observations are standardised with the dataset's mean and
  standard deviation (as TD3+BC does), computed once in `init`, kept in the learner state and
  applied to every batch and to every action taken in evaluation. The divisor is
  `sqrt(var + 1e-6)`, at least 1e-3 like TD3+BC's `std + 1e-3`: a dimension that is (nearly)
  constant in the dataset is not blown up in evaluation, where it may vary.
- One update is `gradient_steps` gradient steps, whole cycles of a learner that has one (TD3+BC:
  `policy_delay`, see `rlsuite.agents.off_policy`); the driver's step count (`env_steps` in logs and
  `final.json`) counts gradient steps for these agents, as no environment is stepped; `final.json`
  also gives it as `gradient_steps`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents.learner import Learner, action_dim, gradient_steps, learner_act
from rlsuite.data.datasets import Dataset, sample
from rlsuite.environment import Environment
from rlsuite.environment.wrappers import RescaleAction
from rlsuite.loop.agent import Agent, bind
from rlsuite.loop.mesh import field_splits
from rlsuite.networks import activation_fn
from rlsuite.ops import running_stats
from rlsuite.ops.validators import check_hidden_sizes, check_positive_ints

STD_FLOOR = 1e-3  # the smallest divisor of the observation normalisation (TD3+BC: std + 1e-3)


def standardize(obs_stats: running_stats.RunningStats, obs: jax.Array) -> jax.Array:
    """`(obs - mean) / sqrt(var + STD_FLOOR^2)` with the dataset's statistics."""
    return running_stats.normalize(obs_stats, obs, eps=STD_FLOOR**2)


@dataclasses.dataclass(frozen=True)
class OfflineConfig:
    """Static configuration shared by the offline agents."""

    num_updates: int = 1_000
    """updates of the whole run"""
    gradient_steps: int = 100
    """gradient steps per update (one logged row per update)"""
    batch_size: int = 256
    """transitions per gradient step, sampled uniformly from the dataset"""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """hidden layer sizes of every network"""
    activation: str = "relu"
    """hidden activation: tanh, relu, elu, gelu or silu (swish)"""
    normalize_observations: bool = False
    """standardise observations with the dataset's mean and standard deviation"""

    def __post_init__(self):
        check_positive_ints(self, ("num_updates", "gradient_steps", "batch_size"))
        check_hidden_sizes(self)
        activation_fn(self.activation)


@struct.dataclass
class OfflineState:
    learner: object
    obs_stats: running_stats.RunningStats
    key: jax.Array
    update_step: jax.Array


class Rewards(NamedTuple):
    """What the loop makes of a dataset's rewards for a family, as the family declares it
    (`make_agent`'s `rewards`): `reward_scale(hp) -> factor` on them (None: the raw rewards),
    and `gamma(hp) -> discount`, which gives every batch a `"discount"` of `gamma (1 - terminal)`
    (None: no discount in the batch, for a learner of no TD target such as BC)."""

    gamma: Callable | None = None
    reward_scale: Callable | None = None


def make_agent(
    name: str,
    config: OfflineConfig,
    env: Environment,
    env_params,
    learner: Learner,
    default_hparams,
    check_hparams: Callable,
    rewards: Rewards | None = None,
) -> Agent:
    """Bind `learner` to `env` (for evaluation) as an `Agent` running the offline loop above: the
    stages below (`init`, `batch_from`, `update`, `act`) over the `Setup` this builds, with the
    family's `rewards` (`Rewards`; default BC's: raw rewards, no discount).

    The dataset's actions are expected in the environment's own bounds; they are rescaled to
    `[-1, 1]` when sampled (the networks act in `[-1, 1]`, as the online agents do).
    """
    action_dim(env, env_params, name)  # a bounded 1-D Box, or a clear error
    if config.gradient_steps % learner.period:
        raise ValueError(
            f"{type(config).__name__}.gradient_steps={config.gradient_steps} must be a multiple "
            f"of {name}'s cycle of {learner.period} gradient steps (every update runs whole "
            "cycles)"
        )
    space = env.action_space(env_params)
    env = RescaleAction(env)
    obs_shape = env.observation_space(env_params).shape
    if len(obs_shape) != 1:
        raise TypeError(f"{name} needs vector observations; {env.name} has shape {obs_shape}")

    low, high = jnp.asarray(space.low), jnp.asarray(space.high)
    rewards = Rewards() if rewards is None else rewards
    setup = Setup(config, learner, low, high, obs_shape, rewards)
    return bind(
        setup,
        init=init,
        update=update,
        act=act,
        name=name,
        config=config,
        env=env,
        env_params=env_params,
        default_hparams=default_hparams,
        check_hparams=check_hparams,
        env_steps_per_update=config.gradient_steps,
        extra_args=("data",),
        env_split=field_splits(config, "batch_size"),
        trainable=learner_of,
    )


def learner_of(state: OfflineState):
    """What a diverging update makes non-finite: the learner (networks, targets, optimisers)."""
    return state.learner


class Setup(NamedTuple):
    """What the stages of one offline agent share, fixed when it is made (`make_agent`)."""

    config: OfflineConfig
    learner: Learner
    low: jax.Array  # the environment's action bounds, which the dataset's actions are in
    high: jax.Array
    obs_shape: tuple[int, ...]
    rewards: Rewards


def normalize(setup: Setup, obs_stats, obs):
    """`obs` standardised with the dataset's statistics, with `normalize_observations`."""
    if setup.config.normalize_observations:
        return standardize(obs_stats, obs)
    return obs


def init(setup: Setup, key, hp, data: Dataset) -> OfflineState:
    key, key_learner = jax.random.split(key)
    stats = running_stats.init(setup.obs_shape)
    if setup.config.normalize_observations:
        stats = running_stats.update(stats, data.observations)
    return OfflineState(
        learner=setup.learner.init(key_learner, hp),
        obs_stats=stats,
        key=key,
        update_step=jnp.zeros((), jnp.int32),
    )


def batch_from(setup: Setup, data: Dataset, obs_stats, key, hp) -> dict:
    """A batch sampled from `data` as the learner takes it: observations normalised, actions
    in `[-1, 1]`, rewards scaled and discounts, where the family declares them
    (`Setup.rewards`)."""
    raw = sample(data, key, setup.config.batch_size)
    low, high = setup.low, setup.high
    batch = {
        "obs": normalize(setup, obs_stats, raw["observations"]),
        "action": 2.0 * (raw["actions"] - low) / (high - low) - 1.0,
        "reward": raw["rewards"].astype(jnp.float32),
        "next_obs": normalize(setup, obs_stats, raw["next_observations"]),
    }
    rewards = setup.rewards
    if rewards.reward_scale is not None:
        batch["reward"] = batch["reward"] * rewards.reward_scale(hp)
    if rewards.gamma is not None:
        batch["discount"] = rewards.gamma(hp) * (1.0 - raw["terminals"].astype(jnp.float32))
    return batch


def update(setup: Setup, state: OfflineState, hp, data: Dataset):
    """`gradient_steps` gradient steps, each on its own batch of the dataset."""

    def sample(key):
        return batch_from(setup, data, state.obs_stats, key, hp)

    key, key_steps = jax.random.split(state.key)
    keys = jax.random.split(key_steps, setup.config.gradient_steps)
    learner_state, metrics = gradient_steps(setup.learner, state.learner, sample, keys, hp)
    state = state.replace(learner=learner_state, key=key, update_step=state.update_step + 1)
    return state, {f"losses/{k}": jnp.nanmean(v) for k, v in metrics.items()}


def act(setup: Setup, state: OfflineState, obs, key, deterministic: bool = False):
    obs = normalize(setup, state.obs_stats, obs)
    return learner_act(setup.learner, state.learner, obs, key, deterministic)
