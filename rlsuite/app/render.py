"""`rlsuite render RUN`: a video of a run's policy, and its first frame as a PNG.

    rlsuite render runs/demo                         # runs/demo/video.mp4, video.first-frame.png
    rlsuite render runs/demo --episodes 2 --out d.gif  # d.gif and d.first-frame.png

The run's latest checkpoint is restored (as `rlsuite eval` restores it) and one seed's policy
(`--seed-index`) acts deterministically (`rlsuite.loop.agent.policy`) in one environment for
`--episodes` episodes: one jitted `lax.scan` (`rlsuite.loop.rollout.rollout`) over the longest they
can take (the episodes' time limit, or `--max-steps`, times the episodes) that keeps every state the
policy acted in, cut on the host after the last episode's end. Each state is drawn by
`rlsuite.envs.rendering.render_state` (CartPole and the maze in NumPy, Brax through MuJoCo's
renderer) and the frames written with imageio: `.mp4` through imageio-ffmpeg (H.264), `.gif` through
Pillow, which merges identical consecutive frames into one shown for their time. The first frame
goes beside the video as `<name>.first-frame.png` (`rlsuite.loop.files.derived`). Refused before
anything is computed, naming the value: a name that is not .mp4 or .gif, a video or PNG that exists,
a place that cannot be written, a seed index the run does not have, an environment without a
renderer, imageio missing (the `video` extra).

In a notebook: `agent, state, _ = load("runs/demo")`, then `frames(agent, state, key, episodes)`,
the frames `[T, H, W, 3]` of that seed's policy.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np
import tyro

from rlsuite.app.argv import parse
from rlsuite.environment.wrappers import TimeLimit, Wrapper
from rlsuite.loop.files import derived
from rlsuite.ops.validators import counted

SUFFIXES = (".mp4", ".gif")
FIRST_FRAME = "first-frame"  # the video's first frame: NAME.first-frame.png
MISSING = 'writing videos needs imageio and imageio-ffmpeg: pip install -e ".[video]"'


@dataclasses.dataclass
class RenderArgs:
    run: tyro.conf.Positional[str]
    """run directory written by `rlsuite train`"""
    episodes: int = 2
    """episodes in the video, one after the other"""
    out: str | None = None
    """the video, ending in .mp4 or .gif (default RUN/video.mp4); writes it and its first frame
    beside it as NAME.first-frame.png; neither may exist"""
    seed_index: int = 0
    """which of the run's seeds acts (0 to num_seeds - 1)"""
    seed: int = 0
    """seed of the episodes' start states"""
    max_steps: int | None = None
    """cut each episode after this many steps (default: the environment's time limit)"""
    fps: int = 30
    """frames per second"""
    width: int = 480
    """frame width in pixels (even for .mp4)"""
    height: int = 320
    """frame height in pixels (even for .mp4)"""


class Episodes(NamedTuple):
    """What `play` keeps: the states the policy acted in, one after the other (host arrays with
    a leading `[T]` axis, `T = sum(lengths)`), and each episode's return and length."""

    states: Any
    returns: np.ndarray
    lengths: np.ndarray


def main(argv: list[str]) -> dict:
    from rlsuite.envs import rendering

    args = parse(RenderArgs, argv, "rlsuite render")
    run = pathlib.Path(args.run)
    video = _check_args(args, run)
    picture = derived(video, FIRST_FRAME)
    imageio = _imageio(video.suffix)
    agent, state, env_steps = load(run, args.seed_index)
    episodes = play(agent, state, jax.random.key(args.seed), args.episodes, args.max_steps)
    try:
        images = draw(agent, episodes.states, args.width, args.height)
    except rendering.RendererUnavailable as error:
        raise ValueError(str(error)) from None
    _write(imageio, video, picture, images, args.fps)
    summary = {
        "path": str(video),
        "first_frame": str(picture),
        "frames": len(images),
        "episodes": args.episodes,
        "returns": episodes.returns.tolist(),
        "lengths": episodes.lengths.tolist(),
        "env_steps": env_steps,
    }
    print(
        f"wrote {video} ({counted(len(images), 'frame')}: {counted(args.episodes, 'episode')} "
        f"of seed {args.seed_index}, lengths {summary['lengths']}, returns "
        f"{[round(r, 3) for r in summary['returns']]}) and {picture}"
    )
    return summary


def load(run: str | pathlib.Path, seed_index: int = 0) -> tuple[Any, Any, int]:
    """`(agent, state, env_steps)`: the agent of a run directory and one seed's learner state
    (no seed axis) from its latest checkpoint, taken after `env_steps` steps per seed; refused
    where the run has no such seed or its environment cannot be drawn."""
    from rlsuite.app import runs
    from rlsuite.envs import rendering

    run = pathlib.Path(run)
    rendering.use_gl()  # before the environment imports MuJoCo
    record = runs.read_record(run)
    if not 0 <= seed_index < record.num_seeds:
        raise ValueError(
            f"--seed-index {seed_index}: the run has {record.num_seeds} seeds; allowed: "
            f"0 to {record.num_seeds - 1}"
        )
    built = runs.build(record)
    from rlsuite.envs import registry

    registry.check_renderable(built.agent.env, record.env)
    states, meta = runs.restore(run, record, built)
    return built.agent, jax.tree.map(lambda x: x[seed_index], states), meta["env_steps"]


def _check_args(args: RenderArgs, run: pathlib.Path) -> pathlib.Path:
    """The video's path, after every check of the command line that needs no run."""
    from rlsuite.loop.files import check_new_file

    for flag, value, least in [("--episodes", args.episodes, 1), ("--fps", args.fps, 1),
                               ("--width", args.width, 16), ("--height", args.height, 16),
                               ("--max-steps", args.max_steps, 1)]:  # fmt: skip
        if value is not None and value < least:
            raise ValueError(f"{flag} must be >= {least}, got {value}")
    video = pathlib.Path(args.out) if args.out is not None else run / "video.mp4"
    if video.suffix.lower() not in SUFFIXES:
        raise ValueError(
            f"--out {video}: a video is {' or '.join(SUFFIXES)}; give a name ending in one of them"
        )
    if video.suffix.lower() == ".mp4" and (args.width % 2 or args.height % 2):
        raise ValueError(
            f"--width and --height must be even for .mp4, got {args.width} x {args.height}"
        )
    check_new_file(video)
    check_new_file(derived(video, FIRST_FRAME), hint=" (the video's first frame)")
    if not video.parent.is_dir():  # (one that cannot be written to: check_new_file)
        raise ValueError(f"--out {video}: {video.parent} is not a directory")
    return video


def _imageio(suffix: str):
    """`imageio.v3`, where it (and, for .mp4, imageio-ffmpeg) is installed."""
    try:
        import imageio.v3 as iio

        if suffix.lower() == ".mp4":
            import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise ValueError(MISSING) from None
    return iio


def play(
    agent, state: Any, key: jax.Array, episodes: int, max_steps: int | None = None
) -> Episodes:
    """`episodes` episodes of one run's deterministic policy (`state`: one run's learner
    state, no seed axis) in one environment, each cut after `max_steps` steps (default: its
    time limit); see the module's docstring."""
    from rlsuite.loop.driver import EVAL_STEP_CAP

    limit = max_steps or getattr(agent.env, "max_episode_steps", None) or EVAL_STEP_CAP
    steps = _scan(agent, episodes * limit, None if max_steps is None else max_steps)
    visited, reward, done = jax.device_get(steps(state, key))
    ends = np.flatnonzero(done)[:episodes]  # every episode ends within `limit` steps
    starts = np.concatenate([[0], ends[:-1] + 1])
    returns = np.array([reward[a : b + 1].sum() for a, b in zip(starts, ends, strict=True)])
    visited = jax.tree.map(lambda x: x[: ends[-1] + 1], visited)
    return Episodes(visited, returns.astype(np.float64), ends - starts + 1)


@functools.cache
def _scan(agent, num_steps: int, max_steps: int | None):
    """The jitted `(state, key) -> (states [T], reward [T], done [T])` of `play`."""
    from rlsuite.loop.agent import policy
    from rlsuite.loop.rollout import reset_batch, rollout

    env = _KeepState(agent.env)
    env = env if max_steps is None else TimeLimit(env, max_steps)

    def steps(state, key):
        acting = policy(agent, state, True)
        key_reset, key_steps = jax.random.split(key)
        batch = reset_batch(env, agent.env_params, key_reset, 1)
        batch = batch._replace(carry=acting.initial(1))
        _, transitions = rollout(env, agent.env_params, acting, key_steps, batch, num_steps)
        done = transitions.terminated | transitions.truncated
        visited = jax.tree.map(lambda x: x[:, 0], transitions.info[_KeepState.KEY])
        return visited, transitions.reward[:, 0], done[:, 0]

    return jax.jit(steps)


class _KeepState(Wrapper):
    """Reports the state each step was taken in as `info[KEY]` (its own wrappers' included)."""

    KEY = "rendered_state"

    def step_env(self, key, state, action, params):
        obs, next_state, reward, terminated, truncated, info = self.env.step_env(
            key, state, action, params
        )
        return obs, next_state, reward, terminated, truncated, {**info, self.KEY: state}


def draw(agent, states: Any, width: int = 480, height: int = 320) -> np.ndarray:
    """uint8 frames `[T, height, width, 3]` of states as `agent.env` keeps them (leading
    `[T]` axis), through `rlsuite.envs.rendering.render_state`."""
    from rlsuite.envs.rendering import render_state

    count = jax.tree.leaves(states)[0].shape[0]
    return np.stack([
        render_state(agent.env, agent.env_params, jax.tree.map(lambda x, t=t: x[t], states),
                     width, height)
        for t in range(count)
    ])  # fmt: skip


def frames(
    agent,
    state: Any,
    key: jax.Array,
    episodes: int = 2,
    max_steps: int | None = None,
    width: int = 480,
    height: int = 320,
) -> np.ndarray:
    """The frames `[T, height, width, 3]` (uint8) of `episodes` episodes of one run's policy
    (`play`, then `draw`). For a Brax environment, call `rlsuite.envs.rendering.use_gl()` (or
    set MUJOCO_GL) before anything imports MuJoCo."""
    return draw(agent, play(agent, state, key, episodes, max_steps).states, width, height)


def _write(iio, video: pathlib.Path, picture: pathlib.Path, images: np.ndarray, fps: int):
    """The video and its first frame, neither overwriting a file (the video written whole
    under a temporary name first)."""
    partial = video.with_name(f".{video.name}.partial{video.suffix}")
    try:
        if video.suffix.lower() == ".mp4":
            with warnings.catch_warnings():  # JAX's warning at fork: ffmpeg is exec'd at once
                warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
                iio.imwrite(partial, images, plugin="FFMPEG", fps=fps, macro_block_size=2)
        else:
            iio.imwrite(partial, images, plugin="pillow", duration=1000 / fps, loop=0)
        os.link(partial, video)  # refuses a file that appeared meanwhile
    finally:
        partial.unlink(missing_ok=True)
    iio.imwrite(picture, images[0], plugin="pillow", extension=".png")
