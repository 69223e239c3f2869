"""`rlsuite render RUN`: videos of a trained policy (CartPole drawn in NumPy, MJX hopper through
MuJoCo's renderer), the drawings checked against hand-derived pixels, and bad input refused
with nothing written or overwritten."""

import json
import math
import re
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest
from rlsuite.envs import rendering
from rlsuite.envs.cartpole import CartPole, CartPoleState
from rlsuite.envs.maze import Level, Maze
from rlsuite.envs.maze.render import AGENT_RGB, FREE_RGB, GOAL_RGB, WALL_RGB

from rlsuite.app import cli, render, report
from tests.app.test_cli import rlsuite

iio = pytest.importorskip("imageio.v3", reason='the video extra: pip install -e ".[video]"')
pytestmark = pytest.mark.timeout(300)

TINY = ["ppo", "--env", "cartpole", "--total-timesteps", "2048", "--num-envs", "4"]
TINY += ["--num-steps", "16", "--num-minibatches", "2", "--hidden-sizes", "8", "--num-seeds", "2"]
TINY += ["--eval-episodes", "2", "--no-progress", "--log-interval", "64"]
POLE_RGB, CART_RGB = (202, 152, 101), (40, 40, 40)
WROTE = re.compile(r"wrote (\S+) \((\d+) frames: (\d+) episodes of seed \d+, lengths \[([\d, ]+)\]")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("render") / "run"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0
    return out


def _lengths(stdout: str) -> list[int]:
    match = WROTE.search(stdout)
    assert match, stdout
    return [int(n) for n in match.group(4).split(",")]


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # imageio-ffmpeg runs ffmpeg
def test_a_cartpole_video_shows_the_policy_s_episodes(run, capsys):
    # The defaults: two episodes of seed 0 into RUN/video.mp4, 480 x 320, first frame beside it.
    capsys.readouterr()
    assert cli.main(["render", str(run)]) == 0
    lengths = _lengths(capsys.readouterr().out)
    video = iio.imread(run / "video.mp4", plugin="FFMPEG")
    assert len(lengths) == 2 and video.shape == (sum(lengths), 320, 480, 3)
    # The same frames, exactly, as the library draws them from the same episodes.
    agent, state, _ = render.load(run, 0)
    episodes = render.play(agent, state, jax.random.key(0), 2)
    assert episodes.lengths.tolist() == lengths and episodes.returns.tolist() == lengths
    frames = render.draw(agent, episodes.states)
    assert frames.dtype == np.uint8 and frames.shape == video.shape
    first = iio.imread(run / "video.first-frame.png")
    assert np.array_equal(first, frames[0])
    # H.264 is lossy: each decoded frame within a few levels of the drawn one.
    assert np.abs(video.astype(int) - frames).mean(axis=(1, 2, 3)).max() < 2
    # Not blank: the track alone (2 black rows of 320 on white) has a pixel std of
    # 255 sqrt(p (1 - p)) = 20.1 with p = 1 / 160; the cart and pole add to it.
    assert video.std(axis=(1, 2, 3)).min() > 1.1 * 255 * math.sqrt(1 / 160 * 159 / 160)
    # Consecutive frames differ: the cart is pushed by 10 N one way or the other at every step,
    # so it never rests, and the pole's edges, 80 px long and slanted, cross pixel centres even
    # when it moves a fraction of a pixel. Each episode ends by the pole passing 12 degrees (or
    # the cart leaving the track), so its last frame, a step before, is far from its first,
    # within 3 degrees of upright (the tip 12 px or more away).
    assert np.all(np.any(frames[1:] != frames[:-1], axis=(1, 2, 3)))
    ends = np.cumsum(lengths) - 1
    for start, end in zip([0, ends[0] + 1], ends, strict=True):
        assert np.sum(np.any(frames[start] != frames[end], axis=-1)) > 100


def test_a_gif_of_another_seed_holds_each_distinct_frame(run, tmp_path):
    summary = render.main([str(run), "--seed-index", "1", "--out", str(tmp_path / "one.gif")])
    assert summary["path"] == str(tmp_path / "one.gif") and summary["episodes"] == 2
    agent, state, _ = render.load(run, 1)
    episodes = render.play(agent, state, jax.random.key(0), 2)
    assert summary["lengths"] == episodes.lengths.tolist()
    frames = render.draw(agent, episodes.states)
    assert summary["frames"] == len(frames) == sum(summary["lengths"])
    # Pillow merges identical consecutive frames (shown for their time); a handful of colours,
    # so the palette is exact.
    distinct = frames[np.r_[True, np.any(frames[1:] != frames[:-1], axis=(1, 2, 3))]]
    gif = iio.imread(tmp_path / "one.gif", index=None)[..., :3]
    assert np.array_equal(gif, distinct)
    assert np.array_equal(iio.imread(tmp_path / "one.first-frame.png"), frames[0])
    # rlsuite report on the same stem derives other names: the video and its frame stay.
    gif = (tmp_path / "one.gif").read_bytes()
    written = report.write_report(run, tmp_path / "one.md")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "one.curves.png", "one.environment.png", "one.first-frame.png", "one.gif", "one.md"
    ]  # fmt: skip
    assert written["figure"] == str(tmp_path / "one.curves.png")
    assert (tmp_path / "one.gif").read_bytes() == gif


def test_the_cartpole_drawing_puts_the_cart_and_pole_where_the_state_says():
    env = CartPole()
    params = env.default_params

    def picture(x, theta):
        state = CartPoleState(*map(np.float32, (x, 0.0, theta, 0.0)))
        return rendering.render_state(env, params, state, width=400, height=200)

    def columns(image, rgb):  # the centres of the pixels of that colour, along x
        return np.nonzero(np.all(image == rgb, axis=-1))[1] + 0.5

    # 400 px over 2.5 x 2.4 m: 66.7 px/m, the track at row 150 (0.75 x 200), the centre at 200.
    upright = picture(0.0, 0.0)
    assert np.all(upright[149:151, :100] == 0) and np.all(upright[:149, :100] == 255)
    assert abs(columns(upright, CART_RGB).mean() - 200) < 0.5
    assert abs(columns(upright, POLE_RGB).mean() - 200) < 0.5
    # The cart 1.2 m to the right: 80 px right.
    assert abs(columns(picture(1.2, 0.0), CART_RGB).mean() - 280) < 0.5
    # theta > 0 leans the pole right (gymnasium's convention): its middle, 33 px (0.5 m) up
    # from the axle, sits 33 sin(0.3) = 9.9 px right of the cart's centre; -0.3 mirrors it.
    right, left = columns(picture(0.0, 0.3), POLE_RGB), columns(picture(0.0, -0.3), POLE_RGB)
    assert 8 < right.mean() - 200 < 12 and 8 < 200 - left.mean() < 12
    assert right.max() > 215 and left.min() < 185


def test_the_maze_drawing_matches_its_walls_goal_and_agent():
    level = Level.from_str(
        """
        #..G
        .#..
        >..#
        """
    )
    env = Maze(height=3, width=4)
    params = env.params_for_level(level)
    _, state = env.reset(jax.random.key(0), params)

    def cell_centres(image, top=0, left=0):
        return image[top + 5 : top + 30 : 10, left + 5 : left + 40 : 10]

    walls = np.asarray(level.wall_map)
    expected = np.where(walls[..., None], np.uint8(WALL_RGB), np.uint8(FREE_RGB))
    expected[0, 3], expected[2, 0] = GOAL_RGB, AGENT_RGB  # the goal; the agent's triangle
    # 40 x 30 pixels: cells of 10, no margin.
    image = rendering.render_state(env, params, state, width=40, height=30)
    assert np.array_equal(cell_centres(image), expected)
    # A step forward (right): the agent's cell is (1, 2) and its start is free again.
    _, state, *_ = env.step(jax.random.key(1), state, np.int32(2), params)
    image = rendering.render_state(env, params, state, width=40, height=30)
    expected[2, 0], expected[2, 1] = FREE_RGB, AGENT_RGB
    assert np.array_equal(cell_centres(image), expected)
    # Wider than the maze: the same cells, centred, the 10-pixel margins drawn as wall.
    wide = rendering.render_state(env, params, state, width=60, height=30)
    assert np.array_equal(cell_centres(wide, left=10), expected)
    assert np.all(wide[:, :10] == WALL_RGB) and np.all(wide[:, 50:] == WALL_RGB)


def test_bad_input_is_refused_and_nothing_is_written(run, tmp_path, capsys, monkeypatch):
    taken = tmp_path / "taken.mp4"
    taken.write_bytes(b"mine")
    (tmp_path / "frame.first-frame.png").write_bytes(b"also mine")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    renderless = tmp_path / "renderless"  # the run, said to be of a probe (no renderer)
    # (without the videos another test may have made of the run)
    shutil.copytree(run, renderless, ignore=shutil.ignore_patterns("video.*"))
    record = json.loads((renderless / "config.json").read_text())
    (renderless / "config.json").write_text(json.dumps({**record, "env": "probe/action_reward"}))
    before = sorted(p.name for p in tmp_path.iterdir())
    cases = [
        ([run, "--out", tmp_path / "v.avi"], "a video is .mp4 or .gif; give a name ending in"),
        ([run, "--out", taken], f"{taken} exists; choose another --out"),
        ([run, "--out", tmp_path / "frame.gif"], "(the video's first frame)"),
        ([run, "--out", a_file / "v.mp4"], f"{a_file} is a file, not a directory"),
        ([run, "--out", "/sys/v.mp4"], "/sys/v.mp4: /sys cannot be written to (Permission denied)"),
        ([run, "--seed-index", "2", "--out", tmp_path / "a.mp4"], "allowed: 0 to 1"),
        ([tmp_path, "--out", tmp_path / "b.mp4"], "holds no run (no config.json)"),
        ([run, "--width", "161", "--out", tmp_path / "c.mp4"], "must be even for .mp4"),
        ([run, "--episodes", "0", "--out", tmp_path / "d.mp4"], "--episodes must be >= 1"),
        (
            [renderless, "--out", tmp_path / "e.mp4"],
            "environment 'probe/action_reward' has no renderer; those that can be rendered: "
            "cartpole, acrobot, pendulum, mountain_car_continuous, point_mass, goal/point_reach, "
            "goal/point_u_maze, goal/point_big_maze, goal/point_hardest_maze, meta/maze, "
            "meta/point_robot, meta/cheetah_velocity, meta/ant_direction, maze, maze/small, "
            "brax/...",
        ),
    ]
    for args, message in cases:
        capsys.readouterr()
        assert cli.main(["render", *map(str, args)]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("rlsuite render: error: ") and message in err, err
    # Without imageio (the video extra), the command says how to install it.
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "imageio", None)
        capsys.readouterr()
        assert cli.main(["render", str(run), "--out", str(tmp_path / "f.mp4")]) == 2
        assert 'pip install -e ".[video]"' in capsys.readouterr().err
    assert taken.read_bytes() == b"mine"
    assert (tmp_path / "frame.first-frame.png").read_bytes() == b"also mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not list(renderless.glob("video.*"))


def _gl_or_skip():
    """Skip (saying why) where MuJoCo's renderer cannot start here with the backend that
    `rendering.use_gl` chooses (no OSMesa or EGL: see .ci/run)."""
    probe = """if True:
        from rlsuite.envs.rendering import use_gl
        backend = use_gl()
        import mujoco
        xml = "<mujoco><worldbody><geom size='.1'/></worldbody></mujoco>"
        model = mujoco.MjModel.from_xml_string(xml)
        mujoco.Renderer(model, 16, 16).render()
        print(backend)
    """
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"MuJoCo cannot render here: {proc.stderr.strip().splitlines()[-1:]}")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_mjx_hopper_video_moves_and_is_not_blank(tmp_path):
    _gl_or_skip()
    out = tmp_path / "hopper"
    tiny = ["--total-timesteps", "128", "--num-envs", "4", "--num-steps", "32"]
    tiny += ["--num-minibatches", "2", "--update-epochs", "1", "--hidden-sizes", "8"]
    tiny += ["--eval-episodes", "1", "--chunks", "1", "--no-progress", "--cpu-devices", "1"]
    proc = rlsuite("train", "ppo", "--env", "brax/hopper", *tiny, "--out", out, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    video = tmp_path / "hopper.gif"
    args = ["--episodes", "2", "--max-steps", "60", "--width", "240", "--height", "160"]
    proc = rlsuite("render", out, *args, "--out", video, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lengths = _lengths(proc.stdout)
    # Every frame is in the GIF: Pillow merges a frame identical to the one before, so none
    # was; the hopper and its tracking camera moved at every step.
    frames = iio.imread(video, index=None)[..., :3]
    assert frames.shape == (sum(lengths), 160, 240, 3) and max(lengths) <= 60
    first = iio.imread(tmp_path / "hopper.first-frame.png")  # the frame before the GIF's palette
    assert first.shape == (160, 240, 3) and np.abs(first.astype(int) - frames[0]).mean() < 2
    # Not blank: the checkered floor fills the lower third with squares of near white and near
    # black (the far ones blur to grey): in every frame more than 15% of those pixels are above
    # 200 and more than 15% below 50. A blank frame has neither. That is 5% of the frame each,
    # so its std is at least that of 5% at 200, 5% at 50 and the rest at 125: 75 sqrt(0.1).
    grey = frames.mean(axis=-1)
    floor = grey[:, 107:]
    assert np.all((floor > 200).mean(axis=(1, 2)) > 0.15)
    assert np.all((floor < 50).mean(axis=(1, 2)) > 0.15)
    assert grey.std(axis=(1, 2)).min() > 75 * math.sqrt(0.1)
    # Over an episode the picture changes a lot: its last frame far from its first.
    for start, end in [(0, lengths[0] - 1), (lengths[0], sum(lengths) - 1)]:
        assert np.abs(frames[end].astype(int) - frames[start]).mean() > 5
