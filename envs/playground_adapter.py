"""MuJoCo Playground's DeepMind Control suite behind the `rlsuite.environment` contract.

`PlaygroundEnv(task, impl="jax", randomize=False, **config)` wraps the *raw* Playground
environment `mujoco_playground.dm_control_suite.load(task, config_overrides=...)` (MJX physics,
the task's XML shipped in the wheel): no Playground or brax training wrapper. What Playground calls
`done` is a termination (the DM Control tasks end early only where the physics turned to NaN);
the task's `episode_length` (its config, 1,000 control steps) is our time limit, applied by
`rlsuite.environment.wrappers.TimeLimit` (`env.max_episode_steps`), so `terminated` and
`truncated` stay apart and a truncated step bootstraps from `info["final_observation"]`, the
observation the episode ended in. Every episode starts from a fresh random state (Playground's
`full_reset`), the per-term rewards (`reward/upright`, ...: Playground's `metrics`) are in `info`,
and `config["action_repeat"]` repeats an action and sums its rewards as Playground's
`EpisodeWrapper` does.

Which tasks: the DM Control suite's (`playground_names()`), less those the installed MuJoCo cannot
build (`unbuildable()`: Reacher's model calls `MjSpec.find_body`, which MuJoCo 3.17 lacks).
Playground's locomotion and manipulation tasks load robot models from MuJoCo Menagerie, which
Playground clones from GitHub at first load; nothing is downloaded at run time here, so they are
refused by name (`refused()`: these and the `unbuildable()` ones, each saying why). A task whose
observation is a dict (`vision=True`: pixels from MJX's renderer) is refused by name: the agents
take one array.

`impl`: MJX's implementation, `"jax"` (XLA; the default, and the one that runs on a CPU) or
`"warp"` (NVIDIA Warp kernels, for a CUDA GPU with Warp installed; refused by name elsewhere,
`usable_impls()`). Playground's own default, `warp`, compiles Warp kernels on a CPU; rlsuite asks
for `jax` unless told otherwise.

Physics as params: `PlaygroundParams` holds the model fields a researcher randomises, read from
the task's model (`body_mass [nbody]`, `geom_friction [ngeom, 3]`, `dof_damping [nv]`,
`actuator_gain [nu]`, the first gain parameter: a motor's force per unit of control). They are
traced data, so `jax.vmap` over them steps each environment of a batch with its own model, and
`envs.make("playground/CartpoleBalance", body_mass=[0, 1, 0.2])` or `--env-option` sets them.
An episode steps with the params it is given or, with `randomize=True`, with the physics its
reset drew around them with the task's randomiser (`PlaygroundEnv.randomiser`; `RANDOMISATIONS`
says which fields each task scales and how far: `envs/playground_physics.py`, beside
`PlaygroundParams`) and kept in its state (`PlaygroundState.physics`), so domain randomisation
is a fresh draw at every reset, as the UED maze's DR is a fresh level at every reset. The params
are not copied into the state where they are not drawn: a batch that shares them keeps one
model, not one per environment, and steps as Playground's own environment does, to the bit.

A disturbance channel (`Environment.disturb`, for an adversary: `rlsuite.agents.rarl`): a force
in the world frame at the centre of mass of each of the task's `DISTURBED_BODIES`
(`disturbance_shape` `(3 * bodies,)`, x, y, z per body), MJX's `xfrc_applied`, for the step that
follows (over its action repeats). Tasks without an entry have no channel.

Playground and MJX are imported lazily (`pip install "rlsuite[playground]"`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.brax_adapter import _like, _normalise
from rlsuite.envs.mujoco_warnings import route_mujoco_warnings
from rlsuite.envs.playground_physics import (  # noqa: F401 (RANDOMISATIONS: part of this face)
    RANDOMISATIONS,
    PlaygroundParams,
    Randomisation,
    make_randomiser,
    randomisation,
)
from rlsuite.envs.rendering import mujoco_image
from rlsuite.envs.suites import Suite

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Box
from rlsuite.ops.validators import check_field

IMPLS = ("jax", "warp")
"""MJX implementations `PlaygroundEnv` accepts (those this platform runs: `usable_impls()`)."""


def usable_impls() -> tuple[str, ...]:
    """The `IMPLS` this platform runs: `warp` only on a CUDA GPU with NVIDIA Warp installed
    (MJX's Warp kernels are CUDA's; on a CPU they fail inside the trace and the run hangs)."""
    import importlib.util

    warp = jax.default_backend() == "gpu" and importlib.util.find_spec("warp") is not None
    return IMPLS if warp else ("jax",)


_MENAGERIE = (
    "it loads its robot from MuJoCo Menagerie, which Playground downloads (git clone from "
    "GitHub) at first load, and rlsuite downloads nothing at run time; the DM Control suite "
    "tasks run offline"
)


def installed() -> bool:
    """Whether MuJoCo Playground can be imported."""
    try:
        _suite()
    except ImportError:
        return False
    return True


def _suite():
    """Playground's `dm_control_suite` module."""
    return _quietly_imported("mujoco_playground._src.dm_control_suite")


def _quietly_imported(module: str):
    """`module`, imported with what its import prints to stdout (MJX's notices, where NVIDIA
    Warp is not installed, that it failed to import it) left out."""
    import importlib

    with contextlib.redirect_stdout(io.StringIO()):
        imported = importlib.import_module(module)
    route_mujoco_warnings()
    return imported


def unbuildable() -> dict[str, str]:
    """DM Control suite tasks that the installed MuJoCo cannot build, and why."""
    import mujoco

    if hasattr(mujoco.MjSpec, "find_body"):
        return {}
    why = (
        f"Playground builds its model with MjSpec.find_body, which mujoco {mujoco.__version__} "
        "(the pinned version) does not have"
    )
    return {"ReacherEasy": why, "ReacherHard": why}


def refused() -> dict[str, str]:
    """Playground's tasks that cannot run here, and why: the locomotion and manipulation ones
    (Menagerie's robots) and the DM Control suite's that the installed MuJoCo cannot build
    (`unbuildable()`)."""
    locomotion = _quietly_imported("mujoco_playground._src.locomotion")
    manipulation = _quietly_imported("mujoco_playground._src.manipulation")
    menagerie = {name: _MENAGERIE for name in (*locomotion.ALL_ENVS, *manipulation.ALL_ENVS)}
    return {**menagerie, **unbuildable()}


def playground_names() -> list[str]:
    """The DM Control suite tasks that run here (Playground's names, e.g. `CartpoleBalance`)."""
    broken = unbuildable()
    return [name for name in _suite().ALL_ENVS if name not in broken]


def option_defaults(task: str) -> dict[str, Any]:
    """The constructor's options of `task` and their defaults (`impl`, `randomize` and the
    task's Playground config, flattened), for reading command-line values as their types."""
    config = _flatten(_suite().get_default_config(task).to_dict())
    return {**config, "impl": "jax", "randomize": False}


# The bodies an adversary pushes (RARL's cartpole adversary pushes the pole).
DISTURBED_BODIES: dict[str, tuple[str, ...]] = {
    "CartpoleBalance": ("pole_1",),
    "CartpoleSwingup": ("pole_1",),
}


@struct.dataclass
class PlaygroundState:
    """Playground's `State` (`data`, `obs`, `reward`, `done`, `metrics`, `info`) and, with
    `randomize=True`, the physics its episode runs with (drawn at its reset; `None` otherwise:
    the episode steps with the params it is given)."""

    playground: Any
    physics: PlaygroundParams | None = None


class PlaygroundEnv(Environment):
    """A raw Playground DM Control suite task under our contract (see the module's docstring).

    Args:
        task: one of `playground_names()` (e.g. `"CartpoleBalance"`).
        impl: MJX's implementation, one of `IMPLS` (default `"jax"`).
        randomize: draw the physics of every episode with the task's randomiser.
        **config: overrides of the task's Playground config (`episode_length`, `ctrl_dt`,
            `action_repeat`, ...; a nested key with dots, `vision_config.nworld`).

    Raises:
        ValueError: for an unknown or unusable task, an unknown `impl` or config key, or a task
            whose observation is a dict (checked before anything is compiled).
    """

    def __init__(
        self, task: str, impl: str = "jax", randomize: bool = False, **config: Any
    ) -> None:
        why = refused().get(task)
        if why is not None:
            raise ValueError(f"Playground task {task!r} cannot run here: {why}")
        suite = _suite()
        names = playground_names()
        if task not in names:
            raise ValueError(f"unknown Playground task {task!r}; allowed: {', '.join(names)}")
        if impl not in IMPLS:
            raise ValueError(f"PlaygroundEnv: impl={impl!r}; allowed: {', '.join(IMPLS)}")
        if impl not in usable_impls():
            raise ValueError(
                f"PlaygroundEnv: impl={impl!r} needs a CUDA GPU with NVIDIA Warp installed, and "
                f"this platform is {jax.default_backend()}; allowed here: "
                f"{', '.join(usable_impls())}"
            )
        if not isinstance(randomize, bool):
            raise ValueError(f"PlaygroundEnv: randomize={randomize!r}; allowed: true or false")
        defaults = _flatten(suite.get_default_config(task).to_dict())
        unknown = sorted(set(config) - set(defaults))
        if unknown:
            raise ValueError(
                f"Playground task {task!r}: unknown config key(s) {unknown}; allowed: "
                f"{', '.join(sorted(set(defaults) - {'impl'}))}, impl, randomize, and the "
                f"physics params {', '.join(f.name for f in dataclasses.fields(PlaygroundParams))}"
            )
        if config.get("vision"):
            raise ValueError(
                f"Playground task {task!r} with vision=True observes a dict of pixels rendered "
                "by MJX; rlsuite's agents take one array: leave vision off"
            )
        self.task = task
        self.impl = impl
        self.randomize = randomize
        self.config_overrides = dict(config)
        self.playground_env = suite.load(task, config_overrides={**config, "impl": impl})
        pg_config = self.playground_env._config
        self.action_repeat = int(pg_config.action_repeat)
        self.max_episode_steps = math.ceil(int(pg_config.episode_length) / self.action_repeat)
        self.action_size = int(self.playground_env.action_size)
        self._model = self.playground_env.mjx_model
        mj_model = self.playground_env.mj_model
        self._body_names = [mj_model.body(i).name for i in range(mj_model.nbody)]
        pushed = DISTURBED_BODIES.get(task, ())
        self._disturbed = np.asarray([self._body_names.index(b) for b in pushed], np.int32)
        shape = jax.eval_shape(self.playground_env.reset, jax.ShapeDtypeStruct((2,), jnp.uint32))
        if not isinstance(shape.obs, jax.ShapeDtypeStruct) or shape.obs.ndim != 1:
            keys = sorted(shape.obs) if isinstance(shape.obs, dict) else shape.obs
            raise ValueError(
                f"Playground task {task!r} observes {keys!r}; rlsuite's agents take one vector"
            )
        self.observation_size = int(shape.obs.shape[0])

    # ----------------------------------------------------------------- contract
    @property
    def default_params(self) -> PlaygroundParams:
        model = self._model
        return PlaygroundParams(
            body_mass=jnp.asarray(model.body_mass, jnp.float32),
            geom_friction=jnp.asarray(model.geom_friction, jnp.float32),
            dof_damping=jnp.asarray(model.dof_damping, jnp.float32),
            actuator_gain=jnp.asarray(model.actuator_gainprm[:, 0], jnp.float32),
        )

    def validate_params(self, params: PlaygroundParams) -> None:
        default = self.default_params
        for field in dataclasses.fields(params):
            name = field.name
            shape = tuple(getattr(default, name).shape)
            value = getattr(params, name)
            if not isinstance(value, jax.core.Tracer) and np.shape(value) != shape:
                raise ValueError(
                    f"{self.name}: invalid params.{name} of shape {np.shape(value)}; allowed: "
                    f"shape {shape}"
                )
            check_field(params, name, lambda v: v >= 0, "values >= 0", self.name)

    @property
    def name(self) -> str:
        return f"playground/{self.task}"

    def model(self, physics: PlaygroundParams) -> Any:
        """The task's `mjx.Model` with the fields of `physics`."""
        model = self._model
        return model.replace(
            body_mass=physics.body_mass,
            geom_friction=physics.geom_friction,
            dof_damping=physics.dof_damping,
            actuator_gainprm=model.actuator_gainprm.at[:, 0].set(physics.actuator_gain),
        )

    @contextlib.contextmanager
    def _stepping_with(self, physics: PlaygroundParams):
        """Playground's environment reading the model of `physics` (its methods read
        `self.mjx_model`; Playground's own domain randomisation swaps it the same way)."""
        env = self.playground_env
        nominal = env._mjx_model
        env._mjx_model = self.model(physics)
        try:
            yield env
        finally:
            env._mjx_model = nominal

    def randomiser(self) -> Callable[[jax.Array, PlaygroundParams], PlaygroundParams]:
        """`(key, params) -> params`: the task's physics drawn around `params` (jit- and
        vmap-able; see `RANDOMISATIONS`)."""
        return make_randomiser(randomisation(self.task), self._body_names)

    def reset_env(self, key: jax.Array, params: PlaygroundParams) -> tuple[jax.Array, Any]:
        physics = None
        if self.randomize:
            key, key_physics = jax.random.split(key)
            physics = self.randomiser()(key_physics, params)
        with self._stepping_with(params if physics is None else physics) as env:
            state = _normalise(env.reset(key))
        return state.obs, PlaygroundState(state, physics)

    def step_env(
        self, key: jax.Array, state: PlaygroundState, action: jax.Array, params: Any
    ) -> StepResult:
        # Playground's steps are deterministic (a task's randomness is in its state's info);
        # `key` is unused. Shallow copies of the dicts: a task updates them in place.
        old = state.playground
        current = old.replace(info=dict(old.info), metrics=dict(old.metrics))
        physics = params if state.physics is None else state.physics
        with self._stepping_with(physics) as env:
            reward = jnp.zeros((), jnp.float32)
            for _ in range(self.action_repeat):
                current = env.step(current, action)
                reward = reward + current.reward
        current = _like(current.replace(reward=reward), old, self.name)
        terminated = current.done > 0.5
        info = dict(current.metrics)
        return (
            current.obs,
            PlaygroundState(current, state.physics),
            current.reward,
            terminated,
            jnp.zeros((), jnp.bool_),
            info,
        )

    def observation_space(self, params: Any) -> Box:
        return Box(-jnp.inf, jnp.inf, (self.observation_size,), jnp.float32)

    def disturbance_shape(self, params: Any) -> tuple[int, ...] | None:
        return (3 * len(self._disturbed),) if len(self._disturbed) else None

    def disturb(self, state: PlaygroundState, params: Any, disturbance: jax.Array):
        """A force `(x, y, z)` in the world frame at the centre of mass of each of the task's
        `DISTURBED_BODIES` (`xfrc_applied`), for the step that follows (any torque there is
        left at 0)."""
        if not len(self._disturbed):
            return super().disturb(state, params, disturbance)
        data = state.playground.data
        forces = jnp.reshape(disturbance, (len(self._disturbed), 3))
        applied = data.xfrc_applied.at[self._disturbed, :3].set(forces)
        playground = state.playground.replace(data=data.replace(xfrc_applied=applied))
        return state.replace(playground=playground)

    def action_space(self, params: Any) -> Box:
        return Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def __repr__(self) -> str:
        return f"PlaygroundEnv({self.task!r}, impl={self.impl!r})"

    def render(self, state: PlaygroundState, params: Any, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of one state: MuJoCo's renderer on the task's model
        (its first camera), with the state's physics (a heavier pole is drawn the same)."""
        data = state.playground.data
        extra = {}
        if self.playground_env.mj_model.nmocap:
            extra = {
                "mocap_pos": np.asarray(data.mocap_pos),
                "mocap_quat": np.asarray(data.mocap_quat),
            }
        model = self.playground_env.mj_model
        return mujoco_image(
            self, model, np.asarray(data.qpos), np.asarray(data.qvel), width, height, **extra
        )


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`envs.make`'s options as `PlaygroundEnv`'s keywords (`impl`, `randomize`, config keys)
    and the physics params fields, a field given as a list (`[0, 1, 0.2]`) an array of the
    model's float32."""
    physics = {f.name for f in dataclasses.fields(PlaygroundParams)}
    constructor = {k: v for k, v in options.items() if k not in physics}
    overrides = {
        k: jnp.asarray(v, jnp.float32) if isinstance(v, list | tuple) else v
        for k, v in options.items()
        if k in physics
    }
    return constructor, overrides


def _flatten(config: dict, prefix: str = "") -> dict[str, Any]:
    """A nested config as `{"a.b": value}` (Playground's `update_from_flattened_dict` keys)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        flat[f"{prefix}{key}"] = value
    return flat


SUITE = Suite(
    prefix="playground/",
    title="MuJoCo Playground",
    names=playground_names,
    environment=PlaygroundEnv,
    refused=refused,
    installed=installed,
    extra="playground",
    split=split_options,
    option_defaults=option_defaults,
    renders="every Playground task, through MuJoCo's renderer",
)
"""Playground's DM Control suite: its params are the model's physics, its constructor takes
`impl`, `randomize` and the task's config keys, and the time limit is ours (the task's
`episode_length`, `PlaygroundEnv.max_episode_steps`)."""
