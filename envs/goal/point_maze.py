"""`goal/point_u_maze`, `goal/point_big_maze`, `goal/point_hardest_maze`: a point in JaxGCRL's
point-maze layouts (its `simple_*_maze` tasks) that must reach a goal cell.

| item        | value                                                                          |
|-------------|--------------------------------------------------------------------------------|
| layout      | `params.walls`, `params.start_cells`, `params.goal_cells`: [H, W] bool masks   |
|             | (`maze_params(name)` builds them from `LAYOUTS`)                               |
| geometry    | cell (i, j) (row i, column j) is the square of side `cell_size` (4) centred at |
|             | `(i * cell_size, j * cell_size)`: x runs down the rows, y along the columns,   |
|             | as in JaxGCRL; outside the layout counts as wall                               |
| state       | the position [2]; `goal_indices = (0, 1)`                                      |
| start       | the centre of a start cell ('R'), uniform over them (JaxGCRL's layouts: one)   |
| goal        | the centre of a goal cell ('G'): a cell drawn uniformly, then its centre, as   |
|             | JaxGCRL's `_random_target`                                                     |
| action      | `Box(-1, 1, (2,))`, clipped to the box                                         |
| dynamics    | the agent is a square of half-side `radius` (0.25: JaxGCRL's ball) centred     |
|             | at the position; the move `step_size * clip(a, -1, 1)` (0.5) is made along x,  |
|             | then along y, each stopped where the square would touch a wall cell, so it     |
|             | slides along walls and never overlaps one                                      |
| reward      | sparse: 1.0 where `||x' - goal|| < goal_threshold` (0.5, JaxGCRL's), else 0.0  |
| observation | `concat(position, goal)`, float32 [4]                                          |
| episode     | 1000 steps (`max_episode_steps`, a `TimeLimit` truncation; JaxGCRL trains with |
|             | episodes of 1001); never terminated                                            |

JaxGCRL's point maze is a MuJoCo ball of radius 0.25 pushed by forces, with a velocity in its
state; this one moves by bounded displacements, so its state is the position alone. A move of at
most `step_size < cell_size` carries the square's leading side across at most one cell border,
which is what the collision rule needs; `radius < cell_size / 2` lets it through a corridor.
The `*_eval` layouts are JaxGCRL's evaluation goal sets for the same mazes:
`maze_params("big_maze_eval")` gives params for `PointBigMaze` with those goals.
`render` draws the walls, the goal and the agent's square, in NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas

from rlsuite.environment.goal import GoalEnvironment, GoalState
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field, check_positive

# Transcribed from JaxGCRL (github.com/MichalBortkiewicz/JaxGCRL, jaxgcrl/envs/simple_maze.py,
# U_MAZE, U_MAZE_EVAL, BIG_MAZE, BIG_MAZE_EVAL, HARDEST_MAZE; Apache-2.0), which adapted them
# from D4RL's locomotion mazes: '#' wall (their 1), '.' free (0), 'R' start, 'G' goal.
LAYOUTS: dict[str, tuple[str, ...]] = {
    "u_maze": (
        "#####",
        "#RGG#",
        "###G#",
        "#GGG#",
        "#####",
    ),
    "u_maze_eval": (
        "#####",
        "#R..#",
        "###.#",
        "#GGG#",
        "#####",
    ),
    "big_maze": (
        "########",
        "#RG##GG#",
        "#GG#GGG#",
        "##GGG###",
        "#GG#GGG#",
        "#G#GG#G#",
        "#GGG#GG#",
        "########",
    ),
    "big_maze_eval": (
        "########",
        "#R.##GG#",
        "#..#.GG#",
        "##...###",
        "#..#...#",
        "#.#G.#G#",
        "#.GG#GG#",
        "########",
    ),
    "hardest_maze": (
        "############",
        "#RGGG#GGGGG#",
        "#G##G#G#G#G#",
        "#GGGGGG#GGG#",
        "#G####G###G#",
        "#GG#G#GGGGG#",
        "##G#G#G#G###",
        "#GG#GGG#GGG#",
        "############",
    ),
}


@struct.dataclass
class PointMazeParams:
    walls: jax.Array  # [H, W] bool
    start_cells: jax.Array  # [H, W] bool, the starts' distribution (uniform over the cells)
    goal_cells: jax.Array  # [H, W] bool, the goals' distribution (uniform over the cells)
    cell_size: float = 4.0
    step_size: float = 0.5
    radius: float = 0.25  # the half-side of the agent's square body
    goal_threshold: float = 0.5


def parse_layout(rows: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(walls, start_cells, goal_cells)`, [H, W] bool each, of a layout drawn with '#', '.',
    'R' and 'G' (one string per row)."""
    rows = list(rows)
    if not rows or any(len(row) != len(rows[0]) for row in rows) or not rows[0]:
        raise ValueError(f"a maze layout is a non-empty list of rows of one length, got {rows!r}")
    grid = np.array([list(row) for row in rows])
    unknown = sorted(set(grid.ravel().tolist()) - set("#.RG"))
    if unknown:
        raise ValueError(f"a maze layout has '#', '.', 'R' and 'G' cells, not {unknown}")
    return grid == "#", grid == "R", grid == "G"


def maze_params(layout: str | Sequence[str] = "u_maze", **overrides) -> PointMazeParams:
    """Params for a layout: a name in `LAYOUTS` or the rows themselves; `overrides` replace
    other fields (`maze_params("big_maze", step_size=0.25)`)."""
    if isinstance(layout, str):
        if layout not in LAYOUTS:
            raise ValueError(f"unknown maze layout {layout!r}; allowed: {', '.join(LAYOUTS)}")
        layout = LAYOUTS[layout]
    walls, starts, goals = (jnp.asarray(mask) for mask in parse_layout(layout))
    return PointMazeParams(walls, starts, goals).replace(**overrides)


def cell_of(position: jax.Array, cell_size) -> jax.Array:
    """The (i, j) cell, int32, that holds `position` ([..., 2])."""
    return jnp.floor(position / cell_size + 0.5).astype(jnp.int32)


def is_wall(walls: jax.Array, cell: jax.Array) -> jax.Array:
    """Whether `cell` (i, j) is a wall; outside the layout counts as one."""
    height, width = walls.shape
    i, j = cell[..., 0], cell[..., 1]
    inside = (i >= 0) & (i < height) & (j >= 0) & (j < width)
    return jnp.where(inside, walls[jnp.clip(i, 0, height - 1), jnp.clip(j, 0, width - 1)], True)


def _sample_cell_centre(key: jax.Array, cells: jax.Array, cell_size) -> jax.Array:
    """The centre of a cell drawn uniformly from the True cells of `cells` [H, W]."""
    logits = jnp.where(cells.ravel(), 0.0, -jnp.inf)
    index = jax.random.categorical(key, logits)
    cell = jnp.stack(jnp.divmod(index, cells.shape[1]))
    return (cell * cell_size).astype(jnp.float32)


_TOUCH = 1e-4  # of a cell: a smaller overlap with a wall is float rounding at its face


class PointMaze(GoalEnvironment):
    """A point that slides along the walls of a maze towards a goal cell (see the module table).
    The layout lives in the params; `layout` names the default one."""

    layout = "u_maze"
    state_dim = 2
    goal_indices = (0, 1)
    max_episode_steps = 1000

    @property
    def default_params(self) -> PointMazeParams:
        return maze_params(self.layout)

    def validate_params(self, params: PointMazeParams) -> None:
        owner = self.name
        shape = np.shape(params.walls)  # [..., H, W]: leading axes are a batch of mazes
        for field in ("walls", "start_cells", "goal_cells"):
            value = getattr(params, field)
            if np.ndim(value) < 2 or np.shape(value) != shape or value.dtype != jnp.bool_:
                raise ValueError(
                    f"{owner}: invalid params.{field} of {value.dtype}{np.shape(value)}; "
                    f"allowed: a bool array [H, W] of the walls' shape {shape}"
                )
        check_positive(params, "cell_size", "step_size", "radius", "goal_threshold", owner=owner)
        if not isinstance(params.cell_size, jax.core.Tracer):
            size = np.asarray(params.cell_size)  # NumPy: a jnp comparison in a trace is traced
            allowed = f"< cell_size ({size.tolist()})"
            check_field(params, "step_size", lambda v: v < size, allowed, owner)
            check_field(params, "radius", lambda v: v < size / 2, "< cell_size / 2", owner)
        masks = (params.walls, params.start_cells, params.goal_cells)
        if any(isinstance(mask, jax.core.Tracer) for mask in masks):
            return
        walls = np.asarray(params.walls)
        for field in ("start_cells", "goal_cells"):
            cells = np.asarray(getattr(params, field))
            empty = not cells.reshape(*shape[:-2], -1).any(-1).all()
            if empty or (cells & walls).any():
                raise ValueError(
                    f"{owner}: invalid params.{field}: {int(cells.sum())} cells, "
                    f"{int((cells & walls).sum())} on walls; allowed: at least one cell per "
                    "maze, none on a wall"
                )

    def sample_start(self, key: jax.Array, params: PointMazeParams) -> jax.Array:
        return _sample_cell_centre(key, params.start_cells, params.cell_size)

    def sample_goal(self, key: jax.Array, params: PointMazeParams) -> jax.Array:
        return _sample_cell_centre(key, params.goal_cells, params.cell_size)

    def move(self, key, state: jax.Array, action: jax.Array, params: PointMazeParams):
        delta = params.step_size * jnp.clip(action, -1.0, 1.0)
        position = _slide(state, delta, 0, params)
        return _slide(position, delta, 1, params)

    def action_space(self, params: PointMazeParams) -> Box:
        return Box(-1.0, 1.0, (2,))

    def render(self, state: GoalState, params: PointMazeParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of the layout as its rows are written: cell (i, j) the
        square of side `c = min(width / W, height / H)` pixels at row `i`, column `j` of the
        H x W grid, centred, so position `(x, y)` is at column `left + (y / cell_size + 0.5)
        c` and row `top + (x / cell_size + 0.5) c` (x down the rows, y along the columns, as
        the geometry). Free cells white, wall cells and the margin outside the layout dark grey
        (60, 60, 60); the goal's success disk (green (60, 170, 60), radius `goal_threshold`);
        the agent's body (blue (40, 80, 220), the square of half-side `radius`)."""
        walls = np.asarray(params.walls, bool)
        rows, columns = walls.shape
        cell = min(width / columns, height / rows)  # pixels per cell
        left, top = (width - columns * cell) / 2, (height - rows * cell) / 2
        size = float(params.cell_size)
        unit = cell / size  # pixels per unit of position

        def pixel(xy):  # (column, row) in pixels of a position (x, y)
            x, y = np.asarray(xy, np.float64) / size + 0.5
            return left + y * cell, top + x * cell

        canvas = Canvas(width, height, (60, 60, 60))
        canvas.grid(~walls, left, top, cell, (255, 255, 255))
        canvas.disk(*pixel(state.goal), float(params.goal_threshold) * unit, (60, 170, 60))
        (x, y), half = pixel(state.state), float(params.radius) * unit
        canvas.rectangle(x - half, y - half, x + half, y + half, (40, 80, 220))
        return canvas.image


def _slide(position: jax.Array, delta: jax.Array, axis: int, params: PointMazeParams):
    """`position` moved by `delta[axis]` along `axis`, stopped where the agent's square would
    touch a wall cell: a wall in the line of cells just past the square's side, in one of the
    (at most two) lines across that the square spans. An overlap under `_TOUCH` of a cell
    (float rounding at a wall's face) counts as touching, and a bound never pushes the point
    back, it only stops it."""
    size, radius, walls = params.cell_size, params.radius, params.walls
    p, q = position[axis], position[1 - axis]
    across = (  # the lines across `axis` that the square spans
        jnp.floor((q - radius) / size + 0.5 + _TOUCH).astype(jnp.int32),
        jnp.ceil((q + radius) / size - 0.5 - _TOUCH).astype(jnp.int32),
    )
    ahead = jnp.ceil((p + radius) / size - 0.5 - _TOUCH).astype(jnp.int32)  # leading side's line
    behind = jnp.floor((p - radius) / size + 0.5 + _TOUCH).astype(jnp.int32)

    def blocked(line):
        cells = [jnp.stack((line, j) if axis == 0 else (j, line)) for j in across]
        return is_wall(walls, cells[0]) | is_wall(walls, cells[1])

    high = jnp.where(blocked(ahead + 1), (ahead + 0.5) * size - radius, jnp.inf)
    low = jnp.where(blocked(behind - 1), (behind - 0.5) * size + radius, -jnp.inf)
    moved = jnp.clip(p + delta[axis], jnp.minimum(low, p), jnp.maximum(high, p))
    return position.at[axis].set(moved)


class PointUMaze(PointMaze):
    layout = "u_maze"


class PointBigMaze(PointMaze):
    layout = "big_maze"


class PointHardestMaze(PointMaze):
    layout = "hardest_maze"
