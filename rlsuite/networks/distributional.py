"""Networks of distributional value heads (`rlsuite.agents.value_heads`): a distribution of
`K` numbers per discrete action, `[..., A, K]`.

`AtomQNetwork`: C51's logits over fixed atoms (Bellemare et al. 2017) or QR-DQN's quantiles at
fixed fractions (Dabney et al. 2017), the last layer of `QNetwork`'s MLP widened to `A * K`;
with `dueling`, a value stream of `K` and an advantage stream of `A * K`, combined per atom as
Rainbow's are (Hessel et al. 2017, arXiv:1710.02298, eq. in section 3).

`ImplicitQuantileNetwork`: IQN's (Dabney et al. 2018, arXiv:1806.06923, eq. 4): the state's
features `psi(x)` times an embedding of each fraction `phi(tau) = relu(W cos(pi i tau) + b)`,
`i = 0 .. n - 1`, then one hidden layer and a linear output per action. Quantiles at the
fractions `taus [..., N]` (or `[N]`, shared by the batch): `[..., A, N]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from rlsuite.networks import MLP, Encoder, _encode, activation_fn, dueling, kernel_init
from rlsuite.networks.noisy import NoisyMLP


class AtomQNetwork(nn.Module):
    """`obs [..., o] -> [..., num_actions, num_atoms]`: `hidden_sizes` after the `encoder`, per
    action `num_atoms` outputs (logits or quantiles, as the head reads them); `num_atoms` None:
    one value per action, `[..., num_actions]`. With `noisy`, the layers after the encoder are
    noisy (`rlsuite.networks.noisy`; the flax rng stream `"noise"` draws their noise)."""

    hidden_sizes: Sequence[int]
    num_actions: int
    num_atoms: int | None
    activation: str = "relu"
    dueling: bool = False
    encoder: Encoder | None = None
    kernel_init: str = "orthogonal"
    noisy: bool = False

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> jnp.ndarray:
        x = _encode(self.encoder, obs)
        k = 1 if self.num_atoms is None else self.num_atoms

        def stream(actions: int) -> jnp.ndarray:
            if self.noisy:
                out = NoisyMLP(self.hidden_sizes, actions * k, self.activation)
            else:
                out = MLP(
                    self.hidden_sizes, actions * k, self.activation, kernel_init=self.kernel_init
                )
            return out(x).reshape(*x.shape[:-1], actions, k)

        if not self.dueling:
            outputs = stream(self.num_actions)
        else:
            value, advantages = stream(1), stream(self.num_actions)
            # the aggregation over actions, atom by atom: actions on the last axis for `dueling`
            combined = dueling(jnp.swapaxes(value, -1, -2), jnp.swapaxes(advantages, -1, -2))
            outputs = jnp.swapaxes(combined, -1, -2)
        return outputs[..., 0] if self.num_atoms is None else outputs


def cosine_features(taus: jnp.ndarray, size: int) -> jnp.ndarray:
    """IQN's fraction features `cos(pi i tau)`, `i = 0 .. size - 1`: `[..., N]` to
    `[..., N, size]`."""
    return jnp.cos(jnp.pi * jnp.arange(size, dtype=jnp.float32) * taus[..., None])


class ImplicitQuantileNetwork(nn.Module):
    """`(obs [..., o], taus [..., N] or [N]) -> quantiles [..., num_actions, N]`.

    `psi`: the encoded observation through `hidden_sizes[:-1]` activated layers (the encoder's
    features where there is one layer); `phi`: `embedding_size` cosine features of each fraction
    through a dense layer to `psi`'s width and a ReLU; their product through one hidden layer of
    `hidden_sizes[-1]` and a linear output of `num_actions`."""

    hidden_sizes: Sequence[int]
    num_actions: int
    embedding_size: int = 64
    activation: str = "relu"
    encoder: Encoder | None = None
    kernel_init: str = "orthogonal"

    @nn.compact
    def __call__(self, obs: jnp.ndarray, taus: jnp.ndarray | None = None) -> jnp.ndarray:
        act = activation_fn(self.activation)
        hidden = kernel_init(self.kernel_init, np.sqrt(2))
        psi = _encode(self.encoder, obs)
        for size in self.hidden_sizes[:-1]:
            psi = act(nn.Dense(size, kernel_init=hidden)(psi))
        taus = jnp.full((1,), 0.5) if taus is None else taus  # None: the median alone
        features = cosine_features(taus, self.embedding_size)
        phi = nn.relu(nn.Dense(psi.shape[-1], kernel_init=hidden)(features))  # [..., N, d]
        mixed = psi[..., None, :] * phi
        head = MLP(self.hidden_sizes[-1:], self.num_actions, self.activation,
                   kernel_init=self.kernel_init)  # fmt: skip
        return jnp.swapaxes(head(mixed), -1, -2)
