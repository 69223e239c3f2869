"""Evaluating every run's policy at the end of a run and in `rlsuite eval`: the environment
declares what it is evaluated on (`env.evaluation`, `rlsuite.environment.evaluations`), and
`Evaluator` plays the runs' policies for it (episodes, trials or attempts on levels, each one
jitted program over every run, spread over the devices).

    returns, entries = evaluate_policies(agent, states, key, episodes=10)
    summary = {**eval_summary(returns), **entries}
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from rlsuite.environment.evaluations import EpisodesResult, TrialsResult
from rlsuite.environment.meta import info_keys
from rlsuite.loop import driver
from rlsuite.loop.distributed import to_host
from rlsuite.loop.episodes import adaptation_curve, episode_bytes
from rlsuite.ops import footprint
from rlsuite.ops.validators import counted


class Evaluator:
    """Every run's policy of `states` (a leading run axis), played for `episodes` episodes per
    run (trials, for a task family; attempts per level on levels). Run `i` plays with
    `driver.run_keys(key, num_runs, seeds)[i]`, and its attempts on levels with the keys of
    `jax.random.fold_in(key, 1)`, so that adding levels changes no other result."""

    def __init__(self, agent, states, key, episodes: int, deterministic=True, seeds=None):
        self.agent, self.states, self.key = agent, states, key
        self.episodes_per_run, self.deterministic, self.seeds = episodes, deterministic, seeds
        self.num_runs = jax.tree.leaves(states)[0].shape[0]
        self.env, self.env_params = agent.env, agent.env_params

    def info_keys(self) -> set[str]:
        return info_keys(self.env, self.env_params)

    def _keys(self, key: jax.Array) -> jax.Array:
        return driver.run_keys(key, self.num_runs, self.seeds)

    def _actions(self, deterministic: bool | None) -> bool:
        return self.deterministic if deterministic is None else bool(deterministic)

    def episodes(
        self, sums: tuple[str, ...] = (), deterministic: bool | None = None
    ) -> EpisodesResult:
        evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4, 5, 6))
        result = to_host(
            evaluation(
                self.agent, self.states, self._keys(self.key), self.episodes_per_run,
                self._actions(deterministic), None, sums,
            )
        )  # fmt: skip
        return EpisodesResult(np.asarray(result.returns), dict(result.sums))

    def trials(self, sums: tuple[str, ...] = ()) -> TrialsResult:
        evaluation = jax.jit(driver.evaluate_trials_batch, static_argnums=(0, 3, 4, 5))
        result = to_host(
            evaluation(
                self.agent, self.states, self._keys(self.key), self.episodes_per_run,
                self.deterministic, sums,
            )
        )  # fmt: skip
        episode_returns = np.asarray(result.episode_returns)
        curve = adaptation_curve(episode_returns) if episode_returns.shape[-1] > 0 else None
        return TrialsResult(np.asarray(result.returns), episode_returns, dict(result.sums), curve)

    def levels(self, level_params: Any, deterministic: bool | None = None) -> np.ndarray:
        evaluation = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5))
        keys = self._keys(jax.random.fold_in(self.key, 1))
        result = to_host(
            evaluation(
                self.agent, self.states, keys, level_params, self.episodes_per_run,
                self._actions(deterministic),
            )
        )  # fmt: skip
        return np.asarray(result.returns)

    def level_trials(self, level_params: Any) -> TrialsResult:
        evaluation = jax.jit(driver.evaluate_level_trials_batch, static_argnums=(0, 4, 5))
        keys = self._keys(jax.random.fold_in(self.key, 1))
        result = to_host(
            evaluation(
                self.agent, self.states, keys, level_params, self.episodes_per_run,
                self.deterministic,
            )
        )  # fmt: skip
        episode_returns = np.asarray(result.episode_returns)  # [runs, N * attempts, episodes]
        num_runs, num_trials = episode_returns.shape[:2]
        shape = (num_runs, num_trials // self.episodes_per_run, self.episodes_per_run)
        curve = adaptation_curve(episode_returns) if episode_returns.shape[-1] > 0 else None
        return TrialsResult(
            np.asarray(result.returns).reshape(shape),
            episode_returns.reshape(*shape, -1),
            dict(result.sums),
            curve,
        )


def evaluate_policies(
    agent, states, key: jax.Array, episodes: int, deterministic: bool = True, seeds=None
) -> tuple[np.ndarray, dict]:
    """Every run's evaluation returns `[num_runs, episodes]` and the entries its environment's
    evaluation adds (`agent.env.evaluation`: goal success, the adaptation curve of trials,
    held-out levels, ...). Each run's key is `driver.run_keys(key, num_runs, seeds)[i]`."""
    return agent.env.evaluation(Evaluator(agent, states, key, episodes, deterministic, seeds))


def check_evaluation(agent, num_runs: int, episodes: int, beside: int = 0) -> None:
    """Refuse (`MemoryError`, stating the bytes) an evaluation of `episodes` per run whose
    episodes, played side by side (`rlsuite.loop.episodes.episode_bytes` each), would not fit in
    the memory of the runs' devices with `beside` bytes more (the learner states of a run that
    has not allocated them yet); before anything is compiled."""
    need = num_runs * episodes * episode_bytes(agent.env, agent.env_params)
    what = (
        f"{agent.name}: an evaluation of {counted(episodes, 'episode')} side by side in each of "
        f"{counted(num_runs, 'run')}" + (", beside the learner state" if beside else "")
    )
    devices = driver.run_devices(num_runs)
    footprint.check_fits(beside + need, what, hint="evaluate fewer episodes", devices=devices)


def eval_summary(eval_returns: np.ndarray, reference_returns=None) -> dict:
    """`eval_return_per_seed` and `eval_return_mean` of returns `[num_seeds, episodes]`, and with
    `reference_returns=(random, expert)` D4RL's `normalized_score_per_seed` and `_mean`."""
    per_seed = np.asarray(eval_returns).mean(axis=1)
    summary = {
        "eval_return_per_seed": per_seed.tolist(),
        "eval_return_mean": float(per_seed.mean()),
    }
    if reference_returns is not None:
        from rlsuite.data.datasets import normalized_score

        scores = np.asarray(normalized_score(per_seed, *reference_returns))
        summary["normalized_score_per_seed"] = scores.tolist()
        summary["normalized_score_mean"] = float(scores.mean())
    return summary
