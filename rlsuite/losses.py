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


# ------------------------------------------------------------------------ off-policy (SAC, TD3)
def critic_loss(q, targets):
    """Ensemble TD loss: `q [K, B]` against `targets [B]`, `0.5 * sum_k E_B[(q_k - y)^2]`."""
    return 0.5 * jnp.square(q - jax.lax.stop_gradient(targets)).mean(axis=-1).sum()


def soft_td_target(reward, discount, next_q, next_log_prob, alpha):
    """SAC's soft target (Haarnoja et al. 2018, eq. 3 with the clipped double-Q of TD3):
    `y = r + discount * (min_k Q'_k(s', a') - alpha * log pi(a'|s'))`, `a' ~ pi(s')`.

    `next_q` is `[K, B]` (target critics at the sampled next action); `discount` is the replay
    item's `gamma^m (1 - terminated)`, so a terminal step has `y = r`.
    """
    soft_value = next_q.min(axis=0) - alpha * next_log_prob
    return jax.lax.stop_gradient(reward + discount * soft_value)


def sac_actor_loss(q, log_prob, alpha):
    """`E[alpha * log pi(a|s) - min_k Q_k(s, a)]`, `a ~ pi(s)` reparameterised; `q` is `[K, B]`."""
    return (jax.lax.stop_gradient(alpha) * log_prob - q.min(axis=0)).mean()


def temperature_loss(log_alpha, log_prob, target_entropy):
    """Automatic entropy tuning (Haarnoja et al. 2018b, arXiv:1812.05905, eq. 18), in log space:
    `-log_alpha * E[log pi(a|s) + target_entropy]`: alpha grows while the entropy is below the
    target."""
    return -(log_alpha * jax.lax.stop_gradient(log_prob + target_entropy)).mean()


def smoothed_target_action(target_action, noise, noise_clip, low=-1.0, high=1.0):
    """TD3's target policy smoothing (Fujimoto et al. 2018, eq. 15):
    `clip(mu'(s') + clip(noise, -c, c), low, high)`; `noise` is `N(0, sigma)` already scaled."""
    return jnp.clip(target_action + jnp.clip(noise, -noise_clip, noise_clip), low, high)


def td_target(reward, discount, next_q):
    """Clipped double-Q target: `y = r + discount * min_k Q'_k(s', a')`; `next_q` is `[K, B]`."""
    return jax.lax.stop_gradient(reward + discount * next_q.min(axis=0))


def deterministic_actor_loss(q):
    """TD3 / DDPG actor loss `-E[Q_1(s, mu(s))]` from the first critic; `q` is `[K, B]`."""
    return -q[0].mean()
