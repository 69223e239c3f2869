"""Exploration (`rlsuite.ops.exploration`): the linear epsilon schedule exact at its ends and
under vmap, epsilon-greedy among the legal actions, and the schedule's fields as float32."""

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.agents import dqn
from rlsuite.ops import exploration


def test_epsilon_schedule_is_exact_at_its_ends():
    hp = dqn.DQNHparams(start_e=1.0, end_e=0.05, exploration_fraction=0.5)
    total = 1000  # epsilon falls over the first 500 env steps
    values = [
        float(exploration.linear_epsilon(t, hp, total)) for t in (0, 250, 499, 500, 501, 10_000)
    ]
    assert values[0] == 1.0 and values[3:] == [np.float32(0.05)] * 3
    np.testing.assert_allclose(values[1], 1.0 - 0.5 * 0.95, rtol=1e-6)  # halfway
    assert values[2] > values[3]
    fixed = dqn.DQNHparams(start_e=1.0, end_e=0.1, exploration_fraction=0.0)
    assert float(exploration.linear_epsilon(0, fixed, total)) == np.float32(
        0.1
    )  # no decay: end_e throughout
    assert float(exploration.linear_epsilon(None, hp, total)) == np.float32(
        0.05
    )  # no env loop: end_e
    # Traced steps and hparams (a vmapped batch of schedules) give the same values.
    batch = jax.vmap(exploration.linear_epsilon, (0, None, None))(
        jnp.array([0, 250, 500]), hp, total
    )
    np.testing.assert_allclose(batch, [values[0], values[1], values[3]], rtol=1e-6)


def test_epsilon_greedy_chooses_among_the_legal_actions_and_is_unchanged_without_a_mask():
    q = jnp.tile(jnp.array([9.0, 1.0, 2.0, 0.0]), (4000, 1))
    mask = jnp.tile(jnp.array([False, True, True, False]), (4000, 1))
    key = jax.random.key(3)
    greedy = exploration.epsilon_greedy(q, key, 0.0, mask)
    assert np.all(np.asarray(greedy) == 2)
    explore = np.asarray(exploration.epsilon_greedy(q, key, 1.0, mask))
    assert set(np.unique(explore)) == {1, 2}
    # Without a mask the draws are what they were before masks existed.
    key_coin, key_action = jax.random.split(key)
    random = jax.random.randint(key_action, (4000,), 0, 4)
    coin = jax.random.uniform(key_coin, (4000,)) < 0.5
    expected = jnp.where(coin, random, 0)
    np.testing.assert_array_equal(exploration.epsilon_greedy(q, key, 0.5), expected)


def test_the_schedule_fields_are_float32_scalars_in_order():
    hp = dqn.DQNHparams(start_e=1.0, end_e=0.05, exploration_fraction=0.5)
    schedule = exploration.schedule_of(hp)
    assert tuple(schedule) == exploration.SCHEDULE == ("start_e", "end_e", "exploration_fraction")
    assert [float(v) for v in schedule.values()] == [1.0, np.float32(0.05), 0.5]
    assert all(v.dtype == jnp.float32 and v.shape == () for v in schedule.values())
