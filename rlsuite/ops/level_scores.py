"""Level scores for unsupervised environment design: what a curriculum ranks its levels by.

Every function maps time-major rollout arrays `[T, *batch]` (`[num_steps, num_envs]`; each env
plays one level) to one score per env, `[*batch]`. `dones[t]` marks the last step of an episode
(`terminated | truncated`, bool or float). Only finished episodes count: the steps of an episode
still running at the end of the rollout are left out, and an env with no finished episode scores
`incomplete` (NaN by default, which `level_buffer.insert` refuses; `finished` gives the mask).

A per-episode quantity is averaged over the env's finished episodes. Time-averaged scores (MaxMC,
PVL) take the mean over the steps of each episode first, then the mean over episodes: an episode
counts once whatever its length (jaxued's `max_mc` / `positive_value_loss` and minimax's
`compute_episodic_stats`). Returns are undiscounted sums of rewards.
"""

import chex
import jax
import jax.numpy as jnp

Array = chex.Array
NAN = float("nan")


def _prepare(dones: Array, *floats: Array) -> tuple[Array, list[Array]]:
    dones = jnp.asarray(dones)
    floats = [jnp.asarray(x, jnp.float32) for x in floats]
    if dones.ndim < 1:
        raise ValueError(f"dones must have a leading time axis, got shape {dones.shape}")
    chex.assert_equal_shape([dones, *floats])
    return dones.astype(bool), floats


def _episodes(dones: Array, metric: Array, time_average: bool) -> tuple[Array, Array, Array]:
    """Per env: (mean, max) over finished episodes of the episode's sum (or per-step mean) of
    `metric`, and the number of finished episodes (mean and max are NaN where it is 0)."""

    def step(carry, xs):
        running, steps, total, best, episodes = carry
        done, value = xs
        running, steps = running + value, steps + 1.0
        episode = running / steps if time_average else running
        total = total + jnp.where(done, episode, 0.0)
        best = jnp.where(done, jnp.maximum(best, episode), best)
        episodes = episodes + done.astype(jnp.int32)
        return (
            jnp.where(done, 0.0, running),
            jnp.where(done, 0.0, steps),
            total,
            best,
            episodes,
        ), None

    zeros = jnp.zeros(dones.shape[1:], jnp.float32)
    init = (
        zeros,
        zeros,
        zeros,
        jnp.full_like(zeros, -jnp.inf),
        jnp.zeros(dones.shape[1:], jnp.int32),
    )
    (_, _, total, best, episodes), _ = jax.lax.scan(step, init, (dones, metric))
    some = episodes > 0
    mean = jnp.where(some, total / jnp.maximum(episodes, 1), NAN)
    return mean, jnp.where(some, best, NAN), episodes


def finished(dones: Array) -> Array:
    """Bool `[*batch]`: the env finished at least one episode (only those are inserted)."""
    dones, _ = _prepare(dones)
    return dones.any(axis=0)


def max_return(dones: Array, rewards: Array, incomplete: float = NAN) -> Array:
    """The highest return among the finished episodes."""
    dones, (rewards,) = _prepare(dones, rewards)
    _, best, n = _episodes(dones, rewards, time_average=False)
    return jnp.where(n > 0, best, incomplete)


def mean_return(dones: Array, rewards: Array, incomplete: float = NAN) -> Array:
    """The mean return of the finished episodes."""
    dones, (rewards,) = _prepare(dones, rewards)
    mean, _, n = _episodes(dones, rewards, time_average=False)
    return jnp.where(n > 0, mean, incomplete)


def max_mc(
    dones: Array,
    rewards: Array,
    values: Array,
    max_returns: Array | None = None,
    incomplete: float = NAN,
) -> Array:
    """MaxMC (Jiang et al. 2021, "Replay-Guided Adversarial Environment Design"): the mean over
    finished episodes of the mean over their steps of `R_max - V(s_t)`.

    `R_max` is the highest return of this rollout's finished episodes, raised to
    `max_returns` (`[*batch]`, the best return seen on the level before, e.g. a level buffer
    extra; NaN or -inf when unknown) where given. Store `fmax(max_returns, max_return(...))`
    back as the level's extra. Can be negative.
    """
    dones, (rewards, values) = _prepare(dones, rewards, values)
    _, best, n = _episodes(dones, rewards, time_average=False)
    if max_returns is not None:
        best = jnp.fmax(best, jnp.asarray(max_returns, jnp.float32))
    mean, _, _ = _episodes(dones, best[None] - values, time_average=True)
    return jnp.where(n > 0, mean, incomplete)


def positive_value_loss(dones: Array, advantages: Array, incomplete: float = NAN) -> Array:
    """Positive value loss (Jiang et al. 2021, "Prioritized Level Replay"): the mean over
    finished episodes of the mean over their steps of `max(A_t, 0)`, `A_t` the GAE
    advantages of the rollout."""
    dones, (advantages,) = _prepare(dones, advantages)
    mean, _, n = _episodes(dones, jnp.maximum(advantages, 0.0), time_average=True)
    return jnp.where(n > 0, mean, incomplete)


def learnability(dones: Array, successes: Array, incomplete: float = NAN) -> Array:
    """Learnability `p (1 - p)` of SFL (Rutherford et al. 2024, "No Regrets: Investigating and
    Improving Regret Approximations for Curriculum Discovery"), `p` the success rate over the
    finished episodes: `successes[t]` (bool or 0/1) is read at each episode's last step (for
    the maze, `rewards > 0`: only reaching the goal is rewarded)."""
    dones, (successes,) = _prepare(dones, successes)
    p, _, n = _episodes(dones, jnp.where(dones, successes, 0.0), time_average=False)
    return jnp.where(n > 0, p * (1.0 - p), incomplete)


def paired_regret(
    protagonist_dones: Array,
    protagonist_rewards: Array,
    antagonist_dones: Array,
    antagonist_rewards: Array,
    clip: bool = False,
    incomplete: float = NAN,
) -> Array:
    """PAIRED's regret estimate (Dennis et al. 2020, arXiv:2012.02096): the antagonist's best
    return minus the protagonist's mean return on the same level, each over its finished
    episodes; `clip` (static) takes `max(0, .)`, as minimax's `relative_regret`. Either
    agent without a finished episode gives `incomplete`."""
    protagonist = mean_return(protagonist_dones, protagonist_rewards)
    antagonist = max_return(antagonist_dones, antagonist_rewards)
    regret = antagonist - protagonist
    if clip:
        regret = jnp.maximum(regret, 0.0)
    complete = finished(protagonist_dones) & finished(antagonist_dones)
    return jnp.where(complete, regret, incomplete)
