"""`goal/ant`, `goal/ant_u_maze`, `goal/ant_big_maze`, `goal/ant_hardest_maze`: Brax's ant on MJX
that must bring its torso to a goal in the plane (JaxGCRL's `ant` and `ant_*maze` tasks).

| item        | value                                                                          |
|-------------|--------------------------------------------------------------------------------|
| robot       | Brax's ant (`BraxEnv("ant")` on MJX), actions `Box(-1, 1, (8,))` (8 hinges),   |
|             | dt = 0.05 (5 MJX steps of 0.01)                                                |
| state       | [29]: `q` [15] = torso x, y, z (0-2), torso quaternion w, x, y, z (3-6), the 8 |
|             | hinge angles (7-14); `qd` [14] = torso linear (15-17) and angular (18-20)      |
|             | velocity, the 8 hinge velocities (21-28): Brax's ant observation with the      |
|             | torso x, y kept; `goal_indices = (0, 1)`, the torso x, y                       |
| start       | the torso at the start's x, y exactly; the rest of `q` Brax's initial pose     |
|             | plus U[-reset_noise, reset_noise], `qd` ~ reset_noise * N(0, 1) (0.1, Brax's)  |
| goal        | `AntGoal`: the start (the origin) + `goal_distance` (10) (cos t, sin t),       |
|             | t ~ U[0, 2 pi); mazes: the centre of a 'G' cell drawn uniformly, the start the |
|             | centre of an 'R' cell, as the point mazes (`point_maze.LAYOUTS`; cell (i, j)   |
|             | centred at (4 i, 4 j))                                                         |
| walls       | a box geom per wall cell, added to Brax's ant MJCF (`wall_mjcf`, below)        |
| reward      | sparse: 1.0 where `||torso xy - goal|| < goal_threshold` (0.5), else 0.0       |
| observation | `concat(state, goal)`, float32 [31]                                            |
| episode     | 1000 steps (`max_episode_steps`, a `TimeLimit` truncation); `terminated` where |
|             | the torso z (state[2]) leaves [`healthy_z_low`, `healthy_z_high`] ([0.2, 1.0], |
|             | Brax's)                                                                        |
| info        | the goal contract's `success`, `achieved_goal`, `desired_goal`; `distance`     |

Walls (`wall_mjcf`): each wall cell (i, j) becomes a box `wall_{i}_{j}` of half-sides (2, 2, 1)
(the 4 x 4 cell, 2 high: JaxGCRL's 0.5 x the cell size) centred at (4 i, 4 j, 1) in the world
body of Brax's `ant.xml`. The walls stop the four feet and the torso sphere (Brax's ant lets only
its feet touch the floor; the torso gets a collision bit of its own that only the walls accept)
and never touch the floor. The walled model keeps the MJX solver options Brax's ant sets.

Unlike the other goal environments, the ant can end an episode by `terminated` (it fell or
jumped). The layout and the cell size are static (they shape the MuJoCo model); the start and
goal cells, the threshold, the healthy heights and the reset noise are params, so `jax.vmap`
over params gives goal curricula on one maze.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.brax_adapter import BraxEnv
from rlsuite.envs.goal.point_maze import LAYOUTS, _sample_cell_centre, parse_layout

from rlsuite.environment import StepResult
from rlsuite.environment.goal import GoalEnvironment
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field, check_positive

CELL_SIZE = 4.0  # JaxGCRL's maze_size_scaling
WALL_HEIGHT = 2.0  # JaxGCRL's MAZE_HEIGHT (0.5) x the cell size
TORSO_WALL_BIT = 2  # a collision bit of the torso that only the walls accept
# A wall's bounding sphere has radius sqrt(2^2 + 2^2 + 1^2) = 3, the torso's 0.25 (a foot's
# 0.08), so a sphere's pair with a wall passes MJX's bounding-sphere test only where the wall's
# centre is within 3.25 of it: all such centres lie within 6.5 of each other, never two cells
# (8) apart along a row or a column, so at most the 4 of one 2 x 2 block of cells. The 5 spheres
# (torso, 4 feet) thus have at most 20 pairs that can touch a wall, and MJX, told to test the 24
# pairs nearest by bounding spheres, tests them all: 24 pairs instead of 5 x (number of walls)
# (310 in the hardest maze).
MAX_WALL_PAIRS = 24


@struct.dataclass
class AntGoalParams:
    goal_distance: float = 10.0  # the goal circle's radius around the start
    goal_threshold: float = 0.5
    healthy_z_low: float = 0.2
    healthy_z_high: float = 1.0
    reset_noise: float = 0.1


@struct.dataclass
class AntMazeParams:
    start_cells: jax.Array  # [H, W] bool, starts uniform over them ('R')
    goal_cells: jax.Array  # [H, W] bool, goals uniform over them ('G')
    goal_threshold: float = 0.5
    healthy_z_low: float = 0.2
    healthy_z_high: float = 1.0
    reset_noise: float = 0.1


@struct.dataclass
class AntGoalState:
    pipeline_state: Any  # Brax's MJX pipeline state (mjx.Data with q, qd, x, xd)
    goal: jax.Array  # [2] float32


def wall_mjcf(xml: str, walls: np.ndarray, cell_size: float = CELL_SIZE) -> str:
    """Brax's ant MJCF `xml` with one box geom `wall_{i}_{j}` per True cell (i, j) of `walls`
    [H, W], centred at (cell_size i, cell_size j, WALL_HEIGHT / 2), and the collision bits
    that make the walls stop the torso and the feet (module docstring)."""
    root = ET.fromstring(xml)
    worldbody = root.find("worldbody")
    half = f"{cell_size / 2} {cell_size / 2} {WALL_HEIGHT / 2}"
    for i, j in zip(*np.nonzero(walls), strict=True):
        ET.SubElement(
            worldbody,
            "geom",
            name=f"wall_{i}_{j}",
            type="box",
            pos=f"{cell_size * i} {cell_size * j} {WALL_HEIGHT / 2}",
            size=half,
            contype="0",  # touches what its conaffinity accepts:
            conaffinity=str(1 | TORSO_WALL_BIT),  # the feet's contype 1 and the torso's bit
            rgba="0.7 0.5 0.3 1",
        )
    for geom in root.iter("geom"):
        if geom.get("name") == "torso_geom":
            geom.set("contype", str(TORSO_WALL_BIT))
    # MJX's broad phase: only the MAX_WALL_PAIRS sphere-wall pairs nearest by bounding spheres
    # are tested (see MAX_WALL_PAIRS: every pair that can touch is among them). MJX reads a
    # numeric's value at its id in the flat `numeric_data`, which is its address only for the
    # first numeric (Brax's init_qpos has 15 values): it goes first.
    limit = ET.Element("numeric", name="max_geom_pairs", data=str(MAX_WALL_PAIRS))
    root.find("custom").insert(0, limit)
    return ET.tostring(root, encoding="unicode")


class AntGoal(GoalEnvironment):
    """Brax's ant reaching a goal on a circle around its start (module table)."""

    state_dim = 29
    goal_indices = (0, 1)
    max_episode_steps = 1000

    def __init__(self, backend: str = "mjx"):
        self.robot = BraxEnv("ant", backend, exclude_current_positions_from_observation=False)
        self.brax_env = self.robot.brax_env
        # MJX un-jitted runs op by op (a minute per reset on a CPU): the core is jitted, and an
        # outer jit or vmap takes it in as it would the plain functions.
        self._reset = jax.jit(self._reset_core)
        self._step = jax.jit(self._step_core)

    @property
    def default_params(self) -> AntGoalParams:
        return AntGoalParams()

    def validate_params(self, params: Any) -> None:
        check_positive(params, "goal_threshold", "healthy_z_high", owner=self.name)
        check_field(params, "reset_noise", lambda v: v >= 0, "a value >= 0", self.name)
        check_field(params, "healthy_z_low", np.isfinite, "a finite height", self.name)
        if not isinstance(params.healthy_z_low, jax.core.Tracer):
            low = np.asarray(params.healthy_z_low)  # NumPy: a jnp comparison is traced in jit
            check_field(
                params, "healthy_z_high", lambda v: v > low, f"> healthy_z_low ({low})", self.name
            )
        if isinstance(params, AntGoalParams):
            check_positive(params, "goal_distance", owner=self.name)

    # ----------------------------------------------------------------- start and goal
    def sample_start(self, key: jax.Array, params: Any) -> jax.Array:
        """The torso's x, y at reset, [2]."""
        return jnp.zeros(2, jnp.float32)

    def sample_goal(self, key: jax.Array, params: Any, start: jax.Array | None = None):
        start = jnp.zeros(2, jnp.float32) if start is None else start
        angle = jax.random.uniform(key, (), jnp.float32, 0.0, 2.0 * jnp.pi)
        return start + params.goal_distance * jnp.stack([jnp.cos(angle), jnp.sin(angle)])

    # ----------------------------------------------------------------- the environment core
    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, AntGoalState]:
        return self._reset(key, params)

    def step_env(self, key: jax.Array, state: AntGoalState, action, params: Any) -> StepResult:
        return self._step(key, state, action, params)

    def _reset_core(self, key: jax.Array, params: Any) -> tuple[jax.Array, AntGoalState]:
        key_start, key_goal, key_q, key_qd = jax.random.split(key, 4)
        sys = self.brax_env.sys
        noise = params.reset_noise
        start = self.sample_start(key_start, params)
        q = sys.init_q + jax.random.uniform(key_q, (sys.q_size(),), minval=-noise, maxval=noise)
        q = q.at[:2].set(start)
        qd = noise * jax.random.normal(key_qd, (sys.qd_size(),))
        pipeline_state = self.brax_env.pipeline_init(q, qd)
        goal = self.sample_goal(key_goal, params, start).astype(jnp.float32)
        state = AntGoalState(pipeline_state, goal)
        return self.observation(self.state_vector(pipeline_state), goal), state

    def _step_core(self, key: jax.Array, state: AntGoalState, action, params) -> StepResult:
        pipeline_state = self.brax_env.pipeline_step(state.pipeline_state, action)
        # The same leaf dtypes as the reset's state (an auto-reset selects between them).
        pipeline_state = jax.tree.map(
            lambda a, b: jnp.asarray(a, jnp.result_type(b)), pipeline_state, state.pipeline_state
        )
        vector = self.state_vector(pipeline_state)
        achieved = self.achieved_of(vector)
        height = vector[2]
        terminated = (height < params.healthy_z_low) | (height > params.healthy_z_high)
        reward = self.compute_reward(achieved, state.goal, params)
        info = self.goal_info(achieved, state.goal, params)
        info["distance"] = jnp.linalg.norm(achieved - state.goal)
        obs = self.observation(vector, state.goal)
        next_state = AntGoalState(pipeline_state, state.goal)
        return obs, next_state, reward, terminated, jnp.zeros((), bool), info

    @staticmethod
    def state_vector(pipeline_state: Any) -> jax.Array:
        """concat(q, qd), float32 [29] (module table)."""
        return jnp.concatenate([pipeline_state.q, pipeline_state.qd]).astype(jnp.float32)

    def action_space(self, params: Any) -> Box:
        return Box(-1.0, 1.0, (self.robot.action_size,), jnp.float32)

    def __repr__(self) -> str:
        return f"{self.name}(backend={self.robot.backend!r})"


class AntMaze(AntGoal):
    """Brax's ant in a JaxGCRL maze whose walls are boxes in its MuJoCo model (module table);
    `layout` names the layout (of `point_maze.LAYOUTS`) the model is built with."""

    layout = "u_maze"
    cell_size = CELL_SIZE

    def __init__(self, backend: str = "mjx"):
        from brax.io import mjcf
        from etils import epath

        super().__init__(backend)
        self.walls, self.start_cells, self.goal_cells = parse_layout(LAYOUTS[self.layout])
        xml = (epath.resource_path("brax") / "envs/assets/ant.xml").read_text()
        walled = mjcf.loads(wall_mjcf(xml, self.walls, self.cell_size))
        # Brax's ant sets its MJX solver options on its own model: the walled one takes them.
        self.brax_env.sys = walled.replace(opt=self.brax_env.sys.opt)

    @property
    def default_params(self) -> AntMazeParams:
        return AntMazeParams(jnp.asarray(self.start_cells), jnp.asarray(self.goal_cells))

    def validate_params(self, params: AntMazeParams) -> None:
        super().validate_params(params)
        shape = self.walls.shape
        for field in ("start_cells", "goal_cells"):
            value = getattr(params, field)
            if np.shape(value)[-2:] != shape or value.dtype != jnp.bool_:
                raise ValueError(
                    f"{self.name}: invalid params.{field} of {value.dtype}{np.shape(value)}; "
                    f"allowed: a bool array of the layout's shape {shape}"
                )
            if isinstance(value, jax.core.Tracer):
                continue
            cells = np.asarray(value)
            empty = not cells.reshape(*cells.shape[:-2], -1).any(-1).all()
            on_walls = int((cells & self.walls).sum())
            if empty or on_walls:
                raise ValueError(
                    f"{self.name}: invalid params.{field}: {int(cells.sum())} cells, "
                    f"{on_walls} on walls; allowed: at least one cell, none on a wall"
                )

    def sample_start(self, key: jax.Array, params: AntMazeParams) -> jax.Array:
        return _sample_cell_centre(key, params.start_cells, self.cell_size)

    def sample_goal(self, key: jax.Array, params: AntMazeParams, start=None) -> jax.Array:
        return _sample_cell_centre(key, params.goal_cells, self.cell_size)


class AntUMaze(AntMaze):
    layout = "u_maze"


class AntBigMaze(AntMaze):
    layout = "big_maze"


class AntHardestMaze(AntMaze):
    layout = "hardest_maze"
