"""Annealed Q-learning (Omura, Ota, Osa, Mukuta and Harada, ICML 2025, arXiv:2506.05968): SAC's
and TD3's critics fit an expectile of their targets that falls, over the run, from near the
largest target (the Bellman optimality operator) to their mean (the Bellman operator of the
policy, SAC's and TD3's own).

An actor-critic's target `y = r + gamma Q'(s', a')` takes `a'` from the policy, so the mean of
`y` over the policy's actions is the policy's Bellman operator. Fitting an upper expectile of
`y` instead (IQL's asymmetric square, `L_2^tau(u) = |tau - 1(u < 0)| u^2` on `u = y - Q`, but
over the policy's next actions rather than the dataset's, and with `Q` itself in the target
rather than a state value) pushes `Q(s, a)` towards the best of the next actions sampled: the
optimality operator as `tau` nears 1. Learning is faster from it, and it overestimates; so `tau`
is annealed linearly to 0.5, where the loss is the plain squared error (`losses.critic_loss`).

    rlsuite train sac --critic-target annealed                  # expectile 0.9 -> 0.5
    rlsuite train td3 --critic-target annealed --expectile-start 0.8 --anneal-fraction 0.5

Choices, written down:

- The expectile starts at `expectile_start` (0.9) on the first gradient step and falls linearly
  to 0.5 at `anneal_fraction` (1: the whole run) of the run's planned gradient steps
  (`planned_gradient_steps`: those from `learning_starts` on); it stays 0.5 after. The gradient
  steps taken are the critics' Adam count, so a resumed run continues the schedule where it
  stopped. The paper anneals `tau` to 0.5 and studies its initial value; the linear schedule,
  the start 0.9 and the whole run as its horizon are this module's reading, not checked against
  the paper's code (docs/families/annealed_q.md says so).
- The targets are the family's own, passed in as they are (`critic_target=` of `sac.make` and
  `td3.make` replaces them): clipped double Q, SAC's entropy term, TD3's smoothed target action,
  n-step returns, `discount` 0 on termination (so a terminal step's target is `r` at any `tau`)
  and bootstrapping on truncation.
- The expectile of the current step is logged as `losses/expectile`.

`fit_batch` is how SAC's and TD3's critics fit any batch with the operator chosen, a prioritized
replay's (`--replay prioritized`: importance weights, new priorities) included.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax.numpy as jnp

from rlsuite.ops import losses
from rlsuite.ops.epochs import linear_decay

CRITIC_TARGETS = ("policy", "annealed")


@dataclasses.dataclass(frozen=True)
class CriticTargetConfig:
    """Which operator the critics fit (fields of `SACConfig` and `TD3Config`; checked by
    `check_config`)."""

    critic_target: str = "policy"
    """policy: the mean of the critics' targets (the Bellman operator of the policy); annealed:
    their expectile, from expectile_start to 0.5 over anneal_fraction of the run's gradient steps
    (annealed Q-learning, Omura et al. 2025)"""
    expectile_start: float = 0.9
    """annealed: the critics' expectile at the first gradient step (towards 1: the Bellman
    optimality operator over the sampled next actions)"""
    anneal_fraction: float = 1.0
    """annealed: the fraction of the run's gradient steps over which the expectile falls
    linearly to 0.5, where it stays"""


DEFAULTS = CriticTargetConfig()


def check_config(config) -> None:
    """Raise a `ValueError` naming the field for a bad `CriticTargetConfig` part of `config`."""
    name = type(config).__name__
    if config.critic_target not in CRITIC_TARGETS:
        raise ValueError(
            f"{name}.critic_target={config.critic_target!r} is not one of: "
            f"{', '.join(CRITIC_TARGETS)}"
        )
    start, fraction = config.expectile_start, config.anneal_fraction
    if not (isinstance(start, (int, float)) and 0.5 <= start < 1):
        raise ValueError(f"{name}.expectile_start must be in [0.5, 1), got {start!r}")
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise ValueError(f"{name}.anneal_fraction must be in (0, 1], got {fraction!r}")
    if config.critic_target == "policy":
        for field in ("expectile_start", "anneal_fraction"):
            if getattr(config, field) != getattr(DEFAULTS, field):
                raise ValueError(
                    f"{name}.{field} is read only with critic_target='annealed' "
                    f"(critic_target is {config.critic_target!r})"
                )


def planned_gradient_steps(config) -> int:
    """The gradient steps a run of an off-policy `config` takes (at least 1): an update learns
    `collections_per_update * gradient_steps` times once `learning_starts` environment steps
    have been taken (`rlsuite.agents.off_policy.update`)."""
    per_update_env_steps = config.num_envs * config.collections_per_update
    first = max(1, math.ceil(config.learning_starts / per_update_env_steps))
    learning_updates = max(0, config.num_updates - first + 1)
    return max(1, learning_updates * config.collections_per_update * config.gradient_steps)


def annealed_expectile(start, step, horizon):
    """`start` at `step` 0, falling linearly to 0.5 at `horizon` steps, 0.5 after (float32)."""
    return 0.5 + linear_decay(jnp.asarray(start, jnp.float32) - 0.5, step, horizon)


def fit_mean(q, targets, step, weight=None):
    """The critics' plain squared error (`losses.critic_loss`, each item's weighted by `weight`
    where given): `(loss, {})`."""
    del step
    return losses.critic_loss(q, targets, weight), {}


def critic_fit(config) -> Callable:
    """How the critics of a `config` with `CriticTargetConfig`'s fields fit their targets:
    `(q [K, B], targets [B], step, weight=None) -> (loss, metrics)`, where `step` is the
    gradient steps taken before this one and `weight [B]` a prioritized replay's importance
    weights (`fit_batch` passes them)."""
    if config.critic_target == "policy":
        return fit_mean
    horizon = config.anneal_fraction * planned_gradient_steps(config)

    def fit_annealed(q, targets, step, weight=None):
        expectile = annealed_expectile(config.expectile_start, step, horizon)
        loss = losses.expectile_critic_loss(q, targets, expectile, weight)
        return loss, {"expectile": expectile}

    return fit_annealed


def fit_batch(fit: Callable, q, targets, step, batch: dict):
    """SAC's and TD3's critics fitting a replay `batch`'s `targets [B]` with `fit` (`critic_fit`'s
    signature): `fit(q, targets, step)`, or, for a prioritized replay's batch (it carries
    `index` and importance weights, `weight [B]`), `fit(q, targets, step, weight)`, each item's
    loss weighted, with the items' new priorities among the metrics, `priority [B]`: the absolute
    TD error averaged over the critics (`losses.critic_priority`; Schaul et al.'s |TD error|,
    whichever operator the critics fit, so that it means the same with `annealed`; the mean, as
    every critic learns from the item alike). `(loss, metrics)`."""
    if "index" not in batch:
        return fit(q, targets, step)
    loss, metrics = fit(q, targets, step, batch["weight"])
    return loss, {**metrics, "priority": losses.critic_priority(q, targets)}
