"""A grid maze with a goal per trial, seen through an egocentric window (meta-RL navigation).

| item        | value                                                                           |
|-------------|---------------------------------------------------------------------------------|
| grid        | `size` x `size` cells (5), walls around it and where `params.walls` is True     |
| task        | `params.goal` [2] (row, col), a free cell; `sample_task` draws it uniformly     |
| start       | drawn uniformly at every reset among the free cells other than the goal         |
| action      | `Discrete(4)`: 0 up (row - 1), 1 right (col + 1), 2 down, 3 left; a wall blocks |
| observation | float32 [view * view * 3 (+ 2)]: the `view` x `view` window (3) centred on the  |
|             | agent, one-hot channels (wall, goal, empty) per cell, outside the grid a wall,  |
|             | flattened row-major; then (row, col) / (size - 1) if `observe_position` (off)   |
| reward      | `goal_reward` (1) on reaching the goal, minus `step_penalty` (0.05) every step: |
|             | an episode reaching it in t steps returns 1 - 0.05 t                            |
| episode     | `terminated` on reaching the goal; `truncated` after `max_steps` (4 * size)     |

Why later episodes can earn more: in the first episode of a trial the agent must search for the
goal (it sees one cell around itself); once found, an agent that remembers where it is walks
straight there from each later start (on an open 5 x 5, 10/3 steps on average, the mean distance
between two distinct cells: a return of 0.83). It locates itself from the walls in its window
(16 of the 25 cells touch the border), or, with `observe_position=True`, from its coordinates.

`render` draws the whole grid (the agent sees only its window), in NumPy.

Tasks with walls (a curriculum over tasks, `TASKS`): `sample_layout(key, params, wall_density)`
draws a density d ~ U[0, wall_density], each cell a wall with probability d, and a goal uniform
over the grid (its cell freed); the free cells the goal cannot be reached from become walls (an
open room where fewer than two cells stay free), so every start can reach the goal and goal
distances vary with the walls. `mutate_task(key, params, num_edits)` applies `num_edits` edits,
each uniform among adding a wall (on a free cell other than the goal), removing one and moving
the goal to another free cell; an edit after which some free cell cannot reach the goal (or
fewer than two are free) is not applied. `held_out_tasks()` are six named 5 x 5 layouts
(`HELD_OUT`), each with every free cell connected to the goal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas
from rlsuite.envs.tasks import check_leaf_shape

from rlsuite.environment import Environment
from rlsuite.environment.meta import TaskLevels
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field

MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)  # up, right, down, left
CHANNELS = 3  # wall, goal, empty


@struct.dataclass
class MazeParams:
    goal: jax.Array  # [2] int32 (row, col), the task
    walls: jax.Array  # [size, size] bool, inner walls (the border is always a wall)
    step_penalty: float = 0.05
    goal_reward: float = 1.0


@struct.dataclass
class MazeState:
    position: jax.Array  # [2] int32 (row, col)
    time: jax.Array  # int32 scalar, steps taken in this episode


class Maze(Environment):
    """A `size` x `size` grid, a goal in params and an egocentric `view` x `view` window."""

    def __init__(
        self,
        size: int = 5,
        view: int = 3,
        observe_position: bool = False,
        max_steps: int | None = None,
    ):
        if _not_int(size) or size < 2:
            raise ValueError(f"Maze: invalid size={size!r}; allowed: an integer >= 2")
        if _not_int(view) or view < 1 or view % 2 == 0:
            raise ValueError(f"Maze: invalid view={view!r}; allowed: an odd integer >= 1")
        max_steps = 4 * size if max_steps is None else max_steps
        if _not_int(max_steps) or max_steps < 1:
            raise ValueError(f"Maze: invalid max_steps={max_steps!r}; allowed: an integer >= 1")
        self.size, self.view, self.observe_position = size, view, bool(observe_position)
        self.max_episode_steps = max_steps  # counted in step_env (no TimeLimit needed)

    @property
    def default_params(self) -> MazeParams:
        """An open room with the goal in the bottom-right corner; draw goals with `sample_task`."""
        n = self.size
        return MazeParams(
            goal=jnp.array([n - 1, n - 1], jnp.int32),
            walls=jnp.zeros((n, n), bool),
        )

    def validate_params(self, params: MazeParams) -> None:
        n = self.size
        check_leaf_shape(params, "goal", (2,), self.name)
        check_leaf_shape(params, "walls", (n, n), self.name)
        check_field(
            params,
            "goal",
            lambda v: (v >= 0) & (v < n) & (v == v // 1),
            f"integer cells in 0..{n - 1}",
            self.name,
        )
        check_field(params, "step_penalty", lambda v: v >= 0, "a value >= 0", self.name)
        goal, walls = params.goal, params.walls
        if any(isinstance(x, jax.core.Tracer) for x in (goal, walls)) or np.ndim(goal) != 1:
            return  # traced, or a batch of tasks: the goal against the walls is not checked
        walls = np.asarray(walls)
        free = walls == 0
        on_goal = free[tuple(np.asarray(goal))]
        if not np.all((walls == 0) | (walls == 1)) or free.sum() < 2 or not on_goal:
            raise ValueError(
                f"{self.name}: invalid params.walls; allowed: booleans [size, size] with the goal "
                f"{np.asarray(goal).tolist()} on a free cell and another cell free for the start"
            )

    def reset_env(self, key: jax.Array, params: MazeParams):
        goal = jnp.asarray(params.goal, jnp.int32)
        free = ~jnp.asarray(params.walls, bool)
        free = free.at[goal[0], goal[1]].set(False)
        position = _draw_cell(key, free)
        state = MazeState(position, jnp.zeros((), jnp.int32))
        return self._observation(state, params), state

    def step_env(self, key, state: MazeState, action, params: MazeParams):
        goal = jnp.asarray(params.goal, jnp.int32)
        target = state.position + jnp.asarray(MOVES)[action]
        inside = jnp.all((target >= 0) & (target < self.size))
        clipped = jnp.clip(target, 0, self.size - 1)
        open_ = inside & ~jnp.asarray(params.walls, bool)[clipped[0], clipped[1]]
        position = jnp.where(open_, target, state.position)
        state = MazeState(position, state.time + 1)
        reached = jnp.all(position == goal)
        reward = jnp.where(reached, params.goal_reward, 0.0) - params.step_penalty
        truncated = state.time >= self.max_episode_steps
        obs = self._observation(state, params)
        return obs, state, reward.astype(jnp.float32), reached, truncated, {}

    def _observation(self, state: MazeState, params: MazeParams) -> jax.Array:
        """The window around the agent, [view, view, (wall, goal, empty)] flattened, then the
        normalised position where `observe_position`."""
        r = self.view // 2
        goal = jnp.asarray(params.goal, jnp.int32)
        walls = jnp.pad(jnp.asarray(params.walls, bool), r, constant_values=True)
        goals = jnp.zeros((self.size, self.size), bool).at[goal[0], goal[1]].set(True)
        goals = jnp.pad(goals, r)
        row, col = state.position[0], state.position[1]  # the window's corner in padded cells
        wall = jax.lax.dynamic_slice(walls, (row, col), (self.view, self.view))
        at_goal = jax.lax.dynamic_slice(goals, (row, col), (self.view, self.view))
        window = jnp.stack([wall, at_goal, ~wall & ~at_goal], axis=-1).astype(jnp.float32)
        obs = window.reshape(-1)
        if self.observe_position:
            obs = jnp.concatenate([obs, state.position.astype(jnp.float32) / (self.size - 1)])
        return obs

    def observation_space(self, params: MazeParams) -> Box:
        extra = 2 if self.observe_position else 0
        return Box(0.0, 1.0, (self.view * self.view * CHANNELS + extra,))

    def action_space(self, params: MazeParams) -> Discrete:
        return Discrete(4)

    def render(self, state: MazeState, params: MazeParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of the whole grid (the agent sees only its window):
        cell (row, col) the square of side `c = min(width, height) / (size + 2)` pixels at row
        `row`, column `col` of the grid, centred, so at least one cell of wall shows around it.
        Walls (`params.walls`, and everything outside the grid) dark grey (60, 60, 60), free
        cells white, the goal cell (`params.goal`, the task: under `RL2` the trial's) green
        (60, 170, 60), the agent a blue (40, 80, 220) disk of radius 0.35 c at the centre of
        its cell `position`."""
        canvas, left, top, cell = _draw_task(params, width, height)
        row, col = np.asarray(state.position, np.float64)
        canvas.disk(left + (col + 0.5) * cell, top + (row + 0.5) * cell, 0.35 * cell, (40, 80, 220))
        return canvas.image

    def __repr__(self) -> str:
        return (
            f"Maze(size={self.size}, view={self.view}, observe_position="
            f"{self.observe_position}, max_steps={self.max_episode_steps})"
        )


def _draw_task(params: MazeParams, width: int, height: int):
    """The grid of `params` drawn as `Maze.render` draws it, without the agent: the canvas, the
    left and top of cell (0, 0) and the side of a cell, in pixels."""
    n = np.shape(params.walls)[-1]
    cell = min(width, height) / (n + 2)
    left, top = (width - n * cell) / 2, (height - n * cell) / 2  # of cell (0, 0)
    canvas = Canvas(width, height, (60, 60, 60))
    canvas.grid(~np.asarray(params.walls, bool), left, top, cell, (255, 255, 255))
    goal = np.zeros((n, n), bool)
    goal[tuple(np.asarray(params.goal))] = True
    canvas.grid(goal, left, top, cell, (60, 170, 60))
    return canvas, left, top, cell


def render_task(params: MazeParams, cell: int = 16):
    """uint8 RGB of a task (its walls and goal, as `Maze.render` draws them), `cell` pixels a
    cell, with a cell of wall around the grid."""
    side = (np.shape(params.walls)[-1] + 2) * cell
    return _draw_task(params, side, side)[0].image


def _not_int(value) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _draw_cell(key: jax.Array, allowed: jax.Array) -> jax.Array:
    """A cell (row, col), int32 [2], uniform among the True cells of `allowed` [size, size]."""
    size = allowed.shape[-1]
    index = jax.random.categorical(key, jnp.where(allowed.reshape(-1), 0.0, -jnp.inf))
    return jnp.stack([index // size, index % size]).astype(jnp.int32)


def sample_task(key: jax.Array, params: MazeParams) -> MazeParams:
    """`params` with a goal drawn uniformly among the free cells of `params.walls`."""
    return params.replace(goal=_draw_cell(key, ~jnp.asarray(params.walls, bool)))


def reachable(walls: jax.Array, goal: jax.Array) -> jax.Array:
    """Bool `[size, size]`: the free cells of `walls` connected to `goal` (row, col) through free
    cells by moves up, right, down and left (the goal's own cell included)."""
    free = ~jnp.asarray(walls, bool)
    size = free.shape[-1]
    start = jnp.zeros_like(free).at[goal[0], goal[1]].set(True) & free

    def grow(_, reach):
        padded = jnp.pad(reach, 1)
        near = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
        return reach | (near & free)

    return jax.lax.fori_loop(0, size * size, grow, start)


def well_formed(walls: jax.Array, goal: jax.Array) -> jax.Array:
    """Bool scalar: the goal's cell is free, at least two cells are free and every free cell
    can reach the goal."""
    free = ~jnp.asarray(walls, bool)
    return free[goal[0], goal[1]] & (free.sum() >= 2) & jnp.all(reachable(walls, goal) == free)


def sample_layout(key: jax.Array, params: MazeParams, wall_density: float) -> MazeParams:
    """`params` with walls and a goal drawn as the module's docstring says (`wall_density`, the
    largest density, in [0, 1])."""
    key_density, key_walls, key_goal = jax.random.split(key, 3)
    size = jnp.shape(params.walls)[-1]
    density = jax.random.uniform(key_density, (), jnp.float32, 0.0, wall_density)
    walls = jax.random.bernoulli(key_walls, density, (size, size))
    goal = _draw_cell(key_goal, jnp.ones((size, size), bool))
    walls = walls.at[goal[0], goal[1]].set(False)
    walls = walls | ~reachable(walls, goal)
    walls = jnp.where((~walls).sum() < 2, jnp.zeros_like(walls), walls)
    return params.replace(goal=goal, walls=walls)


ADD_WALL, REMOVE_WALL, MOVE_GOAL = range(3)


def mutate_task(key: jax.Array, params: MazeParams, num_edits: int | jax.Array) -> MazeParams:
    """`params` after `num_edits` random edits of its walls and goal (the module's docstring);
    0 edits is the identity."""
    return jax.lax.fori_loop(
        0, num_edits, lambda i, p: _edit(jax.random.fold_in(key, i), p), params
    )


def _edit(key: jax.Array, params: MazeParams) -> MazeParams:
    key_kind, key_cell = jax.random.split(key)
    kind = jax.random.randint(key_kind, (), 0, 3)
    walls, goal = jnp.asarray(params.walls, bool), jnp.asarray(params.goal, jnp.int32)
    not_goal = jnp.ones_like(walls).at[goal[0], goal[1]].set(False)
    allowed = jnp.where(kind == REMOVE_WALL, walls, ~walls & not_goal)
    found = jnp.any(allowed)
    cell = _draw_cell(key_cell, jnp.where(found, allowed, True))
    flipped = walls.at[cell[0], cell[1]].set(kind == ADD_WALL)
    new_walls = jnp.where(kind == MOVE_GOAL, walls, flipped)
    new_goal = jnp.where(kind == MOVE_GOAL, cell, goal)
    keep = found & well_formed(new_walls, new_goal)
    return params.replace(
        walls=jnp.where(keep, new_walls, walls), goal=jnp.where(keep, new_goal, goal)
    )


# Six 5 x 5 layouts to evaluate on: `#` a wall, `G` the goal, `.` free.
HELD_OUT = {
    "open_corner": (".....", ".....", ".....", ".....", "....G"),
    "open_centre": (".....", ".....", "..G..", ".....", "....."),
    "pillars": (".....", ".#.#.", ".....", ".#.#.", "....G"),
    "two_rooms": ("..#..", "..#..", ".....", "..#..", "G.#.."),
    "enclosed_goal": (".....", ".###.", ".#G#.", ".#.#.", "....."),
    "corridor": (".....", "####.", ".....", ".####", "G...."),
}


def task_from_rows(rows: tuple[str, ...], params: MazeParams | None = None) -> MazeParams:
    """The params (default: an open 5 x 5's) of a layout drawn as rows of `#`, `G` and `.`."""
    grid = np.array([list(row) for row in rows])
    if grid.ndim != 2 or grid.shape[0] != grid.shape[1] or not set(grid.flat) <= set("#G."):
        raise ValueError(f"task_from_rows: a square of '#', 'G' and '.' rows, got {rows!r}")
    goals = np.argwhere(grid == "G")
    if len(goals) != 1:
        raise ValueError(f"task_from_rows: one goal 'G', got {len(goals)} in {rows!r}")
    if params is None:
        params = Maze(grid.shape[0]).default_params
    return params.replace(goal=jnp.asarray(goals[0], jnp.int32), walls=jnp.asarray(grid == "#"))


def held_out_tasks() -> tuple[tuple[str, ...], MazeParams]:
    """The names of `HELD_OUT` and their params stacked `[6]` (5 x 5)."""
    names = tuple(HELD_OUT)
    tasks = [task_from_rows(HELD_OUT[name]) for name in names]
    return names, jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *tasks)


def tasks(size: int, walls: bool) -> TaskLevels:
    """The maze family's tasks for a curriculum: goal and walls; the held-out layouts where
    tasks have `walls` and the maze is 5 x 5."""
    held_out = held_out_tasks if walls and size == 5 else None
    return TaskLevels(("goal", "walls"), mutate_task, held_out, render_task)
