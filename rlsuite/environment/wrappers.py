"""Wrappers every agent needs: time limit, episode statistics, action clipping and rescaling,
observation flattening.


A wrapper is an `Environment` around another one. It wraps the single-episode core (`reset_env`,
`step_env`), so the one auto-reset in `Environment.step` resets the whole stack at once and every
wrapper sees an episode end before it happens. Wrappers build new `info` dicts and never mutate the
one they receive. Order matters as in gymnasium: put `EpisodeStatistics` outside `TimeLimit` so that
truncated episodes are counted::

    env = EpisodeStatistics(TimeLimit(CartPole(), max_episode_steps=500))
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Box, Space, flat_dim


class Wrapper(Environment):
    """Delegates everything to the wrapped environment; subclasses override what they change."""

    def __init__(self, env: Environment):
        self.env = env

    @property
    def default_params(self) -> Any:
        return self.env.default_params

    def check_params(self, params: Any) -> Any:
        return self.env.check_params(params)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, Any]:
        return self.env.reset_env(key, params)

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any) -> StepResult:
        return self.env.step_env(key, state, action, params)

    def observation_space(self, params: Any) -> Space:
        return self.env.observation_space(params)

    def action_space(self, params: Any) -> Space:
        return self.env.action_space(params)

    def action_mask(self, state: Any, params: Any) -> jax.Array | None:
        return self.env.action_mask(self.inner_state(state), params)

    @property
    def has_action_mask(self) -> bool:
        return self.env.has_action_mask

    def inner_state(self, state: Any) -> Any:
        """The wrapped environment's state within this wrapper's `state` (a wrapper that keeps
        its own state around it says where)."""
        return state

    def with_inner_state(self, state: Any, inner: Any) -> Any:
        """This wrapper's `state` with the wrapped environment's replaced by `inner`. A wrapper
        that keeps its own state (it overrides `inner_state`) says how, or is refused here."""
        if type(self).inner_state is not Wrapper.inner_state:
            raise TypeError(
                f"{type(self).__name__} keeps a state of its own and does not say how to replace "
                "the state it wraps (with_inner_state)"
            )
        return inner

    def disturbance_shape(self, params: Any) -> tuple[int, ...] | None:
        return self.env.disturbance_shape(params)

    def disturb(self, state: Any, params: Any, disturbance: jax.Array) -> Any:
        inner = self.env.disturb(self.inner_state(state), params, disturbance)
        return self.with_inner_state(state, inner)

    @property
    def evaluation(self):
        """The wrapped environment's evaluation (a wrapper that changes it declares its own)."""
        return self.env.evaluation

    @property
    def unwrapped(self) -> Environment:
        return self.env.unwrapped if isinstance(self.env, Wrapper) else self.env

    @property
    def name(self) -> str:
        return self.unwrapped.name

    def __getattr__(self, attr: str) -> Any:
        # Only reached for attributes the wrapper itself lacks (e.g. `max_episode_steps`).
        if attr == "env":
            raise AttributeError(attr)
        return getattr(self.env, attr)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.env!r})"


@struct.dataclass
class TimeLimitState:
    env_state: Any
    time: jax.Array


class TimeLimit(Wrapper):
    """Sets `truncated` once `max_episode_steps` steps have been taken; never touches `terminated`.

    As in gymnasium, a step that both terminates and reaches the limit reports both flags;
    bootstrapping uses `terminated`, so the termination wins.
    """

    def __init__(self, env: Environment, max_episode_steps: int):
        whole = isinstance(max_episode_steps, int | np.integer) and not isinstance(
            max_episode_steps, bool
        )
        if not whole or max_episode_steps < 1:
            raise ValueError(
                f"max_episode_steps must be an integer >= 1, got {max_episode_steps!r}"
            )
        super().__init__(env)
        self.max_episode_steps = int(max_episode_steps)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, TimeLimitState]:
        obs, env_state = self.env.reset_env(key, params)
        return obs, TimeLimitState(env_state, jnp.zeros((), jnp.int32))

    def step_env(self, key, state: TimeLimitState, action, params) -> StepResult:
        obs, env_state, reward, terminated, truncated, info = self.env.step_env(
            key, state.env_state, action, params
        )
        time = state.time + 1
        truncated = jnp.logical_or(truncated, time >= self.max_episode_steps)
        return obs, TimeLimitState(env_state, time), reward, terminated, truncated, info

    def inner_state(self, state: TimeLimitState) -> Any:
        return state.env_state

    def with_inner_state(self, state: TimeLimitState, inner: Any) -> TimeLimitState:
        return state.replace(env_state=inner)

    def __repr__(self) -> str:
        return f"TimeLimit({self.env!r}, max_episode_steps={self.max_episode_steps})"


@struct.dataclass
class EpisodeStatisticsState:
    env_state: Any
    episode_return: jax.Array
    episode_length: jax.Array


class EpisodeStatistics(Wrapper):
    """Adds the running return and length of the current episode to `info`.

    `info["episode_return"]` and `info["episode_length"]` include the current step, so where
    `info["episode_done"]` (= terminated | truncated) they are the finished episode's totals.
    Averaging finished episodes over a rollout: `sum(ret * done) / max(sum(done), 1)`.
    """

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, EpisodeStatisticsState]:
        obs, env_state = self.env.reset_env(key, params)
        zero = jnp.zeros((), jnp.float32)
        return obs, EpisodeStatisticsState(env_state, zero, jnp.zeros((), jnp.int32))

    def step_env(self, key, state: EpisodeStatisticsState, action, params) -> StepResult:
        obs, env_state, reward, terminated, truncated, info = self.env.step_env(
            key, state.env_state, action, params
        )
        episode_return = state.episode_return + reward.astype(jnp.float32)
        episode_length = state.episode_length + 1
        info = {
            **info,
            "episode_return": episode_return,
            "episode_length": episode_length,
            "episode_done": jnp.logical_or(terminated, truncated),
        }
        new_state = EpisodeStatisticsState(env_state, episode_return, episode_length)
        return obs, new_state, reward, terminated, truncated, info

    def inner_state(self, state: EpisodeStatisticsState) -> Any:
        return state.env_state

    def with_inner_state(self, state: EpisodeStatisticsState, inner: Any):
        return state.replace(env_state=inner)


def episode_metrics(info: dict) -> dict:
    """Mean return and length of the episodes that ended in a batch of `EpisodeStatistics`
    infos (any leading axes), NaN when none ended, and their count.

    Where the info holds the goal contract's `success` (the step reached a state within the
    goal's threshold, `rlsuite.environment.goal`), the training curve of success as well:
    `charts/success_at_end`, the share of the episodes that ended at the goal (NaN when none
    ended), and `charts/time_at_goal`, the share of all the batch's steps spent there (the
    evaluation's `time_near_goal` per step). Where it holds `achievement_count` (the
    achievements unlocked in the episode so far, Craftax's), `charts/achievements`, their mean
    number in the episodes that ended."""
    done = info["episode_done"]
    episodes = done.sum()
    count = jnp.maximum(episodes, 1)
    mean_return = (info["episode_return"] * done).sum() / count
    mean_length = (info["episode_length"] * done).sum() / count
    metrics = {
        "charts/episodic_return": jnp.where(episodes > 0, mean_return, jnp.nan),
        "charts/episodic_length": jnp.where(episodes > 0, mean_length, jnp.nan),
        "charts/episodes": episodes,
    }
    if "achievement_count" in info:  # achievements unlocked in the episode so far (Craftax)
        achieved = (info["achievement_count"] * done).sum() / count
        metrics["charts/achievements"] = jnp.where(episodes > 0, achieved, jnp.nan)
    if "success" in info:
        at_goal = info["success"] > 0
        ended_there = (at_goal & done).sum() / count
        metrics["charts/success_at_end"] = jnp.where(episodes > 0, ended_there, jnp.nan)
        metrics["charts/time_at_goal"] = at_goal.mean()
    return metrics


def _box_action_space(env: Environment, params: Any, wrapper: str) -> Box:
    space = env.action_space(params)
    if not isinstance(space, Box) or not space.bounded:
        raise TypeError(f"{wrapper} needs a bounded Box action space, got {space!r}")
    return space


class ClipAction(Wrapper):
    """Clips continuous actions to the bounds of the action space before stepping."""

    def __init__(self, env: Environment):
        super().__init__(env)
        _box_action_space(env, env.default_params, "ClipAction")

    def step_env(self, key, state, action, params) -> StepResult:
        space = self.env.action_space(params)
        action = jnp.clip(action, jnp.asarray(space.low), jnp.asarray(space.high))
        return self.env.step_env(key, state, action, params)


class RescaleAction(Wrapper):
    """Exposes the action space `[low, high]` (default `[-1, 1]`) and maps it affinely onto the
    wrapped environment's bounds. Actions are not clipped; compose with `ClipAction` to clip."""

    def __init__(self, env: Environment, low: float = -1.0, high: float = 1.0):
        super().__init__(env)
        _box_action_space(env, env.default_params, "RescaleAction")
        if not low < high:
            raise ValueError(f"RescaleAction needs low < high, got low={low}, high={high}")
        self.low, self.high = float(low), float(high)

    def action_space(self, params: Any) -> Box:
        inner = self.env.action_space(params)
        return Box(self.low, self.high, inner.shape, inner.dtype)

    def step_env(self, key, state, action, params) -> StepResult:
        inner = self.env.action_space(params)
        fraction = (action - self.low) / (self.high - self.low)
        action = jnp.asarray(inner.low) + fraction * jnp.asarray(inner.high - inner.low)
        return self.env.step_env(key, state, action, params)


class FlattenObservation(Wrapper):
    """Reshapes observations to one float vector (the space's bounds are flattened with it)."""

    def observation_space(self, params: Any) -> Box:
        inner = self.env.observation_space(params)
        if not isinstance(inner, Box):
            raise TypeError(f"FlattenObservation needs a Box observation space, got {inner!r}")
        n = flat_dim(inner)
        return Box(np.reshape(inner.low, (n,)), np.reshape(inner.high, (n,)), (n,), inner.dtype)

    def reset_env(self, key, params) -> tuple[jax.Array, Any]:
        obs, state = self.env.reset_env(key, params)
        return jnp.reshape(obs, (-1,)), state

    def step_env(self, key, state, action, params) -> StepResult:
        obs, state, reward, terminated, truncated, info = self.env.step_env(
            key, state, action, params
        )
        return jnp.reshape(obs, (-1,)), state, reward, terminated, truncated, info
