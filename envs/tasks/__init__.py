"""Meta-RL task families: environments whose `params` hold one task, each with a module-level
pure `sample_*(key, params) -> params` that draws a fresh task (vmappable over keys and params).
Wrap one in `rlsuite.environment.meta.RL2` to train across trials; `envs.make("meta/...")` does.

| module      | environment               | the task in params          | sampler(s)         |
|-------------|---------------------------|-----------------------------|--------------------|
| bandits     | BernoulliBandit(num_arms) | probs [k]                   | sample_uniform,    |
|             |                           |                             | sample_paired      |
| tabular_mdp | TabularMDP(S, A)          | transitions, reward_means   | sample_task        |
| maze        | Maze(size, view)          | goal [2] (and walls)        | sample_task        |
| point_robot | PointRobot()              | goal [2] on the unit circle | sample_task        |
| mjx_tasks   | CheetahVelocity() (MJX)   | target_velocity             | sample_velocity    |
|             | AntDirection() (MJX)      | direction [2]               | sample_direction   |

Every family ends its own episodes: `max_episode_steps` (a constructor argument) is its horizon,
counted in `step_env` (`truncated` there), so no `TimeLimit` goes inside the trial wrapper.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def check_leaf_shape(params: Any, field: str, shape: tuple[int, ...], owner: str) -> None:
    """Raise a `ValueError` naming `params.<field>` unless its shape ends with `shape`.

    Shapes are static, so this runs on traced values too (inside `jit` and `vmap`, where the
    value checks of `rlsuite.ops.validators.check_field` are skipped). Leading axes are allowed:
    a batch of tasks can be checked with `env.check_params(batch)` before mapping over it.
    """
    got = tuple(np.shape(getattr(params, field)))
    if len(got) < len(shape) or got[len(got) - len(shape) :] != tuple(shape):
        raise ValueError(
            f"{owner}: invalid params.{field} of shape {got}; allowed: an array of shape "
            f"{tuple(shape)} (one task; batch tasks with jax.vmap)"
        )
