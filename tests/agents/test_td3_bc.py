"""TD3+BC (`rlsuite.agents.td3_bc`): the critics learn the scaled reward of the probe, and an
update holds whole cycles of the policy delay."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import td3_bc
from rlsuite.networks import QEnsemble
from tests.agents.offline_probe import PROBE, train_jit


def test_td3_bc_critics_learn_the_scaled_reward(uniform_data):
    # TD3's hparams.reward_scale reaches TD3+BC (and CQL, through SAC's): one-step episodes,
    # so Q(0, a) = 2 r(a) = -2 (a - 0.5)^2 with reward_scale = 2.
    env, params = envs.make(PROBE, continuous=True)
    config = td3_bc.TD3BCConfig(num_updates=30, gradient_steps=100, hidden_sizes=(32, 32))
    agent = td3_bc.make(config, env, params)
    hp = td3_bc.TD3BCHparams(actor_lr=1e-3, critic_lr=1e-3, reward_scale=2.0)
    state, _ = train_jit(agent, jax.random.key(0), hp, 30, data=uniform_data)
    actions = jnp.array([[-1.0], [0.0], [0.5], [1.0]])
    critic = QEnsemble(config.hidden_sizes, 2, config.activation)
    q = critic.apply(state.learner.critic, jnp.zeros((4, 1)), actions)
    np.testing.assert_allclose(q, [[-4.5, -0.5, 0.0, -0.5]] * 2, atol=0.1)


def test_td3_bc_updates_hold_whole_policy_delay_cycles():
    env, params = envs.make("pendulum")
    with pytest.raises(ValueError, match=r"TD3BCConfig.gradient_steps=3 must be a multiple"):
        td3_bc.make(td3_bc.TD3BCConfig(gradient_steps=3), env, params)
    agent = td3_bc.make(td3_bc.TD3BCConfig(gradient_steps=6, policy_delay=3), env, params)
    assert agent.env_steps_per_update == 6
