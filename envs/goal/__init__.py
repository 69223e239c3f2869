"""Goal-conditioned environments, all on one contract (for goal-conditioned agents such as CRL
and for hindsight relabelling).

The contract (`rlsuite.environment.goal.GoalEnvironment` implements it, beside the other
environment contracts, so that agents can check it: `check_goal_contract(env)`, before anything
is traced):

- the observation is `concat(state, goal)`: the first `state_dim` entries are the state, the
  rest the desired goal (`state_of(obs)`, `goal_of(obs)`);
- static attributes `state_dim` (int) and `goal_indices` (tuple of ints): the indices into the
  state that give the achieved goal, `achieved_of(obs_or_state) = x[..., goal_indices]`; the goal
  has `len(goal_indices)` entries (`goal_dim`);
- the success threshold (`params.goal_threshold`, read through `goal_threshold(params)`) and the
  goal distribution live in the env params, so `jax.vmap` over params gives goal curricula;
- every step's `info` holds `success` (bool: this step's next state is within the threshold of
  the goal), `achieved_goal` and `desired_goal`;
- `compute_reward(achieved_goal, desired_goal, params)`, batched over leading axes, is the
  step's reward for any pair of goals (relabelling): 1.0 where `||achieved - desired|| <
  threshold`, else 0.0 (sparse);
- episodes end by the time limit (`truncated`, from the `TimeLimit` that `envs.make` adds at
  `max_episode_steps`); only the ant's also by `terminated` (its torso left the healthy heights).

| name                      | class              | state | goals                        | steps |
|---------------------------|--------------------|-------|------------------------------|-------|
| `goal/point_reach`        | `PointReach`       | [2]   | uniform over [-1, 1]^2       | 50    |
| `goal/point_u_maze`       | `PointUMaze`       | [2]   | centres of JaxGCRL's 'G'     | 1000  |
| `goal/point_big_maze`     | `PointBigMaze`     | [2]   | cells, one drawn uniformly   | 1000  |
| `goal/point_hardest_maze` | `PointHardestMaze` | [2]   | (`point_maze.LAYOUTS`)       | 1000  |
| `goal/ant`                | `AntGoal`          | [29]  | radius 10 around the start   | 1000  |
| `goal/ant_u_maze`         | `AntUMaze`         | [29]  | centres of the 'G' cells of  | 1000  |
| `goal/ant_big_maze`       | `AntBigMaze`       | [29]  | the point mazes' layouts,    | 1000  |
| `goal/ant_hardest_maze`   | `AntHardestMaze`   | [29]  | walls as boxes in the model  | 1000  |

The ants (`ant.py`) are Brax's ant on MJX, state = concat(q, qd) with the torso x, y first
(`goal_indices = (0, 1)`); they are listed apart (`MJX_GOAL_ENVS`): MJX needs `jit` to run.

`rlsuite.envs.point_mass.PointMass` (a damped point mass, state [position, velocity]) follows
the same contract, with an optional distance cost in its reward (`params.distance_cost`, 0).
"""

from rlsuite.envs.goal.ant import (
    AntBigMaze,
    AntGoal,
    AntGoalParams,
    AntHardestMaze,
    AntMaze,
    AntMazeParams,
    AntUMaze,
)
from rlsuite.envs.goal.point import PointReach, PointReachParams
from rlsuite.envs.goal.point_maze import (
    LAYOUTS,
    PointBigMaze,
    PointHardestMaze,
    PointMaze,
    PointMazeParams,
    PointUMaze,
    maze_params,
    parse_layout,
)

from rlsuite.environment.goal import GoalEnvironment, GoalState, check_goal_contract

# The names `envs.make` knows them by, without the `goal/` prefix.
GOAL_ENVS: dict[str, type[GoalEnvironment]] = {
    "point_reach": PointReach,
    "point_u_maze": PointUMaze,
    "point_big_maze": PointBigMaze,
    "point_hardest_maze": PointHardestMaze,
}
# Those on MJX (Brax's ant), apart: MJX needs jit (an un-jitted step runs op by op for a minute).
MJX_GOAL_ENVS: dict[str, type[GoalEnvironment]] = {
    "ant": AntGoal,
    "ant_u_maze": AntUMaze,
    "ant_big_maze": AntBigMaze,
    "ant_hardest_maze": AntHardestMaze,
}

__all__ = [
    "GOAL_ENVS",
    "MJX_GOAL_ENVS",
    "AntBigMaze",
    "AntGoal",
    "AntGoalParams",
    "AntHardestMaze",
    "AntMaze",
    "AntMazeParams",
    "AntUMaze",
    "LAYOUTS",
    "GoalEnvironment",
    "GoalState",
    "PointBigMaze",
    "PointHardestMaze",
    "PointMaze",
    "PointMazeParams",
    "PointReach",
    "PointReachParams",
    "PointUMaze",
    "check_goal_contract",
    "maze_params",
    "parse_layout",
]
