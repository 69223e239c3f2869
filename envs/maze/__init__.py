"""The maze of unsupervised environment design (DR, PLR, ACCEL, PAIRED): MiniGrid navigation
whose level lives in the env params, with what a curriculum passes to its algorithm.

| module    | what                                                                              |
|-----------|-----------------------------------------------------------------------------------|
| level     | `Level` (walls, goal, start), `Level.from_str` / `to_str`, `pad`, `stack`,         |
|           | `check_level`, `well_formed`, `level_hash`                                        |
| env       | `Maze(height, width, view_size, max_steps, generator)`, `MazeParams(level,         |
|           | max_steps, random_level)`, `params_for_levels`, `to_jaxued`                       |
| generator | `make_generator(height, width, n_walls)`: DR's random levels                      |
| mutator   | `mutate(key, level, num_edits)`: ACCEL's edits                                    |
| editor    | `MazeEditor(height, width, n_walls, noise_dim)`: PAIRED's adversary builds a      |
|           | level step by step (walls, goal, start); `level_of(state)`, `info["level"]`       |
| held_out  | the eight 13 x 13 evaluation mazes (from minimax), `held_out_levels()`            |
| render    | `render(level, cell)`: an RGB picture (NumPy uint8) of a level                    |

`envs.make("maze")` is a 13 x 13 `Maze` drawing a DR level of up to 25 walls at every reset
(jaxued's maze defaults), horizon 250; `envs.make("maze/editor")` is a 13 x 13 `MazeEditor`
of 25 wall placements with a noise vector of 50 (PAIRED's).
"""

from rlsuite.envs.maze.editor import EditorParams, EditorState, MazeEditor, level_of
from rlsuite.envs.maze.env import Maze, MazeParams, MazeState, params_for_levels, to_jaxued
from rlsuite.envs.maze.generator import make_generator
from rlsuite.envs.maze.held_out import (
    EVAL_MAX_STEPS,
    HELD_OUT,
    held_out_level,
    held_out_levels,
    minimax_max_steps,
)
from rlsuite.envs.maze.level import (
    Level,
    check_level,
    level_hash,
    pad,
    stack,
    well_formed,
)
from rlsuite.envs.maze.mutator import mutate
from rlsuite.envs.maze.render import render

__all__ = [
    "EVAL_MAX_STEPS",
    "HELD_OUT",
    "EditorParams",
    "EditorState",
    "Level",
    "Maze",
    "MazeEditor",
    "MazeParams",
    "MazeState",
    "check_level",
    "held_out_level",
    "held_out_levels",
    "level_hash",
    "level_of",
    "make_generator",
    "minimax_max_steps",
    "mutate",
    "pad",
    "params_for_levels",
    "render",
    "stack",
    "to_jaxued",
    "well_formed",
]
