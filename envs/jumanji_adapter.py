"""Jumanji's single-agent tasks behind the `rlsuite.environment` contract.

`JumanjiEnv(task, **options)` wraps `jumanji.make(task, **options)` (no Jumanji wrapper): our
`reset_env` is Jumanji's `reset`, our `step_env` its `step`, and the one auto-reset of
`Environment.step` replaces Jumanji's `AutoResetWrapper`. Names are Jumanji's registered ids
(`jumanji_names()`, e.g. `Snake-v1`), `jumanji/Snake-v1` in `envs.make`.

* **Observations** are one float32 array per task, made from Jumanji's observation by
  `JumanjiEnv.observe` (a pure function of that observation, so it applies to observations
  Jumanji's own environment returns): an image `[H, W, C]` for the grid tasks, a flat vector for
  the others; `OBSERVATIONS` (`envs/jumanji_observations.py`) says what each holds, channel by
  channel or block by block. A step count is a feature (divided by the time limit, one constant
  channel or the vector's last entry) only where Jumanji observes it and the task has a time
  limit.
* **Actions** are one `Discrete(n)` index. A multi-discrete Jumanji action (Minesweeper
  `[row, col]`, BinPack `[ems, item]`, RubiksCube `[face, depth, amount]`, Sudoku
  `[row, col, digit]`) is flattened row-major: index `i` is `jnp.unravel_index(i, dims)`
  (`JumanjiEnv.decode`).
* **Masks**: where Jumanji's observation has an `action_mask`, `action_mask(state, params)` is
  that mask, flattened in the same row-major order (kept in `JumanjiState.action_mask`, as
  Jumanji returned it with the state). One exception: a Snake boxed in by its own body has no
  legal move, and its mask marks all four legal (each ends the episode), since the contract
  asks for at least one. RubiksCube has no mask (every move is legal).
* **terminated / truncated**: Jumanji folds its time limits into termination (a `LAST` step with
  discount 0). Here a `LAST` step is `truncated` where the task's step count reached its time
  limit and nothing else ended the episode, and `terminated` otherwise. `TIME_LIMITS` lists the
  tasks with a limit and what else ends their episodes; `env.max_episode_steps` is the limit
  (`time_limit` option where the task takes one), `None` for the tasks without one:

  | task                            | time limit (default)  | a real end (terminated)           |
  |---------------------------------|-----------------------|-----------------------------------|
  | Snake-v1                        | 4000                  | illegal move, grid filled         |
  | Maze-v0                         | rows * cols = 100     | target reached, no move possible  |
  | RubiksCube-v0                   | 200                   | cube solved                       |
  | RubiksCube-partly-scrambled-v0  | 20                    | cube solved                       |
  | SlidingTilePuzzle-v0            | 500                   | puzzle solved                     |
  | Game2048-v1                     | none                  | no move changes the board         |
  | Minesweeper-v0                  | none                  | mine, board solved, cell revealed |
  |                                 |                       | twice                             |
  | BinPack-v2, Knapsack-v1         | none                  | nothing fits, an illegal choice   |
  | TSP-v1, CVRP-v1                 | none                  | all visited, an illegal choice    |
  | Sudoku-v0, Sudoku-very-easy-v0  | none                  | no legal digit, an illegal one    |
  | GraphColoring-v1                | none                  | all coloured, an illegal colour   |

* **info** holds Jumanji's `extras` (fixed-shape arrays) as `info["jumanji/<name>"]`
  (Game2048 `highest_tile`, BinPack `volume_utilization`, ...).
* **Randomness** lives in Jumanji's state (`state.key`), so `step_env` ignores its key; Jumanji's
  keys are raw `uint32[2]` keys, and a typed key given to `reset_env` is turned into its raw
  data first (the same bits, so `jax.random.key(0)` and `jax.random.PRNGKey(0)` start the same
  episode).
* **Params**: Jumanji's environments have none; `JumanjiParams` is empty. Options are the
  task's plain constructor arguments (`option_defaults(task)`: `time_limit`, Snake's
  `num_rows`, BinPack's `obs_num_ems`, ...).

* **Pictures**: `render(state, params, width, height)` draws a state with the task's own
  matplotlib viewer, on the host (`rlsuite.envs.suite_pictures.jumanji_picture`).

Refused (`refused()`): the multi-agent tasks (a reward and an action per agent; our agents
take one of each), Sokoban (Jumanji downloads its levels at construction; nothing is
downloaded at run time here), and the single-agent tasks not adapted yet, each saying why.

Jumanji is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.jumanji_observations import OBSERVATIONS
from rlsuite.envs.suites import Suite

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Box, Discrete

# ----------------------------------------------------------------- time limits


def _snake_end(env: Any, state: Any, action: jax.Array, next_state: Any) -> jax.Array:
    return ~state.action_mask[action] | jnp.all(next_state.body)


def _maze_end(env: Any, state: Any, action: jax.Array, next_state: Any) -> jax.Array:
    reached = next_state.agent_position == next_state.target_position
    return reached | ~jnp.any(next_state.action_mask)


def _rubiks_end(env: Any, state: Any, action: jax.Array, next_state: Any) -> jax.Array:
    from jumanji.environments.logic.rubiks_cube.utils import is_solved

    return is_solved(next_state.cube)


def _sliding_tile_end(env: Any, state: Any, action: jax.Array, next_state: Any) -> jax.Array:
    return jnp.array_equal(next_state.puzzle, env.solved_puzzle)


@dataclasses.dataclass(frozen=True)
class EpisodeEnd:
    """How a task with a time limit (its Jumanji step ends the episode at `step_count >=
    env.time_limit`) ends for real: `real_end(env, state, action, next_state)` says whether the
    step also ended it for a real reason (`ends`, in words), which makes it a termination, not a
    truncation. (Not `rlsuite.environment.wrappers.TimeLimit`: Jumanji counts this limit.)"""

    real_end: Callable[[Any, Any, jax.Array, Any], jax.Array]
    ends: str


TIME_LIMITS: dict[str, EpisodeEnd] = {
    "Snake-v1": EpisodeEnd(
        _snake_end, "an illegal move (off the grid or into the body) or a snake filling the grid"
    ),
    "Maze-v0": EpisodeEnd(_maze_end, "the target reached (or no move possible)"),
    "RubiksCube-v0": EpisodeEnd(_rubiks_end, "the cube solved"),
    "SlidingTilePuzzle-v0": EpisodeEnd(_sliding_tile_end, "the puzzle solved"),
}
TIME_LIMITS["RubiksCube-partly-scrambled-v0"] = TIME_LIMITS["RubiksCube-v0"]

# ----------------------------------------------------------------- names

_MULTI_AGENT = (
    "a multi-agent task (a reward, an observation and an action per agent); rlsuite's agents "
    "take one of each"
)
_REFUSED = {
    "Connector-v3": _MULTI_AGENT,
    "Cleaner-v0": _MULTI_AGENT,
    "MMST-v0": _MULTI_AGENT,
    "MultiCVRP-v0": _MULTI_AGENT,
    "RobotWarehouse-v0": _MULTI_AGENT,
    "LevelBasedForaging-v0": _MULTI_AGENT,
    "SearchAndRescue-v0": _MULTI_AGENT,
    "Sokoban-v0": (
        "Jumanji downloads its Boxoban levels from the Hugging Face hub when it is built, and "
        "rlsuite downloads nothing at run time"
    ),
    "Tetris-v0": "not adapted: its observation is a grid and a separate tetromino of another shape",
    "PacMan-v1": "not adapted: its observation mixes a 31 x 28 grid with the positions of the "
    "player and the ghosts, pellets, power-ups, a timer and the score",
    "JobShop-v0": "not adapted: its action is one operation per machine (a multi-agent-like "
    "joint action)",
    "FlatPack-v0": "not adapted: its observation is a grid and a stack of block shapes",
}


def installed() -> bool:
    """Whether Jumanji can be imported (checked without importing it)."""
    return importlib.util.find_spec("jumanji") is not None


def jumanji_names() -> list[str]:
    """Jumanji's tasks adapted here (its ids, without our `jumanji/` prefix)."""
    return list(OBSERVATIONS)


def refused() -> dict[str, str]:
    """Jumanji's registered tasks that are not adapted, and why."""
    return dict(_REFUSED)


def _check_task(task: str) -> None:
    if task in _REFUSED:
        raise ValueError(f"Jumanji task {task!r} cannot run here: {_REFUSED[task]}")
    if task not in OBSERVATIONS:
        raise ValueError(f"unknown Jumanji task {task!r}; allowed: {', '.join(jumanji_names())}")


def option_defaults(task: str) -> dict[str, Any]:
    """The options `JumanjiEnv(task, ...)` takes and their defaults: the task's constructor
    arguments whose values are plain numbers or flags (`time_limit`, `num_rows`, ...), with the
    values Jumanji's registered task uses."""
    _check_task(task)
    import jumanji

    return _plain_options(jumanji.make(task))


def _plain_options(env: Any) -> dict[str, Any]:
    options = {}
    for name in inspect.signature(type(env).__init__).parameters:
        value = getattr(env, name, None)
        if isinstance(value, bool | int | float):
            options[name] = value
    return options


def _check_option(task: str, name: str, value: Any, default: Any) -> None:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"Jumanji task {task!r}: {name}={value!r}; allowed: true or false")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Jumanji task {task!r}: {name}={value!r}; allowed: an integer >= 1")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"Jumanji task {task!r}: {name}={value!r}; allowed: a number")


# ----------------------------------------------------------------- the environment


@struct.dataclass
class JumanjiParams:
    """Jumanji's tasks have no params; the empty pytree keeps the contract uniform."""


@struct.dataclass
class JumanjiState:
    """Jumanji's state and the action mask its last observation gave (flattened to our action
    indices; `None` for a task without masks)."""

    jumanji: Any
    action_mask: jax.Array | None = None


class JumanjiEnv(Environment):
    """A Jumanji task under our contract (see the module's docstring).

    Args:
        task: one of `jumanji_names()` (e.g. `"Snake-v1"`).
        **options: the task's plain constructor arguments (`option_defaults(task)`), e.g.
            `time_limit=50` for Snake, Maze or RubiksCube.

    Raises:
        ValueError: for an unknown or refused task, or an unknown or invalid option (checked
            before anything is compiled).
    """

    def __init__(self, task: str, **options: Any) -> None:
        _check_task(task)
        defaults = option_defaults(task)
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            allowed = ", ".join(sorted(defaults)) or "none"
            raise ValueError(
                f"Jumanji task {task!r}: unknown option(s) {unknown}; allowed: {allowed}"
            )
        for name, value in options.items():
            _check_option(task, name, value, defaults[name])
        import jumanji
        from jumanji import specs

        self.task = task
        self.options = dict(options)
        self.jumanji_env = jumanji.make(task, **options)
        self._observation = OBSERVATIONS[task]
        self._episode_end = TIME_LIMITS.get(task)
        self.max_episode_steps: int | None = (
            None if self._episode_end is None else int(self.jumanji_env.time_limit)
        )
        spec = self.jumanji_env.action_spec
        if isinstance(spec, specs.MultiDiscreteArray):
            self.action_dims = tuple(int(n) for n in np.asarray(spec.num_values))
        else:
            self.action_dims = (int(spec.num_values),)
        first = jax.eval_shape(self.jumanji_env.reset, jax.ShapeDtypeStruct((2,), jnp.uint32))
        self._has_mask = hasattr(first[1].observation, "action_mask")
        obs = jax.eval_shape(self.reset_env, jax.random.key(0), JumanjiParams())[0]
        self.observation_shape = tuple(obs.shape)

    # ----------------------------------------------------------------- conversions
    def observe(self, observation: Any) -> jax.Array:
        """Our observation (float32; `OBSERVATIONS[task].layout`) of one Jumanji observation."""
        return self._observation.convert(self.jumanji_env, observation)

    def decode(self, action: jax.Array) -> jax.Array:
        """Jumanji's action for our index: the index itself for a `DiscreteArray` action, the
        row-major `[i, j, ...]` (`jnp.unravel_index`) for a `MultiDiscreteArray` one."""
        action = jnp.asarray(action, jnp.int32)
        if len(self.action_dims) == 1:
            return action
        return jnp.stack(jnp.unravel_index(action, self.action_dims)).astype(jnp.int32)

    def suite_mask(self, observation: Any) -> jax.Array | None:
        """Jumanji's `action_mask` of `observation`, flattened to our indices (None without)."""
        if not self._has_mask:
            return None
        return jnp.asarray(observation.action_mask, bool).reshape(-1)

    # ----------------------------------------------------------------- contract
    @property
    def has_action_mask(self) -> bool:
        """Whether the task has masks: Jumanji's observation has an `action_mask`."""
        return self._has_mask

    @property
    def default_params(self) -> JumanjiParams:
        return JumanjiParams()

    @property
    def name(self) -> str:
        return f"jumanji/{self.task}"

    def reset_env(self, key: jax.Array, params: JumanjiParams) -> tuple[jax.Array, JumanjiState]:
        if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
        state, timestep = self.jumanji_env.reset(key)
        obs = timestep.observation
        return self.observe(obs), JumanjiState(state, self.suite_mask(obs))

    def step_env(
        self, key: jax.Array, state: JumanjiState, action: jax.Array, params: JumanjiParams
    ) -> StepResult:
        # Jumanji's randomness is in its state (`state.key`): `key` is unused.
        jumanji_action = self.decode(action)
        next_state, timestep = self.jumanji_env.step(state.jumanji, jumanji_action)
        last = timestep.last()
        if self._episode_end is None:
            truncated = jnp.zeros((), bool)
        else:
            limited = next_state.step_count >= self.jumanji_env.time_limit
            real = self._episode_end.real_end(
                self.jumanji_env, state.jumanji, jumanji_action, next_state
            )
            truncated = last & limited & ~real
        terminated = last & ~truncated
        obs = timestep.observation
        info = {f"jumanji/{k}": jnp.asarray(v) for k, v in timestep.extras.items()}
        return (
            self.observe(obs),
            JumanjiState(next_state, self.suite_mask(obs)),
            jnp.asarray(timestep.reward, jnp.float32),
            jnp.asarray(terminated, bool),
            jnp.asarray(truncated, bool),
            info,
        )

    def action_mask(self, state: JumanjiState, params: JumanjiParams) -> jax.Array | None:
        if not self._has_mask:
            return None
        mask = state.action_mask
        return mask | ~jnp.any(mask)  # a boxed-in Snake: every move (each ends the episode)

    def observation_space(self, params: JumanjiParams) -> Box:
        high = self._observation.high
        if self.task == "BinPack-v2" and not self.jumanji_env.normalize_dimensions:
            high = np.inf  # lengths in millimetres
        return Box(0.0, high, self.observation_shape, jnp.float32)

    def action_space(self, params: JumanjiParams) -> Discrete:
        return Discrete(int(np.prod(self.action_dims)))

    def render(self, state: JumanjiState, params: JumanjiParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of one state, drawn by the task's matplotlib viewer on
        the host (not jittable; `rlsuite.envs.suite_pictures`)."""
        from rlsuite.envs.suite_pictures import jumanji_picture

        return jumanji_picture(self, self.jumanji_env, state.jumanji, width, height)

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"JumanjiEnv({self.task!r}{options})"


SUITE = Suite(
    prefix="jumanji/",
    title="Jumanji",
    names=jumanji_names,
    environment=JumanjiEnv,
    refused=refused,
    installed=installed,
    extra="jumanji",
    limit="time_limit",
    option_defaults=option_defaults,
    renders="every adapted Jumanji task, through the task's matplotlib viewer",
)
"""Jumanji's single-agent tasks: every option is `JumanjiEnv`'s (the task's constructor
arguments), the time limit among them (`time_limit`, which Jumanji counts itself)."""
