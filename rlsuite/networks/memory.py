"""A policy network in the carry shape: one set of functions whether or not it has memory.

An on-policy learner (PPO, and the families built on it) reads its actor-critic through these
functions only, so its steps hold no branch on memory. A feed-forward network is a network whose
carry is `()`: it has no leaves, so its programs are the ones it had without a carry
(`rlsuite.loop.rollout`).

    network = Recurrent(RecurrentActorCritic("lstm", 64, num_actions=2))  # or FeedForward(...)
    params = network.init(key, obs_shape)
    carry = network.initial(num_envs)                         # () without memory
    (action, extras), carry = network.step(params, carry, obs, read)    # acting, obs [B, ...]
    dist, value = network.apply(params, carry, obs, starts)   # learning, a minibatch
    values = network.values_after(params, carries, next_obs)  # V(next_obs_t) [T, B]

A network's outputs are `(distribution, value)` for an actor-critic, or one array for a
Q-network (its values of every action, `[..., A]`). `step` hands them to `read` as its arguments
(sample, take the mode, or choose epsilon-greedily) and returns what it read, so a recurrent
network runs its one step as a sequence of length 1 and drops the time axis of the arrays, not of
a distribution. The last output is what a learner bootstraps from (`values_after`): `V(s')`, or
`Q(s', .)`.

What memory changes in the data a learner learns from is the network's too: a feed-forward one
learns from the rollout's steps shuffled independently (`shuffled_steps`, samples on axis 0); a
recurrent one from whole sequences of the environments, each re-run from its starting carry with
the `starts` mask (`env_sequences`, samples on axis 1).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp


def shuffled_steps(key: jax.Array, batch: dict, num_minibatches: int) -> dict:
    """PPO's minibatches: the rollout's steps (`[num_steps, num_envs, ...]` leaves) flattened,
    shuffled and split into `num_minibatches` (leaves `[num_minibatches, size, ...]`).

    A variant slices otherwise, e.g. whole sequences split along the environments for a recurrent
    policy; it keeps the leading `[num_minibatches]` axis that `learn` scans over."""
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)
    order = jax.random.permutation(key, jax.tree.leaves(flat)[0].shape[0])
    return jax.tree.map(lambda x: x[order].reshape(num_minibatches, -1, *x.shape[1:]), flat)


def env_sequences(key: jax.Array, batch: dict, num_minibatches: int) -> dict:
    """Recurrent PPO's minibatches: the environments shuffled and split into `num_minibatches`,
    each keeping its whole sequence. Leaves `[num_steps, num_envs, ...]` become
    `[num_minibatches, num_steps, num_envs / num_minibatches, ...]`; the starting carry
    (`batch["carry"]`, leaves `[num_envs, ...]`) becomes `[num_minibatches, num_envs /
    num_minibatches, ...]`. Never split along time: each sequence is re-run from its carry."""
    num_envs = jax.tree.leaves(batch["carry"])[0].shape[0]
    order = jax.random.permutation(key, num_envs)

    def split(x, axis):
        x = jnp.take(x, order, axis=axis)
        x = x.reshape(*x.shape[:axis], num_minibatches, -1, *x.shape[axis + 1 :])
        return jnp.moveaxis(x, axis, 0)

    sequences = {k: v for k, v in batch.items() if k != "carry"}
    minibatches = jax.tree.map(lambda x: split(x, 1), sequences)
    minibatches["carry"] = jax.tree.map(lambda x: split(x, 0), batch["carry"])
    return minibatches


def outputs_of(outputs) -> tuple:
    """A network's outputs as a tuple: `(distribution, value)` as it is, one array as `(q,)`."""
    return outputs if isinstance(outputs, tuple) else (outputs,)


@dataclasses.dataclass(frozen=True)
class FeedForward:
    """A network without memory, `module.apply(params, obs) -> (distribution, value)` (or `q`)
    for any leading batch shape (`rlsuite.networks.ActorCritic`, `QNetwork`), in the carry shape:
    its carry is `()` and the `starts` of a sequence are not read."""

    module: Any
    memory: ClassVar[bool] = False
    sample_axis: ClassVar[int] = 0  # where a learning minibatch's samples lie: steps
    minibatches: ClassVar = staticmethod(shuffled_steps)

    def initial(self, batch: int) -> tuple:
        return ()

    def init(self, key: jax.Array, obs_shape: tuple[int, ...]):
        return self.module.init(key, jnp.zeros((1, *obs_shape)))

    def apply(self, params, carry, obs, starts):
        return self.module.apply(params, obs)

    def step(self, params, carry, obs, read):
        return read(*outputs_of(self.module.apply(params, obs))), carry

    def values_after(self, params, carries, next_obs):
        return outputs_of(self.module.apply(params, next_obs))[-1]

    def learning_memory(self, carry, starts) -> dict:
        """What the learning batch keeps of the rollout's memory: nothing (leafless values)."""
        return {"carry": (), "starts": None}

    def minibatch_size(self, num_envs: int, num_steps: int, num_minibatches: int) -> int:
        return num_envs * num_steps // num_minibatches


@dataclasses.dataclass(frozen=True)
class Recurrent:
    """A network with memory, `module.apply(params, carry, obs [T, B, ...], starts [T, B]) ->
    (carry, carries, distribution, value)` (or `(carry, carries, q)`) and `module.initial(batch)`
    (`rlsuite.networks.recurrent.RecurrentActorCritic`, `RecurrentQNetwork`), time-major."""

    module: Any
    memory: ClassVar[bool] = True
    sample_axis: ClassVar[int] = 1  # where a learning minibatch's samples lie: environments
    minibatches: ClassVar = staticmethod(env_sequences)

    def initial(self, batch: int):
        return self.module.initial(batch)

    def init(self, key: jax.Array, obs_shape: tuple[int, ...]):
        obs, starts = jnp.zeros((1, 1, *obs_shape)), jnp.zeros((1, 1), bool)
        return self.module.init(key, self.module.initial(1), obs, starts)

    def apply(self, params, carry, obs, starts):
        """The module's outputs after its carries, as its feed-forward counterpart's."""
        outputs = self.module.apply(params, carry, obs, starts)[2:]
        return outputs if len(outputs) > 1 else outputs[0]

    def step(self, params, carry, obs, read):
        """One step of a batch `obs` `[B, ...]`: a sequence of length 1 from `carry`."""
        starts = jnp.zeros((1, jax.tree.leaves(obs)[0].shape[0]), bool)
        carry, _, *outputs = self.module.apply(params, carry, obs[None], starts)
        return jax.tree.map(lambda x: x[0], read(*outputs)), carry

    def values_after(self, params, carries, next_obs):
        """`V(next_obs_t)` `[T, B]` (or `Q(next_obs_t, .)` `[T, B, A]`), each under the memory
        after step `t` (`carries`, leaves `[T, B, ...]`, before any reset): one call of length 1
        over all `T * B` of them, so the sequence is not run again."""
        num_steps, num_envs = next_obs.shape[:2]
        merge = lambda x: x.reshape(num_steps * num_envs, *x.shape[2:])  # noqa: E731
        starts = jnp.zeros((1, num_steps * num_envs), bool)
        outputs = self.apply(params, jax.tree.map(merge, carries), merge(next_obs)[None], starts)
        values = outputs_of(outputs)[-1]
        return values.reshape(num_steps, num_envs, *values.shape[2:])

    def learning_memory(self, carry, starts) -> dict:
        """What the learning batch keeps of the rollout's memory: the carry it started from
        (`[B, ...]` leaves) and where a fresh carry replaced the one that came in (`[T, B]`)."""
        return {"carry": carry, "starts": starts}

    def minibatch_size(self, num_envs: int, num_steps: int, num_minibatches: int) -> int:
        return num_envs // num_minibatches
