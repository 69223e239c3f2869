"""A prioritised level buffer for unsupervised environment design (PLR, Robust PLR, ACCEL).

Pure functions over an explicit `LevelBufferState`, so the buffer sits in the learner state,
jits, vmaps over seeds and over the numeric leaves of `LevelBufferConfig`, and is checkpointed
with everything else::

    state = init(capacity, example_level, extras={"max_return": -jnp.inf})
    state, idx = insert(state, level, score, extras, config)         # idx -1: refused
    state, idxs = insert_batch(state, levels, scores, extras, config) # leaves [B, ...]
    replay = should_replay(state, key, config)                        # bool array
    state, idxs, levels = sample(state, key, n, config)               # n static
    state = update(state, idxs, new_scores, new_extras)
    idxs, scores, levels = highest(state, k)

Replay distribution (Jiang et al. 2021, "Prioritized Level Replay", arXiv:2010.03934):
`P = (1 - staleness_coeff) P_S + staleness_coeff P_C` over the filled slots, with the score part
`P_S(i) = h(S_i)^(1/T) / sum_j h(S_j)^(1/T)` (`rank`: `h = 1/rank(S_i)`, rank 1 the highest
score, ties broken by the lower slot; `proportional`: `h = max(S_i, 0)`, uniform when no score
is positive) and the staleness part
`P_C(i) = (count - timestamp_i) / sum_j (count - timestamp_j)`, uniform over the filled slots
when every level is fresh. `count` counts insert and sample events
(jaxued's `episode_count`): an insert stamps its slot with `count + 1` and advances `count`,
even when the level is refused for a low score; a non-finite score is no event at all. Rank
weights are float powers of float ranks: no integer truncation and no `1/0` (minimax issues #6
and #7).

Inserting into a full buffer replaces the slot of lowest replay weight (not always the lowest
score: staleness counts too) only when the new score is strictly higher than that slot's score.
With `config.duplicate_check` a level equal (every leaf) to a stored one updates that slot's
score, extras and timestamp instead of adding a copy. Non-finite (NaN, inf) scores are refused by
`insert` and ignored by `update`, so they are never stored or sampled.

Validation: every function taking a config calls `check_config` first, which raises on concrete
values and skips traced ones; call `check_config(config)` on a batch of configs before
`jax.vmap` or `jax.jit` to have it checked before anything is compiled.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.ops.validators import check_field, check_int

Array = chex.Array
PyTree = Any
PRIORITIZATIONS = ("rank", "proportional")
_OWNER = "level_buffer"


@struct.dataclass
class LevelBufferConfig:
    """Numeric leaves (vmappable, each a scalar or a batch of them) and static choices.

    Defaults are minimax's maze PLR settings.

    Attributes:
      replay_prob: in [0, 1], the chance that `should_replay` says replay once the buffer is warm.
      staleness_coeff: in [0, 1], the weight of the staleness part of the replay distribution.
      temperature: > 0, `T` in `h^(1/T)`; small `T` concentrates on the top scores.
      minimum_fill: in [0, 1], the fill ratio `size / capacity` below which nothing is replayed.
      prioritization: static, `"rank"` or `"proportional"`.
      duplicate_check: static, an inserted level equal to a stored one updates that slot.
    """

    replay_prob: float | Array = 0.5
    staleness_coeff: float | Array = 0.3
    temperature: float | Array = 0.3
    minimum_fill: float | Array = 0.5
    prioritization: str = struct.field(pytree_node=False, default="rank")
    duplicate_check: bool = struct.field(pytree_node=False, default=True)


@struct.dataclass
class LevelBufferState:
    """Level storage; slots `[0, size)` are filled, in insertion order, and never emptied.

    Attributes:
      levels: the level pytree with every leaf `[capacity, *leaf_shape]`.
      scores: float32 `[capacity]` (0 in empty slots).
      timestamps: int32 `[capacity]`, the `count` at the slot's last insert, update by
        duplicate or sample.
      size: int32 `[]`, the number of filled slots.
      count: int32 `[]`, insert and sample events so far.
      extras: the per-level extras pytree, leaves `[capacity, ...]` (`None` if none).
    """

    levels: PyTree
    scores: Array
    timestamps: Array
    size: Array
    count: Array
    extras: PyTree


def check_config(config: LevelBufferConfig) -> None:
    """Raise a `ValueError` naming the field and its allowed values for an invalid concrete
    config (traced leaves are skipped)."""
    if not isinstance(config, LevelBufferConfig):
        raise TypeError(f"{_OWNER}: config must be a LevelBufferConfig, got {type(config)}")
    for field in ("replay_prob", "staleness_coeff", "minimum_fill"):
        check_field(
            config, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", _OWNER, "config"
        )
    check_field(config, "temperature", lambda v: v > 0, "a value > 0", _OWNER, "config")
    if config.prioritization not in PRIORITIZATIONS:
        raise ValueError(
            f"{_OWNER}: invalid config.prioritization={config.prioritization!r}; allowed: "
            f"{', '.join(PRIORITIZATIONS)}"
        )
    if not isinstance(config.duplicate_check, bool):
        raise ValueError(
            f"{_OWNER}: invalid config.duplicate_check={config.duplicate_check!r}; allowed: "
            "True or False"
        )


def _capacity(state: LevelBufferState) -> int:
    return state.scores.shape[0]


def _filled(state: LevelBufferState) -> Array:
    return jnp.arange(_capacity(state)) < state.size


def _conform(stored: PyTree, given: PyTree, lead: tuple[int, ...], what: str) -> PyTree:
    """`given` as arrays shaped like one stored slot with `lead` axes in front, cast to the
    stored dtypes (same kind only); a `ValueError` naming the leaf otherwise."""
    if jax.tree.structure(stored) != jax.tree.structure(given):
        raise ValueError(
            f"{_OWNER}: {what} structure does not match the buffer's:\n"
            f"  stored: {jax.tree.structure(stored)}\n  given:  {jax.tree.structure(given)}"
        )
    flat, treedef = jax.tree_util.tree_flatten_with_path(given)
    out = []
    for (path, leaf), ref in zip(flat, jax.tree.leaves(stored), strict=True):
        leaf = jnp.asarray(leaf)
        name = f"{what}{jax.tree_util.keystr(path)}"
        if leaf.shape != (*lead, *ref.shape[1:]):
            raise ValueError(
                f"{_OWNER}: {name} has shape {leaf.shape}, expected {(*lead, *ref.shape[1:])}"
            )
        if not np.can_cast(leaf.dtype, ref.dtype, casting="same_kind"):
            raise ValueError(f"{_OWNER}: {name} has dtype {leaf.dtype}, expected {ref.dtype}")
        out.append(leaf.astype(ref.dtype))
    return jax.tree.unflatten(treedef, out)


def _check_extras(state: LevelBufferState, extras: PyTree, lead: tuple[int, ...]) -> PyTree:
    if (state.extras is None) != (extras is None):
        stored = "stores extras: pass them" if extras is None else "stores no extras: pass None"
        raise ValueError(f"{_OWNER}: this buffer {stored}")
    return None if extras is None else _conform(state.extras, extras, lead, "extras")


def init(capacity: int, example_level: PyTree, extras: PyTree = None) -> LevelBufferState:
    """An empty buffer of `capacity` (static int >= 1) slots shaped like `example_level`
    (one level's leaves); every slot holds `example_level` and, if given, `extras` (one
    level's extras, e.g. `{"max_return": -jnp.inf}`) until written."""
    check_int(capacity, "capacity", 1, _OWNER)

    def repeat(x):
        return jnp.repeat(jnp.asarray(x)[None], capacity, axis=0)

    return LevelBufferState(
        levels=jax.tree.map(repeat, example_level),
        scores=jnp.zeros(capacity, jnp.float32),
        timestamps=jnp.zeros(capacity, jnp.int32),
        size=jnp.zeros((), jnp.int32),
        count=jnp.zeros((), jnp.int32),
        extras=None if extras is None else jax.tree.map(repeat, extras),
    )


def _normalise(h: Array, filled: Array) -> Array:
    """`h / sum(h)`, uniform over the filled slots when the sum is 0, zeros when none is."""
    total = h.sum()
    uniform = filled / jnp.maximum(filled.sum(), 1)
    return jnp.where(total > 0, h / jnp.where(total > 0, total, 1.0), uniform)


def score_weights(state: LevelBufferState, config: LevelBufferConfig) -> Array:
    """The score part `P_S`, float32 `[capacity]` (see the module docstring)."""
    check_config(config)
    filled = _filled(state)
    temperature = jnp.asarray(config.temperature, jnp.float32)
    if config.prioritization == "rank":
        # Stable sort of -score: ties go to the lower slot; empty slots sort last.
        order = jnp.argsort(jnp.where(filled, -state.scores, jnp.inf))
        ranks = (
            jnp.zeros(_capacity(state), jnp.float32)
            .at[order]
            .set(jnp.arange(1, _capacity(state) + 1, dtype=jnp.float32))
        )
        h = jnp.where(filled, ranks ** (-1.0 / temperature), 0.0)
    else:
        positive = jnp.where(filled, jnp.maximum(state.scores, 0.0), 0.0)
        top = positive.max()
        # Divided by the top score before the power, so that a small T cannot overflow.
        h = (positive / jnp.where(top > 0, top, 1.0)) ** (1.0 / temperature)
    return _normalise(h, filled)


def _staleness(timestamps: Array, count: Array, filled: Array) -> Array:
    return _normalise(jnp.where(filled, count - timestamps, 0).astype(jnp.float32), filled)


def staleness_weights(state: LevelBufferState) -> Array:
    """The staleness part `P_C`, float32 `[capacity]` (see the module docstring)."""
    return _staleness(state.timestamps, state.count, _filled(state))


def weights(state: LevelBufferState, config: LevelBufferConfig) -> Array:
    """The replay distribution, float32 `[capacity]`: sums to 1 over the filled slots, 0 on
    empty ones (all zeros for an empty buffer)."""
    coeff = jnp.asarray(config.staleness_coeff, jnp.float32)
    return (1.0 - coeff) * score_weights(state, config) + coeff * staleness_weights(state)


def find(state: LevelBufferState, level: PyTree) -> Array:
    """The filled slot holding a level equal (every leaf) to `level`, int32, or -1."""
    level = _conform(state.levels, level, (), "level")
    cap = _capacity(state)
    equal = _filled(state)
    for stored, leaf in zip(jax.tree.leaves(state.levels), jax.tree.leaves(level), strict=True):
        equal = equal & (stored == leaf).reshape(cap, int(np.prod(leaf.shape))).all(axis=1)
    return jnp.where(equal.any(), jnp.argmax(equal), -1).astype(jnp.int32)


def insert(
    state: LevelBufferState,
    level: PyTree,
    score: Array,
    extras: PyTree,
    config: LevelBufferConfig,
) -> tuple[LevelBufferState, Array]:
    """Insert one level with its scalar `score` and `extras` (`None` if the buffer has none).

    Returns the new state and the int32 slot written (-1 if refused: a non-finite score, or a
    full buffer whose lowest-weight slot holds a score >= `score`).
    """
    check_config(config)
    level = _conform(state.levels, level, (), "level")
    extras = _check_extras(state, extras, ())
    score = jnp.asarray(score, jnp.float32)
    if score.shape != ():
        raise ValueError(f"{_OWNER}: insert takes one scalar score, got shape {score.shape}")
    cap = _capacity(state)
    valid = jnp.isfinite(score)
    full = state.size >= cap
    slot = jnp.where(full, jnp.argmin(weights(state, config)), state.size)
    beats = ~full | (score > state.scores[slot])
    duplicate = find(state, level) if config.duplicate_check else jnp.asarray(-1, jnp.int32)
    is_new = valid & (duplicate < 0) & beats
    target = jnp.where(valid & (duplicate >= 0), duplicate, jnp.where(is_new, slot, -1))
    write = jnp.where(target >= 0, target, cap)  # slot `cap` is dropped by the scatter
    count = state.count + valid.astype(jnp.int32)
    new_state = LevelBufferState(
        levels=jax.tree.map(
            lambda s, x: s.at[jnp.where(is_new, slot, cap)].set(x, mode="drop"),
            state.levels,
            level,
        ),
        scores=state.scores.at[write].set(score, mode="drop"),
        timestamps=state.timestamps.at[write].set(count, mode="drop"),
        size=state.size + (is_new & ~full).astype(jnp.int32),
        count=count,
        extras=jax.tree.map(lambda s, x: s.at[write].set(x, mode="drop"), state.extras, extras),
    )
    return new_state, target.astype(jnp.int32)


def insert_batch(
    state: LevelBufferState,
    levels: PyTree,
    scores: Array,
    extras: PyTree,
    config: LevelBufferConfig,
    valid: Array | None = None,
) -> tuple[LevelBufferState, Array]:
    """`insert` each of `B` levels (leaves `[B, ...]`, scores `[B]`) in order; items with
    `valid` (bool `[B]`) False are skipped like a NaN score. Returns the slots, int32
    `[B]`."""
    check_config(config)
    scores = jnp.asarray(scores, jnp.float32)
    if scores.ndim != 1:
        raise ValueError(f"{_OWNER}: insert_batch takes scores [B], got shape {scores.shape}")
    lead = scores.shape
    levels = _conform(state.levels, levels, lead, "levels")
    extras = _check_extras(state, extras, lead)
    if valid is not None:
        scores = jnp.where(jnp.asarray(valid, bool), scores, jnp.nan)

    def step(state, item):
        level, score, extra = item
        return insert(state, level, score, extra, config)

    return jax.lax.scan(step, state, (levels, scores, extras))


def update(
    state: LevelBufferState, indices: Array, scores: Array, extras: PyTree = None
) -> LevelBufferState:
    """Set the scores (and extras, leaves `[B, ...]`) of the slots `indices` (int `[B]`),
    in order (a repeated slot keeps the last). Entries whose score is not finite or whose index
    is not a filled slot (e.g. -1) are skipped. Timestamps are left alone (`sample` set them)."""
    indices = jnp.asarray(indices, jnp.int32)
    scores = jnp.asarray(scores, jnp.float32)
    if indices.ndim != 1 or scores.shape != indices.shape:
        raise ValueError(
            f"{_OWNER}: update takes indices and scores of one shape [B], got "
            f"{indices.shape} and {scores.shape}"
        )
    extras = _check_extras(state, extras, indices.shape)
    cap = _capacity(state)

    def step(carry, item):
        stored_scores, stored_extras = carry
        index, score, extra = item
        ok = jnp.isfinite(score) & (index >= 0) & (index < state.size)
        write = jnp.where(ok, index, cap)
        stored_extras = jax.tree.map(
            lambda s, x: s.at[write].set(x, mode="drop"), stored_extras, extra
        )
        return (stored_scores.at[write].set(score, mode="drop"), stored_extras), None

    (new_scores, new_extras), _ = jax.lax.scan(
        step, (state.scores, state.extras), (indices, scores, extras)
    )
    return state.replace(scores=new_scores, extras=new_extras)


def should_replay(state: LevelBufferState, key: Array, config: LevelBufferConfig) -> Array:
    """Bool array: the buffer is non-empty, filled to at least `minimum_fill` of its capacity,
    and a uniform draw falls below `replay_prob`."""
    check_config(config)
    fill = state.size.astype(jnp.float32) / _capacity(state)
    warm = (state.size > 0) & (fill >= jnp.asarray(config.minimum_fill, jnp.float32))
    return warm & (jax.random.uniform(key) < jnp.asarray(config.replay_prob, jnp.float32))


def sample(
    state: LevelBufferState, key: Array, n: int, config: LevelBufferConfig
) -> tuple[LevelBufferState, Array, PyTree]:
    """Draw `n` (static) levels one after another from `weights`: each draw stamps its slot
    with `count + 1` and advances `count`, so later draws see the new staleness (jaxued's
    `sample_replay_levels`). Returns the state, int32 slots `[n]` and the levels (leaves
    `[n, ...]`). An empty buffer is left unchanged and gives slots -1 with the placeholder
    level of slot 0: gate on `should_replay`."""
    check_config(config)
    check_int(n, "n", 1, _OWNER)
    filled = _filled(state)
    score_part = score_weights(state, config)
    coeff = jnp.asarray(config.staleness_coeff, jnp.float32)

    def draw(carry, key):
        timestamps, count = carry
        p = (1.0 - coeff) * score_part + coeff * _staleness(timestamps, count, filled)
        index = jax.random.categorical(key, jnp.log(p)).astype(jnp.int32)
        return (timestamps.at[index].set(count + 1), count + 1), index

    (timestamps, count), indices = jax.lax.scan(
        draw, (state.timestamps, state.count), jax.random.split(key, n)
    )
    some = state.size > 0
    indices = jnp.where(some, indices, -1)
    new_state = state.replace(
        timestamps=jnp.where(some, timestamps, state.timestamps),
        count=jnp.where(some, count, state.count),
    )
    levels = jax.tree.map(lambda x: x[jnp.maximum(indices, 0)], state.levels)
    return new_state, indices, levels


def highest(state: LevelBufferState, k: int) -> tuple[Array, Array, PyTree]:
    """The `k` (static, <= capacity) highest-scored filled levels, best first (ties: lower
    slot first): int32 slots `[k]`, scores `[k]` and levels (leaves `[k, ...]`). Beyond
    `size` the slot is -1, the score -inf and the level the placeholder of slot 0."""
    check_int(k, "k", 1, _OWNER)
    if k > _capacity(state):
        raise ValueError(f"{_OWNER}: k must be <= capacity {_capacity(state)}, got {k}")
    top, indices = jax.lax.top_k(jnp.where(_filled(state), state.scores, -jnp.inf), k)
    present = jnp.arange(k) < state.size
    indices = jnp.where(present, indices, -1).astype(jnp.int32)
    levels = jax.tree.map(lambda x: x[jnp.maximum(indices, 0)], state.levels)
    return indices, jnp.where(present, top, -jnp.inf), levels
