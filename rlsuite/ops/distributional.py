"""The math of distributional value learning: C51's categorical projection and loss (Bellemare,
Dabney and Munos 2017, arXiv:1707.06887) and the quantile Huber loss of QR-DQN and IQN (Dabney et
al. 2017, arXiv:1710.10044; 2018, arXiv:1806.06923).

Batched over a leading axis `B`; the bootstrapping contract is the suite's (docs/design.md
section 3): a batch's `discount` is `gamma^n (1 - terminated)`, so a terminal transition puts the
whole target distribution at its (n-step) reward, and a time-limit truncation bootstraps from the
next state's distribution like any other step.

    target = categorical_target(reward, discount, next_probs, support)   # [B, N] on the support
    loss = categorical_loss(logits, target)                               # cross-entropy [B]
    loss = quantile_huber_loss(quantiles, taus, target_samples, kappa=1.0)  # [B]

The losses are per item, `[B]`: the caller averages them, or weights them first (prioritized
replay's importance weights) and keeps them as the items' new priorities.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = chex.Array


def support(num_atoms: int, v_min: float, v_max: float) -> Array:
    """C51's fixed atoms: `num_atoms` evenly spaced values from `v_min` to `v_max`."""
    if num_atoms < 2 or not v_min < v_max:
        raise ValueError(
            f"support: num_atoms={num_atoms} must be >= 2 and v_min={v_min} < v_max={v_max}"
        )
    return jnp.linspace(v_min, v_max, num_atoms)


def categorical_projection(atoms: Array, probs: Array, values: Array) -> Array:
    """Mass `probs [..., M]` sitting at `values [..., M]`, projected onto the evenly spaced
    `atoms [N]` (C51's projection, eq. 7): each value is clipped to `[atoms[0], atoms[-1]]` and its
    mass split between the two atoms around it in proportion to its closeness (all of it to an
    atom it sits on). `[..., N]`; the mass is conserved."""
    chex.assert_equal_shape([probs, values])
    delta = atoms[1] - atoms[0]
    clipped = jnp.clip(values, atoms[0], atoms[-1])
    # weight of value j on atom i: max(0, 1 - |value_j - atom_i| / delta), the triangle kernel
    closeness = 1.0 - jnp.abs(clipped[..., None, :] - atoms[:, None]) / delta
    return jnp.sum(jnp.clip(closeness, 0.0, 1.0) * probs[..., None, :], axis=-1)


def categorical_target(reward: Array, discount: Array, next_probs: Array, atoms: Array) -> Array:
    """C51's target distribution `[B, N]`: the next state's `next_probs [B, N]` (over `atoms
    [N]`, for the action the caller chose there) moved to `reward + discount * atoms` and
    projected back onto `atoms`, with no gradient. `reward` and `discount` are `[B]`."""
    chex.assert_rank([reward, discount, next_probs], [1, 1, 2])
    values = reward[:, None] + discount[:, None] * atoms[None, :]
    return jax.lax.stop_gradient(categorical_projection(atoms, next_probs, values))


def categorical_loss(logits: Array, target: Array) -> Array:
    """The cross-entropy of each predicted distribution (`logits [B, N]`, softmax over atoms) to
    the `target [B, N]` (held constant): `[B]`."""
    chex.assert_equal_shape([logits, target])
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jax.lax.stop_gradient(target) * log_probs, axis=-1)


def quantile_midpoints(num_quantiles: int) -> Array:
    """QR-DQN's fixed quantile fractions `(2i + 1) / (2N)`, `i = 0 .. N - 1`."""
    return (2.0 * jnp.arange(num_quantiles) + 1.0) / (2.0 * num_quantiles)


def quantile_huber_loss(quantiles: Array, taus: Array, targets: Array, kappa: float = 1.0):
    """The quantile Huber loss (QR-DQN eq. 10; IQN eq. 3): for the predicted `quantiles [B, N]`
    at fractions `taus [N]` or `[B, N]` and samples of the target distribution `targets [B, M]`
    (held constant), with `u = target_j - quantile_i`,
    `sum_i mean_j |tau_i - 1(u < 0)| Huber_kappa(u) / kappa` per item, `[B]` (`kappa` 0: the
    plain quantile loss `|tau - 1(u < 0)| |u|`)."""
    chex.assert_rank([quantiles, targets], 2)
    u = jax.lax.stop_gradient(targets)[:, None, :] - quantiles[:, :, None]  # [B, N, M]
    taus = jnp.broadcast_to(taus, quantiles.shape)[:, :, None]
    weight = jnp.abs(taus - (u < 0).astype(u.dtype))
    if kappa == 0:
        return jnp.sum(jnp.mean(weight * jnp.abs(u), axis=-1), axis=-1)
    abs_u = jnp.abs(u)
    huber = jnp.where(abs_u <= kappa, 0.5 * u**2, kappa * (abs_u - 0.5 * kappa))
    return jnp.sum(jnp.mean(weight * huber / kappa, axis=-1), axis=-1)
