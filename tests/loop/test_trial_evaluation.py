"""Trial evaluation and adaptation statistics, by hand and against a plain numpy bootstrap.

Environment: `RL2(TimeLimit(Task(), 2), ...)`, trials of 3 episodes of 2 steps (see
`tests.task_env`: reward = bonus + 10 * count + action, regret = 2 - action). The policy's carry
counts the steps since its last reset and it acts `carry % 3`.

- memory="trial": the carry runs through the trial, actions 0, 1, 2, 0, 1, 2, rewards
  b + (10, 21), b + (12, 20), b + (11, 22): episode returns 2b + 31, 2b + 32, 2b + 33 (trial
  return 6b + 96), regret 2 + 1 + 0 + 2 + 1 + 0 = 6.
- memory="episode": the carry resets at every episode end, actions 0, 1 in every episode:
  episode returns 2b + 31 each (trial return 6b + 93), regret 3 x (2 + 1) = 9.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment.meta import RL2
from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop.episodes import (
    adaptation_curve,
    evaluate,
    evaluate_trials,
    paired_difference,
)
from rlsuite.loop.rollout import RecurrentPolicy
from tests.counter_env import Counter
from tests.task_env import Task, TaskParams, sample_task

BONUS = jnp.array([0.0, 100.0, 7.0])  # held-out tasks, one per trial


def counting_policy():
    return RecurrentPolicy(
        lambda key, obs, carry: (carry % 3, {}, carry + 1),
        lambda n: jnp.zeros((n,), jnp.int32),
    )


def held_out(memory="trial", **kwargs):
    kwargs = kwargs or {"episodes_per_trial": 3}
    env = RL2(TimeLimit(Task(), 2), memory=memory, **kwargs)
    return env, TaskParams(bonus=BONUS)


def test_episode_returns_and_regret_by_hand():
    env, params = held_out()
    result = jax.jit(
        lambda key: evaluate_trials(
            env, params, counting_policy(), key, 3, params_axis=0, sum_info=("regret",)
        )
    )(jax.random.key(0))
    b = np.asarray(BONUS)[:, None]
    np.testing.assert_array_equal(result.episode_returns, 2 * b + [31.0, 32.0, 33.0])
    np.testing.assert_array_equal(result.returns, 6 * BONUS + 96.0)
    np.testing.assert_array_equal(result.sums["regret"], [6.0, 6.0, 6.0])
    # The same loop as `evaluate`: a trial is the wrapped environment's episode.
    plain = evaluate(env, params, counting_policy(), jax.random.key(0), 3, params_axis=0)
    np.testing.assert_array_equal(plain.returns, result.returns)
    np.testing.assert_array_equal(plain.lengths, [6, 6, 6])


def test_memory_per_episode_resets_the_carry_where_the_wrapper_says():
    env, params = held_out("episode")
    result = evaluate_trials(
        env, params, counting_policy(), jax.random.key(0), 3, params_axis=0, sum_info="regret"
    )
    b = np.asarray(BONUS)[:, None]
    np.testing.assert_array_equal(result.episode_returns, 2 * b + [31.0, 31.0, 31.0])
    np.testing.assert_array_equal(result.returns, 6 * BONUS + 93.0)
    np.testing.assert_array_equal(result.sums["regret"], [9.0, 9.0, 9.0])


def test_sampled_tasks_vmapped_over_seeds_feed_the_adaptation_curve():
    env = RL2(TimeLimit(Task(), 2), sample_task, episodes_per_trial=3)

    def run(key):
        return evaluate_trials(env, None, counting_policy(), key, 4)

    result = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(1), 5))
    returns = np.asarray(result.episode_returns, np.float64)  # [5 seeds, 4 trials, 3]
    assert returns.shape == (5, 4, 3)
    # Each trial's episodes return 2b + 31, 2b + 32, 2b + 33 for its own task b.
    np.testing.assert_array_equal(returns - returns[..., :1], np.broadcast_to([0, 1, 2], (5, 4, 3)))
    assert len(np.unique(returns[..., 0])) == 20  # 20 tasks drawn
    mean, low, high = adaptation_curve(returns)
    np.testing.assert_allclose(mean, returns.mean(axis=(0, 1)), rtol=1e-12)
    # Every seed's curve is its episode-1 mean plus (0, 1, 2): so are the interval's ends.
    np.testing.assert_allclose(low, low[0] + np.array([0.0, 1.0, 2.0]), rtol=1e-12)
    np.testing.assert_allclose(high, high[0] + np.array([0.0, 1.0, 2.0]), rtol=1e-12)
    assert low[0] < mean[0] < high[0]
    difference = paired_difference(returns, 2, 0)
    assert difference == (2.0, 2.0, 2.0)  # the same difference in every seed: no spread


def test_trials_in_steps_sum_but_have_no_episode_returns():
    # 5 steps per trial, actions 0, 1, 2, 0, 1: rewards b + (10, 21, 12, 20, 11) = 5b + 74,
    # regret 2 + 1 + 0 + 2 + 1 = 6.
    env, params = held_out(steps_per_trial=5)
    result = evaluate_trials(
        env, params, counting_policy(), jax.random.key(0), 3, params_axis=0, sum_info=("regret",)
    )
    assert result.episode_returns.shape == (3, 0)
    np.testing.assert_array_equal(result.returns, 5 * BONUS + 74.0)
    np.testing.assert_array_equal(result.sums["regret"], [6.0, 6.0, 6.0])


def test_a_trial_cut_by_max_steps_keeps_its_finished_episodes():
    # 3 steps: the first episode (2b + 31) ended, the second has one step (b + 12), not counted.
    env, params = held_out()
    result = evaluate_trials(env, params, counting_policy(), jax.random.key(0), 3, 3, 0)
    b = np.asarray(BONUS)
    np.testing.assert_array_equal(result.episode_returns[:, 0], 2 * b + 31.0)
    np.testing.assert_array_equal(result.episode_returns[:, 1:], 0.0)
    np.testing.assert_array_equal(result.returns, 3 * b + 43.0)


def test_bad_input_is_named():
    env, params = held_out()
    policy = counting_policy()
    with pytest.raises(ValueError, match=r"no info\['cost'\]; its info keys: .*regret"):
        evaluate_trials(env, params, policy, jax.random.key(0), 3, params_axis=0, sum_info=["cost"])
    with pytest.raises(ValueError, match="must be one number per step"):
        evaluate_trials(
            env,
            params,
            policy,
            jax.random.key(0),
            3,
            params_axis=0,
            sum_info=["episode_returns"],
        )
    with pytest.raises(ValueError, match="num_trials must be >= 1"):
        evaluate_trials(env, params, policy, jax.random.key(0), 0, params_axis=0)
    # Not an RL2 environment: no episode returns to report.
    with pytest.raises(ValueError, match=r"no info\['episode_returns'\]"):
        evaluate_trials(
            TimeLimit(Counter(), 3),
            None,
            lambda k, o: (jnp.zeros((2, 1)), {}),
            jax.random.key(0),
            2,
        )
    with pytest.raises(ValueError, match="pass max_steps"):
        evaluate_trials(RL2(Counter(), episodes_per_trial=2), None, policy, jax.random.key(0), 2)


# Two seeds, two trials each, three episodes: seed means (2, 3, 4) and (5, 6, 8).
HAND = np.array([[[1, 2, 3], [3, 4, 5]], [[5, 6, 7], [5, 6, 9]]], float)


def test_adaptation_curve_by_hand():
    mean, low, high = adaptation_curve(HAND)
    np.testing.assert_array_equal(mean, [3.5, 4.5, 6.0])
    # With two seeds a resample's mean is the first seed's, the second's or their average, each
    # with probability 1/4, 1/4, 1/2: of 2,000 resamples the 2.5% and 97.5% quantiles are the
    # two seeds' own means.
    np.testing.assert_array_equal(low, [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(high, [5.0, 6.0, 8.0])


def test_paired_difference_by_hand():
    # Episode 3 minus episode 1: seed differences 4 - 2 = 2 and 8 - 5 = 3.
    assert paired_difference(HAND, 2, 0) == (2.5, 2.0, 3.0)
    assert paired_difference(HAND, 0, 2) == (-2.5, -3.0, -2.0)


def test_against_a_plain_numpy_bootstrap():
    rng = np.random.default_rng(5)
    returns = rng.normal(size=(9, 4, 3)) + [0.0, 0.5, 1.0]
    per_seed = returns.mean(axis=1)  # [9 seeds, 3]
    # The same resamples of seeds: rows of indices drawn as `bootstrap_ci` draws them.
    picks = np.random.default_rng(0).integers(0, 9, size=(2000, 9))
    means = per_seed[picks].mean(axis=1)  # [2000, 3]
    mean, low, high = adaptation_curve(returns)
    np.testing.assert_allclose(mean, per_seed.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(low, np.quantile(means, 0.025, axis=0), rtol=1e-10)
    np.testing.assert_allclose(high, np.quantile(means, 0.975, axis=0), rtol=1e-10)
    # Paired: the two episodes of a resampled seed go together.
    differences = means[:, 2] - means[:, 0]
    got = paired_difference(returns, 2, 0)
    want = (
        per_seed[:, 2].mean() - per_seed[:, 0].mean(),
        *np.quantile(differences, [0.025, 0.975]),
    )
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_bad_statistics_input_is_named():
    with pytest.raises(ValueError, match=r"must be \[num_seeds, num_trials, episodes_per_trial\]"):
        adaptation_curve(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="none of them 0"):
        adaptation_curve(np.zeros((3, 4, 0)))
    with pytest.raises(ValueError, match=r"later must be an episode index in 0\.\.2, got 3"):
        paired_difference(HAND, 3, 0)
    with pytest.raises(ValueError, match=r"earlier must be an episode index in 0\.\.2, got -1"):
        paired_difference(HAND, 2, -1)
