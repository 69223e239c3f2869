"""What a curriculum needs of an environment whose episodes are played on levels (UED).

A level is a pytree (a maze's walls, goal and start) that lives in the environment's params, so
that a batch of environments plays a batch of levels (`rlsuite.loop.rollout.reset_each`). An
environment that offers levels returns its `Levels` from a `levels()` method; a curriculum
(`rlsuite.agents.ued`) is given them as functions and never imports the environment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Levels(NamedTuple):
    """The level functions of an environment (all pure, jit-able, vmappable)."""

    generate: Callable[[jax.Array], Any]
    """`key -> level`: a random level (domain randomisation's distribution)"""
    mutate: Callable[[jax.Array, Any, Any], Any]
    """`(key, level, num_edits) -> level`: a few random edits of a level (ACCEL)"""
    params_for: Callable[[Any, Any], Any]
    """`(env_params, levels [N]) -> params [N]`: params in which each of N environments
    replays its level"""
    held_out: Callable[[], tuple[tuple[str, ...], Any]] | None = None
    """`() -> (names, levels [N])`: named levels to evaluate on (the maze's eight), or None"""
    render: Callable[[Any], Any] | None = None
    """`level -> uint8 RGB [H, W, 3]` (NumPy): a picture of one level, or None"""
    editor: Callable[[], Any] | None = None
    """`() -> Environment`: PAIRED's adversary's environment, whose episodes (of
    `episode_length` steps, a property) build one level each, reported in `info["level"]` at the
    episode's last step; or None"""


def levels_of(env: Any) -> Levels | None:
    """The `Levels` of `env` (wrappers pass attribute lookups through to the environment they
    wrap), or None when it has none."""
    method = getattr(env, "levels", None)
    return method() if callable(method) else None
