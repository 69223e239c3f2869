"""Robust adversarial RL (RARL, Pinto, Davidson, Sukthankar and Gupta 2017, arXiv:1703.02702): a
protagonist and an adversary that disturbs its environment, trained in alternation, zero-sum.

RARL is not another learner: it is two PPO learners (`rlsuite.agents.ppo`) over one environment
with a disturbance channel (`rlsuite.environment.adversarial.Disturbed`). One update is

1. the protagonist's phase: `config.protagonist_updates` PPO updates of the protagonist, each on
   a rollout in which both act (the adversary's policy fixed), learning from the environment's
   rewards;
2. the adversary's phase: `config.adversary_updates` PPO updates of the adversary on rollouts
   of both (the protagonist fixed), learning from the rewards negated.

The disturbance is clipped to `[-config.disturbance_bound, config.disturbance_bound]` by the
environment before it acts, and `rarl/disturbance_max` reports the largest magnitude applied in
the update's rollouts. The agent acts, and is evaluated, as the protagonist alone on the
undisturbed environment: robustness is then measured by changing the environment's physics
params (`benchmarks/rarl.py`).

    agent = rarl.make(RARLConfig(disturbance_bound=1.0), *envs.make("pendulum"))
    rlsuite train rarl --env pendulum --disturbance-bound 1.0

Choices, written down:

- One `PPOHparams` for both learners, and one configuration (network, rollout, epochs).
- Each learner keeps its own batch of environments, continued by its own phases, so each phase's
  rollouts follow from the last of the same learner.
- `env_steps_per_update` counts the protagonist's env steps (`protagonist_updates * num_envs *
  num_steps`), so that `total_timesteps` is the protagonist's budget, as a comparison with PPO at
  equal protagonist env steps needs; the adversary's phases take `adversary_updates /
  protagonist_updates` as many again (`rarl/adversary_env_steps` says how many).
- The adversary's metrics are prefixed `adversary/`; its `charts/episodic_return` is the
  protagonist's return in the adversary's rollouts.
- Feed-forward Gaussian policies only: memory and the squashed head are refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents import ppo, registry
from rlsuite.agents.ppo_config import PPOBase
from rlsuite.data.transition import Transition
from rlsuite.environment import Environment
from rlsuite.environment.adversarial import (
    DisturbanceView,
    Disturbed,
    check_bound,
    check_channel,
)
from rlsuite.environment.wrappers import EpisodeStatistics
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.rollout import RecurrentPolicy, rollout
from rlsuite.ops.validators import check_positive_ints

PROTAGONIST, ADVERSARY = "protagonist", "adversary"


@dataclasses.dataclass(frozen=True)
class RARLConfig(PPOBase):
    """`PPOBase` for both learners, the disturbance's bound and the alternation. Its learners
    are feed-forward Gaussian policies: `PPOConfig`'s other fields take their defaults."""

    # The fields RARL's config had while it was a `PPOConfig`, with the one value each could take:
    # run records written before or since name them (`config_dict`), and they read back without
    # them (`rlsuite.app.run_record.config_of`).
    retired_fields: ClassVar[dict] = {
        "distribution": "gaussian",
        "recurrent": None,
        "recurrent_size": 128,
        "head_sizes": [],
    }

    disturbance_bound: float = 1.0
    """the largest magnitude of the adversary's disturbance in each of its dimensions (for
    pendulum a torque; its motor's limit is 2)"""
    protagonist_updates: int = 1
    """PPO updates of the protagonist in each update, the adversary fixed"""
    adversary_updates: int = 1
    """PPO updates of the adversary in each update, the protagonist fixed"""

    def __post_init__(self):
        check_positive_ints(self, ("protagonist_updates", "adversary_updates"))
        check_bound(self.disturbance_bound, "RARLConfig")
        super().__post_init__()

    @property
    def num_updates(self) -> int:
        """Updates in the whole run: `total_timesteps` over the protagonist's env steps per
        update (at least 1)."""
        per_update = self.protagonist_updates * self.num_envs * self.num_steps
        return max(1, self.total_timesteps // per_update)


@struct.dataclass
class RARLState:
    protagonist: ppo.PPOState
    adversary: ppo.PPOState
    key: jax.Array


def zero_sum(reward: jax.Array, disturbance: jax.Array) -> jax.Array:
    """The adversary's reward in RARL: the protagonist's, negated."""
    return -reward


class RARLSetup(NamedTuple):
    """config; joint: the environment both act in (`EpisodeStatistics(Disturbed(env))`);
    env_params; protagonist, adversary: each learner's `PPOSetup` (the adversary's built for
    `DisturbanceView(env)`); adversary_reward: `(reward, disturbance) -> the adversary's
    reward` (`zero_sum`), the research variant `make` takes."""

    config: RARLConfig
    joint: Environment
    env_params: object
    protagonist: ppo.PPOSetup
    adversary: ppo.PPOSetup
    adversary_reward: Callable = zero_sum


def init(setup: RARLSetup, key: jax.Array, hp: ppo.PPOHparams) -> RARLState:
    key, key_protagonist, key_adversary = jax.random.split(key, 3)
    return RARLState(
        protagonist=ppo.init(setup.protagonist, key_protagonist, hp),
        adversary=ppo.init(setup.adversary, key_adversary, hp),
        key=key,
    )


def collect(setup: RARLSetup, state: RARLState, side: str, key: jax.Array):
    """A rollout of both policies, continuing `side`'s batch of environments: `(batch after,
    Transition)`, the action the joint one and the extras each learner's under its name."""
    protagonist = ppo.sampling_policy(setup.protagonist, state.protagonist)
    adversary = ppo.sampling_policy(setup.adversary, state.adversary)

    def policy(key, obs, carry):
        key_protagonist, key_adversary = jax.random.split(key)
        own, own_extras, _ = protagonist.apply(key_protagonist, obs, ())
        disturbance, adversary_extras, _ = adversary.apply(key_adversary, obs, ())
        extras = {PROTAGONIST: own_extras, ADVERSARY: adversary_extras}
        return jnp.concatenate([own, disturbance], axis=-1), extras, ()

    config = setup.config
    batch = getattr(state, side).env
    return rollout(
        setup.joint, setup.env_params, RecurrentPolicy(policy, lambda n: ()), key, batch,
        config.num_steps, reset_slots=config.reset_slots,
    )  # fmt: skip


def view(setup: RARLSetup, tr: Transition, side: str) -> Transition:
    """`side`'s view of a joint rollout: its part of the action, its extras, and its rewards
    (the adversary's `setup.adversary_reward` of the environment's and the disturbance, the
    disturbance as the environment applied it: clipped to the bound)."""
    own, disturbance = setup.joint.env.split(tr.action)
    if side == PROTAGONIST:
        return tr._replace(action=own, extras=tr.extras[PROTAGONIST])
    bound = setup.config.disturbance_bound
    reward = setup.adversary_reward(tr.reward, jnp.clip(disturbance, -bound, bound))
    return tr._replace(action=disturbance, extras=tr.extras[ADVERSARY], reward=reward)


def learn_side(setup: RARLSetup, state: RARLState, side: str, key: jax.Array, hp):
    """One PPO update of `side` on a rollout of both: the state after and its metrics."""
    key_collect, key_learn, key_next = jax.random.split(key, 3)
    batch, tr = collect(setup, state, side, key_collect)
    learner_setup, learner = getattr(setup, side), getattr(state, side)
    exp = ppo.experience_of(learner_setup, learner, batch, view(setup, tr, side), hp)
    learner, metrics = ppo.learn_from(learner_setup, learner, exp, (), key_learn, key_next, hp)
    metrics["rarl/disturbance_max"] = tr.info["disturbance"].max()
    return state.replace(**{side: learner}), metrics


def phase(setup: RARLSetup, state: RARLState, side: str, count: int, key: jax.Array, hp):
    """`count` updates of `side`: the state after and their mean metrics (the largest
    disturbance their largest)."""

    def one(state, key):
        return learn_side(setup, state, side, key, hp)

    state, metrics = jax.lax.scan(one, state, jax.random.split(key, count))
    largest = metrics.pop("rarl/disturbance_max").max()
    return state, {**jax.tree.map(jnp.mean, metrics), "rarl/disturbance_max": largest}


def update(setup: RARLSetup, state: RARLState, hp) -> tuple[RARLState, dict]:
    """The protagonist's phase, then the adversary's (the module docstring)."""
    config = setup.config
    key, key_protagonist, key_adversary = jax.random.split(state.key, 3)
    state = state.replace(key=key)
    state, metrics = phase(
        setup, state, PROTAGONIST, config.protagonist_updates, key_protagonist, hp
    )
    state, adversary = phase(setup, state, ADVERSARY, config.adversary_updates, key_adversary, hp)
    largest = jnp.maximum(
        metrics.pop("rarl/disturbance_max"), adversary.pop("rarl/disturbance_max")
    )
    metrics.update({f"adversary/{k}": v for k, v in adversary.items()})
    metrics["rarl/disturbance_max"] = largest
    steps = config.adversary_updates * config.num_envs * config.num_steps
    metrics["rarl/adversary_env_steps"] = jnp.asarray(steps, jnp.float32)
    return state, metrics


def act(setup: RARLSetup, state: RARLState, obs, key, deterministic=False, carry=()):
    """The protagonist's action (no adversary: the agent acts in the undisturbed environment)."""
    return ppo.act(setup.protagonist, state.protagonist, obs, key, deterministic, carry)


def trainable(state: RARLState):
    return ppo.trainable(state.protagonist), ppo.trainable(state.adversary)


def prepare(
    config: RARLConfig, env: Environment, env_params=None, adversary_reward: Callable = zero_sum
) -> RARLSetup:
    if not isinstance(config, RARLConfig):
        raise TypeError(f"rarl.make needs a RARLConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    bound = config.disturbance_bound
    check_channel(env, bound, "RARLConfig")
    joint = EpisodeStatistics(Disturbed(env, bound, "RARLConfig"))
    view = DisturbanceView(env, bound, "RARLConfig")
    protagonist = ppo.prepare(learner_config(config, config.protagonist_updates), env, env_params)
    adversary = ppo.prepare(learner_config(config, config.adversary_updates), view, env_params)
    return RARLSetup(config, joint, env_params, protagonist, adversary, adversary_reward)


def learner_config(config: RARLConfig, updates: int) -> ppo.PPOConfig:
    """The `PPOConfig` of a learner that takes `updates` PPO updates in each of the run's
    updates: its `total_timesteps` make its own update count, which its learning rate anneals
    over."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(PPOBase)}
    per_update = config.num_envs * config.num_steps
    return ppo.PPOConfig(**{**fields, "total_timesteps": config.num_updates * updates * per_update})


def make(
    config: RARLConfig, env: Environment, env_params=None, adversary_reward: Callable = zero_sum
) -> Agent:
    """RARL on `env`, which must have a disturbance channel (`Environment.disturbance_shape`).
    A research variant passes `adversary_reward(reward, disturbance) -> reward` (`[num_steps,
    num_envs]` rewards, `[num_steps, num_envs, *disturbance_shape]` disturbances): the default,
    `zero_sum`, is RARL's."""
    setup = prepare(config, env, env_params, adversary_reward)
    return bind(
        setup,
        init=init,
        update=update,
        **acting(act, None, False),
        name="rarl",
        config=config,
        env=setup.protagonist.env,
        env_params=setup.env_params,
        default_hparams=ppo.PPOHparams(),
        check_hparams=ppo.check_hparams,
        env_steps_per_update=config.protagonist_updates * config.num_envs * config.num_steps,
        trainable=trainable,
    )


# This family in the algorithm registry (`rlsuite train rarl`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="rarl",
        make=make,
        config_cls=RARLConfig,
        hparams_cls=ppo.PPOHparams,
        offline=False,
        default_env="pendulum",
    )
)
