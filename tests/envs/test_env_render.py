"""The NumPy renderers of our environments (`render(state, params, width, height)`), each drawn
through `rendering.render_state` from a state with known positions or angles set, checked
against pixels derived by hand from its docstring; `renderable_names` lists exactly the
environments that draw; and `rlsuite render` writes a pendulum's video end to end."""

import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs import registry, rendering
from rlsuite.envs.brax_adapter import BraxEnv
from rlsuite.envs.goal.point_maze import LAYOUTS

from rlsuite import envs
from tests.app.test_cli import rlsuite

WHITE, BLACK, DARK = (255, 255, 255), (0, 0, 0), (60, 60, 60)
GREEN, BLUE, ARENA_GREY = (60, 170, 60), (40, 80, 220), (90, 90, 90)
POLE = (204, 77, 77)  # the pendulum's
LINK, JOINT = (0, 204, 204), (204, 204, 0)  # the acrobot's
GROUND, FLAG, WHEEL = (110, 140, 90), (204, 204, 0), (128, 128, 128)  # the mountain car's
ARC = (200, 200, 200)  # the point robot's goals


def reset(name):
    env, params = envs.make(name)
    _, state = env.reset(jax.random.key(0), params)
    return env, params, state


def inner(outer, **fields):
    """`outer` (a wrapper's state: `TimeLimitState`, `RL2State`) with its inner state's fields
    set."""
    return outer.replace(env_state=outer.env_state.replace(**fields))


def colour(image, row, col):
    return tuple(int(v) for v in image[row, col])


def test_the_pendulum_stands_up_at_zero_and_turns_counterclockwise():
    env, params, state = reset("pendulum")

    def picture(theta):
        return rendering.render_state(env, params, inner(state, theta=np.float32(theta)), 100, 100)

    # 100 x 100: the pivot at (50, 50), the pole 40 px long to its tip, 4 px either side.
    up = picture(0.0)
    assert up.shape == (100, 100, 3) and up.dtype == np.uint8
    assert colour(up, 15, 50) == POLE and colour(up, 85, 50) == WHITE  # above, not below
    assert colour(up, 49, 49) == BLACK  # the pivot
    # theta = pi / 2 lies left (counterclockwise, the way a positive torque turns it), -pi / 2
    # right; pi hangs down.
    left, right, down = picture(math.pi / 2), picture(-math.pi / 2), picture(math.pi)
    assert colour(left, 50, 15) == POLE and colour(left, 50, 85) == WHITE
    assert colour(left, 15, 50) == WHITE
    assert colour(right, 50, 85) == POLE and colour(right, 50, 15) == WHITE
    assert colour(down, 85, 50) == POLE and colour(down, 15, 50) == WHITE
    # 45 degrees: the tip at (50 - 28.3, 50 - 28.3), up and to the left; the state's theta is
    # not wrapped, and a whole turn more draws the same.
    tilted = picture(math.pi / 4)
    assert colour(tilted, 25, 25) == POLE and colour(tilted, 25, 75) == WHITE
    assert np.array_equal(picture(math.pi / 4 + 2 * math.pi), tilted)
    assert np.any(tilted != up)


def test_the_acrobot_hangs_from_its_pivot_below_the_target_line():
    env, params, state = reset("acrobot")

    def picture(t1, t2):
        fields = {"theta1": np.float32(t1), "theta2": np.float32(t2)}
        return rendering.render_state(env, params, inner(state, **fields), 120, 120)

    # 120 / (2 x 2.2) = 27.3 px/m, the pivot at (60, 60), the line at 60 - 27.3 = 32.7 (rows 32
    # and 33), links 2.7 px either side of their axes, the joints' disks 2.7 px in radius.
    down = picture(0.0, 0.0)
    assert np.all(down[32:34] == 0) and np.all(down[[31, 34], :40] == 255)
    assert colour(down, 100, 60) == LINK and colour(down, 100, 59) == LINK  # the second link
    assert colour(down, 59, 59) == JOINT and colour(down, 87, 59) == JOINT  # pivot, middle
    assert colour(down, 45, 60) == WHITE and colour(down, 117, 60) == WHITE  # above; past tip
    # t1 = pi / 2: the first link swings right, level; the middle joint at (87.3, 60).
    right = picture(math.pi / 2, 0.0)
    assert colour(right, 60, 100) == LINK and colour(right, 60, 20) == WHITE
    assert colour(right, 60, 87) == JOINT and colour(right, 100, 60) == WHITE
    # t2 is relative to the first link: t2 = pi / 2 more turns the second one straight up from
    # the middle joint, its tip (87.3, 32.7) on the line.
    elbow = picture(math.pi / 2, math.pi / 2)
    assert colour(elbow, 45, 87) == LINK and colour(elbow, 75, 87) == WHITE
    # Upright (t1 = pi), the tip 54.5 px up, past the line: the termination's condition holds.
    up = picture(math.pi, 0.0)
    # The middle joint is 1 m up, on the line.
    assert colour(up, 10, 60) == LINK and colour(up, 45, 60) == LINK
    assert colour(up, 32, 60) == JOINT
    assert colour(up, 32, 20) == BLACK and colour(up, 100, 60) == WHITE
    t1, t2 = math.pi, 0.0
    assert -math.cos(t1) - math.cos(t1 + t2) > 1.0


def test_the_mountain_car_sits_on_the_hill_below_the_flag():
    env, params, state = reset("mountain_car_continuous")

    def picture(position):
        return rendering.render_state(
            env, params, inner(state, position=np.float32(position)), 180, 120
        )

    # 180 x 120: 100 px per unit both ways (180 / 1.8, 120 / 1.2), no margin: position p at
    # column 100 (p + 1.2), height h at row 120 - 100 h.
    valley = -math.pi / 6  # h = 0.55 - 0.45 = 0.1, level: column 67.6, the hill at row 110
    low = picture(valley)
    # The ground below the hill, the sky above it, at column 20 (p = -0.995, h = 0.488: row
    # 71.2) and at the valley's bottom.
    assert colour(low, 75, 20) == GROUND and colour(low, 67, 20) == WHITE
    assert colour(low, 113, 90) == GROUND and colour(low, 5, 90) == WHITE
    # The car in the valley, level: its axis 0.06 above the hill (row 104), 3 px either side,
    # from column 64.6 to 70.6; its wheels (2.5 px) centred 2.5 px above the hill at columns
    # 63.6 and 71.6.
    assert colour(low, 104, 67) == BLACK and colour(low, 104, 72) == BLACK
    assert colour(low, 108, 63) == WHEEL and colour(low, 108, 71) == WHEEL
    assert colour(low, 96, 67) == WHITE  # above its roof (row 101)
    # The flag at 0.45 (column 165, the hill at row 21.1): the pole up to row 6.1, the flag
    # from there to row 11.1, columns 165 to 173.
    assert colour(low, 8, 169) == FLAG and colour(low, 15, 164) == BLACK
    assert colour(low, 15, 169) == WHITE
    # Moved up the left slope (p = -1, h = 0.486, slope -1.34: the body's axis 0.06 along the
    # normal, at (24.8, 67.8)); the valley is empty again.
    slope = picture(-1.0)
    assert colour(slope, 67, 24) == BLACK and colour(slope, 104, 67) == WHITE
    cols, rows = np.nonzero(np.all(slope[:, :120] == BLACK, axis=-1))[::-1]
    assert abs(cols.mean() + 0.5 - 24.8) < 1.5 and abs(rows.mean() + 0.5 - 67.8) < 1.5


def test_the_point_mass_and_its_goal_sit_in_the_arena():
    env, params, state = reset("point_mass")

    def picture(position, goal):
        fields = {"position": jnp.array(position, jnp.float32), "goal": jnp.array(goal)}
        return rendering.render_state(env, params, inner(state, **fields), 100, 100)

    # The arena [-2, 2]^2 over 90 px: 22.5 px per unit, from 5 to 95; x right, y up; the goal
    # disk 0.2 x 22.5 = 4.5 px, the point 0.16 x 22.5 = 3.6 px.
    image = picture([1.0, 0.0], [-1.0, 1.0])
    assert colour(image, 49, 72) == BLUE and colour(image, 27, 27) == GREEN
    assert colour(image, 50, 50) == WHITE and colour(image, 2, 50) == ARENA_GREY
    assert colour(image, 50, 97) == ARENA_GREY and colour(image, 50, 93) == WHITE
    moved = picture([0.0, -1.0], [-1.0, 1.0])  # down, not up
    assert colour(moved, 72, 50) == BLUE and colour(moved, 27, 50) == WHITE
    assert colour(moved, 49, 72) == WHITE


def test_point_reach_draws_its_point_and_goal():
    env, params, state = reset("goal/point_reach")
    fields = {"state": jnp.array([0.5, -0.5]), "goal": jnp.array([-0.5, 0.5])}
    # The arena [-1, 1]^2 over 90 px: 45 px per unit; the goal 4.5 px, the point 3.6 px.
    image = rendering.render_state(env, params, inner(state, **fields), 100, 100)
    assert colour(image, 72, 72) == BLUE and colour(image, 27, 27) == GREEN
    assert colour(image, 27, 72) == WHITE and colour(image, 2, 2) == ARENA_GREY


def cell_samples(image, rows, columns, cell, left=0, top=0):
    """The colour of each cell, read off a pixel 2 px in from its top left corner (the agent
    and goal marks are near the centres)."""
    return image[top + 2 : top + rows * cell : cell, left + 2 : left + columns * cell : cell]


@pytest.mark.parametrize(
    ("name", "layout", "size"),
    [
        ("goal/point_u_maze", "u_maze", (50, 50)),
        ("goal/point_big_maze", "big_maze", (80, 80)),
        ("goal/point_hardest_maze", "hardest_maze", (200, 90)),
    ],
)
def test_a_point_maze_draws_its_layout(name, layout, size):
    env, params, state = reset(name)
    width, height = size
    walls = np.array([[c == "#" for c in row] for row in LAYOUTS[layout]])
    rows, columns = walls.shape
    # Cells of 10 px (50 / 5, 80 / 8, min(200 / 12, 90 / 9)), centred: the hardest maze's 120
    # columns with 40 px of wall either side.
    left = (width - 10 * columns) // 2
    image = rendering.render_state(env, params, state, width, height)
    expected = np.where(walls[..., None], np.uint8(DARK), np.uint8(WHITE))
    assert np.array_equal(cell_samples(image, rows, columns, 10, left), expected)
    assert np.all(image[:, :left] == DARK) and np.all(image[:, left + 10 * columns :] == DARK)


def test_the_u_maze_agent_and_goal_are_where_their_positions_are():
    env, params, state = reset("goal/point_u_maze")

    def picture(position, goal):
        fields = {"state": jnp.array(position, jnp.float32), "goal": jnp.array(goal)}
        return rendering.render_state(env, params, inner(state, **fields), 100, 100)

    # 5 x 5 cells of 20 px, 5 px per unit (cell_size 4): position (x, y) at column 20 (y / 4 +
    # 0.5), row 20 (x / 4 + 0.5). The agent's square is 1.25 px either side, the goal's disk
    # 2.5 px in radius.
    image = picture([4.0, 4.0], [12.0, 4.0])  # cells (1, 1) and (3, 1)
    assert colour(image, 30, 30) == BLUE and colour(image, 70, 30) == GREEN
    assert colour(image, 30, 33) == WHITE and colour(image, 50, 30) == DARK
    # Along y is along the columns: half a cell to the right.
    moved = picture([4.0, 6.0], [12.0, 4.0])
    assert colour(moved, 30, 40) == BLUE and colour(moved, 30, 30) == WHITE


def test_the_meta_maze_draws_the_trial_s_goal_not_the_default_one():
    env, params, state = reset("meta/maze")
    walls = np.zeros((5, 5), bool)
    walls[2, 2] = True
    task = state.task.replace(goal=jnp.array([0, 4], jnp.int32), walls=jnp.asarray(walls))
    state = inner(state.replace(task=task), position=jnp.array([3, 1], jnp.int32))
    # 70 / (5 + 2) = 10 px cells, cell (0, 0) at (10, 10); the border and beyond dark grey.
    image = rendering.render_state(env, params, state, 70, 70)
    assert colour(image, 15, 55) == GREEN  # the task's goal, cell (0, 4)
    assert tuple(np.asarray(params.goal).tolist()) == (4, 4)  # the default goal's cell: free
    assert colour(image, 55, 55) == WHITE
    assert colour(image, 35, 35) == DARK and colour(image, 25, 25) == WHITE  # walls[2, 2]; free
    assert colour(image, 5, 35) == DARK and colour(image, 65, 35) == DARK  # the border
    assert colour(image, 45, 25) == BLUE  # the agent in cell (3, 1), a 3.5 px disk
    moved = rendering.render_state(env, params, inner(state, position=jnp.array([1, 3])), 70, 70)
    assert colour(moved, 45, 25) == WHITE and colour(moved, 25, 45) == BLUE


def test_the_point_robot_draws_the_trial_s_goal_on_the_arc():
    env, params, state = reset("meta/point_robot")
    task = state.task.replace(goal=jnp.array([1.0, 0.0]))
    state = inner(state.replace(task=task), position=jnp.array([-0.5, -0.5]))
    # 90 / 3 = 30 px per unit, the origin at (45, 45), y up: the goal (1, 0) at (75, 45), 6 px;
    # the robot at (30, 60), 1.5 px; the upper unit semicircle, 1 px either side of radius 30.
    image = rendering.render_state(env, params, state, 90, 90)
    assert colour(image, 45, 75) == GREEN and colour(image, 60, 30) == BLUE
    assert colour(image, 15, 45) == ARC  # the top of the arc, where the default goal would be
    assert colour(image, 75, 45) == WHITE  # the lower half holds no goal
    assert colour(image, 44, 44) == BLACK and colour(image, 30, 30) == WHITE  # the start


def test_renderable_names_lists_what_draws_without_building_mjx(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("renderable_names built a Brax environment")

    monkeypatch.setattr(BraxEnv, "__init__", refuse)
    names = registry.renderable_names()
    ours = ["cartpole", "acrobot", "pendulum", "mountain_car_continuous", "point_mass"]
    ours += ["goal/point_reach", "goal/point_u_maze", "goal/point_big_maze"]
    ours += ["goal/point_hardest_maze", "meta/maze", "meta/point_robot"]
    # The MJX task families draw through Brax's renderer (their class is a BraxEnv).
    others = [*MJX_META, "maze", "maze/small"]
    assert [n for n in names if not n.endswith(")")] == ours + others
    # Then one entry per suite that draws (tests/envs/test_playground.py draws Playground's,
    # tests/envs/test_suite_render.py the suites with pictures of their own).
    suites = ["brax", "gymnax", "playground", "jumanji", "craftax", "minigrid"]
    assert sorted(n.split("/... (")[0] for n in names if n.endswith(")")) == sorted(suites)
    for name in ("probe/action_reward", "goal/ant", "meta/bandit", "maze/editor"):
        assert name not in names


MJX_META = ["meta/cheetah_velocity", "meta/ant_direction"]
CHEAP_META = [name for name in registry.META if name not in MJX_META]


def test_the_mjx_families_are_the_brax_ones():
    for name, factory in registry.META.items():
        assert issubclass(factory.task_env, BraxEnv) == (name in MJX_META), name


@pytest.mark.parametrize("name", CHEAP_META)
def test_a_meta_family_s_task_env_is_the_class_it_builds(name):
    env, _ = envs.make(name)
    assert type(rendering.base(env)[0]) is registry.META[name].task_env


LISTED = [n for n in registry.renderable_names() if not n.endswith(")") and n not in MJX_META]


@pytest.mark.parametrize("name", LISTED)
def test_every_listed_environment_renders_its_reset(name):
    env, params, state = reset(name)
    image = rendering.render_state(env, params, state, 48, 32)
    assert image.shape == (32, 48, 3) and image.dtype == np.uint8
    assert len(np.unique(image.reshape(-1, 3), axis=0)) >= 2  # not blank


def test_an_environment_it_does_not_list_is_not_renderable():
    env, params, state = reset("probe/action_reward")
    assert "probe/action_reward" not in registry.renderable_names()
    with pytest.raises(rendering.NotRenderable, match="has no renderer"):
        rendering.render_state(env, params, state)


def _gl_or_skip():
    """Skip where MuJoCo's renderer cannot start here with the backend `use_gl` chooses."""
    probe = """if True:
        from rlsuite.envs.rendering import use_gl
        use_gl()
        import mujoco
        model = mujoco.MjModel.from_xml_string("<mujoco><worldbody/></mujoco>")
        mujoco.Renderer(model, 16, 16).render()
    """
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"MuJoCo cannot render here: {proc.stderr.strip().splitlines()[-1:]}")


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", MJX_META)
def test_an_mjx_family_renders_its_reset(name):
    """In a subprocess: MuJoCo's OpenGL backend is chosen before MuJoCo is first imported."""
    _gl_or_skip()
    script = f"""if True:
        import jax, numpy as np
        from rlsuite.envs import rendering
        rendering.use_gl()
        from rlsuite import envs
        env, params = envs.make({name!r})
        _, state = jax.jit(env.reset)(jax.random.key(0), params)
        image = rendering.render_state(env, params, state, 64, 48)
        assert image.shape == (48, 64, 3) and image.dtype == np.uint8, image.shape
        assert image.std() > 5, image.std()
    """
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_rlsuite_render_draws_a_trained_pendulum(tmp_path):
    iio = pytest.importorskip("imageio.v3", reason='the video extra: pip install -e ".[video]"')
    out = tmp_path / "run"
    tiny = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2"]
    tiny += ["--total-timesteps", "256", "--eval-episodes", "1", "--no-progress"]
    proc = rlsuite("train", "ppo", "--env", "pendulum", *tiny, "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = rlsuite("render", out, "--episodes", "1", "--out", out / "v.gif")
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = iio.imread(out / "v.first-frame.png")
    frames = iio.imread(out / "v.gif", index=None)[..., :3]
    # One episode of Pendulum's 200 steps (Pillow merges a frame equal to the one before),
    # 480 x 320: the pivot (black, 6.4 px) at the centre and the pole's red around it.
    assert first.shape == (320, 480, 3) and 1 < len(frames) <= 200
    assert np.array_equal(frames[0], first)
    assert colour(first, 159, 239) == BLACK
    assert np.sum(np.all(first == POLE, axis=-1)) > 128 * 20
