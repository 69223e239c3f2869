"""The eight held-out 13 x 13 mazes of the UED literature's maze benchmark, as level strings.

| name             | start (x, y), direction | goal (x, y) | shortest solution (turns and moves) |
|------------------|-------------------------|-------------|-------------------------------------|
| SixteenRooms     | (1, 1) right            | (11, 11)    | 26                                  |
| SixteenRooms2    | (1, 1) right            | (11, 11)    | 28                                  |
| Labyrinth        | (0, 12) right           | (6, 6)      | 113                                 |
| LabyrinthFlipped | (12, 12) left           | (6, 6)      | 113                                 |
| Labyrinth2       | (0, 0) right            | (6, 6)      | 113                                 |
| StandardMaze     | (6, 0) right            | (6, 12)     | 54                                  |
| StandardMaze2    | (0, 6) right            | (12, 4)     | 73                                  |
| StandardMaze3    | (3, 0) right            | (12, 6)     | 54                                  |

Evaluation horizon: `EVAL_MAX_STEPS` = 250 (jaxued's); minimax and DCD evaluate these singleton
mazes with `minimax_max_steps(h, w)` = 2 (h + 2) (w + 2) = 450 steps.

The layouts are data copied from minimax (https://github.com/facebookresearch/minimax, file
src/minimax/envs/maze/maze_ood.py at commit d053054c5290a04c1c4cd8b55704d999cad73e30,
Copyright (c) Meta Platforms, Inc. and affiliates, licensed under the Apache License 2.0),
where each is a wall map of 0/1 with goal and agent positions; minimax's start direction is 0
where it gives none (all but LabyrinthFlipped's 2). Written here as `Level.from_str` text.
"""

from __future__ import annotations

from rlsuite.envs.maze.level import Level, stack

EVAL_MAX_STEPS = 250  # jaxued's evaluation horizon (its maze env's max_steps_in_episode)

SIXTEEN_ROOMS = """
...#..#..#...
.>.......#...
...#..#......
#.###.##.###.
...#.........
......#..#...
##.#.##.###.#
...#.....#...
...#..#......
.####.##.#.##
...#..#..#...
......#....G.
...#.....#...
"""

SIXTEEN_ROOMS_2 = """
...#.....#...
.>....#..#...
...#..#..#...
####.##.###.#
...#..#......
......#..#...
#.#####.#####
...#..#..#...
...#.........
##.##.##.####
...#..#..#...
......#....G.
...#..#..#...
"""

LABYRINTH = """
.............
.###########.
.#.........#.
.#.#######.#.
.#.#.....#.#.
.#.#.###.#.#.
.#.#.#G#.#.#.
.#.#.#.#.#.#.
.#...#...#.#.
.#########.#.
.....#.....#.
####.#.#####.
>....#.......
"""

LABYRINTH_FLIPPED = """
.............
.###########.
.#.........#.
.#.#######.#.
.#.#.....#.#.
.#.#.###.#.#.
.#.#.#G#.#.#.
.#.#.#.#.#.#.
.#.#...#...#.
.#.#########.
.#.....#.....
.#####.#.####
.......#....<
"""

LABYRINTH_2 = """
>#...........
.#.#########.
.#.#.......#.
.#.#.#####.#.
.#.#.#...#.#.
...#.#.#.#.#.
####.#G#.#.#.
...#.###.#.#.
.#.#.....#.#.
.#.#######.#.
.#.........#.
.###########.
.............
"""

STANDARD_MAZE = """
.....#>...#..
.###.####.##.
.#...........
.########.###
........#....
######.#####.
....#..#.....
.##...##.####
..#.#..#...#.
#.#.##.###.#.
#.#..#...#...
#.##.###.###.
...#..G#.#...
"""

STANDARD_MAZE_2 = """
...#.#....#..
.#.#.####...#
.#........#..
.########.###
...#..#.#.#.G
##.#.##.#.#..
>#.#....#.##.
.#.##.###..#.
.#..#..###.#.
.##.##.#.#.#.
.#...#.#.#.#.
.#.#.#.#.#.#.
...#...#.....
"""

STANDARD_MAZE_3 = """
...>#.#......
.####.#.####.
.#....#.#....
...####.#.#.#
##.#....#.#..
...#.##.#.##.
.#.#.#..#..#G
.#.#.#.###.##
.#...#.#.#...
.###.#.#.###.
.#...#.#...#.
.#.###.#.#.#.
.#...#...#...
"""

HELD_OUT: dict[str, str] = {
    name: text.strip()
    for name, text in (
        ("SixteenRooms", SIXTEEN_ROOMS),
        ("SixteenRooms2", SIXTEEN_ROOMS_2),
        ("Labyrinth", LABYRINTH),
        ("LabyrinthFlipped", LABYRINTH_FLIPPED),
        ("Labyrinth2", LABYRINTH_2),
        ("StandardMaze", STANDARD_MAZE),
        ("StandardMaze2", STANDARD_MAZE_2),
        ("StandardMaze3", STANDARD_MAZE_3),
    )
}
NAMES = tuple(HELD_OUT)


def minimax_max_steps(height: int, width: int) -> int:
    """minimax's and DCD's evaluation horizon for a `height` x `width` maze: 2 (h + 2) (w + 2)
    (the walled border included; 450 for 13 x 13)."""
    return 2 * (height + 2) * (width + 2)


def held_out_level(name: str) -> Level:
    """One held-out maze by name (see `NAMES`)."""
    if name not in HELD_OUT:
        raise ValueError(f"unknown held-out maze {name!r}; allowed: {', '.join(NAMES)}")
    return Level.from_str(HELD_OUT[name])


def held_out_levels(names: tuple[str, ...] = NAMES, height: int = 13, width: int = 13) -> Level:
    """The named held-out mazes as one batched `Level` [N, height, width] (padded with walls)."""
    return stack([held_out_level(name) for name in names], height, width)
