"""DPO, Discovered Policy Optimisation (Lu, Kuba, Letcher, Metz, Schroeder de Witt and Foerster
2022, arXiv:2210.05639): PPO whose policy objective is DPO's drift instead of the clip.

Mirror learning writes a policy update as maximising `E[r A - drift(r, A)]`, `r = pi / pi_old`,
with a drift that is 0, with its gradient, at `r = 1`; PPO's clipped surrogate is the drift
`ReLU((r - clip(r)) A)`. Lu et al. meta-learned a drift network by evolution over many PPO runs
(LPO) and read a closed form off it, DPO's drift:

    drift(r, A) = ReLU((r - 1) A - alpha tanh((r - 1) A / alpha))   where A >= 0
                  ReLU(log(r) A - beta tanh(log(r) A / beta))        where A < 0

with `alpha` 2 and `beta` 0.6 (`config.drift_alpha`, `config.drift_beta`). It lets the ratio
move freely while the advantage-weighted step is small and pulls it back beyond, more gently than
the clip where the advantage is positive and more firmly where it is negative.

DPO is not another learner: it is `rlsuite.agents.ppo` with the policy loss
`losses.drift_policy_loss(losses.dpo_drift(alpha, beta))` passed in. Everything else (rollouts,
GAE, epochs of minibatches, advantage normalisation per minibatch, the value loss, memory,
action masks) is PPO's; `hparams.clip_eps` clips nothing here, and the metric
`losses/clip_fraction` says how many ratios PPO's clip would have cut. `losses/drift` is the mean
drift of the minibatches.

    agent = dpo.make(DPOConfig(num_envs=8), *envs.make("cartpole"))
    rlsuite train dpo --env pendulum

The drift is a function passed in: `make(config, env, policy_loss=losses.drift_policy_loss(d))`
trains with a drift `d(ratio, log_ratio, advantages, clip_eps)` of your own.
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import ppo, registry
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent, derive
from rlsuite.ops import losses
from rlsuite.ops.validators import check_positive


@dataclasses.dataclass(frozen=True)
class DPOConfig(ppo.PPOConfig):
    """`PPOConfig` and DPO's drift."""

    drift_alpha: float = 2.0
    """the drift's scale where the advantage is >= 0 (the paper's 2)"""
    drift_beta: float = 0.6
    """the drift's scale where the advantage is < 0 (the paper's 0.6)"""

    def __post_init__(self):
        check_positive(self, "drift_alpha", "drift_beta", owner="DPOConfig", kind="config")
        super().__post_init__()


def make(config: DPOConfig, env: Environment, env_params=None, **variants) -> Agent:
    """DPO on `env`: PPO with DPO's drift as its policy objective; `variants` are `ppo.make`'s
    others (`minibatches`, `network`, `learn_with`, or another `policy_loss`)."""
    if not isinstance(config, DPOConfig):
        raise TypeError(f"dpo.make needs a DPOConfig, got {type(config).__name__}")
    drift = losses.dpo_drift(config.drift_alpha, config.drift_beta)
    variants.setdefault("policy_loss", losses.drift_policy_loss(drift))
    return derive(ppo.make(config, env, env_params, **variants), name="dpo")


# This family in the algorithm registry (`rlsuite train dpo`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="dpo",
        make=make,
        config_cls=DPOConfig,
        hparams_cls=ppo.PPOHparams,
        offline=False,
        default_env="cartpole",
        memory=True,
    )
)
