"""SAC with hindsight experience replay (Andrychowicz et al. 2017, arXiv:1707.01495): the
goal-conditioned baseline of contrastive RL.

It is `rlsuite.agents.sac` unchanged, given two functions: the trajectory buffer
(`rlsuite.data.trajectory_buffer`), whose samples carry a future state of their own episode, and
`her_relabel`, which replaces the goal of a `relabel_prob` share of every batch by that future's
achieved goal and recomputes the reward with the environment's `compute_reward` from the *next*
state's achieved goal (the final observation at an episode end). SAC bootstraps through a
truncation and not through a termination, as everywhere in the off-policy loop.

    agent = sac_her.make(SACHERConfig(), env, env_params)   # a goal environment (envs/goal)

HER's "future" strategy draws the future uniformly from the rest of the episode; the trajectory
buffer draws it `k >= 1` steps ahead with `P(k) ~ her_gamma^k` within the episode, and
`her_gamma` = 0.999 is within 5% of uniform over a 50-step episode (0.999^50 = 0.95).
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import registry, sac
from rlsuite.data import trajectory_buffer
from rlsuite.environment import Environment
from rlsuite.environment.goal import check_goal_contract
from rlsuite.loop.agent import Agent, derive


@dataclasses.dataclass(frozen=True)
class SACHERConfig(sac.SACConfig):
    """Static configuration of SAC + HER (SAC's fields, and these)."""

    relabel_prob: float = 0.8
    """share of every sampled batch whose goal is replaced by a future achieved goal"""
    her_gamma: float = 0.999
    """future goals k >= 1 steps ahead with P(k) ~ her_gamma^k within the episode"""

    def __post_init__(self):
        super().__post_init__()
        name = type(self).__name__
        if not 0.0 <= self.relabel_prob <= 1.0:
            raise ValueError(f"{name}.relabel_prob must be in [0, 1], got {self.relabel_prob!r}")
        if not 0.0 < self.her_gamma < 1.0:
            raise ValueError(f"{name}.her_gamma must be in (0, 1), got {self.her_gamma!r}")
        if self.replay != "uniform":
            raise ValueError(
                f"{name}.replay={self.replay!r}: SAC + HER draws its batches from the trajectory "
                "buffer (uniformly, with future goals); allowed: uniform"
            )


def make(config: SACHERConfig, env: Environment, env_params=None) -> Agent:
    """Bind SAC + HER to a goal environment `env` (observation `concat(state, goal)`, static
    `state_dim` and `goal_indices`, `compute_reward`; a bounded 1-D Box action space)."""
    if not isinstance(config, SACHERConfig):
        raise TypeError(f"sac_her.make needs a SACHERConfig, got {type(config).__name__}")
    check_goal_contract(env, owner="sac_her")
    env_params = env.check_params(env_params)
    horizon = getattr(env, "max_episode_steps", None)
    buffer = trajectory_buffer.for_off_policy(config, config.her_gamma, horizon, config.n_step)

    def compute_reward(achieved, desired):
        return env.compute_reward(achieved, desired, env_params)

    relabel = trajectory_buffer.her_relabel(
        int(env.state_dim), tuple(env.goal_indices), compute_reward, config.relabel_prob
    )
    agent = sac.make(config, env, env_params, buffer=buffer, relabel=relabel)
    return derive(agent, name="sac_her")


# This family in the algorithm registry (`rlsuite train sac_her`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="sac_her",
        make=make,
        config_cls=SACHERConfig,
        hparams_cls=sac.SACHparams,
        offline=False,
        default_env="goal/point_reach",
    )
)
