"""PQN with memory (`PQNConfig.recurrent`): the rollout's Q-values re-run from its starting carry,
the targets' next values under the memory of their step (checked step by step), minibatches of
whole sequences, the carry through `act`, bad input, keys, and a cue only memory can use."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import pqn
from rlsuite.loop import agent as agent_lib
from rlsuite.loop import driver
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import sequence_starts
from tests.tiers import slow_but

SMALL = dict(num_envs=3, num_steps=5, num_minibatches=1, hidden_sizes=(8,), recurrent_size=8)


def _setup_and_state(config, env_name="probe/memory_cue", seed=0):
    env, params = envs.make(env_name)
    agent = pqn.make(config, env, params)
    state = agent.init(jax.random.key(seed), agent.default_hparams)
    return agent, pqn.prepare(config, env, params), state


def _step_by_step(setup, params, carry, tr):
    """Q of each step's observation and of its true next observation, one step at a time from
    `carry`, the carry replaced by a fresh one after a step that ended its episode."""
    fresh = setup.network.initial(tr.obs.shape[1])
    read = lambda q: q  # noqa: E731
    q_obs, q_next = [], []
    for t in range(tr.obs.shape[0]):
        if t > 0:
            done = np.asarray(tr.terminated[t - 1] | tr.truncated[t - 1])
            carry = jax.tree.map(lambda f, c, d=done: jnp.where(d[:, None], f, c), fresh, carry)
        q, carry = setup.network.step(params, carry, tr.obs[t], read)
        q_obs.append(q)
        q_next.append(setup.network.step(params, carry, tr.next_obs[t], read)[0])
    return jnp.stack(q_obs), jnp.stack(q_next)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_rollouts_rerun_from_their_starting_carry_and_bootstrap_under_their_memory(cell):
    # Two rollouts in a row of 4-step episodes, 5 steps each: the second starts mid-episode from
    # the first's carry. The sequence re-run from its starting carry (with `starts`) gives the
    # Q-values of a step-by-step pass, and the targets' next values are Q(s'_t) under the memory
    # after step t: where the episode goes on, the Q-values of the next step's observation.
    agent, setup, state = _setup_and_state(pqn.PQNConfig(**SMALL, recurrent=cell))
    hp = agent.default_hparams
    for key in jax.random.split(jax.random.key(3), 2):
        start = state.env.carry
        env_batch, tr, _ = pqn.collect(setup, state, key)
        starts = sequence_starts(tr)
        assert np.asarray(starts).any(axis=1).sum() == 1  # one episode began inside
        q_obs, q_next = _step_by_step(setup, state.params, start, tr)
        rerun = setup.network.apply(state.params, start, tr.obs, starts)
        np.testing.assert_allclose(rerun, q_obs, atol=1e-5)
        next_q = setup.network.values_after(state.params, tr.extras["carry"], tr.next_obs)
        np.testing.assert_allclose(next_q, q_next, atol=1e-5)
        going = ~np.asarray(tr.terminated[:-1] | tr.truncated[:-1])
        np.testing.assert_allclose(np.asarray(q_next[:-1])[going], np.asarray(q_obs[1:])[going],
                                   atol=1e-5)  # fmt: skip
        expected = pqn.q_lambda_targets(
            tr.reward * hp.reward_scale, tr.terminated, tr.truncated, q_next, hp.gamma,
            hp.q_lambda,
        )  # fmt: skip
        np.testing.assert_allclose(pqn.targets(setup, state, tr, hp), expected, atol=1e-5)
        state = state.replace(env=env_batch)
    memory = jax.tree.leaves(state.env.carry)
    assert sum(float(jnp.abs(x).sum()) for x in memory) > 0  # mid-episode: carried over


def test_the_loss_is_of_whole_sequences_from_their_carry():
    # One minibatch of all the environments: the loss is half the mean squared error of the
    # step-by-step Q-values of the actions taken against the targets.
    agent, setup, state = _setup_and_state(pqn.PQNConfig(**SMALL, recurrent="gru"))
    _, tr, _ = pqn.collect(setup, state, jax.random.key(1))
    targets = jnp.arange(15.0).reshape(5, 3) / 10
    batch = {"obs": tr.obs, "action": tr.action, "targets": targets}
    batch.update(setup.network.learning_memory(state.env.carry, sequence_starts(tr)))
    value, q_mean = pqn.loss(setup, state.params, batch)
    q_obs, _ = _step_by_step(setup, state.params, state.env.carry, tr)
    taken = np.take_along_axis(np.asarray(q_obs), np.asarray(tr.action)[..., None], -1)[..., 0]
    np.testing.assert_allclose(value, 0.5 * np.mean((taken - targets) ** 2), rtol=1e-5)
    np.testing.assert_allclose(q_mean, taken.mean(), rtol=1e-5, atol=1e-6)
    minibatches = setup.network.minibatches(jax.random.key(0), batch, 3)
    assert minibatches["obs"].shape[:3] == (3, 5, 1) and minibatches["carry"].shape == (3, 1, 8)


def test_act_takes_and_returns_the_carry_and_a_feed_forward_pqn_has_none():
    agent, setup, state = _setup_and_state(pqn.PQNConfig(**SMALL, recurrent="gru"))
    carry = agent.initial_carry(state, 3)
    assert carry.shape == (3, 8) and not carry.any()
    action, after = agent.act(state, state.env.obs, jax.random.key(0), True, carry)
    assert action.shape == (3,) and after.shape == (3, 8) and float(jnp.abs(after).sum()) > 0
    plain = pqn.make(pqn.PQNConfig(**{**SMALL, "recurrent_size": 128}), *envs.make("cartpole"))
    assert plain.initial_carry is None
    state = plain.init(jax.random.key(0), plain.default_hparams)
    assert plain.act(state, state.env.obs, jax.random.key(0), True).shape == (3,)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"recurrent": "rnn"}, "PQNConfig.recurrent='rnn' is not one of: lstm, gru"),
        ({"recurrent": "gru", "recurrent_size": 0}, "recurrent_size"),
        ({"recurrent": "gru", "num_envs": 6, "num_minibatches": 4, "num_steps": 2},
         "PQNConfig.num_minibatches=4 must divide num_envs=6"),
    ],
)  # fmt: skip
def test_bad_recurrent_config_is_refused_by_name(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        pqn.PQNConfig(**{**SMALL, **fields})


def test_same_key_same_run_other_key_another():
    agent, _, _ = _setup_and_state(pqn.PQNConfig(**SMALL, recurrent="gru"))
    update = jax.jit(agent.update)

    def run(seed):
        state = agent.init(jax.random.key(seed), agent.default_hparams)
        for _ in range(2):
            state, _ = update(state, agent.default_hparams)
        return jax.tree.leaves(state.params)

    first, again, other = run(0), run(0), run(1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


@pytest.mark.parametrize("recurrent", slow_but(("gru", None), ["gru", "lstm", None]))
def test_memory_cue_needs_memory(recurrent):
    # The cue (+-1) is seen at the first step only and rewarded at the fourth: best return 1.
    # Without memory the last step looks the same whatever the cue: expected greedy return 0.
    env, params = envs.make("probe/memory_cue")
    sizes = dict(num_envs=16, num_steps=16, num_minibatches=4, hidden_sizes=(32,))
    config = pqn.PQNConfig(**sizes, recurrent=recurrent, recurrent_size=32, total_timesteps=40_960)
    agent = pqn.make(config, env, params)
    hp = pqn.PQNHparams(learning_rate=3e-3, reward_scale=1.0, end_e=0.05)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, _ = train(agent, jax.random.key(0), hp, config.num_updates)
    policy = agent_lib.policy(agent, state, True)
    result = evaluate(agent.env, agent.env_params, policy, jax.random.key(1), 1000, max_steps=4)
    mean = float(result.returns.mean())
    if recurrent is None:
        assert abs(mean) <= 0.15, mean  # chance: 1000 +-1 returns, standard error 0.03
    else:
        assert mean >= 0.95, mean
