"""Implicit Q-Learning (Kostrikov et al. 2021, arXiv:2110.06169): offline RL that never queries
the critics at actions outside the dataset.

    agent = iql.make(IQLConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

A state-value network `V` fits an upper expectile of the target critics' `min_k Q'_k(s, a)` over
the dataset's actions (eq. 5), twin critics regress onto `r + discount * V(s')` (eq. 6) with
Polyak-averaged targets, and the policy is extracted by advantage-weighted regression,
`-E[min(exp(beta (Q'(s, a) - V(s))), max_weight) log pi(a|s)]` (eq. 7). Runs through the shared
offline loop (`rlsuite.agents.offline`).

Choices, written down:

- One gradient step updates `V`, then the policy (with the new `V`), then the critics (towards
  the new `V(s')`), then the target critics, all on the same batch, as the authors' code does.
- The policy is a Gaussian whose mean is `tanh(MLP(s))` and whose log standard deviation is a
  state-independent parameter (initialised to 0, clipped to [-5, 2]), with no tanh squashing of
  samples, as in the authors' code: the dataset's actions, often exactly at the bounds +-1, then
  have a finite log-likelihood without any clipping, which a squashed Gaussian does not give.
  The greedy action is the mean; exploration samples are clipped to [-1, 1].
- The authors' code decays the actor's step size along a cosine; here that is
  `IQLConfig.cosine_actor_lr` (off by default: the schedule spans the config's `num_updates`,
  and a run trained for more updates than that would go on with a zero step size).
- The critics' loss is `0.5 * sum_k E[(Q_k - y)^2]` (`losses.critic_loss`), half the authors'
  code's; with Adam this only rescales the loss.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry
from rlsuite.agents.learner import Learner, action_dim, adam_init, adam_step, bind
from rlsuite.agents.off_policy_parts import hp_gamma
from rlsuite.agents.offline import OfflineConfig, Rewards, make_agent
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.networks import MLP, QEnsemble
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive


@dataclasses.dataclass(frozen=True)
class IQLConfig(OfflineConfig):
    """Static configuration of IQL (the shared offline fields, and these)."""

    normalize_observations: bool = False
    """standardise observations with the dataset's mean and standard deviation"""
    cosine_actor_lr: bool = False
    """decay the actor's step size to 0 along a cosine over num_updates * gradient_steps steps"""


@struct.dataclass
class IQLHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    actor_lr: float = 3e-4
    """Adam step size of the policy (the initial one with config.cosine_actor_lr)"""
    critic_lr: float = 3e-4
    """Adam step size of the Q networks"""
    value_lr: float = 3e-4
    """Adam step size of the state-value network"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 0.005
    """Polyak step of the target critics"""
    expectile: float = 0.7
    """expectile of Q that V fits, in (0, 1); 0.5 is the mean (SARSA), towards 1 the maximum"""
    beta: float = 3.0
    """inverse temperature of the advantage weights exp(beta * A); 0 is behaviour cloning"""
    max_weight: float = 100.0
    """upper clip of the advantage weights"""


@struct.dataclass
class IQLLearner:
    actor: dict
    critic: dict
    target_critic: dict
    value: dict
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    value_opt: optax.OptState
    step: jax.Array


class GaussianActor(nn.Module):
    """IQL's policy: `obs -> N(tanh(MLP(obs)), exp(log_std))`, a diagonal Gaussian whose log
    standard deviation is one state-independent parameter per action dimension."""

    hidden_sizes: Sequence[int] = (256, 256)
    action_dim: int = 1
    activation: str = "relu"
    log_std_min: float = -5.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> distrax.MultivariateNormalDiag:
        mean = jnp.tanh(MLP(self.hidden_sizes, self.action_dim, self.activation, 0.01)(obs))
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        std = jnp.exp(jnp.clip(log_std, self.log_std_min, self.log_std_max))
        return distrax.MultivariateNormalDiag(mean, std * jnp.ones_like(mean))


def check_hparams(hp: IQLHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, IQLHparams):
        raise TypeError(f"iql: hparams must be an IQLHparams, got {type(hp).__name__}")
    check_positive(
        hp, "actor_lr", "critic_lr", "value_lr", "max_weight", owner="iql", kind="hparams"
    )
    for field in ("gamma", "tau"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "iql", "hparams")
    check_field(hp, "expectile", lambda v: (v > 0) & (v < 1), "a value in (0, 1)", "iql", "hparams")
    check_field(hp, "beta", lambda v: v >= 0, "a value >= 0", "iql", "hparams")


def make(config: IQLConfig, env: Environment, env_params=None) -> Agent:
    """Bind IQL to `env` (a bounded 1-D Box action space; used for evaluation)."""
    if not isinstance(config, IQLConfig):
        raise TypeError(f"iql.make needs an IQLConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "iql")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim)
    rewards = Rewards(gamma=hp_gamma)  # IQL scales no rewards
    return make_agent("iql", config, env, env_params, algo, IQLHparams(), check_hparams, rewards)


def learner(config: IQLConfig, obs_shape: tuple[int, ...], dim: int) -> Learner:
    """IQL's networks and update rule for `obs_shape` observations and `dim` actions in
    `[-1, 1]`: the functions below (`init`, `explore`, `greedy`, `learn`) over the `Nets` this
    builds."""
    nets = Nets(
        config=config,
        obs_shape=obs_shape,
        dim=dim,
        actor=GaussianActor(config.hidden_sizes, dim, config.activation),
        critic=QEnsemble(config.hidden_sizes, 2, config.activation),
        value=MLP(config.hidden_sizes, 1, config.activation),
        decay=optax.cosine_decay_schedule(1.0, config.num_updates * config.gradient_steps),
    )
    return bind(nets, init, explore, greedy, learn)


class Nets(NamedTuple):
    """What IQL's learning functions share, fixed when its learner is built (`learner`)."""

    config: IQLConfig
    obs_shape: tuple[int, ...]
    dim: int
    actor: GaussianActor
    critic: QEnsemble
    value: MLP
    decay: Callable  # the actor's step-size factor per gradient step (cosine_actor_lr)


def value_fn(nets: Nets, params, obs):
    return nets.value.apply(params, obs)[..., 0]


def init(nets: Nets, key, hp: IQLHparams) -> IQLLearner:
    key_actor, key_critic, key_value = jax.random.split(key, 3)
    obs, action = jnp.zeros((1, *nets.obs_shape)), jnp.zeros((1, nets.dim))
    actor_params = nets.actor.init(key_actor, obs)
    critic_params = nets.critic.init(key_critic, obs, action)
    value_params = nets.value.init(key_value, obs)
    return IQLLearner(
        actor=actor_params,
        critic=critic_params,
        target_critic=critic_params,
        value=value_params,
        actor_opt=adam_init(actor_params),
        critic_opt=adam_init(critic_params),
        value_opt=adam_init(value_params),
        step=jnp.zeros((), jnp.int32),
    )


def explore(nets: Nets, learner: IQLLearner, obs, key):
    return jnp.clip(nets.actor.apply(learner.actor, obs).sample(seed=key), -1.0, 1.0)


def greedy(nets: Nets, learner: IQLLearner, obs):
    return nets.actor.apply(learner.actor, obs).mean()


def value_loss(nets: Nets, params, obs, target_q, hp: IQLHparams):
    v = value_fn(nets, params, obs)
    return losses.expectile_loss(jax.lax.stop_gradient(target_q) - v, hp.expectile), v.mean()


def actor_loss(nets: Nets, params, obs, action, weights):
    return losses.awr_policy_loss(nets.actor.apply(params, obs).log_prob(action), weights)


def critic_loss(nets: Nets, params, batch, next_v):
    target = jax.lax.stop_gradient(batch["reward"] + batch["discount"] * next_v)
    q = nets.critic.apply(params, batch["obs"], batch["action"])
    return losses.critic_loss(q, target), q.mean()


def learn(nets: Nets, learner: IQLLearner, batch, key, hp: IQLHparams):
    """One gradient step: the value by expectile regression on the target critics, the actor by
    advantage-weighted regression, the critics towards `r + discount V(next_obs)`."""
    del key  # every step is deterministic given the batch
    obs, action = batch["obs"], batch["action"]
    target_q = nets.critic.apply(learner.target_critic, obs, action).min(axis=0)
    (v_loss, v_mean), grads = jax.value_and_grad(functools.partial(value_loss, nets), has_aux=True)(
        learner.value, obs, target_q, hp
    )
    value, value_opt = adam_step(learner.value, grads, learner.value_opt, hp.value_lr)
    advantage = target_q - value_fn(nets, value, obs)
    weights = losses.advantage_weights(advantage, hp.beta, hp.max_weight)
    pi_loss, grads = jax.value_and_grad(functools.partial(actor_loss, nets))(
        learner.actor, obs, action, weights
    )
    actor_lr = hp.actor_lr
    if nets.config.cosine_actor_lr:
        actor_lr = hp.actor_lr * nets.decay(learner.step)
    actor_params, actor_opt = adam_step(learner.actor, grads, learner.actor_opt, actor_lr)
    next_v = value_fn(nets, value, batch["next_obs"])
    (q_loss, q_mean), grads = jax.value_and_grad(
        functools.partial(critic_loss, nets), has_aux=True
    )(learner.critic, batch, next_v)
    critic_params, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)
    learner = IQLLearner(
        actor=actor_params,
        critic=critic_params,
        target_critic=optax.incremental_update(critic_params, learner.target_critic, hp.tau),
        value=value,
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        value_opt=value_opt,
        step=learner.step + 1,
    )
    metrics = {
        "critic_loss": q_loss,
        "value_loss": v_loss,
        "actor_loss": pi_loss,
        "q_mean": q_mean,
        "v_mean": v_mean,
        "weight_mean": weights.mean(),
    }
    return learner, metrics


# This family in the algorithm registry (`rlsuite train iql`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="iql",
        make=make,
        config_cls=IQLConfig,
        hparams_cls=IQLHparams,
        offline=True,
        default_env="pendulum",
    )
)
