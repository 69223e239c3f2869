"""The ant goal environments on MJX (`envs/goal/ant.py`): the goal contract, the state layout
(torso x, y as the achieved goal, checked against the torso's body position), goals on the
circle of radius 10 and at the 'G' cell centres, starts at the 'R' cell, the wall geoms in the
model and their contacts with the torso and the feet, termination by the torso height apart from
the `TimeLimit` truncation, jit and vmap over keys and params, bad params named.

MJX compiles slowly on a CPU, so each of `goal/ant` and `goal/ant_u_maze` is built once per
module (with a time limit of 3) with one jitted rollout, vmapped over keys and params, that every
test calls: a reset and 4 steps. The big and hardest mazes are checked without running MJX
(their models, their start and goal samplers)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.goal import (
    LAYOUTS,
    AntBigMaze,
    AntGoal,
    AntHardestMaze,
    AntUMaze,
    check_goal_contract,
    parse_layout,
)
from rlsuite.envs.goal.ant import MAX_WALL_PAIRS

from rlsuite import envs
from rlsuite.environment.wrappers import TimeLimit

# MJX's ant compiles for tens of seconds on a CPU: the file is slow, as brax's are.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

KEY = jax.random.key(0)
LIMIT = 3  # the time limit of the fixtures' environments
N = 8  # environments per rollout
ACTIONS = np.tile(np.array([[0.5, -0.5, 0.3, -0.3, 0.2, -0.2, 0.4, -0.4]], np.float32), (4, 1))
MAZES = {"u_maze": AntUMaze, "big_maze": AntBigMaze, "hardest_maze": AntHardestMaze}


def _batch(params, **fields):
    """`params` with every leaf given a leading axis of N (one dtype per field, whatever the
    values, so that one compiled rollout serves them all); `fields` set per environment."""
    array = lambda x: jnp.asarray(np.asarray(x))  # noqa: E731 (never weakly typed)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(array(x), (N, *np.shape(x))), params)
    fields = {k: jnp.broadcast_to(array(np.float32(v)), (N,)) for k, v in fields.items()}
    return batch.replace(**fields)


def _rollout(env):
    """`run(keys [N], params [N], actions [T, 8])`: per environment a reset, then `env.step`
    (auto-reset) per action; returns the reset observation [N, 31], and per step [N, T] the
    observation, reward, terminated, truncated, info and the torso's body position [N, T, 3]."""

    def run(key, params, actions):
        key_reset, key_steps = jax.random.split(key)
        obs, state = env.reset(key_reset, params)

        def body(state, xs):
            key, action = xs
            obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
            torso = state.env_state.pipeline_state.x.pos[0]
            return state, (obs, reward, terminated, truncated, info, torso)

        keys = jax.random.split(key_steps, actions.shape[0])
        return obs, *jax.lax.scan(body, state, (keys, actions))[1]

    compiled = jax.jit(jax.vmap(run, in_axes=(0, 0, None)))
    return lambda keys, params, actions=ACTIONS: jax.tree.map(
        np.asarray, compiled(keys, params, actions)
    )


@pytest.fixture(scope="module")
def ant():
    """`(env, params, run, out)`: goal/ant with episodes of 3 steps, its rollout, and the
    rollout of the default params from N keys."""
    env, params = envs.make("goal/ant", max_episode_steps=LIMIT)
    run = _rollout(env)
    return env, params, run, run(jax.random.split(KEY, N), _batch(params))


@pytest.fixture(scope="module")
def models():
    """The three mazes and the plain ant, built (not compiled)."""
    return {"ant": AntGoal(), **{layout: cls() for layout, cls in MAZES.items()}}


@pytest.fixture(scope="module")
def u_maze():
    env, params = envs.make("goal/ant_u_maze", max_episode_steps=LIMIT)
    run = _rollout(env)
    return env, params, run, run(jax.random.split(KEY, N), _batch(params))


def _cell_centres(mask):
    return {(4.0 * i, 4.0 * j) for i, j in np.argwhere(mask)}


# ----------------------------------------------------------------------------- contract, layout
def test_registry_defaults_and_the_goal_contract():
    for name, cls in (("goal/ant", AntGoal), *((f"goal/ant_{m}", c) for m, c in MAZES.items())):
        assert name in envs.names()
        env, params = envs.make(name)
        assert isinstance(env, TimeLimit) and env.max_episode_steps == 1000
        assert type(env.unwrapped) is cls
        assert env.unwrapped.state_dim == 29 and env.unwrapped.goal_indices == (0, 1)
        assert env.observation_space(params).shape == (31,)
        assert env.action_space(params).shape == (8,)
        assert (params.goal_threshold, params.healthy_z_low, params.healthy_z_high) == (
            0.5,
            0.2,
            1.0,
        )
        check_goal_contract(env, params)  # shapes only (traced)
    assert envs.make("goal/ant")[1].goal_distance == 10.0


def test_goal_contract_values_on_the_ant(ant):
    env, params, _, _ = ant
    check_goal_contract(env, params, jax.random.key(1))  # one reset and step run


def test_goal_contract_values_in_the_u_maze(u_maze):
    env, params, _, _ = u_maze
    check_goal_contract(env, params, jax.random.key(1))


def test_observation_is_q_qd_goal_and_the_goal_indices_pick_the_torso_xy(ant):
    env, params, _, (obs0, obs, reward, terminated, truncated, info, torso) = ant
    assert obs0.shape == (N, 31) and obs.shape == (N, 4, 31) and obs.dtype == np.float32
    live = slice(0, LIMIT - 1)  # steps before the truncation's auto-reset
    # The torso's body position is obs[0:3]: x, y the achieved goal, z the height. (MJX's xpos
    # is the position at the start of the control step's last substep of 0.01 s: it lags by one
    # substep, at most 0.03 here, where the torso moves by 0.1 or more per control step.)
    np.testing.assert_allclose(obs[:, live, 0:3], torso[:, live], atol=0.03)
    assert np.abs(np.diff(torso[:, live, 0:2], axis=1)).max() > 0.1
    # info is the step's, before an auto-reset: of the pre-reset observation.
    final = info["final_observation"]
    np.testing.assert_array_equal(final[:, live], obs[:, live])
    np.testing.assert_array_equal(info["achieved_goal"], final[..., 0:2])
    np.testing.assert_array_equal(info["desired_goal"], final[..., 29:31])
    # The torso's quaternion is unit; the hinges' angles lie in their ranges (+- 70 degrees).
    np.testing.assert_allclose(np.linalg.norm(obs[..., 3:7], axis=-1), 1.0, atol=1e-4)
    assert np.abs(obs[..., 7:15]).max() < np.deg2rad(75)
    # The velocities (15:29): the torso's linear velocity is its displacement over dt = 0.05,
    # roughly (the velocity is the last MJX substep's, the displacement the control step's).
    displacement = np.diff(obs[:, live, 0:3], axis=1)[:, 0] / 0.05
    assert np.abs(obs[:, 1, 15:18] - displacement).max() < 0.5 * np.abs(displacement).max() + 0.1
    assert np.abs(obs[..., 15:29]).max() > 0.1  # velocities, not zeros


def test_goals_lie_on_the_circle_of_radius_10_around_the_start(ant):
    env, params, run, (obs0, *_) = ant
    np.testing.assert_array_equal(obs0[:, 0:2], 0.0)  # the torso starts at the origin exactly
    np.testing.assert_allclose(np.linalg.norm(obs0[:, 29:31], axis=1), 10.0, rtol=1e-6)
    angle = np.arctan2(obs0[:, 30], obs0[:, 29])
    assert np.ptp(angle) > np.pi / 2 and len(np.unique(angle)) == N
    # The radius is a params field: vmapped params give each environment its own.
    radius = np.where(np.arange(N) % 2 == 0, 10.0, 3.0)
    obs0 = run(jax.random.split(KEY, N), _batch(params, goal_distance=radius))[0]
    np.testing.assert_allclose(np.linalg.norm(obs0[:, 29:31], axis=1), radius, rtol=1e-6)
    # The start height and the pose: Brax's initial pose plus noise of at most 0.1.
    init_q = np.asarray(env.unwrapped.brax_env.sys.init_q)
    assert np.abs(obs0[:, 2:15] - init_q[2:]).max() <= 0.1 + 1e-6


def test_same_key_same_rollout_other_keys_other_goals(ant):
    env, params, run, out = ant
    again = run(jax.random.split(KEY, N), _batch(params))
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    other = run(jax.random.split(jax.random.key(7), N), _batch(params))
    assert not np.isclose(other[0][:, 29:31], out[0][:, 29:31]).all(axis=1).any()


def test_reward_is_the_sparse_success_of_the_torso_xy(ant):
    env, params, run, (_, _, reward, _, _, info, _) = ant
    obs = info["final_observation"]  # the step's, before an auto-reset
    distance = np.linalg.norm(obs[..., 0:2] - obs[..., 29:31], axis=-1)
    np.testing.assert_allclose(info["distance"], distance, rtol=1e-5)
    assert (distance > 9).all() and not reward.any() and not info["success"].any()
    # A threshold above the distance makes every step a success (and the reward 1).
    big = run(jax.random.split(KEY, N), _batch(params, goal_threshold=10.5))
    assert big[5]["success"].all() and (big[2] == 1.0).all()
    relabelled = env.unwrapped.compute_reward(info["achieved_goal"], obs[..., 0:2], params)
    assert relabelled.shape == (N, 4) and (np.asarray(relabelled) == 1.0).all()


# ----------------------------------------------------------------------------- episode ends
def test_termination_by_the_torso_height_and_truncation_at_the_limit(ant):
    env, params, run, (obs0, obs, reward, terminated, truncated, info, torso) = ant
    # Default params: the torso stays within [0.2, 1.0], so only the time limit (3) ends it.
    assert (torso[:, : LIMIT - 1, 2] > 0.2).all() and (torso[:, : LIMIT - 1, 2] < 1.0).all()
    assert not terminated.any()
    np.testing.assert_array_equal(truncated, np.tile([False, False, True, False], (N, 1)))
    # At the truncation the returned observation starts a new episode (the origin, a new goal);
    # the pre-reset one is info's final_observation, in the old goal's episode.
    final = info["final_observation"][:, LIMIT - 1]
    np.testing.assert_array_equal(final[:, 29:31], obs0[:, 29:31])
    assert (np.abs(final[:, 0:2]) > 0).any(axis=1).all()
    np.testing.assert_array_equal(obs[:, LIMIT - 1, 0:2], 0.0)
    assert not np.isclose(obs[:, LIMIT - 1, 29:31], obs0[:, 29:31]).all(axis=1).any()
    assert envs.make("goal/ant")[0].max_episode_steps == 1000

    # A healthy range below the start height (about 0.55) or above it: terminated at once
    # (and not truncated); the environments that keep the default range run on.
    for low, high in ((0.2, 0.3), (0.8, 1.0)):
        lows = np.where(np.arange(N) < N // 2, low, 0.2)
        highs = np.where(np.arange(N) < N // 2, high, 1.0)
        out = run(
            jax.random.split(KEY, N), _batch(params, healthy_z_low=lows, healthy_z_high=highs)
        )
        _, _, _, terminated, truncated, info, _ = out
        assert terminated[: N // 2, 0].all() and not truncated[: N // 2, 0].any()
        height = info["final_observation"][: N // 2, 0, 2]
        assert ((height < low) | (height > high)).all()
        assert not terminated[N // 2 :].any()


# ----------------------------------------------------------------------------- mazes
def test_maze_starts_at_the_r_cell_and_goals_at_g_cell_centres(u_maze, models):
    env, params, run, (obs0, obs, reward, terminated, truncated, info, torso) = u_maze
    walls, starts, goals = parse_layout(LAYOUTS["u_maze"])
    np.testing.assert_array_equal(params.start_cells, starts)
    np.testing.assert_array_equal(params.goal_cells, goals)
    np.testing.assert_array_equal(obs0[:, 0:2], np.tile([4.0, 4.0], (N, 1)))  # 'R' at (1, 1)
    assert set(map(tuple, obs0[:, 29:31].tolist())) <= _cell_centres(goals)
    assert not terminated.any()
    np.testing.assert_array_equal(truncated, np.tile([False, False, True, False], (N, 1)))
    # The samplers of every layout: the 'R' centre, and every 'G' centre, uniformly.
    for layout in MAZES:
        walls, starts, goals = parse_layout(LAYOUTS[layout])
        maze = models[layout]
        params = maze.default_params
        keys = jax.random.split(KEY, 4000)
        drawn = np.asarray(jax.vmap(maze.sample_goal, in_axes=(0, None))(keys, params))
        centres, counts = np.unique(drawn, axis=0, return_counts=True)
        assert set(map(tuple, centres.tolist())) == _cell_centres(goals)
        expected = 4000 / goals.sum()
        assert counts.min() > 0.5 * expected and counts.max() < 1.5 * expected
        start = np.asarray(jax.vmap(maze.sample_start, in_axes=(0, None))(keys[:10], params))
        assert set(map(tuple, start.tolist())) == _cell_centres(starts) == {(4.0, 4.0)}
    # The evaluation goals of the same maze, given as params (the walls are the same).
    eval_goals = parse_layout(LAYOUTS["u_maze_eval"])[2]
    eval_params = _batch(env.unwrapped.default_params.replace(goal_cells=jnp.asarray(eval_goals)))
    obs0 = run(jax.random.split(KEY, N), eval_params)[0]
    assert set(map(tuple, obs0[:, 29:31].tolist())) <= _cell_centres(eval_goals)


@pytest.mark.parametrize("layout", list(MAZES))
def test_wall_geoms_sit_at_the_wall_cells(layout, models):
    maze = models[layout]
    walls = parse_layout(LAYOUTS[layout])[0]
    model = maze.brax_env.sys.mj_model
    names = [model.geom(g).name for g in range(model.ngeom)]
    ids = [g for g, name in enumerate(names) if name.startswith("wall_")]
    assert len(ids) == walls.sum() and model.ngeom == 18 + walls.sum()  # Brax's ant: 18 geoms
    expected = {(4.0 * i, 4.0 * j, 1.0) for i, j in np.argwhere(walls)}
    assert {tuple(np.round(model.geom_pos[g], 6).tolist()) for g in ids} == expected
    for g in ids:
        i, j = map(int, names[g].split("_")[1:])
        assert walls[i, j] and tuple(model.geom_pos[g]) == (4.0 * i, 4.0 * j, 1.0)
        np.testing.assert_array_equal(model.geom_size[g], [2.0, 2.0, 1.0])
        assert model.geom_type[g] == 6  # a box
    # The MJX model that steps is the walled one, with Brax's MJX solver options.
    sys = maze.brax_env.sys
    np.testing.assert_array_equal(np.asarray(sys.geom_pos)[ids], model.geom_pos[ids])
    plain = models["ant"].brax_env.sys
    assert (sys.opt.iterations, sys.opt.ls_iterations) == (plain.opt.iterations, 4)
    assert sys.opt.solver == plain.opt.solver and sys.opt.disableflags == plain.opt.disableflags
    assert plain.mj_model.ngeom == 18  # no walls in goal/ant


def test_walls_touch_the_torso_and_the_feet(u_maze):
    """MJX contacts of the torso placed against the wall at (0, 4), in the corner of the walls
    at (0, 4) and (4, 0), and at the start cell's centre (no wall within reach)."""
    env, *_ = u_maze
    brax_env = env.unwrapped.brax_env
    model = brax_env.sys.mj_model
    geom = {model.geom(g).name: g for g in range(model.ngeom)}
    feet = {geom[n] for n in ("left_foot_geom", "right_foot_geom", "third_foot_geom")}
    feet |= {geom["fourth_foot_geom"]}
    torso = geom["torso_geom"]
    places = np.array([[2.2, 4.0], [2.2, 2.2], [4.0, 4.0]], np.float32)
    q = jnp.tile(brax_env.sys.init_q, (3, 1)).at[:, :2].set(places)

    def contacts(q):
        data = brax_env.pipeline_init(q, jnp.zeros(brax_env.sys.qd_size()))
        return data._impl.contact.geom, data._impl.contact.dist

    pairs, dist = map(np.asarray, jax.jit(jax.vmap(contacts))(q))
    assert pairs.shape[1] == 4 + MAX_WALL_PAIRS  # the feet on the floor, the nearest wall pairs

    def touching(k):
        return {tuple(sorted(p)) for p, d in zip(pairs[k], dist[k], strict=True) if d < 0}

    side, corner, centre = (touching(k) for k in range(3))
    assert tuple(sorted((torso, geom["wall_0_1"]))) in side
    assert any(tuple(sorted((foot, geom["wall_0_1"]))) in side for foot in feet)
    assert {tuple(sorted((torso, geom[w]))) for w in ("wall_0_1", "wall_1_0")} <= corner
    walls = {g for n, g in geom.items() if n.startswith("wall_")}
    assert not any(set(p) & walls for p in centre)


# ----------------------------------------------------------------------------- bad input
def test_bad_params_are_named(ant, u_maze):
    env, params, _, _ = ant
    cases = {
        r"params\.goal_threshold=0\.0; allowed: .*> 0": dict(goal_threshold=0.0),
        r"params\.goal_distance=-1\.0; allowed: .*> 0": dict(goal_distance=-1.0),
        r"params\.reset_noise=-0\.1; allowed: .*>= 0": dict(reset_noise=-0.1),
        r"params\.healthy_z_high=0\.1; allowed: .*> healthy_z_low": dict(healthy_z_high=0.1),
        r"params\.healthy_z_low=nan; allowed: .*finite": dict(healthy_z_low=float("nan")),
    }
    for message, fields in cases.items():
        with pytest.raises(ValueError, match=message):
            env.check_params(params.replace(**fields))
    with pytest.raises(ValueError, match=r"AntGoal: invalid params\.goal_distance=0\.0"):
        envs.make("goal/ant", goal_distance=0.0)
    maze, maze_params = u_maze[:2]
    walls, starts, goals = parse_layout(LAYOUTS["u_maze"])
    with pytest.raises(ValueError, match=rf"params\.goal_cells: {goals.sum() + 1} cells, 1 on wal"):
        maze.check_params(maze_params.replace(goal_cells=jnp.asarray(goals).at[0, 0].set(True)))
    with pytest.raises(ValueError, match=r"params\.start_cells: 0 cells"):
        maze.check_params(maze_params.replace(start_cells=jnp.zeros_like(starts)))
    with pytest.raises(ValueError, match=r"params\.goal_cells of int32\(5, 5\); allowed: a bool"):
        maze.check_params(maze_params.replace(goal_cells=jnp.asarray(goals, jnp.int32)))
    with pytest.raises(ValueError, match=r"params\.goal_cells of bool\(8, 8\); .*shape \(5, 5\)"):
        maze.check_params(maze_params.replace(goal_cells=jnp.ones((8, 8), bool)))
    with pytest.raises(ValueError, match=r"unknown brax backend 'nope'; allowed: mjx"):
        AntGoal(backend="nope")
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['layout'\]"):
        envs.make("goal/ant_u_maze", layout="big_maze")
