"""Prioritized replay (Schaul et al. 2016, arXiv:1511.05952), its proportional variant: items
are sampled in proportion to `p^alpha`, `p` the magnitude of their last loss, through a sum tree
that lives on the device with the items, so the buffer sits inside the learner state, jits, vmaps
per seed and is checkpointed with everything else, as the uniform one (`rlsuite.data.buffers`).

    buffer = prioritized_replay(capacity, alpha=0.6, beta=0.4, beta_steps=100_000)
    state = buffer.init(example_item)
    state = buffer.add(state, items, valid)          # new items at the highest priority yet
    batch = buffer.sample(state, key, batch_size)    # the items, "index" [B] and "weight" [B]
    state = buffer.update(state, batch["index"], priorities)   # after the gradient step

The sum tree: `tree [2P]` with `P` the power of two above `capacity`, the leaves `tree[P + i]`
holding each slot's `p^alpha` (0 for slots never written, and for the spare leaf `P + capacity`
that writes dropped by a `valid` mask go to), every inner node the sum of its two children. A
write sets its leaves and then recomputes their ancestors, level by level (`O(B log P)`); two
writes to one slot in a batch must agree (one sampled item's priorities do).

Sampling is stratified, as Schaul et al.'s: the total mass is cut into `B` equal segments and
one point drawn uniformly in each, found by descending the tree. The importance weights are
`(N P(i))^-beta` over the batch's largest (Dopamine's normalisation; the paper's is over the
buffer's), with `beta` annealed linearly from its start to 1 over `beta_steps` priority updates.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.data.buffers import BufferState, replay_buffer

Array = chex.Array
PyTree = Any


@struct.dataclass
class PrioritizedState:
    """The uniform buffer's storage (`items`: `data`, `insert_pos`, `size`), the sum tree of
    `p^alpha` (`tree [2P]` float32), the largest priority seen (`max_priority []`, before the
    exponent; new items get it) and the count of priority updates (`updates []` int32, which
    anneals `beta`)."""

    items: BufferState
    tree: Array
    max_priority: Array
    updates: Array

    @property
    def size(self) -> Array:
        return self.items.size


class PrioritizedReplay(NamedTuple):
    """`rlsuite.data.buffers.ReplayBuffer`'s four functions over a `PrioritizedState`, and
    `update(state, index [B], priorities [B])`, which the off-policy loop calls after each
    gradient step with the learner's per-item losses (the learner reports them as its
    `priority` metric where a batch has an `index`)."""

    init: Any
    add: Any
    sample: Any
    can_sample: Any
    update: Any


def _leaves(capacity: int) -> int:
    """The power of two above `capacity` (strictly: one spare leaf at least)."""
    return 1 << capacity.bit_length()


def set_leaves(tree: Array, slots: Array, values: Array) -> Array:
    """`tree` with the leaves of `slots [n]` set to `values [n]` and their ancestors summed
    again."""
    leaves = tree.shape[0] // 2

    def level(_, carry):
        tree, nodes = carry
        nodes = nodes // 2
        return tree.at[nodes].set(tree[2 * nodes] + tree[2 * nodes + 1]), nodes

    # a loop carrying the tree: XLA updates a loop's carry in place, where a chain of
    # scatters after the sample's reads of the same tree may copy it at each level
    nodes = leaves + slots.astype(jnp.int32)
    carry = (tree.at[nodes].set(values), nodes)
    return jax.lax.fori_loop(0, leaves.bit_length() - 1, level, carry)[0]


def find(tree: Array, mass: Array) -> Array:
    """The slot of each point of `mass [n]` in `[0, tree[1])`: the first leaf whose cumulative
    sum exceeds it, by descending the tree."""
    leaves = tree.shape[0] // 2

    def level(_, carry):
        node, mass = carry
        left = tree[2 * node]
        right = mass >= left
        return 2 * node + right.astype(jnp.int32), jnp.where(right, mass - left, mass)

    node = jnp.ones(mass.shape, jnp.int32)
    return jax.lax.fori_loop(0, leaves.bit_length() - 1, level, (node, mass))[0] - leaves


def prioritized_replay(
    capacity: int,
    alpha: float = 0.6,
    beta: float = 0.4,
    beta_steps: int = 1,
    epsilon: float = 1e-6,
) -> PrioritizedReplay:
    """A proportional prioritized buffer of `capacity` items: priorities to the power `alpha`
    (0: uniform), importance weights to `beta` annealed to 1 over `beta_steps` updates, and
    `epsilon` added to every priority so that none is 0."""
    uniform = replay_buffer(capacity)
    if not 0 <= alpha <= 1 or not 0 <= beta <= 1:
        raise ValueError(f"prioritized_replay: alpha={alpha} and beta={beta} must be in [0, 1]")
    if beta_steps < 1 or not epsilon > 0:
        raise ValueError(
            f"prioritized_replay: beta_steps={beta_steps} must be >= 1, epsilon={epsilon} > 0"
        )
    leaves = _leaves(capacity)

    def init(example_item: PyTree) -> PrioritizedState:
        one, zero = jnp.ones((), jnp.float32), jnp.zeros((), jnp.int32)
        tree = jnp.zeros((2 * leaves,), jnp.float32)
        return PrioritizedState(uniform.init(example_item), tree, one, zero)

    def add(state: PrioritizedState, batch: PyTree, valid: Array | None = None):
        items = uniform.add(state.items, batch, valid)
        count = jax.tree.leaves(batch)[0].shape[0]
        offsets = jnp.arange(count, dtype=jnp.int32)
        if valid is not None:
            offsets = jnp.cumsum(valid, dtype=jnp.int32) - 1
        slots = (state.items.insert_pos + offsets) % capacity
        value = state.max_priority**alpha
        if valid is not None:  # the dropped ones to the spare leaf, at 0
            slots = jnp.where(valid, slots, capacity)
            values = jnp.where(valid, value, 0.0)
        else:
            values = jnp.full((count,), value)
        return state.replace(items=items, tree=set_leaves(state.tree, slots, values))

    def sample(state: PrioritizedState, key: Array, batch_size: int) -> dict:
        total = state.tree[1]
        points = (jnp.arange(batch_size) + jax.random.uniform(key, (batch_size,))) / batch_size
        slots = jnp.minimum(find(state.tree, points * total), jnp.maximum(state.size - 1, 0))
        probability = state.tree[leaves + slots] / jnp.maximum(total, 1e-30)
        progress = jnp.minimum(state.updates / beta_steps, 1.0)
        exponent = beta + (1.0 - beta) * progress
        weight = (state.size * jnp.maximum(probability, 1e-30)) ** -exponent
        batch = dict(jax.tree.map(lambda d: d[slots], state.items.data))
        batch["index"] = slots
        batch["weight"] = weight / weight.max()
        return batch

    def update(state: PrioritizedState, index: Array, priorities: Array) -> PrioritizedState:
        priority = jnp.abs(jax.lax.stop_gradient(priorities)) + epsilon
        tree = set_leaves(state.tree, index, priority**alpha)
        max_priority = jnp.maximum(state.max_priority, priority.max())
        return state.replace(tree=tree, max_priority=max_priority, updates=state.updates + 1)

    def can_sample(state: PrioritizedState, batch_size: int = 1) -> Array:
        return state.size >= batch_size

    return PrioritizedReplay(init, add, sample, can_sample, update)
