"""BraxEnv: termination vs truncation, the true pre-reset observation, fresh start states, errors.

MJX compiles slowly on CPU, so everything runs on `inverted_pendulum` (4-d obs, 1-d action, it
terminates once the pole passes 0.2 rad) and the compiled functions are built once per module:

* `rollout`: one `lax.scan` over `TimeLimit(BraxEnv("inverted_pendulum"), 5).step` taking a
  sequence of actions; it returns what each step returns plus the state each step started from.
* `raw_step`: brax's own `env.step` on the raw brax environment (the reference for observations).
* brax's `AutoResetWrapper.step`, for the test that documents why our auto-reset is needed.

A push of +1 drops the pole within 2 steps (termination long before the limit of 5); no push keeps
it up for about 20 steps, so the limit of 5 truncates.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.brax_adapter import BACKENDS, BraxEnv, BraxParams, brax_names, refused

from rlsuite import envs
from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import TimeLimit

pytestmark = pytest.mark.timeout(300)

NAME = "inverted_pendulum"
LIMIT = 5
NUM_STEPS = 12


@pytest.fixture(scope="module")
def env():
    return BraxEnv(NAME)


@pytest.fixture(scope="module")
def limited(env):
    return TimeLimit(env, LIMIT)


@pytest.fixture(scope="module")
def rollout(limited):
    """`rollout(key, state, actions)` -> (pre-step states, step outputs), scanned over `actions`."""

    def run(key, state, actions):
        def body(state, xs):
            key_step, action = xs
            obs, next_state, reward, terminated, truncated, info = limited.step(
                key_step, state, action
            )
            out = dict(
                obs=obs,
                reward=reward,
                terminated=terminated,
                truncated=truncated,
                final_observation=info["final_observation"],
            )
            return next_state, (state, out)

        keys = jax.random.split(key, actions.shape[0])
        _, (states, outs) = jax.lax.scan(body, state, (keys, actions))
        return states, outs

    return jax.jit(run)


@pytest.fixture(scope="module")
def start(limited):
    obs, state = jax.jit(limited.reset)(jax.random.PRNGKey(0))
    return obs, state


@pytest.fixture(scope="module")
def pushed(rollout, start):
    """Constant push +1: the pole falls within a couple of steps, over and over."""
    actions = jnp.ones((NUM_STEPS, 1))
    states, out = rollout(jax.random.PRNGKey(1), start[1], actions)
    return actions, states, jax.tree.map(np.asarray, out)


@pytest.fixture(scope="module")
def unpushed(rollout, start):
    """No push: the pole stays up past the limit, so episodes end by truncation."""
    actions = jnp.zeros((NUM_STEPS, 1))
    states, out = rollout(jax.random.PRNGKey(2), start[1], actions)
    return actions, states, jax.tree.map(np.asarray, out)


@pytest.fixture(scope="module")
def raw_step(env):
    return jax.jit(env.brax_env.step)


def _first(flags):
    hits = np.flatnonzero(flags)
    assert hits.size, "expected the flag to be set at least once"
    return int(hits[0])


def _at(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


# -------------------------------------------------------------------------- construction and spaces
def test_spaces_params_and_names(env):
    assert NAME in brax_names() and "ant" in brax_names()
    assert env.default_params == BraxParams()
    assert env.max_episode_steps == 1000
    act, obs = env.action_space(env.default_params), env.observation_space(env.default_params)
    assert isinstance(act, Box) and act.shape == (1,) and act.dtype == jnp.float32
    assert np.all(act.low == -1.0) and np.all(act.high == 1.0)
    assert isinstance(obs, Box) and obs.shape == (4,) and obs.dtype == jnp.float32
    assert np.all(np.isinf(obs.low)) and np.all(np.isinf(obs.high))


def test_unknown_name_lists_allowed():
    with pytest.raises(ValueError, match="unknown brax environment 'antt'.*inverted_pendulum"):
        BraxEnv("antt")


def test_unknown_backend_lists_allowed():
    with pytest.raises(ValueError, match="unknown brax backend 'warp'") as excinfo:
        BraxEnv(NAME, backend="warp")
    for backend in BACKENDS:
        assert backend in str(excinfo.value)


def test_wrong_action_shape_is_rejected_before_stepping(env):
    # The base-class check runs before the state is touched, so no state is needed.
    with pytest.raises(ValueError, match=r"action shape \(2,\).*expects shape \(1,\)"):
        env.step(jax.random.PRNGKey(0), None, jnp.zeros(2))
    with pytest.raises(TypeError, match="floating dtype"):
        env.step(jax.random.PRNGKey(0), None, jnp.zeros(1, jnp.int32))


# ------------------------------------------------------------------------ termination vs truncation
def test_termination_is_not_truncation(pushed):
    _, _, out = pushed
    t = _first(out["terminated"])
    assert t < LIMIT - 1, "the pole should fall before the time limit"
    assert not out["terminated"][:t].any() and not out["truncated"][: t + 1].any()
    # The pole really fell: the pre-reset observation's angle is past brax's 0.2 rad threshold.
    assert abs(out["final_observation"][t][1]) > 0.2
    # ... and the returned observation already belongs to a new episode (brax starts within 0.01).
    assert np.all(np.abs(out["obs"][t]) <= 0.01)
    assert out["reward"].dtype == np.float32 and out["terminated"].dtype == np.bool_


def test_time_limit_truncates_without_terminating(unpushed):
    _, states, out = unpushed
    assert not out["terminated"].any()
    expected = np.zeros(NUM_STEPS, bool)
    expected[LIMIT - 1 :: LIMIT] = True  # steps 5 and 10
    np.testing.assert_array_equal(out["truncated"], expected)
    # The step counter restarts with the episode.
    np.testing.assert_array_equal(np.asarray(states.time), np.arange(NUM_STEPS) % LIMIT)


# -------------------------------------------------------------------------------- final observation
@pytest.mark.parametrize("which", ["pushed", "unpushed"])
def test_final_observation_is_what_brax_computes(which, request, raw_step):
    actions, states, out = request.getfixturevalue(which)
    t = _first(np.logical_or(out["terminated"], out["truncated"]))
    # Step the same brax state with the same action in brax itself.
    brax_next = raw_step(_at(states.env_state, t), actions[t])
    np.testing.assert_allclose(out["final_observation"][t], brax_next.obs, rtol=1e-5, atol=1e-6)
    assert bool(brax_next.done) == bool(out["terminated"][t])
    # The returned observation is the reset one, far from where the episode ended.
    assert np.max(np.abs(out["obs"][t] - out["final_observation"][t])) > 1e-3
    # On steps that do not end an episode the returned and final observations agree.
    np.testing.assert_array_equal(out["obs"][:t], out["final_observation"][:t])


def test_brax_autoreset_wrapper_loses_the_final_observation(env, pushed, raw_step):
    """Why the adapter exists: brax's AutoResetWrapper returns the cached first observation at
    `done`, keeps no copy of the observation the episode ended in, and restarts from one state."""
    from brax.envs.wrappers.training import AutoResetWrapper

    actions, states, out = pushed
    t = _first(out["terminated"])
    first = _at(states.env_state, 0)  # the state brax's wrapper would have cached at reset
    state = _at(states.env_state, t)
    info = dict(state.info, first_pipeline_state=first.pipeline_state, first_obs=first.obs)
    wrapper = AutoResetWrapper(env.brax_env)
    result = jax.jit(wrapper.step)(state.replace(info=info), actions[t])

    true_final = np.asarray(raw_step(state, actions[t]).obs)
    assert float(result.done) == 1.0
    # The returned obs is the cached first obs (the same start state every episode) ...
    np.testing.assert_array_equal(result.obs, first.obs)
    # ... and the pre-reset observation is nowhere in the returned state.
    for leaf in jax.tree.leaves(result):
        leaf = np.asarray(leaf)
        assert not (leaf.shape == true_final.shape and np.allclose(leaf, true_final, atol=1e-5))
    # Ours keeps it, and starts the next episode somewhere new.
    np.testing.assert_allclose(out["final_observation"][t], true_final, rtol=1e-5, atol=1e-6)
    assert np.max(np.abs(out["obs"][t] - np.asarray(first.obs))) > 1e-4


# ------------------------------------------------------------------------------- fresh start states
def test_auto_reset_draws_fresh_start_states(rollout, pushed):
    actions, states, out = pushed
    t = _first(out["terminated"])
    state = _at(states, t)
    starts = []
    for seed in (10, 11):
        _, again = rollout(jax.random.PRNGKey(seed), state, actions)
        assert bool(again["terminated"][0])
        # Same episode end whatever the key (brax steps are deterministic) ...
        np.testing.assert_allclose(again["final_observation"][0], out["final_observation"][t])
        starts.append(np.asarray(again["obs"][0]))
    # ... but a different start state for the next episode.
    assert np.max(np.abs(starts[0] - starts[1])) > 1e-4
    # Successive episodes of one rollout start differently too (brax would reuse one start).
    ends = np.flatnonzero(out["terminated"])
    assert ends.size >= 2
    assert np.max(np.abs(out["obs"][ends[0]] - out["obs"][ends[1]])) > 1e-4


# ------------------------------------------------------------------------------- metrics and dtypes
class _Counter:
    """A tiny brax `Env` (no physics), registered under a test name to check the plumbing."""

    def __init__(self, backend="mjx"):
        self._backend = backend

    def reset(self, rng):
        from brax.envs.base import State

        obs = jax.random.uniform(rng, (3,))
        zero = jnp.zeros(())
        return State(None, obs, zero, zero, {"count": zero}, {"steps": zero})

    def step(self, state, action):
        state.info["steps"] = state.info["steps"] + 1  # in place, as brax wrappers do
        obs = state.obs + jnp.sum(action)
        metrics = {"count": state.metrics["count"] + 1.0}
        return state.replace(obs=obs, reward=1.0, done=1.0, metrics=metrics)

    action_size = 2
    observation_size = 3

    @property
    def backend(self):
        return self._backend


@pytest.fixture
def counter_env():
    from brax import envs as brax_envs

    brax_envs.register_environment("_rlsuite_test_counter", _Counter)
    try:
        yield BraxEnv("_rlsuite_test_counter", backend="spring")
    finally:
        brax_envs._envs.pop("_rlsuite_test_counter", None)


def test_metrics_copied_dtypes_fixed_and_input_untouched(counter_env):
    assert counter_env.brax_env.backend == "spring"
    obs, state = counter_env.reset_env(jax.random.PRNGKey(0), counter_env.default_params)
    assert obs.shape == (3,) and counter_env.observation_space(None).shape == (3,)
    out = counter_env.step_env(jax.random.PRNGKey(1), state, jnp.ones(2), BraxParams())
    next_obs, next_state, reward, terminated, truncated, info = out
    np.testing.assert_allclose(next_obs, obs + 2.0)
    assert set(info) == {"count"} and info is not next_state.metrics
    assert float(info["count"]) == 1.0 == float(next_state.metrics["count"])
    # brax returned a Python float reward and done: ours are float32 arrays, flags are bools.
    assert reward.dtype == jnp.float32 and not reward.weak_type
    assert terminated.dtype == jnp.bool_ and bool(terminated) and not bool(truncated)
    assert jax.tree.structure(next_state) == jax.tree.structure(state)
    # The in-place update of `info` hit a copy, not the caller's state.
    assert float(state.info["steps"]) == 0.0 and float(next_state.info["steps"]) == 1.0


def test_importing_brax_prints_no_warp_notice():
    """MJX prints `Failed to import warp` where NVIDIA Warp is absent; it preceded every error
    of the command line. Listing and making Brax environments prints nothing of it."""
    import subprocess
    import sys

    code = "from rlsuite import envs; envs.names(); envs.make('brax/inverted_pendulum')"
    code += "; print('done')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines() == ["done"]
    assert "warp" not in proc.stderr.lower()


def test_an_environment_that_cannot_step_with_this_jax_is_left_out_and_refused_by_name():
    # brax's swimmer has only the generalized backend, whose fluid model passes a_min= to
    # jnp.clip: JAX versions whose clip takes min=/max= only fail inside its first step.
    import inspect

    expected = set() if "a_min" in inspect.signature(jnp.clip).parameters else {"swimmer"}
    assert set(refused()) == expected
    for name in expected:
        assert name not in brax_names() and f"brax/{name}" not in envs.names()
        with pytest.raises(ValueError, match=f"brax environment '{name}' cannot run here: its"):
            envs.make(f"brax/{name}")
        with pytest.raises(ValueError, match="takes min= and max= only"):
            BraxEnv(name, backend="mjx")


def test_mujocos_warnings_are_python_warnings_not_a_log_file_in_the_working_directory(
    tmp_path, monkeypatch
):
    import mujoco
    from rlsuite.envs.brax_adapter import brax_envs
    from rlsuite.envs.mujoco_warnings import MujocoWarning

    monkeypatch.chdir(tmp_path)
    brax_envs()  # where the adapters load MuJoCo's models
    xml = '<mujoco><compiler settotalmass="2"/><worldbody><body><freejoint/>'
    xml += '<geom size="0.1"/></body></worldbody></mujoco>'
    with pytest.warns(MujocoWarning, match="MuJoCo: compiler attribute 'settotalmass'"):
        mujoco.MjModel.from_xml_string(xml)
    assert list(tmp_path.iterdir()) == []  # no MUJOCO_LOG.TXT
