"""The meta-RL task families by name (`META`: `envs.make("meta/bandit")`, ...): each factory
builds a family's environment (`envs/tasks/`) inside the `RL2` trial wrapper, with no
`TimeLimit` (a trial ends by its length; every inner episode by the family's own horizon).

Each factory is marked with the class of the environment it wraps (`factory.task_env`), so that
what it builds can be known without building it (an MJX one takes seconds).
"""

from __future__ import annotations

import functools
from typing import Any

from rlsuite.envs.tasks import bandits, maze, mjx_tasks, point_robot, tabular_mdp

from rlsuite.environment import Environment
from rlsuite.environment.meta import RL2


def _trials(field: str, value: Any) -> int:
    """A trial length given to a `meta/` name, checked to be an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"invalid {field}={value!r}; allowed: an integer >= 1")
    return value


def _task_env(cls: type[Environment]):
    """Mark a meta-RL family's factory with the class of the environment it wraps in `RL2`
    (`factory.task_env`), so that what it builds can be known without building it (an MJX
    one takes seconds)."""

    def mark(factory):
        factory.task_env = cls
        return factory

    return mark


@_task_env(bandits.BernoulliBandit)
def meta_bandit(
    num_arms: int = 5, pulls: int = 10, memory: str = "trial", held_out: bool = False
) -> RL2:
    """Duan et al.'s bandits: probs ~ U[0, 1]^num_arms per trial, `pulls` one-pull episodes.
    Its tasks are levels for a curriculum; `held_out` evaluates on the five named bandits too
    (5 arms: refused with another `num_arms`)."""
    pulls = _trials("pulls", pulls)
    if not isinstance(held_out, bool):
        raise ValueError(f"invalid held_out={held_out!r}; allowed: True or False")
    env = bandits.BernoulliBandit(num_arms)
    tasks = bandits.tasks(num_arms, held_out)
    return RL2(env, bandits.sample_uniform, episodes_per_trial=pulls, memory=memory, tasks=tasks)


@_task_env(bandits.BernoulliBandit)
def meta_two_arm_bandit(pulls: int = 100, memory: str = "trial") -> RL2:
    """gymnax's two arms {p, 1 - p} in a random order per trial (`p` a params field, 0.1)."""
    pulls = _trials("pulls", pulls)
    env = bandits.BernoulliBandit(2)
    return RL2(env, bandits.sample_paired, episodes_per_trial=pulls, memory=memory)


@_task_env(tabular_mdp.TabularMDP)
def meta_tabular_mdp(
    num_states: int = 10,
    num_actions: int = 5,
    horizon: int = 10,
    episodes_per_trial: int = 10,
    memory: str = "trial",
) -> RL2:
    """Duan et al.'s random tabular MDPs, `episodes_per_trial` episodes of `horizon` steps."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = tabular_mdp.TabularMDP(num_states, num_actions, horizon)
    return RL2(env, tabular_mdp.sample_task, episodes_per_trial=episodes, memory=memory)


@_task_env(maze.Maze)
def meta_maze(
    size: int = 5,
    view: int = 3,
    observe_position: bool = False,
    max_steps: int | None = None,
    episodes_per_trial: int = 3,
    memory: str = "trial",
    wall_density: float = 0.0,
) -> RL2:
    """A grid maze with a goal per trial, `episodes_per_trial` episodes from random starts; with
    `wall_density` > 0, walls per trial too (`maze.sample_layout`: densities up to it), and the
    six held-out layouts where the maze is 5 x 5. Its tasks are levels for a curriculum
    (`rlsuite train ued --env meta/maze --env-option wall_density=0.4`)."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    number = isinstance(wall_density, int | float) and not isinstance(wall_density, bool)
    if not number or not 0.0 <= wall_density <= 1.0:
        raise ValueError(f"invalid wall_density={wall_density!r}; allowed: a number in [0, 1]")
    env = maze.Maze(size, view, observe_position, max_steps)
    sample = maze.sample_task
    if wall_density > 0:
        sample = functools.partial(maze.sample_layout, wall_density=float(wall_density))
    tasks = maze.tasks(size, walls=wall_density > 0)
    return RL2(env, sample, episodes_per_trial=episodes, memory=memory, tasks=tasks)


@_task_env(point_robot.PointRobot)
def meta_point_robot(
    max_steps: int = 20, episodes_per_trial: int = 2, memory: str = "trial"
) -> RL2:
    """A point robot and a goal on the upper unit semicircle per trial."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = point_robot.PointRobot(max_steps)
    return RL2(env, point_robot.sample_task, episodes_per_trial=episodes, memory=memory)


@_task_env(mjx_tasks.CheetahVelocity)
def meta_cheetah_velocity(
    max_steps: int = 200, episodes_per_trial: int = 2, backend: str = "mjx", memory: str = "trial"
) -> RL2:
    """Brax's halfcheetah (MJX) with a target velocity ~ U[velocity_low, velocity_high] per
    trial (params fields, default [0, 3]), `episodes_per_trial` episodes of `max_steps` steps."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = mjx_tasks.CheetahVelocity(max_steps, backend)
    return RL2(env, mjx_tasks.sample_velocity, episodes_per_trial=episodes, memory=memory)


@_task_env(mjx_tasks.AntDirection)
def meta_ant_direction(
    max_steps: int = 200, episodes_per_trial: int = 2, backend: str = "mjx", memory: str = "trial"
) -> RL2:
    """Brax's ant (MJX) rewarded along a direction per trial: forward or backward (params
    forward_backward, default) or any angle in the plane."""
    episodes = _trials("episodes_per_trial", episodes_per_trial)
    env = mjx_tasks.AntDirection(max_steps, backend)
    return RL2(env, mjx_tasks.sample_direction, episodes_per_trial=episodes, memory=memory)


# Meta-RL task families, each trained across trials: `make` returns them `RL2`-wrapped.
META: dict[str, Any] = {
    "meta/bandit": meta_bandit,
    "meta/two_arm_bandit": meta_two_arm_bandit,
    "meta/tabular_mdp": meta_tabular_mdp,
    "meta/maze": meta_maze,
    "meta/point_robot": meta_point_robot,
    "meta/cheetah_velocity": meta_cheetah_velocity,
    "meta/ant_direction": meta_ant_direction,
}
