"""Offline RL datasets on device: one pytree of transitions with static metadata, and its helpers.

Nothing is downloaded: datasets are made by the suite's own agents (``rlsuite.app.collect``), and
the D4RL / Minari HDF5 files are read and written by ``rlsuite.data.dataset_files``::

    info = DatasetInfo(env="cartpole", quality="medium", algo="ppo", seed=0)
    dataset = from_transitions(transitions, info)      # time-major [T, num_envs] Transitions
    batch = sample(dataset, key, 256)                  # dict of [256, ...] arrays; jit, vmap
    mixed = concatenate(medium, expert)                # quality "medium-expert"
    score = normalized_score(episode_returns(dataset), info.random_return, info.expert_return)

Arrays of a ``Dataset`` with N rows (one transition each, episodes in order, contiguous):
``observations`` and ``next_observations`` ``[N, *obs_shape]`` float32 (``[N, o]`` for vector
observations; ``next_observations`` is the pre-reset observation), ``actions`` ``[N,
*action_shape]`` float32 (int32 for discrete actions, ``[N]``), ``rewards`` ``[N]`` float32,
``terminals`` and ``timeouts`` (truncations) ``[N]`` bool. An episode ends at a row where
``terminals | timeouts``; rows after the last such row are an incomplete episode.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

KEYS = ("observations", "actions", "rewards", "terminals", "timeouts", "next_observations")
_CASTS = {"seed": int, "env_steps": int, "random_return": float, "expert_return": float}


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """How a dataset was made. Static metadata: hashable, and equal after a save / load.

    env: environment name. quality: e.g. ``"random"``, ``"medium"``, ``"expert"``. algo: the
    behaviour algorithm. seed, env_steps: of the run that collected it. random_return,
    expert_return: D4RL-style reference returns for ``normalized_score``. extra: free-form
    JSON-serialisable dict (stored as JSON: tuples come back as lists).
    """

    env: str
    quality: str | None = None
    algo: str | None = None
    seed: int | None = None
    env_steps: int | None = None
    random_return: float | None = None
    expert_return: float | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.env, str) or not self.env:
            raise ValueError(f"DatasetInfo.env must be a non-empty string, got {self.env!r}.")
        for name in ("quality", "algo"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"DatasetInfo.{name} must be a string or None, got {value!r}.")
        for name, cast in _CASTS.items():  # 1 and 1.0 alike: equal infos hash alike
            value = getattr(self, name)
            if value is None:
                continue
            number = isinstance(value, int | float | np.integer | np.floating)
            if isinstance(value, bool | np.bool_) or not number or not np.isfinite(value):
                raise ValueError(f"DatasetInfo.{name} must be a finite number, got {value!r}.")
            if cast is int and value != int(value):
                raise ValueError(f"DatasetInfo.{name} must be a whole number, got {value!r}.")
            object.__setattr__(self, name, cast(value))
        try:
            object.__setattr__(self, "extra", json.loads(json.dumps(dict(self.extra))))
        except (TypeError, ValueError) as e:
            raise TypeError(f"DatasetInfo.extra must be JSON-serialisable: {e}") from e

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> DatasetInfo:
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown DatasetInfo field(s) {sorted(unknown)}.")
        return cls(**values)


@struct.dataclass
class Dataset:
    """Transitions on device (shapes in the module docstring) and their static ``info``."""

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    terminals: jax.Array
    timeouts: jax.Array
    next_observations: jax.Array
    info: DatasetInfo = struct.field(pytree_node=False)

    def __len__(self) -> int:
        return int(self.rewards.shape[0])


# ----------------------------------------------------------------------------- helpers


def sample(dataset: Dataset, key: jax.Array, batch_size: int) -> dict[str, jax.Array]:
    """``batch_size`` (static) rows drawn uniformly with replacement: a dict keyed like ``KEYS``,
    every leaf ``[batch_size, ...]``. Jittable; vmap over keys for several batches."""
    idx = jax.random.randint(key, (batch_size,), 0, len(dataset))
    return {k: getattr(dataset, k)[idx] for k in KEYS}


def normalized_score(returns: Any, random_return: float | None, expert_return: float | None):
    """D4RL's normalised score ``100 * (returns - random) / (expert - random)``, elementwise:
    0 is the random policy, 100 the expert. ``returns`` is a number or an array of any shape."""
    if random_return is None or expert_return is None:
        raise ValueError(
            "normalized_score needs both reference returns, got random_return="
            f"{random_return!r}, expert_return={expert_return!r}."
        )
    if expert_return == random_return:
        raise ValueError(f"normalized_score: random_return == expert_return == {random_return}.")
    if not hasattr(returns, "shape"):
        returns = np.asarray(returns, np.float64)
    return 100.0 * (returns - random_return) / (expert_return - random_return)


def episode_returns(dataset: Dataset) -> np.ndarray:
    """Undiscounted returns ``[num_episodes]`` (float64, host) of the complete episodes, in row
    order; an episode ends at ``terminals | timeouts``, the trailing incomplete one is left out."""
    rewards = np.asarray(dataset.rewards, np.float64)
    ends = np.flatnonzero(np.asarray(dataset.terminals) | np.asarray(dataset.timeouts))
    if ends.size == 0:
        return np.zeros(0)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return np.add.reduceat(rewards[: ends[-1] + 1], starts)


def _cut_last(terminals: jax.Array, timeouts: jax.Array) -> jax.Array:
    """``timeouts`` (leading axis time) with its last row set wherever that row is not done."""
    return timeouts.at[-1].set(timeouts[-1] | ~terminals[-1])


def from_transitions(transitions: Any, info: DatasetInfo) -> Dataset:
    """A dataset from a time-major ``rlsuite.data.transition.Transition`` (leaves ``[T, num_envs,
    ...]``, e.g. from ``rlsuite.loop.rollout.rollout``).

    Rows are env-major: row ``e * T + t`` is step ``t`` of env ``e``, so each env's stream (and
    every episode in it) is contiguous. ``terminated`` / ``truncated`` become ``terminals`` /
    ``timeouts``; ``next_obs`` (pre-reset) becomes ``next_observations``. The last step of each
    stream that is not done is marked as a timeout: the collection cut that episode, its
    transitions stay valid (a timeout bootstraps from ``next_observations``) and the next env's
    stream does not continue it, so ``episode_returns`` counts it as a truncated episode.
    ``info.env_steps`` defaults to ``T * num_envs``.
    """
    reward = jnp.asarray(transitions.reward)
    if reward.ndim != 2:
        raise ValueError(f"from_transitions needs [T, num_envs] rewards, got {reward.shape}.")
    steps, envs = reward.shape
    fields = {}
    for name in ("obs", "action", "terminated", "truncated", "next_obs"):
        leaf = getattr(transitions, name)
        if not hasattr(leaf, "shape") or leaf.shape[:2] != (steps, envs):
            what = leaf.shape if hasattr(leaf, "shape") else type(leaf).__name__
            raise ValueError(
                f"from_transitions: transitions.{name} must be an array [T={steps}, "
                f"num_envs={envs}, ...], got {what} (flatten pytree observations first)."
            )
        fields[name] = jnp.asarray(leaf)
    timeouts = _cut_last(fields["terminated"].astype(bool), fields["truncated"].astype(bool))
    action = fields["action"]
    kind = jnp.float32 if jnp.issubdtype(action.dtype, jnp.floating) else jnp.int32

    def flat(x, dtype):
        return jnp.swapaxes(x, 0, 1).reshape(steps * envs, *x.shape[2:]).astype(dtype)

    if info.env_steps is None:
        info = dataclasses.replace(info, env_steps=steps * envs)
    return Dataset(
        observations=flat(fields["obs"], jnp.float32),
        actions=flat(action, kind),
        rewards=flat(reward, jnp.float32),
        terminals=flat(fields["terminated"], bool),
        timeouts=flat(timeouts, bool),
        next_observations=flat(fields["next_obs"], jnp.float32),
        info=info,
    )


def _join(a: str | None, b: str | None, sep: str) -> str | None:
    if a == b:
        return a
    return f"{a}{sep}{b}" if a is not None and b is not None else None


def _merge_info(a: DatasetInfo, b: DatasetInfo) -> DatasetInfo:
    if a.env != b.env:
        raise ValueError(f"concatenate: datasets of different envs, {a.env!r} and {b.env!r}.")
    refs = {}
    for name in ("random_return", "expert_return"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and x != y:
            raise ValueError(f"concatenate: the datasets disagree on {name} ({x} and {y}).")
        refs[name] = x if x is not None else y
    both = a.env_steps is not None and b.env_steps is not None
    return DatasetInfo(
        env=a.env,
        quality=_join(a.quality, b.quality, "-"),
        algo=_join(a.algo, b.algo, "+"),
        seed=a.seed if a.seed == b.seed else None,
        env_steps=a.env_steps + b.env_steps if both else None,
        extra={"parts": [a.to_dict(), b.to_dict()]},
        **refs,
    )


def concatenate(first: Dataset, second: Dataset) -> Dataset:
    """``first``'s rows then ``second``'s (e.g. medium + expert = medium-expert).

    ``first``'s trailing incomplete episode is cut as a timeout (see ``from_transitions``).
    Metadata: same env required; quality joined with ``-`` and algo with ``+`` where they
    differ; seed kept if equal; env_steps summed; reference returns must agree (or one is None);
    ``extra`` is ``{"parts": [first.info, second.info]}`` as dicts.
    """
    for key in KEYS:
        a, b = getattr(first, key), getattr(second, key)
        if a.shape[1:] != b.shape[1:] or a.dtype != b.dtype:
            raise ValueError(
                f"concatenate: key {key!r} is {a.dtype}{list(a.shape[1:])} per row in the first "
                f"dataset and {b.dtype}{list(b.shape[1:])} in the second."
            )
    arrays = {k: getattr(first, k) for k in KEYS}
    arrays["timeouts"] = _cut_last(first.terminals, first.timeouts)
    joined = {k: jnp.concatenate([arrays[k], getattr(second, k)]) for k in KEYS}
    return Dataset(**joined, info=_merge_info(first.info, second.info))
