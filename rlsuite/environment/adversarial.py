"""An adversary's disturbance channel (RARL, Pinto et al. 2017, arXiv:1703.02702): an environment
stepped by two actors, the protagonist's action and an adversary's disturbance, bounded, applied
through the environment's own channel (`Environment.disturbance_shape`, `Environment.disturb`:
pendulum's is an external torque).

    env = Disturbed(envs.make("pendulum")[0], bound=1.0)
    env.action_space(params)          # Box(2,): the protagonist's torque, then the disturbance
    protagonist, disturbance = env.split(action)

`Disturbed` clips the disturbance to `[-bound, bound]` before it acts (and the protagonist's part
to its own space, as the environment would) and reports its largest magnitude in
`info["disturbance"]`, so a run can show the bound held. `DisturbanceView` is the environment as
the adversary sees it (its action the disturbance, the protagonist passive): what its policy is
built for. The rewards are the environment's; the adversary's are their negation (zero-sum:
`rlsuite.agents.rarl`). `physics_grid` makes the test of a trained policy's robustness: the
environment's physics params scaled over a grid.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import Wrapper


def check_bound(bound: Any, owner: str) -> None:
    """Refuse a disturbance bound that is not a finite number > 0, naming `owner`'s field."""
    number = isinstance(bound, int | float | np.floating) and not isinstance(bound, bool)
    if not number or not math.isfinite(bound) or bound <= 0:
        raise ValueError(f"{owner}.disturbance_bound must be a finite number > 0, got {bound!r}")


def check_channel(env: Environment, bound: Any, owner: str) -> tuple[int, ...]:
    """The disturbance shape of `env`, after refusing a bad `bound` (`check_bound`), an
    environment without a channel, or an action space other than a bounded 1-D Box."""
    check_bound(bound, owner)
    params = env.default_params
    shape = env.disturbance_shape(params)
    if shape is None:
        raise ValueError(
            f"{env.name} has no disturbance channel (Environment.disturbance_shape is None); "
            "environments with one: pendulum, playground/CartpoleBalance, "
            "playground/CartpoleSwingup"
        )
    space = env.action_space(params)
    if not (isinstance(space, Box) and len(space.shape) == 1 and space.bounded):
        raise ValueError(
            f"{env.name}: an adversary disturbs an environment of bounded 1-D Box actions, got "
            f"{space!r}"
        )
    if len(shape) != 1:
        raise ValueError(f"{env.name}: disturbance_shape must be 1-D, got {shape}")
    return tuple(shape)


class Disturbed(Wrapper):
    """`env` stepped by a protagonist and an adversary: the action is the protagonist's followed
    by the disturbance (see the module docstring)."""

    def __init__(self, env: Environment, bound: float, owner: str = "Disturbed"):
        self.shape = check_channel(env, bound, owner)
        super().__init__(env)
        self.bound = float(bound)
        self.protagonist_dim = env.action_space(env.default_params).shape[0]

    def action_space(self, params: Any) -> Box:
        own = self.env.action_space(params)
        low = np.concatenate([own.low, np.full(self.shape, -self.bound, np.float32)])
        high = np.concatenate([own.high, np.full(self.shape, self.bound, np.float32)])
        return Box(low, high, low.shape)

    def split(self, action: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`(protagonist's action, disturbance)` of a joint action (any leading axes)."""
        return action[..., : self.protagonist_dim], action[..., self.protagonist_dim :]

    def step_env(self, key, state, action, params):
        own, disturbance = self.split(action)
        space = self.env.action_space(params)
        own = jnp.clip(own, space.low, space.high)
        disturbance = jnp.clip(disturbance, -self.bound, self.bound)
        state = self.env.disturb(state, params, disturbance)
        obs, state, reward, terminated, truncated, info = self.env.step_env(key, state, own, params)
        # A disturbance acts on one step: a channel that keeps it in the state (MJX's
        # xfrc_applied) is cleared; for one that does not (pendulum's impulse) this adds 0.
        state = self.env.disturb(state, params, jnp.zeros_like(disturbance))
        info = {**info, "disturbance": jnp.abs(disturbance).max()}
        return obs, state, reward, terminated, truncated, info

    def __repr__(self) -> str:
        return f"Disturbed({self.env!r}, bound={self.bound})"


class DisturbanceView(Disturbed):
    """`env` as its adversary sees it: the action is the disturbance alone (`Box(-bound,
    bound)`), the protagonist's a constant (the middle of its space), the reward the
    environment's negated. RARL builds the adversary's policy for it and steps `Disturbed`."""

    def action_space(self, params: Any) -> Box:
        return Box(-self.bound, self.bound, self.shape)

    def step_env(self, key, state, action, params):
        space = self.env.action_space(params)
        middle = jnp.asarray((space.low + space.high) / 2, space.dtype)
        joint = jnp.concatenate([middle, action])
        obs, state, reward, terminated, truncated, info = super().step_env(
            key, state, joint, params
        )
        return obs, state, -reward, terminated, truncated, info

    def __repr__(self) -> str:
        return f"DisturbanceView({self.env!r}, bound={self.bound})"


def physics_grid(params: Any, fields: Sequence[str], scales: Sequence[float]):
    """`(cells, grid)`: a robustness test's physics, every combination of `scales` over the
    params `fields` (`cells`, tuples of factors in the order of `fields`), and `params` with each
    cell's factors applied, stacked on a leading `[num_cells]` axis (the levels of
    `rlsuite.loop.driver.evaluate_levels_batch`). A field `params` lacks, or a factor that is
    not a finite number > 0, is refused by name."""
    names = [f.name for f in dataclasses.fields(params)]
    for field in fields:
        if field not in names:
            raise ValueError(
                f"physics_grid: {type(params).__name__} has no field {field!r}; its fields: "
                f"{', '.join(names)}"
            )
    for s in scales:
        if not (isinstance(s, int | float) and math.isfinite(s) and s > 0):
            raise ValueError(f"physics_grid: scales must be finite numbers > 0, got {s!r}")
    if not fields or not scales:
        raise ValueError("physics_grid: fields and scales must not be empty")
    cells = list(itertools.product(scales, repeat=len(fields)))
    rows = [
        params.replace(**{f: getattr(params, f) * s for f, s in zip(fields, cell, strict=True)})
        for cell in cells
    ]
    return cells, jax.tree.map(lambda *x: jnp.stack(x), *rows)
