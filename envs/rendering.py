"""Pictures of environment states: `render_state(env, env_params, state)`, an RGB image in NumPy.

An environment draws itself where its innermost environment (below every wrapper) has a method
`render(state, params, width, height) -> uint8 [height, width, 3]` taking its own state and
params: CartPole, Pendulum, Acrobot, MountainCarContinuous, PointMass, the goal-conditioned point
mazes and point reach (`envs/goal/`), the meta-RL grid maze and point robot (`envs/tasks/`), all
drawn here with `Canvas`; the UED maze (walls, goal and agent, `rlsuite.envs.maze.render`); and
every Brax environment, the MJX task families built on one included
(`rlsuite.envs.brax_adapter.BraxEnv.render`), and every Playground task
(`rlsuite.envs.playground_adapter.PlaygroundEnv.render`), both with MuJoCo's renderer
(`mujoco_image`); Jumanji's tasks, Craftax, XLand-MiniGrid's MiniGrid tasks and gymnax's MinAtar
games with their suites' own drawing (`rlsuite.envs.suite_pictures`, fitted to the size asked
for with `fit`). `render_state` takes the state
as the wrapped environment keeps it and finds the inner state: every wrapper that keeps a state of
its own (`TimeLimit`, `EpisodeStatistics`, `RL2`) holds the wrapped one as `env_state`. `RL2`
runs its inner environment on the trial's task, which its state keeps as `task`: below it, that
task is the params the inner environment is drawn with.

MuJoCo picks its OpenGL backend when it is first imported, from `MUJOCO_GL`; `use_gl()` sets it,
where the user has not, before anything imports MuJoCo: `egl` on a machine with a GPU, `osmesa`
(Mesa's software renderer, Debian's `libosmesa6`) where there is none and it is installed, else
`egl` (Mesa's EGL renders in software too).
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from typing import Any

import numpy as np

from rlsuite.environment import Environment
from rlsuite.environment.meta import RL2
from rlsuite.environment.wrappers import Wrapper


class NotRenderable(ValueError):
    """The environment has no renderer (the message names those that have one)."""


class RendererUnavailable(RuntimeError):
    """A renderer that needs the machine's OpenGL could not start (the message says why)."""


def use_gl() -> str:
    """Set `MUJOCO_GL` (see the module's docstring) unless the user set it or MuJoCo is imported
    already; returns the backend in effect (`""`: MuJoCo's default, GLFW)."""
    if "MUJOCO_GL" in os.environ or "mujoco" in sys.modules:
        return os.environ.get("MUJOCO_GL", "")
    given = os.environ.get("PYOPENGL_PLATFORM", "").lower()
    if given in ("egl", "osmesa"):
        backend = given  # MuJoCo refuses a backend unlike PyOpenGL's platform
    elif _has_gpu():
        backend = "egl"
    else:
        backend = "osmesa" if ctypes.util.find_library("OSMesa") else "egl"
    os.environ["MUJOCO_GL"] = backend
    return backend


def _has_gpu() -> bool:
    import jax

    return jax.default_backend() in ("gpu", "cuda", "rocm")


def base(env: Environment, state: Any = None) -> tuple[Environment, Any]:
    """The innermost environment under `env`'s wrappers and, of `state` (as `env` keeps it),
    the state that environment keeps."""
    env, state, _ = _unwrap(env, state, None)
    return env, state


def _unwrap(env: Environment, state: Any, params: Any) -> tuple[Environment, Any, Any]:
    """`base`, with the params the innermost environment runs with: those given, or, below an
    `RL2` wrapper, the trial's task its state keeps."""
    while isinstance(env, Wrapper):
        if state is not None and hasattr(state, "env_state"):
            if isinstance(env, RL2):
                params = state.task
            state = state.env_state
        env = env.env
    return env, state, params


def renderable(env: Environment) -> bool:
    """Whether `render_state` can draw `env`'s states."""
    return callable(getattr(base(env)[0], "render", None))


def render_state(
    env: Environment, env_params: Any, state: Any, width: int = 480, height: int = 320
) -> np.ndarray:
    """uint8 RGB `[height, width, 3]` of one environment's `state` (as `env` keeps it, with its
    wrappers' states around it; no batch axis). `NotRenderable` where `env` has no renderer."""
    if not renderable(env):
        raise NotRenderable(
            f"environment {env.name!r} has no renderer (rlsuite.envs.registry.renderable_names() "
            "lists those that can be rendered)"
        )
    for field, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 8:
            raise ValueError(f"render_state: {field} must be an integer >= 8 pixels, got {value!r}")
    inner, inner_state, inner_params = _unwrap(env, state, env_params)
    image = np.asarray(inner.render(inner_state, inner_params, int(width), int(height)))
    if image.shape != (height, width, 3) or image.dtype != np.uint8:
        raise TypeError(
            f"{inner.name}.render returned {image.dtype} {image.shape}; a uint8 "
            f"[{height}, {width}, 3] image was asked for"
        )
    return image


def fit(
    image: Any, width: int, height: int, background: tuple[int, int, int] = (0, 0, 0)
) -> np.ndarray:
    """uint8 RGB `[height, width, 3]` of an RGB or RGBA `image` (uint8, or floats in [0, 255])
    scaled by nearest neighbour to the largest size that fits without changing its aspect ratio,
    centred, the rest filled with `background`. The suites that draw
    pictures of their own size (Jumanji, Craftax, MiniGrid, MinAtar) are fitted with it."""
    image = np.asarray(image)[..., :3]
    if image.dtype != np.uint8:
        image = np.clip(np.rint(image), 0, 255).astype(np.uint8)
    rows, columns = image.shape[:2]
    scale = min(width / columns, height / rows)
    inner_w = max(1, min(width, round(columns * scale)))
    inner_h = max(1, min(height, round(rows * scale)))
    picked_rows = np.minimum((np.arange(inner_h) + 0.5) * rows / inner_h, rows - 1).astype(int)
    picked_cols = np.minimum((np.arange(inner_w) + 0.5) * columns / inner_w, columns - 1)
    scaled = image[picked_rows][:, picked_cols.astype(int)]
    out = np.empty((height, width, 3), np.uint8)
    out[:] = background
    top, left = (height - inner_h) // 2, (width - inner_w) // 2
    out[top : top + inner_h, left : left + inner_w] = scaled
    return out


def mujoco_image(
    owner: Any, model: Any, qpos: np.ndarray, qvel: np.ndarray, width: int, height: int, **data
) -> np.ndarray:
    """uint8 RGB `[height, width, 3]` of a MuJoCo `model` (an `MjModel`) at joint positions
    `qpos` and velocities `qvel` (and any other `MjData` fields given as `data`, e.g.
    `mocap_pos`): copied into an `MjData`, `mj_forward`, then drawn from the model's first
    camera or, in a model without one, a camera tracking the first body. The renderer of each
    size is made once and kept on `owner` (an environment), closed at exit. Brax's environments
    (`BraxEnv.render`) and Playground's (`PlaygroundEnv.render`) are drawn with it."""
    import mujoco

    model, mj_data, renderer = _mujoco_renderer(owner, model, width, height)
    mj_data.qpos[:] = qpos
    mj_data.qvel[:] = qvel
    for field, value in data.items():
        getattr(mj_data, field)[:] = value
    mujoco.mj_forward(model, mj_data)
    if model.ncam:
        camera = 0
    else:
        camera = mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        camera.trackbodyid = min(1, model.nbody - 1)
        camera.distance, camera.elevation, camera.azimuth = 3 * model.stat.extent, -20, 90
    renderer.update_scene(mj_data, camera=camera)
    return renderer.render().copy()


def _mujoco_renderer(owner: Any, model: Any, width: int, height: int):
    """A copy of `model`, its data and a renderer of `width` x `height`, made once per size and
    kept on `owner` (the offscreen buffer enlarged to fit); closed at exit."""
    renderers = vars(owner).setdefault("_mujoco_renderers", {})
    if (width, height) not in renderers:
        import atexit
        import copy

        import mujoco

        model = copy.copy(model)
        model.vis.global_.offwidth = max(width, model.vis.global_.offwidth)
        model.vis.global_.offheight = max(height, model.vis.global_.offheight)
        try:
            renderer = mujoco.Renderer(model, height, width)
        except Exception as error:  # no OpenGL backend could start
            backend = os.environ.get("MUJOCO_GL", "unset: GLFW, which needs a display")
            raise RendererUnavailable(
                f"MuJoCo's renderer could not start with MUJOCO_GL={backend} ({error}); on "
                "a machine without a GPU install OSMesa (Debian: apt-get install "
                "libosmesa6) and set MUJOCO_GL=osmesa, or set MUJOCO_GL=egl, before "
                "MuJoCo is imported"
            ) from error
        atexit.register(renderer.close)
        renderers[width, height] = (model, mujoco.MjData(model), renderer)
    return renderers[width, height]


class Canvas:
    """An RGB image to draw filled shapes on, in pixel coordinates: x to the right, y down, a
    pixel covered where its centre is inside the shape."""

    def __init__(self, width: int, height: int, background: tuple[int, int, int]):
        self.image = np.empty((height, width, 3), np.uint8)
        self.image[:] = background
        self.y, self.x = np.mgrid[0:height, 0:width] + 0.5  # pixel centres

    def fill(self, mask: np.ndarray, rgb: tuple[int, int, int]) -> None:
        self.image[mask] = rgb

    def rectangle(self, left, top, right, bottom, rgb) -> None:
        self.fill((self.x >= left) & (self.x <= right) & (self.y >= top) & (self.y <= bottom), rgb)

    def segment(self, x0, y0, x1, y1, radius, rgb) -> None:
        """A thick line from (x0, y0) to (x1, y1) with round ends: the pixels within `radius`."""
        dx, dy = x1 - x0, y1 - y0
        along = ((self.x - x0) * dx + (self.y - y0) * dy) / max(dx * dx + dy * dy, 1e-12)
        along = np.clip(along, 0.0, 1.0)
        distance = np.hypot(self.x - (x0 + along * dx), self.y - (y0 + along * dy))
        self.fill(distance <= radius, rgb)

    def disk(self, x, y, radius, rgb) -> None:
        self.fill(np.hypot(self.x - x, self.y - y) <= radius, rgb)

    def grid(self, cells: np.ndarray, left, top, cell, rgb) -> None:
        """The cells of a bool grid `cells` [rows, columns] that are True, as squares of side
        `cell` pixels, the grid's top left corner at (left, top)."""
        rows, columns = np.shape(cells)
        i = np.floor((self.y - top) / cell).astype(int)
        j = np.floor((self.x - left) / cell).astype(int)
        inside = (i >= 0) & (i < rows) & (j >= 0) & (j < columns)
        lit = np.asarray(cells, bool)[np.clip(i, 0, rows - 1), np.clip(j, 0, columns - 1)]
        self.fill(inside & lit, rgb)


def arena(width, height, half, point, goal, goal_radius) -> np.ndarray:
    """uint8 RGB `[height, width, 3]` of a point and its goal in the square arena `[-half,
    half]^2` (PointMass's and PointReach's picture): the arena (white) the largest square the
    image holds at 0.9 of its size, centred, grey (90, 90, 90) around it, x to the right and y
    up; the goal's success disk (green (60, 170, 60), radius `goal_radius`) and the point (blue
    (40, 80, 220), radius 0.04 of the arena's side) on it."""
    half = float(np.asarray(half))
    scale = 0.9 * min(width, height) / (2 * half)  # pixels per unit

    def pixel(xy):
        x, y = np.asarray(xy, np.float64)
        return width / 2 + x * scale, height / 2 - y * scale

    canvas = Canvas(width, height, (90, 90, 90))
    canvas.rectangle(*pixel((-half, half)), *pixel((half, -half)), (255, 255, 255))
    canvas.disk(*pixel(goal), float(np.asarray(goal_radius)) * scale, (60, 170, 60))
    canvas.disk(*pixel(point), 0.08 * half * scale, (40, 80, 220))
    return canvas.image
