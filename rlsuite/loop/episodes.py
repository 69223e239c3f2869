"""`evaluate`: run a fixed number of episodes inside `jit`; per-episode returns and lengths.
`evaluate_trials`: the same for the trials of an `RL2`-wrapped environment, with the return of
each episode inside them; `adaptation_curve` and `paired_difference` summarise those across seeds.
`evaluate_levels`: a number of attempts on each of a batch of levels (held-out mazes, per-level
params), per-level returns and lengths `[num_levels, attempts]`.

All episodes run side by side (a vmapped batch), each until its first episode end; the loop stops as
soon as all have ended or after `max_steps`. No episode is reset: the steps are
`Environment.step_without_reset` with the keys `step` would use (so the episodes are those an
auto-resetting step gives, bitwise), and an episode that has ended keeps its last state while the
others go on. A fresh start state per step, computed and thrown away, is what a batched
auto-reset would cost here (a full MJX `forward` per step for Brax). Works under `jax.vmap` over
seeds (or over policy parameters closed over by the policy). Whether the policy is deterministic
is the policy's business: pass e.g. `lambda key, obs: (agent.act(state, obs, key, True), {})`, or
`rlsuite.loop.agent.policy(agent, state, True)`. A `RecurrentPolicy` starts every episode from its
fresh carry and keeps it through the episode, except where the environment's `info` reports
`TRIAL_END` (`RL2(memory="episode")` at its inner episode ends): there it starts afresh. Where the
environment has action masks, the policy is given them (`action_mask=`) as in a rollout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.environment import Environment, masks, select, split_step_key
from rlsuite.loop.rollout import (
    TRIAL_END,
    Policy,
    RecurrentPolicy,
    recurrent,
    reset_batch,
    reset_carry,
)
from rlsuite.ops import footprint
from rlsuite.ops.bootstrap import bootstrap_ci
from rlsuite.ops.validators import check_int


class EvalResult(NamedTuple):
    """Per-episode results, each of shape `[num_episodes]`."""

    returns: jax.Array  # undiscounted return, float32
    lengths: jax.Array  # steps taken, int32
    finished: jax.Array  # False where the episode was still running after `max_steps`
    sums: dict = {}  # {info key of `sum_info`: the key summed over the episode's steps}


class TrialResult(NamedTuple):
    """Per-trial results of `evaluate_trials`."""

    episode_returns: jax.Array  # [num_trials, episodes_per_trial]: the return of each episode
    returns: jax.Array  # [num_trials]: the trial's return (the sum of its episodes')
    sums: dict  # {info key: [num_trials]}: the key summed over the trial's steps, float32


class LevelResult(NamedTuple):
    """Per-level results of `evaluate_levels`, each `[num_levels, attempts]`."""

    returns: jax.Array  # undiscounted return, float32
    lengths: jax.Array  # steps taken, int32
    finished: jax.Array  # False where the episode was still running after `max_steps`


class _Run(NamedTuple):
    """What `_run_episodes` measures, per episode `[num_episodes, ...]`."""

    returns: jax.Array
    lengths: jax.Array
    finished: jax.Array
    sums: dict  # {info key: the key summed over the episode's steps}
    last: dict  # {info key: the key at the episode's last step}


def episode_bytes(env: Environment, env_params: Any) -> int:
    """Bytes one episode takes in a batch played side by side (`evaluate` and the others): its
    environment state and observation, twice (the step reads one and writes the next), from the
    shapes of a reset (`jax.eval_shape`: nothing computed). A lower bound: what a step computes
    on the way is left out."""
    reset = jax.eval_shape(lambda key: env.reset(key, env_params), jax.random.key(0))
    return 2 * footprint.tree_bytes(reset)


def _max_steps(env: Environment, max_steps: int | None, caller: str) -> int:
    if max_steps is None:
        max_steps = getattr(env, "max_episode_steps", None)
        if max_steps is None:
            raise ValueError(
                f"{caller}: {env.name} has no max_episode_steps (no TimeLimit); pass max_steps"
            )
    return max_steps


class _Played(NamedTuple):
    """What `_run_episodes` plays on and reads: the environment, its params (one set, or a batch
    along `params_axis`), the scalar info keys summed over each episode's steps (`sum_info`)
    and those kept at its last step (`last_info`)."""

    env: Environment
    env_params: Any
    params_axis: int | None
    sum_info: Sequence[str] = ()
    last_info: Sequence[str] = ()


def _run_episodes(
    played: _Played,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    num_episodes: int,
    max_steps: int,
) -> _Run:
    """The loop of `evaluate`, `evaluate_trials` and `evaluate_levels`: `num_episodes` episodes
    side by side, each to its first end (see the module's docstring), reading what `played`
    names of their info."""
    env, params_axis, sum_info, last_info = (
        played.env, played.params_axis, played.sum_info, played.last_info
    )  # fmt: skip
    env_params = env.check_params(played.env_params)
    policy = recurrent(policy)
    key, key_reset = jax.random.split(key)
    batch = reset_batch(env, env_params, key_reset, num_episodes, params_axis)
    batch = batch._replace(carry=policy.initial(num_episodes))

    def step_or_stay(key, state, obs, action, params, running):
        new_obs, new_state, reward, terminated, truncated, info = env.step_without_reset(
            split_step_key(key)[0], state, action, params
        )
        state, obs = select(running, (new_state, new_obs), (state, obs))
        return state, obs, reward, terminated, truncated, info

    step = jax.vmap(step_or_stay, in_axes=(0, 0, 0, 0, params_axis, 0))
    zeros = jnp.zeros((num_episodes,), jnp.float32)
    running = jnp.ones((num_episodes,), bool)
    lengths = jnp.zeros((num_episodes,), jnp.int32)
    sums, last = {}, {}
    if sum_info or last_info:
        played = played._replace(env_params=env_params)
        info = _info_shapes(played, policy, step, batch, key, running)
        for name in sum_info:
            if info[name].shape != (num_episodes,):
                raise ValueError(
                    f"sum_info: info[{name!r}] must be one number per step, got shape "
                    f"{info[name].shape[1:]} per environment"
                )
            sums[name] = zeros
        last = {name: jnp.zeros(info[name].shape, info[name].dtype) for name in last_info}

    def cond(loop):
        _, _, running, *_, t = loop
        return jnp.any(running) & (t < max_steps)

    def body(loop):
        batch, key, running, returns, lengths, sums, last, t = loop
        key, key_policy, key_env = jax.random.split(key, 3)
        mask = masks.keywords(masks.of_batch(env, batch.state, env_params, params_axis))
        action, _, carry = policy.apply(key_policy, batch.obs, batch.carry, **mask)
        keys = jax.random.split(key_env, num_episodes)
        state, obs, reward, terminated, truncated, info = step(
            keys, batch.state, batch.obs, action, env_params, running
        )
        returns = returns + jnp.where(running, reward, 0.0)
        lengths = lengths + running.astype(jnp.int32)
        sums = {
            k: s + jnp.where(running, info[k], 0.0).astype(jnp.float32) for k, s in sums.items()
        }
        last = {k: jax.vmap(select)(running, info[k], v) for k, v in last.items()}
        if TRIAL_END in info:  # a memory that starts afresh inside the episode
            carry = reset_carry(policy, carry, info[TRIAL_END])
        running = running & ~(terminated | truncated)
        batch = batch._replace(state=state, obs=obs, carry=carry)
        return batch, key, running, returns, lengths, sums, last, t + 1

    loop = (batch, key, running, zeros, lengths, sums, last, jnp.zeros((), jnp.int32))
    _, _, running, returns, lengths, sums, last, _ = jax.lax.while_loop(cond, body, loop)
    return _Run(returns, lengths, ~running, sums, last)


def _info_shapes(played: _Played, policy, step, batch, key, running) -> dict:
    """The shapes and dtypes of a step's `info` (`[num_episodes, ...]`), nothing computed;
    a `ValueError` where it lacks one of the keys `played` reads."""
    env, env_params, params_axis = played.env, played.env_params, played.params_axis
    keys = (*played.sum_info, *played.last_info)

    def first_info(key):
        mask = masks.keywords(masks.of_batch(env, batch.state, env_params, params_axis))
        action, _, _ = policy.apply(key, batch.obs, batch.carry, **mask)
        step_keys = jax.random.split(key, running.shape[0])
        return step(step_keys, batch.state, batch.obs, action, env_params, running)[-1]

    info = jax.eval_shape(first_info, key)
    missing = [k for k in keys if k not in info]
    if missing:
        raise ValueError(
            f"{env.name} reports no info[{missing[0]!r}]; its info keys: {', '.join(sorted(info))}"
        )
    return info


def evaluate(
    env: Environment,
    env_params: Any,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    num_episodes: int,
    max_steps: int | None = None,
    params_axis: int | None = None,
    sum_info: Sequence[str] = (),
) -> EvalResult:
    """Run `policy` (`(key, obs_batch) -> (action_batch, extras)`, or a `RecurrentPolicy`) for
    `num_episodes` episodes.

    `max_steps` defaults to the environment's `max_episode_steps` (set by `TimeLimit`).
    `sum_info` names scalar info keys summed over each episode's steps (`EvalResult.sums`; a
    goal environment's `success`: the steps spent at the goal).
    """
    max_steps = _max_steps(env, max_steps, "evaluate")
    if int(num_episodes) < 1:
        raise ValueError(f"evaluate: num_episodes must be >= 1, got {num_episodes}")
    played = _Played(env, env_params, params_axis, tuple(sum_info))
    run = _run_episodes(played, policy, key, num_episodes, max_steps)
    return EvalResult(run.returns, run.lengths, run.finished, run.sums)


def evaluate_trials(
    env: Environment,
    env_params: Any,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    num_trials: int,
    max_steps: int | None = None,
    params_axis: int | None = None,
    sum_info: Sequence[str] = (),
) -> TrialResult:
    """Run `num_trials` whole trials of an `RL2`-wrapped `env` side by side (each on the task
    its reset draws, or, with `sample_task=None`, on `env_params`, one set per trial with
    `params_axis=0`: held-out tasks), as `evaluate` runs episodes.

    `episode_returns` `[num_trials, episodes_per_trial]` is the wrapper's
    `info["episode_returns"]` at each trial's end (`[num_trials, 0]` for a trial measured in
    steps). `sum_info` names scalar info keys to sum over each trial, e.g. `("regret",)` for a
    bandit's expected regret. `max_steps` defaults to the trial length (`RL2.max_episode_steps`);
    a trial still running after it has its later episodes' returns at 0.
    """
    max_steps = _max_steps(env, max_steps, "evaluate_trials")
    if int(num_trials) < 1:
        raise ValueError(f"evaluate_trials: num_trials must be >= 1, got {num_trials}")
    sum_info = (sum_info,) if isinstance(sum_info, str) else tuple(sum_info)
    played = _Played(env, env_params, params_axis, sum_info, ("episode_returns",))
    run = _run_episodes(played, policy, key, num_trials, max_steps)
    return TrialResult(run.last["episode_returns"], run.returns, run.sums)


def evaluate_levels(
    env: Environment,
    level_params: Any,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    attempts: int,
    max_steps: int | None = None,
) -> LevelResult:
    """Run `policy` for `attempts` episodes on each level of `level_params`: environment params
    with a leading axis `[num_levels]` on every leaf, one set per level (e.g.
    `rlsuite.envs.maze.params_for_levels(env.default_params, held_out_levels())`).

    The `num_levels * attempts` episodes run side by side in `evaluate`'s loop (one set of
    params per episode: attempt `j` on level `i` is episode `i * attempts + j`, with its own
    key), so a recurrent policy starts each attempt from its fresh carry. Row `i` of each
    result is level `i`. A level counts as solved in an attempt whose return is above 0 (the
    maze rewards only reaching the goal): `(returns > 0).mean(-1)` is the solve rate per level,
    `returns.mean(-1)` the mean return. `max_steps` defaults to the environment's
    `max_episode_steps`; an environment that counts its own horizon in its params (the maze's
    `params.max_steps`) needs it given (`rlsuite.envs.maze.EVAL_MAX_STEPS`).
    """
    max_steps = _max_steps(env, max_steps, "evaluate_levels")
    check_int(attempts, "attempts", owner="evaluate_levels")
    num_levels = _num_levels(level_params)
    level_params = env.check_params(level_params)
    # Each level's params `attempts` times in a row: episode i * attempts + j plays level i.
    params = jax.tree.map(lambda x: jnp.repeat(x, attempts, axis=0), level_params)
    run = _run_episodes(_Played(env, params, 0), policy, key, num_levels * attempts, max_steps)
    shape = (num_levels, attempts)
    return LevelResult(*(x.reshape(shape) for x in (run.returns, run.lengths, run.finished)))


def _num_levels(level_params: Any) -> int:
    """The leading axis every leaf of `level_params` shares; a `ValueError` otherwise."""
    shapes = [np.shape(x) for x in jax.tree.leaves(level_params)]
    sizes = {shape[0] if shape else None for shape in shapes}
    if not shapes or None in sizes or len(sizes) != 1 or 0 in sizes:
        raise ValueError(
            "evaluate_levels: level_params must have a leading [num_levels] axis (>= 1) on every "
            f"leaf, one set of params per level (e.g. params_for_levels); got leaf shapes {shapes}"
        )
    return sizes.pop()


def adaptation_curve(
    episode_returns: Any, confidence: float = 0.95, num_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(mean, low, high)`, each `[episodes_per_trial]`: the mean return per episode index over
    the trials of every seed, and the percentile bootstrap interval (`confidence`) of that mean
    across seeds (the trials of a seed are averaged first; seeds are resampled).

    `episode_returns` is `[num_seeds, num_trials, episodes_per_trial]` (`evaluate_trials` under
    `jax.vmap` over seeds). Adaptation shows as a curve that rises with the episode index.
    """
    per_seed = _per_seed_means(episode_returns, "adaptation_curve")
    low, high = bootstrap_ci(per_seed, confidence, num_resamples, seed)
    return per_seed.mean(axis=0), low, high


def paired_difference(
    episode_returns: Any,
    later: int,
    earlier: int,
    confidence: float = 0.95,
    num_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """`(mean, low, high)` of the return at episode index `later` minus that at `earlier`, the
    interval a paired bootstrap across seeds: each seed's difference (of its mean returns over
    trials) is resampled whole, so the two episodes of a seed stay together.

    `episode_returns` is `[num_seeds, num_trials, episodes_per_trial]`. An interval above 0 says
    the policy does better at `later` than at `earlier` (it adapted).
    """
    per_seed = _per_seed_means(episode_returns, "paired_difference")
    n = per_seed.shape[1]
    for field, index in (("later", later), ("earlier", earlier)):
        whole = isinstance(index, int | np.integer) and not isinstance(index, bool)
        if not whole or not 0 <= index < n:
            raise ValueError(
                f"paired_difference: {field} must be an episode index in 0..{n - 1}, got {index!r}"
            )
    difference = per_seed[:, later] - per_seed[:, earlier]
    low, high = bootstrap_ci(difference[:, None], confidence, num_resamples, seed)
    return float(difference.mean()), float(low[0]), float(high[0])


def _per_seed_means(episode_returns: Any, caller: str) -> np.ndarray:
    """`[num_seeds, episodes_per_trial]`: each seed's mean return per episode index."""
    values = np.asarray(episode_returns, dtype=np.float64)
    if values.ndim != 3 or 0 in values.shape:
        raise ValueError(
            f"{caller}: episode_returns must be [num_seeds, num_trials, episodes_per_trial], "
            f"none of them 0, got shape {values.shape}"
        )
    return values.mean(axis=1)
