"""`Suite`: what an adapter module declares (`SUITE = Suite(...)`) so that `envs.make` reaches a
suite of JAX environments by a name prefix (`"brax/ant"`, `"jumanji/Snake-v1"`).

Every adapter (`envs/*_adapter.py`) declares one; the registry lists them
(`rlsuite.envs.registry.SUITES`), and `register_suite` adds one from outside, so a new suite needs
no edit to `make`. A declaration imports nothing of its suite: the functions it names import
their package when they are called (`installed()` looks without importing), so `envs.names()`
works where an optional suite is not installed.

How `make(prefix + task, max_episode_steps, **options)` builds a suite's task (`registry`):

1. a suite that is not `installed()` is refused naming its pip extra;
2. a task in `refused()` goes on (its environment's constructor says why it cannot run here);
   a task not in `names()` is refused listing the close ones;
3. the time limit: where the suite counts its own (`limit`, the option that sets it), a given
   `max_episode_steps` is that option (`None`: refused); otherwise the environment is wrapped in
   `rlsuite.environment.wrappers.TimeLimit` of `max_episode_steps` (default: its own
   `max_episode_steps` attribute);
4. `split(options)` gives the constructor's keywords and the params fields to override:
   `environment(task, **constructor)`, then `params.replace(**overrides)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


def _core() -> bool:
    """Always: the suite is one of rlsuite's own dependencies."""
    return True


def _no_refusals() -> dict[str, str]:
    return {}


def constructor_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every option is the constructor's (the default `Suite.split`)."""
    return dict(options), {}


def params_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every option is a field of the params (a `Suite.split` for a constructor that takes no
    options)."""
    return {}, dict(options)


@dataclasses.dataclass(frozen=True)
class Suite:
    """A suite of JAX environments behind an adapter, reached by `envs.make(prefix + task)`."""

    prefix: str
    """The names' prefix, with its slash: `"jumanji/"`."""
    title: str
    """The suite's name in messages: `"Jumanji"`."""
    names: Callable[[], list[str]]
    """The tasks that run here, without the prefix (called only where `installed()`)."""
    environment: Callable[..., Any]
    """`environment(task, **options)`: the adapter's `Environment` class or a function."""
    refused: Callable[[], dict[str, str]] = _no_refusals
    """The suite's tasks that cannot run here, each with why (called only where installed)."""
    installed: Callable[[], bool] = _core
    """Whether the suite can be imported (default: a dependency of rlsuite, always)."""
    extra: str | None = None
    """The pip extra that installs the suite (`pip install 'rlsuite[<extra>]'`)."""
    limit: str | None = None
    """The option that sets the time limit the suite counts itself (`max_episode_steps` is
    given to it); `None`: ours, a `TimeLimit` around the environment."""
    split: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] = constructor_options
    """`options -> (constructor keywords, params overrides)`, values converted where the suite
    takes them in another form (default: every option is the constructor's)."""
    option_defaults: Callable[[str], dict[str, Any]] | None = None
    """`task -> {option: default}`: the constructor's options that are not params fields, for
    reading command-line values as their types (`rlsuite.envs.options.parse_options`)."""
    renders: str = ""
    """Which of its environments draw and how, for `renderable_names` ("": none)."""

    def tasks(self) -> list[str]:
        """The tasks that run here, none where the suite is not installed."""
        return list(self.names()) if self.installed() else []
