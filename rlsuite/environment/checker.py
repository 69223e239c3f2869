"""`check_env`: the environment contract checked once, with messages that name the method and
the fix (as gymnasium's `check_env` does for its own API).

    from rlsuite.environment.checker import check_env
    check_env(MyEnv())          # or with params: check_env(env, params)

Every environment is checked where it is first used: `Environment.check_params` (which
`reset`, `step`, `envs.make` and every agent's `make` call) runs this once per environment
object, before anything is compiled. The check traces `reset_env` and one `step_env` with
`jax.eval_shape` (shapes and dtypes only; nothing is computed) and compares what they return
with the contract of `rlsuite.environment`:

- `default_params`, `observation_space(params)` and `action_space(params)` are implemented, and
  the spaces are `rlsuite.environment.spaces` spaces;
- `reset_env(key, params)` returns `(obs, state)`, the observation of the observation space's
  shape (integers for a `Discrete` one);
- `step_env(key, state, action, params)` returns six values, `(obs, state, reward, terminated,
  truncated, info)`: the observation and the state as `reset_env` gives them (same structure,
  shapes and dtypes: `lax.scan` carries them), a scalar numeric reward, bool scalar flags and a
  dict;
- where the environment has action masks (`has_action_mask`), `action_mask(state, params)`
  returns a bool `[n]` for its `Discrete(n)` action space, on the states of both.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from rlsuite.environment.spaces import Discrete, Space

_CONTRACT = "(obs, state, reward, terminated, truncated, info)"


class EnvContractError(TypeError):
    """An environment that does not follow the contract of `rlsuite.environment`."""


def check_env(env: Any, params: Any = None) -> None:
    """Raise `EnvContractError` (or `NotImplementedError` for a missing method) naming the method
    and the fix where `env` breaks the contract; return None where it follows it.

    `params` defaults to `env.default_params`. A wrapped environment is checked at its core
    (`env.unwrapped`) and through its wrappers.
    """
    core = getattr(env, "unwrapped", env)
    for layer in (core, env) if core is not env else (env,):
        _check_layer(layer, default_params(layer) if params is None else params)


def default_params(env: Any) -> Any:
    """`env.default_params`, or a `NotImplementedError` that says what to return."""
    try:
        return env.default_params
    except NotImplementedError:
        raise NotImplementedError(
            f"{env.name}.default_params is not implemented: return the environment's params, a "
            "flax.struct.dataclass of its constants (an empty one where it has none)"
        ) from None


def _space(env: Any, method: str, params: Any) -> Space:
    what = "one observation" if method == "observation_space" else "one action"
    try:
        space = getattr(env, method)(params)
    except NotImplementedError:
        raise NotImplementedError(
            f"{env.name}.{method}(params) is not implemented: return an "
            "rlsuite.environment.spaces.Box or "
            f"Discrete describing {what}"
        ) from None
    if not isinstance(space, Space):
        raise EnvContractError(
            f"{env.name}.{method}(params) returned {type(space).__name__}; return an "
            f"rlsuite.environment.spaces.Box or Discrete describing {what}"
        )
    return space


def _describe(x: Any) -> str:
    return f"{x.dtype}{tuple(x.shape)}"


def _check_layer(env: Any, params: Any) -> None:
    name = env.name
    obs_space = _space(env, "observation_space", params)
    action_space = _space(env, "action_space", params)
    key = jax.eval_shape(jax.random.key, 0)

    reset = jax.eval_shape(lambda key: env.reset_env(key, params), key)
    if not isinstance(reset, tuple) or len(reset) != 2:
        count = len(reset) if isinstance(reset, tuple) else f"a {type(reset).__name__}, not 2"
        raise EnvContractError(f"{name}.reset_env returned {count} values; return (obs, state)")
    obs, state = reset
    _check_obs(name, "reset_env", obs, obs_space)

    def step(key, state):  # an action of the space's shape and dtype (its value is not used)
        return env.step_env(key, state, jnp.zeros(action_space.shape, action_space.dtype), params)

    result = jax.eval_shape(step, key, state)
    if not isinstance(result, tuple) or len(result) != 6:
        count = len(result) if isinstance(result, tuple) else f"a {type(result).__name__}, not 6"
        old = " (gymnax's old contract)" if count == 5 else ""
        raise EnvContractError(
            f"{name}.step_env returned {count} values{old}; return six: {_CONTRACT}, with "
            "`terminated` for a terminal state and `truncated` for a time limit (the "
            "TimeLimit wrapper sets it; a single `done` is terminated, truncated=False)"
        )
    next_obs, next_state, reward, terminated, truncated, info = result
    _check_obs(name, "step_env", next_obs, obs_space)
    if (next_obs.shape, next_obs.dtype) != (obs.shape, obs.dtype):
        raise EnvContractError(
            f"{name}.step_env returned an observation {_describe(next_obs)}, reset_env one "
            f"{_describe(obs)}; return the same shape and dtype from both"
        )
    if not hasattr(reward, "shape") or reward.shape != ():
        shape = getattr(reward, "shape", type(reward).__name__)
        raise EnvContractError(
            f"{name}.step_env returned a reward of shape {shape}; it is one environment's "
            "reward, a scalar of shape (): return e.g. `reward.squeeze()` or `reward[0]` "
            "(batch with jax.vmap)"
        )
    numeric = jnp.issubdtype(reward.dtype, jnp.floating) or jnp.issubdtype(
        reward.dtype, jnp.integer
    )
    if not numeric:
        raise EnvContractError(
            f"{name}.step_env returned a reward of dtype {reward.dtype}; return a number "
            "(e.g. `reward.astype(jnp.float32)`)"
        )
    for flag, value in (("terminated", terminated), ("truncated", truncated)):
        if not hasattr(value, "dtype") or value.shape != () or value.dtype != jnp.bool_:
            got = _describe(value) if hasattr(value, "dtype") else type(value).__name__
            raise EnvContractError(
                f"{name}.step_env returned `{flag}` as {got}; return a bool scalar (shape ()), "
                f"e.g. `jnp.asarray({flag}, bool)` or `{flag} > 0.5`"
            )
    if not isinstance(info, dict):
        raise EnvContractError(
            f"{name}.step_env returned info as a {type(info).__name__}; return a dict (empty "
            "where there is nothing to report)"
        )
    _check_state(name, state, next_state)
    if env.has_action_mask:
        for method, s in (("reset_env", state), ("step_env", next_state)):
            _check_mask(env, method, s, params, action_space)


def _check_mask(env: Any, method: str, state: Any, params: Any, space: Space) -> None:
    name = env.name
    if not isinstance(space, Discrete):
        raise EnvContractError(
            f"{name} has action masks over {space!r}; masks are for a Discrete action space "
            "(return None from action_mask for others)"
        )
    mask = jax.eval_shape(lambda state: env.action_mask(state, params), state)
    if not isinstance(mask, jax.ShapeDtypeStruct) or (mask.shape, mask.dtype) != (
        (space.n,),
        jnp.bool_,
    ):
        got = _describe(mask) if isinstance(mask, jax.ShapeDtypeStruct) else repr(mask)
        raise EnvContractError(
            f"{name}.action_mask(state, params) on {method}'s state gave {got}; "
            f"return a bool array [{space.n}], True for each legal action of {space!r}"
        )


def _check_obs(name: str, method: str, obs: Any, space: Space) -> None:
    if not hasattr(obs, "shape") or not isinstance(obs, jax.ShapeDtypeStruct):
        raise EnvContractError(
            f"{name}.{method} returned an observation of type {type(obs).__name__}; return one "
            f"array of the observation space's shape {space.shape}"
        )
    if tuple(obs.shape) != tuple(space.shape):
        raise EnvContractError(
            f"{name}.{method} returned an observation {_describe(obs)}, but "
            f"observation_space(params) is {space!r} (shape {tuple(space.shape)}); make them "
            "agree"
        )
    if isinstance(space, Discrete) and not jnp.issubdtype(obs.dtype, jnp.integer):
        raise EnvContractError(
            f"{name}.{method} returned an observation of dtype {obs.dtype} for the Discrete "
            "observation space; return an integer"
        )


def _check_state(name: str, state: Any, next_state: Any) -> None:
    before, tree = jax.tree_util.tree_flatten_with_path(state)
    after, next_tree = jax.tree_util.tree_flatten_with_path(next_state)
    if tree != next_tree:
        raise EnvContractError(
            f"{name}.step_env returned a state of another structure than reset_env's "
            f"({next_tree} vs {tree}); return the same pytree type with the same fields"
        )
    for (path, a), (_, b) in zip(before, after, strict=True):
        if (a.shape, a.dtype) != (b.shape, b.dtype):  # (a key array's dtype is not NumPy's)
            raise EnvContractError(
                f"{name}.step_env returned state{jax.tree_util.keystr(path)} as {_describe(b)}, "
                f"reset_env as {_describe(a)}; return the same shape and dtype (lax.scan carries "
                "the state from step to step)"
            )
