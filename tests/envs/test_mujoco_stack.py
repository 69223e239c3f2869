"""The pinned MuJoCo stack (pyproject.toml): the installed versions are the pinned ones, and one
Brax task (through our adapter) and one MuJoCo Playground task step under `jit` and `vmap`, each
batched step equal to the same environments stepped one at a time. The two steps are in the slow
run (48 s and 23 s with an empty compilation cache, four programs of MJX physics each); the default
run steps Brax and Playground tasks under `jit` and `vmap` through the adapters, in
tests/envs/test_brax_adapter.py and tests/envs/test_playground.py."""

import importlib.metadata
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pinned() -> dict[str, str]:
    """`{package: version}` of the `==` pins of pyproject.toml's MuJoCo stack."""
    text = (ROOT / "pyproject.toml").read_text()
    pins = dict(re.findall(r'"(brax|mujoco|mujoco-mjx|playground)==([0-9.]+)"', text))
    assert set(pins) == {"brax", "mujoco", "mujoco-mjx", "playground"}, pins
    return pins


def test_the_installed_stack_is_the_pinned_one():
    pins = pinned()
    assert pins["mujoco"] == pins["mujoco-mjx"]  # released together
    for package, version in pins.items():
        assert importlib.metadata.version(package) == version, package


def _batched_equals_one_at_a_time(reset, step, action_size: int, n: int = 4, steps: int = 3):
    keys = jax.random.split(jax.random.key(0), n)
    actions = jax.random.uniform(jax.random.key(1), (steps, n, action_size), minval=-1, maxval=1)
    batched_reset, batched_step = jax.jit(jax.vmap(reset)), jax.jit(jax.vmap(step))
    one_reset, one_step = jax.jit(reset), jax.jit(step)
    states = batched_reset(keys)
    alone = [one_reset(k) for k in keys]
    for t in range(steps):
        states = batched_step(states, actions[t])
        alone = [one_step(s, a) for s, a in zip(alone, actions[t], strict=True)]
    return states, alone


@pytest.mark.slow
def test_a_brax_task_steps_under_jit_and_vmap():
    env, params = envs.make("brax/inverted_pendulum")
    size = env.action_space(params).shape[0]

    def reset(key):
        return env.reset(key, params)

    def step(carry, action):
        obs, state = carry
        obs, state, reward, terminated, truncated, _ = env.step(
            jax.random.key(0), state, action, params
        )
        return obs, state

    (obs, _), alone = _batched_equals_one_at_a_time(reset, step, size)
    assert obs.shape == (4, *env.observation_space(params).shape)
    assert np.isfinite(np.asarray(obs)).all()
    np.testing.assert_allclose(obs, np.stack([o for o, _ in alone]), rtol=1e-5, atol=1e-6)
    assert not np.allclose(obs[0], obs[1])  # the keys differ, so do the starts


@pytest.mark.slow
def test_a_playground_task_steps_under_jit_and_vmap():
    registry = pytest.importorskip("mujoco_playground").registry
    # impl "jax": MJX's JAX implementation (the default, "warp", compiles Warp kernels).
    env = registry.load("CartpoleBalance", config_overrides={"impl": "jax"})
    states, alone = _batched_equals_one_at_a_time(env.reset, env.step, env.action_size)
    assert states.obs.shape == (4, env.observation_size)
    np.testing.assert_allclose(states.obs, np.stack([s.obs for s in alone]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states.reward, [s.reward for s in alone], rtol=1e-5)
    # Balancing from upright with small actions for 3 steps: reward near 1, not done.
    assert (np.asarray(states.reward) > 0.9).all() and not np.asarray(states.done).any()
    assert jnp.isfinite(states.data.qpos).all()
