"""Twin Delayed DDPG (Fujimoto et al. 2018, arXiv:1802.09477) for continuous actions.

Twin critics with the clipped double-Q target, target policy smoothing with clipped Gaussian
noise, actor and target networks updated every `policy_delay` critic steps, and Gaussian
exploration noise. The delay is a static cycle of the shared loop (`Learner.period`): with the
default one gradient step per env step, one update steps every env `policy_delay` times. The
environment loop, the replay buffer in the learner state, n-step returns and observation
normalisation are the shared off-policy loop (`rlsuite.agents.off_policy`).

    agent = td3.make(TD3Config(num_envs=4), env, env_params)
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

Noise scales are in the agent's action units, `[-1, 1]` (the environment's bounds are rescaled),
so `exploration_noise=0.1` is 5% of the action range, as in the paper's experiments on the
MuJoCo tasks whose bounds are +-1. The exploration noise is kept in the learner state (it is
part of the behaviour policy `agent.act(..., deterministic=False)` follows).

With prioritized replay (`replay="prioritized"`, `--replay prioritized`; Schaul et al. 2016),
each item's critic loss is weighted by its importance weight and its new priority, after every
critic step, is its absolute TD error averaged over the two critics (`annealed_q.fit_batch`);
the delayed actor step is not reweighted: the weights correct the critics' regression for the
prioritized draw, and the policy improves on the states of the batch as drawn.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import annealed_q, registry
from rlsuite.agents.learner import Learner, action_dim, adam_init, adam_step, bind, obs_encoder
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
from rlsuite.networks import DeterministicActor, QEnsemble
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints


@dataclasses.dataclass(frozen=True)
class TD3Config(annealed_q.CriticTargetConfig, SamplingConfig, OffPolicyConfig):
    """Static configuration of TD3 (the shared off-policy fields, how batches are drawn,
    `rlsuite.agents.off_policy_parts.SamplingConfig`, the operator the critics fit,
    `rlsuite.agents.annealed_q`, and these)."""

    policy_delay: int = 2
    """critic steps per actor and target update"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("policy_delay",))
        annealed_q.check_config(self)

    @property
    def learn_period(self) -> int:
        return self.policy_delay


@struct.dataclass
class TD3Hparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    actor_lr: float = 3e-4
    """Adam step size of the policy"""
    critic_lr: float = 3e-4
    """Adam step size of the critics"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 0.005
    """Polyak step of the target actor and critics"""
    exploration_noise: float = 0.1
    """standard deviation of the Gaussian noise added to the behaviour policy's actions"""
    policy_noise: float = 0.2
    """standard deviation of the target policy smoothing noise"""
    noise_clip: float = 0.5
    """the smoothing noise is clipped to [-noise_clip, noise_clip]"""
    reward_scale: float = 1.0
    """constant factor on the rewards learned from (brax.training's reward_scaling), applied to
    every sampled batch; the stored transitions (replay buffer or dataset) keep the raw rewards"""


@struct.dataclass
class TD3Learner:
    actor: dict
    critic: dict
    target_actor: dict
    target_critic: dict
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    exploration_noise: jax.Array
    step: jax.Array


def check_hparams(hp: TD3Hparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, TD3Hparams):
        raise TypeError(f"td3: hparams must be a TD3Hparams, got {type(hp).__name__}")
    check_positive(hp, "actor_lr", "critic_lr", "reward_scale", owner="td3", kind="hparams")
    for field in ("gamma", "tau"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "td3", "hparams")
    for field in ("exploration_noise", "policy_noise", "noise_clip"):
        check_field(hp, field, lambda v: v >= 0, "a value >= 0", "td3", "hparams")


def actor_objective(q, action, batch, hp):
    """TD3's actor loss: `-E[Q_1(s, mu(s))]` (`action = mu(s)`, unused here; a variant such as
    TD3+BC adds a behaviour-cloning term on it)."""
    del action, batch, hp
    return losses.deterministic_actor_loss(q)


def make(
    config: TD3Config,
    env: Environment,
    env_params=None,
    critic_target: Callable = losses.td_target,
    *,
    buffer: ReplayBuffer | None = None,
    relabel: Callable | None = None,
) -> Agent:
    """Bind TD3 to `env` (a bounded 1-D Box action space). `critic_target(reward, discount,
    next_q [2, B]) -> y [B]` may be replaced by a research variant; so may the replay `buffer`
    (default: `config.replay`'s, `config.buffer_size` items) and a `relabel(key, batch) ->
    batch` of every sampled batch (`rlsuite.agents.off_policy.make_agent` says what they receive and
    return)."""
    if not isinstance(config, TD3Config):
        raise TypeError(f"td3.make needs a TD3Config, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "td3")
    obs_shape = env.observation_space(env_params).shape
    fit = annealed_q.critic_fit(config)
    algo = learner(config, obs_shape, dim, config.policy_delay, critic_target, critic_fit=fit)
    plugins = Plugins(buffer=sampling_buffer(config, buffer), relabel=relabel)
    return make_agent("td3", config, env, env_params, algo, TD3Hparams(), check_hparams, plugins)


def learner(
    config,
    obs_shape: tuple[int, ...],
    dim: int,
    policy_delay: int,
    critic_target: Callable = losses.td_target,
    actor_loss: Callable = actor_objective,
    critic_fit: Callable = annealed_q.fit_mean,
) -> Learner:
    """TD3's networks and update rule for `obs_shape` observations and `dim` actions in
    `[-1, 1]`; `config` gives `hidden_sizes` and `activation`. `actor_loss(q [2, B], action,
    batch, hparams) -> loss` is the actor's objective (TD3+BC passes its own); `critic_fit(q,
    targets, step) -> (loss, metrics)` how the critics fit their targets at gradient step `step`
    (`rlsuite.agents.annealed_q.critic_fit`; given a prioritized replay's importance weights
    too, `weight [B]`, on its batches: `annealed_q.fit_batch`). The functions below (`init`,
    `explore`, `greedy`, `learn`) over the `Nets` this builds."""
    features = obs_encoder(config, obs_shape)
    actor = DeterministicActor(config.hidden_sizes, dim, config.activation, features)
    critic = QEnsemble(config.hidden_sizes, 2, config.activation, features)
    nets = Nets(obs_shape, dim, policy_delay, actor, critic, critic_target, actor_loss, critic_fit)
    return bind(nets, init, explore, greedy, learn, period=policy_delay)


class Nets(NamedTuple):
    """What TD3's learning functions share, fixed when its learner is built (`learner`)."""

    obs_shape: tuple[int, ...]
    dim: int
    policy_delay: int
    actor: DeterministicActor
    critic: QEnsemble
    critic_target: Callable
    actor_loss: Callable
    critic_fit: Callable


def init(nets: Nets, key, hp: TD3Hparams) -> TD3Learner:
    key_actor, key_critic = jax.random.split(key)
    obs, action = jnp.zeros((1, *nets.obs_shape)), jnp.zeros((1, nets.dim))
    actor_params = nets.actor.init(key_actor, obs)
    critic_params = nets.critic.init(key_critic, obs, action)
    return TD3Learner(
        actor=actor_params,
        critic=critic_params,
        target_actor=actor_params,
        target_critic=critic_params,
        actor_opt=adam_init(actor_params),
        critic_opt=adam_init(critic_params),
        exploration_noise=jnp.asarray(hp.exploration_noise, jnp.float32),
        step=jnp.zeros((), jnp.int32),
    )


def explore(nets: Nets, learner: TD3Learner, obs, key):
    action = nets.actor.apply(learner.actor, obs)
    noise = learner.exploration_noise * jax.random.normal(key, action.shape)
    return jnp.clip(action + noise, -1.0, 1.0)


def greedy(nets: Nets, learner: TD3Learner, obs):
    return nets.actor.apply(learner.actor, obs)


def critic_loss(nets: Nets, params, learner: TD3Learner, batch, key, hp: TD3Hparams):
    """The critics' loss against `nets.critic_target` at the smoothed target action."""
    actor, critic = nets.actor, nets.critic
    next_action = actor.apply(learner.target_actor, batch["next_obs"])
    noise = hp.policy_noise * jax.random.normal(key, next_action.shape)
    next_action = losses.smoothed_target_action(next_action, noise, hp.noise_clip)
    next_q = critic.apply(learner.target_critic, batch["next_obs"], next_action)
    target = nets.critic_target(batch["reward"], batch["discount"], next_q)
    q = critic.apply(params, batch["obs"], batch["action"])
    step = learner.critic_opt.count  # gradient steps taken before this one
    loss, metrics = annealed_q.fit_batch(nets.critic_fit, q, target, step, batch)
    return loss, {"q_mean": q.mean(), **metrics}


def policy_loss(nets: Nets, params, critic_params, batch, hp):
    action = nets.actor.apply(params, batch["obs"])
    q = nets.critic.apply(critic_params, batch["obs"], action)
    return nets.actor_loss(q, action, batch, hp)


def delayed(nets: Nets, learner: TD3Learner, critic_params, batch, hp: TD3Hparams):
    """Actor step, then Polyak steps of both targets."""
    pi_loss, grads = jax.value_and_grad(functools.partial(policy_loss, nets))(
        learner.actor, critic_params, batch, hp
    )
    actor_params, actor_opt = adam_step(learner.actor, grads, learner.actor_opt, hp.actor_lr)
    target_actor = optax.incremental_update(actor_params, learner.target_actor, hp.tau)
    target_critic = optax.incremental_update(critic_params, learner.target_critic, hp.tau)
    return actor_params, actor_opt, target_actor, target_critic, pi_loss


def learn(nets: Nets, learner: TD3Learner, batch, key, hp: TD3Hparams, phase: int = 0):
    """A critic step; at the last `phase` of the cycle (a static int, see `Learner`), the
    delayed actor and target updates too."""
    (q_loss, critic_metrics), grads = jax.value_and_grad(
        functools.partial(critic_loss, nets), has_aux=True
    )(learner.critic, learner, batch, key, hp)
    critic_params, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)
    if phase == nets.policy_delay - 1:
        actor_params, actor_opt, target_actor, target_critic, pi_loss = delayed(
            nets, learner, critic_params, batch, hp
        )
    else:
        actor_params, actor_opt = learner.actor, learner.actor_opt
        target_actor, target_critic = learner.target_actor, learner.target_critic
        pi_loss = jnp.full((), jnp.nan)
    learner = TD3Learner(
        actor=actor_params,
        critic=critic_params,
        target_actor=target_actor,
        target_critic=target_critic,
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        exploration_noise=learner.exploration_noise,
        step=learner.step + 1,
    )
    return learner, {"critic_loss": q_loss, "actor_loss": pi_loss, **critic_metrics}


# This family in the algorithm registry (`rlsuite train td3`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="td3",
        make=make,
        config_cls=TD3Config,
        hparams_cls=TD3Hparams,
        offline=False,
        default_env="pendulum",
    )
)
