"""C51 (Bellemare, Dabney and Munos 2017, arXiv:1707.06887): DQN whose network predicts, for
each action, a categorical distribution of the return over `num_atoms` fixed atoms from `v_min`
to `v_max`, learned by the cross-entropy to the Bellman target projected back onto the atoms.

    agent = c51.make(C51Config(), env, env_params)     # `rlsuite train c51`

DQN's learner with the categorical value head (`rlsuite.agents.value_heads.categorical`): the
same loop, replay (n-step items), epsilon-greedy acting on the expected values, double-Q choice of
the bootstrap action, dueling streams per atom, target updates and hyperparameters
(`dqn.DQNHparams`). The defaults are CleanRL's `c51_jax.py` CartPole settings: 101 atoms on
[-100, 100] and DQN's CleanRL values otherwise, with two differences: CleanRL's Adam epsilon is
0.01 / batch size (ours optax's 1e-8), and CleanRL bootstraps from the target network's own best
action where ours chooses it with the online network (double-Q, DQN's default; `--no-double` is
CleanRL's). The math is `rlsuite.ops.distributional`'s.
"""

from __future__ import annotations

import dataclasses

from rlsuite.agents import dqn, registry, value_heads
from rlsuite.ops.validators import check_positive_ints


@dataclasses.dataclass(frozen=True)
class C51Config(dqn.DQNConfig):
    """Static configuration of C51: DQN's, and the atoms of each action's distribution."""

    num_atoms: int = 101
    """atoms of each action's return distribution (>= 2)"""
    v_min: float = -100.0
    """the lowest atom: returns below it count as it"""
    v_max: float = 100.0
    """the highest atom: returns above it count as it"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_atoms",))
        if self.num_atoms < 2 or not self.v_min < self.v_max:
            raise ValueError(
                f"C51Config: num_atoms={self.num_atoms} must be >= 2 and v_min={self.v_min} "
                f"< v_max={self.v_max}"
            )
        dqn.refuse_scalar_loss(self, "the cross-entropy to its projected target")


def head(config: C51Config) -> value_heads.ValueHead:
    """C51's value head for `config`."""
    return value_heads.categorical(config.num_atoms, config.v_min, config.v_max)


make = dqn.make_with_head(C51Config, head)

# This family in the algorithm registry (`rlsuite train c51`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="c51",
        make=make,
        config_cls=C51Config,
        hparams_cls=dqn.DQNHparams,
        offline=False,
        default_env="cartpole",
    )
)
