"""`goal/point_reach`: a point in the square arena `[-arena_size, arena_size]^2` that must reach a
goal.

| item        | value                                                                          |
|-------------|--------------------------------------------------------------------------------|
| state       | the position [2]; `goal_indices = (0, 1)`                                      |
| start, goal | uniform over `[start_low, start_high]` and `[goal_low, goal_high]` (default:   |
|             | the arena [-1, 1]^2), drawn independently at every reset                       |
| action      | `Box(-1, 1, (2,))`, clipped to the box                                         |
| dynamics    | `x' = clip(x + step_size * clip(a, -1, 1), -arena_size, arena_size)` (0.1, 1)  |
| reward      | sparse: 1.0 where `||x' - goal|| < goal_threshold` (0.1), else 0.0             |
| observation | `concat(position, goal)`, float32 [4]                                          |
| episode     | 50 steps (`max_episode_steps`, a `TimeLimit` truncation); never terminated     |

`render` draws the arena, the goal's disk and the point, in NumPy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import arena

from rlsuite.environment.goal import GoalEnvironment, GoalState
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field, check_positive


def _corner(value: float):
    return struct.field(default_factory=lambda: jnp.full((2,), value, jnp.float32))


@struct.dataclass
class PointReachParams:
    step_size: float = 0.1
    arena_size: float = 1.0
    start_low: jax.Array = _corner(-1.0)
    start_high: jax.Array = _corner(1.0)
    goal_low: jax.Array = _corner(-1.0)
    goal_high: jax.Array = _corner(1.0)
    goal_threshold: float = 0.1


class PointReach(GoalEnvironment):
    """A point moved by bounded displacements towards a goal (see the module table)."""

    state_dim = 2
    goal_indices = (0, 1)
    max_episode_steps = 50

    @property
    def default_params(self) -> PointReachParams:
        return PointReachParams()

    def validate_params(self, params: PointReachParams) -> None:
        check_positive(params, "step_size", "arena_size", "goal_threshold", owner=self.name)
        for low, high in (("start_low", "start_high"), ("goal_low", "goal_high")):
            for field in (low, high):
                check_field(
                    params,
                    field,
                    lambda v: v.shape[-1:] == (2,),
                    "an array of shape (2,)",
                    self.name,
                )
            if not isinstance(getattr(params, low), jax.core.Tracer):
                # NumPy on both sides: inside a trace a jnp comparison of constants is traced.
                bound = np.asarray(getattr(params, low))
                check_field(params, high, lambda v, bound=bound: v >= bound, f">= {low}", self.name)

    def sample_start(self, key: jax.Array, params: PointReachParams) -> jax.Array:
        return jax.random.uniform(key, (2,), minval=params.start_low, maxval=params.start_high)

    def sample_goal(self, key: jax.Array, params: PointReachParams) -> jax.Array:
        return jax.random.uniform(key, (2,), minval=params.goal_low, maxval=params.goal_high)

    def move(self, key, state: jax.Array, action: jax.Array, params: PointReachParams):
        moved = state + params.step_size * jnp.clip(action, -1.0, 1.0)
        return jnp.clip(moved, -params.arena_size, params.arena_size)

    def action_space(self, params: PointReachParams) -> Box:
        return Box(-1.0, 1.0, (2,))

    def render(self, state: GoalState, params: PointReachParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`: the arena `[-arena_size, arena_size]^2` (white) as
        the largest square the image holds at 0.9 of its size, centred, grey (90, 90, 90)
        around it; x to the right, y up. On it the goal's success disk (green (60, 170, 60),
        radius `goal_threshold`) and the point (blue (40, 80, 220), radius 0.04 of the
        arena's side)."""
        half, radius = params.arena_size, params.goal_threshold
        return arena(width, height, half, state.state, state.goal, radius)
