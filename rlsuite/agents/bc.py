"""Behaviour cloning: a deterministic policy regressed onto the dataset's actions (mean squared
error), the baseline every offline method is compared with.

    agent = bc.make(BCConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

Runs through the shared offline loop (`rlsuite.agents.offline`): minibatches sampled on the device,
observations optionally standardised with the dataset's statistics.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry
from rlsuite.agents.learner import Learner, action_dim, adam_init, adam_step, bind
from rlsuite.agents.offline import OfflineConfig, make_agent
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.networks import DeterministicActor
from rlsuite.ops import losses
from rlsuite.ops.validators import check_positive


@dataclasses.dataclass(frozen=True)
class BCConfig(OfflineConfig):
    """Static configuration of BC (the shared offline fields)."""


@struct.dataclass
class BCHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    learning_rate: float = 3e-4
    """Adam step size"""


@struct.dataclass
class BCLearner:
    actor: dict
    opt: optax.OptState


def check_hparams(hp: BCHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, BCHparams):
        raise TypeError(f"bc: hparams must be a BCHparams, got {type(hp).__name__}")
    check_positive(hp, "learning_rate", owner="bc", kind="hparams")


def make(config: BCConfig, env: Environment, env_params=None) -> Agent:
    """Bind BC to `env` (a bounded 1-D Box action space; used for evaluation)."""
    if not isinstance(config, BCConfig):
        raise TypeError(f"bc.make needs a BCConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "bc")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim)
    return make_agent("bc", config, env, env_params, algo, BCHparams(), check_hparams)


def learner(config: BCConfig, obs_shape: tuple[int, ...], dim: int) -> Learner:
    """BC's actor and update rule for `obs_shape` observations and `dim` actions in `[-1, 1]`:
    the functions below (`init`, `explore`, `greedy`, `learn`) over the `Nets` this builds."""
    nets = Nets(obs_shape, DeterministicActor(config.hidden_sizes, dim, config.activation))
    return bind(nets, init, explore, greedy, learn)


class Nets(NamedTuple):
    """What BC's learning functions share, fixed when its learner is built (`learner`)."""

    obs_shape: tuple[int, ...]
    actor: DeterministicActor


def init(nets: Nets, key, hp: BCHparams) -> BCLearner:
    params = nets.actor.init(key, jnp.zeros((1, *nets.obs_shape)))
    return BCLearner(actor=params, opt=adam_init(params))


def greedy(nets: Nets, learner: BCLearner, obs):
    return nets.actor.apply(learner.actor, obs)


def explore(nets: Nets, learner: BCLearner, obs, key):
    del key  # the cloned policy is deterministic
    return greedy(nets, learner, obs)


def loss_fn(nets: Nets, params, batch):
    return losses.behavior_cloning_loss(nets.actor.apply(params, batch["obs"]), batch["action"])


def learn(nets: Nets, learner: BCLearner, batch, key, hp: BCHparams):
    del key
    loss, grads = jax.value_and_grad(functools.partial(loss_fn, nets))(learner.actor, batch)
    params, opt = adam_step(learner.actor, grads, learner.opt, hp.learning_rate)
    return BCLearner(actor=params, opt=opt), {"bc_loss": loss}


# This family in the algorithm registry (`rlsuite train bc`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="bc",
        make=make,
        config_cls=BCConfig,
        hparams_cls=BCHparams,
        offline=True,
        default_env="pendulum",
    )
)
