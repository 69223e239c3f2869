"""Action masks: which discrete actions are legal in a state, and how agents respect them.

An environment with masks overrides `Environment.action_mask(state, params)`, a bool `[n]` over
its `Discrete(n)` actions (True: legal), computed from the state `reset` or `step` returned, so
that it always describes the observation the agent acts on (after an auto-reset, the new
episode's). Wrappers pass it through (`Wrapper.inner_state`), and `has_action_mask` says, with
nothing traced, whether an environment has them.

Where the environment has masks, every path that acts computes the batch's masks before the
policy is called (`of_batch`) and gives them to it as the keyword `action_mask`
(`rlsuite.loop.rollout`, `rlsuite.loop.episodes`); a rollout keeps them with each transition
(`Transition.extras["action_mask"]`), so that learning scores the distribution the action was
drawn from. An agent that reads masks says so (`Agent.reads_action_mask`) and takes
`action_mask=` in `act`; binding an agent that does not to an environment with masks is refused
(`require_reader`), so no masked action is ever chosen unawares.

How agents apply them: a categorical policy's masked logits are set to the dtype's lowest
value (`masked_logits`), so a masked action has probability 0 (its sample, mode, log-probability
and entropy follow), with no NaN in the entropy (`0 * lowest` is 0); a value-based agent's
greedy action and its bootstrap maximum are taken over the legal actions (`masked_values`,
`legal_max`, on the masks of the pre-reset state that `auto_reset` keeps in
`info["final_action_mask"]`), and its exploring action is drawn uniformly among them
(`uniform_legal`).
"""

from __future__ import annotations

from typing import Any

import distrax
import jax
import jax.numpy as jnp

KEY = "action_mask"  # the keyword policies take, and the key of `Transition.extras`
FINAL = "final_action_mask"  # the `info` key of the pre-reset state's masks (`auto_reset`)


def of_batch(env: Any, state: Any, params: Any, params_axis: int | None = None) -> Any:
    """The masks of a batch of states (`[num_envs, n]`), or None where `env` has none."""
    if not env.has_action_mask:
        return None
    return jax.vmap(env.action_mask, in_axes=(0, params_axis))(state, params)


def keywords(mask: Any) -> dict:
    """What a policy is called with besides `(key, obs, carry)`: `{"action_mask": mask}`, or
    nothing without a mask (so policies of environments without masks are called as before)."""
    return {} if mask is None else {KEY: mask}


def masked_logits(logits: jax.Array, mask: jax.Array | None) -> jax.Array:
    """`logits` with the masked actions' set to the dtype's lowest value (None: unchanged)."""
    if mask is None:
        return logits
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


def masked(dist: Any, mask: jax.Array | None) -> Any:
    """A categorical `dist` restricted to the legal actions of `mask` (None: `dist` itself)."""
    if mask is None:
        return dist
    if not isinstance(dist, distrax.Categorical):
        raise TypeError(f"action masks apply to a categorical policy, got {type(dist).__name__}")
    return distrax.Categorical(logits=masked_logits(dist.logits, mask))


def masked_values(values: jax.Array, mask: jax.Array | None) -> jax.Array:
    """Action values with the masked actions' at minus infinity, so that `argmax` and `max`
    see only the legal ones (None: unchanged)."""
    if mask is None:
        return values
    return jnp.where(mask, values, -jnp.inf)


def for_max(values: jax.Array, mask: jax.Array | None) -> jax.Array:
    """`values [..., A]` made ready for a maximum or an argmax over the legal actions of `mask`:
    the masked ones -inf, and a row where none is legal all 0 (a state that ends the episode
    may allow nothing; a target then multiplies its maximum by 0, which an infinity would turn
    into NaN). None: `values` as they are. A target rule written for plain values (DQN's
    `target`, double Q-learning's argmax) reads these as it reads any."""
    if mask is None:
        return values
    return jnp.where(mask.any(axis=-1, keepdims=True), masked_values(values, mask), 0.0)


def legal_max(values: jax.Array, mask: jax.Array | None) -> jax.Array:
    """`max` of `values [..., A]` over the legal actions of `mask`, 0 where none is legal
    (`for_max`). None: the plain `max`."""
    return for_max(values, mask).max(axis=-1)


def uniform_legal(key: jax.Array, mask: jax.Array, dtype: Any = jnp.int32) -> jax.Array:
    """One action drawn uniformly among the legal ones of each mask (`[..., n]` -> `[...]`)."""
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(dtype)


class MasksNotRead(ValueError):
    """An environment with masks bound to an agent that does not read them (`require_reader`)."""


def require_reader(env: Any, agent_name: str, reads: bool) -> None:
    """Refuse (`MasksNotRead`) to bind an agent that does not read masks (`reads` False) to an
    environment that has them: it would take masked actions."""
    if env.has_action_mask and not reads:
        raise MasksNotRead(
            f"{env.name} has action masks and {agent_name} does not read them "
            f"(Agent.reads_action_mask is False); the families that take it: "
            f"rlsuite.agents.registry.taking(env, env_params)"
        )
