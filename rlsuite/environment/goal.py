"""The goal-conditioned contract (`GoalEnvironment`, `GoalState`) and its check
(`check_goal_contract`, which goal-conditioned agents call before anything is traced). The
environments that follow it, and the contract in words, are in `rlsuite.envs.goal`."""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.evaluations import GoalSuccess
from rlsuite.environment.spaces import Box

INFO_KEYS = ("success", "achieved_goal", "desired_goal")


@struct.dataclass
class GoalState:
    state: jax.Array  # [state_dim] float32
    goal: jax.Array  # [len(goal_indices)] float32, the desired goal of this episode


class GoalEnvironment(Environment):
    """An environment on the goal-conditioned contract.

    A subclass sets `state_dim` and `goal_indices` and implements `sample_start`, `sample_goal`,
    `move` and `action_space`; `reset_env` and `step_env` here build the observation, the sparse
    reward and the goal `info` from them. An environment with a richer state (its own state
    pytree, another reward) overrides `reset_env` / `step_env` and keeps the attributes and
    `compute_reward` consistent with them (`check_goal_contract` says where they are not).
    """

    state_dim: int = 0
    goal_indices: tuple[int, ...] = ()

    @property
    def evaluation(self) -> GoalSuccess:
        """Episodes, with the share that reached the goal and the time spent near it."""
        return GoalSuccess()

    # ----------------------------------------------------------------- to implement in subclasses
    def sample_start(self, key: jax.Array, params: Any) -> jax.Array:
        """A start state, [state_dim]."""
        raise NotImplementedError

    def sample_goal(self, key: jax.Array, params: Any) -> jax.Array:
        """A desired goal, [len(goal_indices)]."""
        raise NotImplementedError

    def move(self, key: jax.Array, state: jax.Array, action: jax.Array, params: Any) -> jax.Array:
        """The next state, [state_dim], after `action` in `state`."""
        raise NotImplementedError

    # ----------------------------------------------------------------- the contract
    @property
    def goal_dim(self) -> int:
        return len(self.goal_indices)

    def goal_threshold(self, params: Any) -> jax.Array:
        """The success distance: `params.goal_threshold`."""
        return params.goal_threshold

    def success(self, achieved_goal: jax.Array, desired_goal: jax.Array, params: Any) -> jax.Array:
        """`||achieved_goal - desired_goal|| < threshold` over the last axis (bool, leading axes
        kept)."""
        distance = jnp.linalg.norm(achieved_goal - desired_goal, axis=-1)
        return distance < self.goal_threshold(params)

    def compute_reward(
        self, achieved_goal: jax.Array, desired_goal: jax.Array, params: Any
    ) -> jax.Array:
        """The reward of reaching `achieved_goal` when `desired_goal` was asked, for relabelling:
        1.0 within the threshold, else 0.0; float32 of the inputs' leading shape."""
        return self.success(achieved_goal, desired_goal, params).astype(jnp.float32)

    def achieved_of(self, obs_or_state: Any) -> jax.Array:
        """The achieved goal, `x[..., goal_indices]`, of an observation, a state vector or a
        `GoalState` (the state comes first in the observation)."""
        x = obs_or_state.state if isinstance(obs_or_state, GoalState) else obs_or_state
        return jnp.take(jnp.asarray(x), jnp.asarray(self.goal_indices), axis=-1)

    def goal_of(self, obs: jax.Array) -> jax.Array:
        """The desired goal of an observation, `obs[..., state_dim:]`."""
        return obs[..., self.state_dim :]

    def state_of(self, obs: jax.Array) -> jax.Array:
        """The state of an observation, `obs[..., :state_dim]`."""
        return obs[..., : self.state_dim]

    def observation(self, state: jax.Array, goal: jax.Array) -> jax.Array:
        """`concat(state, goal)` along the last axis, float32."""
        return jnp.concatenate([state, goal], axis=-1).astype(jnp.float32)

    def goal_info(self, achieved_goal: jax.Array, desired_goal: jax.Array, params: Any) -> dict:
        return {
            "success": self.success(achieved_goal, desired_goal, params),
            "achieved_goal": achieved_goal,
            "desired_goal": desired_goal,
        }

    # ----------------------------------------------------------------- the Environment core
    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, GoalState]:
        key_start, key_goal = jax.random.split(key)
        state = GoalState(
            self.sample_start(key_start, params).astype(jnp.float32),
            self.sample_goal(key_goal, params).astype(jnp.float32),
        )
        return self.observation(state.state, state.goal), state

    def step_env(self, key: jax.Array, state: GoalState, action, params: Any) -> StepResult:
        next_state = self.move(key, state.state, action, params).astype(jnp.float32)
        achieved = self.achieved_of(next_state)
        reward = self.compute_reward(achieved, state.goal, params)
        info = self.goal_info(achieved, state.goal, params)
        false = jnp.zeros((), bool)
        obs = self.observation(next_state, state.goal)
        return obs, GoalState(next_state, state.goal), reward, false, false, info

    def observation_space(self, params: Any) -> Box:
        # Bounds may depend on traced params (vmapped goal distributions): none are claimed.
        return Box(-jnp.inf, jnp.inf, (self.state_dim + self.goal_dim,))


def check_goal_contract(
    env: Any, params: Any = None, key: jax.Array | None = None, owner: str | None = None
) -> None:
    """Raise a `ValueError` naming the field where `env` (wrapped or not) breaks the goal
    contract; return None where it follows it. Call it before tracing. An environment with
    neither `state_dim` nor `goal_indices` is no goal environment at all: the error says so,
    naming `owner` (the algorithm that needs one) where given.

    Checked from the static attributes and the shapes of one traced reset and step (nothing is
    computed): `state_dim` an integer >= 1; `goal_indices` a non-empty tuple of integers inside
    the state; the observation `state_dim + len(goal_indices)` long; `info` holding a bool scalar
    `success` and `achieved_goal` / `desired_goal` of `len(goal_indices)`; the success threshold
    in `params`; `compute_reward` batched over leading axes. With a `key`, one reset and step are
    also run and the values compared: `info["achieved_goal"]` = `next_obs[goal_indices]`,
    `info["desired_goal"]` = `goal_of(next_obs)`, the reward = `compute_reward` of them.
    """
    params = env.default_params if params is None else params
    state_dim, indices = _check_attributes(env, params, owner)
    _check_shapes(env, params, state_dim, indices)
    if key is not None:
        _check_values(env, params, key)


def _check_attributes(env: Any, params: Any, owner: str | None) -> tuple[int, tuple[int, ...]]:
    """`(state_dim, goal_indices)` of `env`, checked with the success threshold in `params`."""
    name = env.name
    state_dim = getattr(env, "state_dim", None)
    if state_dim is None and getattr(env, "goal_indices", None) is None:
        raise ValueError(
            f"{owner or 'this agent'} trains on a goal environment (an observation "
            f"concat(state, goal) with state_dim, goal_indices and compute_reward, "
            f"rlsuite.environment.goal; e.g. goal/point_reach); {name} is not"
        )
    if not _is_int(state_dim) or state_dim < 1:
        raise ValueError(
            f"{name}: invalid state_dim={state_dim!r}; allowed: an integer >= 1, the length of "
            "the state at the start of the observation"
        )
    indices = getattr(env, "goal_indices", None)
    if not isinstance(indices, tuple) or not indices or not all(map(_is_int, indices)):
        raise ValueError(
            f"{name}: invalid goal_indices={indices!r}; allowed: a non-empty tuple of integers "
            "(the indices of the achieved goal in the state)"
        )
    outside = [i for i in indices if not 0 <= i < state_dim]
    if outside:
        raise ValueError(
            f"{name}: goal_indices={indices} fall outside the state (state_dim={state_dim}): "
            f"{outside}; allowed: indices in [0, {state_dim})"
        )
    try:
        threshold = env.goal_threshold(params)
    except AttributeError as error:
        raise ValueError(
            f"{name}: the success threshold is not in params ({error}); put it in the params "
            "as goal_threshold, or override goal_threshold(params)"
        ) from None
    if np.shape(threshold) != ():
        raise ValueError(
            f"{name}: goal_threshold(params) has shape {np.shape(threshold)}; allowed: a scalar "
            "(one environment's params; batch them with jax.vmap)"
        )
    return state_dim, indices


def _check_shapes(env: Any, params: Any, state_dim: int, indices: tuple[int, ...]) -> None:
    """The shapes of one traced reset and step, and of `compute_reward` on a batch of goals."""
    name = env.name
    key_shape = jax.eval_shape(jax.random.key, 0)
    obs, state = jax.eval_shape(lambda k: env.reset_env(k, params), key_shape)
    space = env.action_space(params)
    action = jnp.zeros(space.shape, space.dtype)
    result = jax.eval_shape(lambda k, s: env.step_env(k, s, action, params), key_shape, state)
    next_obs, info = result[0], result[5]
    missing = [k for k in INFO_KEYS if not isinstance(info, dict) or k not in info]
    if missing:
        raise ValueError(
            f"{name}: step_env's info lacks {missing}; the goal contract reports "
            f"{list(INFO_KEYS)} every step"
        )
    success = info["success"]
    if success.shape != () or success.dtype != jnp.bool_:
        raise ValueError(
            f"{name}: info['success'] is {success.dtype}{tuple(success.shape)}; allowed: a bool "
            "scalar (this step's next state within the threshold of the goal)"
        )
    goal_dim = len(indices)
    for field in ("achieved_goal", "desired_goal"):
        if tuple(info[field].shape) != (goal_dim,):
            raise ValueError(
                f"{name}: goal_indices={indices} do not match the goal's length: "
                f"info['{field}'] has shape {tuple(info[field].shape)}, goal_indices pick "
                f"{goal_dim}"
            )
    for which, o in (("reset_env", obs), ("step_env", next_obs)):
        if tuple(o.shape) != (state_dim + goal_dim,):
            raise ValueError(
                f"{name}: {which}'s observation has shape {tuple(o.shape)}; the goal contract "
                f"makes it concat(state, goal) = (state_dim + len(goal_indices),) = "
                f"({state_dim + goal_dim},): check state_dim and goal_indices"
            )
    batch = jax.ShapeDtypeStruct((3, goal_dim), jnp.float32)
    reward = jax.eval_shape(lambda a, d: env.compute_reward(a, d, params), batch, batch)
    if tuple(reward.shape) != (3,):
        raise ValueError(
            f"{name}: compute_reward on goals of shape (3, {goal_dim}) returned shape "
            f"{tuple(reward.shape)}; allowed: (3,) (batched over leading axes)"
        )


def _check_values(env: Any, params: Any, key: jax.Array) -> None:
    key_reset, key_step, key_action = jax.random.split(key, 3)
    _, state = env.reset_env(key_reset, params)
    action = env.action_space(params).sample(key_action)
    next_obs, _, reward, _, _, info = env.step_env(key_step, state, action, params)
    achieved = env.achieved_of(next_obs)
    if not np.allclose(info["achieved_goal"], achieved):
        raise ValueError(
            f"{env.name}: goal_indices={env.goal_indices} pick {np.asarray(achieved).tolist()} "
            f"from the observation, but info['achieved_goal'] is "
            f"{np.asarray(info['achieved_goal']).tolist()}"
        )
    if not np.allclose(info["desired_goal"], env.goal_of(next_obs)):
        raise ValueError(
            f"{env.name}: info['desired_goal'] is not the observation's goal "
            "(obs[state_dim:]): check state_dim"
        )
    expected = env.compute_reward(info["achieved_goal"], info["desired_goal"], params)
    if not np.allclose(reward, expected):
        raise ValueError(
            f"{env.name}: step_env's reward {float(reward)} differs from compute_reward's "
            f"{float(expected)} for the same goals; relabelling would change the task"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
