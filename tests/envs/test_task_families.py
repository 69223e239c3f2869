"""The meta-RL task families of `envs/tasks/`: their task samplers against closed-form moments,
hand-derived steps, episode ends, bad input refused before compilation, and the `meta/` names."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.tasks import bandits, maze, point_robot, tabular_mdp
from rlsuite.envs.tasks.maze import Maze, MazeState
from rlsuite.envs.tasks.point_robot import PointRobot, PointRobotState
from rlsuite.envs.tasks.tabular_mdp import TabularMDP, TabularMDPState

from rlsuite import envs
from rlsuite.environment.checker import check_env

KEY = jax.random.key(0)


def _step(env, state, action, params, key=KEY):
    """One core step (no auto-reset) behind the contract's checks."""
    return env.step_without_reset(key, state, jnp.asarray(action), params)


# ----------------------------------------------------------------------------- bandits
def test_duan_bandits_expected_best_arm():
    # E[max of k iid U[0, 1]] = k / (k + 1): 10 pulls of the best arm earn 10 * 5 / 6 = 8.333.
    env = bandits.BernoulliBandit(5)
    keys = jax.random.split(KEY, 100_000)
    tasks = jax.jit(jax.vmap(bandits.sample_uniform, in_axes=(0, None)))(keys, env.default_params)
    probs = np.asarray(tasks.probs)
    assert probs.shape == (100_000, 5) and probs.dtype == np.float32
    assert probs.min() >= 0.0 and probs.max() <= 1.0
    assert abs(10 * probs.max(axis=1).mean() - 10 * 5 / 6) < 0.02
    # The arms are independent and uniform: each has mean 1/2 and variance 1/12.
    np.testing.assert_allclose(probs.mean(axis=0), 0.5, atol=0.005)
    np.testing.assert_allclose(probs.var(axis=0), 1 / 12, atol=0.002)
    env.check_params(tasks)  # a batch of tasks passes the checks before a vmap


def test_paired_bandits_order_is_a_fair_coin():
    env = bandits.BernoulliBandit(2)
    params = env.default_params.replace(p=0.1)
    keys = jax.random.split(KEY, 100_000)
    probs = np.asarray(jax.vmap(bandits.sample_paired, in_axes=(0, None))(keys, params).probs)
    p = np.float32(0.1)
    low_first = np.all(probs == [p, np.float32(1) - p], axis=1)
    high_first = np.all(probs == [np.float32(1) - p, p], axis=1)
    assert np.all(low_first ^ high_first)  # always {0.1, 0.9}, one of the two orders
    assert abs(high_first.mean() - 0.5) < 0.01
    # p is a params field, so vmapping over it draws pairs of several p at once.
    ps = jnp.array([0.25, 0.4])
    pairs = jax.vmap(lambda p, k: bandits.sample_paired(k, params.replace(p=p)))(ps, keys[:2])
    np.testing.assert_allclose(np.sort(np.asarray(pairs.probs), axis=1), [[0.25, 0.75], [0.4, 0.6]])


def test_bandit_regret_and_rewards():
    env = bandits.BernoulliBandit(3)
    params = env.default_params.replace(probs=jnp.array([0.2, 0.7, 0.5]))
    obs, state = env.reset(KEY, params)
    np.testing.assert_array_equal(obs, np.zeros((1,), np.float32))
    # regret = max(probs) - probs[action]: 0.7 - 0.2, 0.7 - 0.7, 0.7 - 0.5.
    for action, regret in ((0, 0.5), (1, 0.0), (2, 0.2)):
        obs, _, reward, terminated, truncated, info = _step(env, state, action, params)
        np.testing.assert_allclose(info["regret"], regret, atol=1e-6)
        assert bool(terminated) and not bool(truncated) and reward.dtype == jnp.float32
        np.testing.assert_array_equal(obs, np.zeros((1,), np.float32))
    # The reward of an arm is Bernoulli(probs[arm]): the mean of 20,000 pulls within 4.5 standard
    # errors (0.5 / sqrt(20,000) = 0.0035) of the arm's probability; only 0 and 1 occur.
    keys = jax.random.split(KEY, 20_000)
    for action, prob in ((0, 0.2), (2, 0.5)):
        pull = jax.vmap(lambda k, a=action: env.step(k, state, jnp.asarray(a), params)[2])
        rewards = np.asarray(jax.jit(pull)(keys))
        assert set(np.unique(rewards)) == {0.0, 1.0}
        assert abs(rewards.mean() - prob) < 0.016


# ----------------------------------------------------------------------------- tabular MDP
def test_tabular_mdp_tasks_are_dirichlet_rows_and_normal_means():
    env = TabularMDP()  # S = 10, A = 5
    keys = jax.random.split(KEY, 2_000)
    sample = jax.jit(jax.vmap(tabular_mdp.sample_task, in_axes=(0, None)))
    tasks = sample(keys, env.default_params)
    transitions = np.asarray(tasks.transitions)
    assert transitions.shape == (2_000, 10, 5, 10) and transitions.min() >= 0
    np.testing.assert_allclose(transitions.sum(-1), 1.0, atol=1e-5)
    # A component of a flat Dirichlet over S = 10 is Beta(1, 9): mean 1/10, variance
    # 9 / (10^2 * 11) = 0.008182 (Dirichlet(alpha) of another alpha has another variance).
    assert abs(transitions.mean() - 0.1) < 1e-6
    assert abs(transitions.var() - 9 / 1100) < 0.0002
    means = np.asarray(tasks.reward_means)  # N(1, 1): 100,000 draws, standard error 0.003
    assert means.shape == (2_000, 10, 5)
    assert abs(means.mean() - 1.0) < 0.015 and abs(means.std() - 1.0) < 0.015


def test_tabular_mdp_step_by_hand():
    env = TabularMDP(num_states=3, num_actions=2, horizon=3)
    transitions = jnp.zeros((3, 2, 3)).at[:, :, 0].set(1.0)  # every action leads to state 0 ...
    transitions = transitions.at[0, 1].set(jnp.array([0.0, 0.0, 1.0]))  # ... but (0, 1) -> 2
    means = jnp.array([[0.0, 0.5], [1.0, 2.0], [3.0, 4.0]])
    params = env.default_params.replace(transitions=transitions, reward_means=means)
    obs, state = env.reset(KEY, params)
    np.testing.assert_array_equal(obs, [1.0, 0.0, 0.0])  # every episode starts in state 0
    obs, state, reward, terminated, truncated, _ = _step(env, state, 1, params)
    # reward = means[0, 1] + 1 * N(0, 1), the noise drawn with the second half of the step key.
    noise = jax.random.normal(jax.random.split(KEY)[1], (), jnp.float32)
    np.testing.assert_allclose(reward, 0.5 + noise, rtol=1e-6)
    np.testing.assert_array_equal(obs, [0.0, 0.0, 1.0])
    assert int(state.state) == 2 and not bool(terminated) and not bool(truncated)
    noiseless = params.replace(reward_std=0.0)
    obs, state, reward, _, truncated, _ = _step(env, state, 0, noiseless)
    assert float(reward) == 3.0 and int(state.state) == 0 and not bool(truncated)
    # The third step reaches the horizon H = 3: truncated, never terminated.
    obs, state, reward, terminated, truncated, _ = _step(env, state, 0, noiseless)
    assert float(reward) == 0.0 and bool(truncated) and not bool(terminated)


def test_tabular_mdp_episode_values_and_references_by_hand():
    # Two states, two actions: action 0 moves to state 1, action 1 stays; R = [[1, 0], [0, 3]].
    # Horizon 2 from state 0. Last step: V(0), V(1) = 1, 3 (optimal), 0.5, 1.5 (random).
    # First step: optimal max(1 + V(1), 0 + V(0)) = max(4, 1) = 4;
    #             random mean(1 + 1.5, 0 + 0.5) = 1.5.
    to_one = jnp.array([0.0, 1.0])
    transitions = jnp.stack(
        [jnp.stack([to_one, jnp.array([1.0, 0.0])]), jnp.stack([to_one, to_one])]
    )
    params = tabular_mdp.TabularMDPParams(transitions, jnp.array([[1.0, 0.0], [0.0, 3.0]]))
    random, optimal = tabular_mdp.episode_values(params, 2)
    assert (float(random), float(optimal)) == (1.5, 4.0)
    # A trial of 3 episodes of that one task (a sampler that keeps it): exact, no spread.
    env = TabularMDP(num_states=2, num_actions=2, horizon=2)
    refs = env.trial_references(lambda key, p: p, params, 3, jax.random.key(0), trials=5)
    assert [(r.name, r.total, r.stderr, r.regret) for r in refs] == [
        ("random", 4.5, 0.0, None),
        ("optimal (knows the MDP)", 12.0, 0.0, None),
    ]


def test_tabular_mdp_transition_frequencies():
    env = TabularMDP(num_states=3, num_actions=1)
    transitions = jnp.tile(jnp.array([0.2, 0.8, 0.0]), (3, 1, 1))
    params = env.default_params.replace(transitions=transitions)
    state = TabularMDPState(jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
    keys = jax.random.split(KEY, 20_000)
    step = jax.jit(jax.vmap(lambda k: _step(env, state, 0, params, k)[1].state))
    counts = np.bincount(np.asarray(step(keys)), minlength=3) / 20_000
    assert counts[2] == 0.0 and abs(counts[0] - 0.2) < 0.012  # standard error 0.0028


# ----------------------------------------------------------------------------- maze
def _cells(rows):
    """One-hot (wall, goal, empty) cells of a window written as strings of `#`, `G` and `.`."""
    code = {"#": [1, 0, 0], "G": [0, 1, 0], ".": [0, 0, 1]}
    return np.array([[code[c] for c in row] for row in rows], np.float32).reshape(-1)


def test_maze_view_walls_and_goal_by_hand():
    env = Maze(size=5, observe_position=True)
    walls = jnp.zeros((5, 5), bool).at[1, 1].set(True)
    params = env.default_params.replace(goal=jnp.array([0, 2]), walls=walls)
    state = MazeState(jnp.array([0, 1]), jnp.zeros((), jnp.int32))
    # The agent at (0, 1): the row above is outside the grid (walls), the goal is to its right
    # and the inner wall below it; then its position (0, 1) / (size - 1).
    window = _cells(["###", "..G", ".#."])
    np.testing.assert_array_equal(env._observation(state, params), [*window, 0.0, 0.25])
    # Down is the inner wall, up the border, left an open cell: blocked, blocked, moved;
    # every step costs 0.05.
    for action, cell in ((2, [0, 1]), (0, [0, 1]), (3, [0, 0])):
        obs, next_state, reward, terminated, truncated, _ = _step(env, state, action, params)
        np.testing.assert_array_equal(next_state.position, cell)
        np.testing.assert_allclose(reward, -0.05)
        assert not bool(terminated) and not bool(truncated) and int(next_state.time) == 1
    np.testing.assert_array_equal(obs[:27], _cells(["###", "#..", "#.#"]))  # at (0, 0)
    # Right reaches the goal: 1 - 0.05, terminated.
    obs, next_state, reward, terminated, truncated, _ = _step(env, state, 1, params)
    np.testing.assert_allclose(reward, 0.95)
    assert bool(terminated) and not bool(truncated)
    np.testing.assert_array_equal(obs, [*_cells(["###", ".G.", "#.."]), 0.0, 0.5])
    # By default the window alone: 3 x 3 cells of 3 channels.
    plain = Maze(size=5)
    assert plain.observation_space(params).shape == (27,)
    np.testing.assert_array_equal(plain._observation(state, params), window)


def test_maze_starts_and_goals_are_free_cells():
    env = Maze(size=5)
    walls = jnp.zeros((5, 5), bool).at[1, 1].set(True).at[3, 2].set(True)
    params = env.default_params.replace(goal=jnp.array([2, 2]), walls=walls)
    keys = jax.random.split(KEY, 3_000)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    starts = {tuple(cell) for cell in np.asarray(states.position).tolist()}
    free = {(r, c) for r in range(5) for c in range(5)} - {(1, 1), (3, 2)}
    assert starts == free - {(2, 2)}  # every free cell but the goal, never the goal
    tasks = jax.jit(jax.vmap(maze.sample_task, in_axes=(0, None)))(keys, params)
    assert {tuple(cell) for cell in np.asarray(tasks.goal).tolist()} == free


def test_maze_time_limit_truncates():
    env = Maze(size=3, max_steps=4)
    params = env.default_params  # goal (2, 2)
    state = MazeState(jnp.array([0, 0]), jnp.zeros((), jnp.int32))
    flags = []
    for _ in range(4):  # walking into the top wall
        _, state, reward, terminated, truncated, _ = _step(env, state, 0, params)
        flags.append((bool(terminated), bool(truncated)))
    assert flags == [(False, False)] * 3 + [(False, True)]
    # Reaching the goal on the last step reports both flags (as TimeLimit does).
    state = MazeState(jnp.array([1, 2]), jnp.array(3, jnp.int32))
    _, _, reward, terminated, truncated, _ = _step(env, state, 2, params)
    assert bool(terminated) and bool(truncated) and float(reward) == pytest.approx(0.95)
    assert env.max_episode_steps == 4 and Maze(size=5).max_episode_steps == 20


# ----------------------------------------------------------------------------- point robot
def test_point_robot_reward_clipping_and_truncation():
    env = PointRobot()
    params = env.default_params  # goal (0, 1)
    obs, state = env.reset(KEY, params)
    np.testing.assert_array_equal(obs, [0.0, 0.0])
    # Action (0.5, -0.3) is clipped to (0.1, -0.1); the reward is -||(0.1, -0.1) - (0, 1)||.
    obs, state, reward, terminated, truncated, info = _step(env, state, [0.5, -0.3], params)
    np.testing.assert_allclose(obs, [0.1, -0.1], rtol=1e-6)
    np.testing.assert_allclose(reward, -np.sqrt(0.01 + 1.21), rtol=1e-6)
    assert not bool(terminated) and not bool(truncated) and not bool(info["success"])
    # Sparse: 1 inside the radius 0.2 of the goal, 0 outside.
    near = PointRobotState(jnp.array([0.0, 0.75]), jnp.zeros((), jnp.int32))
    sparse = params.replace(sparse=True)
    _, _, reward, _, _, info = _step(env, near, [0.0, 0.1], sparse)  # distance 0.15
    assert float(reward) == 1.0 and bool(info["success"])
    _, _, reward, _, _, info = _step(env, near, [0.0, -0.1], sparse)  # distance 0.35
    assert float(reward) == 0.0 and not bool(info["success"])

    # 20 steps of (0.1, 0.1): truncated at the 20th only, never terminated; the position is
    # 20 * (0.1, 0.1) = (2, 2), the reward -||(2, 1)|| = -sqrt(5).
    def body(state, _):
        _, state, reward, terminated, truncated, _ = _step(env, state, [0.1, 0.1], params)
        return state, (reward, terminated, truncated)

    _, state = env.reset(KEY, params)
    state, (rewards, terminated, truncated) = jax.lax.scan(body, state, None, length=20)
    assert not np.any(terminated) and np.flatnonzero(truncated).tolist() == [19]
    np.testing.assert_allclose(rewards[-1], -np.sqrt(5.0), rtol=1e-5)


def test_point_robot_goals_on_the_upper_semicircle():
    env = PointRobot()
    keys = jax.random.split(KEY, 5_000)
    sample = jax.vmap(point_robot.sample_task, in_axes=(0, None))
    goals = np.asarray(sample(keys, env.default_params).goal)
    np.testing.assert_allclose(np.linalg.norm(goals, axis=1), 1.0, rtol=1e-6)
    angles = np.arctan2(goals[:, 1], goals[:, 0])
    assert angles.min() >= 0 and angles.max() <= np.pi
    assert abs(angles.mean() - np.pi / 2) < 0.05  # U[0, pi]: standard error 0.013
    fixed = env.default_params.replace(angle_low=np.pi / 4, angle_high=np.pi / 4)
    goal = point_robot.sample_task(KEY, fixed).goal
    np.testing.assert_allclose(goal, [np.sqrt(0.5), np.sqrt(0.5)], rtol=1e-6)


# ----------------------------------------------------------------------------- contract, input
FAMILIES = [
    pytest.param(bandits.BernoulliBandit(5), bandits.sample_uniform, id="duan_bandit"),
    pytest.param(bandits.BernoulliBandit(2), bandits.sample_paired, id="paired_bandit"),
    pytest.param(TabularMDP(num_states=4, num_actions=3), tabular_mdp.sample_task, id="mdp"),
    pytest.param(Maze(size=4), maze.sample_task, id="maze"),
    pytest.param(PointRobot(), point_robot.sample_task, id="point_robot"),
]


@pytest.mark.parametrize("env, sample", FAMILIES)
def test_each_family_follows_the_contract(env, sample):
    check_env(env)
    task = sample(KEY, env.default_params)
    check_env(env, task)
    env.check_params(task)
    # vmappable over keys and over params: a batch of tasks, each reset and stepped.
    keys = jax.random.split(KEY, 3)
    tasks = jax.vmap(sample, in_axes=(0, None))(keys, env.default_params)
    obs, states = jax.jit(jax.vmap(env.reset))(keys, tasks)
    actions = jax.vmap(env.action_space(task).sample)(keys)
    obs, *_ = jax.jit(jax.vmap(env.step))(keys, states, actions, tasks)
    assert obs.shape == (3, *env.observation_space(task).shape)


def test_bad_input_is_refused_naming_the_field():
    for k in (1, 0, 2.0, True):
        with pytest.raises(ValueError, match=r"num_arms=.*allowed: an integer >= 2"):
            bandits.BernoulliBandit(k)
    env = bandits.BernoulliBandit(5)
    _, state = env.reset(KEY)
    bad = env.default_params.replace(probs=jnp.array([0.1, 0.2, 1.5, 0.3, 0.4]))
    with pytest.raises(ValueError, match=r"params\.probs=.*allowed: values in \[0, 1\]"):
        env.reset(KEY, bad)
    with pytest.raises(ValueError, match=r"params\.p=.*allowed: values in \[0, 1\]"):
        env.step(KEY, state, jnp.asarray(0), env.default_params.replace(p=-0.1))
    # A probs leaf of the wrong shape is named at trace time, under jit and vmap, where the
    # values cannot be checked: shapes are static.
    short = env.default_params.replace(probs=jnp.full((3,), 0.5))
    with pytest.raises(ValueError, match=r"params\.probs of shape \(3,\); allowed: .*\(5,\)"):
        jax.jit(lambda p: env.step(KEY, state, jnp.asarray(0), p))(short)
    batch = env.default_params.replace(probs=jnp.full((4, 3), 0.5), p=jnp.full((4,), 0.1))
    with pytest.raises(ValueError, match=r"params\.probs of shape \(3,\)"):
        jax.vmap(lambda p: env.reset(KEY, p))(batch)
    with pytest.raises(ValueError, match=r"sample_paired: invalid params\.probs of shape \(5,\)"):
        bandits.sample_paired(KEY, env.default_params)
    robot = PointRobot()
    with pytest.raises(ValueError, match=r"params\.angle_high=0\.5.*>= angle_low"):
        robot.reset(KEY, robot.default_params.replace(angle_low=1.0, angle_high=0.5))
    with pytest.raises(ValueError, match=r"params\.goal of shape \(3,\)"):
        robot.reset(KEY, robot.default_params.replace(goal=jnp.zeros(3)))
    mdp = TabularMDP(num_states=3, num_actions=2)
    with pytest.raises(ValueError, match=r"params\.transitions=.*rows \[s, a, :\] sum to 1"):
        mdp.reset(KEY, mdp.default_params.replace(transitions=jnp.ones((3, 2, 3))))
    with pytest.raises(ValueError, match=r"params\.reward_means of shape \(2, 3\)"):
        mdp.reset(KEY, mdp.default_params.replace(reward_means=jnp.ones((2, 3))))
    grid = Maze(size=3)
    on_wall = grid.default_params.replace(walls=jnp.zeros((3, 3), bool).at[2, 2].set(True))
    with pytest.raises(ValueError, match=r"params\.walls.*goal \[2, 2\] on a free cell"):
        grid.reset(KEY, on_wall)
    with pytest.raises(ValueError, match=r"params\.goal=\[3, 0\].*cells in 0\.\.2"):
        grid.reset(KEY, grid.default_params.replace(goal=jnp.array([3, 0])))
    for bad_ctor, field in (
        (lambda: Maze(size=1), "size"),
        (lambda: Maze(view=2), "view"),
        (lambda: Maze(max_steps=0), "max_steps"),
        (lambda: PointRobot(max_steps=0), "max_steps"),
        (lambda: TabularMDP(horizon=0), "horizon"),
    ):
        with pytest.raises(ValueError, match=rf"invalid {field}="):
            bad_ctor()


# ----------------------------------------------------------------------------- meta/ names
def test_meta_names_build_rl2_trials():
    names = envs.names()
    for name, steps in (
        ("meta/bandit", 10),
        ("meta/two_arm_bandit", 100),
        ("meta/tabular_mdp", 100),
        ("meta/maze", 60),
        ("meta/point_robot", 40),
    ):
        assert name in names
        env, _ = envs.make(name)
        assert env.max_episode_steps == steps, name  # the longest trial; no TimeLimit around it
    env, params = envs.make("meta/bandit", num_arms=10)
    assert env.action_space(params).n == 10 and params.probs.shape == (10,)
    env, params = envs.make("meta/two_arm_bandit", p=0.25)
    assert params.p == 0.25
    # The trial's task comes from sample_paired with that p; the regret passes through.
    obs, state = env.reset(KEY, params)
    np.testing.assert_allclose(np.sort(np.asarray(state.task.probs)), [0.25, 0.75])
    _, _, _, _, _, info = env.step(KEY, state, jnp.asarray(0), params)
    expected = float(jnp.max(state.task.probs) - state.task.probs[0])
    np.testing.assert_allclose(info["regret"], expected, atol=1e-6)
    env, _ = envs.make("meta/maze", size=4, episodes_per_trial=2)
    assert env.unwrapped.size == 4 and env.max_episode_steps == 2 * 16
    for name in ("meta/bandit", "meta/two_arm_bandit"):
        with pytest.raises(ValueError, match=r"invalid pulls=0; allowed: an integer >= 1"):
            envs.make(name, pulls=0)
    with pytest.raises(ValueError, match=r"invalid episodes_per_trial=0"):
        envs.make("meta/maze", episodes_per_trial=0)
    with pytest.raises(ValueError, match=r"num_arms=1"):
        envs.make("meta/bandit", num_arms=1)
    with pytest.raises(ValueError, match=r"params\.p=1\.5"):
        envs.make("meta/two_arm_bandit", p=1.5)
    with pytest.raises(ValueError, match="max_episode_steps does not apply"):
        envs.make("meta/maze", max_episode_steps=10)
    with pytest.raises(ValueError, match="built-in"):
        envs.register("meta/bandit", bandits.BernoulliBandit)


def test_held_out_bandits_of_another_number_of_arms_are_refused_by_name(tmp_path, capsys):
    from rlsuite.app import cli

    # The five held-out bandits have 5 arms: asked for with 3, refused rather than skipped.
    message = (
        "invalid held_out=True with num_arms=3: the held-out bandits (one_good_arm, spread, "
        "two_close, all_low, all_high) have 5 arms; allowed: held_out=True with num_arms=5, or "
        "held_out=False"
    )
    with pytest.raises(ValueError) as refused:
        envs.make("meta/bandit", held_out=True, num_arms=3)
    assert str(refused.value) == message
    assert envs.make("meta/bandit", held_out=False, num_arms=3)[0].levels().held_out is None
    assert envs.make("meta/bandit", held_out=True)[0].levels().held_out is not None
    # From the command line: one line, before anything is compiled or written.
    out = tmp_path / "run"
    argv = ["train", "rl2", "--env", "meta/bandit", "--env-option", "held_out=true", "num_arms=3"]
    assert cli.main([*argv, "--out", str(out), "--no-progress"]) == 2
    printed = capsys.readouterr()
    assert printed.err == f"rlsuite train: error: {message}\n" and not printed.out
    assert not out.exists()
