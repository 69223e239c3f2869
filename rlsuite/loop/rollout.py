"""`rollout`: a `lax.scan` over a vmapped batch of environments driven by a policy function.

A policy maps `(key, obs)` for the whole batch (`obs` has a leading axis `[num_envs, ...]`) to
`(action, extras)`, where `extras` is a dict of per-environment arrays to keep with each transition
(log-probabilities, values, ...). It is usually a closure over network parameters made inside the
jitted update, e.g. `policy = lambda key, obs: agent_policy(params, key, obs)`. Where the
environment has action masks, the policy is also given the batch's masks (`action_mask=`,
`rlsuite.environment.masks`), and they are kept in the transition's `extras["action_mask"]`.

A policy with memory is a `RecurrentPolicy`: `apply(key, obs, carry) -> (action, extras, carry)`
and `initial(num_envs)`, the carry of fresh episodes. The batch keeps the carry (`EnvBatch.carry`)
and every step replaces it, per environment, by a fresh one where the episode ended
(`terminated | truncated`), or, for an environment whose `info` reports `TRIAL_END` (meta-RL: a
trial of several episodes on one task), where the trial ended. A feed-forward policy is lifted by
`recurrent` to the carry `()`, which has no leaves: its program is the one it was without a carry.

A batch may hold its own environment parameters (`EnvBatch.params`, leading axis `[num_envs]`:
tasks, levels): its rollouts step each environment with its own, and an agent that keeps the batch
in its learner state changes them between updates (`reset_each`).

On a mesh that splits one run's environments over devices (`rlsuite.loop.mesh`), a rollout
marks its batch and transitions to be split along the environments (`split_envs`); elsewhere
that changes nothing.

A batch steps with `step_batch`: the outputs of `jax.vmap(env.step)`, but the resets are computed
only on steps where some environment finished (and, with `reset_slots`, only for those
environments). `Environment.step` resets one environment with a select, which under `vmap`
computes a reset for every environment on every step; for Brax/MJX a reset is a physics
`forward`, a fifth to a third of a step's cost. With long episodes (a trained policy) most steps
of a small batch have no episode end. The skip is a `rlsuite.ops.batching.cond`, so under an outer
`vmap` (the driver's seeds) it still skips the steps on which no environment of any run finished
(a `lax.cond` would turn into a select there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.data.transition import Transition
from rlsuite.environment import Environment, StepResult, auto_reset, masks, select, split_step_key
from rlsuite.ops import batching, footprint
from rlsuite.ops.sharding import split_envs

Policy = Callable[[jax.Array, Any], tuple[jax.Array, dict]]
TRIAL_END = "trial_done"  # an `info` key: where true, a recurrent policy's carry is reset


class RecurrentPolicy(NamedTuple):
    """A policy with memory, over a batch of environments.

    apply: `(key, obs, carry) -> (action, extras, carry)`; `obs` and the carry's leaves have a
        leading axis `[num_envs]`. Where the environment has action masks it is called with
        the keyword `action_mask` too (`[num_envs, n]`, `rlsuite.environment.masks`).
    initial: `num_envs -> carry`, the carry of fresh episodes.
    """

    apply: Callable[[jax.Array, Any, Any], tuple[jax.Array, dict, Any]]
    initial: Callable[[int], Any]


def _no_carry(num_envs: int) -> tuple:
    return ()


def recurrent(policy: Policy | RecurrentPolicy) -> RecurrentPolicy:
    """`policy` as a `RecurrentPolicy`: a feed-forward one gets the carry `()`."""
    if isinstance(policy, RecurrentPolicy):
        return policy

    def apply(key, obs, carry, **mask):
        action, extras = policy(key, obs, **mask)
        return action, extras, carry

    return RecurrentPolicy(apply, _no_carry)


def reset_carry(policy: RecurrentPolicy, carry: Any, done: jax.Array) -> Any:
    """`carry` with the environments where `done` (`[num_envs]`) given a fresh carry."""
    if not jax.tree.leaves(carry):
        return carry
    return jax.vmap(select)(done, policy.initial(done.shape[0]), carry)


class EnvBatch(NamedTuple):
    """The carry of a rollout: the batch of environment states and their current observations,
    the policy's carry (`()` for a feed-forward policy) and, optionally, per-environment params
    (`None`: every environment steps with the `env_params` the rollout is given)."""

    state: Any
    obs: Any
    carry: Any = ()
    params: Any = None


def reset_batch(
    env: Environment, env_params: Any, key: jax.Array, num_envs: int, params_axis: int | None = None
) -> EnvBatch:
    """Reset `num_envs` environments with independent keys.

    `params_axis=None` shares one `env_params` across the batch; `params_axis=0` takes one set of
    params per environment (domain randomisation, task distributions, UED levels).
    """
    keys = jax.random.split(key, num_envs)
    obs, state = jax.vmap(env.reset, in_axes=(0, params_axis))(keys, env_params)
    return split_envs(EnvBatch(state, obs))


def reset_each(
    env: Environment, params: Any, key: jax.Array, policy: Policy | RecurrentPolicy | None = None
) -> EnvBatch:
    """A batch that holds `params` (leading axis `[num_envs]`, one set per environment: tasks,
    levels), reset onto them, with `policy`'s fresh carry (none without a policy).

    Its rollouts step each environment with its own params, whatever `env_params` they are given.
    """
    num_envs = jax.tree.leaves(params)[0].shape[0]
    batch = reset_batch(env, params, key, num_envs, params_axis=0)
    carry = () if policy is None else recurrent(policy).initial(num_envs)
    return batch._replace(carry=carry, params=params)


def step_batch(
    env: Environment,
    env_params: Any,
    keys: jax.Array,
    state: Any,
    action: Any,
    params_axis: int | None = None,
    reset_slots: int | None = None,
) -> StepResult:
    """One auto-resetting step of a batch, equal to `jax.vmap(env.step)` (same keys, same
    outputs), the resets computed only on steps where some environment finished.

    `keys`, `state` and `action` have a leading axis `[num_envs]` (and `env_params` one on
    `params_axis`, as in `reset_batch`). On a step where no environment finished nothing is
    reset. Otherwise, with `reset_slots=None`, the whole batch is reset and the finished
    environments take the fresh episodes (a select, as `vmap` of `env.step` does on every step).
    With `reset_slots=k`, only the finished environments are reset, `k` at a time, in as many
    rounds as they need: their indices gathered, `k` resets computed, the fresh episodes
    scattered back. That pays where a reset costs in proportion to the environments it resets
    (Brax ant, 64 envs on a 2-core CPU: rollouts 13% faster with k = 16); where it costs its
    operations whatever their size (Brax inverted_pendulum, 32 envs, k = 8), the gathers,
    scatters and extra rounds make it about 5% slower, so it is not the default.
    """
    keys_step, keys_reset = jax.vmap(split_step_key)(keys)
    num_envs = keys.shape[0]
    if reset_slots is not None and reset_slots < 1:
        raise ValueError(f"step_batch: reset_slots must be None or >= 1, got {reset_slots}")
    slots = None if reset_slots is None else min(reset_slots, num_envs)
    result = jax.vmap(env.step_without_reset, in_axes=(0, 0, 0, params_axis))(
        keys_step, state, action, env_params
    )
    reset = jax.vmap(env.reset, in_axes=(0, params_axis))

    def reset_where(done, obs, state):
        def reset_all(obs, state):
            return jax.vmap(select)(done, reset(keys_reset, env_params), (obs, state))

        def reset_in_rounds(obs, state):
            # Indices of the finished environments, then the fill (past the batch) up to a last
            # whole round.
            (finished,) = jnp.nonzero(done, size=num_envs + slots, fill_value=num_envs)
            rounds = (jnp.sum(done) + slots - 1) // slots

            def one_round(i, carry):
                index = jax.lax.dynamic_slice(finished, (i * slots,), (slots,))
                inside = jnp.minimum(index, num_envs - 1)  # the fill gathers what it never uses
                params = env_params
                if params_axis is not None:
                    params = jax.tree.map(lambda p: jnp.take(p, inside, axis=params_axis), params)
                fresh = reset(keys_reset[inside], params)
                # The scatter drops the fill's indices.
                return jax.tree.map(lambda x, f: x.at[index].set(f, mode="drop"), carry, fresh)

            return jax.lax.fori_loop(0, rounds, one_round, (obs, state))

        reset_finished = reset_all if slots is None else reset_in_rounds
        return batching.cond(jnp.any(done), reset_finished, lambda *x: x, obs, state)

    def mask_of(state):
        return masks.of_batch(env, state, env_params, params_axis)

    return auto_reset(result, reset_where, mask_of if env.has_action_mask else None)


def rollout(
    env: Environment,
    env_params: Any,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    batch: EnvBatch,
    num_steps: int,
    params_axis: int | None = None,
    reset_slots: int | None = None,
) -> tuple[EnvBatch, Transition]:
    """Step the batch `num_steps` times; returns the new carry and a time-major `Transition`.

    Every leaf of the returned `Transition` has shape `[num_steps, num_envs, ...]`. Environments
    auto-reset: `next_obs` is the pre-reset observation, and the carry's `obs` the post-reset one.
    A recurrent policy's carry is reset where an episode (or a reported trial) ended. A batch
    that holds params (`EnvBatch.params`) steps with them, on axis 0, in place of `env_params`.
    `reset_slots` is `step_batch`'s.
    """
    policy = recurrent(policy)
    if batch.params is not None:
        env_params, params_axis = batch.params, 0

    def one_step(batch: EnvBatch, key_t: jax.Array) -> tuple[EnvBatch, Transition]:
        batch = split_envs(batch)  # over the mesh's envs devices, where it has them
        key_policy, key_env = jax.random.split(key_t)
        mask = masks.of_batch(env, batch.state, env_params, params_axis)
        action, extras, carry = policy.apply(
            key_policy, batch.obs, batch.carry, **masks.keywords(mask)
        )
        extras = {**extras, **masks.keywords(mask)}
        num_envs = jax.tree.leaves(batch.obs)[0].shape[0]
        keys = jax.random.split(key_env, num_envs)
        obs, state, reward, terminated, truncated, info = step_batch(
            env, env_params, keys, batch.state, action, params_axis, reset_slots
        )
        info = dict(info)
        next_obs = info.pop("final_observation")
        transition = Transition(
            batch.obs, action, reward, terminated, truncated, next_obs, info, extras
        )
        carry = reset_carry(policy, carry, info.get(TRIAL_END, terminated | truncated))
        return split_envs((EnvBatch(state, obs, carry, batch.params), transition))

    return jax.lax.scan(one_step, batch, jax.random.split(key, num_steps))


def transition_bytes(env: Environment, env_params: Any) -> int:
    """Bytes one environment step adds to a rollout's `Transition`: its observation and next
    observation, action, reward and the two flags, from the spaces alone (nothing traced); the
    policy's extras and the info are left out, so a rollout of N steps needs at least N times
    this (checked before a run allocates it: `rlsuite.loop.runner`)."""
    obs, action = env.observation_space(env_params), env.action_space(env_params)
    shapes = [jax.ShapeDtypeStruct(space.shape, space.dtype) for space in (obs, obs, action)]
    return footprint.tree_bytes(shapes) + jnp.dtype(jnp.float32).itemsize + 2  # reward, flags


def sequence_starts(tr: Transition) -> jax.Array:
    """`[num_steps, num_envs]`: where a rollout's step began with a fresh carry, i.e. the step
    before ended an episode (or reported a trial end, `TRIAL_END`); never the first step, whose
    carry is the one the rollout started from. The rollout resets the carry at the same places."""
    ends = tr.info.get(TRIAL_END, tr.terminated | tr.truncated)
    return jnp.concatenate([jnp.zeros_like(ends[:1]), ends[:-1]])
