"""The agent contract: the optax idea applied to algorithms, a small NamedTuple of pure functions.

    agent = ppo.make(config, env, env_params)   # config: frozen dataclass of static values
    state = agent.init(key, hparams)            # hparams: struct dataclass of traced scalars
    state, metrics = agent.update(state, hparams)   # one iteration: collect + learn
    action = agent.act(state, obs, key, deterministic)

Static values (network sizes, `num_envs`, `num_steps`) live in the config and are closed over;
numeric hyperparameters are an argument, so seeds and hyperparameter batches are both `vmap` axes.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Agent(NamedTuple):
    """An algorithm bound to one environment.

    name: the algorithm's name (`"ppo"`), recorded in checkpoints.
    config: the frozen static configuration.
    env, env_params: the environment as the agent steps it (with the wrappers it added).
    default_hparams: the hyperparameters used when none are given.
    init: `(key, hparams) -> state`, the whole learner state as one pytree.
    update: `(state, hparams) -> (state, metrics)`, one iteration; metrics are scalars.
    act: `(state, obs, key, deterministic) -> action` for one observation or a batch.
    check_hparams: raises a `ValueError` naming the field for invalid concrete hparams.
    env_steps_per_update: environment steps one `update` takes (all parallel envs).
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


def check_config(config: Any, positive_ints: tuple[str, ...]) -> None:
    """Raise a `ValueError` naming the field when a config's integer field is not >= 1."""
    for name in positive_ints:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"{type(config).__name__}.{name} must be an integer >= 1, got {value!r}"
            )


def check_hidden_sizes(config: Any, field: str = "hidden_sizes") -> None:
    """Raise a `ValueError` unless `config.<field>` is a non-empty sequence of integers >= 1;
    store it as a tuple (a list would leave the frozen config unhashable, and `jax.jit` takes
    the agent, config included, as a static argument)."""
    sizes = getattr(config, field)
    valid = isinstance(sizes, (tuple, list)) and len(sizes) > 0
    valid = valid and all(
        isinstance(h, numbers.Integral) and not isinstance(h, bool) and h >= 1 for h in sizes
    )
    if not valid:
        raise ValueError(
            f"{type(config).__name__}.{field} must be a non-empty sequence of integers >= 1, "
            f"got {sizes!r}"
        )
    object.__setattr__(config, field, tuple(int(h) for h in sizes))


def config_dict(config: Any) -> dict:
    """A JSON-able dict of a config dataclass (tuples become lists)."""
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }
