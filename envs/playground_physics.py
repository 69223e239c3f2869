"""Physics as params for MuJoCo Playground's tasks (`envs/playground_adapter.py`): the model
fields a researcher randomises (`PlaygroundParams`) and how each task's randomiser draws them
around the params it is given (`Randomisation`, `RANDOMISATIONS`, `make_randomiser`).

Nothing of Playground or MJX is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class PlaygroundParams:
    """Model fields as traced data (see the module's docstring); defaults: the task's model."""

    body_mass: jax.Array
    """[nbody] kg (the world body's 0)"""
    geom_friction: jax.Array
    """[ngeom, 3] sliding, torsional and rolling friction"""
    dof_damping: jax.Array
    """[nv] joint damping"""
    actuator_gain: jax.Array
    """[nu] each actuator's first gain parameter (a motor's force per unit of control)"""


@dataclasses.dataclass(frozen=True)
class Randomisation:
    """How a task's randomiser scales its physics: each range `(low, high)` a factor drawn
    uniformly, `None` leaving the field as it is.

    mass: a factor per body of `bodies` (every body, where `bodies` is empty).
    friction: one factor for every geom's friction (a surface's property).
    damping: a factor per degree of freedom.
    gain: a factor per actuator."""

    mass: tuple[float, float] | None = (0.8, 1.2)
    bodies: tuple[str, ...] = ()
    friction: tuple[float, float] | None = (0.6, 1.4)
    damping: tuple[float, float] | None = None
    gain: tuple[float, float] | None = (0.9, 1.1)


# Per task, by the name's prefix (first match), with a default for the rest. The cartpole's and
# pendulum's pole masses span 0.5x to 2x (the classic DR benchmark's range); the cheetah's
# ground contact varies through friction (Playground's Go1 randomiser draws 0.4 to 1.0).
RANDOMISATIONS: dict[str, Randomisation] = {
    "Cartpole": Randomisation(mass=(0.5, 2.0), bodies=("cart", "pole_1"), friction=None, gain=None),
    "Pendulum": Randomisation(
        mass=(0.5, 2.0), bodies=("pole",), friction=None, damping=(0.5, 2.0), gain=None
    ),
    "Cheetah": Randomisation(mass=(0.8, 1.2), bodies=("torso",), friction=(0.4, 1.2)),
    "": Randomisation(),
}


def randomisation(task: str) -> Randomisation:
    """The `Randomisation` of `task` (see `RANDOMISATIONS`)."""
    return next(r for prefix, r in RANDOMISATIONS.items() if task.startswith(prefix))


def make_randomiser(
    spec: Randomisation, body_names: list[str]
) -> Callable[[jax.Array, PlaygroundParams], PlaygroundParams]:
    """`(key, params) -> params` scaling the fields `spec` names by uniform factors."""
    unknown = [b for b in spec.bodies if b not in body_names]
    if unknown:
        raise ValueError(f"Randomisation.bodies: no body {unknown}; the model has {body_names}")
    chosen = np.zeros(len(body_names), bool)
    chosen[[body_names.index(b) for b in spec.bodies] if spec.bodies else slice(None)] = True

    def factor(key, bounds, shape):
        if bounds is None:
            return jnp.ones(shape, jnp.float32)
        return jax.random.uniform(key, shape, jnp.float32, bounds[0], bounds[1])

    def draw(key: jax.Array, params: PlaygroundParams) -> PlaygroundParams:
        k_mass, k_friction, k_damping, k_gain = jax.random.split(key, 4)
        mass = factor(k_mass, spec.mass, params.body_mass.shape)
        return params.replace(
            body_mass=params.body_mass * jnp.where(chosen, mass, 1.0),
            geom_friction=params.geom_friction * factor(k_friction, spec.friction, ()),
            dof_damping=params.dof_damping
            * factor(k_damping, spec.damping, params.dof_damping.shape),
            actuator_gain=params.actuator_gain
            * factor(k_gain, spec.gain, params.actuator_gain.shape),
        )

    return draw
