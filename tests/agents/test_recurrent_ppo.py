"""Recurrent PPO (`PPOConfig(recurrent="lstm" | "gru")`): the carry threaded through rollouts and
re-run in learning, minibatches of whole sequences, memory that a feed-forward policy lacks, and
A2C as PPO with one epoch of one minibatch."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.loop import agent as agent_lib
from rlsuite.loop import driver
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import sequence_starts
from rlsuite.networks import memory
from rlsuite.ops import losses
from tests.tiers import slow_but

MEMORY = dict(num_envs=16, num_steps=16, num_minibatches=4, update_epochs=4, hidden_sizes=(32,))
MEMORY_HP = ppo.PPOHparams(learning_rate=3e-3)
MEMORY_UPDATES = 150


def _memory_agent(recurrent):
    env, params = envs.make("probe/memory_cue")
    budget = MEMORY_UPDATES * 16 * 16
    config = ppo.PPOConfig(**MEMORY, total_timesteps=budget, recurrent=recurrent, recurrent_size=32)
    return ppo.make(config, env, params)


@pytest.mark.parametrize("recurrent", slow_but(("lstm", None), ["lstm", "gru", None]))
def test_memory_cue_needs_memory(recurrent):
    # The cue (+-1) is seen at the first step only and rewarded at the fourth: best return 1.
    # A feed-forward policy sees 0 at the last step whatever the cue: expected return 0.
    agent = _memory_agent(recurrent)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, _ = train(agent, jax.random.key(0), MEMORY_HP, MEMORY_UPDATES)
    policy = agent_lib.policy(agent, state, True)
    result = evaluate(agent.env, agent.env_params, policy, jax.random.key(1), 1000, max_steps=4)
    mean = float(result.returns.mean())
    if recurrent is None:
        assert abs(mean) <= 0.15, mean  # chance: 1000 +-1 returns, standard error 0.03
    else:
        assert mean >= 0.95, mean


def _rollout_and_batch(agent_config, env_name="probe/memory_cue", seed=0):
    env, params = envs.make(env_name)
    agent = ppo.make(agent_config, env, params)
    setup = ppo.prepare(agent_config, env, params)
    state = agent.init(jax.random.key(seed), agent.default_hparams)
    return setup, state


def test_learning_reruns_the_rollout_from_its_starting_carry():
    # Two rollouts in a row (the second starts from the first's carry, mid-episode: 4-step
    # episodes, 5-step rollouts). Re-running each from its stored starting carry, with the carry
    # reset where an episode began, gives the log-probabilities and values of the rollout: the
    # first ratio of an update is 1 (up to float rounding).
    config = ppo.PPOConfig(num_envs=3, num_steps=5, num_minibatches=1, recurrent="gru",
                           recurrent_size=8, hidden_sizes=(8,))  # fmt: skip
    setup, state = _rollout_and_batch(config)
    for key in jax.random.split(jax.random.key(3), 2):
        start = state.env.carry
        env_batch, tr = ppo.collect(setup, state, key)
        starts = sequence_starts(tr)
        # Episodes of 4 steps begin at steps 4, 8, ... of the run: here step 4 of the first
        # rollout (index 4) and step 8 (index 3) of the second.
        assert np.asarray(starts).any(axis=1).tolist() in (
            [False, False, False, False, True],
            [False, False, False, True, False],
        )
        dist, value = ppo.apply(setup, state.params, state.obs_stats, tr.obs, start, starts)
        np.testing.assert_allclose(dist.log_prob(tr.action), tr.extras["log_prob"], atol=1e-5)
        np.testing.assert_allclose(value, tr.extras["value"], atol=1e-5)
        state = state.replace(env=env_batch)
    assert float(jnp.abs(state.env.carry).sum()) > 0  # step 9 is mid-episode: carried over


def test_next_values_use_the_memory_of_their_step():
    # V(next_obs_t) under the carry after step t, checked against a step-by-step loop: where the
    # episode did not end, next_obs_t is obs_{t+1} and the value is the rollout's value at t+1.
    config = ppo.PPOConfig(num_envs=2, num_steps=7, num_minibatches=1, recurrent="lstm",
                           recurrent_size=8, hidden_sizes=(8,))  # fmt: skip
    setup, state = _rollout_and_batch(config)
    _, tr = ppo.collect(setup, state, jax.random.key(5))
    next_values = setup.network.values_after(state.params, tr.extras["carry"], tr.next_obs)
    carry = state.env.carry
    fresh = setup.network.initial(2)
    read_value = lambda dist, value: value  # noqa: E731
    for t in range(7):
        if t > 0:
            done = np.asarray(tr.terminated[t - 1] | tr.truncated[t - 1])
            carry = jax.tree.map(lambda f, c, d=done: jnp.where(d[:, None], f, c), fresh, carry)
        _, carry = ppo.step(setup, state.params, state.obs_stats, tr.obs[t], carry, read_value)
        value, _ = ppo.step(setup, state.params, state.obs_stats, tr.next_obs[t], carry, read_value)
        np.testing.assert_allclose(next_values[t], value, atol=1e-5)
        if t < 6:
            going = ~np.asarray(tr.terminated[t] | tr.truncated[t])
            np.testing.assert_allclose(
                np.asarray(next_values[t])[going], np.asarray(tr.extras["value"][t + 1])[going],
                atol=1e-5,
            )  # fmt: skip


def test_minibatches_split_environments_never_time():
    # 4 environments, 3 steps, 2 minibatches: each minibatch holds 2 whole sequences, the
    # carry of each environment going with its sequence.
    obs = jnp.arange(12.0).reshape(3, 4)  # obs[t, e] = 4 t + e
    batch = {"obs": obs, "carry": jnp.arange(4.0)[:, None] * jnp.ones((4, 2))}
    out = memory.env_sequences(jax.random.key(0), batch, 2)
    assert out["obs"].shape == (2, 3, 2) and out["carry"].shape == (2, 2, 2)
    envs_seen = []
    for m in range(2):
        for j in range(2):
            column = np.asarray(out["obs"][m, :, j])
            e = int(column[0])
            np.testing.assert_array_equal(column, [e, e + 4, e + 8])  # one env, all steps
            np.testing.assert_array_equal(out["carry"][m, j], [e, e])  # with its own carry
            envs_seen.append(e)
    assert sorted(envs_seen) == [0, 1, 2, 3]


def test_a2c_is_ppo_with_one_epoch_of_one_minibatch():
    # At the rollout's own parameters the ratio is 1, nothing is clipped, and the surrogate's
    # gradient is the policy gradient: grad of -mean(A log pi).
    config = ppo.PPOConfig(num_envs=4, num_steps=5, num_minibatches=1, update_epochs=1,
                           recurrent="lstm", recurrent_size=8, hidden_sizes=(8,),
                           normalize_advantages=False)  # fmt: skip
    setup, state = _rollout_and_batch(config)
    hp = ppo.PPOHparams(vf_coef=0.0, ent_coef=0.0)
    _, tr = ppo.collect(setup, state, jax.random.key(2))
    rewards, _, _ = ppo.scale_rewards(setup, state, tr, hp)
    adv = ppo.advantages(setup, state, tr, rewards, hp)
    batch = ppo.learning_batch(setup, tr, adv, state.env.carry)
    loss = functools.partial(ppo.loss, setup)
    grads, metrics = jax.grad(loss, has_aux=True)(state.params, state.obs_stats, batch, None, hp)
    assert float(metrics["clip_fraction"]) == 0.0

    def a2c(params):
        memory = batch["carry"], batch["starts"]
        dist, _ = ppo.apply(setup, params, state.obs_stats, batch["obs"], *memory)
        return -jnp.mean(adv * dist.log_prob(batch["action"]))

    expected = jax.grad(a2c)(state.params)
    for g, e in zip(jax.tree.leaves(grads), jax.tree.leaves(expected), strict=True):
        np.testing.assert_allclose(g, e, atol=1e-6)
    assert losses.ppo_policy_loss is setup.policy_loss


@pytest.mark.slow
def test_vmapped_seeds_and_hparams_batches():
    config = ppo.PPOConfig(num_envs=4, num_steps=8, num_minibatches=2, recurrent="lstm",
                           recurrent_size=8, hidden_sizes=(8,), total_timesteps=64)  # fmt: skip
    env, params = envs.make("probe/memory_cue")
    agent = ppo.make(config, env, params)
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(0), 2)
    states = driver.init_batch(agent, keys, hp)
    _, batched = jax.jit(driver.run_batch, static_argnums=(0, 3))(agent, states, hp, 2)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    for i in range(2):
        _, single = train(agent, keys[i], hp, 2)
        np.testing.assert_allclose(batched["losses/value_loss"][i], single["losses/value_loss"],
                                   rtol=1e-5)  # fmt: skip
    assert not np.allclose(batched["losses/value_loss"][0], batched["losses/value_loss"][1])
    rates = jnp.array([1e-3, 1e-2])
    hps = hp.replace(learning_rate=rates)
    states = driver.init_batch(agent, keys, hps, hparams_axis=0)
    _, metrics = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))(agent, states, hps, 2, 0)
    np.testing.assert_allclose(metrics["charts/learning_rate"][:, 0], rates * 1.0, rtol=1e-6)


def test_act_takes_and_returns_the_carry():
    config = ppo.PPOConfig(num_envs=2, num_steps=4, num_minibatches=1, recurrent="gru",
                           recurrent_size=8, hidden_sizes=(8,))  # fmt: skip
    env, params = envs.make("probe/memory_cue")
    agent = ppo.make(config, env, params)
    state = agent.init(jax.random.key(0), agent.default_hparams)
    carry = agent.initial_carry(state, 3)
    assert carry.shape == (3, 8) and not carry.any()
    obs = jnp.ones((3, 1))
    action, carry = agent.act(state, obs, jax.random.key(1), True, carry)
    assert action.shape == (3,) and carry.shape == (3, 8) and carry.any()


def test_bad_recurrent_config_is_refused_before_compiling():
    with pytest.raises(ValueError, match=r"PPOConfig.recurrent='rnn' is not one of: lstm, gru"):
        ppo.PPOConfig(recurrent="rnn")
    with pytest.raises(ValueError, match=r"num_minibatches=4 must divide num_envs=6"):
        ppo.PPOConfig(num_envs=6, num_steps=8, num_minibatches=4, recurrent="lstm")
    with pytest.raises(ValueError, match="recurrent_size"):
        ppo.PPOConfig(recurrent="gru", recurrent_size=0)


def test_a_feed_forward_network_is_its_module_with_the_carry_of_no_leaves():
    # FeedForward passes the carry () through and reads no starts; its step and apply are the
    # module's own outputs. The learning batch: shuffled steps (axis 0) for it, whole sequences of
    # environments (axis 1) for a recurrent one; minibatch sizes 4 x 8 / 2 = 16 and 4 / 2 = 2.
    env, params = envs.make("cartpole")
    ff = ppo.actor_critic(ppo.PPOConfig(hidden_sizes=(8,)), env.action_space(params))
    rnn = ppo.actor_critic(ppo.PPOConfig(recurrent="gru", recurrent_size=4, hidden_sizes=(8,)),
                           env.action_space(params))  # fmt: skip
    assert (ff.memory, rnn.memory) == (False, True) and ff.initial(3) == ()
    net = ff.init(jax.random.key(0), (4,))
    obs = jax.random.normal(jax.random.key(1), (3, 4))
    logits = ff.module.apply(net, obs)[0].logits
    (got, value), carry = ff.step(net, (), obs, lambda dist, value: (dist.logits, value))
    np.testing.assert_array_equal(got, logits)
    assert carry == () and value.shape == (3,)
    np.testing.assert_array_equal(ff.apply(net, (), obs, None)[0].logits, logits)
    assert ff.learning_memory((), "starts") == {"carry": (), "starts": None}
    assert (ff.sample_axis, rnn.sample_axis) == (0, 1)
    assert ff.minibatches is memory.shuffled_steps and rnn.minibatches is memory.env_sequences
    assert (ff.minibatch_size(4, 8, 2), rnn.minibatch_size(4, 8, 2)) == (16, 2)
    carry = rnn.initial(3)
    (action, _), after = rnn.step(rnn.init(jax.random.key(0), (4,)), carry, obs,
                                  lambda dist, value: (dist.mode(), value))  # fmt: skip
    assert action.shape == (3,) and after.shape == (3, 4) and bool(after.any())
