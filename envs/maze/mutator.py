"""ACCEL's level mutator: a few small random edits of a maze level.

`mutate(key, level, num_edits)` applies `num_edits` edits one after the other, each chosen
uniformly among

| edit        | what it does                                                                   |
|-------------|--------------------------------------------------------------------------------|
| add wall    | a free cell (not the agent's or the goal's) becomes a wall                     |
| remove wall | a wall inside the level's width x height becomes free (padding stays wall)     |
| move goal   | the goal moves to a free cell other than the agent's                           |
| move agent  | the agent's start moves to a free cell other than the goal's, facing a random  |
|             | direction                                                                      |

with the cell drawn uniformly among those allowed (an edit with none, e.g. removing a wall from
a level without one, does nothing). Every mutated level of a well-formed one is well formed, and
differs from it in at most `num_edits` items (a cell's wall, the goal, the start). 0 edits is
the identity. `num_edits` may be traced (vmap a batch of edit counts).

The semantics follow ACCEL (Parker-Holder et al., 2022) as minimax's maze mutator and jaxued's
`make_level_mutator_minimax` implement it (there: a no-op, a wall flip or a goal move per edit);
here a wall flip is split into its two directions and moving the start is an edit too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from rlsuite.envs.maze.level import Level, as_level, random_cell

ADD_WALL, REMOVE_WALL, MOVE_GOAL, MOVE_AGENT = range(4)
NUM_KINDS = 4


def mutate(key: jax.Array, level: Level, num_edits: int | jax.Array) -> Level:
    """`level` after `num_edits` random edits (see the module's docstring); pure and
    jit-/vmappable over keys, levels and edit counts."""
    if not isinstance(num_edits, jax.core.Tracer):
        count = np.asarray(num_edits)
        if count.dtype.kind not in "iu" or count.ndim != 0 or count < 0:
            raise ValueError(f"mutate: invalid num_edits={num_edits!r}; allowed: an integer >= 0")
    level = as_level(level)
    return jax.lax.fori_loop(
        0, num_edits, lambda i, lv: _edit(jax.random.fold_in(key, i), lv), level
    )


def _edit(key: jax.Array, level: Level) -> Level:
    key_kind, key_cell, key_dir = jax.random.split(key, 3)
    kind = jax.random.randint(key_kind, (), 0, NUM_KINDS)
    h, w = level.wall_map.shape
    walls = level.wall_map.reshape(-1)
    ys, xs = jnp.divmod(jnp.arange(h * w), w)
    inside = (xs < level.width) & (ys < level.height)
    goal = level.goal_pos[1] * w + level.goal_pos[0]
    agent = level.agent_pos[1] * w + level.agent_pos[0]
    cells = jnp.arange(h * w)
    free = inside & ~walls & (cells != goal) & (cells != agent)
    allowed = jnp.where(kind == REMOVE_WALL, inside & walls, free)
    cell, found = random_cell(key_cell, allowed)
    walls = jnp.where(found & (kind == ADD_WALL), walls.at[cell].set(True), walls)
    walls = jnp.where(found & (kind == REMOVE_WALL), walls.at[cell].set(False), walls)
    goal = jnp.where(found & (kind == MOVE_GOAL), cell, goal)
    moved = found & (kind == MOVE_AGENT)
    agent = jnp.where(moved, cell, agent)
    direction = jnp.where(moved, jax.random.randint(key_dir, (), 0, 4), level.agent_dir)
    return level.replace(
        wall_map=walls.reshape(h, w),
        goal_pos=jnp.stack([goal % w, goal // w]).astype(jnp.int32),
        agent_pos=jnp.stack([agent % w, agent // w]).astype(jnp.int32),
        agent_dir=direction.astype(jnp.int32),
    )
