"""The UED maze: MiniGrid navigation to a goal, the level in the params (jaxued's maze dynamics).

| item        | value                                                                           |
|-------------|---------------------------------------------------------------------------------|
| level       | `params.level`, a `Level` of the environment's `height` x `width` (13 x 13);    |
|             | or, where `params.random_level` and a `generator` was given, a fresh one drawn  |
|             | at every reset (domain randomisation)                                           |
| action      | `Discrete(7)`, MiniGrid's: 0 turn left, 1 turn right, 2 forward; 3-6 (pickup,   |
|             | drop, toggle, done) do nothing                                                  |
| dynamics    | forward moves one cell in the facing direction unless a wall, the goal or the   |
|             | map's edge is there; moving forward into the goal reaches it (the agent stays)  |
| observation | float32 [V * V * 3 + 4] (V = `view_size`, 5): the egocentric V x V view, then   |
|             | the direction one-hot (right, down, left, up). view[i, j, c] is flattened       |
|             | row-major: i across (0 the leftmost column, V // 2 the agent's), j along        |
|             | (V - 1 the agent's row, 0 the farthest ahead), c one-hot (wall, goal, empty);   |
|             | outside the map is wall. It is jaxued's 5 x 5 x 3 image cell for cell, one-hot  |
|             | coded (`to_jaxued` converts back). Walls do not hide what lies behind them      |
| reward      | 1 - 0.9 (t + 1) / T on reaching the goal at step t + 1 (T = `params.max_steps`, |
|             | 250), else 0                                                                    |
| episode     | `terminated` on reaching the goal; `truncated` after T steps (not terminated)   |
| info        | `level_hash` (int32, of the episode's walls, goal and start: constant while a   |
|             | level is replayed), `solved` (the goal reached on this step)                    |

The auto-reset (`Environment.step`) calls `reset`: it replays `params.level`, or draws a fresh
level where `params.random_level`. A curriculum gives each of a batch of environments its own
level by giving each its own params (`params_for_levels`, `rlsuite.loop.rollout.reset_each`).

Parity: observations (through `to_jaxued`), rewards and `terminated | truncated` equal jaxued
0.0.1's `Maze` (`jaxued/environments/maze/env.py`, with `penalize_time`, `see_agent=False`,
`normalize_obs=False`) step for step (tests/envs/test_ued_maze.py).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.maze.editor import MazeEditor
from rlsuite.envs.maze.held_out import NAMES, held_out_levels
from rlsuite.envs.maze.level import DIRECTIONS, Level, as_level, check_level, level_hash, pad
from rlsuite.envs.maze.mutator import mutate
from rlsuite.envs.maze.render import fit, render

from rlsuite.environment import Environment
from rlsuite.environment.evaluations import Evaluation, SolveRates, with_held_out
from rlsuite.environment.levels import Levels
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field

NUM_ACTIONS = 7  # MiniGrid's left, right, forward, pickup, drop, toggle, done
LEFT, RIGHT, FORWARD = 0, 1, 2
CHANNELS = 3  # wall, goal, empty
# jaxued's (MiniGrid's) image cell (object, colour, state) for each channel: wall (grey),
# goal (green), empty.
JAXUED_CELLS = np.array([[2, 5, 0], [8, 1, 0], [1, 0, 0]], np.uint8)


@struct.dataclass
class MazeParams:
    level: Level  # the level reset replays (one per environment for a curriculum)
    max_steps: int = 250  # T: the episode's horizon, and the reward's time scale
    random_level: bool = False  # reset draws a level from the generator instead


@struct.dataclass
class MazeState:
    level: Level  # the episode's level (its start included)
    agent_pos: jax.Array  # int32 [2] (x, y)
    agent_dir: jax.Array  # int32
    time: jax.Array  # int32, steps taken in the episode
    level_hash: jax.Array  # int32, level_hash(level)


class Maze(Environment):
    """A `height` x `width` maze whose level lives in `params`; see the module's docstring.

    `generator` (optional, static): a function `key -> Level` of this size (e.g.
    `rlsuite.envs.maze.make_generator`), used by `reset` where `params.random_level` (the
    default params set it when a generator is given)."""

    def __init__(
        self,
        height: int = 13,
        width: int = 13,
        view_size: int = 5,
        max_steps: int = 250,
        generator: Callable[[jax.Array], Level] | None = None,
    ):
        for field, value in (("height", height), ("width", width)):
            if _not_int(value) or value < 1:
                raise ValueError(f"Maze: invalid {field}={value!r}; allowed: an integer >= 1")
        if height * width < 2:
            raise ValueError(
                f"Maze: invalid size {height} x {width}; allowed: at least 2 cells (agent, goal)"
            )
        if _not_int(view_size) or view_size < 1 or view_size % 2 == 0:
            raise ValueError(f"Maze: invalid view_size={view_size!r}; allowed: an odd int >= 1")
        if _not_int(max_steps) or max_steps < 1:
            raise ValueError(f"Maze: invalid max_steps={max_steps!r}; allowed: an integer >= 1")
        if generator is not None:
            if not callable(generator):
                raise TypeError(
                    f"Maze: generator must be a function key -> Level, got {generator!r}"
                )
            out = jax.eval_shape(generator, jax.eval_shape(jax.random.key, 0))
            if not isinstance(out, Level) or tuple(out.wall_map.shape) != (height, width):
                got = tuple(out.wall_map.shape) if isinstance(out, Level) else type(out).__name__
                raise ValueError(
                    f"Maze: the generator returns levels of {got}; allowed: a Level of the "
                    f"environment's {height} x {width} (height x width)"
                )
        self.height, self.width, self.view_size = height, width, view_size
        self.max_steps, self.generator = max_steps, generator

    @property
    def default_params(self) -> MazeParams:
        """An open room, the agent top left facing right, the goal bottom right; random levels
        where a generator was given."""
        walls = np.zeros((self.height, self.width), bool)
        last = (self.width - 1, self.height - 1)
        level = Level(
            wall_map=jnp.asarray(walls),
            goal_pos=jnp.asarray(last, jnp.int32),
            agent_pos=jnp.asarray((0, 0), jnp.int32),
            agent_dir=jnp.asarray(0, jnp.int32),
            width=jnp.asarray(self.width, jnp.int32),
            height=jnp.asarray(self.height, jnp.int32),
        )
        return MazeParams(level, self.max_steps, self.generator is not None)

    def params_for_level(self, level: Level, params: MazeParams | None = None) -> MazeParams:
        """`params` (default: the default params) replaying `level`, padded to this size, with
        `random_level` off."""
        params = self.default_params if params is None else params
        check_level(level, self.name)
        return params.replace(level=pad(level, self.height, self.width), random_level=False)

    @property
    def evaluation(self) -> Evaluation:
        """Episodes; with a generator, their solve rates with greedy and with sampled actions
        (`SolveRates`) and, where the maze is 13 x 13, attempts on the eight named held-out
        mazes with their solve rates both ways."""
        if self.generator is None:
            return Evaluation()
        return with_held_out(self.levels(), SolveRates())

    def levels(self) -> Levels:
        """What a curriculum (`rlsuite.agents.ued`) needs: the generator, ACCEL's `mutate` and
        `params_for_levels`. Refused without a generator."""
        if self.generator is None:
            raise ValueError(
                f"{self.name}: a curriculum needs random levels, and this Maze has no generator; "
                "build it with Maze(..., generator=make_generator(...)) or envs.make('maze')"
            )
        held_out = None
        if self.height >= 13 and self.width >= 13:  # the eight named mazes are 13 x 13

            def held_out():
                return NAMES, held_out_levels(NAMES, self.height, self.width)

        def editor():
            n_walls = getattr(self.generator, "n_walls", 25)
            return MazeEditor(self.height, self.width, n_walls)

        return Levels(self.generator, mutate, params_for_levels, held_out, render, editor)

    def validate_params(self, params: MazeParams) -> None:
        if not isinstance(params.level, Level):
            raise ValueError(
                f"{self.name}: invalid params.level of type {type(params.level).__name__}; "
                "allowed: a rlsuite.envs.maze.Level"
            )
        shape = tuple(np.shape(params.level.wall_map))
        if len(shape) < 2 or shape[-2:] != (self.height, self.width):
            larger = len(shape) >= 2 and (shape[-2] > self.height or shape[-1] > self.width)
            hint = (
                "it is larger than the environment"
                if larger
                else f"pad it with rlsuite.envs.maze.pad(level, {self.height}, {self.width})"
            )
            raise ValueError(
                f"{self.name}: invalid params.level with a wall map of shape {shape}; allowed: "
                f"shape ({self.height}, {self.width}) (height, width): {hint}"
            )
        check_field(
            params,
            "max_steps",
            lambda v: (v >= 1) & (v == np.floor(v)),
            "an integer >= 1",
            self.name,
        )
        flag = params.random_level
        if not isinstance(flag, jax.core.Tracer):
            flag = np.asarray(flag)
            if flag.dtype.kind not in "biu" or not np.all((flag == 0) | (flag == 1)):
                raise ValueError(
                    f"{self.name}: invalid params.random_level={flag.tolist()!r}; allowed: a bool"
                )
            if np.any(flag) and self.generator is None:
                raise ValueError(
                    f"{self.name}: params.random_level is set but the environment has no "
                    "generator; build it with Maze(..., generator=make_generator(...))"
                )
        check_level(params.level, f"{self.name}: params.level")

    # ----------------------------------------------------------------- dynamics
    def reset_env(self, key: jax.Array, params: MazeParams):
        level = as_level(params.level)
        if self.generator is not None:
            level = jax.lax.cond(
                jnp.asarray(params.random_level, bool),
                lambda: as_level(self.generator(key)),
                lambda: level,
            )
        state = MazeState(
            level=level,
            agent_pos=level.agent_pos,
            agent_dir=level.agent_dir,
            time=jnp.zeros((), jnp.int32),
            level_hash=level_hash(level),
        )
        return self._observation(state), state

    def step_env(self, key, state: MazeState, action, params: MazeParams):
        level = state.level
        ahead = state.agent_pos + (action == FORWARD) * jnp.asarray(DIRECTIONS)[state.agent_dir]
        ahead = jnp.clip(ahead, 0, jnp.asarray([self.width - 1, self.height - 1], jnp.int32))
        wall = level.wall_map[ahead[1], ahead[0]]
        reached = jnp.all(ahead == level.goal_pos)
        position = jnp.where(wall | reached, state.agent_pos, ahead)
        turn = (action == RIGHT).astype(jnp.int32) - (action == LEFT).astype(jnp.int32)
        direction = (state.agent_dir + turn) % 4
        time = state.time + 1
        reward = ((1.0 - 0.9 * (time / params.max_steps)) * reached).astype(jnp.float32)
        truncated = (time >= params.max_steps) & ~reached
        state = state.replace(agent_pos=position, agent_dir=direction, time=time)
        info = {"level_hash": state.level_hash, "solved": reached}
        return self._observation(state), state, reward, reached, truncated, info

    def _observation(self, state: MazeState) -> jax.Array:
        """The view (see the module's docstring), flattened, then the direction one-hot."""
        v = self.view_size
        directions = jnp.asarray(DIRECTIONS)
        forward = directions[state.agent_dir]
        right = directions[(state.agent_dir + 1) % 4]
        across = jnp.arange(v)[:, None, None] - v // 2  # i: -V//2 (left) .. V//2 (right)
        along = (v - 1) - jnp.arange(v)[None, :, None]  # j: V-1 (far ahead) .. 0 (agent)
        cells = state.agent_pos + along * forward + across * right  # [V, V, 2] (x, y)
        x, y = cells[..., 0], cells[..., 1]
        inside = (x >= 0) & (x < self.width) & (y >= 0) & (y < self.height)
        walls = state.level.wall_map[
            jnp.clip(y, 0, self.height - 1), jnp.clip(x, 0, self.width - 1)
        ]
        goal = inside & (x == state.level.goal_pos[0]) & (y == state.level.goal_pos[1])
        wall = (walls | ~inside) & ~goal
        view = jnp.stack([wall, goal, ~wall & ~goal], axis=-1).astype(jnp.float32)
        heading = jax.nn.one_hot(state.agent_dir, 4, dtype=jnp.float32)
        return jnp.concatenate([view.reshape(-1), heading])

    def observation_space(self, params: MazeParams) -> Box:
        return Box(0.0, 1.0, (self.view_size * self.view_size * CHANNELS + 4,))

    def render(self, state: MazeState, params: MazeParams, width: int, height: int) -> np.ndarray:
        """uint8 RGB `[height, width, 3]`: the episode's level with the agent where it is now
        and facing as it does now (`rlsuite.envs.maze.render.fit`)."""
        level = state.level.replace(agent_pos=state.agent_pos, agent_dir=state.agent_dir)
        return fit(jax.tree.map(np.asarray, level), width, height)

    def action_space(self, params: MazeParams) -> Discrete:
        return Discrete(NUM_ACTIONS)

    def __repr__(self) -> str:
        generator = "" if self.generator is None else f", generator={self.generator!r}"
        return (
            f"Maze(height={self.height}, width={self.width}, view_size={self.view_size}, "
            f"max_steps={self.max_steps}{generator})"
        )


def _not_int(value) -> bool:
    return isinstance(value, bool) or not isinstance(value, int | np.integer)


def params_for_levels(params: MazeParams, levels: Level) -> MazeParams:
    """A batch of params [N] from one set of `params`: each environment replays its level of
    `levels` (a batched `Level` [N, H, W], e.g. from `stack`), `random_level` off. Give it to
    `rlsuite.loop.rollout.reset_each`."""
    n = np.shape(levels.wall_map)[0]
    params = params.replace(level=levels, random_level=False)
    batched = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (n, *np.shape(x))), params)
    return batched.replace(level=as_level(levels))


def to_jaxued(obs: jax.Array, view_size: int = 5) -> tuple[jax.Array, jax.Array]:
    """Our observation [..., V * V * 3 + 4] as jaxued's `Observation` fields: `(image, agent_dir)`,
    uint8 [..., V, V, 3] MiniGrid cells (object, colour, state) and int32 [...]."""
    obs = jnp.asarray(obs)
    v = view_size
    view = obs[..., : v * v * CHANNELS].reshape(*obs.shape[:-1], v, v, CHANNELS)
    image = jnp.einsum("...c,ck->...k", view, jnp.asarray(JAXUED_CELLS, jnp.float32))
    direction = jnp.argmax(obs[..., v * v * CHANNELS :], axis=-1).astype(jnp.int32)
    return image.astype(jnp.uint8), direction
