"""Soft Actor-Critic (Haarnoja et al. 2018, arXiv:1801.01290; automatic temperature from
arXiv:1812.05905) for continuous actions.

Twin Q networks with Polyak-averaged targets and the clipped double-Q soft target, a
tanh-squashed Gaussian policy whose log-probability carries the tanh correction, and a temperature
tuned towards a target entropy (or held fixed). The environment loop, the replay buffer in the
learner state, n-step returns and observation normalisation are the shared off-policy loop
(`rlsuite.agents.off_policy`).

    agent = sac.make(SACConfig(num_envs=4), env, env_params)
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

One gradient step updates the critics, then the actor and the temperature on the same batch
(every step, as in the paper's algorithm 1), then the target critics. `learner` is that update
rule on its own, with a hook for a penalty on the critics (CQL builds on it).

With prioritized replay (`replay="prioritized"`, `--replay prioritized`; Schaul et al. 2016),
each item's critic loss is weighted by its importance weight and its new priority is its
absolute TD error averaged over the critics (`annealed_q.fit_batch`); the actor's and the
temperature's losses are not reweighted: the weights correct the critics' regression for the
prioritized draw, and the policy improves on the states of the batch as drawn.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import annealed_q, registry
from rlsuite.agents.learner import (
    Learner,
    action_dim,
    adam_init,
    adam_step,
    bind,
    obs_encoder,
    sample_actor,
    squashed_greedy,
    temperature_step,
)
from rlsuite.agents.off_policy import make_agent
from rlsuite.agents.off_policy_parts import (
    OffPolicyConfig,
    Plugins,
    SamplingConfig,
    sampling_buffer,
)
from rlsuite.data.buffers import ReplayBuffer
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.networks import QEnsemble, SquashedGaussianActor
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints


@dataclasses.dataclass(frozen=True)
class SACConfig(annealed_q.CriticTargetConfig, SamplingConfig, OffPolicyConfig):
    """Static configuration of SAC (the shared off-policy fields, how batches are drawn,
    `rlsuite.agents.off_policy_parts.SamplingConfig`, the operator the critics fit,
    `rlsuite.agents.annealed_q`, and these)."""

    num_critics: int = 2
    """Q networks in the ensemble; targets take their minimum"""
    autotune: bool = True
    """tune the temperature towards the target entropy; otherwise keep hparams.alpha fixed"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_critics",))
        annealed_q.check_config(self)


@struct.dataclass
class SACHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    actor_lr: float = 3e-4
    """Adam step size of the policy"""
    critic_lr: float = 3e-4
    """Adam step size of the Q networks"""
    alpha_lr: float = 3e-4
    """Adam step size of the log temperature (when config.autotune)"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 0.005
    """Polyak step of the target critics"""
    alpha: float = 1.0
    """initial temperature (config.autotune) or the fixed one; read once, by init"""
    target_entropy_scale: float = 1.0
    """target entropy = -target_entropy_scale * action_dim"""
    reward_scale: float = 1.0
    """constant factor on the rewards learned from (brax.training's reward_scaling), applied to
    every sampled batch; the stored transitions (replay buffer or dataset) keep the raw rewards"""


@struct.dataclass
class SACLearner:
    actor: dict
    critic: dict
    target_critic: dict
    log_alpha: jax.Array
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    alpha_opt: optax.OptState


def check_hparams(hp: SACHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, SACHparams):
        raise TypeError(f"sac: hparams must be a SACHparams, got {type(hp).__name__}")
    check_positive(
        hp,
        "actor_lr",
        "critic_lr",
        "alpha_lr",
        "alpha",
        "reward_scale",
        owner="sac",
        kind="hparams",
    )
    for field in ("gamma", "tau"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "sac", "hparams")
    check_field(hp, "target_entropy_scale", lambda v: v == v, "a number", "sac", "hparams")


def make(
    config: SACConfig,
    env: Environment,
    env_params=None,
    critic_target: Callable = losses.soft_td_target,
    *,
    buffer: ReplayBuffer | None = None,
    relabel: Callable | None = None,
) -> Agent:
    """Bind SAC to `env` (a bounded 1-D Box action space). `critic_target(reward, discount,
    next_q [K, B], next_log_prob, alpha) -> y [B]` may be replaced by a research variant; so may
    the replay `buffer` (default: `config.replay`'s, `config.buffer_size` items) and a
    `relabel(key, batch) -> batch` of every sampled batch (`rlsuite.agents.off_policy.make_agent`
    says what they receive and return)."""
    if not isinstance(config, SACConfig):
        raise TypeError(f"sac.make needs a SACConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "sac")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim, critic_target, critic_fit=annealed_q.critic_fit(config))
    plugins = Plugins(buffer=sampling_buffer(config, buffer), relabel=relabel)
    return make_agent("sac", config, env, env_params, algo, SACHparams(), check_hparams, plugins)


def learner(
    config,
    obs_shape: tuple[int, ...],
    dim: int,
    critic_target: Callable = losses.soft_td_target,
    critic_penalty: Callable | None = None,
    critic_fit: Callable = annealed_q.fit_mean,
) -> Learner:
    """SAC's networks and update rule for `obs_shape` observations and `dim` actions in
    `[-1, 1]`; `config` gives `hidden_sizes`, `activation`, `num_critics` and `autotune`: the
    functions below (`init`, `explore`, `greedy`, `learn`) over the `Nets` this builds.

    `critic_penalty(q_fn, q_data [K, B], policy, batch, key, hparams) -> (penalty [K], metrics)`,
    if given, is added to the critics' loss as `weight * penalty.sum()`, where `weight` is
    `learn`'s optional fifth argument (CQL passes its conservative penalty and weight):
    `q_fn(obs, action) -> q [K, ...]` are the critics being trained, `q_data` their values at the
    batch's actions, `policy(obs)` the current policy's distribution; its metrics join `learn`'s.
    `critic_fit(q [K, B], targets [B], step) -> (loss, metrics)` is how the critics fit their
    targets at gradient step `step` (`rlsuite.agents.annealed_q.critic_fit`); on a prioritized
    replay's batch it is also given the importance weights, `weight [B]`
    (`annealed_q.fit_batch`).
    """
    features = obs_encoder(config, obs_shape)
    actor = SquashedGaussianActor(config.hidden_sizes, dim, config.activation, encoder=features)
    critic = QEnsemble(config.hidden_sizes, config.num_critics, config.activation, features)
    nets = Nets(config, obs_shape, dim, actor, critic, critic_target, critic_penalty, critic_fit)
    return bind(nets, init, explore, greedy, learn)


class Nets(NamedTuple):
    """What SAC's learning functions share, fixed when its learner is built (`learner`)."""

    config: Any
    obs_shape: tuple[int, ...]
    dim: int
    actor: SquashedGaussianActor
    critic: QEnsemble
    critic_target: Callable
    critic_penalty: Callable | None
    critic_fit: Callable


def init(nets: Nets, key, hp: SACHparams) -> SACLearner:
    key_actor, key_critic = jax.random.split(key)
    obs, action = jnp.zeros((1, *nets.obs_shape)), jnp.zeros((1, nets.dim))
    actor_params = nets.actor.init(key_actor, obs)
    critic_params = nets.critic.init(key_critic, obs, action)
    log_alpha = jnp.log(jnp.asarray(hp.alpha, jnp.float32))
    return SACLearner(
        actor=actor_params,
        critic=critic_params,
        target_critic=critic_params,
        log_alpha=log_alpha,
        actor_opt=adam_init(actor_params),
        critic_opt=adam_init(critic_params),
        alpha_opt=adam_init(log_alpha),
    )


explore, greedy = sample_actor, squashed_greedy  # the squashed Gaussian actor's


def critic_loss(nets: Nets, params, learner: SACLearner, batch, key, alpha, hp, weight):
    """The critics' loss against `nets.critic_target` (plus the penalty, where there is one)."""
    actor, critic, critic_penalty = nets.actor, nets.critic, nets.critic_penalty
    if critic_penalty is not None:
        key, key_penalty = jax.random.split(key)
    next_action, next_log_prob = actor.apply(learner.actor, batch["next_obs"]).sample_and_log_prob(
        seed=key
    )
    next_q = critic.apply(learner.target_critic, batch["next_obs"], next_action)
    target = nets.critic_target(batch["reward"], batch["discount"], next_q, next_log_prob, alpha)
    q = critic.apply(params, batch["obs"], batch["action"])
    step = learner.critic_opt.count  # gradient steps taken before this one
    loss, metrics = annealed_q.fit_batch(nets.critic_fit, q, target, step, batch)
    metrics = {"q_mean": q.mean(), **metrics}
    if critic_penalty is not None:
        penalty, extra = critic_penalty(
            lambda obs, action: critic.apply(params, obs, action),
            q,
            lambda obs: actor.apply(learner.actor, obs),
            batch,
            key_penalty,
            hp,
        )
        loss = loss + jax.lax.stop_gradient(weight) * penalty.sum()
        metrics.update(extra)
    return loss, metrics


def actor_loss(nets: Nets, params, critic_params, obs, key, alpha):
    action, log_prob = nets.actor.apply(params, obs).sample_and_log_prob(seed=key)
    q = nets.critic.apply(critic_params, obs, action)
    return losses.sac_actor_loss(q, log_prob, alpha), log_prob


def learn(nets: Nets, learner: SACLearner, batch, key, hp: SACHparams, penalty_weight=1.0):
    """One gradient step: the critics, then the actor against the new critics, then the
    temperature (with `autotune`) and the target critics."""
    key_critic, key_actor = jax.random.split(key)
    alpha = jnp.exp(learner.log_alpha)
    (q_loss, critic_metrics), grads = jax.value_and_grad(
        functools.partial(critic_loss, nets), has_aux=True
    )(learner.critic, learner, batch, key_critic, alpha, hp, penalty_weight)
    critic_params, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)
    (pi_loss, log_prob), grads = jax.value_and_grad(
        functools.partial(actor_loss, nets), has_aux=True
    )(learner.actor, critic_params, batch["obs"], key_actor, alpha)
    actor_params, actor_opt = adam_step(learner.actor, grads, learner.actor_opt, hp.actor_lr)
    log_alpha, alpha_opt, alpha_loss = learner.log_alpha, learner.alpha_opt, jnp.zeros(())
    if nets.config.autotune:
        target_entropy = -hp.target_entropy_scale * nets.dim
        log_alpha, alpha_opt, alpha_loss = temperature_step(
            log_alpha, alpha_opt, log_prob, target_entropy, hp.alpha_lr
        )
    target = optax.incremental_update(critic_params, learner.target_critic, hp.tau)
    learner = SACLearner(
        actor=actor_params,
        critic=critic_params,
        target_critic=target,
        log_alpha=log_alpha,
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        alpha_opt=alpha_opt,
    )
    metrics = {
        "critic_loss": q_loss,
        "actor_loss": pi_loss,
        "alpha_loss": alpha_loss,
        "alpha": alpha,
        "entropy": -log_prob.mean(),
        **critic_metrics,
    }
    return learner, metrics


# This family in the algorithm registry (`rlsuite train sac`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="sac",
        make=make,
        config_cls=SACConfig,
        hparams_cls=SACHparams,
        offline=False,
        default_env="pendulum",
    )
)
