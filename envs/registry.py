"""`make(name, **kwargs) -> (env, params)` and `names()`: one place to build any environment.

Names: ours (`"cartpole"`, `"pendulum"`, ..., `"probe/action_reward"`, the goal-conditioned
`"goal/point_reach"`, ..., `"goal/ant"` on MJX: `envs/goal/`), the meta-RL task families
(`"meta/bandit"`, ...: `envs/tasks/` inside the `RL2` trial wrapper), the UED maze (`"maze"`:
`envs/maze/`, a DR level at every reset) and PAIRED's level editor for it (`"maze/editor"`),
Brax (`"brax/ant"`), gymnax (`"gymnax/CartPole-v1"`) and MuJoCo Playground's DM Control suite
(`"playground/CartpoleBalance"`: `envs/playground_adapter.py`, where `rlsuite[playground]` is
installed; its params are the model's physics, `make("playground/CartpoleBalance",
body_mass=...)`, and its constructor takes `impl`, `randomize` and Playground's config keys).
Keyword arguments that name a field of the environment's params override it (`make("cartpole",
gravity=20.0)`); the others go to the environment's constructor (`make("probe/action_reward",
continuous=True)`, `make("brax/ant", backend="generalized")`).
Our environments, Brax and Playground come wrapped in `TimeLimit` at their standard episode
length (Playground's: the task's `episode_length`) unless
`max_episode_steps` says otherwise (`None`: no limit); gymnax environments keep their own limit
(`params.max_steps_in_episode`, which `max_episode_steps` sets), and so does the maze
(`params.max_steps`, the horizon its reward is scaled by); the editor's episodes last
`n_walls + 2` steps, so `max_episode_steps` does not apply to it.

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
import functools
import inspect
from typing import Any

import jax.numpy as jnp
import numpy as np
from rlsuite.envs import maze as ued
from rlsuite.envs import rendering
from rlsuite.envs.acrobot import Acrobot
from rlsuite.envs.cartpole import CartPole
from rlsuite.envs.goal import GOAL_ENVS, MJX_GOAL_ENVS
from rlsuite.envs.mountain_car_continuous import MountainCarContinuous
from rlsuite.envs.pendulum import Pendulum
from rlsuite.envs.point_mass import PointMass
from rlsuite.envs.probes import PROBES
from rlsuite.envs.tasks import bandits, maze, mjx_tasks, point_robot, tabular_mdp

from rlsuite.environment import Environment
from rlsuite.environment.meta import RL2
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


def _trials(field: str, value: Any) -> int:
    """A trial length given to a `meta/` name, checked to be an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"invalid {field}={value!r}; allowed: an integer >= 1")
    return value


def _task_env(cls: type[Environment]):
    """Mark a meta-RL family's factory with the class of the environment it wraps in `RL2`
    (`factory.task_env`), so that what it builds can be known without building it (an MJX
    one takes seconds)."""

    def mark(factory):
        factory.task_env = cls
        return factory

    return mark


@_task_env(bandits.BernoulliBandit)
def meta_bandit(
    num_arms: int = 5, pulls: int = 10, memory: str = "trial", held_out: bool = False
) -> RL2:
    """Duan et al.'s bandits: probs ~ U[0, 1]^num_arms per trial, `pulls` one-pull episodes.
    Its tasks are levels for a curriculum; `held_out` evaluates on the five named bandits too
    (5 arms)."""
    pulls = _trials("pulls", pulls)
    if not isinstance(held_out, bool):
        raise ValueError(f"invalid held_out={held_out!r}; allowed: True or False")
    env = bandits.BernoulliBandit(num_arms)
    tasks = bandits.tasks(num_arms, held_out)
    return RL2(env, bandits.sample_uniform, episodes_per_trial=pulls, memory=memory, tasks=tasks)


@_task_env(bandits.BernoulliBandit)
def meta_two_arm_bandit(pulls: int = 100, memory: str = "trial") -> RL2:
    """gymnax's two arms {p, 1 - p} in a random order per trial (`p` a params field, 0.1)."""
    pulls = _trials("pulls", pulls)
    env = bandits.BernoulliBandit(2)
    return RL2(env, bandits.sample_paired, episodes_per_trial=pulls, memory=memory)


@_task_env(tabular_mdp.TabularMDP)
def meta_tabular_mdp(
    num_states: int = 10,
    num_actions: int = 5,
    horizon: int = 10,
    episodes_per_trial: int = 10,
    memory: str = "trial",
) -> RL2:
    """Duan et al.'s random tabular MDPs, `episodes_per_trial` episodes of `horizon` steps."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = tabular_mdp.TabularMDP(num_states, num_actions, horizon)
    return RL2(env, tabular_mdp.sample_task, episodes_per_trial=episodes, memory=memory)


@_task_env(maze.Maze)
def meta_maze(
    size: int = 5,
    view: int = 3,
    observe_position: bool = False,
    max_steps: int | None = None,
    episodes_per_trial: int = 3,
    memory: str = "trial",
    wall_density: float = 0.0,
) -> RL2:
    """A grid maze with a goal per trial, `episodes_per_trial` episodes from random starts; with
    `wall_density` > 0, walls per trial too (`maze.sample_layout`: densities up to it), and the
    six held-out layouts where the maze is 5 x 5. Its tasks are levels for a curriculum
    (`rlsuite train ued --env meta/maze --env-option wall_density=0.4`)."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    number = isinstance(wall_density, int | float) and not isinstance(wall_density, bool)
    if not number or not 0.0 <= wall_density <= 1.0:
        raise ValueError(f"invalid wall_density={wall_density!r}; allowed: a number in [0, 1]")
    env = maze.Maze(size, view, observe_position, max_steps)
    sample = maze.sample_task
    if wall_density > 0:
        sample = functools.partial(maze.sample_layout, wall_density=float(wall_density))
    tasks = maze.tasks(size, walls=wall_density > 0)
    return RL2(env, sample, episodes_per_trial=episodes, memory=memory, tasks=tasks)


@_task_env(point_robot.PointRobot)
def meta_point_robot(
    max_steps: int = 20, episodes_per_trial: int = 2, memory: str = "trial"
) -> RL2:
    """A point robot and a goal on the upper unit semicircle per trial."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = point_robot.PointRobot(max_steps)
    return RL2(env, point_robot.sample_task, episodes_per_trial=episodes, memory=memory)


@_task_env(mjx_tasks.CheetahVelocity)
def meta_cheetah_velocity(
    max_steps: int = 200, episodes_per_trial: int = 2, backend: str = "mjx", memory: str = "trial"
) -> RL2:
    """Brax's halfcheetah (MJX) with a target velocity ~ U[velocity_low, velocity_high] per
    trial (params fields, default [0, 3]), `episodes_per_trial` episodes of `max_steps` steps."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = mjx_tasks.CheetahVelocity(max_steps, backend)
    return RL2(env, mjx_tasks.sample_velocity, episodes_per_trial=episodes, memory=memory)


@_task_env(mjx_tasks.AntDirection)
def meta_ant_direction(
    max_steps: int = 200, episodes_per_trial: int = 2, backend: str = "mjx", memory: str = "trial"
) -> RL2:
    """Brax's ant (MJX) rewarded along a direction per trial: forward or backward (params
    forward_backward, default) or any angle in the plane."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = mjx_tasks.AntDirection(max_steps, backend)
    return RL2(env, mjx_tasks.sample_direction, episodes_per_trial=episodes, memory=memory)


# Meta-RL task families, each trained across trials: `make` returns them `RL2`-wrapped, with no
# `TimeLimit` (a trial ends by its length; every inner episode by the family's own horizon).
META: dict[str, Any] = {
    "meta/bandit": meta_bandit,
    "meta/two_arm_bandit": meta_two_arm_bandit,
    "meta/tabular_mdp": meta_tabular_mdp,
    "meta/maze": meta_maze,
    "meta/point_robot": meta_point_robot,
    "meta/cheetah_velocity": meta_cheetah_velocity,
    "meta/ant_direction": meta_ant_direction,
}


def ued_maze(
    height: int = 13, width: int = 13, n_walls: int = 25, view_size: int = 5, max_steps: int = 250
) -> ued.Maze:
    """The UED maze with domain randomisation: a fresh `height` x `width` level of up to
    `n_walls` walls at every reset (jaxued's maze defaults: 13 x 13, 25 walls, horizon 250)."""
    generator = ued.make_generator(height, width, n_walls)
    return ued.Maze(height, width, view_size, max_steps, generator=generator)


def ued_maze_small(
    height: int = 7, width: int = 7, n_walls: int = 10, view_size: int = 5, max_steps: int = 196
) -> ued.Maze:
    """`maze` at the size a CPU trains a UED student on in minutes: 7 x 7, up to 10 walls,
    horizon 196 (4 h w)."""
    return ued_maze(height, width, n_walls, view_size, max_steps)


# The UED maze (`envs/maze/`): no `TimeLimit` goes around these. The maze's level lives in its
# params and it counts its own horizon (`params.max_steps`, which `max_episode_steps` sets); the
# editor (PAIRED's adversary) ends every episode after its `n_walls + 2` placements.
UED: dict[str, Any] = {
    "maze": ued_maze,
    "maze/small": ued_maze_small,
    "maze/editor": ued.MazeEditor,
}

_DEFAULT = object()
REGISTERED: dict[str, tuple[Any, Any]] = {}  # name -> (factory, max_episode_steps)


def register(name: str, factory: Any, max_episode_steps: Any = _DEFAULT) -> None:
    """Make `make(name)` build `factory()` (an `Environment` subclass, or a function of no
    arguments returning an environment), with a `TimeLimit` of `max_episode_steps` (default: the
    environment's `max_episode_steps` attribute, or none). A built-in name is refused; registering
    a name again replaces it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register: the name must be a non-empty string, got {name!r}")
    builtin = name in OURS or name in OURS_MJX or name in META or name in UED
    if builtin or name.startswith(("brax/", "gymnax/", "playground/", *SUITES)):
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


def names() -> list[str]:
    """Every environment name `make` accepts (imports brax and gymnax to list theirs)."""
    from rlsuite.envs.brax_adapter import brax_names
    from rlsuite.envs.gymnax_adapter import gymnax_names

    return (
        list(OURS)
        + list(OURS_MJX)
        + list(META)
        + list(UED)
        + [f"brax/{n}" for n in brax_names()]
        + [f"gymnax/{n}" for n in gymnax_names()]
        + [f"playground/{n}" for n in _playground_names()]
        + [prefix + n for prefix, suite in SUITES.items() for n in suite.names()]
        + list(REGISTERED)
    )


def _playground_names() -> list[str]:
    """Playground's DM Control suite tasks that run here; none where Playground is not
    installed (it is an extra: `rlsuite[playground]`)."""
    from rlsuite.envs import playground_adapter as pg

    return pg.playground_names() if pg.installed() else []


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
    if name not in REGISTERED and ":" in name:
        _import_env(name)
    if name in REGISTERED:
        factory, limit = REGISTERED[name]
        if max_episode_steps is _DEFAULT:
            max_episode_steps = limit
        ctor = _constructor_args(factory) if isinstance(factory, type) else set()
        return _build(name, _environment_factory(name, factory), ctor, max_episode_steps, kwargs)
    if name.startswith("brax/"):
        from rlsuite.envs.brax_adapter import BraxEnv, brax_names, unusable

        if name[5:] not in unusable():  # (BraxEnv says why one of those cannot run)
            _check_known(name, [f"brax/{n}" for n in brax_names()])
        factory = lambda **kw: BraxEnv(name[5:], **kw)  # noqa: E731
        return _build(name, factory, set(kwargs), max_episode_steps, kwargs)
    if name.startswith("playground/"):
        return _make_playground(name, max_episode_steps, kwargs)
    for prefix, suite in SUITES.items():
        if name.startswith(prefix):
            return _make_suite(name, suite, max_episode_steps, kwargs)
    if name.startswith("gymnax/"):
        from rlsuite.envs.gymnax_adapter import GymnaxEnv, gymnax_names

        _check_known(name, [f"gymnax/{n}" for n in gymnax_names()])
        if max_episode_steps is not _DEFAULT:
            kwargs = {**kwargs, "max_steps_in_episode": max_episode_steps}
        return _build(name, lambda: GymnaxEnv(name[7:]), set(), None, kwargs)
    _check_known(name, names())
    raise AssertionError("unreachable")


def _make_playground(name: str, max_episode_steps: Any, kwargs: dict) -> tuple[Environment, Any]:
    """A `playground/<Task>` name: MuJoCo Playground's DM Control suite task (`PlaygroundEnv`),
    its params fields (physics) from `kwargs` and the rest its constructor's (impl, randomize,
    Playground config keys); a task that cannot run here is refused saying why."""
    from rlsuite.envs import playground_adapter as pg

    if not pg.installed():
        raise ValueError(
            f"environment {name!r} needs MuJoCo Playground: pip install 'rlsuite[playground]'"
        )
    task = name.removeprefix("playground/")
    if task not in pg.refused() and task not in pg.unusable():  # (PlaygroundEnv says why)
        _check_known(name, [f"playground/{n}" for n in pg.playground_names()])
    fields = {f.name for f in dataclasses.fields(pg.PlaygroundParams)}
    ctor = set(kwargs) - fields
    # A physics field given as a list ([0, 1, 0.2]) is an array of the model's float32.
    kwargs = {
        k: jnp.asarray(v, jnp.float32) if k in fields and isinstance(v, list | tuple) else v
        for k, v in kwargs.items()
    }
    return _build(name, lambda **kw: pg.PlaygroundEnv(task, **kw), ctor, max_episode_steps, kwargs)


@dataclasses.dataclass(frozen=True)
class Suite:
    """A suite of JAX environments reached through an adapter module of `rlsuite.envs`
    (`envs/<module>.py`), under a name prefix. The module has `installed()`, `<names>()` (the
    tasks adapted, without the prefix), `refused()` (task -> why it cannot run here) and the
    environment class `<env_class>(task, **options)`; `limit` is the option that sets the time
    limit the suite counts itself (`max_episode_steps`), and `extra` the pip extra that
    installs the suite."""

    title: str
    module: str
    names_function: str
    env_class: str
    limit: str
    extra: str

    def adapter(self) -> Any:
        import importlib

        return importlib.import_module(f"rlsuite.envs.{self.module}")

    def installed(self) -> bool:
        return self.adapter().installed()

    def names(self) -> list[str]:
        """The adapted tasks, none where the suite is not installed."""
        adapter = self.adapter()
        return getattr(adapter, self.names_function)() if adapter.installed() else []


# Suites whose tasks count their own time limit (no `TimeLimit` around them: their adapters
# split a time limit from a real end themselves) and take their options as constructor keywords.
SUITES: dict[str, Suite] = {
    "jumanji/": Suite("Jumanji", "jumanji_adapter", "jumanji_names", "JumanjiEnv", "time_limit",
                      "jumanji"),
    "craftax/": Suite("Craftax", "craftax_adapter", "craftax_names", "CraftaxEnv",
                      "max_timesteps", "craftax"),
    "minigrid/": Suite("XLand-MiniGrid", "minigrid_adapter", "minigrid_names", "MiniGridEnv",
                       "max_steps", "minigrid"),
}  # fmt: skip


def _make_suite(name: str, suite: Suite, max_episode_steps: Any, kwargs: dict):
    """A `<prefix><Task>` name of one of `SUITES`: the adapter's environment, built with
    `kwargs` as its options and `max_episode_steps` as its time-limit option; a task that cannot
    run here is refused saying why (the adapter's constructor), an unknown one listing the
    known."""
    prefix = name[: name.index("/") + 1]
    if not suite.installed():
        raise ValueError(
            f"environment {name!r} needs {suite.title}: pip install 'rlsuite[{suite.extra}]'"
        )
    adapter = suite.adapter()
    task = name.removeprefix(prefix)
    if task not in adapter.refused():
        _check_known(name, [prefix + n for n in suite.names()])
    if max_episode_steps is None:
        raise ValueError(
            f"make({name!r}): max_episode_steps=None; {suite.title} counts its own time limit "
            f"({suite.limit}): give an integer >= 1"
        )
    if max_episode_steps is not _DEFAULT:
        kwargs = {**kwargs, suite.limit: max_episode_steps}
    env_class = getattr(adapter, suite.env_class)
    return _build(name, lambda **kw: env_class(task, **kw), set(kwargs), None, kwargs)


def parse_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """`make(name, **options)`'s keyword arguments from `options` as the command line gives them
    (`--env-option FIELD=VALUE`: every value a string) or as `config.json` records them (JSON
    values): each value converted to the type of the field's default, the params field's or the
    constructor argument's (a bool from true/false, an int, a float, a string, an array of the
    default's dtype from a list such as [1, 0]); a field without a known default (a Brax
    constructor's keyword, say) takes the Python literal the text spells, or the text itself.
    A value that does not convert is a `ValueError` naming the field and the type it takes; an
    unknown field is `make`'s to refuse, naming the allowed ones."""
    if not options:
        return {}
    defaults = _option_defaults(name)
    return {
        field: _option_value(name, field, v, defaults.get(field)) for field, v in options.items()
    }


def make_with_options(name: str, options: dict[str, Any] | None) -> tuple[Environment, Any]:
    """`make(name, **parse_options(name, options))`: an environment as a run records it."""
    return make(name, **parse_options(name, options or {}))


def options_to_json(options: dict[str, Any]) -> dict[str, Any]:
    """`parse_options`' values as JSON values (arrays as lists), for `config.json`."""
    return {k: np.asarray(v).tolist() if hasattr(v, "shape") else v for k, v in options.items()}


def _option_defaults(name: str) -> dict[str, Any]:
    """The default of every field `make(name, ...)` takes: its params' (from a build without
    options) and its constructor's keywords that have one."""
    factory = {**OURS, **OURS_MJX, **META, **UED}.get(name)
    if factory is None and name in REGISTERED:
        factory = REGISTERED[name][0]
    defaults = {}
    if name.startswith("playground/"):
        from rlsuite.envs.playground_adapter import option_defaults

        defaults.update(option_defaults(name.removeprefix("playground/")))
    for prefix, suite in SUITES.items():
        option_defaults = getattr(suite.adapter(), "option_defaults", None)
        if name.startswith(prefix) and option_defaults is not None:
            defaults.update(option_defaults(name.removeprefix(prefix)))
    if factory is not None:
        target = factory.__init__ if isinstance(factory, type) else factory
        for p in inspect.signature(target).parameters.values():
            if p.default is not inspect.Parameter.empty:
                defaults[p.name] = p.default
    _, params = make(name)
    defaults.update({f.name: getattr(params, f.name) for f in dataclasses.fields(params)})
    return defaults


def _option_value(name: str, field: str, value: Any, default: Any) -> Any:
    import ast

    def refuse(kind: str) -> ValueError:
        return ValueError(f"environment option {field}={value!r} of {name}: {field} takes {kind}")

    text = value if isinstance(value, str) else None
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false", "1", "0"):
            return text.lower() in ("true", "1")
        raise refuse("true or false")
    if isinstance(default, (int, float, np.integer, np.floating)) and not hasattr(default, "shape"):
        kind = int if isinstance(default, (int, np.integer)) else float
        try:
            converted = kind(text if text is not None else value)
        except (TypeError, ValueError):
            converted = None
        if converted is None or (kind is int and text is None and converted != value):
            raise refuse("an integer" if kind is int else "a number")
        return converted
    if isinstance(default, str):
        if text is None:
            raise refuse("a string")
        return text
    literal = value
    if text is not None:
        try:
            literal = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            literal = text
    if hasattr(default, "shape") and hasattr(default, "dtype"):
        try:
            array = np.asarray(literal, dtype=default.dtype)
        except (TypeError, ValueError):
            array = None
        if array is None or array.shape != tuple(default.shape):
            raise refuse(
                f"an array of shape {tuple(default.shape)} (e.g. {np.asarray(default).tolist()})"
            )
        return jnp.asarray(array)
    if isinstance(default, tuple) and isinstance(literal, list):
        return tuple(literal)
    return literal


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
    """The registered environments that can be drawn (Brax's and Playground's as one entry each,
    `brax/...` and `playground/...`): those
    whose innermost environment has a `render` method, found from its class (a meta-RL family's
    `task_env`), nothing built but the UED maze's factories (no MJX)."""

    def draws(cls: Any) -> bool:
        return callable(getattr(cls, "render", None))

    names = [name for name, cls in {**OURS, **OURS_MJX}.items() if draws(cls)]
    names += [name for name, factory in META.items() if draws(factory.task_env)]
    for name, factory in UED.items():
        cls = factory if isinstance(factory, type) else type(factory())
        if draws(cls):
            names.append(name)
    return [
        *names,
        "brax/... (every Brax environment, through MuJoCo's renderer)",
        "playground/... (every Playground task, through MuJoCo's renderer)",
    ]


def check_renderable(env: Environment, name: str) -> None:
    """A `NotRenderable` naming the environments that can be drawn, where `env` cannot."""
    if not rendering.renderable(env):
        raise rendering.NotRenderable(
            f"environment {name!r} has no renderer; those that can be rendered: "
            f"{', '.join(renderable_names())}"
        )
