"""`make(name, **kwargs) -> (env, params)` and `names()`: one place to build any environment.

Names: ours (`"cartpole"`, `"pendulum"`, ..., `"probe/action_reward"`), Brax (`"brax/ant"`) and
gymnax (`"gymnax/CartPole-v1"`). Keyword arguments that name a field of the environment's params
override it (`make("cartpole", gravity=20.0)`); the others go to the environment's constructor
(`make("probe/action_reward", continuous=True)`, `make("brax/ant", backend="generalized")`).
Our environments and Brax come wrapped in `TimeLimit` at their standard episode length unless
`max_episode_steps` says otherwise (`None`: no limit); gymnax environments keep their own limit
(`params.max_steps_in_episode`, which `max_episode_steps` sets).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from typing import Any

from envs.acrobot import Acrobot
from envs.cartpole import CartPole
from envs.mountain_car_continuous import MountainCarContinuous
from envs.pendulum import Pendulum
from envs.point_mass import PointMass
from envs.probes import PROBES
from rlsuite.environment import Environment
from rlsuite.wrappers import TimeLimit

OURS: dict[str, type[Environment]] = {
    "cartpole": CartPole,
    "acrobot": Acrobot,
    "pendulum": Pendulum,
    "mountain_car_continuous": MountainCarContinuous,
    "point_mass": PointMass,
    **{f"probe/{name}": cls for name, cls in PROBES.items()},
}

_DEFAULT = object()


def names() -> list[str]:
    """Every environment name `make` accepts (imports brax and gymnax to list theirs)."""
    from envs.brax_adapter import brax_names
    from envs.gymnax_adapter import gymnax_names

    return (
        list(OURS) + [f"brax/{n}" for n in brax_names()] + [f"gymnax/{n}" for n in gymnax_names()]
    )


def make(name: str, max_episode_steps: Any = _DEFAULT, **kwargs: Any) -> tuple[Environment, Any]:
    """Build the environment called `name`; returns `(env, params)`."""
    if not isinstance(name, str):
        raise TypeError(f"environment name must be a string, got {type(name).__name__}")
    if name in OURS:
        cls = OURS[name]
        return _build(name, cls, _constructor_args(cls), max_episode_steps, kwargs)
    if name.startswith("brax/"):
        from envs.brax_adapter import BraxEnv, brax_names

        _check_known(name, [f"brax/{n}" for n in brax_names()])
        factory = lambda **kw: BraxEnv(name[5:], **kw)  # noqa: E731
        return _build(name, factory, set(kwargs), max_episode_steps, kwargs)
    if name.startswith("gymnax/"):
        from envs.gymnax_adapter import GymnaxEnv, gymnax_names

        _check_known(name, [f"gymnax/{n}" for n in gymnax_names()])
        if max_episode_steps is not _DEFAULT:
            kwargs = {**kwargs, "max_steps_in_episode": max_episode_steps}
        return _build(name, lambda: GymnaxEnv(name[7:]), set(), None, kwargs)
    _check_known(name, names())
    raise AssertionError("unreachable")


def _check_known(name: str, known: list[str]) -> None:
    if name not in known:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"unknown environment {name!r}{hint} (envs.names() lists all {len(known)} names)"
        )


def _build(
    name: str, factory: Any, ctor_names: set[str], max_episode_steps: Any, kwargs: dict
) -> tuple[Environment, Any]:
    """Construct with the constructor's kwargs, override params with the rest, add `TimeLimit`."""
    ctor_kwargs = {k: v for k, v in kwargs.items() if k in ctor_names}
    env = factory(**ctor_kwargs)
    params = env.default_params
    fields = [f.name for f in dataclasses.fields(params)]
    overrides = {k: v for k, v in kwargs.items() if k not in ctor_names}
    unknown = [k for k in overrides if k not in fields]
    if unknown:
        allowed = sorted(set(fields) | set(ctor_names) | {"max_episode_steps"})
        raise ValueError(
            f"make({name!r}): unknown argument(s) {unknown}; allowed: {', '.join(allowed)}"
        )
    params = env.check_params(params.replace(**overrides))
    if max_episode_steps is _DEFAULT:
        max_episode_steps = getattr(env, "max_episode_steps", None)
    if max_episode_steps is not None:
        env = TimeLimit(env, max_episode_steps)
    return env, params


def _constructor_args(cls: type) -> set[str]:
    parameters = inspect.signature(cls.__init__).parameters.values()
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return {p.name for p in parameters if p.name != "self" and p.kind not in variadic}
