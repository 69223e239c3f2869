import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.data.transition import Transition
from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop.rollout import EnvBatch, reset_batch, rollout
from tests.counter_env import Counter, CounterParams
from tests.trees import assert_same

NUM_ENVS, NUM_STEPS = 3, 5


def constant_policy(value):
    def policy(key, obs):
        action = jnp.full((obs.shape[0], 1), value, jnp.float32)
        return action, {"obs_sum": obs.sum(-1)}

    return policy


def test_rollout_shapes_next_obs_and_carry():
    env = Counter()
    params = CounterParams(terminate_at=2)
    batch = reset_batch(env, params, jax.random.key(0), NUM_ENVS)
    starts = np.asarray(batch.obs[:, 0])
    run = jax.jit(rollout, static_argnums=(0, 2, 5))
    new_batch, tr = run(env, params, constant_policy(0.5), jax.random.key(1), batch, NUM_STEPS)
    assert tr.obs.shape == (NUM_STEPS, NUM_ENVS, 1) and tr.reward.shape == (NUM_STEPS, NUM_ENVS)
    np.testing.assert_allclose(tr.reward, 1.5)
    # Episodes of two steps: terminated at t = 1 and t = 3.
    np.testing.assert_array_equal(tr.terminated[:, 0], [False, True, False, True, False])
    assert not tr.truncated.any()
    # next_obs is pre-reset: start + 1, start + 2 in the first episode.
    np.testing.assert_allclose(tr.next_obs[0, :, 0], starts + 1)
    np.testing.assert_allclose(tr.next_obs[1, :, 0], starts + 2)
    # After the reset the obs is a new start, which differs from start + 2.
    assert np.all(tr.obs[2, :, 0] != starts + 2)
    np.testing.assert_allclose(tr.next_obs[2, :, 0], tr.obs[2, :, 0] + 1)
    # Policy extras and env info travel with each transition.
    np.testing.assert_allclose(tr.extras["obs_sum"], tr.obs[..., 0])
    np.testing.assert_array_equal(tr.info["count"][:, 0], [1, 2, 1, 2, 1])
    assert "final_observation" not in tr.info
    np.testing.assert_allclose(new_batch.obs[:, 0], tr.next_obs[-1, :, 0])


def test_rollout_same_key_same_run_different_key_different_run_and_vmap_over_seeds():
    env = TimeLimit(Counter(), 2)

    def run(key):
        key_reset, key_roll = jax.random.split(key)
        batch = reset_batch(env, None, key_reset, NUM_ENVS)
        return rollout(env, None, constant_policy(0.0), key_roll, batch, NUM_STEPS)[1]

    keys = jax.random.split(jax.random.key(7), 2)
    a, b = jax.jit(run)(keys[0]), jax.jit(run)(keys[0])
    c = jax.jit(run)(keys[1])
    np.testing.assert_array_equal(a.obs, b.obs)
    assert not np.array_equal(a.obs, c.obs)
    batched = jax.jit(jax.vmap(run))(keys)
    np.testing.assert_array_equal(batched.obs[0], a.obs)
    np.testing.assert_array_equal(batched.obs[1], c.obs)
    assert batched.truncated.shape == (2, NUM_STEPS, NUM_ENVS)
    np.testing.assert_array_equal(batched.truncated[0, :, 0], [False, True] * 2 + [False])


def test_rollout_with_one_params_per_env():
    env = Counter(random_start=False)
    params = CounterParams(terminate_at=jnp.array([1, 2, 3]))
    batch = reset_batch(env, params, jax.random.key(0), NUM_ENVS, params_axis=0)
    _, tr = rollout(env, params, constant_policy(0.0), jax.random.key(1), batch, 6, params_axis=0)
    np.testing.assert_array_equal(tr.terminated.sum(0), [6, 3, 2])


# ------------------------------------------------ the batched step equals jax.vmap(env.step)
def random_policy(env, params):
    space = env.action_space(params)

    def policy(key, obs):
        num_envs = jax.tree.leaves(obs)[0].shape[0]
        return jax.vmap(space.sample)(jax.random.split(key, num_envs)), {}

    return policy


def vmapped_step_rollout(env, params, policy, key, batch, num_steps, params_axis=None):
    """The reference: `rollout` as it would be with `jax.vmap(env.step)` as its batched step."""
    step = jax.vmap(env.step, in_axes=(0, 0, 0, params_axis))

    def one_step(batch, key_t):
        key_policy, key_env = jax.random.split(key_t)
        action, extras = policy(key_policy, batch.obs)
        keys = jax.random.split(key_env, jax.tree.leaves(batch.obs)[0].shape[0])
        obs, state, reward, terminated, truncated, info = step(keys, batch.state, action, params)
        info = dict(info)
        next_obs = info.pop("final_observation")
        tr = Transition(batch.obs, action, reward, terminated, truncated, next_obs, info, extras)
        return EnvBatch(state, obs), tr

    return jax.lax.scan(one_step, batch, jax.random.split(key, num_steps))


def both_ways(env, params, num_envs, num_steps, params_axis=None, reset_slots=None):
    """`run(key, reference) -> (carry, transitions)` with random actions, either path."""

    def run(key, reference):
        key_reset, key_rollout = jax.random.split(key)
        batch = reset_batch(env, params, key_reset, num_envs, params_axis)
        policy = random_policy(env, params)
        if reference:
            return vmapped_step_rollout(
                env, params, policy, key_rollout, batch, num_steps, params_axis
            )
        return rollout(env, params, policy, key_rollout, batch, num_steps, params_axis, reset_slots)

    return run


def test_batched_step_equals_vmapped_env_step_on_cartpole_with_and_without_episode_ends():
    env, params = envs.make("cartpole", max_episode_steps=40)
    run = both_ways(env, params, 4, 120)
    expected = jax.jit(run, static_argnums=1)(jax.random.key(3), True)
    actual = jax.jit(run, static_argnums=1)(jax.random.key(3), False)
    ends = np.asarray(expected[1].terminated | expected[1].truncated).sum(-1)
    # Steps where some env finished (the reset branch) and steps where none did (skipped).
    assert (ends == 0).sum() > 20 and (ends > 0).sum() > 5 and expected[1].truncated.any()
    assert_same(expected, actual)
    # One vmapped axis over seeds (the driver's): the skip becomes a select, same results.
    keys = jax.random.split(jax.random.key(4), 3)
    expected = jax.jit(jax.vmap(lambda k: run(k, True)))(keys)
    assert_same(expected, jax.jit(jax.vmap(lambda k: run(k, False)))(keys))


class CounterStartingAtParams(Counter):
    """Counter whose start value also depends on params: `1000 * terminate_at + a random draw`."""

    def reset_env(self, key, params):
        _, state = super().reset_env(key, params)
        state = state.replace(start=state.start + 1000.0 * params.terminate_at)
        return self._obs(state), state


def test_batched_step_resets_each_env_with_its_own_params_and_key():
    env = TimeLimit(CounterStartingAtParams(), 4)
    params = CounterParams(terminate_at=jnp.array([1, 2, 3, 1, 0, 2, 1, 5]))
    run = both_ways(env, params, 8, 12, params_axis=0)
    expected = jax.jit(run, static_argnums=1)(jax.random.key(5), True)
    carry, tr = jax.jit(run, static_argnums=1)(jax.random.key(5), False)
    assert_same(expected, (carry, tr))
    np.testing.assert_array_equal(tr.terminated.sum(0), [12, 6, 4, 12, 0, 6, 12, 0])
    np.testing.assert_array_equal(tr.truncated.sum(0), [0, 0, 0, 0, 3, 0, 0, 3])
    # next_obs is pre-reset (start + count); env 0 restarts on every step at 1000 * terminate_at
    # plus a fresh draw in [0, 1000).
    np.testing.assert_array_equal(tr.next_obs[..., 0], tr.obs[..., 0] + 1)
    starts = np.asarray(tr.obs[1:, 0, 0])
    assert ((starts >= 1000) & (starts < 2000)).all() and len(np.unique(starts)) == len(starts)


class CountedResets(CounterStartingAtParams):
    """Reports every environment reset its compiled code computes (one call per environment)."""

    def __init__(self, resets: list):
        super().__init__()
        self.resets = resets

    def reset_env(self, key, params):
        jax.debug.callback(lambda k: self.resets.append(1), jax.random.key_data(key))
        return super().reset_env(key, params)


# Rounds of one slot and all eight in the default run; every slot reset at once (None) and
# rounds of three in the slow one.
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "slots", [pytest.param(None, marks=SLOW), 1, pytest.param(3, marks=SLOW), 8]
)
def test_batched_step_resets_only_the_finished_envs_in_rounds_of_its_slots(slots):
    resets = []
    env = TimeLimit(CountedResets(resets), 8)
    # Envs that end every 2, 3 or 4 steps or at the time limit: 0, 1, 2, 3, 4, 7 or 8 ends a step.
    params = CounterParams(terminate_at=jnp.array([0, 2, 0, 2, 3, 4, 0, 0]))
    run = both_ways(env, params, 8, 24, params_axis=0, reset_slots=slots)
    expected = jax.jit(run, static_argnums=1)(jax.random.key(7), True)
    run_fast = jax.jit(run, static_argnums=1)
    jax.block_until_ready(run_fast.lower(jax.random.key(7), False).compile())
    resets.clear()
    actual = jax.block_until_ready(run_fast(jax.random.key(7), False))
    assert_same(expected, actual)
    ends = np.asarray(actual[1].terminated | actual[1].truncated).sum(-1)
    assert {0, 1, 2, 3, 8} <= set(ends.tolist())
    # The 8 resets of reset_batch, then on each step where some env finished the whole batch
    # (slots None) or as many rounds of `slots` resets as the finished environments need.
    per_step = np.where(ends > 0, 8, 0) if slots is None else -(-ends // slots) * slots
    assert len(resets) == 8 + per_step.sum()
    # Under the driver's vmap over runs too (the runs' decisions differ on some steps).
    keys = jax.random.split(jax.random.key(8), 3)
    expected = jax.jit(jax.vmap(lambda k: run(k, True)))(keys)
    assert_same(expected, jax.jit(jax.vmap(lambda k: run(k, False)))(keys))


def test_batched_step_refuses_reset_slots_below_one():
    env = TimeLimit(Counter(), 4)
    with pytest.raises(ValueError, match="reset_slots must be None or >= 1, got 0"):
        both_ways(env, CounterParams(), 4, 3, reset_slots=0)(jax.random.key(0), False)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_batched_step_equals_vmapped_env_step_on_brax_inverted_pendulum():
    # Whole-batch resets (None) and resets of the finished envs in rounds of 2 slots, against
    # one reference (MJX compiles slowly: the reference is made once).
    env, params = envs.make("brax/inverted_pendulum")
    expected = jax.jit(both_ways(env, params, 4, 150), static_argnums=1)(jax.random.key(6), True)
    assert expected[1].terminated.sum() > 20
    for slots in (None, 2):
        run = both_ways(env, params, 4, 150, reset_slots=slots)
        assert_same(expected, jax.jit(run, static_argnums=1)(jax.random.key(6), False))


def test_the_package_exposes_the_rollout_module_not_its_function():
    import types

    import rlsuite
    import rlsuite.loop.rollout as module

    assert isinstance(module, types.ModuleType) and rlsuite.loop.rollout is module
    assert callable(module.step_batch) and callable(module.rollout)
