"""The RL^2 wrapper, by hand, on `tests.task_env.Task` (episodes of 2 steps under `TimeLimit`).

The policy's carry counts the steps since its last reset and it acts `carry % 3`, so the carry it
saw on each step (`extras["carry"]`) shows where the rollout reset it: a carry of 0 is a fresh
one. Task: reward = bonus + 10 * count + action, where count (1 or 2) is the inner step count
after the step and bonus the trial's task, also the second entry of the observation. The RL^2
observation is `[count, bonus, one_hot(prev_action) (3), prev_reward, prev_done]`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment import Environment
from rlsuite.environment.meta import RL2, TRIAL_DONE
from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop import rollout as rollout_module
from rlsuite.loop.rollout import RecurrentPolicy, reset_batch, reset_each, rollout
from tests.counter_env import Counter, CounterParams
from tests.task_env import Task, TaskParams, sample_task

NUM_ENVS = 2
NUM_STEPS = 14  # two trials of 6 steps and two steps of a third


def counting_policy(scale=None):
    """Acts `carry % 3` (Discrete), or `scale * (carry + 1)` as a 1-D Box action."""

    def apply(key, obs, carry):
        if scale is None:
            action = carry % 3
        else:
            action = (scale * (carry + 1)).astype(jnp.float32)[:, None]
        return action, {"carry": carry}, carry + 1

    return RecurrentPolicy(apply, lambda n: jnp.zeros((n,), jnp.int32))


def run(env, key, num_steps=NUM_STEPS, params=None, policy=None):
    policy = counting_policy() if policy is None else policy
    key_reset, key_roll = jax.random.split(key)
    if params is None:
        batch = reset_batch(env, None, key_reset, NUM_ENVS)
        batch = batch._replace(carry=policy.initial(NUM_ENVS))
    else:
        batch = reset_each(env, params, key_reset, policy)
    return rollout(env, None, policy, key_roll, batch, num_steps)


def trials(pattern, num_steps=NUM_STEPS):
    """`pattern` (one trial) repeated over `num_steps`, per environment: `[num_steps, NUM_ENVS]`."""
    column = np.resize(np.asarray(pattern), num_steps)
    return np.repeat(column[:, None], NUM_ENVS, axis=1)


def rl2(memory="trial", **kwargs):
    kwargs = kwargs or {"episodes_per_trial": 3}
    return RL2(TimeLimit(Task(), 2), sample_task, memory=memory, **kwargs)


def test_trial_of_three_episodes_by_hand():
    _, tr = run(rl2(), jax.random.key(0))
    obs, carry = np.asarray(tr.obs), np.asarray(tr.extras["carry"])
    # Trial = 3 episodes x 2 steps = 6 steps; the carry resets only at the trial's end (step 6,
    # index 5), not where the inner episodes end (indices 1 and 3).
    np.testing.assert_array_equal(carry == 0, trials([1, 0, 0, 0, 0, 0]))
    np.testing.assert_array_equal(tr.action, trials([0, 1, 2, 0, 1, 2]))
    # The inner count restarts every 2 steps (the inner auto-reset).
    np.testing.assert_array_equal(obs[..., 0], trials([0, 1]))
    # One task per trial: the bonus is constant within a trial and a new trial draws a new one.
    bonus = obs[..., 1]
    for start in (0, 6, 12):
        stop = min(start + 6, NUM_STEPS)
        np.testing.assert_array_equal(
            bonus[start:stop], np.broadcast_to(bonus[start], bonus[start:stop].shape)
        )
    assert np.all(bonus[0] != bonus[6]) and np.all(bonus[6] != bonus[12])
    # Rewards b + 10 * count + action: count 1, 2, 1, 2, 1, 2 and actions 0, 1, 2, 0, 1, 2.
    b = bonus
    np.testing.assert_array_equal(tr.reward, b + trials([10, 21, 12, 20, 11, 22]))
    # Previous reward: 0 at a trial's start, else the last step's reward. At index 2 (step 3)
    # it is step 2's reward (b + 21) although an inner episode ended on step 2.
    prev_reward = obs[..., 5]
    np.testing.assert_array_equal(
        prev_reward, trials([0, 1, 1, 1, 1, 1]) * (b + trials([0, 10, 21, 12, 20, 11]))
    )
    np.testing.assert_array_equal(prev_reward[2], b[2] + 21.0)
    # Previous done: 1 on the step after an inner episode end (indices 2 and 4), 0 after the
    # trial's end (a new trial starts from zeros).
    np.testing.assert_array_equal(obs[..., 6], trials([0, 0, 1, 0, 1, 0]))
    # Previous action one-hot: none at a trial's start, then the last action (0, 1, 2, 0, 1).
    one_hot = np.zeros((6, 3))
    one_hot[[1, 2, 3, 4, 5], [0, 1, 2, 0, 1]] = 1.0
    np.testing.assert_array_equal(
        obs[..., 2:5], np.resize(one_hot, (NUM_STEPS, 3))[:, None].repeat(NUM_ENVS, 1)
    )
    # Terminated only at the trial's end; never truncated; the carry reset key says the same.
    np.testing.assert_array_equal(tr.terminated, trials([0, 0, 0, 0, 0, 1]))
    assert not np.asarray(tr.truncated).any()
    np.testing.assert_array_equal(tr.info[TRIAL_DONE], tr.terminated)
    np.testing.assert_array_equal(tr.info["episode_done"], trials([0, 1]))
    np.testing.assert_array_equal(tr.info["episode_index"], trials([0, 0, 1, 1, 2, 2]))
    # Episode returns: (b + 10) + (b + 21) = 2b + 31, then 2b + 32 and 2b + 33; each filled in
    # on the step its episode ends.
    returns = np.asarray(tr.info["episode_returns"])
    first = 2 * b[0] + np.array([31.0, 32.0, 33.0])[:, None]  # [3, NUM_ENVS]
    np.testing.assert_array_equal(returns[0], 0.0)
    np.testing.assert_array_equal(returns[1], np.stack([first[0], 0 * b[0], 0 * b[0]], -1))
    np.testing.assert_array_equal(returns[5], first.T)
    # The inner observation the episode ended in, before the inner reset: count 2.
    np.testing.assert_array_equal(
        tr.info["episode_final_observation"][1], np.stack([2 + 0 * b[0], b[0]], -1)
    )
    # Inner info passes through: regret 2 - action.
    np.testing.assert_array_equal(tr.info["regret"], trials([2, 1, 0, 2, 1, 0]))


def test_the_same_under_jit_and_vmap_over_keys():
    env = rl2()
    keys = jax.random.split(jax.random.key(3), 3)
    eager = [run(env, k) for k in keys]
    jitted = jax.jit(lambda k: run(env, k))(keys[0])
    batched = jax.jit(jax.vmap(lambda k: run(env, k)))(keys)
    for a, b in zip(jax.tree.leaves(eager[0]), jax.tree.leaves(jitted), strict=True):
        np.testing.assert_array_equal(a, b)
    for i, single in enumerate(eager):
        for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(batched), strict=True):
            np.testing.assert_array_equal(a, b[i])
    # The keys draw different tasks.
    assert len(np.unique(np.asarray(batched[1].obs[:, 0, :, 1]))) == 3 * NUM_ENVS


def test_memory_per_episode_resets_the_carry_and_prev_inputs_at_every_episode_end():
    _, tr = run(rl2(memory="episode"), jax.random.key(0))
    obs = np.asarray(tr.obs)
    # The carry resets at every inner episode end: fresh on steps 1, 3, 5 of each trial, so the
    # actions are 0, 1, 0, 1, ...
    np.testing.assert_array_equal(np.asarray(tr.extras["carry"]) == 0, trials([1, 0]))
    np.testing.assert_array_equal(tr.action, trials([0, 1]))
    # Previous inputs are zero at every episode start; on the second step of an episode they
    # are the first step's: action 0 (one-hot [1, 0, 0]), reward b + 10, done 0.
    b = obs[..., 1]
    np.testing.assert_array_equal(obs[0::2, :, 2:], 0.0)
    np.testing.assert_array_equal(
        obs[1::2, :, 2:5], np.broadcast_to([1.0, 0.0, 0.0], (7, NUM_ENVS, 3))
    )
    np.testing.assert_array_equal(obs[1::2, :, 5], b[1::2] + 10.0)
    np.testing.assert_array_equal(obs[1::2, :, 6], 0.0)
    # The task is kept for the whole trial; only the trial's end terminates.
    np.testing.assert_array_equal(b[:6], np.broadcast_to(b[0], (6, NUM_ENVS)))
    assert np.all(b[0] != b[6])
    np.testing.assert_array_equal(tr.terminated, trials([0, 0, 0, 0, 0, 1]))
    np.testing.assert_array_equal(tr.info[TRIAL_DONE], trials([0, 1]))


def test_box_actions_enter_raw_and_episodes_may_terminate():
    # Counter terminates after 2 steps; reward = action + 1; observation [count] (from 0).
    # Trials of 2 episodes (4 steps); actions 0.25 * (carry + 1): 0.25, 0.5, 0.75, 1.0.
    env = RL2(Counter(random_start=False), episodes_per_trial=2)
    params = CounterParams(terminate_at=jnp.array([2, 2]))
    space = env.observation_space(CounterParams(terminate_at=2))
    assert space.shape == (4,) and space.dtype == jnp.float32
    np.testing.assert_array_equal(space.low, [-np.inf, -np.inf, -np.inf, 0.0])
    np.testing.assert_array_equal(space.high, [np.inf, np.inf, np.inf, 1.0])
    assert getattr(env, "max_episode_steps", None) is None  # Counter has no time limit
    _, tr = run(env, jax.random.key(0), 8, params, counting_policy(0.25))
    obs = np.asarray(tr.obs)
    np.testing.assert_array_equal(obs[:, 0, 0], [0, 1, 0, 1] * 2)
    np.testing.assert_array_equal(obs[:, 0, 1], [0, 0.25, 0.5, 0.75] * 2)  # the raw action
    np.testing.assert_array_equal(obs[:, 0, 2], [0, 1.25, 1.5, 1.75] * 2)
    np.testing.assert_array_equal(obs[:, 0, 3], [0, 0, 1, 0] * 2)
    np.testing.assert_array_equal(tr.terminated[:, 0], [0, 0, 0, 1] * 2)
    np.testing.assert_array_equal(tr.info["episode_returns"][3, 0], [1.25 + 1.5, 1.75 + 2.0])


def test_trials_measured_in_steps():
    # 5 steps per trial, episodes of 2: the third episode is cut by the trial's end.
    env = rl2(steps_per_trial=5)
    assert env.max_episode_steps == 5
    _, tr = run(env, jax.random.key(1), 10)
    obs = np.asarray(tr.obs)
    np.testing.assert_array_equal(tr.terminated, trials([0, 0, 0, 0, 1], 10))
    np.testing.assert_array_equal(tr.info["episode_done"], trials([0, 1, 0, 1, 0], 10))
    np.testing.assert_array_equal(np.asarray(tr.extras["carry"]) == 0, trials([1, 0, 0, 0, 0], 10))
    np.testing.assert_array_equal(obs[5, :, 2:], 0.0)  # a new trial starts from zeros
    assert np.all(obs[0, :, 1] != obs[5, :, 1])  # and a new task
    assert tr.info["episode_returns"].shape == (10, NUM_ENVS, 0)


def test_held_out_tasks_vmapped_over_params():
    # sample_task=None keeps each environment's own task: bonus 5 and 70. Rewards per trial
    # b + [10, 21, 12, 20, 11, 22].
    env = RL2(TimeLimit(Task(), 2), episodes_per_trial=3)
    params = TaskParams(bonus=jnp.array([5.0, 70.0]))
    _, tr = run(env, jax.random.key(0), 12, params)
    pattern = np.array([10, 21, 12, 20, 11, 22] * 2, np.float32)
    np.testing.assert_array_equal(tr.reward, pattern[:, None] + np.array([5.0, 70.0]))


def test_trial_done_is_the_rollout_key():
    assert TRIAL_DONE == rollout_module.TRIAL_END == "trial_done"


class TwoDimensionalAction(Task):
    def action_space(self, params):
        return Box(-1.0, 1.0, (2, 2))


class NoSpace(Task):
    def observation_space(self, params):
        return "pixels"


@pytest.mark.parametrize(
    "env, kwargs, error, match",
    [
        (None, {}, ValueError, "exactly one of episodes_per_trial and steps_per_trial"),
        (None, {"episodes_per_trial": 2, "steps_per_trial": 4}, ValueError, "exactly one of"),
        (None, {"episodes_per_trial": 0}, ValueError, "episodes_per_trial must be an integer >= 1"),
        (None, {"episodes_per_trial": 2.0}, ValueError, "episodes_per_trial must be an integer"),
        (None, {"episodes_per_trial": True}, ValueError, "episodes_per_trial must be an integer"),
        (None, {"steps_per_trial": -3}, ValueError, "steps_per_trial must be an integer >= 1"),
        (None, {"steps_per_trial": 1}, ValueError, "steps_per_trial=1 is shorter than one episode"),
        (
            None,
            {"episodes_per_trial": 2, "memory": "none"},
            ValueError,
            r"memory must be one of \('trial', 'episode'\)",
        ),
        (
            None,
            {"episodes_per_trial": 2, "sample_task": "uniform"},
            TypeError,
            "sample_task must be a function",
        ),
        (
            TwoDimensionalAction(),
            {"episodes_per_trial": 2},
            ValueError,
            "must be Discrete or a 1-D Box",
        ),
        (NoSpace(), {"episodes_per_trial": 2}, ValueError, "must be a Box or Discrete"),
    ],
)
def test_bad_input_is_named_at_construction(env, kwargs, error, match):
    env = TimeLimit(Task(), 2) if env is None else env
    with pytest.raises(error, match=match):
        RL2(env, **kwargs)


def test_steps_per_trial_may_be_any_length_without_a_time_limit():
    assert RL2(Task(), steps_per_trial=1).max_episode_steps == 1
    assert isinstance(RL2(TimeLimit(Task(), 2), steps_per_trial=2), Environment)
