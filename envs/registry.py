"""`make(name, **kwargs) -> (env, params)` and `names()`: one place to build any environment.

Names: ours (`"cartpole"`, `"pendulum"`, ..., `"probe/action_reward"`, the goal-conditioned
`"goal/point_reach"`, ..., `"goal/ant"` on MJX: `envs/goal/`), the meta-RL task families
(`"meta/bandit"`, ...: `envs/tasks/families.py`, inside the `RL2` trial wrapper), the UED maze
(`"maze"`: `envs/maze/presets.py`, a DR level at every reset) and PAIRED's level editor for it
(`"maze/editor"`), and the suites behind adapters, each declared by its adapter module as a
`Suite` (`envs/suites.py`) under a prefix: Brax (`"brax/ant"`), gymnax (`"gymnax/CartPole-v1"`),
MuJoCo Playground's DM Control suite (`"playground/CartpoleBalance"`, its params the model's
physics), Jumanji, Craftax and XLand-MiniGrid (`"jumanji/Snake-v1"`, ...) where their extras are
installed. `register_suite` adds a suite from outside; `make` reaches every suite the same way.
Keyword arguments that name a field of the environment's params override it (`make("cartpole",
gravity=20.0)`); the others go to the environment's constructor (`make("probe/action_reward",
continuous=True)`, `make("brax/ant", backend="generalized")`; a suite says which are which:
`Suite.split`).
Our environments, Brax and Playground come wrapped in `TimeLimit` at their standard episode
length (Playground's: the task's `episode_length`) unless `max_episode_steps` says otherwise
(`None`: no limit); the other suites keep their own limit, which `max_episode_steps` sets
(`Suite.limit`: gymnax's `params.max_steps_in_episode`, Jumanji's `time_limit`, ...), and so does
the maze (`params.max_steps`, the horizon its reward is scaled by); the editor's episodes last
`n_walls + 2` steps, so `max_episode_steps` does not apply to it. Options as the command line
gives them: `rlsuite.envs.options`.

A user's environment (an `rlsuite.environment.Environment` subclass) is reached by name in two
ways: `register("my/grid", GridWorld, max_episode_steps=100)` in a script, or, where nothing
can be run first (the command line, `rlsuite train ppo --env my_module:GridWorld`), a name
`module:attribute` that `make` imports (from the working directory or `sys.path`) and
registers under that name. The attribute is the class or a function of no arguments that
returns an environment; its `max_episode_steps` attribute, if any, sets the time limit.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
from typing import Any

from rlsuite.envs import (
    brax_adapter,
    craftax_adapter,
    gymnax_adapter,
    jumanji_adapter,
    minigrid_adapter,
    playground_adapter,
    rendering,
)
from rlsuite.envs.acrobot import Acrobot
from rlsuite.envs.cartpole import CartPole
from rlsuite.envs.goal import GOAL_ENVS, MJX_GOAL_ENVS
from rlsuite.envs.maze.presets import UED
from rlsuite.envs.mountain_car_continuous import MountainCarContinuous
from rlsuite.envs.pendulum import Pendulum
from rlsuite.envs.point_mass import PointMass
from rlsuite.envs.probes import PROBES
from rlsuite.envs.suites import Suite
from rlsuite.envs.tasks.families import META

from rlsuite.environment import Environment
from rlsuite.environment.wrappers import TimeLimit

OURS: dict[str, type[Environment]] = {
    "cartpole": CartPole,
    "acrobot": Acrobot,
    "pendulum": Pendulum,
    "mountain_car_continuous": MountainCarContinuous,
    "point_mass": PointMass,
    **{f"probe/{name}": cls for name, cls in PROBES.items()},
    **{f"goal/{name}": cls for name, cls in GOAL_ENVS.items()},
}
# Ours on MJX (`goal/ant`, ...): built as OURS are, kept apart as `brax/` names are (jit only).
OURS_MJX: dict[str, type[Environment]] = {f"goal/{n}": c for n, c in MJX_GOAL_ENVS.items()}

# The suites behind adapters, by prefix, in the order `names()` lists them: each adapter
# module's `SUITE`, then those given to `register_suite`.
SUITES: dict[str, Suite] = {
    module.SUITE.prefix: module.SUITE
    for module in (
        brax_adapter,
        gymnax_adapter,
        playground_adapter,
        jumanji_adapter,
        craftax_adapter,
        minigrid_adapter,
    )
}
BUILT_IN_SUITES = tuple(SUITES)

_DEFAULT = object()
REGISTERED: dict[str, tuple[Any, Any]] = {}  # name -> (factory, max_episode_steps)


def _built_in(name: str) -> bool:
    return name in OURS or name in OURS_MJX or name in META or name in UED


def register(name: str, factory: Any, max_episode_steps: Any = _DEFAULT) -> None:
    """Make `make(name)` build `factory()` (an `Environment` subclass, or a function of no
    arguments returning an environment), with a `TimeLimit` of `max_episode_steps` (default: the
    environment's `max_episode_steps` attribute, or none). A built-in name is refused; registering
    a name again replaces it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register: the name must be a non-empty string, got {name!r}")
    if _built_in(name) or name.startswith(tuple(SUITES)):
        raise ValueError(f"register: {name!r} is a built-in environment's name; choose another")
    if not callable(factory):
        raise TypeError(
            f"register({name!r}): factory must be an Environment subclass or a function "
            f"returning an environment, got {type(factory).__name__}"
        )
    if max_episode_steps is not _DEFAULT and max_episode_steps is not None:
        if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int):
            raise ValueError(f"register({name!r}): max_episode_steps must be an int or None")
    REGISTERED[name] = (factory, max_episode_steps)


def register_suite(suite: Suite) -> Suite:
    """Make `make(suite.prefix + task)` build `suite`'s tasks and `names()` list them, as the
    adapters' own suites are (`envs/suites.py` says how). A built-in suite's prefix, or one
    that a built-in or registered environment's name starts with, is refused; registering a
    prefix again replaces its suite. Returns `suite`."""
    if not isinstance(suite, Suite):
        raise TypeError(f"register_suite: a Suite, got {type(suite).__name__}")
    prefix = suite.prefix
    if not isinstance(prefix, str) or len(prefix) < 2 or not prefix.endswith("/"):
        raise ValueError(f"register_suite: prefix {prefix!r}; allowed: a name and a slash, 'toy/'")
    if prefix in BUILT_IN_SUITES:
        raise ValueError(f"register_suite: {prefix!r} is a built-in suite's prefix; choose another")
    nested = [p for p in SUITES if p != prefix and (p.startswith(prefix) or prefix.startswith(p))]
    if nested:
        raise ValueError(f"register_suite: {prefix!r} overlaps the prefix {nested[0]!r}")
    taken = [n for n in (*OURS, *OURS_MJX, *META, *UED, *REGISTERED) if n.startswith(prefix)]
    if taken:
        raise ValueError(f"register_suite: {prefix!r} begins the names {taken}; choose another")
    SUITES[prefix] = suite
    return suite


def suite_of(name: str) -> Suite | None:
    """The suite whose prefix `name` starts with, if any."""
    return next((s for prefix, s in SUITES.items() if name.startswith(prefix)), None)


def names() -> list[str]:
    """Every environment name `make` accepts (imports each installed suite to list its tasks)."""
    return (
        list(OURS)
        + list(OURS_MJX)
        + list(META)
        + list(UED)
        + [prefix + n for prefix, suite in SUITES.items() for n in suite.tasks()]
        + list(REGISTERED)
    )


def make(name: str, max_episode_steps: Any = _DEFAULT, **kwargs: Any) -> tuple[Environment, Any]:
    """Build the environment called `name`; returns `(env, params)`."""
    if not isinstance(name, str):
        raise TypeError(f"environment name must be a string, got {type(name).__name__}")
    if name in OURS or name in OURS_MJX:
        cls = OURS.get(name) or OURS_MJX[name]
        return _build(name, cls, _constructor_args(cls), max_episode_steps, kwargs)
    if name in META:
        if max_episode_steps is not _DEFAULT:
            raise ValueError(
                f"make({name!r}): max_episode_steps does not apply to a meta-RL family; its "
                "trial length is pulls or episodes_per_trial and its episode length the "
                "family's own argument (horizon or max_steps)"
            )
        factory = META[name]
        return _build(name, factory, _constructor_args(factory), None, kwargs)
    if name in UED:
        return _make_ued(name, max_episode_steps, kwargs)
    if name not in REGISTERED and ":" in name:
        _import_env(name)
    if name in REGISTERED:
        factory, limit = REGISTERED[name]
        if max_episode_steps is _DEFAULT:
            max_episode_steps = limit
        ctor = _constructor_args(factory) if isinstance(factory, type) else set()
        return _build(name, _environment_factory(name, factory), ctor, max_episode_steps, kwargs)
    suite = suite_of(name)
    if suite is not None:
        return _make_suite(name, suite, max_episode_steps, kwargs)
    _check_known(name, names())
    raise AssertionError("unreachable")


def _make_ued(name: str, max_episode_steps: Any, kwargs: dict) -> tuple[Environment, Any]:
    """The UED maze (its horizon `max_steps` set by `max_episode_steps`) or its editor."""
    factory = UED[name]
    horizon = "max_steps" in _constructor_args(factory)
    if max_episode_steps is not _DEFAULT and not horizon:
        raise ValueError(
            f"make({name!r}): max_episode_steps does not apply: an editing episode lasts "
            "n_walls + 2 steps (give n_walls)"
        )
    if max_episode_steps is None:
        raise ValueError(
            f"make({name!r}): max_episode_steps=None; the maze counts its own horizon "
            "(params.max_steps): give an integer >= 1"
        )
    if max_episode_steps is not _DEFAULT:
        kwargs = {**kwargs, "max_steps": max_episode_steps}
    return _build(name, factory, _constructor_args(factory), None, kwargs)


def _make_suite(name: str, suite: Suite, max_episode_steps: Any, kwargs: dict):
    """A `<prefix><task>` name of `suite`: its environment, built as `envs/suites.py` says; a
    task that cannot run here is refused saying why (the adapter's constructor), an unknown
    one listing the known."""
    if not suite.installed():
        how = f"pip install 'rlsuite[{suite.extra}]'" if suite.extra else "it is not installed"
        raise ValueError(f"environment {name!r} needs {suite.title}: {how}")
    task = name.removeprefix(suite.prefix)
    if task not in suite.refused():
        _check_known(name, [suite.prefix + n for n in suite.names()])
    if suite.limit is not None:
        if max_episode_steps is None:
            raise ValueError(
                f"make({name!r}): max_episode_steps=None; {suite.title} counts its own time "
                f"limit ({suite.limit}): give an integer >= 1"
            )
        if max_episode_steps is not _DEFAULT:
            kwargs = {**kwargs, suite.limit: max_episode_steps}
        max_episode_steps = None  # (no `TimeLimit`: the suite counts it)
    constructor, overrides = suite.split(kwargs)
    factory = lambda **kw: suite.environment(task, **kw)  # noqa: E731
    return _build(name, factory, set(constructor), max_episode_steps, {**constructor, **overrides})


def _import_env(name: str) -> None:
    """Import `module:attribute` and register it under that name."""
    import importlib
    import sys

    module_name, _, attribute = name.partition(":")
    if "" not in sys.path:  # a script's folder is on the path; the working directory too
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name.split(".")[0] and error.name != module_name:
            raise
        raise ValueError(
            f"environment {name!r}: no module {module_name!r} on the path (run from the folder "
            "that holds it, or add that folder to PYTHONPATH)"
        ) from None
    if not hasattr(module, attribute):
        raise ValueError(f"environment {name!r}: module {module_name!r} has no {attribute!r}")
    register(name, getattr(module, attribute))


def _environment_factory(name: str, factory: Any):
    """`factory`, checked to give an `Environment` (named in the error otherwise)."""

    def build(**kwargs):
        env = factory(**kwargs)
        if not isinstance(env, Environment):
            raise TypeError(
                f"environment {name!r}: the registered factory returned a "
                f"{type(env).__name__}; it must return an rlsuite.environment.Environment "
                "(subclass it and implement reset_env, step_env, default_params, "
                "observation_space and action_space)"
            )
        return env

    return build


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


def _constructor_args(cls: Any) -> set[str]:
    """The keyword names a class's constructor, or a factory function, takes."""
    target = cls.__init__ if isinstance(cls, type) else cls
    parameters = inspect.signature(target).parameters.values()
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return {p.name for p in parameters if p.name != "self" and p.kind not in variadic}


def renderable_names() -> list[str]:
    """The registered environments that can be drawn: those whose innermost environment has a
    `render` method, found from its class (a meta-RL family's `task_env`), nothing built but the
    UED maze's factories (no MJX), then one entry per suite that draws (`Suite.renders`:
    `brax/...`, `playground/...`)."""

    def draws(cls: Any) -> bool:
        return callable(getattr(cls, "render", None))

    names = [name for name, cls in {**OURS, **OURS_MJX}.items() if draws(cls)]
    names += [name for name, factory in META.items() if draws(factory.task_env)]
    for name, factory in UED.items():
        cls = factory if isinstance(factory, type) else type(factory())
        if draws(cls):
            names.append(name)
    return names + [f"{s.prefix}... ({s.renders})" for s in SUITES.values() if s.renders]


def check_renderable(env: Environment, name: str) -> None:
    """A `NotRenderable` naming the environments that can be drawn, where `env` cannot."""
    if not rendering.renderable(env):
        raise rendering.NotRenderable(
            f"environment {name!r} has no renderer; those that can be rendered: "
            f"{', '.join(renderable_names())}"
        )
