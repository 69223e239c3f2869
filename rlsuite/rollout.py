"""`rollout`: a `lax.scan` over a vmapped batch of environments driven by a policy function.

A policy maps `(key, obs)` for the whole batch (`obs` has a leading axis `[num_envs, ...]`) to
`(action, extras)`, where `extras` is a dict of per-environment arrays to keep with each transition
(log-probabilities, values, ...). It is usually a closure over network parameters made inside the
jitted update, e.g. `policy = lambda key, obs: agent_policy(params, key, obs)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from rlsuite.environment import Environment
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


def rollout(
    env: Environment,
    env_params: Any,
    policy: Policy,
    key: jax.Array,
    batch: EnvBatch,
    num_steps: int,
    params_axis: int | None = None,
) -> tuple[EnvBatch, Transition]:
    """Step the batch `num_steps` times; returns the new carry and a time-major `Transition`.

    Every leaf of the returned `Transition` has shape `[num_steps, num_envs, ...]`. Environments
    auto-reset: `next_obs` is the pre-reset observation, and the carry's `obs` the post-reset one.
    """
    step = jax.vmap(env.step, in_axes=(0, 0, 0, params_axis))

    def one_step(batch: EnvBatch, key_t: jax.Array) -> tuple[EnvBatch, Transition]:
        key_policy, key_env = jax.random.split(key_t)
        action, extras = policy(key_policy, batch.obs)
        num_envs = jax.tree.leaves(batch.obs)[0].shape[0]
        keys = jax.random.split(key_env, num_envs)
        obs, state, reward, terminated, truncated, info = step(
            keys, batch.state, action, env_params
        )
        info = dict(info)
        next_obs = info.pop("final_observation")
        transition = Transition(
            batch.obs, action, reward, terminated, truncated, next_obs, info, extras
        )
        return EnvBatch(state, obs), transition

    return jax.lax.scan(one_step, batch, jax.random.split(key, num_steps))
