"""The goal-conditioned family (`envs/goal/`): point_reach's steps by hand, its time limit, start
and goal distributions; the point mazes' layouts, starts and goals, walls that are never entered
and corridors that are (a plain-Python BFS path followed through the env); relabelling rewards;
jit and vmap; the goal contract and its check on broken environments."""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.goal import (
    GOAL_ENVS,
    LAYOUTS,
    GoalState,
    PointBigMaze,
    PointHardestMaze,
    PointMaze,
    PointReach,
    PointUMaze,
    check_goal_contract,
    maze_params,
    parse_layout,
)
from rlsuite.envs.goal.point_maze import cell_of
from rlsuite.envs.point_mass import PointMass

from rlsuite import envs
from rlsuite.environment.wrappers import TimeLimit

KEY = jax.random.key(0)
MAZES = [PointUMaze, PointBigMaze, PointHardestMaze]
DIRECTIONS = {(1, 0): [1.0, 0.0], (-1, 0): [-1.0, 0.0], (0, 1): [0.0, 1.0], (0, -1): [0.0, -1.0]}


def _reach_step(position, goal, action, params=None):
    env = PointReach()
    params = env.default_params if params is None else params
    state = GoalState(jnp.asarray(position, jnp.float32), jnp.asarray(goal, jnp.float32))
    return env.step_env(KEY, state, jnp.asarray(action, jnp.float32), params)


# ----------------------------------------------------------------------------- point_reach
def test_point_reach_moves_by_a_tenth_of_the_clipped_action():
    # x' = x + 0.1 * a: (0.2, -0.3) + 0.1 * (0.5, -1) = (0.25, -0.4).
    obs, state, reward, terminated, truncated, info = _reach_step(
        [0.2, -0.3], [-0.8, 0.8], [0.5, -1]
    )
    np.testing.assert_allclose(state.state, [0.25, -0.4], atol=1e-6)
    np.testing.assert_allclose(obs, [0.25, -0.4, -0.8, 0.8], atol=1e-6)
    assert float(reward) == 0.0 and not info["success"] and not terminated and not truncated
    # An action outside [-1, 1] is clipped first: (3, -7) moves as (1, -1).
    _, state, *_ = _reach_step([0.2, -0.3], [-0.8, 0.8], [3.0, -7.0])
    np.testing.assert_allclose(state.state, [0.3, -0.4], atol=1e-6)
    # At the border the position is clipped to the arena: 0.95 + 0.1 -> 1.0, -0.97 - 0.1 -> -1.0.
    _, state, *_ = _reach_step([0.95, -0.97], [0.0, 0.0], [1.0, -1.0])
    np.testing.assert_allclose(state.state, [1.0, -1.0], atol=1e-6)
    # step_size is a params field: 0.5 * (0.4, 0) from the origin.
    params = PointReach().default_params.replace(step_size=0.5)
    _, state, *_ = _reach_step([0.0, 0.0], [0.9, 0.9], [0.4, 0.0], params)
    np.testing.assert_allclose(state.state, [0.2, 0.0], atol=1e-6)


def test_point_reach_success_within_the_threshold_is_the_reward():
    # (0.15, 0) + 0.1 * (1, 0) = (0.25, 0): 0.05 from the goal (0.3, 0) < 0.1.
    _, state, reward, terminated, _, info = _reach_step([0.15, 0.0], [0.3, 0.0], [1.0, 0.0])
    assert bool(info["success"]) and float(reward) == 1.0 and not terminated
    np.testing.assert_allclose(info["achieved_goal"], [0.25, 0.0], atol=1e-6)
    np.testing.assert_allclose(info["desired_goal"], [0.3, 0.0])
    # (0.15, 0) + 0.1 * (-1, 0) = (0.05, 0): 0.25 away, no success.
    _, _, reward, _, _, info = _reach_step([0.15, 0.0], [0.3, 0.0], [-1.0, 0.0])
    assert not bool(info["success"]) and float(reward) == 0.0
    # The threshold lives in the params: 0.3 makes 0.25 a success.
    params = PointReach().default_params.replace(goal_threshold=0.3)
    _, _, reward, _, _, info = _reach_step([0.15, 0.0], [0.3, 0.0], [-1.0, 0.0], params)
    assert bool(info["success"]) and float(reward) == 1.0


def test_point_reach_truncates_at_the_50th_step_and_never_terminates():
    env, params = envs.make("goal/point_reach")
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 50
    obs0, state = env.reset(KEY, params)
    goal = obs0[2:]

    def step(carry, key):
        obs, state = carry
        action = jnp.clip(env.unwrapped.goal_of(obs) - obs[:2], -1.0, 1.0) * 10.0  # go to goal
        obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        return (obs, state), (obs, reward, terminated, truncated, info)

    keys = jax.random.split(jax.random.key(1), 60)
    _, (obs, reward, terminated, truncated, info) = jax.jit(
        lambda: jax.lax.scan(step, (obs0, state), keys)
    )()
    assert not np.asarray(terminated).any()
    assert np.flatnonzero(np.asarray(truncated)).tolist() == [49]  # the 50th step, then 50 more
    assert np.asarray(info["success"])[40:49].all()  # reached within 50 steps and stays
    np.testing.assert_array_equal(np.asarray(reward), np.asarray(info["success"], np.float32))
    # The 50th step resets: a new goal, and final_observation keeps the old one.
    np.testing.assert_allclose(info["final_observation"][49][2:], goal)
    assert not np.allclose(obs[49][2:], goal)
    np.testing.assert_allclose(obs[48][2:], goal)


def test_point_reach_starts_and_goals_are_uniform_over_the_arena():
    env = PointReach()
    keys = jax.random.split(KEY, 4000)
    obs, state = jax.vmap(env.reset)(keys)
    for x in (np.asarray(state.state), np.asarray(state.goal)):
        assert np.all(np.abs(x) <= 1.0)
        np.testing.assert_allclose(x.mean(0), [0.0, 0.0], atol=0.05)
        np.testing.assert_allclose(x.std(0), [1 / np.sqrt(3)] * 2, atol=0.03)  # U[-1, 1]
        assert (np.abs(x) > 0.9).any(1).mean() > 0.15  # the border is reached (0.19 expected)
    corr = np.corrcoef(np.asarray(state.state[:, 0]), np.asarray(state.goal[:, 0]))[0, 1]
    assert abs(corr) < 0.06  # start and goal drawn independently
    # The goal distribution lives in the params.
    params = env.default_params.replace(
        goal_low=jnp.array([0.5, -0.2]), goal_high=jnp.array([1.0, 0.0])
    )
    _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    goal = np.asarray(state.goal)
    assert goal[:, 0].min() >= 0.5 and goal[:, 1].max() <= 0.0 and goal[:, 1].min() >= -0.2
    assert np.abs(np.asarray(state.state)).max() > 0.95  # starts still over the arena


# ----------------------------------------------------------------------------- point mazes
def test_layouts_are_jaxgcrls():
    # Spot checks of the transcription (the full tables are in point_maze.py): sizes, the one
    # start, the number of goal cells.
    sizes = {name: (len(rows), len(rows[0])) for name, rows in LAYOUTS.items()}
    assert sizes == {
        "u_maze": (5, 5),
        "u_maze_eval": (5, 5),
        "big_maze": (8, 8),
        "big_maze_eval": (8, 8),
        "hardest_maze": (9, 12),
    }
    goals = {name: int(parse_layout(rows)[2].sum()) for name, rows in LAYOUTS.items()}
    assert goals == {
        "u_maze": 6,
        "u_maze_eval": 3,
        "big_maze": 25,
        "big_maze_eval": 10,
        "hardest_maze": 45,
    }
    for rows in LAYOUTS.values():
        walls, starts, _ = parse_layout(rows)
        assert np.argwhere(starts).tolist() == [[1, 1]]
        assert walls[0].all() and walls[-1].all() and walls[:, 0].all() and walls[:, -1].all()
    with pytest.raises(ValueError, match="not \\['x'\\]"):
        parse_layout(["###", "#x#", "###"])


def _bfs(walls, start):
    """Shortest cell paths from `start` to every free cell (plain Python)."""
    parents, queue = {start: None}, deque([start])
    while queue:
        cell = queue.popleft()
        for di, dj in DIRECTIONS:
            nxt = (cell[0] + di, cell[1] + dj)
            if not walls[nxt] and nxt not in parents:
                parents[nxt] = cell
                queue.append(nxt)
    return parents


@pytest.mark.parametrize("cls", MAZES, ids=lambda c: c.layout)
def test_maze_starts_at_r_and_draws_every_g_cell_uniformly(cls):
    env = cls()
    params = env.default_params
    walls, starts, goals = parse_layout(LAYOUTS[cls.layout])
    keys = jax.random.split(KEY, 4000)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    np.testing.assert_array_equal(np.asarray(state.state), np.tile([4.0, 4.0], (4000, 1)))
    goal = np.asarray(state.goal)
    cells = goal / 4.0
    np.testing.assert_array_equal(cells, np.round(cells))  # exactly at cell centres (i*4, j*4)
    cells = cells.astype(int)
    assert goals[cells[:, 0], cells[:, 1]].all()  # 'G' cells only
    counts = np.zeros(goals.shape)
    np.add.at(counts, (cells[:, 0], cells[:, 1]), 1)
    expected = 4000 / goals.sum()
    assert counts[goals].min() > 0.5 * expected and counts[goals].max() < 1.5 * expected
    # Every goal cell is reachable from the start through free cells.
    reachable = _bfs(walls, (1, 1))
    assert all(tuple(c) in reachable for c in np.argwhere(goals))


@pytest.mark.parametrize("cls", MAZES, ids=lambda c: c.layout)
def test_random_actions_never_enter_a_wall(cls):
    env, params = envs.make(f"goal/{next(k for k, v in GOAL_ENVS.items() if v is cls)}")
    walls = np.asarray(params.walls)

    def rollout(key):
        key_reset, key_steps = jax.random.split(key)
        _, state = env.reset(key_reset, params)

        def step(state, key):
            key_action, key_step = jax.random.split(key)
            action = jax.random.uniform(key_action, (2,), minval=-1.5, maxval=1.5)
            _, state, _, _, _, info = env.step(key_step, state, action, params)
            return state, info["achieved_goal"]

        return jax.lax.scan(step, state, jax.random.split(key_steps, 400))[1]

    positions = np.asarray(jax.jit(jax.vmap(rollout))(jax.random.split(KEY, 32)))
    cells = np.asarray(cell_of(jnp.asarray(positions), 4.0)).reshape(-1, 2)
    assert not walls[cells[:, 0], cells[:, 1]].any()
    # The agent's square (half-side 0.25) never overlaps a wall cell by more than 1e-3: the
    # rows and columns its sides span, found independently here.
    low = np.floor((positions - 0.25) / 4.0 + 0.5 + 1e-3 / 4).astype(int).reshape(-1, 2)
    high = np.ceil((positions + 0.25) / 4.0 - 0.5 - 1e-3 / 4).astype(int).reshape(-1, 2)
    assert ((high - low) <= 1).all()
    for di in (0, 1):
        for dj in (0, 1):
            i = np.minimum(low[:, 0] + di, high[:, 0])
            j = np.minimum(low[:, 1] + dj, high[:, 1])
            assert not walls[i, j].any()
    touching = (high - low == 0) & (np.abs(positions.reshape(-1, 2) % 4.0 - 2.0) < 0.26)
    assert touching.any()  # random actions do push against walls
    # And it explores: more than the start cell is visited.
    assert len({tuple(c) for c in cells}) > 3


def test_walls_stop_and_slide():
    env = PointUMaze()
    params = env.default_params
    state = GoalState(jnp.array([4.0, 4.0]), jnp.array([12.0, 4.0]))

    def run(state, action, n):
        for _ in range(n):
            _, state, *_ = env.step_env(KEY, state, jnp.asarray(action, jnp.float32), params)
        return state.state

    # Up (-x): the cell above (0, 1) is a wall, its face at x = 2: stopped at 2 + 0.25.
    np.testing.assert_allclose(run(state, [-1.0, 0.0], 10), [2.25, 4.0])
    # Diagonal (+x, +y): below (2, 1) and (2, 2) are walls (face x = 6), right (1, 2) is free:
    # x stops at 5.75 while y slides on, 0.5 a step: after 4 steps (5.75, 6.0).
    np.testing.assert_allclose(run(state, [1.0, 1.0], 4), [5.75, 6.0])
    # Left (-y): the wall (1, 0), face at y = 2.
    np.testing.assert_allclose(run(state, [0.0, -1.0], 10), [4.0, 2.25])
    # A step that would cross a whole free cell is impossible: step_size < cell_size is required.
    with pytest.raises(ValueError, match="params.step_size"):
        env.reset(KEY, params.replace(step_size=4.0))


def test_following_a_bfs_path_reaches_the_farthest_goal_of_the_hardest_maze():
    env = PointHardestMaze()
    walls, _, goals = parse_layout(LAYOUTS["hardest_maze"])
    parents = _bfs(walls, (1, 1))

    def depth(cell):
        return 0 if parents[cell] is None else 1 + depth(parents[cell])

    far = max((tuple(c) for c in np.argwhere(goals)), key=depth)
    path = [far]
    while parents[path[-1]] is not None:
        path.append(parents[path[-1]])
    path.reverse()
    # One cell (4 units) is 8 steps of 0.5 along the corridor's direction.
    actions = [DIRECTIONS[(b[0] - a[0], b[1] - a[1])] for a, b in zip(path, path[1:], strict=False)]
    actions = jnp.asarray(np.repeat(actions, 8, axis=0), jnp.float32)
    only_far = np.zeros_like(goals)
    only_far[far] = True
    params = env.default_params.replace(goal_cells=jnp.asarray(only_far))
    obs, state = env.reset(KEY, params)
    np.testing.assert_allclose(obs, [4.0, 4.0, 4.0 * far[0], 4.0 * far[1]])

    def step(state, action):
        _, state, reward, _, _, info = env.step_env(KEY, state, action, params)
        return state, (reward, info["success"])

    state, (reward, success) = jax.lax.scan(step, state, actions)
    assert depth(far) >= 15 and len(actions) == 8 * depth(far)
    np.testing.assert_allclose(state.state, [4.0 * far[0], 4.0 * far[1]], atol=1e-4)
    assert bool(success[-1]) and float(reward[-1]) == 1.0
    assert not np.asarray(success)[:-4].any()  # only the last steps are within 0.5


def test_maze_registry_defaults_and_eval_layouts():
    for name, cls in GOAL_ENVS.items():
        env, params = envs.make(f"goal/{name}")
        assert isinstance(env, TimeLimit) and isinstance(env.unwrapped, cls)
        assert f"goal/{name}" in envs.names()
        assert env.observation_space(params).shape == (4,)
    env, params = envs.make("goal/point_big_maze")
    assert env.max_episode_steps == 1000
    assert (float(params.cell_size), float(params.step_size), float(params.goal_threshold)) == (
        4.0,
        0.5,
        0.5,
    )
    # The evaluation goals of JaxGCRL's U maze: the bottom row only.
    env = PointMaze()
    params = maze_params("u_maze_eval")
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(KEY, 200), params)
    assert set(map(tuple, np.asarray(state.goal).tolist())) == {
        (12.0, 4.0),
        (12.0, 8.0),
        (12.0, 12.0),
    }
    # Mazes of one shape vmap over their params: U maze and its eval goals side by side.
    both = jax.tree.map(lambda *x: jnp.stack(x), maze_params("u_maze"), params)
    assert env.check_params(both) is both  # a batch is checked before mapping over it
    _, state = jax.vmap(env.reset, in_axes=(None, 0))(KEY, both)
    assert state.goal.shape == (2, 2)
    empty = both.replace(goal_cells=both.goal_cells.at[1].set(False))
    with pytest.raises(ValueError, match="params.goal_cells: 6 cells, 0 on walls"):
        env.check_params(empty)
    with pytest.raises(ValueError, match="unknown maze layout 'v_maze'"):
        maze_params("v_maze")


def test_invalid_maze_params_name_the_field():
    env = PointUMaze()
    params = env.default_params
    on_wall = params.goal_cells.at[0, 0].set(True)
    with pytest.raises(ValueError, match="params.goal_cells.*1 on walls"):
        env.reset(KEY, params.replace(goal_cells=on_wall))
    with pytest.raises(ValueError, match="params.start_cells: 0 cells"):
        env.reset(KEY, params.replace(start_cells=jnp.zeros((5, 5), bool)))
    with pytest.raises(ValueError, match="params.walls of int32"):
        env.reset(KEY, params.replace(walls=params.walls.astype(jnp.int32)))
    with pytest.raises(ValueError, match="params.goal_cells of bool\\(4, 4\\)"):
        env.reset(KEY, params.replace(goal_cells=jnp.zeros((4, 4), bool)))
    with pytest.raises(ValueError, match="params.radius"):
        env.reset(KEY, params.replace(radius=2.0))
    with pytest.raises(ValueError, match="params.goal_high.*>= goal_low"):
        PointReach().reset(
            KEY, PointReach().default_params.replace(goal_high=jnp.array([-2.0, 0.0]))
        )


# ----------------------------------------------------------------------------- the contract
@pytest.mark.parametrize("cls", [PointReach, *MAZES, PointMass], ids=lambda c: c.__name__)
def test_observation_is_state_then_goal_and_goal_indices_pick_the_achieved_goal(cls):
    env = cls()
    params = env.default_params
    obs, state = env.reset(KEY, params)
    action = jnp.array([0.7, -0.4])
    next_obs, next_state, reward, _, _, info = env.step_env(KEY, state, action, params)
    vector = (
        jnp.concatenate([next_state.position, next_state.velocity])
        if cls is PointMass
        else next_state.state
    )
    np.testing.assert_array_equal(next_obs, jnp.concatenate([vector, next_state.goal]))
    np.testing.assert_array_equal(env.state_of(next_obs), vector)
    np.testing.assert_array_equal(env.goal_of(next_obs), next_state.goal)
    np.testing.assert_array_equal(env.achieved_of(next_obs), info["achieved_goal"])
    np.testing.assert_array_equal(env.achieved_of(vector), vector[:2])
    np.testing.assert_array_equal(info["desired_goal"], next_state.goal)
    assert env.state_dim + len(env.goal_indices) == next_obs.shape[0]
    assert info["success"].dtype == jnp.bool_ and info["success"].shape == ()
    assert float(reward) == float(
        env.compute_reward(info["achieved_goal"], info["desired_goal"], params)
    )
    check_goal_contract(env, params, key=jax.random.key(3))


def test_compute_reward_is_batched_over_leading_axes():
    env = PointReach()
    params = env.default_params
    desired = jnp.zeros((2, 3, 2))
    # Distances 0, 0.05, 0.099 | 0.1, 0.2, 1.5: < 0.1 is a success.
    achieved = jnp.array(
        [
            [[0.0, 0.0], [0.03, 0.04], [0.099, 0.0]],
            [[0.0, 0.1], [0.12, 0.16], [0.9, 1.2]],
        ]
    )
    reward = env.compute_reward(achieved, desired, params)
    assert reward.shape == (2, 3) and reward.dtype == jnp.float32
    np.testing.assert_array_equal(reward, [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    # Relabelling: each achieved goal rewards itself; the maze's threshold is 0.5.
    maze = PointBigMaze()
    points = jax.random.uniform(KEY, (7, 2), maxval=30.0)
    np.testing.assert_array_equal(maze.compute_reward(points, points, maze.default_params), 1.0)
    np.testing.assert_array_equal(
        maze.compute_reward(points, points + jnp.array([0.3, 0.3]), maze.default_params), 1.0
    )
    np.testing.assert_array_equal(
        maze.compute_reward(points, points + jnp.array([0.3, 0.5]), maze.default_params), 0.0
    )
    # Through the registry's TimeLimit and under jit.
    wrapped, params = envs.make("goal/point_reach")
    reward = jax.jit(wrapped.compute_reward)(achieved, desired, params)
    np.testing.assert_array_equal(reward, [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("name", ["goal/point_reach", "goal/point_hardest_maze"])
def test_jit_and_vmap_over_keys_match_single_calls(name):
    env, params = envs.make(name)
    keys = jax.random.split(jax.random.key(5), 8)
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    actions = jax.random.uniform(jax.random.key(6), (8, 2), minval=-1.0, maxval=1.0)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    next_obs, _, reward, terminated, truncated, info = step(keys, state, actions, params)
    assert next_obs.shape == (8, 4) and reward.shape == (8,) and info["success"].shape == (8,)
    for i in (0, 5):
        one_obs, one_state = env.reset(keys[i], params)
        np.testing.assert_allclose(obs[i], one_obs)
        one = env.step(keys[i], one_state, actions[i], params)
        np.testing.assert_allclose(next_obs[i], one[0], atol=1e-6)
        assert float(reward[i]) == float(one[2])
    assert not np.asarray(terminated).any() and not np.asarray(truncated).any()
    assert len({tuple(g) for g in np.asarray(obs[:, 2:]).tolist()}) > 1  # keys differ, goals too


class _OutsideTheState(PointReach):
    goal_indices = (0, 2)


class _ShortGoal(PointReach):
    goal_indices = (0,)


class _WrongStateDim(PointReach):
    state_dim = 3


class _VelocityAsGoal(PointMass):
    goal_indices = (2, 3)  # in range and of the right length, but info reports the position


class _NoThreshold(PointMaze):
    def goal_threshold(self, params):
        return params.success_radius


def test_check_goal_contract_names_the_broken_field():
    for env in (PointReach(), PointUMaze(), PointMass(), envs.make("goal/point_u_maze")[0]):
        check_goal_contract(env)
    with pytest.raises(ValueError, match=r"goal_indices=\(0, 2\) fall outside the state.*\[2\]"):
        check_goal_contract(_OutsideTheState())
    with pytest.raises(ValueError, match=r"goal_indices=\(0,\) do not match the goal's length"):
        check_goal_contract(_ShortGoal())
    with pytest.raises(ValueError, match=r"observation has shape \(4,\).*check state_dim"):
        check_goal_contract(_WrongStateDim())
    check_goal_contract(_VelocityAsGoal())  # shapes alone cannot tell
    with pytest.raises(ValueError, match=r"goal_indices=\(2, 3\) pick"):
        check_goal_contract(_VelocityAsGoal(), key=jax.random.key(0))
    with pytest.raises(ValueError, match="success threshold is not in params"):
        check_goal_contract(_NoThreshold())
    # An environment with no goal at all is told so, naming who needs one.
    with pytest.raises(ValueError, match=r"^crl trains on a goal environment .*; Pendulum is not$"):
        check_goal_contract(envs.make("pendulum")[0], owner="crl")
    for bad in (0, True, 2.0):
        broken = type("Broken", (PointReach,), {"state_dim": bad})()
        with pytest.raises(ValueError, match="invalid state_dim"):
            check_goal_contract(broken)
    for bad in ((), [0, 1], (0, 1.0)):
        broken = type("Broken", (PointReach,), {"goal_indices": bad})()
        with pytest.raises(ValueError, match="invalid goal_indices"):
            check_goal_contract(broken)
