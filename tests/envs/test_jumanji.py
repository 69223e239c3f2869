"""Jumanji's tasks through `envs/jumanji_adapter.py`.

Parity: 1,000 random legal steps (uniform among the actions the mask allows) of two environments
equal Jumanji's own environment behind its `AutoResetWrapper` step for step: our observation is
the conversion (`JumanjiEnv.observe`) of Jumanji's, the reward, the episode ends (terminated or
truncated where Jumanji's step is LAST), Jumanji's extras, our pre-reset observation (Jumanji's
`extras["next_obs"]`), our mask (Jumanji's `action_mask`, flattened) and each episode's start.
Jumanji's auto-reset draws the next episode with `jax.random.split(state.key)[0]`, the key in the
state its step returned; the reference records that key where an episode ends, and our auto-reset
(`auto_reset`, the piece `Environment.step` is built of) is given it in place of the one
`Environment.step` splits off its own key, as tests/envs/test_playground.py does. Time limits are
short so that episodes end many times within the 1,000 steps.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("jumanji")

from rlsuite.envs import jumanji_adapter as ja  # noqa: E402

from rlsuite.environment import auto_reset, select  # noqa: E402

pytestmark = pytest.mark.timeout(600)

STEPS, NUM_ENVS = 1000, 2

# task, options, the fewest episode ends expected over both environments
CASES = {
    "Snake-v1": ({"time_limit": 40}, 40),
    "Game2048-v1": ({}, 6),
    "Maze-v0": ({"time_limit": 30}, 60),
    "Minesweeper-v0": ({}, 100),
    "RubiksCube-partly-scrambled-v0": ({}, 90),
    "RubiksCube-v0": ({"time_limit": 20}, 90),
    "BinPack-v2": ({}, 100),
    "TSP-v1": ({}, 100),
    "Knapsack-v1": ({}, 60),
    "CVRP-v1": ({}, 60),
    "Sudoku-very-easy-v0": ({}, 100),
    "Sudoku-v0": ({}, 50),
    "SlidingTilePuzzle-v0": ({"time_limit": 30}, 60),
    "GraphColoring-v1": ({}, 100),
}
# The default run steps one task of each kind (a grid with masks and a time limit, a maze whose
# time limit is not a real end, a flattened multi-discrete action with masks on a grid and on a
# vector, a cube without masks); the slow run the rest, each 3 to 50 s (BinPack the longest).
DEFAULT = {"Snake-v1", "Maze-v0", "Minesweeper-v0", "Knapsack-v1", "RubiksCube-partly-scrambled-v0"}
SLOW = set(CASES) - DEFAULT


def _legal(key, mask):
    """A uniform draw among the True entries of `mask` (every entry where none is True)."""
    mask = mask | ~jnp.any(mask)
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def _reference(env):
    """Jumanji's environment behind its `AutoResetWrapper`, with random legal actions: per step
    the action, our conversion of its observation, reward, step type, extras, the pre-reset
    observation, the mask the action was drawn from and the key of the next reset."""
    from jumanji.wrappers import AutoResetWrapper

    jenv = env.jumanji_env
    wrapped = AutoResetWrapper(jenv, next_obs_in_extras=True)
    n = env.action_space(env.default_params).n
    observe = jax.vmap(env.observe)

    def mask_of(timestep):
        if not env.has_action_mask:
            return jnp.ones((NUM_ENVS, n), bool)
        return timestep.observation.action_mask.reshape(NUM_ENVS, -1)

    def one(carry, key):
        state, timestep = carry
        mask = mask_of(timestep)
        action = jax.vmap(_legal)(jax.random.split(key, NUM_ENVS), mask)
        decoded = jax.vmap(env.decode)(action)
        raw_state, _ = jax.vmap(jenv.step)(state, decoded)
        reset_key = jax.vmap(lambda k: jax.random.split(k)[0])(raw_state.key)
        state, timestep = jax.vmap(wrapped.step)(state, decoded)
        extras = dict(timestep.extras)
        pre = observe(extras.pop("next_obs"))
        out = (action, observe(timestep.observation), timestep.reward, timestep.step_type)
        return (state, timestep), (*out, extras, pre, mask, reset_key)

    @jax.jit
    def run(keys, key):
        state, timestep = jax.vmap(wrapped.reset)(keys)
        first = observe(timestep.observation)
        return first, jax.lax.scan(one, (state, timestep), jax.random.split(key, STEPS))[1]

    keys = jax.random.split(jax.random.PRNGKey(7), NUM_ENVS)
    return keys, run(keys, jax.random.PRNGKey(8))


def _ours(env, first_keys, actions, reset_keys):
    """Our adapter stepped with our auto-reset, each reset given Jumanji's key: per step the
    mask before the step, then the step's results."""
    params = env.default_params

    def one(carry, xs):
        obs, state = carry
        action, reset_key = xs
        mask = jax.vmap(env.action_mask, in_axes=(0, None))(state, params)
        result = jax.vmap(env.step_without_reset, in_axes=(None, 0, 0, None))(
            jax.random.key(0), state, action, params
        )

        def reset_where(done, obs, state):
            fresh = jax.vmap(env.reset, in_axes=(0, None))(reset_key, params)
            return jax.vmap(select)(done, fresh, (obs, state))

        obs, state, reward, terminated, truncated, info = auto_reset(result, reset_where)
        return (obs, state), (mask, obs, reward, terminated, truncated, info)

    @jax.jit
    def run(first_keys, actions, reset_keys):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(first_keys, params)
        return obs, jax.lax.scan(one, (obs, state), (actions, reset_keys))[1]

    return run(first_keys, actions, reset_keys)


@pytest.mark.parametrize(
    "task",
    [pytest.param(t, marks=pytest.mark.slow) if t in SLOW else t for t in CASES],
)
def test_parity_with_jumanjis_auto_reset_wrapper(task):
    options, fewest_ends = CASES[task]
    env = ja.JumanjiEnv(task, **options)
    keys, (first, ref) = _reference(env)
    action, obs, reward, step_type, extras, pre, mask, reset_keys = ref
    last = np.asarray(step_type) == 2
    assert last.sum() >= fewest_ends, last.sum()
    our_first, ours = _ours(env, keys, action, reset_keys)
    our_mask, our_obs, our_reward, terminated, truncated, info = ours
    np.testing.assert_array_equal(np.asarray(our_first), np.asarray(first))
    np.testing.assert_array_equal(np.asarray(our_obs), np.asarray(obs))
    np.testing.assert_array_equal(np.asarray(our_reward), np.asarray(reward, np.float32))
    terminated, truncated = np.asarray(terminated), np.asarray(truncated)
    np.testing.assert_array_equal(terminated | truncated, last)
    assert not (terminated & truncated).any()
    np.testing.assert_array_equal(np.asarray(info["final_observation"]), np.asarray(pre))
    for name, value in extras.items():
        np.testing.assert_array_equal(np.asarray(info[f"jumanji/{name}"]), np.asarray(value))
    if env.has_action_mask:
        np.testing.assert_array_equal(
            np.asarray(our_mask), np.asarray(mask) | ~mask.any(-1)[..., None]
        )
        assert np.asarray(mask).any(-1).all() or task == "Snake-v1"
    limit = env.max_episode_steps
    if limit is None:  # no time limit: every end is a termination
        assert not truncated.any()
        return
    # With a time limit, a truncation comes exactly `limit` steps into an episode.
    length = np.zeros(NUM_ENVS, int)
    for t in range(STEPS):
        length += 1
        assert (length[truncated[t]] == limit).all()
        length[last[t]] = 0
    assert truncated.any()
    if task in ("Maze-v0", "RubiksCube-partly-scrambled-v0", "SlidingTilePuzzle-v0"):
        # A termination there is the goal reached, which the sparse reward says (SlidingTile's
        # dense reward is the newly placed tiles, so only the flags are checked for it).
        if task != "SlidingTilePuzzle-v0":
            np.testing.assert_array_equal(terminated, last & (np.asarray(reward) > 0))


# ----------------------------------------------------------------- conversions by hand


def _reset(env, seed=0):
    return env.jumanji_env.reset(jax.random.PRNGKey(seed))


def test_game2048_board_is_a_one_hot_of_tile_exponents():
    env = ja.JumanjiEnv("Game2048-v1")
    state, timestep = _reset(env)
    board = jnp.zeros((4, 4), jnp.int32).at[0, 0].set(1).at[3, 2].set(11)
    obs = env.observe(timestep.observation._replace(board=board))
    assert obs.shape == (4, 4, 18) and obs.dtype == jnp.float32
    assert obs[0, 0, 1] == 1 and obs[3, 2, 11] == 1 and obs[1, 1, 0] == 1  # the tile 2, 2048, empty
    np.testing.assert_array_equal(np.asarray(obs.sum(-1)), np.ones((4, 4)))


def test_maze_channels_are_walls_agent_target_and_time():
    from jumanji.environments.routing.maze.types import Position

    env = ja.JumanjiEnv("Maze-v0", time_limit=40)
    _, timestep = _reset(env)
    walls = jnp.zeros((10, 10), bool).at[5, :].set(True)
    o = timestep.observation._replace(
        walls=walls,
        agent_position=Position(jnp.int32(1), jnp.int32(2)),
        target_position=Position(jnp.int32(9), jnp.int32(0)),
        step_count=jnp.int32(10),
    )
    obs = np.asarray(env.observe(o))
    assert obs.shape == (10, 10, 4)
    np.testing.assert_array_equal(obs[..., 0], np.asarray(walls, np.float32))
    assert obs[..., 1].sum() == 1 and obs[1, 2, 1] == 1
    assert obs[..., 2].sum() == 1 and obs[9, 0, 2] == 1
    np.testing.assert_array_equal(obs[..., 3], np.full((10, 10), 0.25, np.float32))  # 10 / 40


def test_minesweeper_board_is_a_one_hot_with_unexplored_first():
    env = ja.JumanjiEnv("Minesweeper-v0")
    _, timestep = _reset(env)
    board = jnp.full((10, 10), -1, jnp.int32).at[2, 3].set(0).at[4, 4].set(8)
    obs = np.asarray(env.observe(timestep.observation._replace(board=board)))
    assert obs.shape == (10, 10, 10)
    assert obs[0, 0, 0] == 1 and obs[2, 3, 1] == 1 and obs[4, 4, 9] == 1
    assert obs[..., 0].sum() == 98


def test_tsp_vector_layout():
    env = ja.JumanjiEnv("TSP-v1")
    _, timestep = _reset(env)
    o = timestep.observation
    start = np.asarray(env.observe(o))
    # Before the first city: position and trajectory are -1 (zeros), every city legal.
    np.testing.assert_array_equal(start[:40], np.asarray(o.coordinates).reshape(-1))
    assert not start[40:460].any() and (start[460:] == 1).all()
    moved = o._replace(
        position=jnp.int32(3),
        trajectory=jnp.full(20, -1, jnp.int32).at[0].set(5).at[1].set(3),
        action_mask=jnp.ones(20, bool).at[5].set(False).at[3].set(False),
    )
    obs = np.asarray(env.observe(moved))
    assert obs[40 + 3] == 1 and obs[40:60].sum() == 1
    trajectory = obs[60:460].reshape(20, 20)
    assert trajectory[0, 5] == 1 and trajectory[1, 3] == 1 and trajectory.sum() == 2
    assert obs[460 + 5] == 0 and obs[460 + 3] == 0 and obs[460:].sum() == 18


def test_rubiks_cube_is_a_one_hot_of_colours_then_time():
    env = ja.JumanjiEnv("RubiksCube-partly-scrambled-v0")
    _, timestep = _reset(env)
    solved = jnp.repeat(jnp.arange(6, dtype=jnp.int8), 9).reshape(6, 3, 3)
    o = timestep.observation._replace(cube=solved, step_count=jnp.int32(5))
    obs = np.asarray(env.observe(o))
    assert obs.shape == (325,)
    colours = obs[:324].reshape(6, 3, 3, 6)
    for face in range(6):
        assert (colours[face, :, :, face] == 1).all() and colours[face].sum() == 9
    assert obs[-1] == np.float32(5 / 20)


def test_snake_grid_with_a_time_channel():
    env = ja.JumanjiEnv("Snake-v1", time_limit=8)
    state, timestep = _reset(env)
    obs = np.asarray(env.observe(timestep.observation._replace(step_count=jnp.int32(2))))
    np.testing.assert_array_equal(obs[..., :5], np.asarray(timestep.observation.grid))
    assert (obs[..., 5] == 0.25).all()


# ----------------------------------------------------------------- terminated vs truncated


def _step(env, state, action):
    return jax.jit(env.step_env)(jax.random.key(0), state, jnp.int32(action), env.default_params)


def test_maze_reaching_the_target_at_the_limit_terminates_else_truncates():
    from jumanji.environments.routing.maze.types import Position

    env = ja.JumanjiEnv("Maze-v0", time_limit=10)
    _, state = env.reset(jax.random.key(0), env.default_params)
    inner = state.jumanji.replace(
        walls=jnp.zeros((10, 10), bool),
        agent_position=Position(jnp.int32(0), jnp.int32(0)),
        target_position=Position(jnp.int32(0), jnp.int32(1)),
        action_mask=jnp.array([False, True, True, False]),
        step_count=jnp.int32(9),
    )
    state = state.replace(jumanji=inner, action_mask=inner.action_mask)
    _, _, reward, terminated, truncated, _ = _step(env, state, 1)  # right: onto the target
    assert float(reward) == 1 and bool(terminated) and not bool(truncated)
    _, _, reward, terminated, truncated, _ = _step(env, state, 2)  # down: the limit
    assert float(reward) == 0 and not bool(terminated) and bool(truncated)
    early = state.replace(jumanji=inner.replace(step_count=jnp.int32(3)))
    _, _, _, terminated, truncated, _ = _step(env, early, 2)
    assert not bool(terminated) and not bool(truncated)


def test_snake_crash_at_the_limit_terminates_a_legal_move_truncates():
    from jumanji.environments.routing.snake.types import Position

    env = ja.JumanjiEnv("Snake-v1", time_limit=5)
    _, state = env.reset(jax.random.key(1), env.default_params)
    inner = state.jumanji
    head = Position(jnp.int32(0), jnp.int32(5))  # top row: up leaves the grid
    body = jnp.zeros((12, 12), bool).at[0, 5].set(True)
    inner = inner.replace(
        head_position=head,
        body=body,
        tail=body,
        body_state=body.astype(jnp.int32),
        fruit_position=Position(jnp.int32(11), jnp.int32(11)),
        action_mask=jnp.array([False, True, True, True]),
        step_count=jnp.int32(4),
    )
    state = state.replace(jumanji=inner, action_mask=inner.action_mask)
    _, _, _, terminated, truncated, _ = _step(env, state, 0)  # up: off the grid
    assert bool(terminated) and not bool(truncated)
    _, _, _, terminated, truncated, _ = _step(env, state, 2)  # down: legal, the fifth step
    assert not bool(terminated) and bool(truncated)


def test_rubiks_cube_solved_at_the_limit_terminates_else_truncates():
    from jumanji.environments.logic.rubiks_cube.utils import rotate_cube

    env = ja.JumanjiEnv("RubiksCube-v0", time_limit=3)
    _, state = env.reset(jax.random.key(2), env.default_params)
    solved = jnp.repeat(jnp.arange(6, dtype=jnp.int8), 9).reshape(6, 3, 3)
    # Our index 0 is [face UP, depth 0, clockwise]; index 1 is the same face anticlockwise.
    np.testing.assert_array_equal(np.asarray(env.decode(jnp.int32(1))), [0, 0, 1])
    turned = rotate_cube(solved, jnp.int32(0))  # Jumanji's flat move 0: UP clockwise
    inner = state.jumanji.replace(cube=turned, step_count=jnp.int32(2))
    state = state.replace(jumanji=inner)
    _, _, reward, terminated, truncated, _ = _step(env, state, 1)  # undo: solved
    assert float(reward) == 1 and bool(terminated) and not bool(truncated)
    _, _, reward, terminated, truncated, _ = _step(env, state, 0)  # a half turn: not solved
    assert float(reward) == 0 and not bool(terminated) and bool(truncated)


def test_a_task_without_a_time_limit_never_truncates_and_says_so():
    for task in ("Game2048-v1", "Minesweeper-v0", "BinPack-v2", "TSP-v1"):
        assert ja.JumanjiEnv(task).max_episode_steps is None
    assert ja.JumanjiEnv("Snake-v1").max_episode_steps == 4000
    assert ja.JumanjiEnv("Maze-v0").max_episode_steps == 100
    assert ja.JumanjiEnv("RubiksCube-partly-scrambled-v0").max_episode_steps == 20
    assert ja.JumanjiEnv("RubiksCube-v0", time_limit=7).max_episode_steps == 7


# ----------------------------------------------------------------- masks and flattened actions


@pytest.mark.parametrize(
    "task, index, decoded",
    [
        ("Minesweeper-v0", 37, [3, 7]),  # [row, col] of a 10 x 10 board
        ("BinPack-v2", 41, [2, 1]),  # [ems, item]: 40 EMSs x 20 items
        ("RubiksCube-v0", 17, [5, 0, 2]),  # [face, depth, amount]: 6 x 1 x 3
        ("Sudoku-v0", 100, [1, 2, 1]),  # [row, col, digit]: 9 x 9 x 9
        ("Snake-v1", 3, 3),
    ],
)
def test_a_flat_index_decodes_row_major(task, index, decoded):
    env = ja.JumanjiEnv(task)
    np.testing.assert_array_equal(np.asarray(env.decode(jnp.int32(index))), decoded)


def test_masks_are_bool_vectors_of_the_flat_jumanji_mask():
    for task, n in (("Minesweeper-v0", 100), ("BinPack-v2", 800), ("Sudoku-v0", 729)):
        env = ja.JumanjiEnv(task)
        jstate, timestep = _reset(env, 3)
        _, state = env.reset(jax.random.PRNGKey(3), env.default_params)
        mask = env.action_mask(state, env.default_params)
        assert mask.shape == (n,) and mask.dtype == jnp.bool_
        np.testing.assert_array_equal(
            np.asarray(mask), np.asarray(timestep.observation.action_mask).reshape(-1)
        )
    cube = ja.JumanjiEnv("RubiksCube-v0")
    _, state = cube.reset(jax.random.key(3), cube.default_params)
    assert not cube.has_action_mask and cube.action_mask(state, None) is None


def test_a_minesweeper_index_reveals_its_row_and_column():
    env = ja.JumanjiEnv("Minesweeper-v0")
    _, state = env.reset(jax.random.key(4), env.default_params)
    mines = set(np.asarray(state.jumanji.flat_mine_locations).tolist())
    index = next(i for i in range(100) if i not in mines and i // 10 != i % 10)
    _, after, reward, terminated, _, _ = _step(env, state, index)
    board = np.asarray(after.jumanji.board)
    assert board[index // 10, index % 10] >= 0 and (board >= 0).sum() == 1
    assert float(reward) == 1 and not bool(terminated)
    assert not bool(env.action_mask(after, None)[index])


def test_a_boxed_in_snake_may_take_any_move():
    env = ja.JumanjiEnv("Snake-v1")
    _, state = env.reset(jax.random.key(5), env.default_params)
    boxed = state.replace(action_mask=jnp.zeros(4, bool))
    np.testing.assert_array_equal(np.asarray(env.action_mask(boxed, None)), [True] * 4)


def test_info_carries_jumanjis_extras_and_keys_of_both_kinds_start_alike():
    env = ja.JumanjiEnv("Game2048-v1")
    params = env.default_params
    obs_typed, state = env.reset(jax.random.key(9), params)
    obs_raw, _ = env.reset(jax.random.PRNGKey(9), params)
    np.testing.assert_array_equal(np.asarray(obs_typed), np.asarray(obs_raw))
    action = jnp.argmax(env.action_mask(state, params)).astype(jnp.int32)
    *_, info = jax.jit(env.step)(jax.random.key(1), state, action, params)
    assert int(info["jumanji/highest_tile"]) in (2, 4, 8)


# ----------------------------------------------------------------- names and refusals


def test_names_and_refusals_cover_jumanjis_registry():
    import jumanji

    registered = jumanji.registered_environments()
    assert set(ja.jumanji_names()) | set(ja.refused()) == registered
    assert not set(ja.jumanji_names()) & set(ja.refused())
    with pytest.raises(ValueError, match="unknown Jumanji task 'Snake'; allowed: Snake-v1, "):
        ja.JumanjiEnv("Snake")
    with pytest.raises(ValueError, match="Sokoban-v0.*downloads its Boxoban levels.*nothing"):
        ja.JumanjiEnv("Sokoban-v0")
    with pytest.raises(ValueError, match="Connector-v3.*multi-agent"):
        ja.JumanjiEnv("Connector-v3")


@pytest.mark.parametrize(
    "task, options, message",
    [
        ("Snake-v1", {"foo": 1}, r"unknown option\(s\) \['foo'\]; allowed: num_cols, num_rows, "),
        ("TSP-v1", {"time_limit": 5}, r"unknown option\(s\) \['time_limit'\]; allowed: none"),
        ("Maze-v0", {"time_limit": 0}, "time_limit=0; allowed: an integer >= 1"),
        ("Snake-v1", {"time_limit": 2.5}, "time_limit=2.5; allowed: an integer >= 1"),
        ("BinPack-v2", {"debug": "yes"}, "debug='yes'; allowed: true or false"),
    ],
)
def test_bad_options_are_refused_by_name(task, options, message):
    with pytest.raises(ValueError, match=message):
        ja.JumanjiEnv(task, **options)
