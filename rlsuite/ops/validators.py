"""Validators: each raises a clear error naming the field and the values it allows, on concrete
values, before anything is compiled (environment params, agents' configs and hyperparameters);
`ConfigWarning`, what a config warns of where a value is allowed but likely not meant; and
`counted`, a count said with its noun, for those messages and the lines the suite prints."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import jax
import numpy as np


class ConfigWarning(UserWarning):
    """A value a config allows that likely does not do what was meant (a run that ends before
    it learns); `rlsuite` prints it as one line, `rlsuite TRAIN: warning: ...`."""


def check_field(
    params: Any,
    field: str,
    check: Callable[[np.ndarray], np.ndarray],
    allowed: str,
    owner: str = "",
    kind: str = "params",
) -> None:
    """Raise a `ValueError` naming `field` and `allowed` when a concrete value fails `check` or
    is not finite (inf or nan).

    `owner` (an environment's or an algorithm's name) names the owner in the message and `kind`
    the pytree (`params`, `hparams`, ...).

    Traced values (inside `jit` or `vmap`) cannot be inspected and are skipped; validate a batch of
    params before mapping over it by calling `env.check_params(batch)` outside the transformation.
    """
    value = getattr(params, field)
    if isinstance(value, jax.core.Tracer):
        return
    where = f"{owner}: " if owner else ""
    # A string, None or a bool is not a number; a list is a pytree node, not a leaf.
    array = None if isinstance(value, list | tuple) else np.asarray(value)
    if array is None or array.dtype.kind not in "iuf":
        raise ValueError(
            f"{where}invalid {kind}.{field}={value!r}; allowed: a number or an array of numbers, "
            f"{allowed}"
        )
    if not np.all(np.isfinite(array)):  # inf passes `v > 0`, and nan fails every comparison
        raise ValueError(
            f"{where}invalid {kind}.{field}={array.tolist()!r}; allowed: {allowed}, finite"
        )
    if not np.all(check(array)):
        raise ValueError(f"{where}invalid {kind}.{field}={array.tolist()!r}; allowed: {allowed}")


def check_positive(params: Any, *fields: str, owner: str = "", kind: str = "params") -> None:
    """`check_field` every named field to be > 0."""
    for field in fields:
        check_field(params, field, lambda v: v > 0, "a value > 0", owner, kind)


def check_positive_ints(config: Any, positive_ints: tuple[str, ...]) -> None:
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


def check_int(value: Any, name: str, minimum: int = 1, owner: str = "") -> None:
    """Raise a `ValueError` naming `name` unless `value` is an integer >= `minimum` (a plain
    argument, not a field: a buffer's capacity, a sample size)."""
    valid = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not valid or value < minimum:
        where = f"{owner}: " if owner else ""
        raise ValueError(f"{where}{name} must be an integer >= {minimum}, got {value!r}")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` with its noun, singular for one: `1 episode`, `3 episodes`, `2,000 updates`
    (`plural`: where it is not the noun and an s)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
