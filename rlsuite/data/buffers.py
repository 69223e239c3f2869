"""A uniform replay buffer whose whole state is a pytree that lives on device.

optax-style: ``replay_buffer(capacity)`` returns a ``ReplayBuffer`` of pure functions over an
explicit ``BufferState``, so the buffer sits inside the learner state, jits, vmaps per seed and is
checkpointed with everything else::

    buffer = replay_buffer(capacity=100_000)
    state = buffer.init(example_transition)          # item pytree without a batch axis
    state = buffer.add(state, transitions)            # every leaf [B, ...], B static
    state = buffer.add(state, transitions, valid)     # only the items where valid [B] is True
    batch = buffer.sample(state, key, batch_size=256) # every leaf [256, ...]
    ready = buffer.can_sample(state, 256)             # bool array, for lax.cond / jnp.where

Writes are circular: slot ``(insert_pos + i) % capacity`` receives item ``i`` of a batch, so once
full the oldest items are overwritten first. With a ``valid`` mask, only the valid items are
written, in order, to consecutive slots (the others are dropped by the scatter, never stored).
Sampling is uniform with replacement over the ``size`` written slots. Sampling an empty buffer
returns slot 0 (zeros): gate on ``can_sample``.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
from flax import struct

Array = chex.Array
PyTree = Any


@struct.dataclass
class BufferState:
    """Replay storage.

    Attributes:
      data: the item pytree with every leaf ``[capacity, *leaf_shape]``.
      insert_pos: ``[]`` int32, the slot the next item goes to.
      size: ``[]`` int32, number of written slots (saturates at ``capacity``).
    """

    data: PyTree
    insert_pos: Array
    size: Array


class ReplayBuffer(NamedTuple):
    """Pure functions over a ``BufferState`` (see the module docstring). A buffer of another
    kind passed to the off-policy loop has these four functions, and its state a ``size`` (a
    ``[]`` integer array: the items it holds), as ``BufferState`` has
    (``rlsuite.agents.off_policy.make_agent``)."""

    init: Callable[[PyTree], BufferState]
    add: Callable[..., BufferState]
    sample: Callable[[BufferState, Array, int], PyTree]
    can_sample: Callable[..., Array]


def _check_batch(data: PyTree, batch: PyTree, capacity: int) -> tuple[PyTree, int]:
    """Validates ``batch`` against the stored ``data``; returns it as arrays, and its size."""
    data_def = jax.tree.structure(data)
    batch_def = jax.tree.structure(batch)
    if data_def != batch_def:
        raise ValueError(
            f"batch structure does not match the example item:\n  item:  {data_def}\n"
            f"  batch: {batch_def}"
        )
    batch = jax.tree.map(jnp.asarray, batch)
    sizes = set()
    flat, _ = jax.tree_util.tree_flatten_with_path(batch)
    for (path, leaf), stored in zip(flat, jax.tree.leaves(data), strict=True):
        name = jax.tree_util.keystr(path) or "<root>"
        if leaf.ndim < 1 or leaf.shape[1:] != stored.shape[1:]:
            raise ValueError(
                f"batch leaf {name} has shape {leaf.shape}, expected [B, *{stored.shape[1:]}]."
            )
        if leaf.dtype != stored.dtype:
            raise ValueError(f"batch leaf {name} has dtype {leaf.dtype}, expected {stored.dtype}.")
        sizes.add(leaf.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"batch leaves disagree on the leading (batch) size: {sorted(sizes)}.")
    batch_size = sizes.pop() if sizes else 0
    if batch_size > capacity:
        raise ValueError(f"batch size {batch_size} exceeds buffer capacity {capacity}.")
    return batch, batch_size


def replay_buffer(capacity: int) -> ReplayBuffer:
    """A uniform circular replay buffer holding at most ``capacity`` items (static int >= 1)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        raise ValueError(f"capacity must be a positive int, got {capacity!r}.")

    def init(example_item: PyTree) -> BufferState:
        """Empty storage shaped like ``example_item`` (leaves without a batch axis)."""
        data = jax.tree.map(
            lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), example_item
        )
        zero = jnp.zeros((), jnp.int32)
        return BufferState(data=data, insert_pos=zero, size=zero)

    def add(state: BufferState, batch: PyTree, valid: Array | None = None) -> BufferState:
        """Writes the ``B`` items of ``batch`` (leaves ``[B, ...]``) circularly; with ``valid``
        (bool ``[B]``) only the valid ones, keeping their order."""
        batch, batch_size = _check_batch(state.data, batch, capacity)
        if valid is None:
            offsets = jnp.arange(batch_size, dtype=jnp.int32)
            count = jnp.asarray(batch_size, jnp.int32)
            idx = (state.insert_pos + offsets) % capacity
        else:
            valid = jnp.asarray(valid)
            if valid.shape != (batch_size,) or valid.dtype != jnp.bool_:
                raise ValueError(
                    f"valid must be a bool array of shape ({batch_size},), got "
                    f"{valid.dtype}{list(valid.shape)}."
                )
            offsets = jnp.cumsum(valid, dtype=jnp.int32) - 1
            count = offsets[-1] + 1 if batch_size else jnp.zeros((), jnp.int32)
            # Invalid items get the out-of-range slot `capacity`, which mode="drop" discards.
            idx = jnp.where(valid, (state.insert_pos + offsets) % capacity, capacity)
        data = jax.tree.map(lambda d, b: d.at[idx].set(b, mode="drop"), state.data, batch)
        return BufferState(
            data=data,
            insert_pos=(state.insert_pos + count) % capacity,
            size=jnp.minimum(state.size + count, capacity),
        )

    def sample(state: BufferState, key: Array, batch_size: int) -> PyTree:
        """``batch_size`` (static) items drawn uniformly with replacement from written slots."""
        idx = jax.random.randint(key, (batch_size,), 0, jnp.maximum(state.size, 1))
        return jax.tree.map(lambda d: d[idx], state.data)

    def can_sample(state: BufferState, batch_size: int = 1) -> Array:
        """Bool array: at least ``batch_size`` items have been written."""
        return state.size >= batch_size

    return ReplayBuffer(init=init, add=add, sample=sample, can_sample=can_sample)
