"""Deep Q-learning (Mnih et al. 2015) for discrete actions, with the extensions researchers
expect of it: double-Q targets (van Hasselt et al. 2016, arXiv:1509.06461), dueling heads (Wang
et al. 2016, arXiv:1511.06581), n-step returns, a Huber or squared TD loss, gradient clipping by
global norm, and a target network copied every `target_update_period` gradient steps (`tau` = 1)
or moved towards the online network by Polyak steps there (`tau` < 1).

    agent = dqn.make(DQNConfig(), env, env_params)           # env: a Discrete action space
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

The environment loop, the replay buffer in the learner state, the uniform warm-up of
`learning_starts` steps, n-step replay items (a terminated step cuts the bootstrap; a truncated one
bootstraps from its true last observation) and observation normalisation are the shared off-policy
loop's (`rlsuite.agents.off_policy`, with `discrete_actions`). Exploration is epsilon-greedy,
epsilon falling linearly from `start_e` to `end_e` over the first `exploration_fraction` of
`total_timesteps` environment steps (`rlsuite.ops.exploration`), counted from the run's first step
as CleanRL's `dqn_jax.py` counts them. Defaults are that script's CartPole settings (10 envs and one
gradient step per collection stand for its one gradient step every 10 env steps; its target copy
every 500 env steps is every 50 gradient steps here), with double-Q targets on; like CleanRL's,
gradients are not clipped (`max_grad_norm` 0; SB3's DQN clips at a global norm of 10) and the Q
network's kernels start lecun-normal (flax's default; `init` orthogonal is PPO's). Each of the other
two choices costs return at a CartPole budget of 200,000 env steps (docs/benchmarks/value_based.md,
the reading of 2026-12-05 on the gap to rejax).

Research variants are functions passed in, never flags: `make(..., target=fn)` replaces the
Q-learning target (`rlsuite.ops.losses.q_learning_target`'s signature) and
`make(..., epsilon=fn)` the exploration schedule (`exploration.linear_epsilon`'s). What the network
predicts per action and how it learns it is a record of parts, `make(..., head=)`
(`rlsuite.agents.value_heads`): DQN's scalar values by default; C51's, QR-DQN's and IQN's
distributions are the families `c51`, `qrdqn` and `iqn` on this same learner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry, value_heads
from rlsuite.agents.learner import Learner, adam_init, adam_step, bind, obs_encoder
from rlsuite.agents.off_policy import make_agent
from rlsuite.agents.off_policy_parts import (
    OffPolicyConfig,
    Plugins,
    SamplingConfig,
    discrete_actions,
    sampling_buffer,
)
from rlsuite.data.buffers import ReplayBuffer
from rlsuite.environment import Environment, masks, spaces
from rlsuite.loop.agent import Agent
from rlsuite.networks import KERNEL_INITS
from rlsuite.ops import exploration, losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints


@dataclasses.dataclass(frozen=True)
class DQNConfig(SamplingConfig, OffPolicyConfig):
    """Static configuration of DQN (the shared off-policy fields, how batches are drawn,
    `rlsuite.agents.off_policy_parts.SamplingConfig`, and these: CleanRL's CartPole values)."""

    num_envs: int = 10
    """parallel environments; one gradient step per collection of all of them"""
    buffer_size: int = 10_000
    """replay capacity in transitions (all envs together)"""
    batch_size: int = 128
    """transitions per gradient step"""
    learning_starts: int = 10_000
    """environment steps (all envs together) of uniformly random actions before learning"""
    total_timesteps: int = 500_000
    """environment steps of the whole run (all envs together)"""
    hidden_sizes: tuple[int, ...] = (120, 84)
    """hidden layer sizes of the Q network (of each stream, with dueling)"""
    double: bool = True
    """double Q-learning: the online network picks the next action, the target values it"""
    dueling: bool = False
    """dueling heads: a value and advantages, Q = V + A - mean(A)"""
    loss: str = "mse"
    """TD loss: huber (delta 1) or mse (half the squared error)"""
    target_update_period: int = 50
    """gradient steps between target updates (each a Polyak step of tau; tau 1 copies)"""
    init: str = "lecun_normal"
    """how the Q network's dense kernels start: lecun_normal (flax's default, CleanRL's and
    rejax's) or orthogonal (gain sqrt 2, PPO's)"""
    noisy: bool = False
    """noisy networks (factorised Gaussian, Fortunato et al. 2018): the layers after the encoder
    draw new noise at every acting and gradient step, and a greedy evaluation uses their mean"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("target_update_period",))
        if self.init not in KERNEL_INITS:
            raise ValueError(
                f"DQNConfig.init={self.init!r} is not one of: {', '.join(KERNEL_INITS)}"
            )
        if self.loss not in losses.TD_LOSSES:
            raise ValueError(
                f"DQNConfig.loss={self.loss!r} is not one of: {', '.join(losses.TD_LOSSES)}"
            )


@struct.dataclass
class DQNHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    learning_rate: float = 2.5e-4
    """Adam step size of the Q network"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 1.0
    """target update step every target_update_period gradient steps (1: a copy)"""
    start_e: float = 1.0
    """exploration epsilon at the first environment step (read once, by init)"""
    end_e: float = 0.05
    """exploration epsilon from exploration_fraction of the run on (read once, by init)"""
    exploration_fraction: float = 0.5
    """share of total_timesteps over which epsilon falls linearly from start_e to end_e (read
    once, by init)"""
    max_grad_norm: float = 0.0
    """gradients are scaled down to this global norm where theirs is larger; 0: not clipped
    (CleanRL's)"""
    reward_scale: float = 1.0
    """constant factor on the rewards learned from, applied to every sampled batch"""


@struct.dataclass
class DQNLearner:
    """The online and target networks, Adam's state, the gradient steps taken (int32 []) and
    the exploration schedule's hyperparameters (float32 [], from `init`'s; acting has no
    hyperparameters of its own, as SAC's initial temperature lives in its state)."""

    q: dict
    target_q: dict
    opt: optax.OptState
    steps: jax.Array
    start_e: jax.Array
    end_e: jax.Array
    exploration_fraction: jax.Array


def check_hparams(hp: DQNHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, DQNHparams):
        raise TypeError(f"dqn: hparams must be a DQNHparams, got {type(hp).__name__}")
    check_positive(hp, "learning_rate", "reward_scale", owner="dqn", kind="hparams")
    at_least_0 = "a value >= 0 (0: no clipping)"
    check_field(hp, "max_grad_norm", lambda v: v >= 0, at_least_0, "dqn", "hparams")
    for field in ("gamma", "start_e", "end_e", "exploration_fraction"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "dqn", "hparams")
    check_field(hp, "tau", lambda v: (v > 0) & (v <= 1), "a value in (0, 1]", "dqn", "hparams")


def make(
    config: DQNConfig,
    env: Environment,
    env_params=None,
    target: Callable = losses.q_learning_target,
    epsilon: Callable = exploration.linear_epsilon,
    *,
    buffer: ReplayBuffer | None = None,
    head: value_heads.ValueHead = value_heads.SCALAR,
) -> Agent:
    """Bind DQN to `env` (a `Discrete` action space; another is a `TypeError` naming it).

    `target(reward, discount, next_q_target [B, A], next_q_online [B, A] or None) -> y [B]`
    (the online values only with `config.double`) and `epsilon(env_steps, hparams,
    total_timesteps) -> []` may be replaced by research variants; so may the replay `buffer`
    and the value `head` (`rlsuite.agents.value_heads`; `target` is the scalar head's)."""
    if not isinstance(config, DQNConfig):
        raise TypeError(f"{head.name}.make needs a DQNConfig, got {type(config).__name__}")
    if head.target is not value_heads.SCALAR.target and target is not losses.q_learning_target:
        raise ValueError(
            f"{head.name}.make: target= replaces the scalar head's TD target; the {head.name} "
            "head bootstraps its distribution itself (pass a ValueHead of your own instead)"
        )
    env_params = env.check_params(env_params)
    actions = discrete_actions(env, env_params, head.name)
    num_actions = int(env.action_space(env_params).n)
    obs_space = env.observation_space(env_params)
    categories = spaces.categories(obs_space)
    algo = learner(config, tuple(obs_space.shape), num_actions, target, epsilon, categories, head)
    plugins = Plugins(sampling_buffer(config, buffer), actions=actions, reads_action_mask=True)
    hparams = DQNHparams()
    return make_agent(head.name, config, env, env_params, algo, hparams, check_hparams, plugins)


def make_with_head(config_cls: type, head_of: Callable, hparams_cls: type = DQNHparams) -> Callable:
    """The `make` of a family that is DQN with the value head `head_of(config)`
    (`rlsuite.agents.value_heads`) for configs of `config_cls` (a `DQNConfig`), its default
    hyperparameters `hparams_cls()` (a `DQNHparams`): C51, QR-DQN, IQN and Rainbow. It takes
    DQN's `epsilon` and `buffer`; the head is the family's."""

    def make_family(
        config, env, env_params=None, epsilon=exploration.linear_epsilon, *, buffer=None
    ):
        if not isinstance(config, config_cls):
            raise TypeError(f"make needs a {config_cls.__name__}, got {type(config).__name__}")
        head = head_of(config)
        agent = make(config, env, env_params, epsilon=epsilon, buffer=buffer, head=head)
        return agent._replace(default_hparams=hparams_cls())

    return make_family


def refuse_scalar_loss(config: DQNConfig, learns_by: str) -> None:
    """Raise a `ValueError` where a distributional family's `config.loss` (the scalar head's TD
    loss, which it does not use) is not the default; `learns_by` says what it uses."""
    if config.loss != DQNConfig.loss:
        name = type(config).__name__
        raise ValueError(
            f"{name}.loss={config.loss!r}: loss is DQN's scalar TD loss; this family learns by "
            f"{learns_by} (leave loss at {DQNConfig.loss!r})"
        )


def learner(
    config: DQNConfig,
    obs_shape: tuple[int, ...],
    num_actions: int,
    target: Callable = losses.q_learning_target,
    epsilon: Callable = exploration.linear_epsilon,
    categories: tuple[int, ...] | None = None,
    head: value_heads.ValueHead = value_heads.SCALAR,
) -> Learner:
    """DQN's network and update rule for `obs_shape` observations and `num_actions` actions:
    the functions below over the `Nets` this builds; `categories`, the sizes of an observation
    made of category ids (`rlsuite.environment.spaces.Categories`); `head`, what the network
    predicts and learns (`rlsuite.agents.value_heads`)."""
    network = head.network(config, num_actions, obs_encoder(config, obs_shape, categories))
    nets = Nets(config, obs_shape, num_actions, network, target, epsilon, head)
    return bind(nets, init, explore, greedy, learn, scheduled=True)


class Nets(NamedTuple):
    """What DQN's learning functions share, fixed when its learner is built (`learner`)."""

    config: DQNConfig
    obs_shape: tuple[int, ...]
    num_actions: int
    q: Any
    target: Callable
    epsilon: Callable
    head: value_heads.ValueHead


def init(nets: Nets, key, hp: DQNHparams) -> DQNLearner:
    params = nets.q.init(key, jnp.zeros((1, *nets.obs_shape)))
    schedule = exploration.schedule_of(hp).values()
    return DQNLearner(params, params, adam_init(params), jnp.zeros((), jnp.int32), *schedule)


def greedy(nets: Nets, learner: DQNLearner, obs, action_mask=None):
    """The action of the highest value (the lowest index among ties), int32; with an
    `action_mask`, among the legal actions."""
    q = masks.masked_values(nets.head.values(nets.q, learner.q, obs), action_mask)
    return jnp.argmax(q, axis=-1).astype(jnp.int32)


def explore(nets: Nets, learner: DQNLearner, obs, key, env_steps=None, action_mask=None):
    """Epsilon-greedy: a uniformly random action with probability `epsilon(env_steps)`, else
    the greedy one (every leading axis of `obs` an observation of its own); with an
    `action_mask`, both among the legal actions."""
    eps = nets.epsilon(env_steps, learner, nets.config.total_timesteps)
    values = nets.head.values(nets.q, learner.q, obs, value_heads.noise(nets, key, 0))
    return exploration.epsilon_greedy(values, key, eps, action_mask)


def clip_by_global_norm(grads, max_norm):
    """`grads` scaled by `max_norm / ||grads||` where their global norm exceeds `max_norm`
    (optax.clip_by_global_norm's rule, with a traced bound); `max_norm` 0 leaves them as they
    are. Returns `(grads, norm)`, the norm before clipping."""
    norm = optax.global_norm(grads)
    clipped = (max_norm > 0) & (norm >= max_norm)
    scale = jnp.where(clipped, max_norm / jnp.maximum(norm, 1e-12), 1.0)
    return jax.tree.map(lambda g: g * scale, grads), norm


def learn(nets: Nets, learner: DQNLearner, batch, key, hp: DQNHparams):
    """One gradient step on the head's loss against its target (the scalar head's: the TD loss
    against `nets.target`; bootstrapping from the next state's legal actions only), then, every
    `target_update_period` steps, a Polyak step of `tau` of the target network."""
    config = nets.config
    targets = nets.head.target(nets, learner, batch, key)

    def loss_fn(params):
        loss, taken, per_item = nets.head.loss(nets, params, batch, targets, key)
        return loss, (taken, per_item)

    (loss, (taken, per_item)), grads = jax.value_and_grad(loss_fn, has_aux=True)(learner.q)
    grads, grad_norm = clip_by_global_norm(grads, hp.max_grad_norm)
    params, opt = adam_step(learner.q, grads, learner.opt, hp.learning_rate)
    steps = learner.steps + 1
    moved = optax.incremental_update(params, learner.target_q, hp.tau)
    due = steps % config.target_update_period == 0
    target_q = jax.tree.map(lambda new, old: jnp.where(due, new, old), moved, learner.target_q)
    learner = learner.replace(q=params, target_q=target_q, opt=opt, steps=steps)
    metrics = {"q_loss": loss, "q_mean": taken.mean(), "grad_norm": grad_norm}
    if "index" in batch:  # a prioritized replay's batch: its items' new priorities
        metrics["priority"] = per_item
    return learner, metrics


# This family in the algorithm registry (`rlsuite train dqn`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="dqn",
        make=make,
        config_cls=DQNConfig,
        hparams_cls=DQNHparams,
        offline=False,
        default_env="cartpole",
    )
)
