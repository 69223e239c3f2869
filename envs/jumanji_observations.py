"""How a Jumanji task's observation becomes ours (`envs/jumanji_adapter.py`): one float32
array per task, an image `[H, W, C]` for the grid tasks and a flat vector for the others, by a
pure function of Jumanji's observation (`OBSERVATIONS[task].convert(jumanji_env, observation)`;
`layout` says what each holds, channel by channel or block by block).

Nothing of Jumanji is imported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def _one_hot(x: jax.Array, n: int) -> jax.Array:
    """float32 one-hot over a new last axis (an index outside `[0, n)`, such as -1, is zeros)."""
    return jax.nn.one_hot(x, n, dtype=jnp.float32)


def _time(env: Any, obs: Any) -> jax.Array:
    """The step count divided by the task's time limit (in [0, 1])."""
    return jnp.asarray(obs.step_count, jnp.float32) / env.time_limit


def _plane(value: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """`value` broadcast to one `[H, W, 1]` channel."""
    return jnp.broadcast_to(value, (*shape, 1)).astype(jnp.float32)


def _flat(*parts: jax.Array) -> jax.Array:
    return jnp.concatenate([jnp.asarray(p, jnp.float32).reshape(-1) for p in parts])


def _snake(env: Any, obs: Any) -> jax.Array:
    grid = jnp.asarray(obs.grid, jnp.float32)
    return jnp.concatenate([grid, _plane(_time(env, obs), grid.shape[:2])], axis=-1)


def _game2048(env: Any, obs: Any) -> jax.Array:
    return _one_hot(obs.board, env.board_size**2 + 2)


def _maze(env: Any, obs: Any) -> jax.Array:
    walls = jnp.asarray(obs.walls, jnp.float32)
    rows, cols = jnp.indices(walls.shape)

    def at(position):
        return ((rows == position.row) & (cols == position.col)).astype(jnp.float32)

    channels = [walls, at(obs.agent_position), at(obs.target_position)]
    return jnp.stack([*channels, _plane(_time(env, obs), walls.shape)[..., 0]], axis=-1)


def _minesweeper(env: Any, obs: Any) -> jax.Array:
    return _one_hot(obs.board + 1, 10)


def _rubiks_cube(env: Any, obs: Any) -> jax.Array:
    return _flat(_one_hot(obs.cube, 6), _time(env, obs))


def _bin_pack(env: Any, obs: Any) -> jax.Array:
    ems, items = obs.ems, obs.items
    return _flat(
        ems.x1, ems.x2, ems.y1, ems.y2, ems.z1, ems.z2, obs.ems_mask,
        items.x_len, items.y_len, items.z_len, obs.items_mask, obs.items_placed,
        obs.action_mask,
    )  # fmt: skip


def _tsp(env: Any, obs: Any) -> jax.Array:
    n = env.num_cities
    return _flat(
        obs.coordinates, _one_hot(obs.position, n), _one_hot(obs.trajectory, n), obs.action_mask
    )


def _knapsack(env: Any, obs: Any) -> jax.Array:
    return _flat(obs.weights, obs.values, obs.packed_items, obs.action_mask)


def _cvrp(env: Any, obs: Any) -> jax.Array:
    n = env.num_nodes + 1
    return _flat(
        obs.coordinates, obs.demands, obs.unvisited_nodes, _one_hot(obs.position, n),
        _one_hot(obs.trajectory, n), obs.capacity, obs.action_mask,
    )  # fmt: skip


def _sudoku(env: Any, obs: Any) -> jax.Array:
    return _one_hot(obs.board + 1, 10)


def _sliding_tile(env: Any, obs: Any) -> jax.Array:
    size = obs.puzzle.shape[0]
    tiles = _one_hot(obs.puzzle, size * size)
    return jnp.concatenate([tiles, _plane(_time(env, obs), (size, size))], axis=-1)


def _graph_coloring(env: Any, obs: Any) -> jax.Array:
    n = env.num_nodes
    return _flat(
        obs.adj_matrix, _one_hot(obs.colors, n), _one_hot(obs.current_node_index, n),
        obs.action_mask,
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Observation:
    """How one task's Jumanji observation becomes ours: `convert(jumanji_env, observation)`,
    its bounds, and what it holds (`layout`, for the documentation)."""

    convert: Callable[[Any, Any], jax.Array]
    layout: str
    high: float = 1.0


OBSERVATIONS: dict[str, Observation] = {
    "Snake-v1": Observation(
        _snake,
        "[rows, cols, 6]: Jumanji's grid (body, head, tail, fruit, body order from 1 at the head "
        "to 1/length at the tail), then step_count / time_limit",
    ),
    "Game2048-v1": Observation(
        _game2048,
        "[n, n, n*n + 2]: one-hot of each cell's tile exponent (channel 0: empty, channel k: "
        "the tile 2**k)",
    ),
    "Maze-v0": Observation(
        _maze, "[rows, cols, 4]: walls, agent, target, then step_count / time_limit"
    ),
    "Minesweeper-v0": Observation(
        _minesweeper,
        "[rows, cols, 10]: one-hot of the board (channel 0: unexplored, channel 1 + k: explored "
        "with k adjacent mines)",
    ),
    "RubiksCube-v0": Observation(
        _rubiks_cube,
        "[6 * size * size * 6 + 1]: one-hot of each sticker's colour ([face, row, col, colour] "
        "flattened), then step_count / time_limit",
    ),
    "BinPack-v2": Observation(
        _bin_pack,
        "[6 E + E + 3 I + I + I + E I] (E = obs_num_ems, I = max items): the EMSs' x1, x2, y1, "
        "y2, z1, z2 (each [E]), ems_mask, the items' x_len, y_len, z_len (each [I]), "
        "items_mask, items_placed, action_mask [E, I] flattened",
    ),
    "TSP-v1": Observation(
        _tsp,
        "[2 N + N + N N + N] (N cities): coordinates [N, 2], one-hot position (zeros before "
        "the first city), one-hot of each trajectory entry [N, N] (zeros where not filled), "
        "action_mask",
    ),
    "Knapsack-v1": Observation(
        _knapsack, "[4 N] (N items): weights, values, packed_items, action_mask"
    ),
    "CVRP-v1": Observation(
        _cvrp,
        "(N = nodes + depot) coordinates [N, 2], demands [N], unvisited_nodes [N], one-hot "
        "position [N], one-hot of each trajectory entry [2 (N - 1), N], capacity [1], "
        "action_mask [N]",
    ),
    "Sudoku-v0": Observation(
        _sudoku,
        "[9, 9, 10]: one-hot of the board (channel 0: empty, channel 1 + d: the digit index d)",
    ),
    "SlidingTilePuzzle-v0": Observation(
        _sliding_tile,
        "[n, n, n*n + 1]: one-hot of each cell's tile (channel 0: the empty cell), then "
        "step_count / time_limit",
    ),
    "GraphColoring-v1": Observation(
        _graph_coloring,
        "[N N + N N + N + N] (N nodes): adj_matrix, one-hot of each node's colour [N, N] (zeros "
        "where not coloured), one-hot current_node_index, action_mask",
    ),
}
OBSERVATIONS["RubiksCube-partly-scrambled-v0"] = OBSERVATIONS["RubiksCube-v0"]
OBSERVATIONS["Sudoku-very-easy-v0"] = OBSERVATIONS["Sudoku-v0"]
