"""Environment options as the command line gives them and `config.json` records them:
`parse_options(name, {"gravity": "20"})` gives `make(name, ...)`'s keyword arguments, each
converted to the type of the field's default; `make_with_options` builds an environment from
them, and `options_to_json` writes them back as JSON values.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import Any

import jax.numpy as jnp
import numpy as np
from rlsuite.envs import registry

from rlsuite.environment import Environment


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
    return registry.make(name, **parse_options(name, options or {}))


def options_to_json(options: dict[str, Any]) -> dict[str, Any]:
    """`parse_options`' values as JSON values (arrays as lists), for `config.json`."""
    return {k: np.asarray(v).tolist() if hasattr(v, "shape") else v for k, v in options.items()}


def _option_defaults(name: str) -> dict[str, Any]:
    """The default of every field `make(name, ...)` takes: its params' (from a build without
    options), its constructor's keywords that have one, and its suite's options
    (`Suite.option_defaults`)."""
    factory = {**registry.OURS, **registry.OURS_MJX, **registry.META, **registry.UED}.get(name)
    if factory is None and name in registry.REGISTERED:
        factory = registry.REGISTERED[name][0]
    defaults = {}
    suite = registry.suite_of(name)
    if suite is not None and suite.option_defaults is not None and suite.installed():
        defaults.update(suite.option_defaults(name.removeprefix(suite.prefix)))
    if factory is not None:
        target = factory.__init__ if isinstance(factory, type) else factory
        for p in inspect.signature(target).parameters.values():
            if p.default is not inspect.Parameter.empty:
                defaults[p.name] = p.default
    _, params = registry.make(name)
    defaults.update({f.name: getattr(params, f.name) for f in dataclasses.fields(params)})
    return defaults


def _option_value(name: str, field: str, value: Any, default: Any) -> Any:
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
