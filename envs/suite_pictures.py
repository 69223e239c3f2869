"""Pictures of the adapted suites' states, each drawn by the suite's own code and fitted to the
size asked for (`rlsuite.envs.rendering.fit`): the adapters' `render(state, params, width,
height)` methods call these.

* **Jumanji** (`jumanji_picture`): the task's matplotlib viewer (the one its environment renders
  with), in its `rgb_array` mode, drawn on the host. The viewer is copied once per environment
  (kept on it) and draws into a pyplot figure of its own, so the environment's viewer and its
  figure are left as they are.
* **Craftax** (`craftax_picture`): Craftax's pixel renderer (`make_craftax_pixel_renderer` of
  `craftax.craftax_classic.renderer` or `craftax.craftax.renderer`), blocks of
  `BLOCK_PIXEL_SIZE_IMG` (16) pixels: the map around the player above the inventory, whatever
  the environment observes (symbolic or pixels). It is jitted once per environment and kept on
  it; its textures are Craftax's (built at first use, about a minute, then read from Craftax's
  cache).
* **MiniGrid** (`minigrid_picture`): XLand-MiniGrid's `env.render(params, timestep)` in its
  `rgb_array` mode, the whole grid in tiles of 32 pixels with the agent's view highlighted,
  drawn on the host in NumPy (XLand-MiniGrid's renderer does not run under `jit`).
* **MinAtar** (`minatar_picture`): gymnax's MinAtar visualisation
  (`gymnax.visualize.vis_minatar.init_minatar`: each observation channel a colour of seaborn's
  cubehelix palette, black where no channel is set), drawn on the host by matplotlib's Agg
  canvas at the size asked for.

None of them is jittable: `rlsuite.envs.rendering.render_state` calls them on the host, one state
at a time.
"""

from __future__ import annotations

import contextlib
import copy
import io
from typing import Any

import numpy as np
from rlsuite.envs.rendering import fit

WHITE = (255, 255, 255)
"""Around the matplotlib figures (Jumanji's, MinAtar's) where the size asked for is not
theirs; Craftax's and MiniGrid's pictures get black."""


def jumanji_picture(owner: Any, jumanji_env: Any, state: Any, width: int, height: int):
    """uint8 RGB `[height, width, 3]` of Jumanji state `state` drawn by `jumanji_env`'s viewer
    (see the module's docstring); `owner` (the adapter) keeps the viewer's copy."""
    viewer = vars(owner).get("_jumanji_viewer")
    if viewer is None:
        viewer = copy.copy(jumanji_env._viewer)
        viewer._name = f"{viewer._name} (rlsuite {id(owner):x})"
        viewer._display = viewer._display_rgb_array  # what render_mode="rgb_array" sets
        owner._jumanji_viewer = viewer
    return fit(viewer.render(state), width, height, WHITE)


def craftax_picture(owner: Any, name: str, state: Any, width: int, height: int):
    """uint8 RGB `[height, width, 3]` of Craftax state `state` of environment `name` (Classic
    or full) drawn by Craftax's pixel renderer; `owner` keeps the jitted renderer."""
    draw = vars(owner).get("_craftax_renderer")
    if draw is None:
        import jax

        if "Classic" in name:
            from craftax.craftax_classic.constants import BLOCK_PIXEL_SIZE_IMG
            from craftax.craftax_classic.renderer import make_craftax_pixel_renderer
        else:
            from craftax.craftax.constants import BLOCK_PIXEL_SIZE_IMG
            from craftax.craftax.renderer import make_craftax_pixel_renderer
        with contextlib.redirect_stdout(io.StringIO()):  # Craftax prints its texture loading
            draw = jax.jit(make_craftax_pixel_renderer(BLOCK_PIXEL_SIZE_IMG))
        owner._craftax_renderer = draw
    return fit(np.asarray(draw(state)), width, height)


def minigrid_picture(xminigrid_env: Any, state: Any, params: Any, width: int, height: int):
    """uint8 RGB `[height, width, 3]` of XLand-MiniGrid state `state` drawn by
    `xminigrid_env.render` in its `rgb_array` mode (whatever `params.render_mode` says)."""
    from xminigrid.types import StepType, TimeStep

    timestep = TimeStep(
        state=state,
        step_type=StepType.MID,
        reward=np.zeros((), np.float32),
        discount=np.ones((), np.float32),
        observation=None,
    )
    image = xminigrid_env.render(params.replace(render_mode="rgb_array"), timestep)
    return fit(image, width, height)


def minatar_picture(gymnax_env: Any, state: Any, params: Any, width: int, height: int):
    """uint8 RGB `[height, width, 3]` of a gymnax MinAtar game's state drawn by gymnax's MinAtar
    visualisation on a figure of `width` x `height` pixels (Agg canvas, no pyplot)."""
    from gymnax.visualize.vis_minatar import init_minatar
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    dpi = 100
    figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    canvas = FigureCanvasAgg(figure)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    init_minatar(axes, gymnax_env, state, params)
    axes.set_axis_off()
    canvas.draw()
    return fit(np.asarray(canvas.buffer_rgba()), width, height, WHITE)
