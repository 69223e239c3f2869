"""Domain randomisation's level generator: random walls, goal and start (as jaxued's
`make_level_generator`).

`make_generator(height, width, n_walls)` returns `generate(key) -> Level`, a pure function
(jit- and vmappable over keys) of a `height` x `width` level:

| item   | how it is drawn                                                                    |
|--------|------------------------------------------------------------------------------------|
| walls  | `n_walls` cells drawn uniformly with replacement (so at most `n_walls` walls)      |
| agent  | a free cell, uniformly; its direction uniformly in 0..3                            |
| goal   | a free cell other than the agent's, uniformly                                      |

Every level is well formed (`n_walls <= height * width - 2` leaves two free cells). Nothing
ensures the goal can be reached: as in jaxued, DR levels may be unsolvable.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from rlsuite.envs.maze.level import Level, random_cell


def make_generator(height: int, width: int, n_walls: int) -> Callable[[jax.Array], Level]:
    """A function `key -> Level` drawing DR levels of `height` x `width` with up to `n_walls`
    walls (jaxued's maze defaults: 13 x 13, 25 walls; minimax's DR: 60)."""
    for field, value in (("height", height), ("width", width), ("n_walls", n_walls)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"make_generator: invalid {field}={value!r}; allowed: an integer")
    if height < 1 or width < 1 or height * width < 2:
        raise ValueError(
            f"make_generator: invalid size {height} x {width}; allowed: at least 2 cells"
        )
    if not 0 <= n_walls <= height * width - 2:
        raise ValueError(
            f"make_generator: invalid n_walls={n_walls}; allowed: 0..{height * width - 2} "
            "(two cells stay free for the agent and the goal)"
        )
    cells = height * width

    def generate(key: jax.Array) -> Level:
        key_walls, key_agent, key_dir, key_goal = jax.random.split(key, 4)
        drawn = jax.random.randint(key_walls, (n_walls,), 0, cells)
        walls = jnp.zeros((cells,), bool).at[drawn].set(True)
        agent, _ = random_cell(key_agent, ~walls)
        goal, _ = random_cell(key_goal, ~walls.at[agent].set(True))
        return Level(
            wall_map=walls.reshape(height, width),
            goal_pos=jnp.stack([goal % width, goal // width]).astype(jnp.int32),
            agent_pos=jnp.stack([agent % width, agent // width]).astype(jnp.int32),
            agent_dir=jax.random.randint(key_dir, (), 0, 4, jnp.int32),
            width=jnp.asarray(width, jnp.int32),
            height=jnp.asarray(height, jnp.int32),
        )

    generate.__qualname__ = f"make_generator({height}, {width}, {n_walls})"
    generate.n_walls = n_walls  # PAIRED's editor places as many (`Maze.levels`)
    return generate
