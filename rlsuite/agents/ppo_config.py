"""PPO's parts: its static configuration (`PPOConfig`), numeric hyperparameters (`PPOHparams`), the
actor-critic a configuration describes (`actor_critic`), the learner state (`PPOState`) and what
its steps read besides it (`PPOSetup`, with the network's application: `apply`, `step`). What
`rlsuite.agents.ppo` and the families built on it (RL^2, UED's student) are given;
`rlsuite.agents.ppo` exports them all."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.environment import Environment, spaces
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.loop.mesh import Split, minibatch_splits
from rlsuite.loop.rollout import EnvBatch
from rlsuite.networks import (
    TORSOS,
    ActorCritic,
    activation_fn,
    encoder,
    resolve_torso,
)
from rlsuite.networks.action_heads import KINDS, ActionHead
from rlsuite.networks.memory import FeedForward, Recurrent
from rlsuite.networks.recurrent import RecurrentActorCritic, check_cell
from rlsuite.ops import running_stats
from rlsuite.ops.epochs import linear_decay
from rlsuite.ops.validators import (
    check_field,
    check_hidden_sizes,
    check_positive,
    check_positive_ints,
)

DISTRIBUTIONS = KINDS  # the continuous action heads (rlsuite.networks.action_heads)


@dataclasses.dataclass(frozen=True)
class PPOBase:
    """The static configuration every PPO learner has (rollout and minibatch sizes, the
    feed-forward network, switches); `PPOConfig` adds the action distribution and memory, which a
    family built on PPO may fix instead (RARL's learners are feed-forward Gaussians)."""

    num_envs: int = 4
    """parallel environments per agent"""
    num_steps: int = 128
    """steps per environment in each rollout"""
    num_minibatches: int = 4
    """minibatches per epoch; must divide num_envs * num_steps"""
    update_epochs: int = 4
    """passes over each rollout"""
    total_timesteps: int = 500_000
    """environment steps of the whole run (sets the learning-rate annealing horizon)"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """hidden layer sizes of the actor, and of the critic unless critic_hidden_sizes is set"""
    critic_hidden_sizes: tuple[int, ...] | None = None
    """hidden layer sizes of the critic (None: hidden_sizes); brax.training's PPO, for one,
    uses (32, 32, 32, 32) for the policy and (256,) * 5 for the value"""
    activation: str = "tanh"
    """hidden activation: tanh, relu, elu, gelu or silu (swish)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over total_timesteps"""
    normalize_advantages: bool = True
    """normalise advantages per minibatch"""
    clip_value_loss: bool = True
    """clip the value loss around the rollout's values (PPO's value clipping)"""
    normalize_observations: bool = False
    """normalise observations with running statistics kept in the learner state"""
    scale_rewards: bool = False
    """divide rewards by the running std of the discounted return"""
    reset_slots: int | None = None
    """reset the environments that finished this many at a time (rollout.step_batch); None:
    reset the whole batch and keep the finished ones' (pays where a reset costs per environment,
    as Brax ant's does)"""
    torso: str = "auto"
    """what reads the observations before the hidden layers: auto (mlp for vectors, minatar for
    images below 36x36, nature above), mlp, minatar (3x3 conv, 16 channels, dense 128) or nature
    (the DQN Nature CNN, dense 512); shared by the actor and the critic"""

    def __post_init__(self):
        if self.torso not in TORSOS:
            raise ValueError(f"PPOConfig.torso={self.torso!r} is not one of: {', '.join(TORSOS)}")
        check_positive_ints(self, ("num_envs", "num_steps", "num_minibatches", "update_epochs"))
        check_positive_ints(self, ("total_timesteps",))
        if self.reset_slots is not None:
            check_positive_ints(self, ("reset_slots",))
        batch = self.num_envs * self.num_steps
        if batch % self.num_minibatches:
            raise ValueError(
                f"PPOConfig.num_minibatches={self.num_minibatches} must divide the batch "
                f"num_envs * num_steps = {self.num_envs} * {self.num_steps} = {batch}"
            )
        check_hidden_sizes(self)
        if self.critic_hidden_sizes is not None:
            check_hidden_sizes(self, "critic_hidden_sizes")
        activation_fn(self.activation)

    @property
    def num_updates(self) -> int:
        """Updates in the whole run: `total_timesteps // (num_envs * num_steps)` (at least 1)."""
        return max(1, self.total_timesteps // (self.num_envs * self.num_steps))


@dataclasses.dataclass(frozen=True)
class PPOConfig(PPOBase):
    """Static configuration (shapes, loop sizes, switches); closed over by the jitted functions."""

    distribution: str = "gaussian"
    """continuous actions: gaussian (unsquashed, state-independent std, clipped by the env) or
    tanh_gaussian (squashed by tanh, std an output of the actor: brax.training's policy)"""
    recurrent: str | None = None
    """memory: None (feed-forward), lstm or gru. Recurrent: hidden_sizes before the core, which
    the actor and critic share, heads of head_sizes after it; minibatches split the rollout's
    environments, whole sequences each (num_minibatches must divide num_envs)"""
    recurrent_size: int = 128
    """units of the recurrent core"""
    head_sizes: tuple[int, ...] = ()
    """hidden layer sizes of the actor and critic heads after a recurrent core"""

    def __post_init__(self):
        super().__post_init__()
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"PPOConfig.distribution={self.distribution!r} is not one of: "
                f"{', '.join(DISTRIBUTIONS)}"
            )
        if self.recurrent is not None:
            check_cell(self.recurrent, "PPOConfig")
            check_positive_ints(self, ("recurrent_size",))
            if self.head_sizes:
                check_hidden_sizes(self, "head_sizes")
            object.__setattr__(self, "head_sizes", tuple(self.head_sizes))
            if self.num_envs % self.num_minibatches:
                raise ValueError(
                    f"PPOConfig.num_minibatches={self.num_minibatches} must divide num_envs="
                    f"{self.num_envs} with recurrent={self.recurrent!r} (minibatches split the "
                    "environments)"
                )


@struct.dataclass
class PPOHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    learning_rate: float = 2.5e-4
    """Adam step size (annealed to 0 when config.anneal_lr)"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE trace parameter"""
    clip_eps: float = 0.2
    """surrogate clipping range"""
    vf_clip_eps: float = 0.2
    """value clipping range (when config.clip_value_loss)"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    ent_coef: float = 0.01
    """weight of the entropy bonus"""
    ent_decay: float = 1.0
    """factor on the entropy weight per update (gymnax's meta-A2C decays it by 0.999)"""
    ent_coef_min: float = 0.0
    """floor of the decayed entropy weight"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    adam_eps: float = 1e-5
    """Adam epsilon"""
    reward_scale: float = 1.0
    """constant factor on the rewards PPO learns from (brax.training's reward_scaling; applied
    before config.scale_rewards' running normalisation, which divides it out again)"""


def check_hparams(hp: PPOHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, PPOHparams):
        raise TypeError(f"ppo: hparams must be a PPOHparams, got {type(hp).__name__}")
    fields = (
        "learning_rate",
        "clip_eps",
        "vf_clip_eps",
        "max_grad_norm",
        "adam_eps",
        "reward_scale",
    )
    check_positive(hp, *fields, owner="ppo", kind="hparams")
    for field in ("gamma", "gae_lambda"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "ppo", "hparams")
    check_field(
        hp, "ent_decay", lambda v: (v > 0) & (v <= 1), "a value in (0, 1]", "ppo", "hparams"
    )
    for field in ("vf_coef", "ent_coef", "ent_coef_min"):
        check_field(hp, field, lambda v: v >= 0, "a value >= 0", "ppo", "hparams")


def optimizer(hp: PPOHparams) -> optax.GradientTransformation:
    """PPO's gradient transformation without the step size, which is applied separately
    (annealed): built from traced hyperparameters inside the update, its state's structure does
    not depend on their values."""
    return optax.chain(
        optax.clip_by_global_norm(hp.max_grad_norm), optax.scale_by_adam(eps=hp.adam_eps)
    )


def actor_critic(
    config: PPOConfig, action_space, env_name: str = "env", obs_space=None
) -> FeedForward | Recurrent:
    """The actor-critic PPO uses for `action_space` and `obs_space` (default: vector
    observations), in the carry shape (`rlsuite.networks.memory`): `FeedForward(ActorCritic)`, or
    with `config.recurrent` a `Recurrent(RecurrentActorCritic)`."""
    squash = config.distribution == "tanh_gaussian"
    if isinstance(action_space, Discrete) and not squash:
        head = {"num_actions": action_space.n}
    elif isinstance(action_space, Box) and len(action_space.shape) == 1 and action_space.bounded:
        head = {"action_dim": action_space.shape[0], "squash": squash}
    else:
        allowed = "a bounded 1-D Box" if squash else "Discrete or bounded 1-D Box"
        raise TypeError(
            f"ppo with distribution={config.distribution!r} handles {allowed} action spaces; "
            f"{env_name} has {action_space!r}"
        )
    features = None
    if obs_space is not None:
        categories = spaces.categories(obs_space)
        if categories is not None and config.normalize_observations:
            raise ValueError(
                f"PPOConfig.normalize_observations=True: {env_name}'s observations are category "
                f"ids ({obs_space!r}), which the network one-hot encodes; allowed: False"
            )
        torso = resolve_torso(config.torso, obs_space.shape, "PPOConfig")
        features = encoder(torso, obs_space.shape, categories)
    if config.recurrent is None:
        return FeedForward(
            ActorCritic(
                config.hidden_sizes,
                config.activation,
                critic_hidden_sizes=config.critic_hidden_sizes,
                encoder=features,
                **head,
            )
        )
    return Recurrent(
        RecurrentActorCritic(
            config.recurrent,
            config.recurrent_size,
            config.hidden_sizes,
            config.head_sizes,
            config.activation,
            encoder=features,
            **head,
        )
    )


@struct.dataclass
class PPOState:
    params: dict
    opt_state: optax.OptState
    obs_stats: running_stats.RunningStats
    return_stats: running_stats.RunningStats
    discounted_return: jax.Array  # [num_envs], for reward scaling
    env: EnvBatch
    key: jax.Array
    update_step: jax.Array
    variant: Any = ()  # what `learn_with.init` gave a research variant, kept across updates


class PPOSetup(NamedTuple):
    """What PPO's steps read besides the learner state: fixed by `make`, closed over by the agent.

    network: the actor-critic in the carry shape (`rlsuite.networks.memory`).
    env, env_params: the environment as PPO steps it (wrapped) and its shared params (a batch
        that holds its own, `EnvBatch.params`, steps with those).
    policy_loss, minibatches, learn_with: the research variants `prepare` takes.
    head: what the network's distribution means to sampling, learning and evaluation
        (`rlsuite.networks.action_heads`).
    """

    config: PPOConfig
    network: FeedForward | Recurrent
    env: Environment
    env_params: Any
    policy_loss: Callable
    minibatches: Callable
    head: ActionHead
    learn_with: Any  # `ppo.Epochs` by default


def normalized(setup: PPOSetup, obs_stats, obs):
    """`obs` normalised with `obs_stats` when the config says so."""
    if setup.config.normalize_observations:
        return running_stats.normalize(obs_stats, obs, clip=10.0)
    return obs


def apply(setup: PPOSetup, params, obs_stats, obs, carry=(), starts=None):
    """`(distribution, value)` for `obs`: a sequence from the memory `carry` with its `starts`
    (`[T, B]`), or without memory (carry `()`) any batch of observations."""
    return setup.network.apply(params, carry, normalized(setup, obs_stats, obs), starts)


def step(setup: PPOSetup, params, obs_stats, obs, carry, read):
    """One step of a batch `obs` from its memory: `(read(distribution, value), carry after)`."""
    return setup.network.step(params, carry, normalized(setup, obs_stats, obs), read)


def initial_carry(setup: PPOSetup, state, num_envs: int):
    """The carry of `num_envs` fresh episodes (`Agent.initial_carry`; `()` without memory)."""
    return setup.network.initial(num_envs)


def learning_rate(setup: PPOSetup, state: PPOState, hp: PPOHparams):
    """This update's step size: annealed linearly to 0 over the run when the config says so."""
    config = setup.config
    return linear_decay(hp.learning_rate, state.update_step, config.num_updates, config.anneal_lr)


def entropy_weight(state: PPOState, hp: PPOHparams):
    """This update's entropy weight: `ent_coef * ent_decay ** update`, at least `ent_coef_min`
    (with the defaults, `ent_coef` itself)."""
    return jnp.maximum(hp.ent_coef * hp.ent_decay**state.update_step, hp.ent_coef_min)


def env_split(setup: PPOSetup) -> tuple[Split, ...]:
    """What a split over environments divides: the environments, and each minibatch (of whole
    environments with memory, of steps without: `rlsuite.loop.mesh.minibatch_splits`)."""
    return minibatch_splits(setup.config, setup.network)
