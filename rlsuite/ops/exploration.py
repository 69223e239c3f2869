"""Exploration for value-based learners (DQN, PQN): the epsilon schedule and epsilon-greedy
action choice, over Q-values `[..., A]`, with action masks where the environment has them.

    eps = linear_epsilon(env_steps, hp, total_timesteps)      # CleanRL's linear schedule
    action = epsilon_greedy(q, key, eps, action_mask)          # int32 [...]

An agent that keeps its schedule in its learner state (so that a population or a resume carries
it) takes the hparams fields `SCHEDULE` as float32 scalars (`schedule_of`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from rlsuite.environment import masks

# The hparams fields of the linear schedule, in the order learner states keep them.
SCHEDULE = ("start_e", "end_e", "exploration_fraction")


def schedule_of(hp: Any) -> dict[str, jax.Array]:
    """`hp`'s schedule fields (`SCHEDULE`) as float32 scalars, in that order."""
    return {f: jnp.asarray(getattr(hp, f), jnp.float32) for f in SCHEDULE}


def linear_epsilon(env_steps, hp, total_timesteps: int):
    """CleanRL's linear schedule, on `hp`'s `start_e`, `end_e` and `exploration_fraction` (an
    hparams record or a learner state that holds them): `start_e` at step 0, falling linearly
    to `end_e` at `exploration_fraction * total_timesteps` environment steps, and `end_e` from
    there on (both ends exact; a fraction of 0 gives `end_e` throughout). `env_steps` None (no
    environment loop, e.g. an offline evaluation) gives `end_e`."""
    end = jnp.asarray(hp.end_e, jnp.float32)
    if env_steps is None:
        return end
    start = jnp.asarray(hp.start_e, jnp.float32)
    duration = jnp.asarray(hp.exploration_fraction, jnp.float32) * total_timesteps
    steps = jnp.asarray(env_steps, jnp.float32)
    progress = jnp.where(duration > 0, steps / jnp.maximum(duration, 1e-12), jnp.inf)
    falling = start + jnp.minimum(progress, 1.0) * (end - start)
    return jnp.where(progress >= 1.0, end, falling)


def epsilon_greedy(q, key, eps, action_mask=None):
    """A uniformly random action with probability `eps`, else the argmax of `q [..., A]`
    (the lowest index among ties), int32 `[...]`; with an `action_mask [..., A]`, both among
    the legal actions only."""
    best = jnp.argmax(masks.masked_values(q, action_mask), axis=-1).astype(jnp.int32)
    key_coin, key_action = jax.random.split(key)
    if action_mask is None:
        random = jax.random.randint(key_action, best.shape, 0, q.shape[-1])
    else:
        random = masks.uniform_legal(key_action, action_mask)
    return jnp.where(jax.random.uniform(key_coin, best.shape) < eps, random, best)
