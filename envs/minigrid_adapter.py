"""MiniGrid tasks (XLand-MiniGrid's JAX ports) behind the `rlsuite.environment` contract.

`MiniGridEnv(task, **options)` wraps `xminigrid.make(task)` for the `MiniGrid-*` tasks that
XLand-MiniGrid registers (`minigrid_names()`: Empty, EmptyRandom, DoorKey, FourRooms, LockedRoom,
Memory, Unlock, UnlockPickUp, BlockedUnlockPickUp and Playground). Its raw step is used, no
XLand-MiniGrid wrapper; the one auto-reset is `Environment.step`'s.

* **Ends.** XLand-MiniGrid's step marks an episode's last step with `step_type == LAST` and tells
  a real end from a time limit by the discount: `discount == 0` where the task's goal was reached
  (or, in Memory, either end of the corridor), `discount == 1` where only the limit
  (`step_num == params.max_steps`) was. So `terminated = discount == 0` and `truncated = LAST and
  not terminated`: a step that both reaches the goal and the limit is a termination (no
  bootstrap), as XLand-MiniGrid's discount says. The reward is XLand-MiniGrid's,
  `1 - 0.9 * step_num / max_steps` on success and 0 otherwise (MiniGrid's), so it depends on the
  time limit.
* **Params** are XLand-MiniGrid's own `EnvParams` (`PlaygroundEnvParams` for MiniGrid-Playground).
  Every field of them is static (`pytree_node=False`: the pytree has no leaves), so a changed
  value compiles a new program and `jax.vmap` over params maps nothing. `max_steps` is the time
  limit (`env.max_episode_steps` holds the constructor's, for information) and may be changed
  through the params (`params.replace(max_steps=50)`); the fields that set array shapes
  (`height`, `width`, `view_size`, Playground's `num_objects`) are the constructor's and refused
  in params that differ from it.
* **Options** (the constructor's keywords) are the fields of the task's params: `max_steps`,
  `view_size`, `height`, `width` (the task's size; the name gives the default), `render_mode`, and
  Playground's `num_objects`. `max_steps` left out is the task's own default, derived from its
  size as in MiniGrid (e.g. `4 * height * width` for Empty, 100 for Empty-5x5).
* **Observation.** XLand-MiniGrid observes the agent's egocentric partial view, `[V, V, 2]` uint8
  of tile and colour ids (`V = view_size`: 7, or 3 for Memory), turned so that the agent looks
  up the view and stands at its bottom centre, row `V - 1`, column `V // 2`. It does not mask
  cells hidden behind walls, and it does not show what the agent carries (MiniGrid draws the
  carried object on the agent's cell; XLand-MiniGrid leaves that out). The view is relative to
  the agent, so where the agent faces in the room (its absolute direction) is not in it; MiniGrid
  gives it beside the image, and so does this adapter, as a third field of every cell. Ours is
  one uint8 array `[V, V, 3]` of category ids (`rlsuite.environment.spaces.Categories`, sizes
  `(NUM_TILES, NUM_COLORS, 4)`: (13, 12, 4) in XLand-MiniGrid 0.9.3, read from
  `xminigrid.core.constants`), which the networks one-hot encode into `[V, V, 29]` features
  (`rlsuite.networks.Encoder`); a step moves 147 bytes of ids rather than 5,684 of features:

  - field 0: the cell's tile id (0 empty / outside the grid, 1 floor, 2 wall, 3 ball, 4 square,
    5 pyramid, 6 goal, 7 key, 8 locked door, 9 closed door, 10 open door, 11 hex, 12 star);
  - field 1: the cell's colour id (0 none, 1 red, 2 green, 3 blue, 4 purple, 5 yellow, 6 grey,
    7 black, 8 orange, 9 white, 10 brown, 11 pink);
  - field 2: the agent's direction (0 up, 1 right, 2 down, 3 left, in the grid's rows and
    columns), the same in every cell.

  `observation_image` is the conversion.

* **Actions**: `Discrete(6)`, XLand-MiniGrid's ids: 0 forward, 1 turn right, 2 turn left,
  3 pick up, 4 put down, 5 toggle (Memory plays 3 as 5). Every action is legal in every state,
  so there is no action mask.
* **Resets.** `reset_env(key)` is XLand-MiniGrid's `reset(params, key)`; the reset key of our
  auto-reset is the contract's (`split_step_key`). XLand-MiniGrid's own auto-reset
  (`xminigrid.wrappers.GymAutoResetWrapper`) draws it from the state instead: it resets with
  `jax.random.split(state.key)[0]`, `state.key` being what the task's reset kept of its key (the
  key itself for Empty, a split of it for the random tasks). The two draw different start states
  from one key; given the same reset keys they step alike (the parity test feeds ours the
  wrapper's).

Pictures: `render(state, params, width, height)` draws the whole grid with XLand-MiniGrid's
`env.render` (its `rgb_array` mode: tiles of 32 pixels, the agent's view highlighted), on the
host in NumPy (`rlsuite.envs.suite_pictures.minigrid_picture`).

The `XLand-MiniGrid-R*` tasks are refused (`refused()`): their tasks are rulesets (a goal, rules
and objects) sampled from XLand-MiniGrid's benchmarks, which `xminigrid.load_benchmark`
downloads from Hugging Face, and nothing is downloaded at run time here. Without a benchmark
they run with XLand-MiniGrid's default ruleset, an empty room with no goal and no objects
(reward 0, episodes that end only at the time limit), which is no task to learn.

XLand-MiniGrid is imported lazily (`pip install xminigrid`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rlsuite.envs.suites import Suite

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Categories, Discrete

NUM_DIRECTIONS = 4
"""Directions the agent can face: the observation's last field."""

RENDER_MODES = ("rgb_array", "rich_text")
"""Values of XLand-MiniGrid's `render_mode` field."""

VARIABLE = ("max_steps", "render_mode")
"""Params fields that may differ from the constructor's (the others set array shapes)."""

_BENCHMARK = (
    "its tasks are rulesets (goal, rules, objects) from XLand-MiniGrid's benchmarks, which "
    "xminigrid.load_benchmark downloads from Hugging Face, and rlsuite downloads nothing at run "
    "time; without one it is an empty room with no goal or objects (reward always 0), no task "
    "to learn. The MiniGrid-* tasks run offline"
)


def installed() -> bool:
    """Whether XLand-MiniGrid can be imported."""
    try:
        import xminigrid  # noqa: F401
    except ImportError:
        return False
    return True


def minigrid_names() -> list[str]:
    """XLand-MiniGrid's MiniGrid tasks (e.g. `MiniGrid-DoorKey-5x5`), all of which run here."""
    import xminigrid

    return [name for name in xminigrid.registered_environments() if name.startswith("MiniGrid-")]


def refused() -> dict[str, str]:
    """XLand-MiniGrid's tasks that cannot run here (the `XLand-MiniGrid-R*` ones), and why."""
    import xminigrid

    runnable = set(minigrid_names())
    return {n: _BENCHMARK for n in xminigrid.registered_environments() if n not in runnable}


def sizes() -> tuple[int, int, int]:
    """The observation's fields' sizes: tile ids, colour ids and directions."""
    from xminigrid.core.constants import NUM_COLORS, NUM_TILES

    return NUM_TILES, NUM_COLORS, NUM_DIRECTIONS


def observation_ids(view: jax.Array, direction: jax.Array) -> jax.Array:
    """The uint8 `[V, V, 3]` ids of one observation (see the module's docstring).

    Args:
        view: XLand-MiniGrid's observation, `[V, V, 2]` integer tile and colour ids.
        direction: the agent's direction, an integer scalar in `[0, 4)`.

    Returns:
        uint8 `[V, V, 3]`: tile, colour and direction ids.
    """
    facing = jnp.broadcast_to(direction.astype(jnp.uint8), view.shape[:-1])[..., None]
    return jnp.concatenate([view.astype(jnp.uint8), facing], axis=-1)


class MiniGridEnv(Environment):
    """An XLand-MiniGrid MiniGrid task under our contract (see the module's docstring).

    Args:
        task: one of `minigrid_names()` (e.g. `"MiniGrid-DoorKey-5x5"`).
        **options: fields of the task's XLand-MiniGrid params (`max_steps`, `view_size`, `height`,
            `width`, `render_mode`; Playground's `num_objects`).

    Raises:
        ValueError: for an `XLand-MiniGrid-R*` task (saying why), an unknown task (listing the
            allowed ones), an unknown option (listing the allowed ones) or a bad option value.
    """

    def __init__(self, task: str, **options: Any) -> None:
        if not isinstance(task, str):
            raise ValueError(f"MiniGrid task must be a string, got {type(task).__name__}")
        why = refused().get(task)
        if why is not None:
            raise ValueError(f"XLand-MiniGrid task {task!r} cannot run here: {why}")
        names = minigrid_names()
        if task not in names:
            raise ValueError(f"unknown MiniGrid task {task!r}; allowed: {', '.join(names)}")
        import xminigrid

        env, registered = xminigrid.make(task)
        fields = [f.name for f in dataclasses.fields(registered)]
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise ValueError(
                f"MiniGrid task {task!r}: unknown option(s) {unknown}; allowed: {', '.join(fields)}"
            )
        for field, value in options.items():
            _check_option(f"MiniGrid task {task!r}: ", field, value)
        # The task's defaults for its registered size (or the one given): `max_steps` left out
        # is derived from the size, as the task's own `default_params` does.
        size = {"height": registered.height, "width": registered.width}
        self.task = task
        self.options = dict(options)
        self.xminigrid_env = env
        self._default_params = env.default_params(**{**size, **options})
        self.max_episode_steps = int(self._default_params.max_steps)

    # ----------------------------------------------------------------- contract
    @property
    def default_params(self) -> Any:
        return self._default_params

    @property
    def name(self) -> str:
        return f"minigrid/{self.task}"

    def validate_params(self, params: Any) -> None:
        default = self._default_params
        for field in dataclasses.fields(params):
            value, fixed = getattr(params, field.name), getattr(default, field.name)
            if field.name in VARIABLE:
                _check_option(f"{self.name}: params.", field.name, value)
            elif value != fixed:
                raise ValueError(
                    f"{self.name}: params.{field.name}={value!r} differs from this "
                    f"environment's {fixed!r}; it sets array shapes, so give it to the "
                    f"constructor (make({self.name!r}, {field.name}={value!r})); allowed in "
                    f"params: {fixed!r}"
                )

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        timestep = self.xminigrid_env.reset(params, key)
        return _image(timestep), timestep.state

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any) -> StepResult:
        # XLand-MiniGrid's step is deterministic (`key` is unused) and reads only the state of
        # the timestep it is given.
        from xminigrid.types import StepType, TimeStep

        before = TimeStep(
            state=state,
            step_type=StepType.MID,
            reward=jnp.zeros((), jnp.float32),
            discount=jnp.ones((), jnp.float32),
            observation=None,
        )
        timestep = self.xminigrid_env.step(params, before, action)
        terminated = timestep.discount == 0
        truncated = jnp.logical_and(timestep.step_type == StepType.LAST, ~terminated)
        reward = jnp.asarray(timestep.reward, jnp.float32)
        return _image(timestep), timestep.state, reward, terminated, truncated, {}

    def observation_space(self, params: Any) -> Categories:
        size = int(params.view_size)
        return Categories(sizes(), (size, size, 3), jnp.uint8)

    def action_space(self, params: Any) -> Discrete:
        return Discrete(self.xminigrid_env.num_actions(params))

    def render(self, state: Any, params: Any, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of one state, drawn by XLand-MiniGrid's `render` on
        the host (not jittable; `rlsuite.envs.suite_pictures`)."""
        from rlsuite.envs.suite_pictures import minigrid_picture

        return minigrid_picture(self.xminigrid_env, state, params, width, height)

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"MiniGridEnv({self.task!r}{options})"


def _image(timestep: Any) -> jax.Array:
    return observation_ids(timestep.observation, timestep.state.agent.direction)


def _check_option(where: str, field: str, value: Any) -> None:
    """`ValueError` naming `field` (after `where`) and its allowed values where `value` is not
    one of them."""
    if field == "render_mode":
        if value not in RENDER_MODES:
            raise ValueError(f"{where}render_mode={value!r}; allowed: {', '.join(RENDER_MODES)}")
        return
    least = {"height": 3, "width": 3, "view_size": 3, "max_steps": 1}.get(field, 0)
    whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if not whole or value < least:
        raise ValueError(
            f"{where}{field}={value!r}; allowed: an integer >= {least}"
            + (", odd" if field == "view_size" else "")
        )
    if field == "view_size" and value % 2 == 0:
        raise ValueError(
            f"{where}view_size={value!r}; allowed: an odd integer >= 3 (the agent "
            "stands at the view's bottom centre)"
        )


SUITE = Suite(
    prefix="minigrid/",
    title="XLand-MiniGrid",
    names=minigrid_names,
    environment=MiniGridEnv,
    refused=refused,
    installed=installed,
    extra="minigrid",
    limit="max_steps",
    renders="every MiniGrid task, through XLand-MiniGrid's rgb_array renderer",
)
"""XLand-MiniGrid's MiniGrid tasks: every option is `MiniGridEnv`'s (a field of the task's
params), the time limit among them (`max_steps`, which XLand-MiniGrid counts itself)."""
