"""gymnax environments behind the `rlsuite.environment` contract.

`GymnaxEnv(name, **env_kwargs)` wraps `gymnax.make(name, **env_kwargs)`. gymnax (>= 1.0) already
splits an episode's core from auto-reset; its `step_env` returns five values
`(obs, state, reward, terminated, info)` and truncation is `env.is_truncated(state, params)`, i.e.
`state.time >= params.max_steps_in_episode`. The adapter's `step_env` returns both flags, and the
auto-reset of `Environment.step` (same key split, same select) then gives what gymnax's own `step`
gives: the same observation, state, reward, flags and `info["final_observation"]`. Environments
that override gymnax's `step` are the exception: DeepSea-bsuite's carries its bsuite counters
(`total_bad_episodes`, `denoised_return`) across resets, and here they restart with each episode.

* **Params** are gymnax's own params pytree (`env.default_params`, changed with `.replace(...)`), so
  `jax.vmap` over them gives task distributions as for our own environments.
* **Time limit** is gymnax's, read from `params.max_steps_in_episode` (`env.max_episode_steps` holds
  the default, for information). Do not wrap a `GymnaxEnv` in
  `rlsuite.environment.wrappers.TimeLimit`; change the limit through the params instead.
* **Spaces** are converted to ours (`Discrete`, `Box`); other gymnax space kinds raise `TypeError`.
  Where a bound depends on params and those params are traced (inside `jit`/`vmap` over params), the
  bound cannot be a static value and is reported as infinite; shape and dtype are exact.
* `info` is a new dict: gymnax's `step_env` info (e.g. `discount`) plus `final_observation`.

Pictures: the MinAtar games (`*-MinAtar`) have `render(state, params, width, height)`, gymnax's
MinAtar visualisation drawn on the host (`rlsuite.envs.suite_pictures.minatar_picture`); gymnax
draws its other environments with pyplot animations only, and here they have no renderer.

gymnax is imported lazily, inside the functions that need it, so `from rlsuite import envs`
stays light.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rlsuite.envs.suites import Suite, params_options

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.spaces import Box, Discrete, Space

# gymnax builds these from data it downloads; nothing is downloaded at run time here.
NEEDS_DOWNLOAD = ("MNISTBandit-bsuite",)

MINATAR = "-MinAtar"
"""The names' ending of the MinAtar games, the gymnax environments that draw."""


def installed() -> bool:
    """Whether gymnax can be imported (checked without importing it)."""
    return importlib.util.find_spec("gymnax") is not None


def gymnax_names() -> list[str]:
    """Names of the environments registered with gymnax (`gymnax.registered_envs`), less those
    that need a download to build (`NEEDS_DOWNLOAD`)."""
    import gymnax

    return [name for name in gymnax.registered_envs if name not in NEEDS_DOWNLOAD]


class GymnaxEnv(Environment):
    """A gymnax environment under our contract.

    Args:
        name: a gymnax environment id, one of `gymnax_names()` (e.g. `"CartPole-v1"`).
        **env_kwargs: passed on to `gymnax.make`.

    Raises:
        ValueError: for an unknown name (listing the registered ones).
    """

    def __init__(self, name: str, **env_kwargs: Any):
        names = gymnax_names()
        if name not in names:
            raise ValueError(f"unknown gymnax environment {name!r}; allowed: {', '.join(names)}")
        import gymnax

        self.env_name = name
        self.gymnax_env, self._default_params = gymnax.make(name, **env_kwargs)
        limit = getattr(self._default_params, "max_steps_in_episode", None)
        self.max_episode_steps: int | None = None if limit is None else int(limit)

    # ----------------------------------------------------------------- contract
    @property
    def default_params(self) -> Any:
        return self._default_params

    @property
    def name(self) -> str:
        return self.env_name

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, Any]:
        return self.gymnax_env.reset_env(key, params)

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any) -> StepResult:
        obs, state, reward, terminated, info = self.gymnax_env.step_env(key, state, action, params)
        truncated = self.gymnax_env.is_truncated(state, params)
        reward = jnp.asarray(reward, jnp.float32)
        terminated = jnp.asarray(terminated, jnp.bool_)
        truncated = jnp.asarray(truncated, jnp.bool_)
        return obs, state, reward, terminated, truncated, dict(info)

    def observation_space(self, params: Any) -> Space:
        return convert_space(self.gymnax_env.observation_space(params), f"{self.name} observation")

    def action_space(self, params: Any) -> Space:
        return convert_space(self.gymnax_env.action_space(params), f"{self.name} action")

    @property
    def render(self):
        """`render(state, params, width, height)`: uint8 RGB `[height, width, 3]` of a MinAtar
        game's state (gymnax's MinAtar visualisation, on the host). `AttributeError` for the
        other environments, which have no renderer (`rendering.renderable` is False)."""
        if not self.env_name.endswith(MINATAR):
            raise AttributeError(
                f"gymnax environment {self.env_name!r} has no renderer; of gymnax's environments "
                f"the MinAtar games (*{MINATAR}) draw"
            )
        from rlsuite.envs.suite_pictures import minatar_picture

        return lambda state, params, width, height: minatar_picture(
            self.gymnax_env, state, params, width, height
        )

    def __repr__(self) -> str:
        return f"GymnaxEnv({self.env_name!r})"


def convert_space(space: Any, what: str = "gymnax") -> Space:
    """Our `Discrete` or `Box` for a gymnax `Discrete` or `Box` space; `TypeError` otherwise.

    Bounds that are tracers (params traced under `jit`/`vmap`) become infinite; see the module note.
    """
    from gymnax.environments import spaces as gymnax_spaces

    if isinstance(space, gymnax_spaces.Discrete):
        return Discrete(space.n, getattr(space, "dtype", jnp.int32))
    if isinstance(space, gymnax_spaces.Box):
        shape = (space.shape,) if isinstance(space.shape, int | np.integer) else space.shape
        low, high = _static_bound(space.low, -np.inf), _static_bound(space.high, np.inf)
        return Box(low, high, shape, space.dtype)
    raise TypeError(
        f"{what} space {space!r} is a gymnax {type(space).__name__}; GymnaxEnv converts only "
        "Discrete and Box spaces (flatten or wrap the environment to use it)"
    )


def _static_bound(bound: Any, unknown: float) -> Any:
    leaves = jax.tree.leaves(bound)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return unknown
    return np.asarray(bound)


SUITE = Suite(
    prefix="gymnax/",
    title="gymnax",
    names=gymnax_names,
    environment=GymnaxEnv,
    installed=installed,
    extra="gymnax",
    limit="max_steps_in_episode",
    split=params_options,
    renders="the MinAtar games, *-MinAtar, through gymnax's MinAtar visualisation",
)
"""gymnax's environments: every option is a field of gymnax's params (the constructor takes
none), the time limit among them (`max_steps_in_episode`, which gymnax counts itself)."""
