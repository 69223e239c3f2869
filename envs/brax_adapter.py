"""Brax (MJX and the other brax physics backends) behind the `rlsuite.environment` contract.

`BraxEnv(name, backend="mjx", **env_kwargs)` wraps the *raw* environment
`brax.envs.get_environment(name, backend=backend, **env_kwargs)`: no brax `EpisodeWrapper` and no
`AutoResetWrapper`. What brax calls `done` is a termination (the ant fell over, the pole dropped);
the time limit is ours, applied by `rlsuite.environment.wrappers.TimeLimit` (`env.max_episode_steps
= 1000`, brax's usual episode length), so `terminated` and `truncated` stay apart::

    env = TimeLimit(BraxEnv("ant"), BraxEnv.max_episode_steps)
    obs, state = env.reset(key)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action)

Differences from brax's training wrappers, on purpose:

* **Fresh start states.** Brax's `AutoResetWrapper` caches the first state of `reset` and restarts
  every later episode of that environment from that *same* state. Here `Environment.step` calls
  `reset_env` with a fresh key at every auto-reset, so every episode starts from a new random
  state, as in gymnasium and gymnax. The price is one brax `reset` per step inside `step` (both
  sides of the auto-reset select are computed); `benchmarks/env_throughput.py` measures its cost.
* **The pre-reset observation.** Brax's `AutoResetWrapper` overwrites `state.obs` with the cached
  first observation and keeps no copy of the observation the episode ended in; here it is
  `info["final_observation"]` (the observation to bootstrap from after a truncation).

Params: `BraxParams` is an empty `flax.struct.dataclass`. The brax `System` (masses, geometry,
solver options) is a large pytree baked into the environment object, and brax steps always read it
from there, so it is not exposed as vmappable params; domain randomisation over it needs a different
environment object (brax's `DomainRandomizationVmapWrapper` approach), not `vmap` over params.

State: brax's own `brax.envs.State` pytree (`pipeline_state`, `obs`, `reward`, `done`, `metrics`,
`info`), with `reward` and `done` kept as float32 arrays so that reset and step states have
identical structure and dtypes (a `lax.scan` carry needs that). `info` of `step` is a new dict
holding a copy of brax's `metrics` (plus `final_observation`, added by `Environment.step`).

Pictures: `render(state, params, width, height)` draws a state with MuJoCo's renderer from the
brax system's MuJoCo model (`sys.mj_model`): the state's joint positions and velocities copied
into an `MjData`, `mj_forward`, then the model's first camera (hopper's, walker's and the
others' tracking camera) or, in a model without one, a camera tracking the first body. MuJoCo
chooses its OpenGL backend at import (`MUJOCO_GL`, set by `rlsuite.envs.rendering.use_gl`).

brax is imported lazily, inside the functions that need it, so `from rlsuite import envs` stays
light.
"""

from __future__ import annotations

import contextlib
import inspect
import io
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from rlsuite.envs.mujoco_warnings import route_mujoco_warnings
from rlsuite.envs.rendering import mujoco_image
from rlsuite.envs.suites import Suite

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Box

BACKENDS: tuple[str, ...] = ("mjx", "generalized", "positional", "spring")
# brax environments written for one backend only (brax raises "Unsupported backend" for MJX):
# their default is that backend.
ONLY_BACKEND = {"swimmer": "generalized"}
"""The brax physics backends `BraxEnv` accepts (brax's `PipelineEnv` pipelines)."""


@struct.dataclass
class BraxParams:
    """Empty: brax's `System` constants live in the environment object, not in params."""


# What MuJoCo's MJX prints on import where its optional NVIDIA Warp backend is not installed
# (every CPU machine): not a fault, and it preceded every error message of the command line.
_WARP_NOTICES = ("Failed to import warp:", "Failed to import mujoco_warp:")


def brax_envs():
    """`brax.envs`, imported with MJX's Warp notices left out (anything else it prints is
    passed on)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        from brax import envs
    route_mujoco_warnings()
    for line in printed.getvalue().splitlines():
        if not line.startswith(_WARP_NOTICES):
            print(line)
    return envs


def refused() -> dict[str, str]:
    """brax environments that cannot run here, and why: those that cannot step with the
    installed JAX (left out of `brax_names` and refused by name)."""
    if "a_min" in inspect.signature(jnp.clip).parameters:
        return {}
    return {
        "swimmer": "its only backend, brax's generalized, calls jnp.clip(a_min=...) in its "
        "fluid model, and this JAX's jnp.clip takes min= and max= only",
    }


def brax_names() -> list[str]:
    """Names of the environments registered with brax (`brax.envs.register_environment`), less
    those that cannot step with the installed JAX (`refused`)."""
    # brax has no public listing function; `_envs` is the registry `get_environment` reads.
    broken = refused()
    return sorted(name for name in brax_envs()._envs if name not in broken)


class BraxEnv(Environment):
    """A raw brax environment (no brax time limit, no brax auto-reset) under our contract.

    Args:
        name: a brax environment name, one of `brax_names()` (e.g. `"ant"`, `"inverted_pendulum"`).
        backend: one of `BACKENDS`; `"mjx"` (MuJoCo XLA), the maintained one, by default,
            except for the environments brax has for one other backend only (`ONLY_BACKEND`).
        **env_kwargs: passed on to the brax environment's constructor.

    Raises:
        ValueError: for an unknown name or backend (checked before anything is built).
    """

    max_episode_steps: int = 1000
    """The time limit to apply with `rlsuite.environment.wrappers.TimeLimit` (brax's usual
    episode length)."""

    def __init__(self, name: str, backend: str | None = None, **env_kwargs: Any):
        if backend is None:
            backend = ONLY_BACKEND.get(name, "mjx")
        if backend not in BACKENDS:
            raise ValueError(f"unknown brax backend {backend!r}; allowed: {', '.join(BACKENDS)}")
        broken = refused()
        if name in broken:
            raise ValueError(f"brax environment {name!r} cannot run here: {broken[name]}")
        names = brax_names()
        if name not in names:
            raise ValueError(f"unknown brax environment {name!r}; allowed: {', '.join(names)}")
        self.env_name = name
        self.backend = backend
        self.brax_env = brax_envs().get_environment(name, backend=backend, **env_kwargs)
        self.action_size = int(self.brax_env.action_size)
        # Shapes of a reset state without running it (brax's `observation_size` runs an unjitted
        # reset, which is slow with MJX).
        key_shape = jax.ShapeDtypeStruct((2,), jnp.uint32)
        reset_shape = jax.eval_shape(self.brax_env.reset, key_shape)
        if not isinstance(reset_shape.obs, jax.ShapeDtypeStruct) or reset_shape.obs.ndim != 1:
            raise TypeError(
                f"BraxEnv supports vector observations; {name!r} returns {reset_shape.obs!r}"
            )
        self.observation_size = int(reset_shape.obs.shape[0])

    # ----------------------------------------------------------------- contract
    @property
    def default_params(self) -> BraxParams:
        return BraxParams()

    @property
    def name(self) -> str:
        return self.env_name

    def reset_env(self, key: jax.Array, params: BraxParams) -> tuple[jax.Array, Any]:
        state = _normalise(self.brax_env.reset(key))
        return state.obs, state

    def step_env(
        self, key: jax.Array, state: Any, action: jax.Array, params: BraxParams
    ) -> StepResult:
        # Brax steps are deterministic; `key` is unused. Brax gets shallow copies of the dicts, so
        # an environment (or brax wrapper) that updates `state.info` in place cannot touch ours.
        state_in = state.replace(info=dict(state.info), metrics=dict(state.metrics))
        next_state = self.brax_env.step(state_in, action)
        # Same structure and dtypes as the incoming state (brax sometimes returns Python floats or
        # weakly typed values, e.g. `reward=1.0`), so reset and step states can share a scan carry.
        next_state = _like(next_state, state, self.env_name)
        terminated = next_state.done > 0.5
        truncated = jnp.zeros((), jnp.bool_)
        info = dict(next_state.metrics)
        return next_state.obs, next_state, next_state.reward, terminated, truncated, info

    def observation_space(self, params: BraxParams) -> Box:
        return Box(-jnp.inf, jnp.inf, (self.observation_size,), jnp.float32)

    def action_space(self, params: BraxParams) -> Box:
        return Box(-1.0, 1.0, (self.action_size,), jnp.float32)

    def __repr__(self) -> str:
        return f"BraxEnv({self.env_name!r}, backend={self.backend!r})"

    def render(self, state: Any, params: Any, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of one state (see the module's docstring); the state
        of a task built on this one (`brax_state` inside it) is drawn from its brax state."""
        import numpy as np

        pipeline = getattr(state, "brax_state", state).pipeline_state
        qpos = getattr(pipeline, "qpos", None)  # MJX's Data; brax's other pipelines: q, qd
        qpos, qvel = (pipeline.q, pipeline.qd) if qpos is None else (qpos, pipeline.qvel)
        model = self.brax_env.sys.mj_model
        return mujoco_image(self, model, np.asarray(qpos), np.asarray(qvel), width, height)


def _normalise(state: Any) -> Any:
    """float32 `obs`, `reward` and `done` arrays, so every state has the same leaf dtypes."""
    return state.replace(
        obs=jnp.asarray(state.obs, jnp.float32),
        reward=jnp.asarray(state.reward, jnp.float32),
        done=jnp.asarray(state.done, jnp.float32),
    )


def _like(new: Any, old: Any, name: str) -> Any:
    """`new` cast leaf by leaf to the dtypes of `old` (which must have the same tree structure)."""
    new_def, old_def = jax.tree.structure(new), jax.tree.structure(old)
    if new_def != old_def:
        raise TypeError(
            f"environment {name!r} changed its state structure in step (auto-reset needs the "
            f"reset and step states to match):\n reset: {old_def}\n step:  {new_def}"
        )
    return jax.tree.map(lambda a, b: jnp.asarray(a, jnp.result_type(b)), new, old)


SUITE = Suite(
    prefix="brax/",
    title="Brax",
    names=brax_names,
    environment=BraxEnv,
    refused=refused,
    renders="every Brax environment, through MuJoCo's renderer",
)
"""Brax's environments (a dependency of rlsuite): every option is `BraxEnv`'s (`backend` and
the brax environment's keywords), and the time limit is ours (`BraxEnv.max_episode_steps`)."""
