"""Noisy networks (Fortunato et al. 2018, arXiv:1706.10295), factorised Gaussian noise: a dense
layer whose weights are `mu + sigma * eps`, with `eps_ij = f(e_i) f(e_j)` from one standard normal
draw per input and per output, `f(x) = sign(x) sqrt(|x|)`, and `mu`, `sigma` learned.

The noise is drawn from the flax rng stream `"noise"` at every call given one
(`module.apply(params, x, rngs={"noise": key})`): a new draw per gradient step and per acting
step, shared by the batch of that call. Called without, the layer is its mean, `mu` alone: the
greedy evaluation's network, frozen.

`NoisyMLP` is `rlsuite.networks.MLP` with every layer noisy (Rainbow's value streams are).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from rlsuite.networks import activation_fn


def scaled_noise(key: jax.Array, size: int) -> jnp.ndarray:
    """`f(e) = sign(e) sqrt(|e|)` of `size` standard normal draws."""
    e = jax.random.normal(key, (size,))
    return jnp.sign(e) * jnp.sqrt(jnp.abs(e))


class NoisyDense(nn.Module):
    """`x [..., p] -> [..., features]`: a dense layer with factorised Gaussian noise on its
    weights and bias; `mu` starts uniform in `+-1/sqrt(p)`, `sigma` at `sigma0 / sqrt(p)` (the
    paper's factorised initialisation, `sigma0` 0.5)."""

    features: int
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        p = x.shape[-1]
        bound = 1.0 / jnp.sqrt(p)
        uniform = lambda key, shape: jax.random.uniform(key, shape, minval=-bound, maxval=bound)  # noqa: E731
        constant = lambda key, shape: jnp.full(shape, self.sigma0 / jnp.sqrt(p))  # noqa: E731
        mu_kernel = self.param("mu_kernel", uniform, (p, self.features))
        mu_bias = self.param("mu_bias", uniform, (self.features,))
        sigma_kernel = self.param("sigma_kernel", constant, (p, self.features))
        sigma_bias = self.param("sigma_bias", constant, (self.features,))
        if not self.has_rng("noise"):
            return x @ mu_kernel + mu_bias
        key_in, key_out = jax.random.split(self.make_rng("noise"))
        noise_in, noise_out = scaled_noise(key_in, p), scaled_noise(key_out, self.features)
        kernel = mu_kernel + sigma_kernel * jnp.outer(noise_in, noise_out)
        return x @ kernel + mu_bias + sigma_bias * noise_out


class NoisyMLP(nn.Module):
    """`rlsuite.networks.MLP` of `NoisyDense` layers: an activation between them, the last
    linear."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "relu"
    sigma0: float = 0.5

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        act = activation_fn(self.activation)
        for size in self.hidden_sizes:
            x = act(NoisyDense(size, self.sigma0)(x))
        return NoisyDense(self.out_size, self.sigma0)(x)
