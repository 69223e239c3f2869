"""TD3+BC (Fujimoto & Gu 2021, arXiv:2106.06860): TD3 whose actor also regresses onto the
dataset's actions, `-lambda Q(s, pi(s)) + (pi(s) - a)^2` with `lambda = alpha / E|Q|`.

    agent = td3_bc.make(TD3BCConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

The critics, target smoothing and delayed updates are TD3's own (`rlsuite.agents.td3.learner`);
only the actor's objective differs. Observations are standardised with the dataset's mean and
standard deviation by default, as in the paper.
"""

from __future__ import annotations

import dataclasses

from flax import struct

from rlsuite.agents import registry, td3
from rlsuite.agents.learner import action_dim
from rlsuite.agents.off_policy_parts import hp_gamma, hp_reward_scale
from rlsuite.agents.offline import OfflineConfig, Rewards, make_agent
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive_ints


@dataclasses.dataclass(frozen=True)
class TD3BCConfig(OfflineConfig):
    """Static configuration of TD3+BC (the shared offline fields, and these)."""

    normalize_observations: bool = True
    """standardise observations with the dataset's mean and standard deviation"""
    policy_delay: int = 2
    """critic steps per actor and target update"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("policy_delay",))


@struct.dataclass
class TD3BCHparams(td3.TD3Hparams):
    """TD3's hyperparameters (the exploration noise is unused offline), and the BC weight."""

    alpha: float = 2.5
    """weight of the Q term relative to the behaviour-cloning term (lambda = alpha / E|Q|)"""


def check_hparams(hp: TD3BCHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, TD3BCHparams):
        raise TypeError(f"td3_bc: hparams must be a TD3BCHparams, got {type(hp).__name__}")
    td3.check_hparams(hp)
    check_field(hp, "alpha", lambda v: v >= 0, "a value >= 0", "td3_bc", "hparams")


def actor_objective(q, action, batch, hp: TD3BCHparams):
    """TD3+BC's actor loss on the batch's dataset actions."""
    return losses.td3_bc_actor_loss(q, action, batch["action"], hp.alpha)


def make(config: TD3BCConfig, env: Environment, env_params=None) -> Agent:
    """Bind TD3+BC to `env` (a bounded 1-D Box action space; used for evaluation)."""
    if not isinstance(config, TD3BCConfig):
        raise TypeError(f"td3_bc.make needs a TD3BCConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "td3_bc")
    obs_shape = env.observation_space(env_params).shape
    learner = td3.learner(config, obs_shape, dim, config.policy_delay, actor_loss=actor_objective)
    rewards = Rewards(gamma=hp_gamma, reward_scale=hp_reward_scale)
    return make_agent(
        "td3_bc", config, env, env_params, learner, TD3BCHparams(), check_hparams, rewards
    )


# This family in the algorithm registry (`rlsuite train td3_bc`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="td3_bc",
        make=make,
        config_cls=TD3BCConfig,
        hparams_cls=TD3BCHparams,
        offline=True,
        default_env="pendulum",
    )
)
