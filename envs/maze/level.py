"""A maze level: walls, goal, the agent's start, as a pytree (`Level`), with text I/O and checks.

Coordinates follow jaxued's and MiniGrid's (x, y) convention: `wall_map[y, x]`, x to the right
and y down; `agent_dir` 0 right (+x), 1 down (+y), 2 left, 3 up.

| field       | value                                                                        |
|-------------|------------------------------------------------------------------------------|
| `wall_map`  | bool [H, W], True where a wall is; padding beyond `width` x `height` is wall |
| `goal_pos`  | int32 [2] (x, y), on a free cell                                             |
| `agent_pos` | int32 [2] (x, y), the start, on a free cell other than the goal              |
| `agent_dir` | int32 scalar, the start direction: 0 right, 1 down, 2 left, 3 up             |
| `width`     | int32 scalar, the real width inside the (padded) map                         |
| `height`    | int32 scalar, the real height                                                |

Text (`Level.from_str`, `Level.to_str`): one line per row, `#` a wall, `.` a free cell, `G` the
goal and `>`, `v`, `<`, `^` the agent facing right, down, left, up. `pad` pads a level to an
environment's fixed size with walls, `stack` batches levels of several sizes; `check_level`
names what is wrong with a concrete level, `well_formed` says whether one is, inside `jit`;
`level_hash` is an int32 hash of a level (walls, goal, start).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

DIR_CHARS = ">v<^"  # agent_dir 0, 1, 2, 3
WALL, FREE, GOAL = "#", ".", "G"
ALLOWED = (WALL, FREE, GOAL, *DIR_CHARS)
DIRECTIONS = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], np.int32)  # (dx, dy) per agent_dir


@struct.dataclass
class Level:
    """One maze level (or a batch, with leading axes on every field)."""

    wall_map: jax.Array  # bool [H, W]
    goal_pos: jax.Array  # int32 [2] (x, y)
    agent_pos: jax.Array  # int32 [2] (x, y)
    agent_dir: jax.Array  # int32 []
    width: jax.Array  # int32 []
    height: jax.Array  # int32 []

    @classmethod
    def from_str(cls, text: str) -> Level:
        """Parse rows of `#`, `.`, `G`, `>`, `v`, `<`, `^` (one goal, one agent); surrounding
        blank lines and indentation are ignored. A `ValueError` names what is wrong."""
        if not isinstance(text, str):
            raise TypeError(f"Level.from_str: expected a string, got {type(text).__name__}")
        rows = [row.strip() for row in text.strip().split("\n")]
        if not rows[0]:
            raise ValueError("Level.from_str: empty level; give rows of " + _allowed())
        for index, row in enumerate(rows):
            if len(row) != len(rows[0]):
                raise ValueError(
                    f"Level.from_str: ragged rows: row {index} has {len(row)} cells, row 0 has "
                    f"{len(rows[0])}; every row must have the same length"
                )
        goals, agents = [], []
        for y, row in enumerate(rows):
            for x, char in enumerate(row):
                if char not in ALLOWED:
                    raise ValueError(
                        f"Level.from_str: unknown character {char!r} at row {y}, column {x}; "
                        f"allowed: {_allowed()}"
                    )
                if char == GOAL:
                    goals.append((x, y))
                elif char in DIR_CHARS:
                    agents.append((x, y, DIR_CHARS.index(char)))
        for what, found, chars in (("goal", goals, "'G'"), ("agent", agents, "'>', 'v', '<', '^'")):
            if len(found) != 1:
                where = "" if not found else f" at (x, y) {[tuple(f[:2]) for f in found]}"
                raise ValueError(
                    f"Level.from_str: {'no' if not found else len(found)} {what}"
                    f"{'s' if len(found) > 1 else ''}{where}; a level has exactly one {what} "
                    f"({chars})"
                )
        walls = np.array([[char == WALL for char in row] for row in rows], bool)
        (gx, gy), (ax, ay, direction) = goals[0], agents[0]
        return cls(
            wall_map=jnp.asarray(walls),
            goal_pos=jnp.asarray([gx, gy], jnp.int32),
            agent_pos=jnp.asarray([ax, ay], jnp.int32),
            agent_dir=jnp.asarray(direction, jnp.int32),
            width=jnp.asarray(walls.shape[1], jnp.int32),
            height=jnp.asarray(walls.shape[0], jnp.int32),
        )

    def to_str(self) -> str:
        """The level's rows (its real `height` x `width`, padding left out), as `from_str`
        reads them. The level must be one concrete, well-formed level (see `check_level`)."""
        check_level(self)
        if np.ndim(self.wall_map) != 2:
            raise ValueError(
                f"Level.to_str: one level expected, got a batch of shape "
                f"{np.shape(self.wall_map)[:-2]}; index it first"
            )
        walls = np.asarray(self.wall_map)[: int(self.height), : int(self.width)]
        cells = np.where(walls, WALL, FREE).astype(object)
        gx, gy = np.asarray(self.goal_pos).tolist()
        ax, ay = np.asarray(self.agent_pos).tolist()
        cells[gy, gx] = GOAL
        cells[ay, ax] = DIR_CHARS[int(self.agent_dir)]
        return "\n".join("".join(row) for row in cells)


def _allowed() -> str:
    return "'#' (wall), '.' (free), 'G' (goal), '>', 'v', '<', '^' (the agent and its direction)"


def as_level(level: Level) -> Level:
    """`level` with the canonical dtypes (bool walls, int32 elsewhere)."""
    if not isinstance(level, Level):
        raise TypeError(f"expected a Level, got {type(level).__name__}")
    return Level(
        wall_map=jnp.asarray(level.wall_map, bool),
        goal_pos=jnp.asarray(level.goal_pos, jnp.int32),
        agent_pos=jnp.asarray(level.agent_pos, jnp.int32),
        agent_dir=jnp.asarray(level.agent_dir, jnp.int32),
        width=jnp.asarray(level.width, jnp.int32),
        height=jnp.asarray(level.height, jnp.int32),
    )


def pad(level: Level, height: int, width: int) -> Level:
    """`level` (or a batch) with its wall map padded with walls to `height` x `width`; its real
    `width` and `height` are kept. A level larger than that is a `ValueError`."""
    if not isinstance(level, Level):
        raise TypeError(f"pad: expected a Level, got {type(level).__name__}")
    h, w = np.shape(level.wall_map)[-2:]
    if h > height or w > width:
        raise ValueError(
            f"pad: the level ({h} x {w}, height x width) is larger than the environment's "
            f"{height} x {width}; build the environment at least as large as its levels"
        )
    batch = np.ndim(level.wall_map) - 2
    spec = [(0, 0)] * batch + [(0, height - h), (0, width - w)]
    walls = jnp.pad(jnp.asarray(level.wall_map, bool), spec, constant_values=True)
    return as_level(level.replace(wall_map=walls))


def stack(levels: list[Level], height: int | None = None, width: int | None = None) -> Level:
    """One batched `Level` [N, ...] of `levels`, each padded to `height` x `width` (default: the
    largest among them)."""
    levels = list(levels)
    if not levels:
        raise ValueError("stack: no levels given")
    height = max(np.shape(lv.wall_map)[-2] for lv in levels) if height is None else height
    width = max(np.shape(lv.wall_map)[-1] for lv in levels) if width is None else width
    padded = [pad(lv, height, width) for lv in levels]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *padded)


def _problems(level: Level) -> list[tuple[str, np.ndarray]]:
    """`(message, bad)` for each rule a concrete level (batch [N] after flattening) may break;
    `bad` is bool [N]. Messages take the `{}` of the first bad level's values."""
    walls = np.asarray(level.wall_map)
    shape = walls.shape[-2:]
    walls = walls.reshape(-1, *shape).astype(bool)
    n = walls.shape[0]
    goal = np.asarray(level.goal_pos).reshape(n, 2).astype(np.int64)
    agent = np.asarray(level.agent_pos).reshape(n, 2).astype(np.int64)
    direction = np.asarray(level.agent_dir).reshape(n).astype(np.int64)
    width = np.asarray(level.width).reshape(n).astype(np.int64)
    height = np.asarray(level.height).reshape(n).astype(np.int64)
    rows = np.arange(n)

    size_bad = (width < 1) | (width > shape[1]) | (height < 1) | (height > shape[0])
    w = np.clip(width, 1, shape[1])
    h = np.clip(height, 1, shape[0])

    def outside(pos):
        return (pos[:, 0] < 0) | (pos[:, 0] >= w) | (pos[:, 1] < 0) | (pos[:, 1] >= h)

    def on_wall(pos):
        x = np.clip(pos[:, 0], 0, shape[1] - 1)
        y = np.clip(pos[:, 1], 0, shape[0] - 1)
        return walls[rows, y, x]

    ys, xs = np.arange(shape[0])[:, None], np.arange(shape[1])[None, :]
    padding = (xs[None] >= w[:, None, None]) | (ys[None] >= h[:, None, None])
    open_padding = np.any(padding & ~walls, axis=(1, 2))
    return [
        (
            f"width and height must be in 1..{shape[1]} and 1..{shape[0]} (the wall map's "
            "size), got width={}, height={}",
            size_bad,
            np.stack([width, height], 1),
        ),
        ("agent_dir={} is not a direction; allowed: 0 (right), 1 (down), 2 (left), 3 (up)",
         (direction < 0) | (direction > 3), direction[:, None]),
        ("the agent at (x, y) = ({}, {}) is outside the level's width x height",
         outside(agent), agent),
        ("the goal at (x, y) = ({}, {}) is outside the level's width x height",
         outside(goal), goal),
        ("the agent at (x, y) = ({}, {}) is on a wall", on_wall(agent), agent),
        ("the goal at (x, y) = ({}, {}) is on a wall", on_wall(goal), goal),
        ("the agent at (x, y) = ({}, {}) is on the goal", np.all(agent == goal, axis=1), agent),
        ("cells outside the level's width x height ({} x {}) must be walls (use pad)",
         open_padding, np.stack([width, height], 1)),
    ]  # fmt: skip


def check_level(level: Level, owner: str = "Level") -> None:
    """Raise a `ValueError` naming the first rule a concrete level (or batch) breaks: walls a
    bool [..., H, W] map, width and height within it, a direction in 0..3, agent and goal inside
    the level, neither on a wall, the agent not on the goal, padding all walls."""
    if not isinstance(level, Level):
        raise TypeError(f"{owner}: expected a Level, got {type(level).__name__}")
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(level)):
        return  # traced: see well_formed
    walls = np.asarray(level.wall_map)
    if walls.ndim < 2 or not (walls.dtype == bool or np.all((walls == 0) | (walls == 1))):
        raise ValueError(
            f"{owner}: invalid wall_map of shape {walls.shape} and dtype {walls.dtype}; "
            "allowed: booleans of shape [height, width]"
        )
    batch = walls.shape[:-2]
    for field, tail in (("goal_pos", (2,)), ("agent_pos", (2,))):
        got = np.shape(getattr(level, field))
        if got != (*batch, *tail):
            raise ValueError(
                f"{owner}: invalid {field} of shape {got}; allowed: (x, y), shape {(*batch, *tail)}"
            )
    for field in ("agent_dir", "width", "height"):
        if np.shape(getattr(level, field)) != batch:
            raise ValueError(
                f"{owner}: invalid {field} of shape {np.shape(getattr(level, field))}; "
                f"allowed: one integer per level, shape {batch}"
            )
    for message, bad, values in _problems(level):
        if np.any(bad):
            first = int(np.argmax(bad))
            index = ", ".join(str(int(i)) for i in np.unravel_index(first, batch))
            where = f"level [{index}] of the batch: " if batch else ""
            raise ValueError(f"{owner}: {where}" + message.format(*values[first].tolist()))


def well_formed(level: Level) -> jax.Array:
    """Whether one level keeps every rule of `check_level` (a bool scalar; jit- and
    vmappable)."""
    walls = jnp.asarray(level.wall_map, bool)
    h_max, w_max = walls.shape
    width, height = jnp.asarray(level.width), jnp.asarray(level.height)
    goal = jnp.asarray(level.goal_pos, jnp.int32)
    agent = jnp.asarray(level.agent_pos, jnp.int32)

    def inside(pos):
        return (pos[0] >= 0) & (pos[0] < width) & (pos[1] >= 0) & (pos[1] < height)

    def on_wall(pos):
        return walls[jnp.clip(pos[1], 0, h_max - 1), jnp.clip(pos[0], 0, w_max - 1)]

    ys, xs = jnp.arange(h_max)[:, None], jnp.arange(w_max)[None, :]
    padding_walled = jnp.all(walls | ((xs < width) & (ys < height)))
    return (
        (width >= 1)
        & (width <= w_max)
        & (height >= 1)
        & (height <= h_max)
        & (level.agent_dir >= 0)
        & (level.agent_dir <= 3)
        & inside(agent)
        & inside(goal)
        & ~on_wall(agent)
        & ~on_wall(goal)
        & ~jnp.all(agent == goal)
        & padding_walled
    )


def _mix(h: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser (a bijection of uint32 that spreads every input bit)."""
    h = h ^ (h >> 16)
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> 13)
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def level_hash(level: Level) -> jax.Array:
    """An int32 hash of one level's walls, goal, start position and direction and size (the
    whole wall map, padding included). Equal levels hash equal; jit- and vmappable."""
    walls = jnp.asarray(level.wall_map, bool).reshape(-1)
    words = -(-walls.size // 32)
    bits = jnp.pad(walls, (0, words * 32 - walls.size)).reshape(words, 32).astype(jnp.uint32)
    packed = jnp.sum(bits << jnp.arange(32, dtype=jnp.uint32), axis=1, dtype=jnp.uint32)
    scalars = jnp.stack(
        [
            *jnp.asarray(level.goal_pos, jnp.int32),
            *jnp.asarray(level.agent_pos, jnp.int32),
            jnp.asarray(level.agent_dir, jnp.int32),
            jnp.asarray(level.width, jnp.int32),
            jnp.asarray(level.height, jnp.int32),
        ]
    ).astype(jnp.uint32)
    values = jnp.concatenate([packed, scalars])
    position = jnp.arange(values.size, dtype=jnp.uint32) * np.uint32(0x9E3779B9)
    h = _mix(jnp.sum(_mix(values ^ _mix(position + np.uint32(1))), dtype=jnp.uint32))
    return jax.lax.bitcast_convert_type(h, jnp.int32)


def random_cell(key: jax.Array, allowed: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(index, found)`: a flat cell index drawn uniformly among the True cells of `allowed`
    (any shape, read flat), and whether there was one (if not, `index` means nothing)."""
    allowed = jnp.asarray(allowed, bool).reshape(-1)
    index = jax.random.categorical(key, jnp.where(allowed, 0.0, -jnp.inf))
    return index.astype(jnp.int32), jnp.any(allowed)
