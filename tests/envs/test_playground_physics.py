"""Playground's physics as params and their randomisers (`envs/playground_physics.py`), by hand
on made-up models: no MuJoCo model is needed to check which fields and bodies a randomiser
scales, and within which bounds."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.playground_physics import (
    PlaygroundParams,
    Randomisation,
    make_randomiser,
    randomisation,
)

PARAMS = PlaygroundParams(
    body_mass=jnp.array([0.0, 1.0, 2.0, 4.0]),  # the world body first
    geom_friction=jnp.ones((2, 3)),
    dof_damping=jnp.array([0.5, 0.5]),
    actuator_gain=jnp.array([10.0]),
)
BODIES = ["world", "cart", "pole_1", "other"]


def test_each_task_takes_the_randomisation_of_its_names_prefix():
    assert randomisation("CartpoleBalance").bodies == ("cart", "pole_1")
    assert randomisation("PendulumSwingup").damping == (0.5, 2.0)
    assert randomisation("CheetahRun").friction == (0.4, 1.2)
    assert randomisation("WalkerWalk") == Randomisation()  # the default


def test_a_randomiser_scales_the_bodies_and_fields_it_names_within_their_bounds():
    spec = Randomisation(mass=(0.5, 2.0), bodies=("cart", "pole_1"), friction=None, gain=None)
    draw = jax.jit(make_randomiser(spec, BODIES))
    for i in range(20):
        params = draw(jax.random.key(i), PARAMS)
        factors = np.asarray(params.body_mass)[1:3] / np.asarray(PARAMS.body_mass)[1:3]
        assert ((0.5 <= factors) & (factors <= 2.0)).all()
        np.testing.assert_array_equal(params.body_mass[np.array([0, 3])], [0.0, 4.0])  # not named
        np.testing.assert_array_equal(params.geom_friction, PARAMS.geom_friction)  # None: kept
        np.testing.assert_array_equal(params.dof_damping, PARAMS.dof_damping)
        np.testing.assert_array_equal(params.actuator_gain, PARAMS.actuator_gain)
    # Two keys, two draws; one factor for every geom's friction (a surface's property).
    spread = make_randomiser(Randomisation(mass=None, gain=None), BODIES)
    a, b = spread(jax.random.key(0), PARAMS), spread(jax.random.key(1), PARAMS)
    assert float(a.geom_friction[0, 0]) != float(b.geom_friction[0, 0])
    assert np.unique(np.asarray(a.geom_friction)).size == 1
    assert 0.6 <= float(a.geom_friction[0, 0]) <= 1.4


def test_a_body_the_model_lacks_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"Randomisation.bodies: no body \['pole'\]"):
        make_randomiser(Randomisation(bodies=("pole",)), BODIES)
