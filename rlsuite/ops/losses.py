"""Losses, each a small pure function over batched arrays (shapes `[B]`), returning a scalar.

A research variant of an agent passes its own function with the same signature, e.g.
`ppo.make(config, env, env_params, policy_loss=my_policy_loss)`. Arrays that are combined
sample by sample must have matching shapes (a `[B]` against a `[B, 1]` would broadcast to
`[B, B]` and give a wrong loss without an error): a mismatch raises a `ValueError` when traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _same(where: str, **arrays) -> None:
    """Refuse arrays (or shape tuples) of different shapes: they would broadcast."""
    shapes = {name: x if isinstance(x, tuple) else jnp.shape(x) for name, x in arrays.items()}
    if len(set(shapes.values())) > 1:
        said = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"{where}: {said}; these must have the same shape")


def _per_critic(where: str, q, **batch) -> None:
    """Refuse a critic ensemble `q [K, *B]` whose per-critic shape is not that of `batch`."""
    if jnp.ndim(q) < 1:
        raise ValueError(f"{where}: q must be [K, B], one row per critic, got {jnp.shape(q)}")
    _same(where, **{"q[k]": tuple(jnp.shape(q)[1:])}, **batch)


def ppo_policy_loss(log_prob, old_log_prob, advantages, clip_eps):
    """Clipped surrogate objective (Schulman et al., 2017, eq. 7), negated to be minimised.

    Returns `(loss, metrics)` with the approximate KL `E[(r - 1) - log r]` (Schulman's unbiased
    estimator) and the fraction of samples whose ratio was clipped.
    """
    _same("ppo_policy_loss", log_prob=log_prob, old_log_prob=old_log_prob, advantages=advantages)
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    loss = -jnp.minimum(unclipped, clipped).mean()
    return loss, _ratio_metrics(log_ratio, ratio, clip_eps)


def importance_policy_loss(log_prob, old_log_prob, advantages, clip_eps):
    """The unclipped importance-weighted surrogate `-E[r A]`, `r = pi / pi_old` (TRPO's, and
    FixPO's, whose trust region a KL penalty keeps: `rlsuite.agents.fixpo`). `clip_eps` clips
    nothing: the metrics' `clip_fraction` is the fraction PPO's surrogate would have clipped."""
    _same(
        "importance_policy_loss",
        log_prob=log_prob,
        old_log_prob=old_log_prob,
        advantages=advantages,
    )
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    return -(ratio * advantages).mean(), _ratio_metrics(log_ratio, ratio, clip_eps)


def drift_policy_loss(drift):
    """The policy loss of mirror learning with the drift function `drift` (Kuba et al. 2022;
    Lu et al. 2022, arXiv:2210.05639, "Discovered Policy Optimisation"): `-E[r A - drift(r,
    log r, A, clip_eps)]`, `r = pi / pi_old`, where `drift >= 0` and is 0 with its gradient at
    `r = 1`. PPO's clip is one drift (`ppo_drift`), DPO's another (`dpo_drift`). Returns a
    `policy_loss` for `ppo.make`, whose metrics add the mean `drift`."""

    def policy_loss(log_prob, old_log_prob, advantages, clip_eps):
        _same("drift_policy_loss", log_prob=log_prob, old_log_prob=old_log_prob, adv=advantages)
        log_ratio = log_prob - old_log_prob
        ratio = jnp.exp(log_ratio)
        drifted = drift(ratio, log_ratio, advantages, clip_eps)
        metrics = _ratio_metrics(log_ratio, ratio, clip_eps)
        metrics["drift"] = jax.lax.stop_gradient(drifted.mean())
        return -(ratio * advantages - drifted).mean(), metrics

    return policy_loss


def ppo_drift(ratio, log_ratio, advantages, clip_eps):
    """PPO's clip as a drift: `ReLU((r - clip(r, 1 - eps, 1 + eps)) A)`, what the clipped
    surrogate takes off `r A` (`drift_policy_loss(ppo_drift)` is `ppo_policy_loss`)."""
    del log_ratio
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return jax.nn.relu((ratio - clipped) * advantages)


def dpo_drift(alpha: float = 2.0, beta: float = 0.6):
    """DPO's drift (Lu et al. 2022, the closed form read off the learned one): for `A >= 0`,
    `ReLU((r - 1) A - alpha tanh((r - 1) A / alpha))`; for `A < 0`, `ReLU(log(r) A - beta
    tanh(log(r) A / beta))`. `alpha` and `beta` are the paper's 2 and 0.6 by default."""

    def drift(ratio, log_ratio, advantages, clip_eps):
        del clip_eps
        up = (ratio - 1.0) * advantages
        down = log_ratio * advantages
        positive = jax.nn.relu(up - alpha * jnp.tanh(up / alpha))
        negative = jax.nn.relu(down - beta * jnp.tanh(down / beta))
        return jnp.where(advantages >= 0, positive, negative)

    return drift


def _ratio_metrics(log_ratio, ratio, clip_eps) -> dict:
    """The approximate KL `E[(r - 1) - log r]` (Schulman's unbiased estimator) and the fraction
    of ratios outside `[1 - clip_eps, 1 + clip_eps]`, without gradients."""
    return {
        "approx_kl": jax.lax.stop_gradient(((ratio - 1.0) - log_ratio).mean()),
        "clip_fraction": jax.lax.stop_gradient((jnp.abs(ratio - 1.0) > clip_eps).mean()),
    }


def value_loss(values, targets):
    """Half the mean squared error `0.5 * E[(V - target)^2]`."""
    _same("value_loss", values=values, targets=targets)
    return 0.5 * jnp.square(values - jax.lax.stop_gradient(targets)).mean()


def clipped_value_loss(values, old_values, targets, clip_eps):
    """PPO's clipped value loss: `0.5 * E[max((V - G)^2, (V_old + clip(V - V_old) - G)^2)]`."""
    _same("clipped_value_loss", values=values, old_values=old_values, targets=targets)
    targets = jax.lax.stop_gradient(targets)
    clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    return 0.5 * jnp.maximum(jnp.square(values - targets), jnp.square(clipped - targets)).mean()


def normalize_advantages(advantages, eps: float = 1e-8):
    """Zero mean, unit standard deviation over the batch."""
    return (advantages - advantages.mean()) / (advantages.std() + eps)


# ------------------------------------------------------------------------ off-policy (SAC, TD3)
def critic_loss(q, targets, weight=None):
    """Ensemble TD loss: `q [K, B]` against `targets [B]`, `0.5 * sum_k E_B[(q_k - y)^2]`; with
    importance weights `weight [B]` (a prioritized replay's, held constant), each item's squared
    errors weighted: `0.5 * sum_k E_B[w (q_k - y)^2]`."""
    _per_critic("critic_loss", q, targets=targets)
    if weight is None:
        return 0.5 * jnp.square(q - jax.lax.stop_gradient(targets)).mean(axis=-1).sum()
    _same("critic_loss", targets=targets, weight=weight)
    squares = jnp.square(q - jax.lax.stop_gradient(targets))
    return 0.5 * (jax.lax.stop_gradient(weight) * squares).mean(axis=-1).sum()


def critic_priority(q, targets):
    """Each item's priority for a prioritized replay of an ensemble's items: its absolute TD
    error (Schaul et al. 2016) averaged over the critics, `mean_k |q_k - y|` `[B]` for `q [K, B]`
    and `targets [B]`, held constant."""
    _per_critic("critic_priority", q, targets=targets)
    return jax.lax.stop_gradient(jnp.abs(q - targets).mean(axis=0))


def soft_td_target(reward, discount, next_q, next_log_prob, alpha):
    """SAC's soft target (Haarnoja et al. 2018, eq. 3 with the clipped double-Q of TD3):
    `y = r + discount * (min_k Q'_k(s', a') - alpha * log pi(a'|s'))`, `a' ~ pi(s')`.

    `next_q` is `[K, B]` (target critics at the sampled next action); `discount` is the replay
    item's `gamma^m (1 - terminated)`, so a terminal step has `y = r`.
    """
    _per_critic("soft_td_target", next_q, reward=reward, discount=discount, log_prob=next_log_prob)
    soft_value = next_q.min(axis=0) - alpha * next_log_prob
    return jax.lax.stop_gradient(reward + discount * soft_value)


def sac_actor_loss(q, log_prob, alpha):
    """`E[alpha * log pi(a|s) - min_k Q_k(s, a)]`, `a ~ pi(s)` reparameterised; `q` is `[K, B]`."""
    _per_critic("sac_actor_loss", q, log_prob=log_prob)
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
    _per_critic("td_target", next_q, reward=reward, discount=discount)
    return jax.lax.stop_gradient(reward + discount * next_q.min(axis=0))


def deterministic_actor_loss(q):
    """TD3 / DDPG actor loss `-E[Q_1(s, mu(s))]` from the first critic; `q` is `[K, B]`."""
    return -q[0].mean()


# ------------------------------------------------------------------------- value-based (DQN)
def q_learning_target(reward, discount, next_q_target, next_q_online=None):
    """The Q-learning target `y = r + discount * Q_target(s', a*)`, with `a*` the argmax of
    `next_q_online` (double Q-learning, van Hasselt et al. 2016, arXiv:1509.06461) or, where it
    is None, of `next_q_target` (DQN's max, Mnih et al. 2015). `next_q_*` are `[B, A]`;
    `discount` is the replay item's `gamma^m (1 - terminated)`, so a terminal step has `y = r`.
    Ties in the argmax go to the lowest action index."""
    selector = next_q_target if next_q_online is None else next_q_online
    if jnp.shape(selector) != jnp.shape(next_q_target) or jnp.ndim(next_q_target) < 1:
        raise ValueError(
            f"q_learning_target: next_q_target {jnp.shape(next_q_target)} and next_q_online "
            f"{jnp.shape(selector)} must both be [B, A]"
        )
    _same("q_learning_target", **{"next_q[..., 0]": tuple(jnp.shape(next_q_target)[:-1])},
          reward=reward, discount=discount)  # fmt: skip
    best = jnp.argmax(selector, axis=-1)
    value = jnp.take_along_axis(next_q_target, best[..., None], axis=-1)[..., 0]
    return jax.lax.stop_gradient(reward + discount * value)


TD_LOSSES = ("huber", "mse")


def td_errors_loss(q, targets, kind: str = "huber"):
    """`td_loss` item by item: `[B]`, the Huber loss (delta 1) or half the squared error of each
    of `q [B]` against its target (held constant)."""
    _same("td_loss", q=q, targets=targets)
    diff = q - jax.lax.stop_gradient(targets)
    if kind == "huber":
        abs_diff = jnp.abs(diff)
        return jnp.where(abs_diff <= 1.0, 0.5 * diff**2, abs_diff - 0.5)
    if kind == "mse":
        return 0.5 * jnp.square(diff)
    raise ValueError(f"td_loss: kind={kind!r} is not one of: {', '.join(TD_LOSSES)}")


def td_loss(q, targets, kind: str = "huber"):
    """The TD regression loss of `q [B]` (the values of the actions taken) against `targets [B]`:
    `huber`, the mean Huber loss with delta 1 (quadratic within 1, linear beyond: the Nature
    DQN's clipped error), or `mse`, half the mean squared error (`td_errors_loss`'s mean)."""
    if kind != "mse":
        return td_errors_loss(q, targets, kind).mean()
    _same("td_loss", q=q, targets=targets)
    # half of the mean, in this order: the runs' last bits depend on it
    return 0.5 * jnp.square(q - jax.lax.stop_gradient(targets)).mean()


# ------------------------------------------------------------------------------------- offline
def behavior_cloning_loss(policy_action, data_action):
    """Mean squared error between the policy's and the dataset's actions, over batch and dims."""
    _same("behavior_cloning_loss", policy_action=policy_action, data_action=data_action)
    return jnp.square(policy_action - jax.lax.stop_gradient(data_action)).mean()


def td3_bc_actor_loss(q, policy_action, data_action, alpha):
    """TD3+BC's actor loss (Fujimoto & Gu 2021, arXiv:2106.06860, eq. 3):
    `-lambda E[Q_1(s, pi(s))] + E[(pi(s) - a)^2]` with `lambda = alpha / E[|Q_1(s, pi(s))|]`, the
    normaliser held constant (no gradient), so the Q term's scale does not depend on the rewards.
    `q` is `[K, B]` at the policy's actions; the first critic is used, as in the paper."""
    lam = alpha / jax.lax.stop_gradient(jnp.abs(q[0]).mean())
    return -lam * q[0].mean() + behavior_cloning_loss(policy_action, data_action)


def expectile_loss(diff, expectile):
    """IQL's value loss (Kostrikov et al. 2021, arXiv:2110.06169, eq. 5): the asymmetric square
    `L_2^tau(u) = |tau - 1(u < 0)| u^2` averaged over the batch, with `diff = Q(s, a) - V(s)`
    `[B]` (the target critics' value held constant by the caller). With `tau > 0.5`, `V` is pushed
    up more by actions better than it than down by worse ones: it fits an upper expectile of `Q`
    over the dataset's actions, an in-sample stand-in for `max_a Q(s, a)`."""
    weight = jnp.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * jnp.square(diff)).mean()


def expectile_critic_loss(q, targets, expectile, weight=None):
    """Annealed Q-learning's critic loss (Omura et al. 2025, arXiv:2506.05968): each critic of
    `q [K, B]` fits the `expectile` of its `targets [B]` (held constant), summed over the
    critics, `sum_k E_B[L_2^tau(y - q_k)]` (`expectile_loss`). At `expectile` 0.5 it is
    `critic_loss` (the mean: the Bellman operator of the policy whose next actions the targets
    took); towards 1 it fits the largest target over the next actions sampled (the optimality
    operator). With importance weights `weight [B]` (a prioritized replay's, held constant),
    each item's losses weighted: `sum_k E_B[w L_2^tau(y - q_k)]`."""
    _per_critic("expectile_critic_loss", q, targets=targets)
    diff = jax.lax.stop_gradient(targets) - q  # positive where the target is above the critic
    if weight is None:
        return expectile_loss(diff, expectile) * q.shape[0]  # the mean over [K, B] times K
    _same("expectile_critic_loss", targets=targets, weight=weight)
    asymmetry = jnp.where(diff < 0, 1.0 - expectile, expectile)
    weighted = jax.lax.stop_gradient(weight) * asymmetry * jnp.square(diff)
    return weighted.mean() * q.shape[0]


def advantage_weights(advantage, beta, max_weight):
    """IQL's policy-extraction weights (eq. 7): `min(exp(beta * A), max_weight)` per sample, with
    no gradient. The paper's eq. 7 has no clip; the reference code clips at 100 (`max_weight`).
    Computed as `exp(min(beta * A, log max_weight))`: the same values, without overflowing to
    infinity for large advantages."""
    scaled = jnp.minimum(beta * advantage, jnp.log(max_weight))
    return jax.lax.stop_gradient(jnp.exp(scaled))


def awr_policy_loss(log_prob, weights):
    """Advantage-weighted regression (IQL eq. 7, negated to be minimised): `-E[w * log pi(a|s)]`
    over the dataset's actions, the weights held constant. A plain batch mean, as the reference
    code has it (not normalised by the sum of the weights)."""
    _same("awr_policy_loss", log_prob=log_prob, weights=weights)
    return -(jax.lax.stop_gradient(weights) * log_prob).mean()


def cql_penalty(q_sampled, log_density, q_data):
    """CQL(H)'s conservative term (Kumar et al. 2020, arXiv:2006.04779, eq. 4) for each critic:
    `E_s[log sum_a exp Q(s, a)] - E_{s, a ~ D}[Q(s, a)]`, the integral over actions estimated by
    importance sampling (appendix F): `logsumexp_i(Q(s, a_i) - log mu(a_i|s))` over the `M`
    sampled actions.

    `q_sampled` is `[K, M, B]` (critic k at sample i of state b), `log_density` `[M, B]` (the log
    density of the proposal each sample came from, held constant), `q_data` `[K, B]`. Returns
    `(penalty [K], logsumexp [K])`, both averaged over the batch.

    No `log M` is subtracted, as in the authors' code and CORL's: the log-mean-exp estimate would be
    `logsumexp - log M`. The constant does not change the critics' gradient; it shifts the
    penalty's value, which matters only against a Lagrange threshold, whose published values
    assume it is absent. Each sample is weighted by the density of its own proposal, not by the
    mixture of the proposals (also as in that code)."""
    _per_critic("cql_penalty", q_data, **{"q_sampled[k, i]": tuple(jnp.shape(q_sampled)[2:])})
    _same("cql_penalty", q_sampled=tuple(jnp.shape(q_sampled)[1:]), log_density=log_density)
    lse = jax.scipy.special.logsumexp(q_sampled - jax.lax.stop_gradient(log_density), axis=1)
    return (lse - q_data).mean(axis=-1), lse.mean(axis=-1)


def cql_lagrange_loss(log_alpha_prime, penalty, target_action_gap, max_alpha_prime=1e6):
    """The Lagrange form of CQL (Kumar et al. 2020, appendix F): the weight
    `alpha' = clip(exp(log_alpha_prime), 0, max_alpha_prime)` maximises
    `alpha' * (penalty - target_action_gap)`, so this returns its negation. `alpha'` grows while
    the penalty (averaged over critics, held constant) exceeds the gap and shrinks below it.
    Compared with the unweighted penalty, as in the paper's formula; the authors' code compares the
    penalty already multiplied by its fixed weight."""
    alpha_prime = jnp.clip(jnp.exp(log_alpha_prime), 0.0, max_alpha_prime)
    return -alpha_prime * (jax.lax.stop_gradient(jnp.mean(penalty)) - target_action_gap)
