"""RL^2 (Duan et al. 2016, arXiv:1611.02779): a recurrent policy trained by an on-policy learner on
*trials*, several episodes of one task, so that its memory learns to adapt within a trial.

RL^2 is not another learner: it is the recurrent PPO of `rlsuite.agents.ppo` on an environment
wrapped by `rlsuite.environment.meta.RL2` (a task family, `rlsuite train rl2 --env meta/bandit`).
The wrapper feeds the previous action, reward and done flag with each observation, keeps the
task and the memory across the episodes of a trial, and ends the learner's episode at the trial
end only, so advantages run across episode boundaries. The policy's carry is reset where the
wrapper reports a trial end (`rlsuite.loop.rollout.TRIAL_END`).

A2C (Mnih et al. 2016), the learner of the paper's bandit experiments and of gymnax's meta-A2C
notebook, is PPO with one epoch of one minibatch: the first gradient step is taken at the
rollout's own parameters, where the probability ratio is 1 and the clipped surrogate's gradient
is the policy gradient `-A grad log pi`. The tuned entries use it (`rlsuite.app.tuned`).

    agent = rl2.make(RL2Config(num_envs=256, num_steps=10), *envs.make("meta/bandit"))
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import ppo, registry
from rlsuite.environment import Environment
from rlsuite.environment.meta import trial_wrapper
from rlsuite.loop.agent import Agent, derive


@dataclasses.dataclass(frozen=True)
class RL2Config(ppo.PPOConfig):
    """`PPOConfig` with RL^2's defaults: an LSTM of 64 units and A2C updates (one epoch, one
    minibatch), no learning-rate annealing. `recurrent` must name a core (lstm or gru)."""

    recurrent: str | None = "lstm"
    """the recurrent core: lstm or gru (RL^2 needs memory: None is refused)"""
    recurrent_size: int = 64
    """units of the recurrent core"""
    num_envs: int = 256
    """parallel trials"""
    num_steps: int = 10
    """steps per rollout (truncated backpropagation through time of this length)"""
    num_minibatches: int = 1
    """minibatches per epoch (1: A2C)"""
    update_epochs: int = 1
    """passes over each rollout (1: A2C)"""
    anneal_lr: bool = False
    """anneal the learning rate linearly to 0 over total_timesteps"""

    def __post_init__(self):
        if self.recurrent is None:
            raise ValueError(
                "RL2Config.recurrent=None: RL^2 needs a recurrent policy; allowed: lstm, gru"
            )
        super().__post_init__()


def make(config: ppo.PPOConfig, env: Environment, env_params=None, **variants) -> Agent:
    """Recurrent PPO on the task family `env` (wrapped in `RL2`); `variants` are `ppo.make`'s
    (`policy_loss`, `minibatches`, `network`). A feed-forward config or an environment without
    trials is a `ValueError` naming it; an action space the policy cannot take, PPO's error."""
    if not isinstance(config, ppo.PPOConfig):
        raise TypeError(f"rl2.make needs an RL2Config (or a PPOConfig), got {type(config)}")
    if config.recurrent is None:
        raise ValueError(
            f"{type(config).__name__}.recurrent=None: RL^2 needs a recurrent policy; allowed: "
            "lstm, gru"
        )
    if trial_wrapper(env) is None:
        raise ValueError(
            f"rl2 trains on a task family whose episodes are trials (an environment wrapped in "
            f"rlsuite.environment.meta.RL2, e.g. meta/bandit); {env.name} is not"
        )
    return derive(ppo.make(config, env, env_params, **variants), name="rl2")


# This family in the algorithm registry (`rlsuite train rl2`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="rl2",
        make=make,
        config_cls=RL2Config,
        hparams_cls=ppo.PPOHparams,
        offline=False,
        default_env="meta/bandit",
        memory=True,
    )
)
