"""PAIRED's level editor: an adversary builds a maze level one placement per step (Dennis et al.
2020, "Emergent Complexity and Zero-shot Transfer via Unsupervised Environment Design",
arXiv:2012.02096).

An episode of `MazeEditor(height, width, n_walls, noise_dim)` starts from an empty `height` x
`width` level and lasts exactly `n_walls + 2` steps; each action is a cell index `y * width + x`
in `[0, height * width)` (larger or negative ones are clipped into it):

| step t                | what the chosen cell gets                                                |
|-----------------------|--------------------------------------------------------------------------|
| 0 .. n_walls - 1      | a wall (a cell that already is one stays one: at most `n_walls` walls)   |
| n_walls               | the goal; a wall there is removed                                        |
| n_walls + 1           | the agent's start, facing a direction drawn uniformly in 0..3 from the   |
|                       | step's key; a wall there is removed. On the goal's cell the agent goes   |
|                       | instead to a cell drawn uniformly (step key) among the free cells other  |
|                       | than the goal, or, where every other cell is a wall, among all cells     |
|                       | other than the goal (its wall removed)                                   |

The last step is `terminated` (never `truncated`); every reward is 0: the adversary's reward,
PAIRED's regret, comes from the curriculum that plays the level, not from the editor. A finished
state stepped again (`step_env`, without the auto-reset) stays as it is, terminated.

| item        | value                                                                          |
|-------------|--------------------------------------------------------------------------------|
| observation | float32 [H * W * 3 + (n_walls + 3) + noise_dim]: the map [H, W, 3] flattened   |
|             | row-major (y, x, channel), channels one-hot wall, goal, agent (goal and agent  |
|             | 0 until placed); then the time step t one-hot over 0 .. n_walls + 2 (t =       |
|             | n_walls + 2 only in the last step's `final_observation`); then `noise_dim`     |
|             | numbers uniform in [0, 1) drawn from the step's (or reset's) key, as PAIRED's  |
|             | random z (default 50). The start direction is not observed (no step follows)   |
| action      | `Discrete(height * width)`                                                     |
| info        | `level`: the `Level` after this step; at the terminating step the finished one |

`level_of(state)` is the level a state holds. A finished level (after step `n_walls + 1`, i.e.
`info["level"]` where `terminated`) is always well formed (`well_formed`): goal and start on
free cells, distinct, inside the level. Before the goal or the start is placed, its position is
(-1, -1). The level has the editor's `height` x `width`, so `params_for_levels` of a
`Maze(height, width)` takes a batch of them as they are (`pad` them for a larger maze).

Semantics against the references: the order (walls, goal, start) and a random start direction
are minimax's `UEDMaze` with `fixed_n_wall_steps`; the goal and the start removing a wall under
them are jaxued's `MazeEditor`; the start redirected off the goal follows minimax (a random free
cell; jaxued draws among every cell but the goal).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.maze.level import Level, random_cell

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete

CHANNELS = 3  # wall, goal, agent
UNPLACED = (-1, -1)  # the (x, y) of a goal or start not placed yet


@struct.dataclass
class EditorParams:
    """The editor has no parameters (its sizes are static: they fix the observation's shape)."""


@struct.dataclass
class EditorState:
    level: Level  # the level so far: walls placed; goal and start (-1, -1) until placed
    time: jax.Array  # int32, placements made (0 .. n_walls + 2)


def level_of(state: EditorState) -> Level:
    """The level a state holds (a batch of states gives a batch of levels); well formed once
    the episode's last step was taken (see the module's docstring)."""
    return state.level


class MazeEditor(Environment):
    """PAIRED's adversary environment for a `height` x `width` maze; see the module's docstring.

    n_walls: the number of wall placements (steps) of an episode, an integer >= 0.
    noise_dim: the length of the observation's random noise vector, an integer >= 0.
    """

    def __init__(self, height: int = 13, width: int = 13, n_walls: int = 25, noise_dim: int = 50):
        for field, value, low in (
            ("height", height, 1),
            ("width", width, 1),
            ("n_walls", n_walls, 0),
            ("noise_dim", noise_dim, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise ValueError(
                    f"MazeEditor: invalid {field}={value!r}; allowed: an integer >= {low}"
                )
        if height * width < 2:
            raise ValueError(
                f"MazeEditor: invalid size {height} x {width} (height x width); allowed: at "
                "least 2 cells (the agent and the goal)"
            )
        self.height, self.width = int(height), int(width)
        self.n_walls, self.noise_dim = int(n_walls), int(noise_dim)

    @property
    def episode_length(self) -> int:
        """Steps of an episode: `n_walls + 2`."""
        return self.n_walls + 2

    @property
    def default_params(self) -> EditorParams:
        return EditorParams()

    def observation_space(self, params: EditorParams) -> Box:
        size = self.height * self.width * CHANNELS + self.episode_length + 1 + self.noise_dim
        return Box(0.0, 1.0, (size,))

    def action_space(self, params: EditorParams) -> Discrete:
        return Discrete(self.height * self.width)

    # ----------------------------------------------------------------- dynamics
    def reset_env(self, key: jax.Array, params: EditorParams):
        level = Level(
            wall_map=jnp.zeros((self.height, self.width), bool),
            goal_pos=jnp.asarray(UNPLACED, jnp.int32),
            agent_pos=jnp.asarray(UNPLACED, jnp.int32),
            agent_dir=jnp.zeros((), jnp.int32),
            width=jnp.asarray(self.width, jnp.int32),
            height=jnp.asarray(self.height, jnp.int32),
        )
        state = EditorState(level=level, time=jnp.zeros((), jnp.int32))
        return self._observation(key, state), state

    def step_env(self, key: jax.Array, state: EditorState, action, params: EditorParams):
        key_cell, key_dir, key_obs = jax.random.split(key, 3)
        h, w, n = self.height, self.width, self.n_walls
        level, time = state.level, state.time
        cells = jnp.arange(h * w)
        cell = jnp.clip(jnp.asarray(action), 0, h * w - 1).astype(jnp.int32)
        walls = level.wall_map.reshape(-1)
        goal = level.goal_pos[1] * w + level.goal_pos[0]  # meaningful once placed

        # The start: off the goal, to a random free cell (any other cell if none is free).
        free = ~walls & (cells != goal)
        others = jnp.where(jnp.any(free), free, cells != goal)
        elsewhere, _ = random_cell(key_cell, others)
        start = jnp.where(cell == goal, elsewhere, cell)

        wall_step, goal_step, agent_step = time < n, time == n, time == n + 1
        placed = jnp.where(agent_step, start, cell)
        walls = jnp.where(
            wall_step,
            walls.at[placed].set(True),
            jnp.where(goal_step | agent_step, walls.at[placed].set(False), walls),
        )
        xy = jnp.stack([placed % w, placed // w]).astype(jnp.int32)
        direction = jax.random.randint(key_dir, (), 0, 4, jnp.int32)
        level = level.replace(
            wall_map=walls.reshape(h, w),
            goal_pos=jnp.where(goal_step, xy, level.goal_pos),
            agent_pos=jnp.where(agent_step, xy, level.agent_pos),
            agent_dir=jnp.where(agent_step, direction, level.agent_dir),
        )
        time = jnp.minimum(time + 1, n + 2)
        state = EditorState(level=level, time=time)
        terminated = time >= n + 2
        reward = jnp.zeros((), jnp.float32)
        obs = self._observation(key_obs, state)
        return obs, state, reward, terminated, jnp.zeros((), bool), {"level": level}

    def _observation(self, key: jax.Array, state: EditorState) -> jax.Array:
        """The map's channels, the time one-hot and the noise (see the module's docstring)."""
        h, w = self.height, self.width
        ys, xs = jnp.arange(h)[:, None], jnp.arange(w)[None, :]
        level = state.level
        goal = (xs == level.goal_pos[0]) & (ys == level.goal_pos[1])
        agent = (xs == level.agent_pos[0]) & (ys == level.agent_pos[1])
        grid = jnp.stack([level.wall_map, goal, agent], axis=-1).astype(jnp.float32)
        time = jax.nn.one_hot(state.time, self.episode_length + 1, dtype=jnp.float32)
        noise = jax.random.uniform(key, (self.noise_dim,), jnp.float32)
        return jnp.concatenate([grid.reshape(-1), time, noise])

    def __repr__(self) -> str:
        return (
            f"MazeEditor(height={self.height}, width={self.width}, n_walls={self.n_walls}, "
            f"noise_dim={self.noise_dim})"
        )
