"""Contrastive goal-conditioned RL (CRL; Eysenbach et al. 2022, "Contrastive Learning as
Goal-Conditioned Reinforcement Learning", arXiv:2206.07568): energies and losses over a batch.

A batch holds B pairs (s_i, a_i) -> g_i, g_i a future state of the same trajectory. The critic
encodes `phi [B, d]` = phi(s_i, a_i) and `psi [B, d]` = psi(g_j); an energy maps them to
`logits [B, B]`, `logits[i, j]` the energy between state-action i and goal j, so the positives sit
on the diagonal and every other goal of the batch is a negative. Each energy has the signature
`(phi, psi, scale) -> logits` and each loss `logits -> scalar`, so an agent takes either as a
function and a research variant passes its own.

Choices:

- `norm` takes the square root of (squared distance + `EPS`): `-||phi_i - psi_j||` is not
  differentiable where phi_i == psi_j, and a positive pair that matches exactly is the goal of
  training. Distances are taken from the broadcast difference, not from
  `|phi|^2 + |psi|^2 - 2 phi.psi`, which can round below zero.
- `cosine` normalises each row by its own L2 norm over the feature axis (with `EPS` under the
  square root, so a zero vector maps to zero with finite gradients) and multiplies by `scale`,
  a learned positive temperature (CLIP's 1/0.07 is the usual start); the other energies ignore
  `scale`.
- `binary_nce` averages the sigmoid cross-entropy over all B^2 entries (one positive and B - 1
  negatives per row), the paper's binary NCE objective.
- `logsumexp_penalty` is `coeff * mean_i logsumexp_j(logits[i, j])^2` (JaxGCRL's
  `logsumexp_penalty_coeff`, 0.1 there too): it pulls each row's normaliser towards 1.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

EPS = 1e-12


def _pairs(where: str, phi, psi) -> tuple[jax.Array, jax.Array]:
    """Refuse encodings that are not two `[B, d]` arrays of the same shape (a `[B]` against a
    `[B, d]` would broadcast to a wrong `[B, B]` without an error)."""
    phi, psi = jnp.asarray(phi), jnp.asarray(psi)
    if phi.ndim != 2 or phi.shape != psi.shape:
        raise ValueError(
            f"{where}: phi {phi.shape} and psi {psi.shape} must both be [B, d] of the same shape"
        )
    return phi, psi


def _square(where: str, logits) -> jax.Array:
    logits = jnp.asarray(logits)
    if logits.ndim != 2 or logits.shape[0] != logits.shape[1]:
        raise ValueError(f"{where}: logits must be [B, B], got {logits.shape}")
    return logits


# --------------------------------------------------------------------------------- energies
def _sq_distances(phi, psi) -> jax.Array:
    """`[B, B]` squared L2 distances `||phi_i - psi_j||^2`."""
    return jnp.sum(jnp.square(phi[:, None, :] - psi[None, :, :]), axis=-1)


def norm(phi, psi, scale=1.0) -> jax.Array:
    """`-||phi_i - psi_j||_2`, as `-sqrt(squared distance + EPS)` (finite gradient at 0)."""
    phi, psi = _pairs("norm", phi, psi)
    return -jnp.sqrt(_sq_distances(phi, psi) + EPS)


def l2sq(phi, psi, scale=1.0) -> jax.Array:
    """`-||phi_i - psi_j||_2^2`."""
    phi, psi = _pairs("l2sq", phi, psi)
    return -_sq_distances(phi, psi)


def dot(phi, psi, scale=1.0) -> jax.Array:
    """`phi_i . psi_j`."""
    phi, psi = _pairs("dot", phi, psi)
    return phi @ psi.T


def _unit_rows(x) -> jax.Array:
    """Each row divided by its own L2 norm over the features; a zero row stays zero."""
    return x / jnp.sqrt(jnp.sum(jnp.square(x), axis=-1, keepdims=True) + EPS)


def cosine(phi, psi, scale=1.0) -> jax.Array:
    """`scale * cos(phi_i, psi_j)`, each vector normalised by its own norm."""
    phi, psi = _pairs("cosine", phi, psi)
    return scale * (_unit_rows(phi) @ _unit_rows(psi).T)


ENERGIES: dict[str, Callable] = {"norm": norm, "l2sq": l2sq, "dot": dot, "cosine": cosine}


# ----------------------------------------------------------------------------------- losses
def forward_infonce(logits) -> jax.Array:
    """Mean over rows (state-actions) of the cross-entropy of the softmax over the goals, with
    row i's label i."""
    logits = _square("forward_infonce", logits)
    return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(logits, axis=1)))


def backward_infonce(logits) -> jax.Array:
    """Mean over columns (goals) of the cross-entropy of the softmax over the state-actions,
    with column j's label j."""
    logits = _square("backward_infonce", logits)
    return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(logits, axis=0)))


def symmetric_infonce(logits) -> jax.Array:
    """`forward_infonce + backward_infonce`."""
    return forward_infonce(logits) + backward_infonce(logits)


def binary_nce(logits) -> jax.Array:
    """Sigmoid cross-entropy with the identity as labels, mean over all B^2 entries:
    `-log sigmoid(x)` on the diagonal, `-log sigmoid(-x)` elsewhere."""
    logits = _square("binary_nce", logits)
    labels = jnp.eye(logits.shape[0], dtype=logits.dtype)
    per_entry = labels * jax.nn.log_sigmoid(logits) + (1 - labels) * jax.nn.log_sigmoid(-logits)
    return -jnp.mean(per_entry)


def logsumexp_penalty(logits, coeff=0.1) -> jax.Array:
    """`coeff * mean_i logsumexp_j(logits[i, j])^2`."""
    logits = _square("logsumexp_penalty", logits)
    return coeff * jnp.mean(jnp.square(jax.nn.logsumexp(logits, axis=1)))


LOSSES: dict[str, Callable] = {
    "forward": forward_infonce,
    "backward": backward_infonce,
    "symmetric": symmetric_infonce,
    "binary": binary_nce,
}


# ---------------------------------------------------------------------------------- metrics
def metrics(logits) -> dict[str, jax.Array]:
    """Diagnostics of `logits [B, B]` (no gradient): `categorical_accuracy` (share of rows whose
    argmax is the diagonal; ties go to the lowest index), `logits_pos` (mean of the diagonal),
    `logits_neg` (mean off the diagonal; NaN when B = 1) and `logsumexp` (mean over rows)."""
    logits = jax.lax.stop_gradient(_square("metrics", logits))
    b = logits.shape[0]
    eye = jnp.eye(b, dtype=bool)
    positives = jnp.diagonal(logits)
    if b > 1:
        negatives = jnp.sum(jnp.where(eye, 0.0, logits)) / (b * (b - 1))
    else:
        negatives = jnp.full((), jnp.nan, logits.dtype)
    return {
        "categorical_accuracy": jnp.mean(jnp.argmax(logits, axis=1) == jnp.arange(b)),
        "logits_pos": jnp.mean(positives),
        "logits_neg": negatives,
        "logsumexp": jnp.mean(jax.nn.logsumexp(logits, axis=1)),
    }


# ------------------------------------------------------------------------------- validation
def _check_name(field: str, name, table: dict[str, Callable]) -> None:
    if not (isinstance(name, str) and name in table):
        listed = ", ".join(repr(k) for k in table)
        raise ValueError(f"{field} must be one of {listed}, got {name!r}")


def check_energy(name, field: str = "energy") -> None:
    """Raise a `ValueError` naming `field` and listing `ENERGIES` unless `name` is one of them."""
    _check_name(field, name, ENERGIES)


def check_loss(name, field: str = "loss") -> None:
    """Raise a `ValueError` naming `field` and listing `LOSSES` unless `name` is one of them."""
    _check_name(field, name, LOSSES)
