"""`evaluate`: run a fixed number of episodes inside `jit`; per-episode returns and lengths.

All episodes run side by side (a vmapped batch), each until its first episode end; the loop stops as
soon as all have ended or after `max_steps`. No episode is reset: the steps are
`Environment.step_without_reset` with the keys `step` would use (so the episodes are those an
auto-resetting step gives, bitwise), and an episode that has ended keeps its last state while the
others go on. A fresh start state per step, computed and thrown away, is what a batched
auto-reset would cost here (a full MJX `forward` per step for Brax). Works under `jax.vmap` over
seeds (or over policy parameters closed over by the policy). Whether the policy is deterministic
is the policy's business: pass e.g. `lambda key, obs: (agent.act(state, obs, key, True), {})`, or
`rlsuite.loop.agent.policy(agent, state, True)`. A `RecurrentPolicy` starts every episode from its
fresh carry and keeps it through the episode (no episode is reset here).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.environment import Environment, select, split_step_key
from rlsuite.loop.rollout import Policy, RecurrentPolicy, recurrent, reset_batch


class EvalResult(NamedTuple):
    """Per-episode results, each of shape `[num_episodes]`."""

    returns: jax.Array  # undiscounted return, float32
    lengths: jax.Array  # steps taken, int32
    finished: jax.Array  # False where the episode was still running after `max_steps`


def evaluate(
    env: Environment,
    env_params: Any,
    policy: Policy | RecurrentPolicy,
    key: jax.Array,
    num_episodes: int,
    max_steps: int | None = None,
    params_axis: int | None = None,
) -> EvalResult:
    """Run `policy` (`(key, obs_batch) -> (action_batch, extras)`, or a `RecurrentPolicy`) for
    `num_episodes` episodes.

    `max_steps` defaults to the environment's `max_episode_steps` (set by `TimeLimit`).
    """
    if max_steps is None:
        max_steps = getattr(env, "max_episode_steps", None)
        if max_steps is None:
            raise ValueError(
                f"evaluate: {env.name} has no max_episode_steps (no TimeLimit); pass max_steps"
            )
    if int(num_episodes) < 1:
        raise ValueError(f"evaluate: num_episodes must be >= 1, got {num_episodes}")
    env_params = env.check_params(env_params)
    policy = recurrent(policy)
    key, key_reset = jax.random.split(key)
    batch = reset_batch(env, env_params, key_reset, num_episodes, params_axis)
    batch = batch._replace(carry=policy.initial(num_episodes))

    def step_or_stay(key, state, obs, action, params, running):
        new_obs, new_state, reward, terminated, truncated, _ = env.step_without_reset(
            split_step_key(key)[0], state, action, params
        )
        state, obs = select(running, (new_state, new_obs), (state, obs))
        return state, obs, reward, terminated, truncated

    step = jax.vmap(step_or_stay, in_axes=(0, 0, 0, 0, params_axis, 0))
    zeros = jnp.zeros((num_episodes,), jnp.float32)
    running = jnp.ones((num_episodes,), bool)
    lengths = jnp.zeros((num_episodes,), jnp.int32)

    def cond(loop):
        _, _, running, _, _, t = loop
        return jnp.any(running) & (t < max_steps)

    def body(loop):
        batch, key, running, returns, lengths, t = loop
        key, key_policy, key_env = jax.random.split(key, 3)
        action, _, carry = policy.apply(key_policy, batch.obs, batch.carry)
        keys = jax.random.split(key_env, num_episodes)
        state, obs, reward, terminated, truncated = step(
            keys, batch.state, batch.obs, action, env_params, running
        )
        returns = returns + jnp.where(running, reward, 0.0)
        lengths = lengths + running.astype(jnp.int32)
        running = running & ~(terminated | truncated)
        batch = batch._replace(state=state, obs=obs, carry=carry)
        return batch, key, running, returns, lengths, t + 1

    loop = (batch, key, running, zeros, lengths, jnp.zeros((), jnp.int32))
    _, _, running, returns, lengths, _ = jax.lax.while_loop(cond, body, loop)
    return EvalResult(returns, lengths, ~running)
