"""A picture of a maze level: `render(level, cell)`, an RGB image in NumPy, MiniGrid's colours.

| cell  | drawn                                                                           |
|-------|---------------------------------------------------------------------------------|
| wall  | grey `WALL_RGB`, the whole cell                                                 |
| free  | black `FREE_RGB`                                                                |
| goal  | green `GOAL_RGB`, the whole cell                                                |
| start | a red `AGENT_RGB` triangle on black, its tip pointing the start direction       |

The triangle is MiniGrid's agent, (0.12, 0.19), (0.87, 0.50), (0.12, 0.81) of the cell facing
right, turned a quarter per direction about the cell's centre. Row `y` of the level is the
image's rows `y * cell` to `(y + 1) * cell - 1`, column `x` its columns likewise (`wall_map[y,
x]`, as `Level`). Only the level's real `height` x `width` is drawn, its padding left out.
`fit(level, width, height)` draws it at the largest cell that fits an image of that size,
centred, the margin grey as walls (outside the map is wall to the agent).
"""

from __future__ import annotations

import numpy as np
from rlsuite.envs.maze.level import DIRECTIONS, Level, check_level

WALL_RGB = (100, 100, 100)  # MiniGrid's grey
FREE_RGB = (0, 0, 0)
GOAL_RGB = (0, 255, 0)  # MiniGrid's green
AGENT_RGB = (255, 0, 0)  # MiniGrid's red
# MiniGrid's agent facing right, in cell units about the centre: the tip ahead, the base
# behind, its half-width at the base.
_TIP, _BASE, _HALF_WIDTH = 0.37, -0.38, 0.31


def render(level: Level, cell: int = 8) -> np.ndarray:
    """uint8 RGB image `[height * cell, width * cell, 3]` of one concrete `level` (see the
    module's docstring); `cell` is the side of a cell in pixels. A batched level is a
    `ValueError` (index it first), and so is a level `check_level` refuses."""
    if isinstance(cell, bool) or not isinstance(cell, int | np.integer) or cell < 1:
        raise ValueError(f"render: cell must be an integer >= 1 (pixels), got {cell!r}")
    check_level(level, "render")
    if np.ndim(level.wall_map) != 2:
        raise ValueError(
            f"render: one level expected, got a batch of shape {np.shape(level.wall_map)[:-2]}; "
            "index it first (jax.tree.map(lambda x: x[i], levels))"
        )
    height, width = int(level.height), int(level.width)
    walls = np.asarray(level.wall_map, bool)[:height, :width]
    cells = np.where(walls[..., None], np.uint8(WALL_RGB), np.uint8(FREE_RGB))
    gx, gy = np.asarray(level.goal_pos).tolist()
    cells[gy, gx] = GOAL_RGB
    image = np.repeat(np.repeat(cells, cell, axis=0), cell, axis=1)
    ax, ay = np.asarray(level.agent_pos).tolist()
    agent = image[ay * cell : (ay + 1) * cell, ax * cell : (ax + 1) * cell]
    agent[agent_mask(int(level.agent_dir), cell)] = AGENT_RGB
    return image


def fit(level: Level, width: int, height: int) -> np.ndarray:
    """uint8 RGB `[height, width, 3]`: `render(level, cell)` at the largest whole `cell` that
    fits (at least 1 pixel), centred on a `WALL_RGB` margin (cut where even that is larger)."""
    rows, columns = int(level.height), int(level.width)
    cell = max(1, min(height // rows, width // columns))
    picture = render(level, cell)[:height, :width]
    image = np.empty((height, width, 3), np.uint8)
    image[:] = WALL_RGB
    top, left = (height - picture.shape[0]) // 2, (width - picture.shape[1]) // 2
    image[top : top + picture.shape[0], left : left + picture.shape[1]] = picture
    return image


def agent_mask(direction: int, cell: int) -> np.ndarray:
    """bool `[cell, cell]`: the pixels of a cell the agent's triangle covers, facing
    `direction` (0 right, 1 down, 2 left, 3 up); a pixel is in where its centre is."""
    centres = (np.arange(cell) + 0.5) / cell - 0.5  # in cell units, about the centre
    y, x = np.meshgrid(centres, centres, indexing="ij")
    dx, dy = DIRECTIONS[direction]
    ahead = x * dx + y * dy  # along the facing direction
    side = -x * dy + y * dx  # across it
    inside = ahead >= _BASE
    return inside & (np.abs(side) <= _HALF_WIDTH * (_TIP - ahead) / (_TIP - _BASE))
