"""MiniGrid tasks through XLand-MiniGrid (`envs/minigrid_adapter.py`).

Parity: 1,000 random steps of a vmapped batch of our adapter equal XLand-MiniGrid's own
environment behind its auto-reset (`xminigrid.wrappers.GymAutoResetWrapper`), step for step: the
observation (ours equals the conversion of XLand-MiniGrid's raw view, and the raw view read back
from ours equals XLand-MiniGrid's), the whole state (so each episode's start across episode
ends), rewards, terminations and truncations, and the pre-reset observation. The time limit
(`max_steps`) is short enough that episodes end at it many times, and the random walks reach the
goal (Memory: either end of its corridor) several times. Our auto-reset is given the key the
wrapper resets with, `jax.random.split(state.key)[0]` (the reset of `Environment.step`, built of
the same pieces `step_without_reset` and `auto_reset`, draws its own).
"""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.environment import auto_reset, select, split_step_key

pytest.importorskip("xminigrid")

from rlsuite.envs import minigrid_adapter as mg  # noqa: E402
from rlsuite.envs.minigrid_adapter import MiniGridEnv, observation_ids  # noqa: E402

from rlsuite.networks import one_hot_fields  # noqa: E402
from tests.tiers import slow_but

STEPS = 1000

# task: (max_steps, environments, the actions the random walk draws from). DoorKey's walk leaves
# out put-down (4), so that a dropped key does not keep it from the goal for long: even so it
# reaches the goal only two or three times in 4,000 steps.
CASES = {
    "MiniGrid-Empty-5x5": (30, 2, range(6)),
    "MiniGrid-MemoryS8": (40, 2, range(6)),
    "MiniGrid-DoorKey-5x5": (100, 4, (0, 1, 2, 3, 5)),
}


def _reference(task, max_steps, keys, actions):
    """XLand-MiniGrid's environment behind its auto-reset wrapper: the first raw view and state,
    then per step the view, state, reward, step type, discount, the raw step's view and
    direction (before the reset) and the key the wrapper resets with where the episode ends."""
    import xminigrid
    from xminigrid.wrappers import GymAutoResetWrapper

    env, params = xminigrid.make(task, max_steps=max_steps)
    wrapped = GymAutoResetWrapper(env)
    step = jax.vmap(env.step, in_axes=(None, 0, 0))
    wrapped_step = jax.vmap(wrapped.step, in_axes=(None, 0, 0))

    def one(timestep, action):
        reset_key = jax.vmap(lambda k: jax.random.split(k)[0])(timestep.state.key)
        pre = step(params, timestep, action)
        timestep = wrapped_step(params, timestep, action)
        out = (
            timestep.observation,
            timestep.state,
            timestep.reward,
            timestep.step_type,
            timestep.discount,
            pre.observation,
            pre.state.agent.direction,
            reset_key,
        )
        return timestep, out

    @jax.jit
    def run(keys, actions):
        timestep = jax.vmap(wrapped.reset, in_axes=(None, 0))(params, keys)
        return timestep.observation, timestep.state, jax.lax.scan(one, timestep, actions)[1]

    return run(keys, actions)


def _ours(env, keys, actions, reset_keys):
    """Our adapter, a vmapped batch stepped with our auto-reset, each reset given `reset_keys`."""
    params = env.default_params

    def one(carry, xs):
        obs, state = carry
        action, reset_key = xs
        result = jax.vmap(env.step_without_reset, in_axes=(None, 0, 0, None))(
            jax.random.key(0), state, action, params
        )

        def reset_where(done, obs, state):
            fresh = jax.vmap(env.reset, in_axes=(0, None))(reset_key, params)
            return jax.vmap(select)(done, fresh, (obs, state))

        obs, state, reward, terminated, truncated, info = auto_reset(result, reset_where)
        out = (obs, state, reward, terminated, truncated, info["final_observation"])
        return (obs, state), out

    @jax.jit
    def run(keys, actions, reset_keys):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
        return obs, jax.lax.scan(one, (obs, state), (actions, reset_keys))[1]

    return run(keys, actions, reset_keys)


def _leaves(tree):
    """The leaves of a state as numpy arrays (keys as their data)."""

    def data(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(x))
        return np.asarray(x)

    return [data(x) for x in jax.tree.leaves(tree)]


# One task in the default run (the one with a key, a door and every action); the rest slow.
@pytest.mark.parametrize("task", slow_but("MiniGrid-DoorKey-5x5", CASES))
def test_parity_with_xminigrids_auto_reset(task):
    max_steps, num_envs, choices = CASES[task]
    env = MiniGridEnv(task, max_steps=max_steps)
    key_actions, key_reset = jax.random.split(jax.random.key(3))
    pick = jax.random.randint(key_actions, (STEPS, num_envs), 0, len(choices))
    actions = jnp.asarray(choices, jnp.int32)[pick]
    keys = jax.random.split(key_reset, num_envs)
    first_view, first_state, ref = _reference(task, max_steps, keys, actions)
    view, state, reward, step_type, discount, pre_view, pre_direction, reset_keys = ref
    our_first, ours = _ours(env, keys, actions, reset_keys)
    obs, our_state, our_reward, terminated, truncated, final = ours

    image = jax.jit(jax.vmap(jax.vmap(observation_ids)))
    direction = state.agent.direction
    np.testing.assert_array_equal(
        our_first, jax.vmap(observation_ids)(first_view, first_state.agent.direction)
    )
    np.testing.assert_array_equal(obs, image(view, direction))
    np.testing.assert_array_equal(np.asarray(obs)[..., :2], np.asarray(view))
    np.testing.assert_array_equal(np.asarray(obs)[..., 0, 0, 2], direction)
    for ours_leaf, ref_leaf in zip(_leaves(our_state), _leaves(state), strict=True):
        np.testing.assert_array_equal(ours_leaf, ref_leaf)
    np.testing.assert_array_equal(our_reward, reward)
    last, discount = np.asarray(step_type) == 2, np.asarray(discount)
    np.testing.assert_array_equal(terminated, last & (discount == 0))
    np.testing.assert_array_equal(truncated, last & (discount == 1))
    np.testing.assert_array_equal(final, image(pre_view, pre_direction))
    terminated, truncated = np.asarray(terminated), np.asarray(truncated)
    # Both kinds of end happen, and a new episode starts after each (step 0, a fresh view).
    assert terminated.sum() >= 2 and truncated.sum() >= 20, (terminated.sum(), truncated.sum())
    assert not (terminated & truncated).any()
    done = terminated | truncated
    np.testing.assert_array_equal(np.asarray(our_state.step_num) == 0, done)
    our_reward = np.asarray(our_reward)
    assert (our_reward[terminated] > 0).any() and not our_reward[~done].any()
    # Where an episode hit the time limit, the step number was max_steps before the reset.
    steps = np.asarray(jnp.concatenate([first_state.step_num[None], state.step_num[:-1]]))
    np.testing.assert_array_equal(steps[truncated], max_steps - 1)


# ----------------------------------------------------------------- the observation by hand


def test_the_ids_of_a_small_view_and_their_one_hot_features():
    # Two rows of three cells: (tile, colour) ids.
    view = jnp.array(
        [
            [[2, 6], [6, 2], [0, 0]],  # grey wall, green goal, nothing (outside the grid)
            [[1, 7], [7, 5], [8, 5]],  # black floor, yellow key, yellow locked door
        ],
        jnp.uint8,
    )
    ids = observation_ids(view, jnp.int32(2))  # facing down
    assert ids.shape == (2, 3, 3) and ids.dtype == np.uint8
    np.testing.assert_array_equal(ids[..., :2], view)
    assert (np.asarray(ids[..., 2]) == 2).all()
    # What the networks read: each field one-hot, concatenated (rlsuite.networks.Encoder).
    image = np.asarray(one_hot_fields(ids, mg.sizes()))
    assert mg.sizes() == (13, 12, 4)
    assert image.shape == (2, 3, 29) and image.dtype == np.float32
    expected = np.zeros((2, 3, 29), np.float32)
    for (row, col), (tile, colour) in {
        (0, 0): (2, 6),
        (0, 1): (6, 2),
        (0, 2): (0, 0),
        (1, 0): (1, 7),
        (1, 1): (7, 5),
        (1, 2): (8, 5),
    }.items():
        expected[row, col, tile] = 1.0  # channels 0..12: the tile
        expected[row, col, 13 + colour] = 1.0  # channels 13..24: the colour
        expected[row, col, 25 + 2] = 1.0  # channels 25..28: the direction, down
    np.testing.assert_array_equal(image, expected)


def test_the_view_is_egocentric_with_the_direction_beside_it():
    """Empty-5x5's start: the agent at row 1, column 1 of the grid, facing right (east), the goal
    at row 3, column 3. The view turns the grid so that the agent looks up from the bottom
    centre (view row 6, column 3): the goal, two cells ahead and two to its right (the grid's
    south), is at view row 4, column 5."""
    env = MiniGridEnv("MiniGrid-Empty-5x5")
    obs, state = env.reset(jax.random.key(0))
    obs = np.asarray(obs)
    space = env.observation_space(env.default_params)
    assert obs.shape == (7, 7, 3) and space.shape == (7, 7, 3) and space.sizes == (13, 12, 4)
    assert obs.dtype == np.uint8 and bool(space.contains(obs))
    tiles = obs[..., 0]
    floor, wall, goal = 1, 2, 6
    assert tiles[4, 5] == goal and (tiles == goal).sum() == 1
    assert tiles[6, 3] == floor  # the agent's own cell
    assert tiles[6, 2] == wall  # on its left, the grid's north wall
    assert tiles[5, 3] == floor and tiles[4, 3] == floor  # ahead, the grid's columns 2 and 3,
    assert tiles[3, 3] == wall  # then its east wall (column 4)
    assert tiles[2, 3] == 0 and tiles[6, 0] == 0  # and beyond the grid: nothing
    assert (obs[..., 2] == 1).all()  # facing right, in every cell
    assert int(state.agent.direction) == 1


# ----------------------------------------------------------------- ends


def _walk(env, params, actions):
    """Per step of `actions` from a reset: reward, terminated, truncated (no auto-reset)."""

    def one(state, action):
        _, state, reward, terminated, truncated, _ = env.step_without_reset(
            jax.random.key(0), state, action, params
        )
        return state, (reward, terminated, truncated)

    _, state = env.reset(jax.random.key(0), params)
    return [np.asarray(x) for x in jax.lax.scan(one, state, jnp.asarray(actions))[1]]


TO_GOAL = [0, 0, 1, 0, 0]  # Empty-5x5: forward, forward, turn right (south), forward, forward


def test_reaching_the_goal_terminates_and_the_time_limit_truncates():
    env = MiniGridEnv("MiniGrid-Empty-5x5")
    params = env.default_params
    assert params.max_steps == 100 == env.max_episode_steps  # 4 * 5 * 5, MiniGrid's
    reward, terminated, truncated = _walk(env, params, TO_GOAL)
    np.testing.assert_array_equal(terminated, [0, 0, 0, 0, 1])
    assert not truncated.any()
    np.testing.assert_allclose(reward, [0, 0, 0, 0, 1 - 0.9 * 5 / 100], rtol=1e-6)
    # Three turns with a limit of three steps: a time limit, not a termination.
    reward, terminated, truncated = _walk(env, params.replace(max_steps=3), [1, 1, 1])
    np.testing.assert_array_equal(truncated, [0, 0, 1])
    assert not terminated.any() and not reward.any()
    # The goal on the limit's own step: a termination (XLand-MiniGrid's discount is 0).
    reward, terminated, truncated = _walk(env, params.replace(max_steps=5), TO_GOAL)
    np.testing.assert_array_equal(terminated, [0, 0, 0, 0, 1])
    assert not truncated.any()
    np.testing.assert_allclose(reward[-1], 0.1, rtol=1e-6)


def test_the_auto_reset_of_step_keeps_the_last_observation():
    env = MiniGridEnv("MiniGrid-DoorKey-5x5", max_steps=2)
    params = env.default_params
    _, state = env.reset(jax.random.key(1), params)
    key = jax.random.key(2)
    step = jax.jit(env.step)
    _, state, _, terminated, truncated, _ = step(key, state, jnp.int32(1), params)
    assert not terminated and not truncated
    before = env.step_without_reset(key, state, jnp.int32(1), params)[0]
    obs, state, _, terminated, truncated, info = step(key, state, jnp.int32(1), params)
    assert truncated and not terminated and int(state.step_num) == 0
    np.testing.assert_array_equal(info["final_observation"], before)
    fresh, _ = env.reset(split_step_key(key)[1], params)
    np.testing.assert_array_equal(obs, fresh)


def test_memory_ends_at_either_end_of_its_corridor_rewarding_the_right_one():
    """MemoryS8: the corridor's ends are row 2 and row 4 of the last column of the room; the
    reward is paid only at the one whose object matches the one shown at the start."""
    env = MiniGridEnv("MiniGrid-MemoryS8")
    params = env.default_params

    def go_to(state, target):
        # Teleport next to the end (the grid's row 3, the target's column), facing it.
        row, col = int(target[0]), int(target[1])
        facing = 0 if row < 3 else 2  # up or down
        agent = state.agent.replace(position=jnp.array((3, col)), direction=jnp.asarray(facing))
        state = state.replace(agent=agent)
        return env.step_env(jax.random.key(0), state, jnp.int32(0), params)

    _, state = env.reset(jax.random.key(4), params)
    _, _, reward, terminated, truncated, _ = go_to(state, state.carry.success_pos)
    assert terminated and not truncated and float(reward) > 0.9
    _, _, reward, terminated, truncated, _ = go_to(state, state.carry.failure_pos)
    assert terminated and not truncated and float(reward) == 0.0
    assert env.action_mask(state, params) is None  # every action is always legal


# ----------------------------------------------------------------- names, options, refusals


def test_the_minigrid_tasks_are_named_and_the_xland_ones_refused_saying_why():
    import xminigrid

    names, refused = mg.minigrid_names(), mg.refused()
    assert len(names) == 23 and all(n.startswith("MiniGrid-") for n in names)
    assert {"MiniGrid-DoorKey-5x5", "MiniGrid-MemoryS8", "MiniGrid-Empty-5x5"} <= set(names)
    assert set(refused) == {n for n in xminigrid.registered_environments() if "XLand" in n}
    assert sorted(names + list(refused)) == sorted(xminigrid.registered_environments())
    with pytest.raises(ValueError, match="XLand-MiniGrid-R1-9x9' cannot run here.*Hugging Face"):
        MiniGridEnv("XLand-MiniGrid-R1-9x9")
    with pytest.raises(ValueError, match="rlsuite downloads nothing at run time"):
        MiniGridEnv("XLand-MiniGrid-R4-13x13")
    with pytest.raises(ValueError, match=r"unknown MiniGrid task 'Empty-5x5'; allowed: MiniGrid-"):
        MiniGridEnv("Empty-5x5")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"foo": 1}, r"unknown option\(s\) \['foo'\]; allowed: height, width, view_size, max_st"),
        ({"num_objects": 3}, r"unknown option\(s\) \['num_objects'\]"),
        ({"max_steps": 0}, r"max_steps=0; allowed: an integer >= 1"),
        ({"max_steps": True}, r"max_steps=True; allowed: an integer >= 1"),
        ({"max_steps": 2.5}, r"max_steps=2.5; allowed: an integer >= 1"),
        ({"view_size": 4}, r"view_size=4; allowed: an odd integer >= 3"),
        ({"height": 2}, r"height=2; allowed: an integer >= 3"),
        ({"render_mode": "human"}, r"render_mode='human'; allowed: rgb_array, rich_text"),
    ],
)
def test_bad_options_are_refused_naming_the_allowed_ones(options, message):
    with pytest.raises(ValueError, match=message):
        MiniGridEnv("MiniGrid-Empty-5x5", **options)


def test_options_set_the_params_and_the_shapes():
    env = MiniGridEnv("MiniGrid-DoorKey-5x5", max_steps=50, view_size=5)
    params = env.default_params
    assert (params.max_steps, params.view_size, params.height) == (50, 5, 5)
    assert env.max_episode_steps == 50
    assert env.observation_space(params).shape == (5, 5, 3)
    assert env.reset(jax.random.key(0))[0].shape == (5, 5, 3)
    # max_steps left out follows the size given: DoorKey's 10 * height * width.
    assert MiniGridEnv("MiniGrid-DoorKey-5x5", height=6, width=6).max_episode_steps == 360
    assert MiniGridEnv("MiniGrid-DoorKey-5x5").max_episode_steps == 250
    assert MiniGridEnv("MiniGrid-MemoryS8").max_episode_steps == 320  # 5 * width ** 2
    playground = MiniGridEnv("MiniGrid-Playground", num_objects=3)
    assert playground.default_params.num_objects == 3


def test_params_may_change_the_time_limit_but_not_a_shape():
    env = MiniGridEnv("MiniGrid-Empty-5x5")
    params = env.default_params
    _, truncated = _walk(env, params.replace(max_steps=7), [1] * 7)[1:]
    np.testing.assert_array_equal(truncated, [0] * 6 + [1])
    with pytest.raises(ValueError, match=r"params.view_size=5 differs .* 7; .*constructor"):
        env.reset(jax.random.key(0), params.replace(view_size=5))
    with pytest.raises(ValueError, match=r"params.max_steps=0; allowed: an integer >= 1"):
        env.reset(jax.random.key(0), params.replace(max_steps=0))


def test_no_task_downloads_anything():
    """In a subprocess with the network closed: import, build, reset and step every task."""
    script = textwrap.dedent(
        """
        import os, socket, sys, tempfile
        def refuse(*args, **kwargs):
            raise RuntimeError(f"network use: {args}")
        socket.socket.connect = socket.socket.connect_ex = refuse
        socket.create_connection = socket.getaddrinfo = refuse
        data = tempfile.mkdtemp()
        os.environ["XLAND_MINIGRID_DATA"] = data
        import jax
        from rlsuite.envs import minigrid_adapter as mg
        for task in mg.minigrid_names():
            env = mg.MiniGridEnv(task)
            params = env.default_params
            obs, state = jax.eval_shape(env.reset, jax.random.key(0), params)
            step = lambda s: env.step(jax.random.key(1), s, jax.numpy.int32(0), params)
            assert jax.eval_shape(step, state)[0].shape == obs.shape
        assert os.listdir(data) == [], os.listdir(data)
        print(len(mg.minigrid_names()))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "23"
