"""An actor-critic with memory: an MLP, a recurrent core (LSTM or GRU), then actor and critic heads.

The network runs over sequences, time-major: `obs` `[T, B, ...]`, with a mask `starts` `[T, B]`
of the steps at which a fresh carry replaces the one that came in (an episode, or a meta-RL trial,
began there), and the carry `[B, ...]` the sequence starts from. One step of a batch (acting) is
a sequence of length 1. The time loop is a `flax.linen.scan` (a `lax.scan`), so re-running a
rollout from its starting carry (recurrent PPO's learning pass) costs one scan.

    net = RecurrentActorCritic("lstm", 64, num_actions=5)
    carry = net.initial(num_envs)
    params = net.init(key, carry, obs[None], jnp.zeros((1, num_envs), bool))
    carry, carries, dist, value = net.apply(params, carry, obs_seq, starts)

The fresh carry is zeros (`initial`). Shared by the actor and the critic: the encoder, the MLP and
the core; separate after it (as PureJaxRL's `ppo_rnn.py`). Weights as the feed-forward
`ActorCritic` (orthogonal, gain sqrt(2) in hidden layers, 0.01 on the policy output, 1.0 on the
value), the cells' own initialisers inside the core.
"""

from __future__ import annotations

from collections.abc import Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.networks import MLP, Encoder, _encode, activation_fn, orthogonal, tanh_gaussian

CELLS = ("lstm", "gru")


def check_cell(cell: str, owner: str = "config", field: str = "recurrent") -> str:
    """`cell` if it names a recurrent core; a `ValueError` names the field and the allowed ones."""
    if cell not in CELLS:
        raise ValueError(f"{owner}.{field}={cell!r} is not one of: {', '.join(CELLS)} (or None)")
    return cell


def initial_carry(cell: str, size: int, batch: int):
    """The fresh carry of `batch` sequences: zeros, `(c, h)` `[batch, size]` each for an LSTM,
    `h` `[batch, size]` for a GRU."""
    zeros = jnp.zeros((batch, size), jnp.float32)
    return (zeros, zeros) if cell == "lstm" else zeros


class ResettingCell(nn.Module):
    """One step of a recurrent cell whose carry is replaced by zeros where `start`."""

    cell: str
    size: int

    @nn.compact
    def __call__(self, carry, inputs):
        x, start = inputs
        fresh = initial_carry(self.cell, self.size, x.shape[0])
        carry = jax.tree.map(lambda f, c: jnp.where(start[:, None], f, c), fresh, carry)
        cell = nn.OptimizedLSTMCell if self.cell == "lstm" else nn.GRUCell
        core = cell(self.size, recurrent_kernel_init=orthogonal())  # flax's default, vmap-safe
        carry, y = core(carry, x)
        return carry, (y, carry)


def remember(module: nn.Module, carry, obs, starts, layer_norm: bool = False):
    """What a network with memory reads its sequence through, inside `module`'s compact
    `__call__`: its `encoder`, its `hidden_sizes` dense layers (each LayerNorm'd before the
    activation with `layer_norm`), then its core (`cell`, `size`) over time from `carry`, reset
    where `starts`. `(carry, carries, core outputs [T, B, size])`."""
    act = activation_fn(module.activation)
    x = _encode(module.encoder, obs)
    for size in module.hidden_sizes:
        x = nn.Dense(size, kernel_init=orthogonal(np.sqrt(2)))(x)
        x = act(nn.LayerNorm()(x) if layer_norm else x)
    scan = nn.scan(ResettingCell, variable_broadcast="params", split_rngs={"params": False})
    carry, (y, carries) = scan(module.cell, module.size, name="core")(carry, (x, starts))
    return carry, carries, y


class RecurrentActorCritic(nn.Module):
    """`__call__(carry, obs [T, B, ...], starts [T, B]) -> (carry, carries, distribution, value)`.

    `carries` (leaves `[T, B, ...]`) is the carry after each step, before any reset: with it, the
    value of a step's next observation under the memory of that step is one more call of length 1.
    Heads as `rlsuite.networks.ActorCritic`: `num_actions` (categorical), or `action_dim` (a
    Gaussian with a state-independent log std, or with `squash` brax.training's tanh-Gaussian).
    """

    cell: str = "lstm"
    size: int = 128
    hidden_sizes: Sequence[int] = (64,)  # dense layers before the core
    head_sizes: Sequence[int] = ()  # hidden layers of each head after it
    activation: str = "tanh"
    num_actions: int | None = None
    action_dim: int | None = None
    squash: bool = False
    encoder: Encoder | None = None

    def initial(self, batch: int):
        """The fresh carry of `batch` sequences (zeros)."""
        return initial_carry(self.cell, self.size, batch)

    @nn.compact
    def __call__(self, carry, obs: jnp.ndarray, starts: jnp.ndarray):
        carry, carries, y = remember(self, carry, obs, starts)
        value = MLP(self.head_sizes, 1, self.activation, 1.0)(y)[..., 0]
        if self.num_actions is not None:
            logits = MLP(self.head_sizes, self.num_actions, self.activation, 0.01)(y)
            return carry, carries, distrax.Categorical(logits=logits), value
        if self.squash:
            out = MLP(self.head_sizes, 2 * self.action_dim, self.activation, 0.01)(y)
            mean, raw_std = jnp.split(out, 2, axis=-1)
            dist = tanh_gaussian(mean, jnp.log(nn.softplus(raw_std) + 0.001))
            return carry, carries, dist, value
        mean = MLP(self.head_sizes, self.action_dim, self.activation, 0.01)(y)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        dist = distrax.MultivariateNormalDiag(mean, jnp.exp(log_std) * jnp.ones_like(mean))
        return carry, carries, dist, value


class RecurrentQNetwork(nn.Module):
    """`__call__(carry, obs [T, B, ...], starts [T, B]) -> (carry, carries, q [T, B, A])`: a value
    per discrete action under the memory, as `RecurrentActorCritic` runs its sequences.

    The `encoder`, then `hidden_sizes` dense layers (each LayerNorm'd before the activation with
    `layer_norm`, as PQN's `QNetwork`), the core, then a linear layer of `num_actions` (the
    shape of purejaxql's PQN-RNN, without its last action among the inputs)."""

    cell: str = "gru"
    size: int = 128
    hidden_sizes: Sequence[int] = (256,)
    num_actions: int = 2
    activation: str = "relu"
    layer_norm: bool = True
    encoder: Encoder | None = None

    def initial(self, batch: int):
        """The fresh carry of `batch` sequences (zeros)."""
        return initial_carry(self.cell, self.size, batch)

    @nn.compact
    def __call__(self, carry, obs: jnp.ndarray, starts: jnp.ndarray):
        carry, carries, y = remember(self, carry, obs, starts, self.layer_norm)
        return carry, carries, MLP((), self.num_actions, self.activation)(y)
