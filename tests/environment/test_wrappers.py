import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.point_mass import PointMass
from rlsuite.envs.probes import ConstantReward

from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import (
    ClipAction,
    EpisodeStatistics,
    FlattenObservation,
    RescaleAction,
    TimeLimit,
    Wrapper,
)
from tests.counter_env import Counter, CounterParams


def _run(env, params, actions, key=0):
    obs, state = env.reset(jax.random.key(key), params)
    step = jax.jit(env.step)
    out = []
    for t, a in enumerate(actions):
        obs, state, reward, terminated, truncated, info = step(
            jax.random.key(1000 + t), state, jnp.asarray(a, jnp.float32), params
        )
        out.append((float(reward), bool(terminated), bool(truncated), info))
    return out


def test_episode_statistics_counts_terminated_and_truncated_episodes():
    # terminate_at=3 and a limit of 2: episodes end by truncation after 2 steps.
    # Rewards are action + 1: actions 0.5, 0.0 -> returns 1.5 + 1.0 = 2.5 per episode, length 2.
    env = EpisodeStatistics(TimeLimit(Counter(), 2))
    out = _run(env, CounterParams(terminate_at=3), [[0.5], [0.0]] * 2)
    assert [o[2] for o in out] == [False, True, False, True]
    np.testing.assert_allclose([float(o[3]["episode_return"]) for o in out], [1.5, 2.5, 1.5, 2.5])
    assert [int(o[3]["episode_length"]) for o in out] == [1, 2, 1, 2]
    assert [bool(o[3]["episode_done"]) for o in out] == [False, True, False, True]
    # Now terminations first (terminate_at=1 < limit 2): every step ends an episode of return 1.
    out = _run(env, CounterParams(terminate_at=1), [[0.0]] * 3)
    assert all(o[1] and not o[2] for o in out)
    assert [float(o[3]["episode_return"]) for o in out] == [1.0, 1.0, 1.0]


def test_episode_metrics_by_hand_with_and_without_goal_success():
    from rlsuite.environment.wrappers import episode_metrics

    # Two envs x three steps. Env 0 ends an episode at step 1 (return 2, length 4) at the goal;
    # env 1 ends one at step 2 (return 5, length 6) away from it. At the goal: env 0 at steps 0
    # and 1, env 1 at step 1: 3 of the 6 steps.
    done = jnp.array([[False, True, False], [False, False, True]]).T
    info = {
        "episode_done": done,
        "episode_return": jnp.array([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]]).T,
        "episode_length": jnp.array([[3, 4, 1], [4, 5, 6]]).T,
    }
    plain = episode_metrics(info)
    assert set(plain) == {"charts/episodic_return", "charts/episodic_length", "charts/episodes"}
    assert (float(plain["charts/episodic_return"]), float(plain["charts/episodic_length"])) == (
        3.5,  # (2 + 5) / 2
        5.0,  # (4 + 6) / 2
    )
    success = jnp.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]).T
    goal = episode_metrics({**info, "success": success})
    assert float(goal["charts/success_at_end"]) == 0.5  # 1 of the 2 episodes ended at the goal
    assert float(goal["charts/time_at_goal"]) == 0.5  # 3 of 6 steps
    none_ended = {**info, "episode_done": jnp.zeros_like(done), "success": success}
    assert np.isnan(float(episode_metrics(none_ended)["charts/success_at_end"]))


def test_wrappers_do_not_mutate_inner_info():
    seen = []

    class Spy(Wrapper):
        def step_env(self, key, state, action, params):
            result = self.env.step_env(key, state, action, params)
            seen.append(result[-1])
            return result

    env = EpisodeStatistics(Spy(Counter()))
    _run(env, CounterParams(), [[0.0]])
    assert set(seen[0]) == {"count"}  # the inner dict kept its keys


def test_clip_action_clips_to_bounds():
    # Reward = clipped action + 1; an action of 5 is clipped to 1 -> reward 2; -3 -> -1 -> 0.
    env = ClipAction(Counter())
    out = _run(env, CounterParams(terminate_at=0), [[5.0], [-3.0]])
    assert [o[0] for o in out] == [2.0, 0.0]


def test_rescale_action_maps_affinely():
    # Expose [0, 4]; inner bounds [-1, 1]: a = 1 -> -0.5 (reward 0.5), a = 4 -> 1 (reward 2).
    env = RescaleAction(Counter(), low=0.0, high=4.0)
    assert env.action_space(env.default_params).low.tolist() == [0.0]
    out = _run(env, CounterParams(terminate_at=0), [[1.0], [4.0], [0.0]])
    np.testing.assert_allclose([o[0] for o in out], [0.5, 2.0, 0.0])
    with pytest.raises(TypeError, match="bounded Box"):
        RescaleAction(EpisodeStatistics(ConstantReward()))


def test_flatten_observation():
    class Grid(Wrapper):
        def observation_space(self, params):
            return Box(-1.0, 1.0, (2, 3))

        def reset_env(self, key, params):
            _, state = self.env.reset_env(key, params)
            return jnp.arange(6.0).reshape(2, 3), state

    env = FlattenObservation(Grid(PointMass()))
    obs, _ = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(obs, np.arange(6.0))
    assert env.observation_space(env.default_params).shape == (6,)


def test_wrapper_exposes_inner_attributes_and_name():
    env = EpisodeStatistics(TimeLimit(Counter(random_start=False), 7))
    assert env.max_episode_steps == 7
    assert env.random_start is False
    assert env.name == "Counter"
    assert isinstance(env.unwrapped, Counter)
    with pytest.raises(ValueError, match="max_episode_steps must be an integer >= 1"):
        TimeLimit(Counter(), 0)
