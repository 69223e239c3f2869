"""Losses, each a small pure function over batched arrays (shapes `[B]`), returning a scalar.

A research variant of an agent passes its own function with the same signature, e.g.
`ppo.make(config, env, env_params, policy_loss=my_policy_loss)`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def ppo_policy_loss(log_prob, old_log_prob, advantages, clip_eps):
    """Clipped surrogate objective (Schulman et al., 2017, eq. 7), negated to be minimised.

    Returns `(loss, metrics)` with the approximate KL `E[(r - 1) - log r]` (Schulman's unbiased
    estimator) and the fraction of samples whose ratio was clipped.
    """
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    loss = -jnp.minimum(unclipped, clipped).mean()
    metrics = {
        "approx_kl": jax.lax.stop_gradient(((ratio - 1.0) - log_ratio).mean()),
        "clip_fraction": jax.lax.stop_gradient((jnp.abs(ratio - 1.0) > clip_eps).mean()),
    }
    return loss, metrics


def value_loss(values, targets):
    """Half the mean squared error `0.5 * E[(V - target)^2]`."""
    return 0.5 * jnp.square(values - jax.lax.stop_gradient(targets)).mean()


def clipped_value_loss(values, old_values, targets, clip_eps):
    """PPO's clipped value loss: `0.5 * E[max((V - G)^2, (V_old + clip(V - V_old) - G)^2)]`."""
    targets = jax.lax.stop_gradient(targets)
    clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(values - targets), jnp.square(clipped - targets)).mean()


def normalize_advantages(advantages, eps: float = 1e-8):
    """Zero mean, unit standard deviation over the batch."""
    return (advantages - advantages.mean()) / (advantages.std() + eps)
