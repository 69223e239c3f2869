"""The UED maze's names (`envs/maze/presets.py`): what `make` builds for each, at the sizes and
horizons the presets say, and PAIRED's editor at the maze's wall budget."""

import jax
import numpy as np
from rlsuite.envs.maze import presets
from rlsuite.envs.maze.editor import MazeEditor
from rlsuite.envs.maze.env import Maze

from rlsuite import envs


def test_each_name_builds_its_preset():
    assert list(presets.UED) == ["maze", "maze/small", "maze/editor"]
    assert set(presets.UED) <= set(envs.names())
    for name, (height, width, horizon) in {
        "maze": (13, 13, 250),
        "maze/small": (7, 7, 196),
    }.items():
        env, params = envs.make(name)
        assert type(env) is Maze  # no TimeLimit around it: the maze counts its own horizon
        assert (env.height, env.width, params.max_steps) == (height, width, horizon)
    assert isinstance(envs.make("maze/editor")[0], MazeEditor)


def test_the_small_maze_draws_levels_of_at_most_ten_walls_and_takes_its_horizon():
    env, _ = envs.make("maze/small")
    levels = jax.vmap(env.generator)(jax.random.split(jax.random.key(0), 64))
    walls = np.asarray(levels.wall_map).reshape(64, -1).sum(axis=1)
    assert walls.max() <= 10 and walls.max() > 0  # drawn with replacement: at most n_walls
    _, params = envs.make("maze/small", max_episode_steps=100)  # the maze counts its horizon
    assert params.max_steps == 100
