"""Jumanji's observations as ours (`envs/jumanji_observations.py`): the helpers by hand, and one
converter, Snake's, on a made-up observation; the adapter's parity with Jumanji itself is in
`test_jumanji.py`."""

import types

import jax.numpy as jnp
import numpy as np
from rlsuite.envs import jumanji_observations as obs_lib


def test_the_helpers_by_hand():
    np.testing.assert_array_equal(
        obs_lib._one_hot(jnp.array([0, 2, -1]), 3), [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    )  # -1 (no tile, no mine) is zeros
    plane = obs_lib._plane(jnp.float32(0.25), (2, 3))
    assert plane.shape == (2, 3, 1) and float(plane.max()) == float(plane.min()) == 0.25
    np.testing.assert_array_equal(
        obs_lib._flat(jnp.ones((2, 2)), jnp.array(3), jnp.zeros(1)), [1, 1, 1, 1, 3, 0]
    )


def test_snake_is_its_grid_and_the_time_as_a_last_channel():
    grid = jnp.arange(2 * 3 * 5, dtype=jnp.float32).reshape(2, 3, 5)
    env = types.SimpleNamespace(time_limit=40)
    out = obs_lib.OBSERVATIONS["Snake-v1"].convert(
        env, types.SimpleNamespace(grid=grid, step_count=10)
    )
    assert out.shape == (2, 3, 6) and out.dtype == jnp.float32
    np.testing.assert_array_equal(out[..., :5], grid)
    np.testing.assert_array_equal(out[..., 5], 0.25)  # 10 of 40 steps


def test_every_task_says_what_its_observation_holds():
    assert len(obs_lib.OBSERVATIONS) == 14  # docs/suites/jumanji.md's 14 single-agent tasks
    for task, observation in obs_lib.OBSERVATIONS.items():
        assert "[" in observation.layout, task  # the shapes of what it holds
        assert observation.high > 0, task
