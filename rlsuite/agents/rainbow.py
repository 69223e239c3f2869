"""Rainbow (Hessel et al. 2018, arXiv:1710.02298) as a configuration of the parts, not a loop of
its own: C51's categorical head (`rlsuite.agents.value_heads.categorical`) on DQN's learner with
double-Q bootstrap actions, dueling streams per atom, 3-step returns, proportional prioritized
replay (`rlsuite.data.prioritized`) and noisy networks (`rlsuite.networks.noisy`).

    agent = rainbow.make(RainbowConfig(), env, env_params)     # `rlsuite train rainbow`

Dopamine's values where they apply: 51 atoms, n = 3, priority exponent 0.5, importance exponent
0.4 (annealed to 1 here, as in the paper), noisy layers with sigma0 0.5, and exploration by the
noise alone (epsilon 0, Dopamine's full Rainbow with noisy networks). The support is C51's
CartPole one, [-100, 100] (Dopamine's Atari support is [-10, 10] on clipped rewards), and the
rest DQN's CleanRL CartPole values. Every part stays a flag: `--no-noisy --replay uniform` is C51
with dueling and 3-step returns.
"""

from __future__ import annotations

import dataclasses

from flax import struct

from rlsuite.agents import c51, dqn, registry, value_heads


@dataclasses.dataclass(frozen=True)
class RainbowConfig(c51.C51Config):
    """Static configuration of Rainbow: C51's, with the parts Rainbow combines on."""

    num_atoms: int = 51
    """atoms of each action's return distribution (>= 2)"""
    dueling: bool = True
    """dueling streams, aggregated atom by atom"""
    n_step: int = 3
    """steps of each replay item's return"""
    replay: str = "prioritized"
    """how batches are drawn: prioritized (by each item's last loss) or uniform"""
    priority_exponent: float = 0.5
    """prioritized replay's alpha (Dopamine's Rainbow: 0.5)"""
    noisy: bool = True
    """noisy networks: exploration by their noise (epsilon 0 by default)"""


@struct.dataclass
class RainbowHparams(dqn.DQNHparams):
    """DQN's hyperparameters, with no epsilon-greedy exploration: the noisy layers explore."""

    start_e: float = 0.0
    """exploration epsilon at the first environment step (0: the noise explores)"""
    end_e: float = 0.0
    """exploration epsilon from exploration_fraction of the run on"""


def head(config: RainbowConfig) -> value_heads.ValueHead:
    """Rainbow's value head: C51's, under Rainbow's name."""
    return value_heads.categorical(config.num_atoms, config.v_min, config.v_max, name="rainbow")


make = dqn.make_with_head(RainbowConfig, head, RainbowHparams)

# This family in the algorithm registry (`rlsuite train rainbow`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="rainbow",
        make=make,
        config_cls=RainbowConfig,
        hparams_cls=RainbowHparams,
        offline=False,
        default_env="cartpole",
    )
)
