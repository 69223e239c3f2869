"""The UED maze by name (`UED`: `envs.make("maze")`, `"maze/small"`, `"maze/editor"`): domain
randomisation's maze at jaxued's size and at the size a CPU trains on, and PAIRED's editor.

No `TimeLimit` goes around these. The maze's level lives in its params and it counts its own
horizon (`params.max_steps`, which `make`'s `max_episode_steps` sets); the editor (PAIRED's
adversary) ends every episode after its `n_walls + 2` placements.
"""

from __future__ import annotations

from typing import Any

from rlsuite.envs.maze.editor import MazeEditor
from rlsuite.envs.maze.env import Maze
from rlsuite.envs.maze.generator import make_generator


def ued_maze(
    height: int = 13, width: int = 13, n_walls: int = 25, view_size: int = 5, max_steps: int = 250
) -> Maze:
    """The UED maze with domain randomisation: a fresh `height` x `width` level of up to
    `n_walls` walls at every reset (jaxued's maze defaults: 13 x 13, 25 walls, horizon 250)."""
    generator = make_generator(height, width, n_walls)
    return Maze(height, width, view_size, max_steps, generator=generator)


def ued_maze_small(
    height: int = 7, width: int = 7, n_walls: int = 10, view_size: int = 5, max_steps: int = 196
) -> Maze:
    """`maze` at the size a CPU trains a UED student on in minutes: 7 x 7, up to 10 walls,
    horizon 196 (4 h w)."""
    return ued_maze(height, width, n_walls, view_size, max_steps)


# The UED maze's names (see the module's docstring).
UED: dict[str, Any] = {
    "maze": ued_maze,
    "maze/small": ued_maze_small,
    "maze/editor": MazeEditor,
}
