"""Networks shared by the agents: MLP torsos, policy heads (distrax distributions) and critics.

On-policy: `ActorCritic`. Off-policy (SAC, TD3): `SquashedGaussianActor`, `DeterministicActor` and
`QEnsemble`; their actions live in `[-1, 1]^d` (the agents rescale the environment's bounds).
Value-based (DQN): `QNetwork`, a value per discrete action, plain or dueling (`dueling`).

Initialisation follows the PPO implementation details (Huang et al., 2022): orthogonal weights with
gain sqrt(2) in hidden layers, 0.01 on the policy output and 1.0 on the value output, zero biases.
Orthogonal initialisation is a QR decomposition; on CPU a QR batched by `vmap` can deadlock XLA's
thread pool (docs/design.md section 7), so per-seed parameters are initialised with `jax.lax.map`
over the seed keys (see `rlsuite.loop.driver.init_batch`), and the orthogonal initialiser itself
(`orthogonal`) runs once per batch member where a `vmap` batches it anyway (a network initialised
inside a vmapped update: LPO's inner runs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {
    "tanh": nn.tanh,
    "relu": nn.relu,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,  # = swish, brax.training's default
}


def activation_fn(name: str):
    """The activation called `name`; a `ValueError` lists the allowed names."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; allowed: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


# How a network's dense kernels start: orthogonal (gain sqrt 2 on hidden layers, the output
# layer's own gain; PureJaxRL's and CleanRL's PPO) or lecun_normal (flax's default, variance
# 1 / fan_in, gains ignored; CleanRL's and rejax's DQN). Biases start at zero either way.
KERNEL_INITS = ("orthogonal", "lecun_normal")


def mapped_over_batch(init: Callable) -> Callable:
    """The flax initialiser `init` whose `vmap` runs it once per batch member (`lax.map`) instead
    of batching it: the same values, without the batched QR of an orthogonal initialisation,
    which can deadlock XLA's CPU thread pool (jaxlib 0.10.2, 2 cores)."""

    def mapped(key, shape, dtype=jnp.float32):
        @jax.custom_batching.custom_vmap
        def draw(key):
            return init(key, shape, dtype)

        @draw.def_vmap
        def one_at_a_time(axis_size, in_batched, keys):
            return jax.lax.map(draw, keys), True

        return draw(key)

    return mapped


def orthogonal(gain: float = 1.0) -> Callable:
    """`flax.linen.initializers.orthogonal(gain)`, safe under `vmap` (`mapped_over_batch`)."""
    return mapped_over_batch(nn.initializers.orthogonal(gain))


def kernel_init(kind: str, gain: float):
    """The kernel initialiser `kind` (one of `KERNEL_INITS`) at `gain` (orthogonal only)."""
    if kind not in KERNEL_INITS:
        raise ValueError(f"unknown kernel_init {kind!r}; allowed: {', '.join(KERNEL_INITS)}")
    if kind == "lecun_normal":
        return nn.initializers.lecun_normal()
    return orthogonal(gain)


class MLP(nn.Module):
    """Dense layers with an activation between them (with `layer_norm`, a LayerNorm before each
    activation); the last is linear with gain `out_gain`. Kernels start as `kernel_init` says
    (`KERNEL_INITS`)."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "tanh"
    out_gain: float = 1.0
    layer_norm: bool = False
    kernel_init: str = "orthogonal"

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        act = activation_fn(self.activation)
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=kernel_init(self.kernel_init, np.sqrt(2)))(x)
            x = act(nn.LayerNorm()(x) if self.layer_norm else x)
        return nn.Dense(self.out_size, kernel_init=kernel_init(self.kernel_init, self.out_gain))(x)


class DeepMLP(nn.Module):
    """`depth` hidden layers of `width` units, each Dense -> (LayerNorm) -> activation, then a
    linear layer of `out_size`. With `residual`, the layers after the first come in blocks of 4
    whose input is added to their output (the 1000-layer networks of arXiv:2503.14858): `depth`
    must then be 1 + a multiple of 4 (`check_deep_mlp`)."""

    width: int = 256
    depth: int = 2
    out_size: int = 64
    activation: str = "silu"
    layer_norm: bool = False
    residual: bool = False

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        act = activation_fn(self.activation)

        def layer(x):
            x = nn.Dense(self.width, kernel_init=orthogonal(np.sqrt(2)))(x)
            return act(nn.LayerNorm()(x) if self.layer_norm else x)

        x = layer(x)
        if self.residual:
            for _ in range((self.depth - 1) // 4):
                skip = x
                for _ in range(4):
                    x = layer(x)
                x = x + skip
        else:
            for _ in range(self.depth - 1):
                x = layer(x)
        return nn.Dense(self.out_size, kernel_init=orthogonal(1.0))(x)


def check_deep_mlp(width: int, depth: int, residual: bool, owner: str = "config") -> None:
    """A `ValueError` naming the field for a `DeepMLP` that cannot be built."""
    for name, value in (("width", width), ("depth", depth)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{owner}.{name} must be an integer >= 1, got {value!r}")
    if residual and (depth - 1) % 4:
        raise ValueError(
            f"{owner}.depth={depth}: residual networks have one input layer and blocks of 4 "
            f"layers, so depth must be 1 + 4k (5, 9, 13, ...)"
        )


TORSOS = ("auto", "mlp", "minatar", "nature")
NATURE_MIN_SIZE = 36  # the Nature CNN's three convolutions need 36 x 36 pixels at least


def resolve_torso(torso: str, obs_shape: tuple[int, ...], owner: str = "config") -> str:
    """The torso for observations of `obs_shape`: `torso` itself, or for `"auto"` an MLP for
    vectors, the MinAtar convolution for images below 36 x 36 pixels ([H, W] or [H, W, C]) and
    the Nature CNN for larger ones. A `ValueError` names the field and the allowed values."""
    if torso not in TORSOS:
        raise ValueError(f"{owner}.torso={torso!r} is not one of: {', '.join(TORSOS)}")
    image = len(obs_shape) in (2, 3)
    if torso == "auto":
        if not image:
            return "mlp"
        return "minatar" if min(obs_shape[:2]) < NATURE_MIN_SIZE else "nature"
    if torso != "mlp" and not image:
        raise ValueError(
            f"{owner}.torso={torso!r} needs image observations ([H, W] or [H, W, C]); these have "
            f"shape {obs_shape}: use 'mlp' or 'auto'"
        )
    if torso == "nature" and min(obs_shape[:2]) < NATURE_MIN_SIZE:
        raise ValueError(
            f"{owner}.torso='nature' needs images of at least {NATURE_MIN_SIZE} x "
            f"{NATURE_MIN_SIZE} pixels; these are {obs_shape[0]} x {obs_shape[1]}: use 'minatar' "
            "or 'auto'"
        )
    return torso


class Encoder(nn.Module):
    """Observations `[..., *obs_shape]` to features `[..., F]` for the MLP heads.

    `mlp`: the observation flattened (a vector passes unchanged). With `num_categories`
    (`rlsuite.environment.spaces.categories`), ids are one-hot encoded first: an int, a
    `Discrete` observation (its one-hot is the features); a tuple of sizes, a `Categories`
    observation, each field of its last axis one-hot encoded and concatenated there (float32;
    `[7, 7, 3]` ids of sizes (13, 12, 4) become `[7, 7, 29]`), then read by the torso.
    `minatar`: MinAtar's network (Young and Tian 2019, arXiv:1903.03176): one 3x3 convolution
    of 16 channels, stride 1, then a dense layer of 128; here with SAME padding (10x10x16 into
    the dense layer), where the paper's convolution has none (8x8x16), as purejaxql's has. The
    tuned MinAtar entries were calibrated with SAME.
    `nature`: the DQN Nature CNN (Mnih et al. 2015): 32 8x8 stride 4, 64 4x4 stride 2, 64 3x3
    stride 1, then a dense layer of 512. ReLU throughout, orthogonal weights with gain sqrt(2).
    An [H, W] image gets one channel.
    """

    torso: str
    obs_ndim: int
    num_categories: int | tuple[int, ...] | None = None

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> jnp.ndarray:
        batch = obs.shape[: obs.ndim - self.obs_ndim]
        if isinstance(self.num_categories, int):
            return jax.nn.one_hot(obs, self.num_categories)
        if self.num_categories is not None:
            obs = one_hot_fields(obs, self.num_categories)
        if self.torso == "mlp":
            return obs.reshape(*batch, -1)
        x = obs.astype(jnp.float32)
        x = x[..., None] if self.obs_ndim == 2 else x
        x = x.reshape(-1, *x.shape[-3:])
        init = orthogonal(np.sqrt(2))
        if self.torso == "minatar":
            layers, width = [(16, 3, 1)], 128
        else:
            layers, width = [(32, 8, 4), (64, 4, 2), (64, 3, 1)], 512
        for channels, size, stride in layers:
            padding = "SAME" if self.torso == "minatar" else "VALID"
            conv = nn.Conv(channels, (size, size), (stride, stride), padding, kernel_init=init)
            x = nn.relu(conv(x))
        x = nn.relu(nn.Dense(width, kernel_init=init)(x.reshape(x.shape[0], -1)))
        return x.reshape(*batch, width)


def one_hot_fields(ids: jnp.ndarray, sizes: tuple[int, ...]) -> jnp.ndarray:
    """`ids [..., F]` (field `i` in `[0, sizes[i])`) as float32 `[..., sum(sizes)]`: each field
    one-hot encoded, the fields concatenated in order."""
    if ids.shape[-1] != len(sizes):
        raise ValueError(f"one_hot_fields: {ids.shape[-1]} fields in the last axis, sizes {sizes}")
    fields = [jax.nn.one_hot(ids[..., i], k, dtype=jnp.float32) for i, k in enumerate(sizes)]
    return jnp.concatenate(fields, axis=-1)


def encoder(
    torso: str, obs_shape: tuple[int, ...], num_categories: int | tuple[int, ...] | None = None
):
    """The `Encoder` for a resolved torso, or None where observations need none (vectors)."""
    if torso == "mlp" and len(obs_shape) == 1 and num_categories is None:
        return None
    return Encoder(torso, len(obs_shape), num_categories)


def _encode(module: nn.Module | None, obs: jnp.ndarray) -> jnp.ndarray:
    return obs if module is None else module(obs)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs. `__call__(obs) -> (distribution, value)`. The critic has
    the actor's hidden sizes unless `critic_hidden_sizes` is given.

    Discrete actions (`num_actions` set): a `distrax.Categorical` over logits. Continuous actions
    (`action_dim` set): a `distrax.MultivariateNormalDiag` with a state-independent log standard
    deviation (initialised to 0), unsquashed; clip actions to the bounds in the environment.
    With `squash`: brax.training's PPO policy, a `tanh_gaussian` whose standard deviation is an
    output of the actor, `softplus(x) + 0.001`; its actions lie in `(-1, 1)^d`.
    """

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    num_actions: int | None = None
    action_dim: int | None = None
    critic_hidden_sizes: Sequence[int] | None = None  # None: the actor's
    squash: bool = False
    encoder: Encoder | None = None  # shared by the actor and the critic (images, categories)

    @nn.compact
    def __call__(self, obs: jnp.ndarray):
        obs = _encode(self.encoder, obs)
        critic_sizes = self.critic_hidden_sizes
        if critic_sizes is None:
            critic_sizes = self.hidden_sizes
        value = MLP(critic_sizes, 1, self.activation, 1.0)(obs)[..., 0]
        if self.num_actions is not None:
            logits = MLP(self.hidden_sizes, self.num_actions, self.activation, 0.01)(obs)
            return distrax.Categorical(logits=logits), value
        if self.squash:
            out = MLP(self.hidden_sizes, 2 * self.action_dim, self.activation, 0.01)(obs)
            mean, raw_std = jnp.split(out, 2, axis=-1)
            return tanh_gaussian(mean, jnp.log(nn.softplus(raw_std) + 0.001)), value
        mean = MLP(self.hidden_sizes, self.action_dim, self.activation, 0.01)(obs)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std) * jnp.ones_like(mean)), value


def tanh_gaussian(mean: jnp.ndarray, log_std: jnp.ndarray) -> distrax.Distribution:
    """A diagonal Gaussian squashed by `tanh` onto `(-1, 1)^d`.

    Its `log_prob(a)` is `log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2)` with `a = tanh(u)`
    (Haarnoja et al. 2018, arXiv:1801.01290, appendix C); distrax's `Tanh` computes the
    correction in the stable form `2 (log 2 - u - softplus(-2u))`. Use `sample_and_log_prob`,
    which takes it at the pre-squash sample, rather than `log_prob` of a squashed action (whose
    inverse `atanh` loses precision near +-1; in float32 `tanh(u)` rounds to exactly +-1 once
    `|u|` reaches about 8 (XLA's CPU `tanh`; numpy's at about 9), where `log_prob` of the
    action is NaN, `atanh(+-1)` being infinite).
    """
    base = distrax.MultivariateNormalDiag(mean, jnp.exp(log_std))
    return distrax.Transformed(base, distrax.Block(distrax.Tanh(), ndims=1))


def squashed_log_prob(dist: distrax.Transformed, raw: jnp.ndarray) -> jnp.ndarray:
    """`log_prob` of the action `tanh(raw)` of a `tanh_gaussian`, taken at the pre-squash
    `raw` (no `atanh`): `log N(raw; mean, std) - sum_i log(1 - tanh(raw_i)^2)`."""
    return dist.distribution.log_prob(raw) - dist.bijector.forward_log_det_jacobian(raw)


def squashed_entropy(dist: distrax.Transformed, key: jax.Array) -> jnp.ndarray:
    """A one-sample estimate of the entropy of a `tanh_gaussian`, per batch item.

    `H(tanh(u)) = H(u) + E[sum_i log(1 - tanh(u_i)^2)]` with `u ~ N(mean, std)`. The Gaussian's
    entropy is exact; the expectation is taken at one fresh reparameterised sample
    `u = mean + std * eps`, so its gradient reaches the mean and the std (as in brax.training's
    PPO). At a fixed sample, such as a rollout's stored `u`, the log-determinant would be a
    constant and the bonus would not see the squash at all.
    """
    raw = dist.distribution.sample(seed=key)
    return dist.distribution.entropy() + dist.bijector.forward_log_det_jacobian(raw)


def squashed_mode(dist: distrax.Transformed) -> jnp.ndarray:
    """The deterministic action of a `tanh_gaussian`: `tanh(mean)`."""
    return jnp.tanh(dist.distribution.mean())


class SquashedGaussianActor(nn.Module):
    """SAC's policy: `obs -> tanh_gaussian(mean, log_std)`, with the log standard deviation
    squashed smoothly into `[log_std_min, log_std_max]`."""

    hidden_sizes: Sequence[int] = (256, 256)
    action_dim: int = 1
    activation: str = "relu"
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    encoder: Encoder | None = None

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> distrax.Transformed:
        obs = _encode(self.encoder, obs)
        out = MLP(self.hidden_sizes, 2 * self.action_dim, self.activation, 0.01)(obs)
        mean, raw = jnp.split(out, 2, axis=-1)
        span = self.log_std_max - self.log_std_min
        log_std = self.log_std_min + 0.5 * span * (jnp.tanh(raw) + 1.0)
        return tanh_gaussian(mean, log_std)


class DeterministicActor(nn.Module):
    """TD3's policy: `obs -> tanh(MLP(obs))` in `[-1, 1]^d`."""

    hidden_sizes: Sequence[int] = (256, 256)
    action_dim: int = 1
    activation: str = "relu"
    encoder: Encoder | None = None

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> jnp.ndarray:
        obs = _encode(self.encoder, obs)
        return jnp.tanh(MLP(self.hidden_sizes, self.action_dim, self.activation, 0.01)(obs))


class QEnsemble(nn.Module):
    """`num_critics` independent Q networks: `(obs [B, o], action [B, a]) -> q [num_critics, B]`.

    The members are separate MLPs (not a vmapped one: a batched orthogonal initialisation is a
    batched QR, see above)."""

    hidden_sizes: Sequence[int] = (256, 256)
    num_critics: int = 2
    activation: str = "relu"
    encoder: Encoder | None = None  # each critic its own copy (images)

    @nn.compact
    def __call__(self, obs: jnp.ndarray, action: jnp.ndarray) -> jnp.ndarray:
        if self.encoder is None:
            x = jnp.concatenate([obs, action], axis=-1)
            members = [
                MLP(self.hidden_sizes, 1, self.activation)(x) for _ in range(self.num_critics)
            ]
        else:
            members = []
            for i in range(self.num_critics):
                features = self.encoder.clone(parent=self, name=f"encoder_{i}")(obs)
                x = jnp.concatenate([features, action], axis=-1)
                members.append(MLP(self.hidden_sizes, 1, self.activation)(x))
        return jnp.stack([q[..., 0] for q in members])


def dueling(value: jnp.ndarray, advantages: jnp.ndarray) -> jnp.ndarray:
    """The dueling aggregation (Wang et al. 2016, arXiv:1511.06581, eq. 9):
    `Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')`, `value [..., 1]`, `advantages [..., A]`."""
    return value + advantages - advantages.mean(axis=-1, keepdims=True)


class QNetwork(nn.Module):
    """A value per discrete action: `obs [..., o] -> q [..., num_actions]`, an MLP of
    `hidden_sizes` after the `encoder` (images) or, with `dueling`, two such streams, a value and
    the advantages, combined by `dueling`; `layer_norm` normalises every hidden layer (PQN);
    `kernel_init` is the MLPs' (`KERNEL_INITS`; an encoder keeps its own)."""

    hidden_sizes: Sequence[int]
    num_actions: int
    activation: str = "relu"
    dueling: bool = False
    encoder: Encoder | None = None
    layer_norm: bool = False
    kernel_init: str = "orthogonal"

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> jnp.ndarray:
        x = _encode(self.encoder, obs)
        mlp = functools.partial(
            MLP, activation=self.activation, layer_norm=self.layer_norm,
            kernel_init=self.kernel_init,
        )  # fmt: skip
        if not self.dueling:
            return mlp(self.hidden_sizes, self.num_actions)(x)
        value = mlp(self.hidden_sizes, 1)(x)
        return dueling(value, mlp(self.hidden_sizes, self.num_actions)(x))
