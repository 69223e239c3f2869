"""`split_envs`: mark the environment (or minibatch) axis of arrays to be split over the devices of
the mesh's `ENVS` axis, inside a program the driver runs on a two-axis mesh (`rlsuite.loop.mesh`).

One large run spreads its environment batch, its replay buffer and its minibatches over the
devices of `ENVS`, and keeps its parameters whole on each (docs/scaling.md). The program is the
one-device program: JAX's partitioner (sharded `jit`) splits the arrays that `split_envs` marks
and adds the communication the mathematics needs, above all one all-reduce of the gradients of each
gradient step, where a loss's mean over the split minibatch becomes a sum over the devices. So a
split run computes what the one-device run computes, to float tolerance (sums taken in another
order), whatever the agent.

An agent marks, where it builds them: the environment batch of a rollout (`rlsuite.loop.rollout`
does it for every agent), the storage of a replay buffer, and each minibatch it learns from. Away
from such a mesh (no context mesh, or one whose `ENVS` axis has one device), `split_envs` returns
its argument: the program is unchanged.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import PartitionSpec

ENVS = "envs"  # the mesh axis one run's environments and minibatches are split over


def envs_split() -> int:
    """The number of devices the context mesh splits environments over (1: not split)."""
    mesh = jax.sharding.get_abstract_mesh()
    if ENVS not in mesh.axis_names:
        return 1
    return mesh.shape[ENVS]


def split_envs(tree: Any, axis: int = 0) -> Any:
    """`tree` with `axis` of each array leaf constrained to be split over the `ENVS` devices.

    A leaf without that axis (a scalar: a buffer's insert position) or whose length there the
    device count does not divide is left to the partitioner (it stays whole where nothing else
    splits it). Without an `ENVS` split in the context mesh, `tree` itself.
    """
    count = envs_split()
    if count == 1:
        return tree
    spec = PartitionSpec(*([None] * axis), ENVS)

    def one(x):
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) <= axis or shape[axis] % count:
            return x
        return jax.lax.with_sharding_constraint(x, spec)

    return jax.tree.map(one, tree)
