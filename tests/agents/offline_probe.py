"""Datasets of the continuous action-reward probe for the offline agents' tests: one-step
episodes, observation 0, reward -(a - 0.5)^2 for actions in [-1, 1], so the best action is 0.5."""

import jax
import jax.numpy as jnp

from rlsuite import envs
from rlsuite.data.datasets import DatasetInfo, from_transitions
from rlsuite.loop import driver
from rlsuite.loop.rollout import reset_batch, rollout

PROBE = "probe/action_reward"  # one-step episodes, obs 0, reward -(a - 0.5)^2, a in [-1, 1]

train_jit = jax.jit(driver.train, static_argnums=(0, 3))

OBS = jnp.zeros((1, 1))

SMALL = {"num_updates": 4, "gradient_steps": 5, "batch_size": 16, "hidden_sizes": (8,)}


def probe_dataset(behaviour, key, num_envs=8, steps=250):
    """2,000 transitions of the continuous action-reward probe under `behaviour(key, shape)`."""
    env, params = envs.make(PROBE, continuous=True)
    key_reset, key_rollout = jax.random.split(key)
    batch = reset_batch(env, params, key_reset, num_envs)
    _, tr = rollout(
        env, params, lambda k, obs: (behaviour(k, (num_envs, 1)), {}), key_rollout, batch, steps
    )
    return from_transitions(tr, DatasetInfo(env=PROBE, quality="probe", algo="scripted"))
