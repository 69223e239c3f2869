"""QR-DQN (Dabney et al. 2017, arXiv:1710.10044): DQN whose network predicts, for each action,
`num_quantiles` quantiles of the return at the fixed fractions `(2i + 1) / 2N`, learned by the
quantile Huber loss against the target network's quantiles at the next state.

    agent = qrdqn.make(QRDQNConfig(), env, env_params)     # `rlsuite train qrdqn`

DQN's learner with the quantile value head (`rlsuite.agents.value_heads.quantile`): the same
loop, replay, acting on the mean of the quantiles, double-Q choice of the bootstrap action,
dueling streams per quantile, target updates and hyperparameters (`dqn.DQNHparams`) at DQN's
CartPole defaults; 51 quantiles (the paper's Atari agent has 200) and `kappa` 1 (its choice).
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import dqn, registry, value_heads
from rlsuite.ops.validators import check_positive_ints


@dataclasses.dataclass(frozen=True)
class QRDQNConfig(dqn.DQNConfig):
    """Static configuration of QR-DQN: DQN's, the quantiles and the Huber threshold."""

    num_quantiles: int = 51
    """quantiles of each action's return distribution"""
    kappa: float = 1.0
    """the quantile Huber loss's threshold (0: the plain quantile loss)"""
    init: str = "orthogonal"
    """how the network's dense kernels start (`dqn.DQNConfig.init`); orthogonal here, where
    DQN's CleanRL lecun_normal let the quantiles diverge on CartPole (the module docstring)"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_quantiles",))
        if not self.kappa >= 0:
            raise ValueError(f"QRDQNConfig.kappa must be >= 0, got {self.kappa}")
        dqn.refuse_scalar_loss(self, "the quantile Huber loss (kappa)")


def head(config: QRDQNConfig) -> value_heads.ValueHead:
    """QR-DQN's value head for `config`."""
    return value_heads.quantile(config.num_quantiles, config.kappa)


make = dqn.make_with_head(QRDQNConfig, head)

# This family in the algorithm registry (`rlsuite train qrdqn`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="qrdqn",
        make=make,
        config_cls=QRDQNConfig,
        hparams_cls=dqn.DQNHparams,
        offline=False,
        default_env="cartpole",
    )
)
