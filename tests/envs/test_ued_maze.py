"""The UED maze (`envs/maze/`): hand-derived steps, views and episode ends, the held-out mazes'
shortest solutions (a plain-Python BFS) and an oracle run through the env, step-by-step parity
with jaxued 0.0.1's maze, DR's generator and ACCEL's mutator, bad input, jit and vmap."""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.maze import (
    EVAL_MAX_STEPS,
    HELD_OUT,
    Level,
    Maze,
    check_level,
    held_out_level,
    held_out_levels,
    level_hash,
    make_generator,
    minimax_max_steps,
    mutate,
    pad,
    params_for_levels,
    stack,
    to_jaxued,
    well_formed,
)

from rlsuite import envs

KEY = jax.random.key(0)
LEFT, RIGHT, FORWARD = 0, 1, 2
TINY = "...\n.#.\n>#G"  # the agent at (x, y) = (0, 2) facing right, the goal at (2, 2)
OPTIMAL = {  # BFS-optimal numbers of actions (turns and moves) of the held-out mazes
    "SixteenRooms": 26,
    "SixteenRooms2": 28,
    "Labyrinth": 113,
    "LabyrinthFlipped": 113,
    "Labyrinth2": 113,
    "StandardMaze": 54,
    "StandardMaze2": 73,
    "StandardMaze3": 54,
}


def _fields(level: Level) -> dict:
    return {k: np.asarray(getattr(level, k)) for k in Level.__dataclass_fields__}


def _equal_levels(a: Level, b: Level) -> bool:
    fa, fb = _fields(a), _fields(b)
    return all(np.array_equal(fa[k], fb[k]) for k in fa)


def _rollout(env, params, actions, key=KEY):
    """`env.step` (auto-resetting) over `actions` from a reset: obs [T+1, ...] (reset first),
    rewards, terminated, truncated, info, the states after each step."""

    def body(carry, action):
        state, key = carry
        key, key_step = jax.random.split(key)
        obs, state, reward, term, trunc, info = env.step(key_step, state, action, params)
        return (state, key), (obs, reward, term, trunc, info, state)

    key, key_reset = jax.random.split(key)
    obs0, state = env.reset(key_reset, params)
    _, (obs, reward, term, trunc, info, states) = jax.lax.scan(body, (state, key), actions)
    return jnp.concatenate([obs0[None], obs]), reward, term, trunc, info, states


ROLLOUT = jax.jit(_rollout, static_argnums=0)


def _bfs_plan(text: str) -> list[int]:
    """The shortest action sequence (0 left, 1 right, 2 forward) that moves forward into the
    goal, by breadth-first search over (x, y, direction) in plain Python."""
    rows = text.strip().split("\n")
    height, width = len(rows), len(rows[0])
    moves = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    for y, row in enumerate(rows):
        for x, char in enumerate(row):
            if char in ">v<^":
                start = (x, y, ">v<^".index(char))
            if char == "G":
                goal = (x, y)
    parent = {start: None}
    queue = deque([start])
    while queue:
        x, y, d = node = queue.popleft()
        ahead = (x + moves[d][0], y + moves[d][1])
        if ahead == goal:
            plan = [FORWARD]
            while parent[node] is not None:
                node, action = parent[node]
                plan.append(action)
            return plan[::-1]
        steps = [((x, y, (d - 1) % 4), LEFT), ((x, y, (d + 1) % 4), RIGHT)]
        if 0 <= ahead[0] < width and 0 <= ahead[1] < height and rows[ahead[1]][ahead[0]] != "#":
            steps.append(((*ahead, d), FORWARD))
        for nxt, action in steps:
            if nxt not in parent:
                parent[nxt] = (node, action)
                queue.append(nxt)
    raise AssertionError("unreachable goal")


# ----------------------------------------------------------------------------- dynamics
def test_hand_derived_episode_on_the_tiny_level():
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY))
    assert params.max_steps == 250
    # L: face up; F, F: (0, 1), (0, 0); R: face right; F, F: (1, 0), (2, 0); R: face down;
    # F: (2, 1); F: the goal (2, 2) is ahead: reached on step 9, the agent stays at (2, 1).
    actions = jnp.array([LEFT, FORWARD, FORWARD, RIGHT, FORWARD, FORWARD, RIGHT, FORWARD, FORWARD])
    obs, reward, term, trunc, info, states = ROLLOUT(env, params, actions)
    positions = [[0, 2], [0, 1], [0, 0], [0, 0], [1, 0], [2, 0], [2, 0], [2, 1]]
    np.testing.assert_array_equal(states.agent_pos[:8], positions)
    np.testing.assert_array_equal(states.agent_dir[:8], [3, 3, 3, 0, 0, 0, 1, 1])
    # 1 - 0.9 * 9 / 250 = 0.9676 on step 9 only; terminated there, never truncated.
    np.testing.assert_allclose(reward, [0] * 8 + [0.9676], rtol=1e-6)
    np.testing.assert_array_equal(term, [False] * 8 + [True])
    assert not trunc.any()
    np.testing.assert_array_equal(info["solved"], term)
    # The auto-reset replays the level: back at the start, facing right, time 0.
    np.testing.assert_array_equal(states.agent_pos[8], [0, 2])
    assert int(states.agent_dir[8]) == 0 and int(states.time[8]) == 0
    np.testing.assert_array_equal(obs[9], obs[0])
    # The level's hash is the same at every step of the replayed level.
    assert len(set(np.asarray(info["level_hash"]).tolist())) == 1
    assert int(info["level_hash"][0]) == int(level_hash(params.level))


def test_the_view_of_the_start_by_hand():
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY))
    obs, _ = env.reset(KEY, params)
    assert obs.shape == (5 * 5 * 3 + 4,) and obs.dtype == jnp.float32
    view = np.asarray(obs[:75]).reshape(5, 5, 3)  # [across, along, (wall, goal, empty)]
    np.testing.assert_array_equal(view.sum(-1), np.ones((5, 5)))  # one-hot cells
    np.testing.assert_array_equal(obs[75:], [1, 0, 0, 0])  # facing right
    wall, goal, empty = [1, 0, 0], [0, 1, 0], [0, 0, 1]
    # Facing right (+x): across 0..4 is y - 2..y + 2 (left is up), along 4..0 is x..x + 4.
    expected = {
        (2, 4): empty,  # the agent's cell (0, 2)
        (2, 3): wall,  # one ahead, (1, 2)
        (2, 2): goal,  # two ahead, (2, 2)
        (2, 1): wall,  # (3, 2): outside the map
        (1, 4): empty,  # left of the agent, (0, 1)
        (0, 4): empty,  # (0, 0)
        (1, 3): wall,  # (1, 1)
        (0, 2): empty,  # (2, 0)
        (3, 4): wall,  # right of the agent, (0, 3): outside
    }
    for (i, j), cell in expected.items():
        np.testing.assert_array_equal(view[i, j], cell, err_msg=f"view[{i}, {j}]")
    image, direction = to_jaxued(obs)
    assert image.dtype == jnp.uint8 and int(direction) == 0
    np.testing.assert_array_equal(image[2, 2], [8, 1, 0])  # MiniGrid's green goal
    np.testing.assert_array_equal(image[2, 3], [2, 5, 0])  # grey wall
    np.testing.assert_array_equal(image[2, 4], [1, 0, 0])  # empty


def test_walls_edges_and_idle_actions_leave_the_agent_in_place():
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY))
    # Forward into the wall at (1, 2); turn left twice (face left), forward into the map's edge;
    # then the four actions that do nothing (3 pickup, 4 drop, 5 toggle, 6 done).
    actions = jnp.array([FORWARD, LEFT, LEFT, FORWARD, 3, 4, 5, 6])
    obs, reward, term, trunc, _, states = ROLLOUT(env, params, actions)
    np.testing.assert_array_equal(states.agent_pos, [[0, 2]] * 8)
    np.testing.assert_array_equal(states.agent_dir, [0, 3, 2, 2, 2, 2, 2, 2])
    np.testing.assert_array_equal(states.time, np.arange(1, 9))
    np.testing.assert_array_equal(obs[1], obs[0])  # the wall: nothing changed but the time
    for t in range(4, 8):
        np.testing.assert_array_equal(obs[t + 1], obs[4])
    assert not reward.any() and not term.any() and not trunc.any()


def test_idle_steps_truncate_at_max_steps_without_terminating():
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY))
    _, reward, term, trunc, info, states = ROLLOUT(env, params, jnp.full((251,), 3))
    # Truncated on step 250 (index 249) only, then a fresh episode (time 1 after step 251).
    np.testing.assert_array_equal(np.flatnonzero(trunc), [249])
    assert not term.any() and not reward.any() and not info["solved"].any()
    assert int(states.time[248]) == 249 and int(states.time[249]) == 0
    assert int(states.time[250]) == 1
    # A shorter horizon in params: truncated after 7 steps.
    _, _, term, trunc, _, _ = ROLLOUT(env, params.replace(max_steps=7), jnp.full((14,), 3))
    np.testing.assert_array_equal(np.flatnonzero(trunc), [6, 13])
    assert not term.any()


def test_reaching_the_goal_on_the_last_step_terminates_and_does_not_truncate():
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY)).replace(max_steps=9)
    actions = jnp.array([LEFT, FORWARD, FORWARD, RIGHT, FORWARD, FORWARD, RIGHT, FORWARD, FORWARD])
    _, reward, term, trunc, _, _ = ROLLOUT(env, params, actions)
    # 1 - 0.9 * 9 / 9 = 0.1 at the horizon: a terminal step, not a truncated one.
    np.testing.assert_allclose(reward[-1], 0.1, rtol=1e-6)
    assert bool(term[-1]) and not trunc.any()


# ----------------------------------------------------------------------------- held-out mazes
def test_held_out_mazes_shortest_solutions_round_trip_and_well_formed():
    assert tuple(HELD_OUT) == tuple(OPTIMAL)
    for name, text in HELD_OUT.items():
        level = held_out_level(name)
        assert np.shape(level.wall_map) == (13, 13)
        assert level.to_str() == text  # from_str / to_str round trip
        assert Level.from_str(level.to_str()).to_str() == text
        check_level(level)
        assert bool(well_formed(level))
        assert len(_bfs_plan(text)) == OPTIMAL[name], name
    directions = [int(held_out_level(n).agent_dir) for n in HELD_OUT]
    assert directions == [0, 0, 0, 2, 0, 0, 0, 0]  # LabyrinthFlipped starts facing left
    assert EVAL_MAX_STEPS == 250 and minimax_max_steps(13, 13) == 2 * 15 * 15 == 450


def test_an_oracle_earns_the_optimal_return_on_each_held_out_maze():
    env = Maze()
    levels = held_out_levels()
    params = params_for_levels(env.default_params, levels)
    plans = [_bfs_plan(text) for text in HELD_OUT.values()]
    longest = max(map(len, plans))
    actions = jnp.array([p + [3] * (longest - len(p)) for p in plans]).T  # [steps, mazes]
    rollout = jax.vmap(_rollout, in_axes=(None, 0, 1, None))
    _, reward, term, trunc, _, _ = jax.jit(rollout, static_argnums=0)(env, params, actions, KEY)
    for index, (name, n) in enumerate(OPTIMAL.items()):
        # 1 - 0.9 n / 250: SixteenRooms 0.9064, the labyrinths 0.5932, StandardMaze 0.8056.
        expected = np.zeros(longest, np.float32)
        expected[n - 1] = 1 - 0.9 * n / 250
        np.testing.assert_allclose(reward[index], expected, rtol=1e-6, err_msg=name)
        assert np.flatnonzero(term[index]).tolist() == [n - 1], name
        assert not trunc[index].any()


def _minimax_mazes() -> dict[str, dict]:
    """The eight singleton mazes of minimax 0.2.0's `envs/maze/maze_ood.py`, read from its source
    with `ast` (the package is installed without its dependencies by .ci/run and never imported):
    per class, the `wall_map` rows of 0/1, `goal_pos` and `agent_pos` as (x, y), `agent_dir_idx`."""
    import ast
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("minimax")  # a top-level package: nothing is executed
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("minimax-lib 0.2.0 is not installed (pip install --no-deps minimax-lib==0.2.0)")
    source = Path(spec.submodule_search_locations[0], "envs", "maze", "maze_ood.py").read_text()
    mazes = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.ClassDef) and node.name in HELD_OUT):
            continue
        init = next(f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        values = {
            statement.targets[0].id: ast.literal_eval(statement.value)
            for statement in init.body
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name)
        }
        mazes[node.name] = values
    return mazes


def test_held_out_mazes_equal_minimax_arrays_cell_for_cell():
    mazes = _minimax_mazes()
    assert sorted(mazes) == sorted(HELD_OUT)
    for name, theirs in mazes.items():
        level = held_out_level(name)
        walls = np.array([[int(c) for c in row.split()] for row in theirs["wall_map"]], bool)
        assert walls.shape == (13, 13), name
        np.testing.assert_array_equal(np.asarray(level.wall_map), walls, err_msg=name)
        assert tuple(np.asarray(level.goal_pos).tolist()) == tuple(theirs["goal_pos"]), name
        assert tuple(np.asarray(level.agent_pos).tolist()) == tuple(theirs["agent_pos"]), name
        # `agent_dir_idx = None` (four of them) becomes 0 in MazeSingleton's constructor.
        direction = theirs["agent_dir_idx"]
        assert int(level.agent_dir) == (0 if direction is None else direction), name


# ----------------------------------------------------------------------------- jaxued parity
def test_step_by_step_parity_with_jaxued():
    pytest.importorskip("jaxued")
    if not hasattr(jax, "tree_map"):  # jaxued 0.0.1 calls jax.tree_map, gone in current JAX
        jax.tree_map = jax.tree.map
    from jaxued.environments.maze import Level as JaxuedLevel
    from jaxued.environments.maze import Maze as JaxuedMaze
    from jaxued.environments.maze.env import EnvParams as JaxuedParams
    from jaxued.environments.maze.level import prefabs
    from jaxued.wrappers import AutoReplayWrapper

    for name, text in HELD_OUT.items():  # our held-out strings are jaxued's prefabs too
        assert prefabs[name] == text, name

    # 1,000 levels of 0, 25, 60 and 100 walls (our generator; the held-out mazes first), each
    # with its own horizon (16, 64, 250, 250), and 256 random actions (forward more often,
    # so that goals are reached). Both sides replay the level at an episode end: ours by its
    # auto-reset to params.level, jaxued's by its AutoReplayWrapper.
    n, steps = 1000, 256
    env = Maze()
    keys = jax.random.split(jax.random.key(7), 4)
    parts = [
        jax.vmap(make_generator(13, 13, walls))(jax.random.split(k, n // 4))
        for walls, k in zip((0, 25, 60, 100), keys, strict=True)
    ]
    levels = jax.tree.map(lambda *x: jnp.concatenate(x), *parts)
    held = held_out_levels()
    levels = jax.tree.map(lambda a, b: a.at[: b.shape[0]].set(b), levels, held)
    horizon = jnp.asarray([16, 64, 250, 250], jnp.int32)[jnp.arange(n) % 4]
    params = params_for_levels(env.default_params, levels).replace(max_steps=horizon)
    theirs = JaxuedLevel(
        levels.wall_map,
        levels.goal_pos.astype(jnp.uint32),
        levels.agent_pos.astype(jnp.uint32),
        levels.agent_dir.astype(jnp.uint8),
        levels.width,
        levels.height,
    )
    jaxued_env = AutoReplayWrapper(JaxuedMaze(max_height=13, max_width=13))
    jaxued_params = JaxuedParams(max_steps_in_episode=horizon)
    probs = jnp.asarray([0.2, 0.2, 0.45, 0.0375, 0.0375, 0.0375, 0.0375])
    actions = jax.random.choice(jax.random.key(8), 7, (steps, n), p=probs).astype(jnp.int32)

    @jax.jit
    def run():
        keys = jax.random.split(jax.random.key(9), n)
        obs, state = jax.vmap(env.reset)(keys, params)
        jaxued_obs, jaxued_state = jax.vmap(jaxued_env.reset_to_level)(keys, theirs, jaxued_params)

        def body(carry, action):
            state, jaxued_state, keys = carry
            keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, 1)
            obs, state, reward, term, trunc, _ = jax.vmap(env.step)(keys, state, action, params)
            j_obs, jaxued_state, j_reward, j_done, _ = jax.vmap(jaxued_env.step)(
                keys, jaxued_state, action, jaxued_params
            )
            out = (obs, reward, term, trunc, j_obs.image, j_obs.agent_dir, j_reward, j_done)
            return (state, jaxued_state, keys), out

        _, out = jax.lax.scan(body, (state, jaxued_state, keys), actions)
        return (obs, jaxued_obs.image, jaxued_obs.agent_dir), out

    first, (obs, reward, term, trunc, j_image, j_dir, j_reward, j_done) = run()
    image, direction = to_jaxued(first[0])
    np.testing.assert_array_equal(image, first[1])
    np.testing.assert_array_equal(direction, first[2])
    image, direction = to_jaxued(obs)
    np.testing.assert_array_equal(image, j_image)
    np.testing.assert_array_equal(direction, j_dir)
    np.testing.assert_array_equal(reward, j_reward)  # bitwise, float32
    np.testing.assert_array_equal(term | trunc, j_done)
    # The comparison covered goals reached and horizons hit, on many levels.
    assert int(term.sum()) > 200 and int(trunc.sum()) > 2000
    assert int(term.any(axis=0).sum()) > 150


# ----------------------------------------------------------------------------- generator
def test_generator_levels_are_well_formed_and_keyed():
    generate = make_generator(13, 13, 60)
    keys = jax.random.split(KEY, 2048)
    levels = jax.jit(jax.vmap(generate))(keys)
    assert bool(jax.vmap(well_formed)(levels).all())
    check_level(levels)  # the batch, concretely
    walls = np.asarray(levels.wall_map).sum(axis=(1, 2))
    assert walls.max() <= 60 and walls.min() >= 40  # 60 draws with replacement of 169 cells
    # E[distinct cells] = 169 (1 - (168/169)^60) = 50.5
    assert abs(walls.mean() - 169 * (1 - (168 / 169) ** 60)) < 0.5
    directions = np.bincount(np.asarray(levels.agent_dir), minlength=4) / 2048
    np.testing.assert_allclose(directions, 0.25, atol=0.04)
    assert _equal_levels(generate(keys[3]), jax.tree.map(lambda x: x[3], levels))  # same key
    hashes = np.asarray(jax.vmap(level_hash)(levels))
    assert len(set(hashes.tolist())) == 2048  # different keys, different levels
    empty = jax.vmap(make_generator(4, 6, 0))(keys[:64])
    assert not np.asarray(empty.wall_map).any() and bool(jax.vmap(well_formed)(empty).all())
    full = jax.vmap(make_generator(2, 2, 2))(keys[:64])  # two free cells at most
    assert bool(jax.vmap(well_formed)(full).all())


def test_domain_randomisation_draws_a_level_per_episode():
    env, params = envs.make("maze", max_episode_steps=5)
    assert params.random_level and params.max_steps == 5
    _, _, _, trunc, info, states = ROLLOUT(env, params, jnp.full((15,), 3))
    hashes = np.asarray(info["level_hash"]).reshape(3, 5)
    assert np.all(hashes == hashes[:, :1])  # constant within an episode
    assert len(set(hashes[:, 0].tolist())) == 3  # a fresh level at every reset
    assert np.flatnonzero(trunc).tolist() == [4, 9, 14]
    # With random_level off, the same env replays params.level.
    fixed = params.replace(random_level=False)
    _, _, _, _, info, _ = ROLLOUT(env, fixed, jnp.full((15,), 3))
    assert set(np.asarray(info["level_hash"]).tolist()) == {int(level_hash(fixed.level))}


# ----------------------------------------------------------------------------- mutator
def _changes(a: Level, b: Level) -> jax.Array:
    """Items that differ: wall cells, the goal, the start (position or direction)."""
    walls = jnp.sum(a.wall_map != b.wall_map)
    goal = jnp.any(a.goal_pos != b.goal_pos)
    start = jnp.any(a.agent_pos != b.agent_pos) | (a.agent_dir != b.agent_dir)
    return walls + goal + start


def test_mutations_are_well_formed_small_and_keyed():
    # 256 parents: the eight held-out mazes, the tiny level padded to 13 x 13, DR levels.
    fixed = stack([*(held_out_level(n) for n in HELD_OUT), Level.from_str(TINY)], 13, 13)
    drawn = jax.vmap(make_generator(13, 13, 60))(jax.random.split(KEY, 256 - 9))
    parents = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), fixed, drawn)
    keys = jax.random.split(jax.random.key(1), 256)
    batch = jax.jit(jax.vmap(mutate, in_axes=(0, 0, None)), static_argnums=2)
    for edits in (1, 5, 30):
        children = batch(keys, parents, edits)
        assert bool(jax.vmap(well_formed)(children).all()), edits
        changes = np.asarray(jax.vmap(_changes)(parents, children))
        assert changes.max() <= edits and changes.mean() > 0.5 * edits, edits
        again = batch(keys, parents, edits)
        assert _equal_levels(children, again)  # same keys, same levels
        hashes = np.asarray(jax.vmap(level_hash)(children))
        assert len(set(hashes.tolist())) == 256
    # The padded tiny level: padding stays wall, the 3 x 3 level is all that changes.
    tiny = jax.tree.map(lambda x: x[8], children)
    assert np.asarray(tiny.wall_map)[3:].all() and np.asarray(tiny.wall_map)[:, 3:].all()
    # Different keys on one parent give different children.
    one = jax.tree.map(lambda x: x[0], parents)
    kids = jax.vmap(mutate, in_axes=(0, None, None))(keys[:64], one, 3)
    assert len(set(np.asarray(jax.vmap(level_hash)(kids)).tolist())) >= 60
    # 0 edits: the identity; a traced edit count (vmapped over counts) works too.
    assert _equal_levels(mutate(keys[0], one, 0), one)
    counts = jnp.array([0, 1, 2, 7])
    per_count = jax.jit(jax.vmap(mutate, in_axes=(None, None, 0)))(keys[0], one, counts)
    changed = np.asarray(jax.vmap(_changes, in_axes=(None, 0))(one, per_count))
    assert changed[0] == 0 and np.all(changed <= np.asarray(counts))
    assert _equal_levels(jax.tree.map(lambda x: x[2], per_count), mutate(keys[0], one, 2))


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "text, message",
    [
        ("...\n.#\n>#G", r"ragged rows: row 1 has 2 cells, row 0 has 3"),
        ("...\n.#.\n>#.", r"no goal"),
        ("..G\n.#.\n>#G", r"2 goals at \(x, y\) \[\(2, 0\), \(2, 2\)\]"),
        ("...\n.#.\n.#G", r"no agent"),
        ("..<\n.#.\n>#G", r"2 agents"),
        ("...\n.x.\n>#G", r"unknown character 'x' at row 1, column 1; allowed: '#' .*'\^'"),
        ("\n  \n", r"empty level"),
    ],
)
def test_bad_level_strings_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        Level.from_str(text)


def test_bad_levels_name_the_problem():
    level = Level.from_str(TINY)
    # The level cut to its top two rows, its last row left free (not padding).
    cut = level.replace(
        height=jnp.array(2), agent_pos=jnp.array([0, 1]), goal_pos=jnp.array([2, 1])
    )

    def at(**fields):
        return level.replace(**{k: jnp.array(v) for k, v in fields.items()})

    cases = [
        (at(agent_pos=[1, 1]), r"the agent at \(x, y\) = \(1, 1\) is on a wall"),
        (at(agent_pos=[2, 2]), r"the agent at .* is on the goal"),
        (at(goal_pos=[1, 2]), r"the goal at \(x, y\) = \(1, 2\) is on a wall"),
        (at(goal_pos=[3, 0]), r"the goal .* outside the level"),
        (at(agent_dir=4), r"agent_dir=4 is not a direction"),
        (cut, r"cells outside the level's width x height \(3 x 2\) must be walls"),
        (at(width=5), r"width and height must be in 1..3"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            check_level(bad)
        assert not bool(well_formed(bad)), message
        with pytest.raises(ValueError, match=message):
            Maze(3, 3).params_for_level(bad)
    # In a batch, the first bad level is named.
    batch = stack([level, level.replace(agent_pos=jnp.array([1, 1]))])
    with pytest.raises(ValueError, match=r"level \[1\] of the batch: the agent .* on a wall"):
        check_level(batch)
    # A level larger than the environment.
    with pytest.raises(ValueError, match=r"larger than the environment's 2 x 2"):
        pad(level, 2, 2)
    with pytest.raises(ValueError, match=r"larger than the environment"):
        Maze(2, 3).params_for_level(level)
    env = Maze(5, 5)
    big = env.default_params.replace(level=pad(level, 6, 6))
    with pytest.raises(ValueError, match=r"params.level .* shape \(6, 6\).*larger"):
        env.reset(KEY, big)
    small = env.default_params.replace(level=level)
    with pytest.raises(ValueError, match=r"pad it with rlsuite.envs.maze.pad\(level, 5, 5\)"):
        env.reset(KEY, small)
    with pytest.raises(ValueError, match=r"params.level: the agent .* on the goal"):
        env.reset(KEY, env.params_for_level(level).replace(
            level=pad(level.replace(agent_pos=jnp.array([2, 2])), 5, 5)
        ))  # fmt: skip
    with pytest.raises(ValueError, match=r"Level.to_str: one level expected"):
        batch = stack([level, level])
        Level.to_str(batch)


def test_bad_environments_and_params_are_refused():
    for kwargs, message in [
        ({"height": 0}, r"invalid height=0"),
        ({"width": -1}, r"invalid width=-1"),
        ({"height": 1, "width": 1}, r"at least 2 cells"),
        ({"height": 2.5}, r"invalid height=2.5"),
        ({"view_size": 4}, r"invalid view_size=4"),
        ({"max_steps": 0}, r"invalid max_steps=0"),
        ({"generator": make_generator(5, 5, 3)}, r"levels of \(5, 5\).*13 x 13"),
    ]:
        with pytest.raises(ValueError, match=message):
            Maze(**kwargs)
    env = Maze(3, 3)
    params = env.params_for_level(Level.from_str(TINY))
    for steps in (0, -3, 2.5):
        with pytest.raises(ValueError, match=r"params.max_steps.*an integer >= 1"):
            env.reset(KEY, params.replace(max_steps=steps))
    with pytest.raises(ValueError, match=r"random_level is set but the environment has no gen"):
        env.reset(KEY, params.replace(random_level=True))
    with pytest.raises(ValueError, match=r"invalid params.random_level=2"):
        env.reset(KEY, params.replace(random_level=2))
    with pytest.raises(ValueError, match=r"invalid max_steps=0"):
        envs.make("maze", max_steps=0)
    with pytest.raises(ValueError, match=r"max_episode_steps=None"):
        envs.make("maze", max_episode_steps=None)
    for args, message in [
        ((13, 13, 168), r"invalid n_walls=168; allowed: 0..167"),
        ((13, 13, -1), r"invalid n_walls=-1"),
        ((1, 1, 0), r"at least 2 cells"),
        ((13, 13, 2.0), r"invalid n_walls=2.0"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_generator(*args)
    with pytest.raises(ValueError, match=r"invalid num_edits=-1"):
        mutate(KEY, Level.from_str(TINY), -1)


# ----------------------------------------------------------------------------- jit and vmap
def test_a_vmapped_batch_of_levels_matches_one_by_one_runs():
    env = Maze()
    levels = held_out_levels()
    params = params_for_levels(env.default_params, levels).replace(
        max_steps=jnp.array([20, 30, 40, 250, 250, 250, 25, 250])
    )
    keys = jax.random.split(jax.random.key(3), 8)
    actions = jax.random.randint(jax.random.key(4), (8, 60), 0, 7)
    batched = jax.jit(jax.vmap(_rollout, in_axes=(None, 0, 0, 0)), static_argnums=0)
    outs = batched(env, params, actions, keys)
    assert outs[3].any()  # some horizons were hit
    for i in range(8):
        one = ROLLOUT(env, jax.tree.map(lambda x, i=i: x[i], params), actions[i], keys[i])
        for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(outs), strict=True):
            np.testing.assert_array_equal(a, b[i])


def test_level_hash_and_padding():
    level = Level.from_str(TINY)
    h = level_hash(level)
    assert h.dtype == jnp.int32 and int(h) == int(jax.jit(level_hash)(level))
    variants = [
        level.replace(wall_map=level.wall_map.at[0, 0].set(True)),
        level.replace(goal_pos=jnp.array([2, 1])),
        level.replace(agent_pos=jnp.array([0, 1])),
        level.replace(agent_dir=jnp.array(1)),
        pad(level, 4, 4),
    ]
    hashes = {int(h)} | {int(level_hash(v)) for v in variants}
    assert len(hashes) == 6
    padded = pad(level, 5, 7)
    assert np.shape(padded.wall_map) == (5, 7) and int(padded.width) == 3
    assert np.asarray(padded.wall_map)[3:].all() and np.asarray(padded.wall_map)[:, 3:].all()
    assert padded.to_str() == TINY  # the real level, padding left out


def test_make_maze_defaults_and_the_contract():
    env, params = envs.make("maze")
    assert "maze" in envs.names()
    assert isinstance(env, Maze) and (env.height, env.width, env.view_size) == (13, 13, 5)
    assert params.max_steps == 250 and params.random_level
    assert env.observation_space(params).shape == (79,) and env.action_space(params).n == 7
    level = env.generator(KEY)
    assert int(np.asarray(level.wall_map).sum()) <= 25
    with pytest.raises(ValueError, match="built-in"):
        envs.register("maze", Maze)
