"""A trajectory replay buffer on device for goal-conditioned RL: every sampled transition comes
with a future state of its own episode (contrastive RL, hindsight relabelling).

optax-style, as `rlsuite.data.buffers`: `trajectory_buffer(capacity, num_envs, gamma)` returns a
`TrajectoryBuffer` of pure functions over an explicit `TrajectoryState`; its first four functions
have the `ReplayBuffer` signatures, so it is a `buffer` of the off-policy loop::

    buffer = trajectory_buffer(capacity=1_000, num_envs=64, gamma=0.99)
    state = buffer.init(example_item)                 # a dict, leaves without a batch axis
    state = buffer.add(state, items)                  # one time step of every env, [num_envs, ...]
    batch = buffer.sample(state, key, batch_size=256) # the item's keys + future_obs, future_offset
    ready = buffer.can_sample(state, 256)

Storage is time-major, every leaf `[capacity, num_envs, ...]`: one `add` writes row `insert_pos`
(modular, no roll) and the oldest row is overwritten once full. The logical step `j` (0 = the
oldest stored row) lives in row `(oldest + j) % capacity`. Items are dicts holding at least
`next_obs`, `terminated` and `truncated` (one-step transitions; at an episode end `next_obs` is the
true final observation). Each env counts its episodes: a stored step gets its env's current
episode id, which increments after a step that terminates or truncates (both cut the same way).

Future sampling (Eysenbach et al. 2022, arXiv:2206.07568): anchors uniform over the stored
(step, env) pairs; if the anchor is transition `t` of its episode and `t + M - 1` the episode's
last stored transition, the offset `k` in `1..M` has `P(k) ~ gamma^k` and the future state is the
`next_obs` of transition `t + k - 1` (`k = M` at an ended episode: its final observation). Never
across episodes, never the anchor's own observation. The last stored step is found by a binary
search over logical steps (episode ids never decrease along an env's logical time), about
`log2(capacity)` vectorised gathers per batch; `k` by the inverse CDF of the truncated geometric.

The off-policy loop's `valid` mask: a row is written only when every item of it is valid (time
steps cannot be stored out of line). The loop passes invalid items only while an n-step window
fills (`n_step > 1`), and n-step items are not one-step transitions: `for_off_policy` refuses
`n_step > 1`, and `TrajectoryState.skipped` counts the rows a caller offered and that were not
written. Sampling an empty buffer returns zeros: gate on `can_sample`.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.ops.validators import check_int

Array = chex.Array
PyTree = Any
_OWNER = "trajectory_buffer"
REQUIRED_KEYS = ("next_obs", "terminated", "truncated")
FUTURE_KEYS = ("future_obs", "future_offset")


@struct.dataclass
class TrajectoryState:
    """Trajectory storage.

    Attributes:
      data: the item dict with every leaf `[capacity, num_envs, *leaf_shape]`.
      episode: `[capacity, num_envs]` int32, the episode id of every stored step (per env).
      next_episode: `[num_envs]` int32, the id of each env's current episode.
      insert_pos: `[]` int32, the row the next time step goes to.
      rows: `[]` int32, written rows (saturates at `capacity`).
      skipped: `[]` int32, rows offered with an invalid item, not written.
    """

    data: PyTree
    episode: Array
    next_episode: Array
    insert_pos: Array
    rows: Array
    skipped: Array

    @property
    def size(self) -> Array:
        """Stored transitions, all envs together (the loop logs it as `charts/buffer_size`)."""
        return self.rows * self.episode.shape[-1]


class TrajectoryBuffer(NamedTuple):
    """Pure functions over a `TrajectoryState` (see the module docstring)."""

    init: Callable[[PyTree], TrajectoryState]
    add: Callable[..., TrajectoryState]
    sample: Callable[[TrajectoryState, Array, int], dict]
    can_sample: Callable[..., Array]
    sample_future: Callable[[TrajectoryState, Array, Array, Array], tuple[Array, Array]]


def _check_gamma(gamma: Any) -> float:
    real = isinstance(gamma, numbers.Real) and not isinstance(gamma, bool)
    if not real or not 0.0 < float(gamma) < 1.0:
        raise ValueError(f"{_OWNER}: gamma must be a number in (0, 1), got {gamma!r}")
    return float(gamma)


def physical_row(state: TrajectoryState, step: Array) -> Array:
    """The storage row of logical step `step` (0 = the oldest stored row)."""
    capacity = state.episode.shape[0]
    return (state.insert_pos - state.rows + step) % capacity


def gather(state: TrajectoryState, step: Array, env: Array) -> dict:
    """The stored items at logical steps `step` of envs `env` (int `[B]` each), leaves
    `[B, ...]`."""
    row = physical_row(state, step)
    return jax.tree.map(lambda d: jnp.asarray(d)[row, env], state.data)


def episode_last_step(state: TrajectoryState, step: Array, env: Array) -> Array:
    """The logical step of the last stored transition of the episode of `(step, env)` (int `[B]`
    each; `step` below `state.rows`): a binary search over `[step, rows - 1]`, about
    `log2(capacity)` gathers."""
    capacity = state.episode.shape[0]
    state = jax.tree.map(jnp.asarray, state)  # (a restored state may hold NumPy arrays)
    target = state.episode[physical_row(state, step), env]

    def halve(_, bounds):
        lo, hi = bounds  # invariant: lo is in the episode, the last one is in [lo, hi]
        mid = (lo + hi + 1) // 2
        same = state.episode[physical_row(state, mid), env] == target
        return jnp.where(same, mid, lo), jnp.where(same, hi, mid - 1)

    hi = jnp.maximum(state.rows - 1, step)
    lo, _ = jax.lax.fori_loop(0, capacity.bit_length(), halve, (step, hi))
    return lo


def truncated_geometric(key: Array, gamma: float, m: Array) -> Array:
    """Offsets `k` in `1..m` (int `[B]`, `m >= 1`) with `P(k) = gamma^k / sum_{j=1..m} gamma^j`,
    by the inverse CDF: `k = 1 + floor(log(1 - u (1 - gamma^m)) / log(gamma))`, `u ~ U[0, 1)`."""
    log_gamma = math.log(gamma)
    u = jax.random.uniform(key, jnp.shape(m))
    mass = -jnp.expm1(m * log_gamma)  # 1 - gamma^m
    k = 1 + jnp.floor(jnp.log1p(-u * mass) / log_gamma)
    return jnp.clip(k, 1, m).astype(jnp.int32)


def _check_items(data: PyTree, items: PyTree, num_envs: int) -> PyTree:
    """Validates one time step of every env against the stored `data`; returns it as arrays."""
    if jax.tree.structure(items) != jax.tree.structure(data):
        raise ValueError(
            f"{_OWNER}: items do not match the example item:\n  item:  "
            f"{jax.tree.structure(data)}\n  items: {jax.tree.structure(items)}"
        )
    items = jax.tree.map(jnp.asarray, items)
    flat, _ = jax.tree_util.tree_flatten_with_path(items)
    for (path, leaf), stored in zip(flat, jax.tree.leaves(data), strict=True):
        name = jax.tree_util.keystr(path)
        if leaf.shape != (num_envs, *stored.shape[2:]):
            raise ValueError(
                f"{_OWNER}: items leaf {name} has shape {leaf.shape}, expected "
                f"[num_envs={num_envs}, *{stored.shape[2:]}]"
            )
        if leaf.dtype != stored.dtype:
            raise ValueError(
                f"{_OWNER}: items leaf {name} has dtype {leaf.dtype}, expected {stored.dtype}"
            )
    return items


class _Sizes(NamedTuple):
    """What every buffer function closes over: static ints and the discount."""

    capacity: int
    num_envs: int
    gamma: float


def _init(sizes: _Sizes, example_item: PyTree) -> TrajectoryState:
    """Empty storage shaped like `example_item`, a dict holding at least `next_obs`,
    `terminated` and `truncated` (leaves without a batch axis)."""
    if not isinstance(example_item, Mapping):
        raise ValueError(
            f"{_OWNER}: the example item must be a dict, got {type(example_item).__name__}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in example_item]
    if missing:
        raise ValueError(f"{_OWNER}: the example item has no {', '.join(missing)}")
    taken = [k for k in FUTURE_KEYS if k in example_item]
    if taken:
        raise ValueError(f"{_OWNER}: the item keys {', '.join(taken)} are what sample adds")
    capacity, num_envs = sizes.capacity, sizes.num_envs
    data = jax.tree.map(
        lambda x: jnp.zeros((capacity, num_envs, *jnp.shape(x)), jnp.asarray(x).dtype),
        example_item,
    )
    zero = jnp.zeros((), jnp.int32)
    return TrajectoryState(
        data=data,
        episode=jnp.zeros((capacity, num_envs), jnp.int32),
        next_episode=jnp.zeros((num_envs,), jnp.int32),
        insert_pos=zero,
        rows=zero,
        skipped=zero,
    )


def _writes(num_envs: int, valid: Array | None) -> Array:
    """Bool `[]`: whether a row is written, given the items' `valid` mask (or None: always)."""
    if valid is None:
        return jnp.ones((), bool)
    valid = jnp.asarray(valid)
    if valid.shape != (num_envs,) or valid.dtype != jnp.bool_:
        raise ValueError(
            f"{_OWNER}: valid must be a bool array of shape ({num_envs},), got "
            f"{valid.dtype}{list(valid.shape)}"
        )
    return jnp.all(valid)


def _add(
    sizes: _Sizes, state: TrajectoryState, items: PyTree, valid: Array | None = None
) -> TrajectoryState:
    """Writes one time step of every env (leaves `[num_envs, ...]`) as the newest row; with
    `valid` (bool `[num_envs]`) only when every item is valid (else counted in `skipped`)."""
    capacity = sizes.capacity
    state = jax.tree.map(jnp.asarray, state)  # (a restored state may hold NumPy arrays)
    items = _check_items(state.data, items, sizes.num_envs)
    write = _writes(sizes.num_envs, valid)
    # A row that is not written goes to the out-of-range row `capacity`, which "drop" discards.
    row = jnp.where(write, state.insert_pos, capacity)
    data = jax.tree.map(lambda d, x: d.at[row].set(x, mode="drop"), state.data, items)
    episode = state.episode.at[row].set(state.next_episode, mode="drop")
    ended = items["terminated"].astype(bool) | items["truncated"].astype(bool)
    step = write.astype(jnp.int32)
    return TrajectoryState(
        data=data,
        episode=episode,
        next_episode=state.next_episode + (ended & write).astype(jnp.int32),
        insert_pos=(state.insert_pos + step) % capacity,
        rows=jnp.minimum(state.rows + step, capacity),
        skipped=state.skipped + 1 - step,
    )


def _sample_future(
    sizes: _Sizes, state: TrajectoryState, key: Array, step: Array, env: Array
) -> tuple[Array, Array]:
    """For anchors at logical steps `step` of envs `env` (int `[B]`): `(offset, future_step)`,
    int32 `[B]`, the offset `k >= 1` and the logical step whose `next_obs` is the future."""
    step, env = jnp.asarray(step, jnp.int32), jnp.asarray(env, jnp.int32)
    last = episode_last_step(state, step, env)
    offset = truncated_geometric(key, sizes.gamma, last - step + 1)
    return offset, step + offset - 1


def _sample(sizes: _Sizes, state: TrajectoryState, key: Array, batch_size: int) -> dict:
    """`batch_size` (static) anchors uniform with replacement over the stored (step, env)
    pairs: the item's keys, `future_obs` (the future state) and `future_offset` (int32 `k`),
    every leaf `[batch_size, ...]`."""
    num_envs = sizes.num_envs
    state = jax.tree.map(jnp.asarray, state)
    key_anchor, key_offset = jax.random.split(key)
    index = jax.random.randint(key_anchor, (batch_size,), 0, jnp.maximum(state.rows * num_envs, 1))
    step, env = index // num_envs, index % num_envs
    offset, future_step = _sample_future(sizes, state, key_offset, step, env)
    batch = dict(gather(state, step, env))
    batch["future_obs"] = state.data["next_obs"][physical_row(state, future_step), env]
    batch["future_offset"] = offset
    return batch


def _can_sample(sizes: _Sizes, state: TrajectoryState, batch_size: int = 1) -> Array:
    """Bool array: at least `batch_size` transitions (all envs together) are stored."""
    return state.rows * sizes.num_envs >= batch_size


def trajectory_buffer(
    capacity: int, num_envs: int, gamma: float, max_episode_steps: int | None = None
) -> TrajectoryBuffer:
    """A trajectory buffer of `capacity` time steps of each of `num_envs` envs (static ints
    >= 1), sampling future offsets with discount `gamma` in (0, 1). With `max_episode_steps`,
    refuses a capacity that cannot hold one whole episode."""
    check_int(capacity, "capacity", 1, _OWNER)
    check_int(num_envs, "num_envs", 1, _OWNER)
    gamma = _check_gamma(gamma)
    if max_episode_steps is not None:
        check_int(max_episode_steps, "max_episode_steps", 1, _OWNER)
        if capacity < max_episode_steps:
            raise ValueError(
                f"{_OWNER}: capacity={capacity} is below max_episode_steps={max_episode_steps}: "
                "the buffer cannot hold one whole episode"
            )
    sizes = _Sizes(capacity, num_envs, gamma)
    return TrajectoryBuffer(
        init=functools.partial(_init, sizes),
        add=functools.partial(_add, sizes),
        sample=functools.partial(_sample, sizes),
        can_sample=functools.partial(_can_sample, sizes),
        sample_future=functools.partial(_sample_future, sizes),
    )


def for_off_policy(
    config: Any, gamma: float, max_episode_steps: int | None = None, n_step: int = 1
) -> TrajectoryBuffer:
    """The trajectory buffer for an off-policy config (`rlsuite.agents.off_policy`): its
    `buffer_size` transitions as `buffer_size // num_envs` steps of each of its `num_envs`
    envs. Refuses the loop's items of `n_step > 1` (not one-step transitions)."""
    name = type(config).__name__
    if n_step != 1:
        raise ValueError(
            f"{name}.n_step={n_step}: the trajectory buffer stores one-step transitions "
            "(their next_obs are the futures it samples); use n_step=1"
        )
    capacity = config.buffer_size // config.num_envs
    if capacity < 1:
        raise ValueError(
            f"{name}.buffer_size={config.buffer_size} holds no step of each of its "
            f"num_envs={config.num_envs} envs"
        )
    return trajectory_buffer(capacity, config.num_envs, gamma, max_episode_steps)


def her_relabel(
    state_dim: int,
    goal_indices: tuple[int, ...],
    compute_reward: Callable[[Array, Array], Array],
    relabel_prob: float = 0.8,
) -> Callable[[Array, dict], dict]:
    """Hindsight relabelling (Andrychowicz et al. 2017, arXiv:1707.01495) of batches from a
    trajectory buffer, as the off-policy loop's `relabel(key, batch) -> batch`.

    Observations are `concat(state [state_dim], goal [len(goal_indices)])` and the achieved goal
    of a state is `state[goal_indices]`. With probability `relabel_prob` per item, the goal of
    `obs` and `next_obs` becomes the achieved goal of `future_obs`, and the reward
    `compute_reward(achieved goal of next_obs, new goal)` (`[B, g], [B, g] -> [B]`): the goal is
    judged at s_{t+1}, the final observation at an episode end. The discount and the flags stay.
    """
    check_int(state_dim, "state_dim", 1, "her_relabel")
    valid = isinstance(goal_indices, tuple | list) and len(goal_indices) > 0
    valid = valid and all(
        isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= i < state_dim
        for i in goal_indices
    )
    if not valid:
        raise ValueError(
            f"her_relabel: goal_indices must be a non-empty tuple of ints in [0, state_dim="
            f"{state_dim}), got {goal_indices!r}"
        )
    if not callable(compute_reward):
        raise ValueError(
            f"her_relabel: compute_reward must be a function (achieved, desired) -> reward, "
            f"got {type(compute_reward).__name__}"
        )
    prob_ok = isinstance(relabel_prob, numbers.Real) and not isinstance(relabel_prob, bool)
    if not prob_ok or not 0.0 <= float(relabel_prob) <= 1.0:
        raise ValueError(f"her_relabel: relabel_prob must be in [0, 1], got {relabel_prob!r}")
    index = jnp.asarray(tuple(int(i) for i in goal_indices))
    obs_dim = state_dim + len(goal_indices)

    def relabel(key: Array, batch: dict) -> dict:
        for name in ("obs", "next_obs", "future_obs"):
            if batch[name].ndim != 2 or batch[name].shape[-1] != obs_dim:
                raise ValueError(
                    f"her_relabel: batch[{name!r}] has shape {batch[name].shape}, expected "
                    f"[B, state_dim + goal_dim = {obs_dim}]"
                )
        obs, next_obs = batch["obs"], batch["next_obs"]
        new_goal = jnp.take(batch["future_obs"], index, axis=-1)
        pick = jax.random.uniform(key, obs.shape[:1]) < relabel_prob
        reward = compute_reward(jnp.take(next_obs, index, axis=-1), new_goal)
        if jnp.shape(reward) != batch["reward"].shape:
            raise ValueError(
                f"her_relabel: compute_reward returned shape {jnp.shape(reward)}, expected the "
                f"reward's {batch['reward'].shape}"
            )

        def with_goal(x):
            goal = jnp.where(pick[:, None], new_goal.astype(x.dtype), x[:, state_dim:])
            return jnp.concatenate([x[:, :state_dim], goal], axis=-1)

        out = dict(batch)
        out["obs"], out["next_obs"] = with_goal(obs), with_goal(next_obs)
        out["reward"] = jnp.where(pick, reward.astype(batch["reward"].dtype), batch["reward"])
        return out

    return relabel
