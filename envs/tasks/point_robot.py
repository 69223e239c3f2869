"""A 2-D point robot that must find a goal on the upper half of the unit circle (the point-robot
navigation task of MAML-RL and varibad, with a short horizon).

| item        | value                                                                         |
|-------------|-------------------------------------------------------------------------------|
| task        | `params.goal` [2] = (cos t, sin t); `sample_task`: t ~ U[angle_low, angle_high] |
|             | (default [0, pi])                                                             |
| start       | the origin, every episode                                                     |
| action      | `Box(-0.1, 0.1, (2,))`, the displacement; clipped to the box in `step_env`    |
| observation | the position, float32 [2]                                                     |
| reward      | dense: -||position - goal|| after the move (default); with `sparse`, 1 inside |
|             | `goal_radius` (0.2) and 0 outside; `info["success"]` = inside `goal_radius`   |
| episode     | `max_steps` (20) steps, then `truncated`; never `terminated`                  |

Dense by default: in 20 steps of at most 0.14 the robot cannot sweep the semicircle (length pi)
for a sparse reward, while the dense reward tells the first episode where the goal lies, so an
adapted second episode heads straight for it. `render` draws the arc of goals, the goal and the
robot, in NumPy.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas
from rlsuite.envs.tasks import check_leaf_shape

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field

MAX_STEP = 0.1  # the bound of each action component


@struct.dataclass
class PointRobotParams:
    goal: jax.Array = struct.field(default_factory=lambda: jnp.array([0.0, 1.0], jnp.float32))
    angle_low: float = 0.0
    angle_high: float = float(np.pi)
    goal_radius: float = 0.2
    sparse: bool = False


@struct.dataclass
class PointRobotState:
    position: jax.Array  # [2] float32
    time: jax.Array  # int32 scalar, steps taken in this episode


class PointRobot(Environment):
    """A point moved by clipped displacements towards `params.goal` (see the module table)."""

    def __init__(self, max_steps: int = 20):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(
                f"PointRobot: invalid max_steps={max_steps!r}; allowed: an integer >= 1"
            )
        self.max_episode_steps = max_steps  # counted in step_env (no TimeLimit needed)

    @property
    def default_params(self) -> PointRobotParams:
        """The goal at the top of the circle; draw goals with `sample_task`."""
        return PointRobotParams()

    def validate_params(self, params: PointRobotParams) -> None:
        check_leaf_shape(params, "goal", (2,), self.name)
        check_field(params, "goal_radius", lambda v: v > 0, "a value > 0", self.name)
        check_field(params, "angle_low", np.isfinite, "a finite angle (radians)", self.name)
        if not isinstance(params.angle_low, jax.core.Tracer):
            low = np.asarray(params.angle_low)  # NumPy: a jnp comparison in a trace is traced
            check_field(params, "angle_high", lambda v: v >= low, ">= angle_low", self.name)

    def reset_env(self, key: jax.Array, params: PointRobotParams):
        state = PointRobotState(jnp.zeros((2,), jnp.float32), jnp.zeros((), jnp.int32))
        return state.position, state

    def step_env(self, key, state: PointRobotState, action, params: PointRobotParams):
        position = state.position + jnp.clip(action, -MAX_STEP, MAX_STEP).astype(jnp.float32)
        state = PointRobotState(position, state.time + 1)
        distance = jnp.linalg.norm(position - params.goal)
        success = distance < params.goal_radius
        reward = jnp.where(params.sparse, success.astype(jnp.float32), -distance)
        truncated = state.time >= self.max_episode_steps
        info = {"success": success}
        return position, state, reward.astype(jnp.float32), jnp.zeros((), bool), truncated, info

    def observation_space(self, params: PointRobotParams) -> Box:
        return Box(-jnp.inf, jnp.inf, (2,))

    def action_space(self, params: PointRobotParams) -> Box:
        return Box(-MAX_STEP, MAX_STEP, (2,))

    def render(self, state: PointRobotState, params: PointRobotParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of the plane around the start, on white: the origin at
        the image's centre, x to the right and y up, `min(width, height) / 3` pixels per unit
        (the square [-1.5, 1.5]^2 fits). The arc the tasks' goals are drawn from (the unit
        circle from `angle_low` to `angle_high`; 2 px wide, light grey (200, 200, 200)), the
        start (a black disk of radius 0.03 at the origin), the goal's success disk
        (`params.goal`, under `RL2` the trial's; green (60, 170, 60), radius `goal_radius`)
        and the robot (a blue (40, 80, 220) disk of radius 0.05 at `position`)."""
        scale = min(width, height) / 3  # pixels per unit
        canvas = Canvas(width, height, (255, 255, 255))
        x, y = (canvas.x - width / 2) / scale, (height / 2 - canvas.y) / scale
        angle = np.arctan2(y, x)
        low, high = float(params.angle_low), float(params.angle_high)
        turns = np.mod(angle - low, 2 * np.pi)  # counterclockwise from angle_low
        on_arc = np.abs(np.hypot(x, y) - 1) * scale <= 1.0
        canvas.fill(on_arc & ((turns <= high - low) | (high - low >= 2 * np.pi)), (200,) * 3)

        def pixel(xy):
            px, py = np.asarray(xy, np.float64)
            return width / 2 + px * scale, height / 2 - py * scale

        canvas.disk(width / 2, height / 2, 0.03 * scale, (0, 0, 0))
        canvas.disk(*pixel(params.goal), float(params.goal_radius) * scale, (60, 170, 60))
        canvas.disk(*pixel(state.position), 0.05 * scale, (40, 80, 220))
        return canvas.image

    def __repr__(self) -> str:
        return f"PointRobot(max_steps={self.max_episode_steps})"


def sample_task(key: jax.Array, params: PointRobotParams) -> PointRobotParams:
    """`params` with goal (cos t, sin t), t ~ U[angle_low, angle_high]."""
    angle = jax.random.uniform(key, (), jnp.float32, params.angle_low, params.angle_high)
    return params.replace(goal=jnp.stack([jnp.cos(angle), jnp.sin(angle)]))
