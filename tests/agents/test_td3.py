"""TD3 (`rlsuite.agents.td3`): its policy delay as a static cycle of gradient steps (an update
holds whole cycles; the actor and the targets move once per cycle, the critics every step, the
targets by a Polyak step of tau) and TD3's target by hand. The shared loop's tests (replay,
probes, learning, seeds, bad input) run TD3 beside SAC in `tests/agents/test_off_policy.py`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import td3
from rlsuite.ops import losses
from tests.trees import leaves_equal


@pytest.mark.parametrize(
    "gradient_steps, policy_delay, collections",
    [(1, 2, 2), (2, 2, 1), (3, 2, 2), (4, 3, 3), (4, 1, 1)],
)
def test_td3_updates_hold_whole_delay_cycles(gradient_steps, policy_delay, collections):
    config = td3.TD3Config(
        num_envs=3,
        gradient_steps=gradient_steps,
        policy_delay=policy_delay,
        total_timesteps=3_000,
    )
    assert config.collections_per_update == collections
    assert config.num_updates == 3_000 // (3 * collections)
    agent = td3.make(config, *envs.make("pendulum"))
    assert agent.env_steps_per_update == 3 * collections


def agent_learner(config):
    """TD3's learner for Pendulum's shapes (3 observations, 1 action), as `td3.make` builds it."""
    return td3.learner(config, (3,), 1, config.policy_delay)


def test_td3_actor_and_targets_move_once_per_cycle_critic_every_step():
    env, params = envs.make("pendulum")
    config = td3.TD3Config(
        num_envs=2, buffer_size=64, batch_size=4, learning_starts=0, hidden_sizes=(8,)
    )
    agent = td3.make(config, env, params)
    hp = td3.TD3Hparams()
    state = agent.init(jax.random.key(0), hp)
    new, metrics = jax.jit(agent.update)(state, hp)
    # One update: both envs step twice (4 items), then a critic step, then a critic step with
    # the actor and target updates.
    assert int(new.buffer.size) == 4 and int(new.learner.step) == 2
    for field in ("actor", "critic", "target_actor", "target_critic"):
        assert not leaves_equal(getattr(state.learner, field), getattr(new.learner, field)), field
    assert np.isfinite(float(metrics["losses/actor_loss"]))
    # The learner itself: phase 0 moves only the critic, the last phase the rest too.
    batch = jax.tree.map(lambda x: x[:4], new.buffer.data)
    before = new.learner
    learn = jax.jit(agent_learner(config).learn, static_argnames="phase")
    after, m = learn(before, batch, jax.random.key(1), hp, phase=0)
    assert leaves_equal(before.actor, after.actor) and np.isnan(float(m["actor_loss"]))
    assert leaves_equal(before.target_critic, after.target_critic)
    assert leaves_equal(before.target_actor, after.target_actor)
    assert not leaves_equal(before.critic, after.critic)
    last, m = learn(after, batch, jax.random.key(2), hp, phase=1)
    assert np.isfinite(float(m["actor_loss"]))
    for field in ("actor", "critic", "target_actor", "target_critic"):
        assert not leaves_equal(getattr(after, field), getattr(last, field)), field
    # Targets take a Polyak step of tau toward the just-updated critic.
    expected = jax.tree.map(
        lambda c, t: hp.tau * c + (1 - hp.tau) * t, last.critic, after.target_critic
    )
    for x, y in zip(jax.tree.leaves(expected), jax.tree.leaves(last.target_critic), strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-7)


def test_the_target_takes_the_smaller_critic_at_the_smoothed_action_by_hand():
    # Target policy smoothing: the target action plus clipped noise, clipped to the bounds.
    smoothed = losses.smoothed_target_action(
        jnp.array([0.9, -0.2]), jnp.array([0.5, -0.8]), noise_clip=0.5
    )
    np.testing.assert_allclose(smoothed, [1.0, -0.7], rtol=1e-6)  # 1.4 clipped; -0.2 - 0.5
    # The clipped double-Q target: r + discount * min_k Q_k.
    y = losses.td_target(
        jnp.array([1.0, 2.0]), jnp.array([0.5, 0.0]), jnp.array([[4.0, 3.0], [2.0, 9.0]])
    )
    np.testing.assert_allclose(y, [2.0, 2.0], rtol=1e-6)  # 1 + 0.5 * min(4, 2); 2 + 0
