"""`rlsuite list`: what the suite offers, for a user who does not know the names yet.

    rlsuite list algos            # every algorithm: online or offline, its default environment
    rlsuite list envs             # every environment name, by family
    rlsuite list envs 'gymnax/*'  # those names with their spaces and the algorithms that take them
    rlsuite list tuned            # the (algorithm, environment) pairs with tuned defaults

An environment's spaces, and the algorithms that take it (those whose `make` accepts it), are
found by building it, which takes seconds for one on MJX (`brax/...`, `goal/ant...`): they are
shown for the names a pattern selects (shell-style, `fnmatch`; a pattern without `*`, `?` or `[`
and not a name itself selects the names that hold it: `playground` is `*playground*`), not for
the whole list.
"""

from __future__ import annotations

import fnmatch
import importlib
import re
import sys

from rlsuite.agents import registry
from rlsuite.app.errors import UsageError, choose
from rlsuite.app.tuned import TUNED

WHAT = ("algos", "envs", "tuned")


def main(argv: list[str]) -> dict:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        if not argv:
            raise UsageError(f"list needs what to list: rlsuite list {'|'.join(WHAT)}")
        return {}
    what, rest = argv[0], argv[1:]
    choose("list", what, WHAT)
    if what != "envs" and rest:
        raise UsageError(f"rlsuite list {what} takes no arguments, got {' '.join(rest)}")
    return {"algos": algos, "envs": environments, "tuned": tuned}[what](*rest)


def algos() -> dict:
    """Print every registered algorithm: its kind, default environment, memory and summary."""
    rows = []
    for name in registry.names():
        algo = registry.get(name)
        kind = "offline (--dataset FILE)" if algo.offline else "online"
        memory = ", memory (--recurrent)" if algo.memory else ""
        rows.append((name, f"{kind}{memory}; default env {algo.default_env}", _summary(algo)))
    width = max(len(r[0]) for r in rows)
    for name, kind, summary in rows:
        print(f"{name:<{width}}  {kind}\n{'':<{width}}  {summary}")
    print("\nrlsuite train ALGO --help lists an algorithm's flags; rlsuite list envs its tasks")
    return {"algos": [r[0] for r in rows]}


def _summary(algo: registry.Algorithm) -> str:
    """The first sentence of the module that makes the algorithm's agents."""
    doc = importlib.import_module(algo.make.__module__).__doc__ or ""
    text = " ".join(doc.split())
    return re.split(r"(?<!\bal)\.(?:\s|$)", text)[0] + "." if text else ""  # ("et al." goes on)


def environments(*patterns: str) -> dict:
    """Print every environment name, or for the names `patterns` select, their observation and
    action spaces and the online algorithms that take them."""
    from rlsuite import envs

    names = envs.names()
    if not patterns:
        families: dict[str, list[str]] = {}
        for name in names:
            families.setdefault(name.split("/")[0] if "/" in name else "", []).append(name)
        for family, members in families.items():
            print(f"{family + '/' if family else '(ours)'}: {', '.join(members)}")
        print(
            "\nrlsuite list envs PATTERN (e.g. 'goal/*') shows their spaces and the algorithms "
            "that take them; --env module:Class trains on an environment of your own"
        )
        return {"envs": names}
    chosen = [n for n in names if any(_selects(p, n, names) for p in patterns)]
    if not chosen:
        raise UsageError(f"no environment name matches {' '.join(patterns)}; rlsuite list envs")
    shown = {}
    for name in chosen:
        env, params = envs.make(name)
        spaces = _space(env.observation_space(params)), _space(env.action_space(params))
        takes = registry.taking(env, params)
        shown[name] = {"observation": spaces[0], "action": spaces[1], "algos": takes}
        print(f"{name}: observation {spaces[0]}, action {spaces[1]}; {', '.join(takes)}")
        sys.stdout.flush()
    return {"envs": shown}


def _selects(pattern: str, name: str, names: list[str]) -> bool:
    """Whether `pattern` selects `name`: shell-style where it has a wildcard, itself where it is
    one of `names`, else every name that holds it."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return name == pattern if pattern in names else pattern in name


def _space(space) -> str:
    shape = getattr(space, "shape", ())
    n = getattr(space, "n", None)
    kind = type(space).__name__
    if n is not None:
        return f"{kind}({n})"
    return f"{kind}{tuple(shape)}"


def tuned() -> dict:
    """Print the (algorithm, environment) pairs with tuned defaults and what each changes."""
    for (algo, env), entry in TUNED.items():
        changed = {**entry.get("config", {}), **entry.get("hparams", {})}
        values = ", ".join(f"{k}={v}" for k, v in changed.items()) or "the algorithm's defaults"
        print(f"{algo} on {env}: {values}")
    print("\nany other pair starts from the algorithm's own defaults (rlsuite train says so)")
    return {"tuned": [f"{a} on {e}" for a, e in TUNED]}
