"""`rollout`: a `lax.scan` over a vmapped batch of environments driven by a policy function.

A policy maps `(key, obs)` for the whole batch (`obs` has a leading axis `[num_envs, ...]`) to
`(action, extras)`, where `extras` is a dict of per-environment arrays to keep with each transition
(log-probabilities, values, ...). It is usually a closure over network parameters made inside the
jitted update, e.g. `policy = lambda key, obs: agent_policy(params, key, obs)`.

A batch steps with `step_batch`: the outputs of `jax.vmap(env.step)`, but the resets are computed
only for the environments that finished. `Environment.step` resets one environment with a select,
which under `vmap` computes a reset for every environment on every step; for Brax/MJX a reset is a
physics `forward`, a fifth to a third of a step's cost. With long episodes (a trained policy) most
steps of a small batch have no episode end, and with short ones (early in training) a few of the
batch end on each step. The decisions are `rlsuite.batching.cond`s, so under an outer `vmap` (the
driver's seeds) they still skip what no run of the batch needs (a `lax.cond` would turn into a
select there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite import batching
from rlsuite.environment import Environment, StepResult, auto_reset, select, split_step_key
from rlsuite.transition import Transition

Policy = Callable[[jax.Array, Any], tuple[jax.Array, dict]]


class EnvBatch(NamedTuple):
    """The carry of a rollout: the batch of environment states and their current observations."""

    state: Any
    obs: Any


def reset_batch(
    env: Environment, env_params: Any, key: jax.Array, num_envs: int, params_axis: int | None = None
) -> EnvBatch:
    """Reset `num_envs` environments with independent keys.

    `params_axis=None` shares one `env_params` across the batch; `params_axis=0` takes one set of
    params per environment (domain randomisation, task distributions, UED levels).
    """
    keys = jax.random.split(key, num_envs)
    obs, state = jax.vmap(env.reset, in_axes=(0, params_axis))(keys, env_params)
    return EnvBatch(state, obs)


def default_reset_slots(num_envs: int) -> int:
    """How many environments `step_batch` resets by themselves before it resets the whole batch:
    a quarter of the batch (at least one)."""
    return max(1, num_envs // 4)


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
    outputs), the resets computed only for the environments that finished.

    `keys`, `state` and `action` have a leading axis `[num_envs]` (and `env_params` one on
    `params_axis`, as in `reset_batch`). On a step where no environment finished nothing is
    reset. Where at most `reset_slots` finished (default: `default_reset_slots(num_envs)`), their
    indices are gathered and only they are reset, the fresh episodes scattered back. Where more
    finished, the whole batch is reset and the finished ones selected (as `vmap` of `env.step`
    does on every step).
    """
    keys_step, keys_reset = jax.vmap(split_step_key)(keys)
    num_envs = keys.shape[0]
    slots = default_reset_slots(num_envs) if reset_slots is None else reset_slots
    if slots < 1:
        raise ValueError(f"step_batch: reset_slots must be >= 1, got {reset_slots}")
    result = jax.vmap(env.step_without_reset, in_axes=(0, 0, 0, params_axis))(
        keys_step, state, action, env_params
    )
    reset = jax.vmap(env.reset, in_axes=(0, params_axis))

    def reset_where(done, obs, state):
        def reset_all(obs, state):
            return jax.vmap(select)(done, reset(keys_reset, env_params), (obs, state))

        def reset_some(obs, state):
            (index,) = jnp.nonzero(done, size=slots, fill_value=num_envs)
            inside = jnp.minimum(index, num_envs - 1)  # the fill gathers a key it never uses
            params = env_params
            if params_axis is not None:
                params = jax.tree.map(lambda p: jnp.take(p, inside, axis=params_axis), params)
            fresh = reset(keys_reset[inside], params)
            # Indices past the batch (the fill) are dropped by the scatter.
            return jax.tree.map(lambda x, f: x.at[index].set(f, mode="drop"), (obs, state), fresh)

        def reset_finished(obs, state):
            if slots >= num_envs:
                return reset_all(obs, state)
            few = jnp.sum(done) <= slots
            return batching.cond(few, reset_some, reset_all, obs, state)

        return batching.cond(jnp.any(done), reset_finished, lambda *x: x, obs, state)

    return auto_reset(result, reset_where)


def rollout(
    env: Environment,
    env_params: Any,
    policy: Policy,
    key: jax.Array,
    batch: EnvBatch,
    num_steps: int,
    params_axis: int | None = None,
    reset_slots: int | None = None,
) -> tuple[EnvBatch, Transition]:
    """Step the batch `num_steps` times; returns the new carry and a time-major `Transition`.

    Every leaf of the returned `Transition` has shape `[num_steps, num_envs, ...]`. Environments
    auto-reset: `next_obs` is the pre-reset observation, and the carry's `obs` the post-reset one.
    `reset_slots` is `step_batch`'s.
    """

    def one_step(batch: EnvBatch, key_t: jax.Array) -> tuple[EnvBatch, Transition]:
        key_policy, key_env = jax.random.split(key_t)
        action, extras = policy(key_policy, batch.obs)
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
        return EnvBatch(state, obs), transition

    return jax.lax.scan(one_step, batch, jax.random.split(key, num_steps))
