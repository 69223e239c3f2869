"""Learning in epochs of minibatches, as the collect-then-learn families (PPO, PQN) learn from
each rollout: the epochs' loop and the step size's linear decay over a run.

    lr = linear_decay(hp.learning_rate, state.update_step, config.num_updates, config.anneal_lr)
    carry, metrics = epochs(carry, key, config.update_epochs, slices, step)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def linear_decay(value, step, num_steps: int, anneal: bool = True):
    """`value` decayed linearly from itself at step 0 to 0 at `num_steps` (and 0 after), as
    float32; without `anneal`, `value` throughout."""
    if not anneal:
        return jnp.asarray(value, jnp.float32)
    return value * jnp.maximum(1.0 - step / num_steps, 0.0)


def epochs(carry: Any, key: jax.Array, num_epochs: int, slices: Callable, step: Callable):
    """`(carry, metrics)` after `num_epochs` epochs, each a `lax.scan` of `step(carry, x) ->
    (carry, metrics)` over `slices(epoch_key)` (the epoch's minibatches, and what else each
    step takes, stacked on a leading axis). The epochs' keys are `jax.random.split(key,
    num_epochs)`; the metrics are the means over every step of every epoch."""

    def epoch(carry, key):
        return jax.lax.scan(step, carry, slices(key))

    carry, metrics = jax.lax.scan(epoch, carry, jax.random.split(key, num_epochs))
    return carry, jax.tree.map(jnp.mean, metrics)
