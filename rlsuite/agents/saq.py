"""State-conditioned action quantisation (Luo et al. 2023, arXiv:2310.11731, SAQ): offline RL on
a small discrete set of actions per state, learned from the dataset by a VQ-VAE, with CQL on the
codes (SAQ-CQL).

    agent = saq.make(SAQConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

The VQ-VAE encodes `(s, a)` to `z`, quantises it to the nearest of `num_codes` codebook vectors
`e_k` and decodes `(s, e_k)` back to an action (`quantize`, `vq_loss`). Its decoder turns the
codes into `num_codes` actions at every state, each close to actions the dataset took there.
Then a discrete CQL learns `Q(s, k)` over the codes: each dataset action becomes the code it
quantises to, the critics regress onto `r + discount * max_k min_j Q'_j(s', k)`, and CQL's penalty
`alpha (logsumexp_k Q(s, k) - Q(s, k_data))` (exact over `k`) keeps Q low on the codes the
dataset did not take. The policy is the decoded best code. Runs through the shared offline loop
(`rlsuite.agents.offline`).

Choices, written down:

- The VQ-VAE trains alone for the first `vq_fraction` of the run's gradient steps, then stays
  fixed while the critics train, as the paper trains it first. Both are one learner (`lax.cond`
  on its step), so the run is one ordinary offline run, resumable like any.
- Its loss is the reconstruction's squared error plus `||sg(z) - e||^2 + commitment
  ||z - sg(e)||^2`, with the straight-through gradient to the encoder (van den Oord et al.
  2017); the codebook is learned by that loss (no moving averages).
- Each step logs the metrics of its phase and NaN for the other's; an update's row is their
  mean over its steps without the NaNs.
- The critics are twin, the target's max over codes takes their minimum, and the targets follow
  by Polyak steps. Exploration (not used by the offline loop's evaluation) samples a code from
  `softmax(Q)`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple

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
from rlsuite.networks import MLP, QNetwork
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints


@dataclasses.dataclass(frozen=True)
class SAQConfig(OfflineConfig):
    """Static configuration of SAQ (the shared offline fields, and these)."""

    num_codes: int = 16
    """K: codebook vectors, the discrete actions at every state"""
    latent_dim: int = 8
    """size of the VQ-VAE's latent z and of each codebook vector"""
    vq_fraction: float = 0.2
    """fraction of the run's gradient steps (num_updates * gradient_steps) that train the VQ-VAE
    alone, first; the critics learn in the rest, the VQ-VAE fixed"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_codes", "latent_dim"))
        total = self.num_updates * self.gradient_steps
        if not 0 < self.vq_fraction < 1 or not 1 <= self.vq_steps < total:
            raise ValueError(
                f"SAQConfig.vq_fraction={self.vq_fraction} must be in (0, 1) and leave at least "
                f"one of the run's {total} gradient steps to the VQ-VAE and one to the critics"
            )

    @property
    def vq_steps(self) -> int:
        """The VQ-VAE's gradient steps: `vq_fraction` of the run's, rounded."""
        return round(self.vq_fraction * self.num_updates * self.gradient_steps)


@struct.dataclass
class SAQHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    vq_lr: float = 3e-4
    """Adam step size of the VQ-VAE"""
    commitment: float = 0.25
    """weight of the commitment loss ||z - sg(e)||^2"""
    critic_lr: float = 3e-4
    """Adam step size of the Q networks"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 0.005
    """Polyak step of the target critics"""
    alpha_cql: float = 1.0
    """weight of CQL's penalty logsumexp_k Q(s, k) - Q(s, k_data); 0 is plain Q-learning"""


@struct.dataclass
class SAQLearner:
    vq: dict
    critic: dict
    target_critic: dict
    vq_opt: optax.OptState
    critic_opt: optax.OptState
    step: jax.Array


def quantize(z, codebook):
    """The nearest codebook vector to each latent: `z [B, D]`, `codebook [K, D]` ->
    `(index [B], e [B, D])`, by squared Euclidean distance (the first on a tie)."""
    distances = jnp.sum(jnp.square(z[:, None, :] - codebook[None]), axis=-1)
    index = jnp.argmin(distances, axis=-1)
    return index, codebook[index]


def vq_loss(action, reconstruction, z, e, commitment):
    """The VQ-VAE's loss over a batch: `E||a^ - a||^2 + E||sg(z) - e||^2 +
    commitment E||z - sg(e)||^2` (sums over dimensions, means over the batch)."""
    sg = jax.lax.stop_gradient
    reconstruct = jnp.sum(jnp.square(reconstruction - action), -1).mean()
    codebook = jnp.sum(jnp.square(sg(z) - e), -1).mean()
    commit = jnp.sum(jnp.square(z - sg(e)), -1).mean()
    return reconstruct + codebook + commitment * commit, (reconstruct, codebook, commit)


def discrete_cql_penalty(q, index):
    """CQL(H) over a finite action set, exact: `E_s[logsumexp_k Q(s, k) - Q(s, k_data)]` for each
    critic of `q [J, B, K]` at the dataset's codes `index [B]` -> `[J]`."""
    taken = jnp.take_along_axis(q, index[None, :, None], axis=-1)[..., 0]
    return (jax.nn.logsumexp(q, axis=-1) - taken).mean(axis=-1)


class VQVAE(nn.Module):
    """A state-conditioned VQ-VAE of actions: `encode(obs, action) -> z`, `decode(obs, e) ->
    action in [-1, 1]`, and its `codebook [K, D]`."""

    hidden_sizes: Sequence[int] = (256, 256)
    action_dim: int = 1
    num_codes: int = 16
    latent_dim: int = 8
    activation: str = "relu"

    def setup(self):
        self.encoder = MLP(self.hidden_sizes, self.latent_dim, self.activation)
        self.decoder = MLP(self.hidden_sizes, self.action_dim, self.activation)
        bound = 1.0 / self.num_codes  # VQ-VAE's uniform initialisation
        self.codebook = self.param(
            "codebook",
            lambda key, shape: jax.random.uniform(key, shape, minval=-bound, maxval=bound),
            (self.num_codes, self.latent_dim),
        )

    def encode(self, obs, action):
        return self.encoder(jnp.concatenate([obs, action], axis=-1))

    def decode(self, obs, e):
        return jnp.tanh(self.decoder(jnp.concatenate([obs, e], axis=-1)))

    def __call__(self, obs, action):
        """`(reconstruction, z, e, index)` of a batch, the decoder reading the straight-through
        quantisation `z + sg(e - z)`."""
        z = self.encode(obs, action)
        index, e = quantize(z, self.codebook)
        reconstruction = self.decode(obs, z + jax.lax.stop_gradient(e - z))
        return reconstruction, z, e, index

    def all_actions(self, obs):
        """The decoded action of every code at each state: `obs [B, o] -> [B, K, a]`."""
        codes = jnp.broadcast_to(self.codebook, (obs.shape[0], *self.codebook.shape))
        states = jnp.broadcast_to(obs[:, None], (obs.shape[0], self.num_codes, obs.shape[-1]))
        return self.decode(states, codes)


def check_hparams(hp: SAQHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, SAQHparams):
        raise TypeError(f"saq: hparams must be a SAQHparams, got {type(hp).__name__}")
    check_positive(hp, "vq_lr", "critic_lr", owner="saq", kind="hparams")
    check = functools.partial(check_field, hp, owner="saq", kind="hparams")
    for field in ("gamma", "tau"):
        check(field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]")
    for field in ("commitment", "alpha_cql"):
        check(field, lambda v: v >= 0, "a value >= 0")


def make(
    config: SAQConfig, env: Environment, env_params=None, penalty: Callable | None = None
) -> Agent:
    """Bind SAQ to `env` (a bounded 1-D Box action space; used for evaluation). `penalty(q
    [J, B, K], index [B]) -> [J]` is the conservative term over the codes, weighted by
    `alpha_cql` (default `discrete_cql_penalty`, CQL's)."""
    if not isinstance(config, SAQConfig):
        raise TypeError(f"saq.make needs a SAQConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "saq")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim, penalty)
    rewards = Rewards(gamma=hp_gamma)  # SAQ scales no rewards
    return make_agent("saq", config, env, env_params, algo, SAQHparams(), check_hparams, rewards)


def learner(
    config: SAQConfig, obs_shape: tuple[int, ...], dim: int, penalty: Callable | None = None
) -> Learner:
    """SAQ's networks and update rule for `obs_shape` observations and `dim` actions in
    `[-1, 1]`: the functions below over the `Nets` this builds."""
    hidden, act = config.hidden_sizes, config.activation
    nets = Nets(
        config=config,
        obs_shape=obs_shape,
        dim=dim,
        vq=VQVAE(hidden, dim, config.num_codes, config.latent_dim, act),
        critic=TwinQ(hidden, config.num_codes, act),
        penalty=discrete_cql_penalty if penalty is None else penalty,
    )
    return bind(nets, init, explore, greedy, learn)


class TwinQ(nn.Module):
    """Two Q networks over the codes: `obs [B, o] -> q [2, B, K]`."""

    hidden_sizes: Sequence[int]
    num_codes: int
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs):
        heads = [QNetwork(self.hidden_sizes, self.num_codes, self.activation) for _ in range(2)]
        return jnp.stack([head(obs) for head in heads])


class Nets(NamedTuple):
    """What SAQ's learning functions share, fixed when its learner is built (`learner`)."""

    config: SAQConfig
    obs_shape: tuple[int, ...]
    dim: int
    vq: VQVAE
    critic: TwinQ
    penalty: Callable  # (q [J, B, K], index [B]) -> [J], the conservative term over the codes


def init(nets: Nets, key, hp: SAQHparams) -> SAQLearner:
    key_vq, key_critic = jax.random.split(key)
    obs, action = jnp.zeros((1, *nets.obs_shape)), jnp.zeros((1, nets.dim))
    vq = nets.vq.init(key_vq, obs, action)
    critic = nets.critic.init(key_critic, obs)
    return SAQLearner(
        vq=vq,
        critic=critic,
        target_critic=critic,
        vq_opt=adam_init(vq),
        critic_opt=adam_init(critic),
        step=jnp.zeros((), jnp.int32),
    )


def decoded(nets: Nets, learner: SAQLearner, obs, code):
    """The action of `code [B]` at `obs [B, o]`."""
    actions = nets.vq.apply(learner.vq, obs, method=VQVAE.all_actions)
    return jnp.take_along_axis(actions, code[:, None, None], axis=1)[:, 0]


def greedy(nets: Nets, learner: SAQLearner, obs):
    single = obs.ndim == 1
    obs = obs[None] if single else obs
    code = nets.critic.apply(learner.critic, obs).min(axis=0).argmax(axis=-1)
    action = decoded(nets, learner, obs, code)
    return action[0] if single else action


def explore(nets: Nets, learner: SAQLearner, obs, key):
    q = nets.critic.apply(learner.critic, obs).min(axis=0)
    return decoded(nets, learner, obs, jax.random.categorical(key, q))


def vq_step(nets: Nets, learner: SAQLearner, batch, hp: SAQHparams):
    def loss_fn(params):
        reconstruction, z, e, _ = nets.vq.apply(params, batch["obs"], batch["action"])
        return vq_loss(batch["action"], reconstruction, z, e, hp.commitment)

    (loss, parts), grads = jax.value_and_grad(loss_fn, has_aux=True)(learner.vq)
    vq, vq_opt = adam_step(learner.vq, grads, learner.vq_opt, hp.vq_lr)
    critics = dict.fromkeys(("critic_loss", "cql_penalty", "q_mean"), jnp.full((), jnp.nan))
    metrics = {"vq_loss": loss, "reconstruction": parts[0], **critics}
    return learner.replace(vq=vq, vq_opt=vq_opt), metrics


def critic_loss(nets: Nets, params, batch, index, target, hp: SAQHparams):
    q = nets.critic.apply(params, batch["obs"])  # [2, B, K]
    taken = jnp.take_along_axis(q, index[None, :, None], axis=-1)[..., 0]
    penalty = nets.penalty(q, index)
    loss = losses.critic_loss(taken, target) + hp.alpha_cql * penalty.sum()
    return loss, (penalty.mean(), taken.mean())


def critic_step(nets: Nets, learner: SAQLearner, batch, hp: SAQHparams):
    index = nets.vq.apply(learner.vq, batch["obs"], batch["action"])[3]
    next_q = nets.critic.apply(learner.target_critic, batch["next_obs"]).min(axis=0)
    target = batch["reward"] + batch["discount"] * next_q.max(axis=-1)
    (loss, (penalty, q_mean)), grads = jax.value_and_grad(
        functools.partial(critic_loss, nets), has_aux=True
    )(learner.critic, batch, index, jax.lax.stop_gradient(target), hp)
    critic, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)
    learner = learner.replace(
        critic=critic,
        critic_opt=critic_opt,
        target_critic=optax.incremental_update(critic, learner.target_critic, hp.tau),
    )
    vq = dict.fromkeys(("vq_loss", "reconstruction"), jnp.full((), jnp.nan))
    return learner, {**vq, "critic_loss": loss, "cql_penalty": penalty, "q_mean": q_mean}


def learn(nets: Nets, learner: SAQLearner, batch, key, hp: SAQHparams):
    """One gradient step: the VQ-VAE's for the first `vq_steps`, the critics' after."""
    del key  # every step is deterministic given the batch
    learner, metrics = jax.lax.cond(
        learner.step < nets.config.vq_steps,
        functools.partial(vq_step, nets),
        functools.partial(critic_step, nets),
        learner,
        batch,
        hp,
    )
    return learner.replace(step=learner.step + 1), metrics


# This family in the algorithm registry (`rlsuite train saq`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="saq",
        make=make,
        config_cls=SAQConfig,
        hparams_cls=SAQHparams,
        offline=True,
        default_env="pendulum",
    )
)
