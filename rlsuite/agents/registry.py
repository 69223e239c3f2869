"""The algorithm registry: each family declares itself once, at the end of its own module, and the
command line, the tuned table and the experiment scripts look it up by name.

    ALGORITHM = registry.register(registry.Algorithm(
        name="ppo", make=make, config_cls=PPOConfig, hparams_cls=PPOHparams,
        offline=False, default_env="cartpole"))

    algo = registry.get("ppo")
    agent = algo.make(algo.config_cls(num_envs=8), env, env_params)

The first lookup imports the built-in families (`rlsuite.agents.<name>` for each of `BUILT_IN`)
and the packages that declare an entry point in the `rlsuite.algorithms` group (its object an
`Algorithm`, or a module that registers on import), so a lookup always sees them and this module
imports no agent.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

BUILT_IN = (
    "ppo",
    "sac",
    "td3",
    "bc",
    "td3_bc",
    "iql",
    "cql",
    "rl2",
    "ued",
    "crl",
    "sac_her",
    "dqn",
    "c51",
    "qrdqn",
    "iqn",
    "rainbow",
    "pqn",
    "fixpo",
    "rarl",
    "dpo",
    "lpo",
    "csve",
    "saq",
)
ENTRY_POINT_GROUP = "rlsuite.algorithms"
_NAME = re.compile(r"[a-z][a-z0-9_]*")
MEMORY_FIELDS = ("recurrent", "recurrent_size")  # what a family with memory is configured by


class Algorithm(NamedTuple):
    """An algorithm family as the command line sees it.

    name: what `rlsuite train NAME` and `config.json` call it, lowercase (`[a-z][a-z0-9_]*`);
        its agents' `Agent.name`.
    make: `(config, env, env_params) -> Agent`.
    config_cls: the frozen dataclass of its static configuration (every field a flag).
    hparams_cls: the `flax.struct.dataclass` of its numeric hyperparameters (every field a flag).
    offline: whether it learns from a dataset (`rlsuite train NAME --dataset FILE`, given to the
        agent as `data`) rather than by stepping its environment.
    default_env: the environment `rlsuite train NAME` uses without `--env` (an offline family
        takes its dataset's; this one's tuned flags are what `--help` shows without a dataset).
    memory: whether its agents can carry a recurrent policy, chosen by the config's fields
        `MEMORY_FIELDS` (the flags `--recurrent`, `--recurrent-size`), which such a config must
        have; the command line refuses those flags for a family without, naming the families
        with.
    summary: `(rows) -> str | None`, what the run's summary line adds for the family, from the
        run's metric rows (`metrics.jsonl`'s, from its first update, a resumed run's included):
        a sentence on what its own metrics say of the whole run (FixPO: whether every update
        ended inside its trust region), or None where they say nothing; None: nothing to add.
    """

    name: str
    make: Callable[..., Any]
    config_cls: type
    hparams_cls: type
    offline: bool
    default_env: str
    memory: bool = False
    summary: Callable[[list[dict]], str | None] | None = None


_ALGORITHMS: dict[str, Algorithm] = {}
_loaded = False


def _check(algorithm: Algorithm) -> None:
    """Raise a `TypeError` or `ValueError` naming the field for a malformed record."""
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"register takes an Algorithm record, got {type(algorithm).__name__}")
    name = algorithm.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"Algorithm.name must be lowercase letters, digits and underscores, starting with a "
            f"letter ([a-z][a-z0-9_]*), got {name!r}"
        )
    if not callable(algorithm.make):
        raise TypeError(f"Algorithm {name!r}: make must be callable, got {algorithm.make!r}")
    for field in ("config_cls", "hparams_cls"):
        cls = getattr(algorithm, field)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"Algorithm {name!r}: {field} must be a dataclass type, got {cls!r}")
    if not isinstance(algorithm.offline, bool):
        raise TypeError(f"Algorithm {name!r}: offline must be a bool, got {algorithm.offline!r}")
    if not isinstance(algorithm.default_env, str) or not algorithm.default_env:
        raise ValueError(
            f"Algorithm {name!r}: default_env must be an environment name, "
            f"got {algorithm.default_env!r}"
        )
    if not isinstance(algorithm.memory, bool):
        raise TypeError(f"Algorithm {name!r}: memory must be a bool, got {algorithm.memory!r}")
    if algorithm.summary is not None and not callable(algorithm.summary):
        raise TypeError(
            f"Algorithm {name!r}: summary must be callable or None, got {algorithm.summary!r}"
        )
    fields = {f.name for f in dataclasses.fields(algorithm.config_cls)}
    missing = [f for f in MEMORY_FIELDS if f not in fields]
    if algorithm.memory and missing:
        raise ValueError(
            f"Algorithm {name!r}: memory=True, but {algorithm.config_cls.__name__} has no "
            f"{' or '.join(missing)} field (a family with memory is configured by "
            f"{', '.join(MEMORY_FIELDS)})"
        )


def register(algorithm: Algorithm) -> Algorithm:
    """Add `algorithm` under its name and return it. Registering the same record again changes
    nothing; a different record under a taken name is refused with a `ValueError`."""
    _check(algorithm)
    known = _ALGORITHMS.get(algorithm.name)
    if known is not None and known != algorithm:
        raise ValueError(
            f"algorithm {algorithm.name!r} is registered already (make={_where(known.make)}); "
            f"refusing a different record for it (make={_where(algorithm.make)})"
        )
    _ALGORITHMS[algorithm.name] = algorithm
    return algorithm


def unregister(name: str) -> Algorithm:
    """Remove the algorithm `name` and return its record (for tests that register their own)."""
    if name not in _ALGORITHMS:
        raise ValueError(f"unregister: no algorithm {name!r} is registered")
    return _ALGORITHMS.pop(name)


def get(name: str) -> Algorithm:
    """The record of the algorithm `name`; an unknown name is a `ValueError` listing the known."""
    _load()
    if name not in _ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; registered: {', '.join(names())}")
    return _ALGORITHMS[name]


def names() -> list[str]:
    """Every registered name: the built-in families in `BUILT_IN`'s order, then the others in the
    order they registered."""
    _load()
    return [n for n in BUILT_IN if n in _ALGORITHMS] + [n for n in _ALGORITHMS if n not in BUILT_IN]


def online() -> list[str]:
    """The names of the families that learn by stepping their environment."""
    return [n for n in names() if not _ALGORITHMS[n].offline]


def taking(env, env_params) -> list[str]:
    """The names of the online families that make an agent on `env` with their default config:
    their checks of its spaces and contracts (an action space they do not handle, action masks
    their agents do not read: `Agent.reads_action_mask`) refuse the others."""
    taken = []
    for name in online():
        algo = _ALGORITHMS[name]
        try:
            agent = algo.make(algo.config_cls(), env, env_params)
        except (TypeError, ValueError):
            continue
        if agent.reads_action_mask or not env.has_action_mask:
            taken.append(name)
    return taken


def offline() -> list[str]:
    """The names of the families that learn from a dataset."""
    return [n for n in names() if _ALGORITHMS[n].offline]


def with_memory() -> list[str]:
    """The names of the families whose agents can carry a recurrent policy."""
    return [n for n in names() if _ALGORITHMS[n].memory]


class _Registered(Mapping):
    """A read-only view of the registry, name -> `Algorithm` (`ALGORITHMS["sac"].config_cls`)."""

    def __getitem__(self, name: str) -> Algorithm:
        _load()
        return _ALGORITHMS[name]

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())

    def __repr__(self) -> str:
        return f"ALGORITHMS({', '.join(names())})"


ALGORITHMS: Mapping[str, Algorithm] = _Registered()


def _load() -> None:
    """Import the built-in families and the entry points, once (they register themselves)."""
    global _loaded
    if _loaded:
        return
    for name in BUILT_IN:
        importlib.import_module(f"{__package__}.{name}")
    _loaded = True  # before the entry points: one that looks an algorithm up sees the built-ins
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        _load_entry_point(entry)


def _load_entry_point(entry: importlib.metadata.EntryPoint) -> None:
    """Register what a third-party package declares; one that fails is skipped with a warning
    naming it, so that a broken plugin leaves the other algorithms usable."""
    try:
        declared = entry.load()
        if isinstance(declared, Algorithm):
            if declared.name != entry.name:
                raise ValueError(f"it declares an Algorithm named {declared.name!r}")
            register(declared)
        elif entry.name not in _ALGORITHMS:
            raise ValueError(f"loading {entry.value} registered no algorithm {entry.name!r}")
    except Exception as error:  # a plugin's fault, whatever it is, must not stop the suite
        warnings.warn(
            f"rlsuite: skipping the algorithm entry point {entry.name} = {entry.value} "
            f"({type(error).__name__}: {error})",
            stacklevel=3,
        )


def _where(function: Callable) -> str:
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', function)}"
