"""`Transition`: what a rollout produces and what every learner consumes.

`next_obs` is the observation the step led to *before* any auto-reset, so a truncated step can be
bootstrapped from `V(next_obs)`. Bootstrapping rules (see `rlsuite.ops.returns`): a TD target uses
`(1 - terminated)`; an eligibility trace is cut by `terminated | truncated`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax


class Transition(NamedTuple):
    """One step (or a batch / time-major stack of steps: every leaf gains the same leading axes).

    obs: observation the action was taken in.
    action: the action taken.
    reward: reward of the step, float32.
    terminated: the episode ended in a terminal state (no bootstrap), bool.
    truncated: the episode was cut (time limit), bool: bootstrap from `next_obs` unless
      `terminated` is also set (a termination on the limit step reports both, as in
      gymnasium; the termination wins: no bootstrap).
    next_obs: pre-reset observation after the step.
    info: the environment's `info` without `final_observation` (that is `next_obs`).
    extras: what the policy returned besides the action (log-probabilities, values, ...).
    """

    obs: Any
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: Any
    info: dict = {}
    extras: dict = {}

    @property
    def done(self) -> jax.Array:
        """`terminated | truncated`: the step ended an episode."""
        return self.terminated | self.truncated
