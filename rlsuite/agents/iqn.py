"""IQN (Dabney, Ostrovski, Silver and Munos 2018, arXiv:1806.06923): DQN whose network maps a
state and a fraction `tau` to that quantile of each action's return, through a cosine embedding
of `tau`; learned by the quantile Huber loss at fractions drawn uniformly, `num_taus` per item
for the prediction and `num_target_taus` for the target.

    agent = iqn.make(IQNConfig(), env, env_params)     # `rlsuite train iqn`

DQN's learner with the implicit quantile head (`rlsuite.agents.value_heads.implicit`): the same
loop, replay, acting on the mean of `num_policy_taus` quantiles at fixed midpoints, double-Q
choice of the bootstrap action, target updates and hyperparameters (`dqn.DQNHparams`) at DQN's
CartPole defaults. The sizes are Dopamine's (N = N' = 64, K = 32, an embedding of 64) and
`kappa` 1. IQN has no dueling form here (`make` refuses `dueling`).
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import dqn, registry, value_heads
from rlsuite.ops.validators import check_positive_ints


@dataclasses.dataclass(frozen=True)
class IQNConfig(dqn.DQNConfig):
    """Static configuration of IQN: DQN's, the fractions sampled and their embedding."""

    num_taus: int = 64
    """fractions drawn per item for the predicted quantiles (N)"""
    num_target_taus: int = 64
    """fractions drawn per item for the target's quantiles (N')"""
    num_policy_taus: int = 32
    """fixed midpoint fractions whose quantiles' mean is an action's value when acting (K)"""
    embedding_size: int = 64
    """cosine features of each fraction"""
    kappa: float = 1.0
    """the quantile Huber loss's threshold (0: the plain quantile loss)"""
    init: str = "orthogonal"
    """how the network's dense kernels start (`dqn.DQNConfig.init`); orthogonal here, where
    DQN's CleanRL lecun_normal let the quantiles diverge on CartPole (the module docstring)"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(
            self, ("num_taus", "num_target_taus", "num_policy_taus", "embedding_size")
        )
        if not self.kappa >= 0:
            raise ValueError(f"IQNConfig.kappa must be >= 0, got {self.kappa}")
        dqn.refuse_scalar_loss(self, "the quantile Huber loss (kappa)")


def head(config: IQNConfig) -> value_heads.ValueHead:
    """IQN's value head for `config`."""
    sizes = value_heads.ImplicitSizes(
        config.num_taus, config.num_target_taus, config.num_policy_taus, config.embedding_size
    )
    return value_heads.implicit(sizes, config.kappa)


make = dqn.make_with_head(IQNConfig, head)

# This family in the algorithm registry (`rlsuite train iqn`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="iqn",
        make=make,
        config_cls=IQNConfig,
        hparams_cls=dqn.DQNHparams,
        offline=False,
        default_env="cartpole",
    )
)
