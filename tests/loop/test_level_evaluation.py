"""Held-out level evaluation (`evaluate_levels`, `driver.evaluate_levels_batch`), a maze level's
picture (`rlsuite.envs.maze.render`), a grid of pictures (`plot_levels`) and the solve-rate table,
on hand-built levels whose returns are derived by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.maze import (
    EVAL_MAX_STEPS,
    HELD_OUT,
    Level,
    Maze,
    held_out_level,
    held_out_levels,
    params_for_levels,
    render,
    stack,
)
from rlsuite.envs.maze.render import AGENT_RGB, FREE_RGB, GOAL_RGB, WALL_RGB, agent_mask

from rlsuite.app.plotting import plot_levels
from rlsuite.environment.evaluations import solve_rate_table
from rlsuite.loop import driver
from rlsuite.loop.agent import Agent, policy
from rlsuite.loop.episodes import evaluate_levels
from rlsuite.loop.rollout import RecurrentPolicy

LEFT, RIGHT, FORWARD = 0, 1, 2
T = 20  # the maze's horizon (params.max_steps): the reward at step t is 1 - 0.9 t / T
ENV = Maze(height=3, width=4, max_steps=T)
# The goal straight ahead: forward, forward, then forward into the goal at step 3.
AHEAD_3 = ">..G\n....\n...."
# A wall ahead: forward never moves; the episode is truncated at T, return 0.
BLOCKED = ">#.G\n....\n...."
# The goal one step ahead: reached at step 1.
AHEAD_1 = ".>G.\n....\n...."
# The goal two cells below the agent, which faces right: turn right, forward, forward (step 3).
BELOW = ">...\n....\nG..."
ATTEMPTS = 3


def _params(*texts):
    return params_for_levels(ENV.default_params, stack([Level.from_str(t) for t in texts]))


def forward(key, obs):
    return jnp.full((obs.shape[0],), FORWARD, jnp.int32), {}


def counting(turn_at, eps=0.0):
    """A policy whose carry counts the steps of its episode: it turns right on the step where the
    count is `turn_at` (0: the first step), else goes forward; with probability `eps` per step it
    takes a random action of the three instead."""

    def apply(key, obs, carry):
        key_explore, key_action = jax.random.split(key)
        n = obs.shape[0]
        action = jnp.where(carry == turn_at, RIGHT, FORWARD)
        explore = jax.random.uniform(key_explore, (n,)) < eps
        action = jnp.where(explore, jax.random.randint(key_action, (n,), 0, 3), action)
        return action, {}, carry + 1

    return RecurrentPolicy(apply, lambda n: jnp.zeros((n,), jnp.int32))


evaluate_jit = jax.jit(evaluate_levels, static_argnums=(0, 2, 4, 5))


def test_scripted_forward_policy_by_hand_per_level_rows():
    # Forward only: AHEAD_3 solved at step 3 on every attempt, return 1 - 0.9 * 3 / 20 = 0.865;
    # BLOCKED never (truncated at T = 20, return 0); AHEAD_1 at step 1, 1 - 0.9 / 20 = 0.955.
    params = _params(AHEAD_3, BLOCKED, AHEAD_1)
    result = evaluate_jit(ENV, params, forward, jax.random.key(0), ATTEMPTS, T)
    expected = np.array([[1 - 0.9 * 3 / T] * 3, [0.0] * 3, [1 - 0.9 / T] * 3], np.float32)
    np.testing.assert_allclose(result.returns, expected, rtol=1e-6)
    np.testing.assert_array_equal(result.lengths, [[3] * 3, [T] * 3, [1] * 3])
    assert result.finished.all()  # the blocked level ends by truncation at T
    solve_rate = (np.asarray(result.returns) > 0).mean(axis=1)
    np.testing.assert_array_equal(solve_rate, [1.0, 0.0, 1.0])
    # One level alone gives the same row as in the mix.
    alone = evaluate_jit(ENV, _params(BLOCKED), forward, jax.random.key(0), ATTEMPTS, T)
    np.testing.assert_array_equal(alone.returns, result.returns[1:2])
    # A loop shorter than the episode cuts it: unfinished, return 0 so far.
    short = evaluate_levels(ENV, _params(BLOCKED, AHEAD_1), forward, jax.random.key(0), 2, 5)
    np.testing.assert_array_equal(short.lengths, [[5, 5], [1, 1]])
    np.testing.assert_array_equal(short.finished, [[False, False], [True, True]])


def test_recurrent_carry_starts_fresh_each_attempt():
    # Turn right on the first step, then forward: on BELOW the goal is reached at step 3 (turn,
    # move to (0, 1), forward into the goal at (0, 2)): 1 - 0.9 * 3 / 20 = 0.865, on every
    # attempt, which holds only if each attempt's count starts at 0 (from a count carried over
    # the agent would go right along the top row and never reach the goal: 0). On AHEAD_3 the
    # first-step turn faces the agent down, away from the goal: 0.
    params = _params(BELOW, AHEAD_3)
    result = evaluate_jit(ENV, params, counting(0), jax.random.key(1), ATTEMPTS, T)
    np.testing.assert_allclose(result.returns[0], [1 - 0.9 * 3 / T] * ATTEMPTS, rtol=1e-6)
    np.testing.assert_array_equal(result.lengths[0], [3] * ATTEMPTS)
    np.testing.assert_array_equal(result.returns[1], [0.0] * ATTEMPTS)
    # Turning only at count 5: AHEAD_3 is solved at step 3 before that, BELOW never (the agent
    # walks to (3, 0), turns down at step 6 and walks to (3, 2), away from the goal at (0, 2)).
    result = evaluate_jit(ENV, params, counting(5), jax.random.key(1), ATTEMPTS, T)
    np.testing.assert_array_equal(result.returns[0], [0.0] * ATTEMPTS)
    np.testing.assert_allclose(result.returns[1], [1 - 0.9 * 3 / T] * ATTEMPTS, rtol=1e-6)


def test_vmap_over_policy_parameters_equals_separate_calls():
    params = _params(BELOW, AHEAD_3, BLOCKED)

    def run(turn_at, key):
        return evaluate_levels(ENV, params, counting(turn_at, eps=0.3), key, 4, T)

    turns = jnp.asarray([0, 5], jnp.int32)
    keys = jax.random.split(jax.random.key(2), 2)
    batched = jax.jit(jax.vmap(run))(turns, keys)
    assert batched.returns.shape == (2, 3, 4)
    single = jax.jit(run)
    for i in range(2):
        one = single(turns[i], keys[i])
        for field in ("returns", "lengths", "finished"):
            np.testing.assert_array_equal(getattr(batched, field)[i], getattr(one, field))
    again = jax.jit(jax.vmap(run))(turns, keys)  # the same keys: the same results
    np.testing.assert_array_equal(again.returns, batched.returns)
    np.testing.assert_array_equal(again.lengths, batched.lengths)
    other = jax.jit(jax.vmap(run))(turns, jax.random.split(jax.random.key(3), 2))
    assert not np.array_equal(other.lengths, batched.lengths)  # exploration follows the key


def _scripted_agent():
    """An Agent with memory whose state is `counting`'s parameters (nothing is learnt)."""

    def act(state, obs, key, deterministic, carry):
        eps = jnp.where(deterministic, 0.0, state["eps"])
        action, _, carry = counting(state["turn_at"], eps).apply(key, obs, carry)
        return action, carry

    return Agent(
        name="scripted",
        config=None,
        env=ENV,
        env_params=ENV.default_params,
        default_hparams=None,
        init=lambda key, hparams: None,
        update=lambda state, hparams: (state, {}),
        act=act,
        check_hparams=lambda hparams: None,
        env_steps_per_update=0,
        initial_carry=lambda state, n: jnp.zeros((n,), jnp.int32),
    )


def test_driver_helper_over_runs():
    agent = _scripted_agent()
    states = {"turn_at": jnp.asarray([0, 5], jnp.int32), "eps": jnp.asarray([0.3, 0.3])}
    params = _params(BELOW, AHEAD_3)
    batch = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5, 6))
    # Deterministic (no exploration): run 0 turns first (BELOW 0.865, AHEAD_3 0), run 1 turns at
    # count 5 (BELOW 0, AHEAD_3 0.865), as in test_recurrent_carry_starts_fresh_each_attempt.
    result = batch(agent, states, jax.random.key(4), params, 2, True, T)
    solved = 1 - 0.9 * 3 / T
    np.testing.assert_allclose(
        result.returns, [[[solved] * 2, [0.0] * 2], [[0.0] * 2, [solved] * 2]], rtol=1e-6
    )
    # Sampling: every run's policy, with its own key split from the key, as jax.vmap over the
    # runs of evaluate_levels; max_steps defaults to EVAL_STEP_CAP (the maze's episodes end at T).
    result = batch(agent, states, jax.random.key(5), params, 3, False, None)

    def one(state, key):
        return evaluate_levels(ENV, params, policy(agent, state, False), key, 3, T)

    keys = jax.random.split(jax.random.key(5), 2)
    expected = jax.jit(jax.vmap(one))(states, keys)
    # The same episodes (lengths); rewards to float rounding (the levels' params are an argument
    # here and constants there, and XLA may compute 0.9 t / T in another order).
    np.testing.assert_array_equal(result.lengths, expected.lengths)
    np.testing.assert_allclose(result.returns, expected.returns, rtol=1e-6)
    assert result.returns.shape == (2, 2, 3)


def test_held_out_mazes_in_one_call():
    # Forward only never reaches a held-out maze's goal (none lies straight ahead of the start):
    # every episode is truncated at the horizon, 250 steps, with return 0.
    env = Maze()
    params = params_for_levels(env.default_params, held_out_levels())
    result = evaluate_levels(env, params, forward, jax.random.key(6), 2, EVAL_MAX_STEPS)
    assert result.returns.shape == (len(HELD_OUT), 2)
    np.testing.assert_array_equal(result.returns, 0.0)
    np.testing.assert_array_equal(result.lengths, EVAL_MAX_STEPS)


def test_bad_input_refused():
    params = _params(AHEAD_3)
    with pytest.raises(ValueError, match="attempts must be an integer >= 1"):
        evaluate_levels(ENV, params, forward, jax.random.key(0), 0, T)
    with pytest.raises(ValueError, match="leading \\[num_levels\\] axis"):
        evaluate_levels(ENV, ENV.default_params, forward, jax.random.key(0), 2, T)
    with pytest.raises(ValueError, match="pass max_steps"):
        evaluate_levels(ENV, params, forward, jax.random.key(0), 2)


# ----------------------------------------------------------------------------- pictures
# The agent's triangle in an 8-pixel cell facing right, by hand: pixel centres at
# c = (i + 0.5) / 8 - 0.5 = -0.4375 .. 0.4375; column x is in from the base (x >= -0.38) and row
# y where |y| <= 0.31 (0.37 - x) / 0.75: x = -0.4375 none; -0.3125 (bound 0.282) and -0.1875
# (0.230) rows 2..5 (|y| <= 0.1875); -0.0625 (0.179), 0.0625 (0.127) and 0.1875 (0.075) rows
# 3, 4 (|y| = 0.0625); 0.3125 (0.024) and 0.4375 (below 0) none. The tip points right.
RIGHT_MASK = np.zeros((8, 8), bool)
RIGHT_MASK[2:6, 1:3] = True
RIGHT_MASK[3:5, 3:6] = True


def test_agent_triangle_by_hand_and_turned_per_direction():
    np.testing.assert_array_equal(agent_mask(0, 8), RIGHT_MASK)
    for direction in range(4):  # down, left, up: a quarter turn clockwise each (y points down)
        np.testing.assert_array_equal(agent_mask(direction, 8), np.rot90(RIGHT_MASK, -direction))


def test_render_pixels_of_a_small_level():
    level = Level.from_str("v#G\n...")  # the agent at (0, 0) facing down, a wall, the goal
    image = render(level, cell=8)
    assert image.shape == (16, 24, 3) and image.dtype == np.uint8
    assert (image[0:8, 8:16] == WALL_RGB).all()  # the wall cell (x, y) = (1, 0)
    assert (image[0:8, 16:24] == GOAL_RGB).all()  # the goal (2, 0)
    assert (image[8:16] == FREE_RGB).all()  # the free bottom row
    agent = image[0:8, 0:8]
    down = np.rot90(RIGHT_MASK, -1)
    assert (agent[down] == AGENT_RGB).all() and (agent[~down] == FREE_RGB).all()
    # The padding of a level stacked into a larger map is left out; cell sets the scale.
    padded = jax.tree.map(lambda x: x[0], stack([level], 5, 6))
    np.testing.assert_array_equal(render(padded, cell=8), image)
    assert render(level, cell=2).shape == (4, 6, 3)
    with pytest.raises(ValueError, match="one level expected"):
        render(stack([level, level]))
    with pytest.raises(ValueError, match="cell must be an integer >= 1"):
        render(level, cell=0)


def test_plot_levels_writes_a_grid(tmp_path):
    import matplotlib.image

    names = list(HELD_OUT)
    images = [render(held_out_level(name)) for name in names]
    rates = np.linspace(0, 1, len(names))
    titles = [f"{name}\nsolved {rate:.2f}" for name, rate in zip(names, rates, strict=True)]
    out = plot_levels(images, titles, tmp_path / "held_out", ncols=4)
    assert out == tmp_path / "held_out.png"
    pixels = matplotlib.image.imread(out)
    # 4 columns x 2 inches x 100 dpi wide; 2 rows x 2.5 inches x 100 dpi high.
    assert pixels.shape[:2] == (500, 800)
    assert pixels[..., :3].var() > 0
    with pytest.raises(ValueError, match="one title per image"):
        plot_levels(images, titles[:-1], tmp_path / "x.png")


def test_solve_rate_table():
    # A: returns 0.5, 0 -> solved 1 of 2, mean 0.25; B: 0.25, 0.75 -> 2 of 2, mean 0.5;
    # mean row: solve rate (0.5 + 1) / 2 = 0.75, mean return 0.375, 4 attempts in all.
    expected = (
        "| level | solve rate | mean return | attempts |\n"
        "|---|---:|---:|---:|\n"
        "| A | 0.50 | 0.250 | 2 |\n"
        "| B | 1.00 | 0.500 | 2 |\n"
        "| mean | 0.75 | 0.375 | 4 |"
    )
    assert solve_rate_table(["A", "B"], np.array([[0.5, 0.0], [0.25, 0.75]])) == expected
    # [runs, levels, attempts]: the runs' attempts pooled per level, the same table.
    per_run = np.array([[[0.5], [0.25]], [[0.0], [0.75]]])
    assert solve_rate_table(["A", "B"], per_run) == expected
    with pytest.raises(ValueError, match="one per name"):
        solve_rate_table(["A"], np.zeros((2, 3)))
