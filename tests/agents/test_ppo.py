"""PPO: probe environments with known answers, learning on CartPole, seeds, bad input."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo, ppo_config
from rlsuite.environment.spaces import Box
from rlsuite.loop import driver
from rlsuite.networks import memory
from tests.trees import leaves_equal

PROBE_CONFIG = ppo.PPOConfig(
    num_envs=16,
    num_steps=8,
    num_minibatches=2,
    update_epochs=4,
    anneal_lr=False,
    hidden_sizes=(32, 32),
)
PROBE_HPARAMS = ppo.PPOHparams(learning_rate=3e-3, gamma=0.9, ent_coef=0.0, vf_clip_eps=10.0)


def train_probe(name, continuous=False, num_updates=150, seed=0):
    env, params = envs.make(f"probe/{name}", continuous=continuous)
    agent = ppo.make(PROBE_CONFIG, env, params)
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(
        agent, jax.random.key(seed), PROBE_HPARAMS, num_updates
    )
    network = ppo.actor_critic(PROBE_CONFIG, env.action_space(params)).module
    return lambda obs: network.apply(state.params, jnp.asarray(obs, jnp.float32))


def test_probe_constant_reward_value_is_one():
    _, value = train_probe("constant_reward")(jnp.zeros((1, 1)))
    np.testing.assert_allclose(value, [1.0], atol=0.05)


def test_reward_scale_multiplies_the_learned_value():
    # hparams.reward_scale = 2 on the constant-reward probe: V = 2 * 1.
    env, params = envs.make("probe/constant_reward")
    agent = ppo.make(PROBE_CONFIG, env, params)
    hp = PROBE_HPARAMS.replace(reward_scale=2.0)
    state, metrics = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, 150)
    network = ppo.actor_critic(PROBE_CONFIG, env.action_space(params)).module
    _, value = network.apply(state.params, jnp.zeros((1, 1)))
    np.testing.assert_allclose(value, [2.0], atol=0.1)
    assert np.asarray(metrics["charts/episodic_return"])[-1] == 1.0  # logged returns stay raw


def test_probe_observation_reward_value_is_observation():
    _, value = train_probe("observation_reward")(jnp.array([[-1.0], [1.0]]))
    np.testing.assert_allclose(value, [-1.0, 1.0], atol=0.05)


def test_probe_one_step_discount_value_is_gamma():
    # V(obs 0) = gamma * 1 = 0.9, V(obs 1) = 1.
    _, value = train_probe("one_step_discount")(jnp.array([[0.0], [1.0]]))
    np.testing.assert_allclose(value, [0.9, 1.0], atol=0.05)


def test_probe_action_reward_discrete_and_continuous():
    dist, value = train_probe("action_reward")(jnp.zeros((1, 1)))
    assert float(dist.probs[0, 1]) > 0.95
    np.testing.assert_allclose(value, [1.0], atol=0.15)
    dist, _ = train_probe("action_reward", continuous=True, num_updates=300)(jnp.zeros((1, 1)))
    np.testing.assert_allclose(dist.mean()[0, 0], 0.5, atol=0.1)


def test_probe_observation_action_reward_discrete_and_continuous():
    obs = jnp.array([[-1.0], [1.0]])
    dist, _ = train_probe("observation_action_reward")(obs)
    assert float(dist.probs[0, 0]) > 0.95 and float(dist.probs[1, 1]) > 0.95
    dist, _ = train_probe("observation_action_reward", continuous=True, num_updates=300)(obs)
    np.testing.assert_allclose(dist.mean()[:, 0], [-0.5, 0.5], atol=0.1)


@pytest.mark.parametrize(
    "name, obs, best",
    [
        ("action_reward", [[0.0]], [0.5]),
        ("observation_action_reward", [[-1.0], [1.0]], [-0.5, 0.5]),
    ],
)
def test_probes_with_the_tanh_squashed_policy(name, obs, best):
    # brax.training's policy (tanh-squashed, std an output of the actor): the greedy action
    # tanh(mean) finds the best action, also where it depends on the observation. At brax's step
    # size 3e-4: at the other probes' 3e-3 its std collapses to about 0.004 within tens of updates
    # and the mean then wanders (0.24 to 0.49 after 600 updates on the first probe, 2 seeds).
    env, params = envs.make(f"probe/{name}", continuous=True)
    agent = ppo.make(dataclasses.replace(PROBE_CONFIG, distribution="tanh_gaussian"), env, params)
    hp = PROBE_HPARAMS.replace(learning_rate=3e-4)
    state, metrics = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, 300)
    assert np.isfinite(metrics["losses/entropy"]).all()
    greedy = agent.act(state, jnp.asarray(obs), jax.random.key(1), True)
    np.testing.assert_allclose(greedy[:, 0], best, atol=0.05)


@pytest.fixture(scope="module")
def cartpole_agent():
    env, params = envs.make("cartpole")
    return ppo.make(ppo.PPOConfig(total_timesteps=500_000), env, params)


@pytest.mark.slow
def test_cartpole_learns_over_four_vmapped_seeds(cartpole_agent):
    agent = cartpole_agent
    num_updates = agent.config.num_updates  # 500k steps / 512 per update
    keys = jax.random.split(jax.random.key(0), 4)
    states = jax.jit(driver.init_batch, static_argnums=0)(agent, keys, agent.default_hparams)
    states, metrics = jax.jit(driver.run_batch, static_argnums=(0, 3))(
        agent, states, agent.default_hparams, num_updates
    )
    result = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))(
        agent, states, jax.random.key(1), 10
    )
    per_seed = np.asarray(result.returns.mean(axis=1))
    assert metrics["charts/episodic_return"].shape == (4, num_updates)
    assert per_seed.mean() >= 475, per_seed
    # The same four seeds trained one at a time (no vmap): XLA may sum in another order, so the
    # runs drift apart after the first updates, but their final returns agree within seed noise
    # (here: both groups solve the task; means within 5% of the maximum, 500).
    train = jax.jit(driver.train, static_argnums=(0, 3))
    separate = []
    for key in keys:
        state, _ = train(agent, key, agent.default_hparams, num_updates)
        one = jax.tree.map(lambda x: x[None], state)
        separate.append(driver.evaluate_batch(agent, one, jax.random.key(1), 10).returns.mean())
    separate = np.asarray(separate)
    assert separate.mean() >= 475 and abs(separate.mean() - per_seed.mean()) <= 25, (
        separate,
        per_seed,
    )


def test_same_key_same_run_different_key_different_run(cartpole_agent):
    agent = cartpole_agent
    train = jax.jit(driver.train, static_argnums=(0, 3))
    hp = agent.default_hparams
    _, m1 = train(agent, jax.random.key(3), hp, 5)
    _, m2 = train(agent, jax.random.key(3), hp, 5)
    _, m3 = train(agent, jax.random.key(4), hp, 5)
    for name in m1:
        np.testing.assert_array_equal(m1[name], m2[name], err_msg=name)
    assert not np.array_equal(m1["losses/value_loss"], m3["losses/value_loss"])


def test_reset_slots_change_no_result(cartpole_agent):
    # Resetting the finished envs one at a time computes the same run as the whole-batch reset.
    env, params = envs.make("cartpole")
    slotted = ppo.make(dataclasses.replace(cartpole_agent.config, reset_slots=1), env, params)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    hp = cartpole_agent.default_hparams
    expected = train(cartpole_agent, jax.random.key(3), hp, 5)
    actual = train(slotted, jax.random.key(3), hp, 5)
    assert np.asarray(expected[1]["charts/episodes"]).sum() > 50  # many resets
    assert leaves_equal(expected, actual)
    # The slotted program resets in rounds: it has loops the other has not.
    loops = [
        train.lower(a, jax.random.key(3), hp, 5).as_text().count("stablehlo.while")
        for a in (cartpole_agent, slotted)
    ]
    assert loops[1] > loops[0], loops


def test_vmapped_seed_matches_separate_run(cartpole_agent):
    agent = cartpole_agent
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(5), 3)
    states = driver.init_batch(agent, keys, hp)
    _, batched = jax.jit(driver.run_batch, static_argnums=(0, 3))(agent, states, hp, 1)
    for i in range(3):
        _, single = jax.jit(driver.train, static_argnums=(0, 3))(agent, keys[i], hp, 1)
        for name in single:
            np.testing.assert_allclose(batched[name][i], single[name], rtol=1e-4, atol=1e-6)


def test_hyperparameter_batch_is_a_vmap_axis(cartpole_agent):
    agent = cartpole_agent
    hp = agent.default_hparams.replace(learning_rate=jnp.array([1e-4, 1e-3]))
    keys = jnp.stack([jax.random.key(0)] * 2)
    states = driver.init_batch(agent, keys, hp, hparams_axis=0)
    _, metrics = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))(agent, states, hp, 2, 0)
    np.testing.assert_allclose(metrics["charts/learning_rate"][:, 0], [1e-4, 1e-3], rtol=1e-6)
    # Same seed, different learning rates: the second update differs.
    assert metrics["losses/value_loss"][0, 1] != metrics["losses/value_loss"][1, 1]


def test_bad_input_raises_before_compiling():
    env, params = envs.make("cartpole")
    with pytest.raises(ValueError, match=r"num_minibatches=3 must divide .* 512"):
        ppo.PPOConfig(num_minibatches=3)
    with pytest.raises(ValueError, match="PPOConfig.num_envs must be an integer >= 1"):
        ppo.PPOConfig(num_envs=0)
    with pytest.raises(ValueError, match="unknown activation 'sigmoid'"):
        ppo.PPOConfig(activation="sigmoid")
    for sizes in [(), (64, 0), (64.0,), "64"]:
        with pytest.raises(ValueError, match=r"PPOConfig.hidden_sizes must be a non-empty seq"):
            ppo.PPOConfig(hidden_sizes=sizes)
    # A list (from JSON, say) is kept as a tuple, so the config stays hashable for jax.jit.
    assert ppo.PPOConfig(hidden_sizes=[32, 32]).hidden_sizes == (32, 32)
    hash(ppo.PPOConfig(hidden_sizes=[32, 32], critic_hidden_sizes=[8]))
    with pytest.raises(ValueError, match=r"PPOConfig.critic_hidden_sizes must be a non-empty"):
        ppo.PPOConfig(critic_hidden_sizes=())
    with pytest.raises(ValueError, match=r"PPOConfig.reset_slots must be an integer >= 1, got 0"):
        ppo.PPOConfig(reset_slots=0)
    with pytest.raises(ValueError, match=r"distribution='beta' is not one of: gaussian, tanh_g"):
        ppo.PPOConfig(distribution="beta")
    with pytest.raises(TypeError, match=r"distribution='tanh_gaussian' handles a bounded 1-D Box"):
        ppo.make(ppo.PPOConfig(distribution="tanh_gaussian"), *envs.make("cartpole"))
    agent = ppo.make(ppo.PPOConfig(), env, params)
    with pytest.raises(ValueError, match=r"invalid hparams.learning_rate=.*allowed: a value > 0"):
        agent.check_hparams(ppo.PPOHparams(learning_rate=-1e-3))
    with pytest.raises(ValueError, match=r"hparams.gamma"):
        agent.check_hparams(ppo.PPOHparams(gamma=1.5))
    with pytest.raises(ValueError, match=r"invalid hparams.reward_scale=0.*allowed: a value > 0"):
        agent.check_hparams(ppo.PPOHparams(reward_scale=0.0))
    box = envs.make("point_mass")[0]
    with pytest.raises(TypeError, match="needs a PPOConfig"):
        ppo.make({"num_envs": 4}, box)


def test_unsupported_action_space_is_rejected():
    from rlsuite.environment.spaces import Box
    from tests.counter_env import Counter

    class Unbounded(Counter):
        def action_space(self, params):
            return Box(-jnp.inf, jnp.inf, (1,))

    with pytest.raises(TypeError, match="Discrete or bounded 1-D Box"):
        ppo.make(ppo.PPOConfig(), Unbounded())


@pytest.mark.slow
def test_pendulum_learns_over_two_vmapped_seeds_with_tuned_defaults():
    from rlsuite.app.tuned import tuned

    env, params = envs.make("pendulum")
    overrides = tuned("ppo", "pendulum")
    config = ppo.PPOConfig(**overrides["config"])
    hp = ppo.PPOHparams(**overrides["hparams"])
    agent = ppo.make(config, env, params)
    assert config.total_timesteps <= 1_000_000
    keys = jax.random.split(jax.random.key(0), 2)
    states = driver.init_batch(agent, keys, hp)
    states, _ = jax.jit(driver.run_batch, static_argnums=(0, 3))(
        agent, states, hp, config.num_updates
    )
    result = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))(
        agent, states, jax.random.key(1), 10
    )
    per_seed = np.asarray(result.returns.mean(axis=1))
    assert per_seed.mean() >= -300, per_seed


@pytest.mark.slow
def test_brax_environment_through_the_adapter_improves_over_the_random_policy():
    # MJX inverted pendulum (terminates when the pole falls). Uniformly random actions keep it up
    # for about 5 steps; 40k steps of PPO must at least quadruple that.
    from rlsuite.loop.episodes import evaluate

    env, params = envs.make("brax/inverted_pendulum")
    config = ppo.PPOConfig(
        num_envs=16,
        num_steps=64,
        num_minibatches=4,
        total_timesteps=40_960,
        normalize_observations=True,
    )
    hp = ppo.PPOHparams(learning_rate=1e-3, ent_coef=0.0)
    agent = ppo.make(config, env, params)
    space = agent.env.action_space(params)

    def uniform(key, obs):
        return jax.vmap(space.sample)(jax.random.split(key, obs.shape[0])), {}

    def random_returns(key):  # jitted: an eager MJX reset runs op by op (about 20 s here)
        return evaluate(agent.env, params, uniform, key, 16).returns

    random_return = float(jax.jit(random_returns)(jax.random.key(1)).mean())
    states = driver.init_batch(agent, jax.random.split(jax.random.key(0), 1), hp)
    states, _ = jax.jit(driver.run_batch, static_argnums=(0, 3))(
        agent, states, hp, config.num_updates
    )
    evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    trained = float(evaluation(agent, states, jax.random.key(1), 8).returns.mean())
    assert random_return < 15 and trained > 4 * random_return, (random_return, trained)


def test_ppo_config_builds_the_optimiser_and_the_network_a_config_describes():
    # The optimiser clips the global gradient norm to max_grad_norm, then scales by Adam. Its
    # first step is m_hat / (sqrt(v_hat) + eps) = g' / (|g'| + eps) per coordinate, with g' the
    # clipped gradient: [3, 4] (norm 5) -> [0.3, 0.4] -> 0.3 / 0.31 and 0.4 / 0.41 with eps 0.01
    # (unclipped it would be 3 / 3.01 and 4 / 4.01).
    hp = ppo_config.PPOHparams(max_grad_norm=0.5, adam_eps=0.01)
    tx = ppo_config.optimizer(hp)
    params = jnp.zeros(2)
    step, _ = tx.update(jnp.array([3.0, 4.0]), tx.init(params), params)
    np.testing.assert_allclose(step, [0.3 / 0.31, 0.4 / 0.41], rtol=1e-4)
    assert ppo.PPOConfig is ppo_config.PPOConfig and ppo.actor_critic is ppo_config.actor_critic
    # The network a config describes: feed-forward, or with `recurrent` a recurrent core.
    env, params = envs.make("pendulum")
    space = env.action_space(params)
    assert isinstance(ppo_config.actor_critic(ppo.PPOConfig(), space), memory.FeedForward)
    recurrent = ppo_config.actor_critic(ppo.PPOConfig(recurrent="lstm"), space)
    assert isinstance(recurrent, memory.Recurrent) and recurrent.module.cell == "lstm"
    with pytest.raises(TypeError, match="ppo with distribution='gaussian' handles Discrete or"):
        ppo_config.actor_critic(ppo.PPOConfig(), Box(-jnp.inf, jnp.inf, (2,)), "free")
