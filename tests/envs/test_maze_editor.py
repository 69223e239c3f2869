"""PAIRED's maze level editor (`envs/maze/editor.py`): hand-written edit sequences and their
levels, episode ends, the rules for a goal or start on a wall or the start on the goal, random
edits always well formed and keyed, the observation against the level so far, jit and vmap, bad
input, the registry, the finished levels played by `Maze`, and a PPO run on the editor."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.maze import (
    EditorState,
    Level,
    Maze,
    MazeEditor,
    check_level,
    level_hash,
    level_of,
    pad,
    params_for_levels,
    well_formed,
)

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.loop import driver

pytestmark = pytest.mark.timeout(300)
KEY = jax.random.key(0)
ARROWS = ">v<^"  # agent_dir 0 right, 1 down, 2 left, 3 up
SMALL = MazeEditor(3, 3, n_walls=2, noise_dim=4)  # cell index = y * 3 + x


def _episode(env, key, actions):
    """One episode through `step_without_reset` (no auto-reset): the observations [T + 1] (the
    reset's first), the states [T + 1] (the reset's first), rewards, terminated, truncated and
    infos [T]."""
    key_reset, key_steps = jax.random.split(key)
    obs0, state0 = env.reset(key_reset)

    def body(state, inputs):
        key, action = inputs
        obs, state, reward, term, trunc, info = env.step_without_reset(key, state, action)
        return state, (obs, state, reward, term, trunc, info)

    keys = jax.random.split(key_steps, actions.shape[0])
    _, (obs, states, reward, term, trunc, info) = jax.lax.scan(body, state0, (keys, actions))
    stack = lambda a, b: jnp.concatenate([a[None], b])  # noqa: E731
    return stack(obs0, obs), jax.tree.map(stack, state0, states), reward, term, trunc, info


EPISODE = jax.jit(_episode, static_argnums=0)


def _random_episode(env, key):
    """An episode of uniformly random cell indices drawn from `key`."""
    key_actions, key_episode = jax.random.split(key)
    cells = env.height * env.width
    actions = jax.random.randint(key_actions, (env.episode_length,), 0, cells)
    return _episode(env, key_episode, actions)


RANDOM_EPISODES = jax.jit(jax.vmap(_random_episode, in_axes=(None, 0)), static_argnums=0)


def _last(tree):
    """The last step of one episode's states [T + 1, ...]."""
    return jax.tree.map(lambda x: x[-1], tree)


def _finals(tree):
    """The last step of a batch of episodes' states [N, T + 1, ...]."""
    return jax.tree.map(lambda x: x[:, -1], tree)


def _finished(env, actions, key=KEY) -> Level:
    _, states, *_ = EPISODE(env, key, jnp.asarray(actions, jnp.int32))
    return level_of(_last(states))


def _with_arrow(rows: str, level: Level) -> str:
    """`rows` with `?` replaced by the arrow of the level's (random) start direction."""
    return rows.replace("?", ARROWS[int(level.agent_dir)])


# ----------------------------------------------------------------------------- hand-written edits
def test_a_hand_written_sequence_gives_its_level_and_ends_after_n_walls_plus_two_steps():
    # Walls at cells 1 = (x, y) (1, 0) and 4 = (1, 1), the goal at 8 = (2, 2), the start at
    # 6 = (0, 2); the direction is drawn from the last step's key.
    obs, states, reward, term, trunc, info = EPISODE(SMALL, KEY, jnp.array([1, 4, 8, 6]))
    level = level_of(_last(states))
    assert level.to_str() == _with_arrow(".#.\n.#.\n?.G", level)
    assert bool(well_formed(level))
    assert np.asarray(states.time).tolist() == [0, 1, 2, 3, 4]
    assert np.asarray(term).tolist() == [False, False, False, True]  # n_walls + 2 = 4 steps
    assert not np.asarray(trunc).any() and not np.asarray(reward).any()  # rewards are all 0
    assert _last(info["level"]).to_str() == level.to_str()  # info's level at the last step
    # The level so far: goal and start (-1, -1) until placed.
    assert np.asarray(states.level.goal_pos).tolist() == [[-1, -1]] * 3 + [[2, 2]] * 2
    assert np.asarray(states.level.agent_pos).tolist() == [[-1, -1]] * 4 + [[0, 2]]
    assert np.asarray(states.level.wall_map).sum(axis=(1, 2)).tolist() == [0, 1, 2, 2, 2]


def test_repeated_walls_and_a_goal_or_start_on_a_wall():
    # A wall placed twice on cell 4 is one wall; goal at 0 = (0, 0), start at 8 = (2, 2).
    level = _finished(SMALL, [4, 4, 0, 8])
    assert level.to_str() == _with_arrow("G..\n.#.\n..?", level)
    # Walls at 3 = (0, 1) and 5 = (2, 1); the goal on 5 and the start on 3 remove them.
    level = _finished(SMALL, [3, 5, 5, 3])
    assert level.to_str() == _with_arrow("...\n?.G\n...", level)
    # Cell indices outside [0, 9) are clipped: walls at -5 -> 0 and 100 -> 8, the goal at
    # 7 = (1, 2), the start at 3 = (0, 1).
    level = _finished(SMALL, [-5, 100, 7, 3])
    assert level.to_str() == _with_arrow("#..\n?..\n.G#", level)


def test_the_start_chosen_on_the_goal_goes_to_a_random_free_cell():
    # Walls at 0 and 1, the goal at 8, the start asked at 8: it goes to one of the free cells
    # 2..7 (not a wall, not the goal), uniformly (1/6 each), and the walls stay.
    keys = jax.random.split(jax.random.key(1), 600)
    actions = jnp.broadcast_to(jnp.array([0, 1, 8, 8]), (600, 4))
    run = jax.jit(jax.vmap(_episode, in_axes=(None, 0, 0)), static_argnums=0)
    _, states, *_ = run(SMALL, keys, actions)
    levels = level_of(_finals(states))
    start = np.asarray(levels.agent_pos[:, 1] * 3 + levels.agent_pos[:, 0])
    assert set(start.tolist()) == {2, 3, 4, 5, 6, 7}
    np.testing.assert_allclose(np.bincount(start, minlength=9)[2:8] / 600, 1 / 6, atol=0.05)
    assert np.asarray(levels.wall_map)[:, 0, :2].all() and np.asarray(levels.wall_map).sum() == 1200
    assert bool(jax.vmap(well_formed)(levels).all())
    directions = np.bincount(np.asarray(levels.agent_dir), minlength=4) / 600
    np.testing.assert_allclose(directions, 0.25, atol=0.06)  # uniform start direction
    # Where every other cell is a wall, the start goes to one of them and removes its wall:
    # 2 x 2, walls at 0, 1, 2, the goal at 3, the start asked at 3 -> cell 0, 1 or 2.
    tiny = MazeEditor(2, 2, n_walls=3, noise_dim=0)
    _, states, *_ = run(tiny, keys[:300], jnp.broadcast_to(jnp.array([0, 1, 2, 3, 3]), (300, 5)))
    levels = level_of(_finals(states))
    start = np.asarray(levels.agent_pos[:, 1] * 2 + levels.agent_pos[:, 0])
    assert set(start.tolist()) == {0, 1, 2}
    assert (np.asarray(levels.wall_map).sum(axis=(1, 2)) == 2).all()
    assert bool(jax.vmap(well_formed)(levels).all())
    # 1 x 2: wall at 0, goal at 1, the start asked at 1 -> at 0, its wall removed.
    level = _finished(MazeEditor(1, 2, n_walls=1, noise_dim=0), [0, 1, 1])
    assert level.to_str() == _with_arrow("?G", level)


def test_auto_reset_final_observation_and_a_finished_state_stepped_again():
    # env.step over two episodes: terminated at steps 3 and 7, the reset observation after each.
    def run(key, actions):
        def body(state, inputs):
            key, action = inputs
            obs, state, reward, term, trunc, info = SMALL.step(key, state, action)
            return state, (obs, term, trunc, info)

        _, state = SMALL.reset(key)
        keys = jax.random.split(key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))

    actions = jnp.array([1, 4, 8, 6, 0, 0, 4, 5])
    state, (obs, term, trunc, info) = jax.jit(run)(KEY, actions)
    assert np.flatnonzero(term).tolist() == [3, 7] and not np.asarray(trunc).any()
    time = np.asarray(obs[:, 27:32])  # the time one-hot over 0..4 after the map [3, 3, 3]
    assert np.argmax(time, axis=1).tolist() == [1, 2, 3, 0, 1, 2, 3, 0]  # reset after the ends
    final = np.asarray(info["final_observation"][3])
    assert np.argmax(final[27:32]) == 4 and final[:27].reshape(3, 3, 3)[2, 0, 2] == 1  # start
    second = jax.tree.map(lambda x: x[7], info["level"])  # walls 0 (twice), goal 4, start 5
    assert second.to_str() == _with_arrow("#..\n.G?\n...", second)
    assert int(state.time) == 0 and int(level_of(state).goal_pos[0]) == -1  # a fresh episode
    # step_without_reset on a finished state changes nothing and reports terminated again.
    _, states, *_ = EPISODE(SMALL, KEY, jnp.array([1, 4, 8, 6]))
    done = _last(states)
    _, again, reward, term, trunc, _ = SMALL.step_without_reset(KEY, done, jnp.int32(0))
    assert bool(term) and not bool(trunc) and float(reward) == 0.0
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(done), strict=True):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- random edits
@pytest.mark.parametrize(
    "size, n_walls",
    [((13, 13), 25), ((3, 3), 7), ((4, 6), 40)],  # default; crowded; more walls than cells
    ids=["13x13", "3x3-crowded", "4x6-overfull"],
)
def test_random_edits_are_well_formed_keyed_and_observed(size, n_walls):
    env = MazeEditor(*size, n_walls=n_walls, noise_dim=50)
    keys = jax.random.split(jax.random.key(2), 1000)
    obs, states, reward, term, trunc, info = RANDOM_EPISODES(env, keys)
    levels = level_of(_finals(states))
    assert bool(jax.vmap(well_formed)(levels).all())
    check_level(levels)  # concretely, the batch
    assert (np.asarray(levels.wall_map).sum(axis=(1, 2)) <= n_walls).all()
    assert np.asarray(term)[:, -1].all() and not np.asarray(term)[:, :-1].any()
    assert not np.asarray(trunc).any() and not np.asarray(reward).any()
    # Same key, same level (the keys again, in reverse order); different keys, different levels.
    _, again, *_ = RANDOM_EPISODES(env, keys[::-1])
    for a, b in zip(
        jax.tree.leaves(level_of(_finals(again))), jax.tree.leaves(levels), strict=True
    ):
        np.testing.assert_array_equal(a[::-1], b)
    distinct = len(set(np.asarray(jax.vmap(level_hash)(levels)).tolist()))
    assert distinct == 1000 if size == (13, 13) else distinct > 500
    _check_observations(env, obs, states)


def _check_observations(env, obs, states):
    """obs[:, t] against the level held by states[:, t], rebuilt in NumPy: walls, the goal and
    the start one-hot per cell, the time one-hot, then noise in [0, 1) that differs between
    keys and between steps."""
    h, w, n = env.height, env.width, env.n_walls
    obs = np.asarray(obs)
    assert obs.shape[-1] == h * w * 3 + (n + 3) + 50 == env.observation_space(None).shape[0]
    grid = obs[..., : h * w * 3].reshape(*obs.shape[:2], h, w, 3)
    np.testing.assert_array_equal(grid[..., 0], np.asarray(states.level.wall_map))
    for channel, pos in ((1, states.level.goal_pos), (2, states.level.agent_pos)):
        expected = np.zeros(grid.shape[:-1])
        pos = np.asarray(pos)
        runs, steps = np.nonzero(pos[..., 0] >= 0)  # placed
        expected[runs, steps, pos[runs, steps, 1], pos[runs, steps, 0]] = 1
        np.testing.assert_array_equal(grid[..., channel], expected)
    time = obs[..., h * w * 3 : h * w * 3 + n + 3]
    expected = np.eye(n + 3)[np.asarray(states.time)]
    np.testing.assert_array_equal(time, expected)
    assert np.asarray(states.time)[0].tolist() == list(range(n + 3))
    noise = obs[..., h * w * 3 + n + 3 :]
    assert noise.min() >= 0 and noise.max() < 1 and abs(noise.mean() - 0.5) < 0.01
    assert not np.any(np.all(noise[0] == noise[1], axis=-1))  # two keys, every step
    assert not np.all(noise[0, 0] == noise[0, 1])  # two steps, one key


# ----------------------------------------------------------------------------- jit, vmap, input
def test_jit_and_vmap_equal_one_by_one_steps():
    env = MazeEditor(4, 5, n_walls=3, noise_dim=8)
    keys = jax.random.split(jax.random.key(3), 6)
    actions = jax.random.randint(jax.random.key(4), (6, 5), -3, 23)
    batched = jax.jit(jax.vmap(_episode, in_axes=(None, 0, 0)), static_argnums=0)(
        env, keys, actions
    )
    for i in range(6):
        one = _episode(env, keys[i], actions[i])  # eager, op by op
        for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(batched), strict=True):
            np.testing.assert_array_equal(a, b[i])
    obs, state = jax.jit(env.reset)(KEY)
    assert obs.dtype == jnp.float32 and isinstance(state, EditorState)
    step = jax.jit(env.step)(KEY, state, jnp.int32(7))
    assert step[1].level.wall_map[1, 2]  # cell 7 = (x, y) (2, 1) of a 5-wide map


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"height": 0}, r"invalid height=0; allowed: an integer >= 1"),
        ({"width": -2}, r"invalid width=-2; allowed: an integer >= 1"),
        ({"height": 2.0}, r"invalid height=2.0; allowed: an integer >= 1"),
        ({"width": True}, r"invalid width=True; allowed: an integer >= 1"),
        ({"n_walls": -1}, r"invalid n_walls=-1; allowed: an integer >= 0"),
        ({"n_walls": 2.5}, r"invalid n_walls=2.5; allowed: an integer >= 0"),
        ({"noise_dim": -1}, r"invalid noise_dim=-1; allowed: an integer >= 0"),
        ({"height": 1, "width": 1}, r"invalid size 1 x 1.*at least 2 cells"),
    ],
)
def test_bad_constructor_input_is_refused_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MazeEditor(**kwargs)


def test_make_maze_editor_and_the_registry():
    env, params = envs.make("maze/editor")
    assert "maze/editor" in envs.names() and isinstance(env, MazeEditor)  # no TimeLimit around
    assert (env.height, env.width, env.n_walls, env.noise_dim) == (13, 13, 25, 50)
    assert env.observation_space(params).shape == (13 * 13 * 3 + 28 + 50,)
    assert env.action_space(params).n == 169
    env, _ = envs.make("maze/editor", height=5, width=7, n_walls=4, noise_dim=0)
    assert env.observation_space(params).shape == (5 * 7 * 3 + 7,)
    with pytest.raises(ValueError, match=r"max_episode_steps does not apply.*n_walls \+ 2"):
        envs.make("maze/editor", max_episode_steps=10)
    with pytest.raises(ValueError, match=r"invalid n_walls=-3"):
        envs.make("maze/editor", n_walls=-3)
    with pytest.raises(ValueError, match="built-in"):
        envs.register("maze/editor", MazeEditor)
    maze, maze_params = envs.make("maze", max_episode_steps=7)  # the maze's branch unchanged
    assert maze_params.max_steps == 7 and isinstance(maze, Maze)


# ----------------------------------------------------------------------------- levels and agents
def test_finished_levels_are_played_by_the_maze():
    editor = MazeEditor(5, 5, n_walls=10, noise_dim=0)
    keys = jax.random.split(jax.random.key(5), 8)
    _, states, *_ = RANDOM_EPISODES(editor, keys)
    levels = level_of(_finals(states))
    for maze, batch in ((Maze(5, 5), levels), (Maze(7, 9), pad(levels, 7, 9))):
        params = params_for_levels(maze.default_params, batch)
        maze.reset(KEY, jax.tree.map(lambda x: x[0], params))  # checked by the maze
        _, state = jax.jit(jax.vmap(maze.reset))(keys, params)
        np.testing.assert_array_equal(state.agent_pos, levels.agent_pos)
        np.testing.assert_array_equal(state.agent_dir, levels.agent_dir)
        np.testing.assert_array_equal(state.level.wall_map[:, :5, :5], levels.wall_map)


def test_ppo_trains_on_the_editor():
    env, params = envs.make("maze/editor", height=4, width=4, n_walls=2, noise_dim=5)
    config = ppo.PPOConfig(
        num_envs=4, num_steps=16, num_minibatches=2, update_epochs=1, total_timesteps=128,
        hidden_sizes=(16,),
    )  # fmt: skip
    agent = ppo.make(config, env, params)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, metrics = train(agent, jax.random.key(6), agent.default_hparams, 2)
    # 2 updates x 4 envs x 16 steps = 128 steps: 32 episodes of n_walls + 2 = 4 steps, return 0.
    assert np.asarray(metrics["charts/episodes"]).tolist() == [16, 16]
    np.testing.assert_array_equal(metrics["charts/episodic_length"], [4.0, 4.0])
    np.testing.assert_array_equal(metrics["charts/episodic_return"], [0.0, 0.0])
    for value in jax.tree.leaves(metrics):
        assert np.isfinite(np.asarray(value)).all()
    action = agent.act(state, jnp.zeros((4, *env.observation_space(params).shape)), KEY)
    assert action.shape == (4,) and int(action.max()) < 16
