"""Contrastive RL (Eysenbach et al. 2022, arXiv:2206.07568): a goal-conditioned critic learned as
the energy between a state-action encoding phi(s, a) and a goal encoding psi(g), trained with a
contrastive loss over the goals of a minibatch, and a tanh-Gaussian actor that climbs it.

    agent = crl.make(CRLConfig(), env, env_params)   # a goal environment (envs/goal)
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

The environment loop is the shared off-policy loop (`rlsuite.agents.off_policy`) with a
trajectory buffer (`rlsuite.data.trajectory_buffer`): every sampled transition comes with a
future state of its own episode, `k >= 1` steps ahead with `P(k) ~ gamma^k` (never across
episodes, never the anchor itself). One gradient step (`learner`):

    critic: phi = phi(s, a), psi = psi(g_future) for the batch's B pairs; logits[i, j] =
            energy(phi_i, psi_j) [B, B], positives on the diagonal; loss = contrastive(logits)
            + logsumexp_coeff * mean(logsumexp_row(logits)^2)
    actor:  goals = the batch's future goals (a `actor_goal_shuffle` fraction of them swapped
            for another row's); a ~ pi(. | s, goal); loss = mean(alpha log pi - energy(phi(s,
            a), psi(goal)))
    alpha:  towards the target entropy -target_entropy_scale * |A| (0.5 by default)

Choices, written down:

- The energy and the contrastive loss are functions passed in (`make(energy=..., loss=...)`);
  `config.energy` and `config.contrastive_loss` name the built-in ones of
  `rlsuite.ops.contrastive` (norm, l2sq, dot, cosine; forward, backward, symmetric, binary).
  `cosine` multiplies by a learned scale `exp(log_scale)`, initialised to 1 / 0.07; the other
  energies ignore it.
- No target networks, no TD target, no reward: the critic learns only which goal came from
  which state-action. (The loop still stores rewards; the task's sparse reward is what
  evaluation reports: a return > 0 means the goal was reached, and the return is the time spent
  near it.)
- The achieved goal of a state is `state[goal_indices]`, the state being the observation's first
  `state_dim` entries (`concat(state, goal)`, the goal environments' contract, checked by
  `check_goal_contract` before anything is traced).
- The update-to-data ratio is `gradient_steps / num_envs` gradient steps per env step
  (JaxGCRL's 1:16 with 64 envs: `gradient_steps=4`).
- Observations are not normalised (its config has no `normalize_observations`): the goals the
  actor reads must be in the units of the achieved goals it is trained on.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry
from rlsuite.agents.learner import (
    Learner,
    action_dim,
    adam_init,
    adam_step,
    bind,
    sample_actor,
    squashed_greedy,
    temperature_step,
)
from rlsuite.agents.off_policy import make_agent
from rlsuite.agents.off_policy_parts import Items, Plugins, ReplayConfig
from rlsuite.data import trajectory_buffer
from rlsuite.environment import Environment
from rlsuite.environment.goal import check_goal_contract
from rlsuite.loop.agent import Agent
from rlsuite.networks import DeepMLP, SquashedGaussianActor, check_deep_mlp
from rlsuite.ops import contrastive
from rlsuite.ops.validators import check_field, check_positive

COSINE_SCALE = 1.0 / 0.07  # the cosine energy's initial scale (CLIP's temperature)


@dataclasses.dataclass(frozen=True)
class CRLConfig(ReplayConfig):
    """Static configuration of CRL (the off-policy loop's fields, and these). CRL learns no TD
    target, so it has no n-step items and no observation normalisation
    (`off_policy_parts.Items()`)."""

    # The fields CRL's config had while it was an `OffPolicyConfig`, with the one value each could
    # take: run records and checkpoints name them, written before or since (`config_dict`), and
    # they read back without them (`rlsuite.app.run_record.config_of`).
    retired_fields: ClassVar[dict] = {"n_step": 1, "normalize_observations": False}

    num_envs: int = 64
    batch_size: int = 256
    buffer_size: int = 1_000_000
    """replay capacity in transitions (all envs together): `buffer_size // num_envs` steps of
    every env's trajectory"""
    learning_starts: int = 6_400
    gradient_steps: int = 4
    """gradient steps per collection of num_envs env steps (4 with 64 envs: JaxGCRL's 1:16)"""
    activation: str = "silu"
    """hidden activation of the encoders and of the actor (silu = swish)"""
    width: int = 256
    """units per hidden layer of phi and psi"""
    depth: int = 2
    """hidden layers of phi and psi (with `residual`: 1 + 4k)"""
    layer_norm: bool = False
    """LayerNorm after every hidden Dense layer of phi and psi"""
    residual: bool = False
    """phi and psi as residual blocks of 4 layers (arXiv:2503.14858)"""
    repr_dim: int = 64
    """size of the representations phi(s, a) and psi(g)"""
    energy: str = "norm"
    """energy between phi and psi: norm, l2sq, dot or cosine"""
    contrastive_loss: str = "forward"
    """critic loss over the batch's logits: forward, backward, symmetric or binary"""
    gamma: float = 0.99
    """discount of the future-goal offsets: P(k) ~ gamma^k, k >= 1, within the episode"""
    actor_goal_shuffle: float = 0.0
    """fraction of the actor's goals swapped for another row's future goal"""

    def __post_init__(self):
        super().__post_init__()
        name = type(self).__name__
        check_deep_mlp(self.width, self.depth, self.residual, name)
        if isinstance(self.repr_dim, bool) or not isinstance(self.repr_dim, int):
            raise ValueError(f"{name}.repr_dim must be an integer >= 1, got {self.repr_dim!r}")
        if self.repr_dim < 1:
            raise ValueError(f"{name}.repr_dim must be an integer >= 1, got {self.repr_dim!r}")
        contrastive.check_energy(self.energy, field=f"{name}.energy")
        contrastive.check_loss(self.contrastive_loss, field=f"{name}.contrastive_loss")
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"{name}.gamma must be in (0, 1), got {self.gamma!r}")
        if not 0.0 <= self.actor_goal_shuffle <= 1.0:
            raise ValueError(
                f"{name}.actor_goal_shuffle must be in [0, 1], got {self.actor_goal_shuffle!r}"
            )
        if self.batch_size < 2:
            raise ValueError(
                f"{name}.batch_size must be >= 2: the other goals of a batch are the negatives, "
                f"got {self.batch_size}"
            )
        if self.buffer_size // self.num_envs < 2:
            raise ValueError(
                f"{name}.buffer_size={self.buffer_size} holds fewer than 2 steps of each of the "
                f"{self.num_envs} envs"
            )

    @property
    def update_to_data(self) -> float:
        """Gradient steps per environment step."""
        return self.gradient_steps / self.num_envs


@struct.dataclass
class CRLHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    actor_lr: float = 3e-4
    """Adam step size of the policy"""
    critic_lr: float = 3e-4
    """Adam step size of phi, psi (and the cosine scale)"""
    alpha_lr: float = 3e-4
    """Adam step size of the log temperature"""
    alpha: float = 1.0
    """initial temperature; read once, by init"""
    target_entropy_scale: float = 0.5
    """target entropy = -target_entropy_scale * action_dim"""
    logsumexp_coeff: float = 0.1
    """weight of the penalty mean(logsumexp_row(logits)^2)"""


@struct.dataclass
class CRLLearner:
    actor: dict
    critic: dict  # {"phi", "psi", "log_scale"}
    log_alpha: jax.Array
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    alpha_opt: optax.OptState


def check_hparams(hp: CRLHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, CRLHparams):
        raise TypeError(f"crl: hparams must be a CRLHparams, got {type(hp).__name__}")
    check_positive(hp, "actor_lr", "critic_lr", "alpha_lr", "alpha", owner="crl", kind="hparams")
    check_field(hp, "logsumexp_coeff", lambda v: v >= 0, "a value >= 0", "crl", "hparams")
    check_field(hp, "target_entropy_scale", lambda v: v == v, "a number", "crl", "hparams")


def goal_layout(env: Environment) -> tuple[int, tuple[int, ...]]:
    """`(state_dim, goal_indices)` of a goal environment (envs/goal's contract), checked."""
    check_goal_contract(env, owner="crl")
    return int(env.state_dim), tuple(int(i) for i in env.goal_indices)


def make(
    config: CRLConfig,
    env: Environment,
    env_params=None,
    *,
    energy: Callable | None = None,
    loss: Callable | None = None,
    buffer=None,
    relabel: Callable | None = None,
) -> Agent:
    """Bind CRL to a goal environment `env` (a bounded 1-D Box action space; observation
    `concat(state, goal)`, static `state_dim` and `goal_indices`). `energy(phi [B, d], psi [B,
    d], scale) -> logits [B, B]` and `loss(logits) -> scalar` replace the ones `config` names;
    `buffer` (default: the trajectory buffer of `config.buffer_size // num_envs` steps per env)
    and `relabel(key, batch) -> batch` are those of `rlsuite.agents.off_policy_parts.Plugins`."""
    if not isinstance(config, CRLConfig):
        raise TypeError(f"crl.make needs a CRLConfig, got {type(config).__name__}")
    state_dim, goal_indices = goal_layout(env)
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "crl")
    energy = contrastive.ENERGIES[config.energy] if energy is None else energy
    loss = contrastive.LOSSES[config.contrastive_loss] if loss is None else loss
    for name, fn in (("energy", energy), ("loss", loss)):
        if not callable(fn):
            raise TypeError(f"crl.make: {name} must be a function, got {type(fn).__name__}")
    if buffer is None:
        horizon = getattr(env, "max_episode_steps", None)
        buffer = trajectory_buffer.for_off_policy(config, config.gamma, horizon)
    algo = learner(config, state_dim, goal_indices, dim, energy, loss)
    plugins = Plugins(buffer=buffer, relabel=relabel, items=Items())
    return make_agent("crl", config, env, env_params, algo, CRLHparams(), check_hparams, plugins)


def learner(
    config: CRLConfig,
    state_dim: int,
    goal_indices: tuple[int, ...],
    dim: int,
    energy: Callable,
    contrastive_loss: Callable,
) -> Learner:
    """CRL's networks and update rule (module docstring) for observations `concat(state [state_dim],
    goal [len(goal_indices)])` and `dim` actions in `[-1, 1]`: the functions below (`init`,
    `explore`, `greedy`, `learn`) over the `Nets` this builds."""
    net = dict(
        width=config.width,
        depth=config.depth,
        out_size=config.repr_dim,
        activation=config.activation,
        layer_norm=config.layer_norm,
        residual=config.residual,
    )
    nets = Nets(
        config=config,
        state_dim=state_dim,
        goal_index=jnp.asarray(goal_indices),
        dim=dim,
        phi=DeepMLP(**net),
        psi=DeepMLP(**net),
        actor=SquashedGaussianActor(config.hidden_sizes, dim, config.activation),
        energy=energy,
        contrastive_loss=contrastive_loss,
    )
    return bind(nets, init, explore, greedy, learn)


class Nets(NamedTuple):
    """What CRL's learning functions share, fixed when its learner is built (`learner`)."""

    config: CRLConfig
    state_dim: int
    goal_index: jax.Array  # the goal's entries of an observation, [goal_dim]
    dim: int
    phi: DeepMLP  # (state, action) -> representation
    psi: DeepMLP  # goal -> representation
    actor: SquashedGaussianActor
    energy: Callable
    contrastive_loss: Callable


def encode(nets: Nets, critic, state, action, goal):
    sa = nets.phi.apply(critic["phi"], jnp.concatenate([state, action], axis=-1))
    return sa, nets.psi.apply(critic["psi"], goal)


def init(nets: Nets, key, hp: CRLHparams) -> CRLLearner:
    state_dim, goal_dim = nets.state_dim, nets.goal_index.shape[0]
    key_actor, key_phi, key_psi = jax.random.split(key, 3)
    actor_params = nets.actor.init(key_actor, jnp.zeros((1, state_dim + goal_dim)))
    critic = {
        "phi": nets.phi.init(key_phi, jnp.zeros((1, state_dim + nets.dim))),
        "psi": nets.psi.init(key_psi, jnp.zeros((1, goal_dim))),
        "log_scale": jnp.log(jnp.asarray(COSINE_SCALE, jnp.float32)),
    }
    log_alpha = jnp.log(jnp.asarray(hp.alpha, jnp.float32))
    return CRLLearner(
        actor=actor_params,
        critic=critic,
        log_alpha=log_alpha,
        actor_opt=adam_init(actor_params),
        critic_opt=adam_init(critic),
        alpha_opt=adam_init(log_alpha),
    )


explore, greedy = sample_actor, squashed_greedy  # the squashed Gaussian actor's


def critic_loss(nets: Nets, critic, state, action, goal, hp: CRLHparams):
    """The contrastive loss of the (state, action) representations against the goals'."""
    sa, g = encode(nets, critic, state, action, goal)
    logits = nets.energy(sa, g, jnp.exp(critic["log_scale"]))
    penalty = contrastive.logsumexp_penalty(logits, hp.logsumexp_coeff)
    total = nets.contrastive_loss(logits) + penalty
    return total, {"penalty": penalty, **contrastive.metrics(logits)}


def actor_loss(nets: Nets, params, critic, state, goal, key, alpha):
    obs = jnp.concatenate([state, goal], axis=-1)
    action, log_prob = nets.actor.apply(params, obs).sample_and_log_prob(seed=key)
    sa, g = encode(nets, critic, state, action, goal)
    # Each row's own energy: the diagonal of the [B, B] logits.
    q = jnp.diagonal(nets.energy(sa, g, jnp.exp(critic["log_scale"])))
    return jnp.mean(alpha * log_prob - q), log_prob


def learn(nets: Nets, learner: CRLLearner, batch, key, hp: CRLHparams):
    """One gradient step: the critic's contrastive loss, then the actor (against goals of other
    rows with `actor_goal_shuffle`) and the temperature."""
    config = nets.config
    key_shuffle, key_pick, key_actor = jax.random.split(key, 3)
    state = batch["obs"][:, : nets.state_dim]
    goal = jnp.take(batch["future_obs"], nets.goal_index, axis=-1)
    (c_loss, metrics), grads = jax.value_and_grad(
        functools.partial(critic_loss, nets), has_aux=True
    )(learner.critic, state, batch["action"], goal, hp)
    critic, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)
    if config.actor_goal_shuffle > 0:
        shuffled = goal[jax.random.permutation(key_shuffle, goal.shape[0])]
        swap = jax.random.uniform(key_pick, goal.shape[:1]) < config.actor_goal_shuffle
        goal = jnp.where(swap[:, None], shuffled, goal)
    alpha = jnp.exp(learner.log_alpha)
    (pi_loss, log_prob), grads = jax.value_and_grad(
        functools.partial(actor_loss, nets), has_aux=True
    )(learner.actor, critic, state, goal, key_actor, alpha)
    actor_params, actor_opt = adam_step(learner.actor, grads, learner.actor_opt, hp.actor_lr)
    target_entropy = -hp.target_entropy_scale * nets.dim
    log_alpha, alpha_opt, alpha_loss = temperature_step(
        learner.log_alpha, learner.alpha_opt, log_prob, target_entropy, hp.alpha_lr
    )
    learner = CRLLearner(
        actor=actor_params,
        critic=critic,
        log_alpha=log_alpha,
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        alpha_opt=alpha_opt,
    )
    metrics = {
        "critic_loss": c_loss,
        "actor_loss": pi_loss,
        "alpha_loss": alpha_loss,
        "alpha": alpha,
        "entropy": -log_prob.mean(),
        **metrics,
    }
    return learner, metrics


# This family in the algorithm registry (`rlsuite train crl`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="crl",
        make=make,
        config_cls=CRLConfig,
        hparams_cls=CRLHparams,
        offline=False,
        default_env="goal/point_reach",
    )
)
