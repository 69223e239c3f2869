"""GymnaxEnv: step-by-step parity with gymnax's own `reset`/`step`, time limits, params, spaces."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.gymnax_adapter import GymnaxEnv, convert_space, gymnax_names

from rlsuite.environment.spaces import Box, Discrete

gymnax = pytest.importorskip("gymnax")

pytestmark = pytest.mark.timeout(300)

NUM_STEPS = 200


def _rollout(reset, step, params, key, actions):
    """Jitted reset + `lax.scan` of `step` over `actions`, keys split the same way for any env."""

    def run(key, actions):
        key_reset, key_steps = jax.random.split(key)
        obs, state = reset(key_reset, params)

        def body(state, xs):
            key_step, action = xs
            obs, state, reward, terminated, truncated, info = step(key_step, state, action, params)
            return state, (obs, state, reward, terminated, truncated, info)

        keys = jax.random.split(key_steps, actions.shape[0])
        _, outs = jax.lax.scan(body, state, (keys, actions))
        return (obs, state), outs

    return jax.jit(run)(key, actions)


def _actions(env, params, key, n):
    space = env.action_space(params)
    return jax.vmap(space.sample)(jax.random.split(key, n))


def _assert_trees_equal(ours, theirs, rtol=0.0):
    """Leaf by leaf: exact, or (floats only, `rtol > 0`) to within rounding."""
    assert jax.tree.structure(ours) == jax.tree.structure(theirs)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype
        if rtol and np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(a, b)


CASES = {
    # name, params changes, expected kinds of episode end within NUM_STEPS
    "cartpole": ("CartPole-v1", {}, "terminated"),
    "cartpole-limit": ("CartPole-v1", {"max_steps_in_episode": 16}, "both"),
    "pendulum-limit": ("Pendulum-v1", {"max_steps_in_episode": 50}, "truncated"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_parity_with_gymnax_step_and_reset(case):
    name, changes, ends = CASES[case]
    env = GymnaxEnv(name)
    reference, _ = gymnax.make(name)
    params = env.default_params.replace(**changes)
    key_actions, key_run = jax.random.split(jax.random.PRNGKey(42))
    actions = _actions(env, params, key_actions, NUM_STEPS)

    ours = _rollout(env.reset, env.step, params, key_run, actions)
    theirs = _rollout(reference.reset, reference.step, params, key_run, actions)

    (obs0, state0), (obs, state, reward, terminated, truncated, info) = ours
    (tobs0, tstate0), (tobs, tstate, treward, tterminated, ttruncated, tinfo) = theirs
    _assert_trees_equal((obs0, state0), (tobs0, tstate0))
    _assert_trees_equal((obs, state), (tobs, tstate))
    np.testing.assert_array_equal(reward, treward)
    np.testing.assert_array_equal(terminated, tterminated)
    np.testing.assert_array_equal(truncated, ttruncated)
    np.testing.assert_array_equal(terminated, tinfo["terminated"])
    np.testing.assert_array_equal(truncated, tinfo["truncated"])
    assert set(info) == set(tinfo) - {"terminated", "truncated"}
    for k in info:
        np.testing.assert_array_equal(info[k], tinfo[k])
    assert reward.dtype == jnp.float32
    assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_

    # The rollout really crossed episode ends of the expected kinds.
    done = np.asarray(terminated | truncated)
    assert done.sum() >= 2
    assert (np.asarray(terminated).any()) == (ends in ("terminated", "both"))
    assert (np.asarray(truncated).any()) == (ends in ("truncated", "both"))
    # At an end the returned obs is the new episode's and the final one is the pre-reset obs.
    t = int(np.flatnonzero(done)[0])
    assert not np.array_equal(obs[t], info["final_observation"][t])
    np.testing.assert_array_equal(obs[:t], info["final_observation"][:t])
    assert int(state.time[t]) == 0


def test_time_limit_truncates_and_termination_does_not():
    env = GymnaxEnv("CartPole-v1")
    params = env.default_params.replace(max_steps_in_episode=5)
    step = jax.jit(env.step)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    flags = []
    for i in range(5):  # alternate pushes keep the pole up for 5 steps
        action = jnp.asarray(i % 2, jnp.int32)
        _, state, _, terminated, truncated, _ = step(jax.random.PRNGKey(i), state, action, params)
        flags.append((bool(terminated), bool(truncated)))
    assert flags == [(False, False)] * 4 + [(False, True)]
    assert int(state.time) == 0  # auto-reset

    params = env.default_params.replace(max_steps_in_episode=1000)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    for i in range(100):  # always push right: the pole falls well before 1000 steps
        _, state, _, terminated, truncated, _ = step(
            jax.random.PRNGKey(i), state, jnp.asarray(1, jnp.int32), params
        )
        if terminated:
            break
    assert bool(terminated) and not bool(truncated) and 0 < i < 50


@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1"])
def test_vmap_over_params_matches_one_by_one(name):
    env = GymnaxEnv(name)
    base = env.default_params
    if name == "CartPole-v1":
        batch = [base.replace(gravity=9.8, max_steps_in_episode=3), base.replace(gravity=30.0)]
    else:
        batch = [base.replace(max_torque=2.0, m=1.0), base.replace(max_torque=0.5, m=3.0)]
    params = jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *batch)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    action = env.action_space(base).sample(jax.random.PRNGKey(4))
    spaces = []

    def run(key, params):
        spaces.append(env.action_space(params))
        obs, state = env.reset(key, params)
        for i in range(4):
            obs, state, reward, terminated, truncated, info = env.step(
                jax.random.fold_in(key, i), state, action, params
            )
        return obs, state, reward, terminated, truncated, info

    batched = jax.jit(jax.vmap(run))(keys, params)
    for i, p in enumerate(batch):
        # Batched and unbatched XLA code may round differently in the last bit.
        one = jax.tree.map(lambda x, i=i: x[i], batched)
        _assert_trees_equal(one, run(keys[i], p), rtol=1e-5)
    # The two tasks really differ.
    assert not np.allclose(batched[0][0], batched[0][1])
    if name == "CartPole-v1":  # the limit of 3 truncated only the first task's episode
        assert int(batched[1].time[0]) == 1 and int(batched[1].time[1]) == 4
    else:  # traced bounds cannot be static: reported as infinite, shape and dtype exact
        assert spaces[0].shape == (1,) and not spaces[0].bounded
        assert spaces[-1].bounded and float(spaces[-1].high[0]) == 0.5


def test_spaces_are_converted():
    cartpole = GymnaxEnv("CartPole-v1")
    reference, ref_params = gymnax.make("CartPole-v1")
    act = cartpole.action_space(cartpole.default_params)
    assert isinstance(act, Discrete) and act.n == 2 and act.dtype == jnp.int32
    obs = cartpole.observation_space(cartpole.default_params)
    ref = reference.observation_space(ref_params)
    assert isinstance(obs, Box) and obs.shape == (4,) and obs.dtype == jnp.float32
    np.testing.assert_array_equal(obs.low, np.asarray(ref.low))
    np.testing.assert_array_equal(obs.high, np.asarray(ref.high))
    assert cartpole.max_episode_steps == 500 and cartpole.name == "CartPole-v1"

    pendulum = GymnaxEnv("Pendulum-v1")
    act = pendulum.action_space(pendulum.default_params)
    assert isinstance(act, Box) and act.shape == (1,) and act.dtype == jnp.float32
    assert float(act.low[0]) == -2.0 and float(act.high[0]) == 2.0
    act = pendulum.action_space(pendulum.default_params.replace(max_torque=3.0))
    assert float(act.low[0]) == -3.0 and float(act.high[0]) == 3.0
    obs = pendulum.observation_space(pendulum.default_params)
    np.testing.assert_array_equal(obs.high, [1.0, 1.0, 8.0])
    assert pendulum.max_episode_steps == 200

    catch = GymnaxEnv("Catch-bsuite").observation_space(None)
    assert catch.shape == (10, 5) and catch.dtype == jnp.int32


def test_other_space_kinds_raise_type_error():
    from gymnax.environments import spaces as gymnax_spaces

    box = gymnax_spaces.Box(0.0, 1.0, (2,))
    with pytest.raises(TypeError, match="Dict.*only Discrete and Box"):
        convert_space(gymnax_spaces.Dict({"a": box}))
    with pytest.raises(TypeError, match="Tuple.*only Discrete and Box"):
        convert_space(gymnax_spaces.Tuple([box, box]))


def test_names_and_errors():
    names = gymnax_names()
    assert "CartPole-v1" in names and "Pendulum-v1" in names
    with pytest.raises(ValueError, match="unknown gymnax environment 'CartPole-v9'.*CartPole-v1"):
        GymnaxEnv("CartPole-v9")
    env = GymnaxEnv("CartPole-v1")
    with pytest.raises(TypeError, match="integer dtype"):
        env.step(jax.random.PRNGKey(0), None, jnp.asarray(1.0))
    with pytest.raises(ValueError, match=r"action shape \(2,\)"):
        env.step(jax.random.PRNGKey(0), None, jnp.zeros(2, jnp.int32))


def test_environments_that_need_a_download_are_not_offered():
    from rlsuite.envs.gymnax_adapter import NEEDS_DOWNLOAD, GymnaxEnv, gymnax_names

    assert "MNISTBandit-bsuite" in NEEDS_DOWNLOAD
    assert not set(NEEDS_DOWNLOAD) & set(gymnax_names())
    with pytest.raises(ValueError, match="unknown gymnax environment 'MNISTBandit-bsuite'"):
        GymnaxEnv("MNISTBandit-bsuite")
