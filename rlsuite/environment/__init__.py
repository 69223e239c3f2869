"""The environment contract (gymnax >= 1.0 style) and the one implementation of auto-reset.

An environment is one instance; a batch is `jax.vmap` over keys, states, actions and, optionally,
`params`::

    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

`step` auto-resets: where `terminated | truncated`, the returned `obs` and `state` belong to a
fresh episode, and `info["final_observation"]` is the observation the finished episode ended in
(the one to bootstrap from after a truncation).

`params` is a pytree (`flax.struct.dataclass`) of physical constants and task parameters, so
`jax.vmap` over it gives domain randomisation, task distributions and UED levels.

Subclasses implement the single-episode core, `reset_env` and `step_env` (which never resets), plus
`default_params`, `observation_space` and `action_space`. Wrappers (see
`rlsuite.environment.wrappers`) wrap that core, so `TimeLimit` and `EpisodeStatistics` see an
episode end before the one auto-reset here.

The auto-reset is built from three pieces that every auto-resetting path shares: `split_step_key`
(which key steps and which resets), `Environment.step_without_reset` (the checked core step) and
`auto_reset` (which obs and state are replaced, and `final_observation`). `step` resets one
environment with a select; `rlsuite.loop.rollout.step_batch` uses the same pieces for a batch and
resets only the environments that finished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.environment.checker import check_env, default_params
from rlsuite.environment.evaluations import Evaluation
from rlsuite.environment.spaces import Box, Discrete, Space

StepResult = tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict]
_CHECKED = "_rlsuite_contract_checked"  # per environment object: None, checking, checked


class Environment:
    """Subclasses define the single-episode core; `reset` / `step` add checks and auto-reset."""

    # ----------------------------------------------------------------- to implement in subclasses
    @property
    def default_params(self) -> Any:
        raise NotImplementedError

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, Any]:
        """Start an episode: `(obs, state)`."""
        raise NotImplementedError

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any) -> StepResult:
        """One transition, no auto-reset: `(obs, state, reward, terminated, truncated, info)`."""
        raise NotImplementedError

    def observation_space(self, params: Any) -> Space:
        raise NotImplementedError

    def action_space(self, params: Any) -> Space:
        raise NotImplementedError

    def validate_params(self, params: Any) -> None:
        """Raise `ValueError` for invalid concrete parameter values (see `require`). Optional."""

    def action_mask(self, state: Any, params: Any) -> jax.Array | None:
        """The actions legal in `state` (one environment's, as `reset` or `step` returned it):
        a bool `[n]` for a `Discrete(n)` action space, True where legal, at least one legal.
        `None` (the default) where every action is always legal. Optional: an environment with
        masks overrides it, and agents that read masks never choose a masked action (see
        `rlsuite.environment.masks`)."""
        return None

    @property
    def has_action_mask(self) -> bool:
        """Whether `action_mask` gives masks (known without tracing): it is overridden."""
        return type(self).action_mask is not Environment.action_mask

    def disturbance_shape(self, params: Any) -> tuple[int, ...] | None:
        """The shape of the disturbance an adversary may apply (`disturb`), or `None` (the
        default): the environment has no disturbance channel. Optional, with `disturb`
        (`rlsuite.environment.adversarial`)."""
        return None

    def disturb(self, state: Any, params: Any, disturbance: jax.Array) -> Any:
        """`state` with `disturbance` (of `disturbance_shape`) applied to the step that follows,
        as an external force or torque acts on the physics: pendulum's is a torque added to the
        motor's, outside its limit and its cost. Optional: see `disturbance_shape`."""
        raise NotImplementedError(f"{self.name} has no disturbance channel")

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def evaluation(self) -> Evaluation:
        """What the environment is evaluated on (`rlsuite.environment.evaluations`): episodes,
        unless a subclass declares more."""
        return Evaluation()

    def __repr__(self) -> str:
        return f"{self.name}()"

    # ----------------------------------------------------------------- the contract
    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, Any]:
        params = self.check_params(params)
        return self.reset_env(key, params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any = None) -> StepResult:
        """One transition; where the episode ended, `obs` and `state` start a new one."""
        key_step, key_reset = split_step_key(key)
        result = self.step_without_reset(key_step, state, action, params)

        def reset_where(done, obs, state):
            return select(done, self.reset(key_reset, params), (obs, state))

        mask_of = (lambda state: self.action_mask(state, params)) if self.has_action_mask else None
        return auto_reset(result, reset_where, mask_of)

    def step_without_reset(
        self, key: jax.Array, state: Any, action: Any, params: Any = None
    ) -> StepResult:
        """`step_env` behind the params and action checks of `step`, without the auto-reset.

        `step` is this, called with the first key of `split_step_key`, then `auto_reset`; the
        batched step of `rlsuite.loop.rollout` calls the same pieces.
        """
        params = self.check_params(params)
        action = self.check_action(action, params)
        return self.step_env(key, state, action, params)

    # ----------------------------------------------------------------- checks (run at trace time)
    def check_params(self, params: Any) -> Any:
        """Return `params` (defaults for `None`) after checking its type and concrete values.

        The first call on an environment also checks its contract (`rlsuite.environment.checker`),
        so a mistake in a new environment is named before anything is compiled."""
        default = default_params(self)
        if params is None:
            params = default
        elif type(params) is not type(default):
            raise TypeError(
                f"{self.name}: params must be a {type(default).__name__}, got "
                f"{type(params).__name__}; start from env.default_params and use .replace(...)"
            )
        else:
            self.validate_params(params)
        if vars(self).get(_CHECKED) is None and _one_concrete(params, default):
            vars(self)[_CHECKED] = False  # being checked: the check's own calls skip it
            try:
                check_env(self, params)
            except BaseException:
                del vars(self)[_CHECKED]
                raise
            vars(self)[_CHECKED] = True
        return params

    def check_action(self, action: Any, params: Any) -> jax.Array:
        """Convert `action` to an array and check its shape and dtype against the action space."""
        space = self.action_space(params)
        action = jnp.asarray(action)
        if action.shape != space.shape:
            raise ValueError(
                f"{self.name}: action shape {action.shape} does not match the action space "
                f"{space!r}, which expects shape {space.shape} for one environment "
                "(batch with jax.vmap)"
            )
        if isinstance(space, Discrete) and not jnp.issubdtype(action.dtype, jnp.integer):
            raise TypeError(
                f"{self.name}: a Discrete action must have an integer dtype, got {action.dtype}"
            )
        if isinstance(space, Box) and not jnp.issubdtype(action.dtype, jnp.floating):
            raise TypeError(
                f"{self.name}: a Box action must have a floating dtype, got {action.dtype}"
            )
        return action


def _one_concrete(params: Any, default: Any) -> bool:
    """Whether `params` are one environment's, concrete: the contract check runs on those only
    (a batch of params for `vmap`, or traced ones, waits for a later call)."""
    leaves, defaults = jax.tree.leaves(params), jax.tree.leaves(default)
    if len(leaves) != len(defaults) or any(isinstance(x, jax.core.Tracer) for x in leaves):
        return False
    return all(np.shape(x) == np.shape(d) for x, d in zip(leaves, defaults, strict=True))


def split_step_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(key_step, key_reset)`: the key `step` passes to `step_env` and the one its auto-reset
    passes to `reset`. Every auto-reset uses these, so all of them draw the same start states."""
    key_step, key_reset = jax.random.split(key)
    return key_step, key_reset


def auto_reset(
    result: StepResult,
    reset_where: Callable[[jax.Array, Any, Any], tuple[Any, Any]],
    mask_of: Callable[[Any], jax.Array] | None = None,
) -> StepResult:
    """Turn the `result` of a non-resetting step into the result of an auto-resetting one.

    `reset_where(done, obs, state)` returns `(obs, state)` with the environments where `done`
    (= terminated | truncated) replaced by fresh episodes and the others unchanged; it decides how
    the resets are computed (`Environment.step`: a reset and a select per environment). The
    returned `obs` and `state` are the post-reset ones; `info["final_observation"]` is the
    pre-reset observation. Works on one environment or on a batch (any leading axes). For an
    environment with action masks, `mask_of(state)` gives the masks of the pre-reset state, kept
    as `info["final_action_mask"]` (the legal actions at `final_observation`, which a value-based
    target maximises over).
    """
    obs_step, state_step, reward, terminated, truncated, info = result
    done = jnp.logical_or(terminated, truncated)
    obs, state = reset_where(done, obs_step, state_step)
    info = {**info, "final_observation": obs_step}
    if mask_of is not None:
        info["final_action_mask"] = mask_of(state_step)  # masks.FINAL
    return obs, state, reward, terminated, truncated, info


def select(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """`on_true` where the scalar `pred` holds, else `on_false`, leaf by leaf (one environment;
    `jax.vmap` it for a batch)."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def param_fields(params: Any) -> list[str]:
    """Names of the fields of a params dataclass."""
    return [f.name for f in dataclasses.fields(params)]
