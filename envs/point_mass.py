"""A 2-D point mass that must reach a goal: the suite's small goal-conditioned task.

The agent pushes a damped point mass in the square arena `[-arena_size, arena_size]^2`. The goal is
drawn at reset, uniformly from the box `[goal_low, goal_high]` (set `goal_low == goal_high` for a
fixed goal, or vmap over them for a curriculum of levels). It is part of the state and of the
observation `[position (2), velocity (2), goal (2)]`, and `info` reports `achieved_goal` (the
position) and `desired_goal`, so goal-conditioned agents can relabel with
`PointMass.compute_reward`: it follows the goal contract of `rlsuite.envs.goal` (state
`[position, velocity]`, `goal_indices = (0, 1)`, threshold `params.goal_radius`).

Reward: `success - distance_cost * ||position - goal||` where `success = 1` within `goal_radius`
(sparse by default). Episodes never terminate; the time limit (`max_episode_steps = 100`) truncates.
Dynamics (semi-implicit Euler, per step):
    velocity <- clip((1 - damping) * velocity + dt * max_accel * clip(action, -1, 1), +-max_speed)
    position <- clip(position + dt * velocity, +-arena_size); velocity is zeroed against a wall.
`render` draws the arena, the goal's disk and the point, in NumPy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import arena

from rlsuite.environment.goal import GoalEnvironment
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field, check_positive


@struct.dataclass
class PointMassParams:
    dt: float = 0.1
    max_accel: float = 2.0
    max_speed: float = 2.0
    damping: float = 0.1
    arena_size: float = 2.0
    start_range: float = 0.5
    goal_low: jax.Array = struct.field(default_factory=lambda: jnp.full((2,), -1.5))
    goal_high: jax.Array = struct.field(default_factory=lambda: jnp.full((2,), 1.5))
    goal_radius: float = 0.2
    distance_cost: float = 0.0


@struct.dataclass
class PointMassState:
    position: jax.Array
    velocity: jax.Array
    goal: jax.Array


class PointMass(GoalEnvironment):
    state_dim = 4
    goal_indices = (0, 1)
    max_episode_steps = 100

    @property
    def default_params(self) -> PointMassParams:
        return PointMassParams()

    def validate_params(self, params: PointMassParams) -> None:
        check_positive(
            params, "dt", "max_accel", "max_speed", "arena_size", "goal_radius", owner=self.name
        )
        check_field(
            params, "damping", lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", self.name
        )
        check_field(params, "start_range", lambda v: v >= 0, "a value >= 0", self.name)
        check_field(params, "distance_cost", lambda v: v >= 0, "a value >= 0", self.name)
        for field in ("goal_low", "goal_high"):
            check_field(
                params, field, lambda v: v.shape[-1:] == (2,), "an array of shape (2,)", self.name
            )
        if not isinstance(params.goal_low, jax.core.Tracer):  # (require skips a traced goal_high)
            # NumPy on both sides: inside a trace a jnp comparison of constants is traced too.
            low = np.asarray(params.goal_low)
            check_field(params, "goal_high", lambda v: v >= low, ">= goal_low", self.name)

    def reset_env(self, key: jax.Array, params: PointMassParams):
        key_start, key_goal = jax.random.split(key)
        position = jax.random.uniform(
            key_start, (2,), minval=-params.start_range, maxval=params.start_range
        )
        goal = jax.random.uniform(key_goal, (2,), minval=params.goal_low, maxval=params.goal_high)
        state = PointMassState(position, jnp.zeros(2), goal.astype(jnp.float32))
        return self._observation(state), state

    def step_env(self, key, state: PointMassState, action, params: PointMassParams):
        force = jnp.clip(action, -1.0, 1.0)
        velocity = (1.0 - params.damping) * state.velocity + params.dt * params.max_accel * force
        velocity = jnp.clip(velocity, -params.max_speed, params.max_speed)
        unclipped = state.position + params.dt * velocity
        position = jnp.clip(unclipped, -params.arena_size, params.arena_size)
        velocity = jnp.where(position == unclipped, velocity, 0.0)
        state = PointMassState(position, velocity, state.goal)
        reward = self.compute_reward(position, state.goal, params)
        info = {
            "achieved_goal": position,
            "desired_goal": state.goal,
            "success": self.success(position, state.goal, params),
        }
        false = jnp.zeros((), bool)
        return self._observation(state), state, reward, false, false, info

    def goal_threshold(self, params: PointMassParams) -> jax.Array:
        return params.goal_radius

    @staticmethod
    def success(achieved_goal, desired_goal, params: PointMassParams) -> jax.Array:
        return jnp.linalg.norm(achieved_goal - desired_goal, axis=-1) < params.goal_radius

    @classmethod
    def compute_reward(cls, achieved_goal, desired_goal, params: PointMassParams) -> jax.Array:
        """Reward for reaching `achieved_goal` when `desired_goal` was asked (for relabelling)."""
        distance = jnp.linalg.norm(achieved_goal - desired_goal, axis=-1)
        success = cls.success(achieved_goal, desired_goal, params).astype(jnp.float32)
        return (success - params.distance_cost * distance).astype(jnp.float32)

    @staticmethod
    def _observation(state: PointMassState) -> jax.Array:
        return jnp.concatenate([state.position, state.velocity, state.goal]).astype(jnp.float32)

    def observation_space(self, params: PointMassParams) -> Box:
        # Bounds depend on params that may be traced (vmapped levels), so none are claimed here.
        return Box(-jnp.inf, jnp.inf, (6,))

    def action_space(self, params: PointMassParams) -> Box:
        return Box(-1.0, 1.0, (2,))

    def render(self, state: PointMassState, params: PointMassParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`: the arena `[-arena_size, arena_size]^2` (white) as
        the largest square the image holds at 0.9 of its size, centred, grey (90, 90, 90)
        around it; x to the right, y up. On it the goal's success disk (green (60, 170, 60),
        radius `goal_radius`) and the point (blue (40, 80, 220), radius 0.04 of the arena's
        side)."""
        half, radius = params.arena_size, params.goal_radius
        return arena(width, height, half, state.position, state.goal, radius)
