"""The agent contract: the optax idea applied to algorithms, a small NamedTuple of pure functions.

    agent = ppo.make(config, env, env_params)   # config: frozen dataclass of static values
    state = agent.init(key, hparams)            # hparams: struct dataclass of traced scalars
    state, metrics = agent.update(state, hparams)   # one iteration: collect + learn
    action = agent.act(state, obs, key, deterministic)

Static values (network sizes, `num_envs`, `num_steps`) live in the config and are closed over;
numeric hyperparameters are an argument, so seeds and hyperparameter batches are both `vmap` axes.

The contract grows by declared extras, in the manner of optax's `GradientTransformationExtraArgs`,
never by counting arguments: an agent with memory sets `initial_carry`, and its `act` then takes
and returns the carry; an agent that learns from inputs other than its state (an offline agent's
dataset, `data`) names them in `extra_args`, and `init` and `update` take them as keyword
arguments. `policy(agent, state, deterministic)` and `extra_args(agent, ...)` are how the loop
calls any agent, with or without them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from rlsuite.environment import masks
from rlsuite.loop.mesh import Split
from rlsuite.loop.rollout import RecurrentPolicy, recurrent


class Agent(NamedTuple):
    """An algorithm bound to one environment.

    name: the algorithm's name (`"ppo"`), recorded in checkpoints.
    config: the frozen static configuration.
    env, env_params: the environment as the agent steps it (with the wrappers it added).
    default_hparams: the hyperparameters used when none are given.
    init: `(key, hparams) -> state`, the whole learner state as one pytree.
    update: `(state, hparams) -> (state, metrics)`, one iteration; metrics are scalars.
    act: `(state, obs, key, deterministic) -> action` for one observation or a batch; with a
        carry, `(state, obs, key, deterministic, carry) -> (action, carry)` for a batch.
    check_hparams: raises a `ValueError` naming the field for invalid concrete hparams.
    env_steps_per_update: environment steps one `update` takes (all parallel envs).
    initial_carry: None for a feed-forward agent; for an agent with memory, `(state, num_envs) ->
        carry`, the carry of fresh episodes (leaves `[num_envs, ...]`).
    extra_args: the keyword arguments `init` and `update` require besides their own (`("data",)`
        for an offline agent: `init(key, hparams, data=...)`, `update(state, hparams, data=...)`).
    env_split: the batches the agent splits over a mesh's `envs` devices (`rlsuite.loop.mesh.Split`:
        its environments, a replay or minibatch), each of which their count must divide; `()` for
        an agent that is never split.
    reads_action_mask: whether `act` takes the keyword `action_mask` (`[..., n]` bool, the legal
        actions: `rlsuite.environment.masks`) and never chooses a masked action; `bind` refuses an
        environment with masks to an agent that does not.
    trainable: `state -> pytree`, the part of the state a diverging update makes non-finite (its
        networks' parameters and optimiser states), which `fit` checks after every chunk
        (`rlsuite.loop.divergence`); None checks the whole state, so an agent whose state holds
        NaN on purpose (a level buffer's empty scores) must declare it.
    """

    name: str
    config: Any
    env: Any
    env_params: Any
    default_hparams: Any
    init: Callable[[jax.Array, Any], Any]
    update: Callable[[Any, Any], tuple[Any, dict]]
    act: Callable[[Any, Any, jax.Array, bool], jax.Array]
    check_hparams: Callable[[Any], None]
    env_steps_per_update: int
    initial_carry: Callable[[Any, int], Any] | None = None
    extra_args: tuple[str, ...] = ()
    env_split: tuple[Split, ...] = ()
    trainable: Callable[[Any], Any] | None = None
    reads_action_mask: bool = False

    # `jax.jit` takes the agent as a static argument, so it must hash; its `env_params` are data
    # (arrays: gymnax's Acrobot torques, a goal task's bounds) and cannot. An agent is the same
    # static argument only as the same object, which is what its closures already implied (two
    # `make` calls give functions that compare unequal).
    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def __ne__(self, other) -> bool:
        return self is not other


def bind(
    setup: Any,
    *,
    init: Callable,
    update: Callable,
    act: Callable,
    initial_carry: Callable | None = None,
    **record: Any,
) -> Agent:
    """The `Agent` of a family written as module-level stages over a setup: `init`, `update`,
    `act` (and `initial_carry`, for an agent with memory) each take `setup` as their first
    argument, which this binds; `record` holds the other fields (`name`, `config`, `env`, ...).
    Every family builds its agent through this."""

    def bound(stage):
        return None if stage is None else functools.partial(stage, setup)

    if "env" in record:
        masks.require_reader(record["env"], record["name"], record.get("reads_action_mask", False))

    return Agent(
        init=bound(init),
        update=bound(update),
        act=bound(act),
        initial_carry=bound(initial_carry),
        **record,
    )


# What a composition may change of the agent it is made of (`derive`): its identity, never how it
# computes.
DERIVED = ("name", "default_hparams", "check_hparams")


def derive(agent: Agent, **identity: Any) -> Agent:
    """`agent` under another family's identity: a composition of a family (RL^2 of PPO, FixPO
    of PPO with its hooks, SAC + HER) takes the agent its base builds and sets the fields of
    `DERIVED` (`name`, `default_hparams`, `check_hparams`); another field is a `ValueError`
    naming it, since what the agent computes is its base's to build."""
    other = sorted(set(identity) - set(DERIVED))
    if other:
        raise ValueError(
            f"derive({agent.name}): {', '.join(other)} cannot be derived; allowed: "
            f"{', '.join(DERIVED)}"
        )
    return agent._replace(**identity)


def acting(act: Callable, initial_carry: Callable, memory: bool) -> dict[str, Callable | None]:
    """`bind`'s `act` and `initial_carry` for a family whose `act` stage has one arity whether or
    not its network has memory: `(setup, state, obs, key, deterministic, carry) -> (action,
    carry)`, the carry `()` without memory. With `memory`, both as they are; without, no
    `initial_carry` and the contract's `act`, which takes no carry and returns the action."""
    if memory:
        return {"act": act, "initial_carry": initial_carry}

    def act_without_memory(setup, state, obs, key, deterministic=False, **mask):
        return act(setup, state, obs, key, deterministic, (), **mask)[0]

    return {"act": act_without_memory, "initial_carry": None}


def policy(agent: Agent, state: Any, deterministic: bool) -> RecurrentPolicy:
    """The policy `agent` acts with from `state`, for `rlsuite.loop.rollout` and `evaluate`: with
    the agent's carry when it has one, else the carry `()`."""
    if agent.initial_carry is None:
        return recurrent(
            lambda key, obs, **mask: (agent.act(state, obs, key, deterministic, **mask), {})
        )

    def apply(key, obs, carry, **mask):
        action, carry = agent.act(state, obs, key, deterministic, carry, **mask)
        return action, {}, carry

    return RecurrentPolicy(apply, lambda num_envs: agent.initial_carry(state, num_envs))


def extra_args(agent: Agent, **given: Any) -> dict[str, Any]:
    """The keyword arguments to call `agent.init` and `agent.update` with: those of `given` the
    agent declares in `extra_args`. A declared one that is missing (None), or one given that the
    agent does not take, is a `ValueError` naming it."""
    missing = [name for name in agent.extra_args if given.get(name) is None]
    if missing:
        raise ValueError(f"{agent.name} needs {', '.join(missing)} (its extra_args)")
    unused = [name for name, value in given.items() if value is not None]
    unused = [name for name in unused if name not in agent.extra_args]
    if unused:
        raise ValueError(
            f"{agent.name} takes no {', '.join(unused)}: its extra_args are "
            f"{agent.extra_args or 'none'}"
        )
    return {name: given[name] for name in agent.extra_args}


def config_dict(config: Any) -> dict:
    """A JSON-able dict of a config dataclass (tuples become lists), with the fields its class
    has retired (`retired_fields`: a field it no longer has, with the one value it could take),
    so that what is recorded of a run reads the same before and after a field is retired."""
    fields = dataclasses.asdict(config)
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    return {**fields, **getattr(type(config), "retired_fields", {})}
