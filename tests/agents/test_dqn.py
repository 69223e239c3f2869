"""DQN (`rlsuite.agents.dqn`) on the shared off-policy loop: targets and losses by hand and
against rlax, the epsilon schedule, dueling heads, jit and vmap, probes with known values, bad
input, and learning CartPole with a negative control that must fail."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from rlsuite import envs
from rlsuite.agents import dqn
from rlsuite.loop import driver
from rlsuite.networks import QNetwork, dueling
from rlsuite.ops import losses


# ------------------------------------------------------------------------------------ targets
def test_q_learning_targets_by_hand_with_a_termination_and_a_truncation():
    # Three items, gamma 0.9, two actions. Item 0: an ordinary step. Item 1: terminated (its
    # discount gamma^m (1 - terminated) is 0): y = r. Item 2: truncated, which bootstraps from
    # its true last observation: discount 0.9.
    reward = jnp.array([1.0, 2.0, -1.0])
    discount = jnp.array([0.9, 0.0, 0.9])
    next_target = jnp.array([[1.0, 3.0], [5.0, 4.0], [2.0, -2.0]])
    next_online = jnp.array([[2.0, 0.0], [0.0, 1.0], [-1.0, 1.0]])
    # DQN: max of the target: 3, 5, 2 -> y = 1 + 2.7, 2 + 0, -1 + 1.8.
    np.testing.assert_allclose(
        losses.q_learning_target(reward, discount, next_target), [3.7, 2.0, 0.8], rtol=1e-6
    )
    # Double: the online argmax (0, 1, 1) valued by the target (1, 4, -2) -> 1.9, 2.0, -2.8.
    np.testing.assert_allclose(
        losses.q_learning_target(reward, discount, next_target, next_online),
        [1.9, 2.0, -2.8],
        rtol=1e-6,
    )
    # Ties go to the lowest index, as jnp.argmax and rlax's do.
    tie = losses.q_learning_target(
        jnp.zeros(1), jnp.ones(1), jnp.array([[1.0, 7.0]]), jnp.ones((1, 2))
    )
    assert float(tie[0]) == 1.0


def test_q_learning_targets_equal_rlax():
    key = jax.random.key(0)
    k1, k2, k3, k4, k5, k6 = jax.random.split(key, 6)
    batch, actions = 32, 4
    q_tm1 = jax.random.normal(k1, (batch, actions))
    a_tm1 = jax.random.randint(k2, (batch,), 0, actions)
    reward = jax.random.normal(k3, (batch,))
    discount = 0.99 * (jax.random.uniform(k4, (batch,)) > 0.2)  # some terminated
    next_target = jax.random.normal(k5, (batch, actions))
    next_online = jax.random.normal(k6, (batch, actions))
    taken = q_tm1[jnp.arange(batch), a_tm1]
    ours = losses.q_learning_target(reward, discount, next_target, next_online) - taken
    theirs = jax.vmap(rlax.double_q_learning)(
        q_tm1, a_tm1, reward, discount, next_target, next_online
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    ours = losses.q_learning_target(reward, discount, next_target) - taken
    theirs = jax.vmap(rlax.q_learning)(q_tm1, a_tm1, reward, discount, next_target)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_td_losses_by_hand():
    q, y = jnp.array([0.0, 0.0, 0.0]), jnp.array([0.5, -2.0, 3.0])
    # Huber (delta 1): 0.5 * 0.25, |-2| - 0.5, 3 - 0.5 -> mean (0.125 + 1.5 + 2.5) / 3.
    np.testing.assert_allclose(losses.td_loss(q, y, "huber"), 4.125 / 3, rtol=1e-6)
    # Half the mean square: 0.5 * (0.25 + 4 + 9) / 3.
    np.testing.assert_allclose(losses.td_loss(q, y, "mse"), 0.5 * 13.25 / 3, rtol=1e-6)
    np.testing.assert_allclose(
        losses.td_loss(q, y, "huber"), jnp.mean(rlax.huber_loss(y - q, 1.0)), rtol=1e-6
    )
    with pytest.raises(ValueError, match="kind='l1' is not one of: huber, mse"):
        losses.td_loss(q, y, "l1")
    with pytest.raises(ValueError, match="must have the same shape"):
        losses.td_loss(q[:, None], y)


# ------------------------------------------------------------------------------ exploration
def test_exploration_follows_the_schedule_and_greedy_takes_the_argmax():
    env, params = envs.make("cartpole")
    config = dqn.DQNConfig(hidden_sizes=(8,), total_timesteps=1000)
    agent = dqn.make(config, env, params)
    hp = agent.default_hparams.replace(start_e=1.0, end_e=0.0, exploration_fraction=0.5)
    state = agent.init(jax.random.key(0), hp)
    obs = jax.random.normal(jax.random.key(1), (4000, 4))
    greedy = np.asarray(agent.act(state, obs, jax.random.key(2), True))
    q = QNetwork((8,), 2).apply(state.learner.q, obs)
    assert greedy.dtype == np.int32 and (greedy == np.asarray(q.argmax(-1))).all()
    # At step 0 (epsilon 1) actions are uniform: half of them differ from the greedy ones.
    explored = np.asarray(agent.act(state, obs, jax.random.key(3), False))
    assert abs((explored != greedy).mean() - 0.5) < 0.03
    # At 500 env steps and on (epsilon 0) they are the greedy ones.
    later = state.replace(collect_step=jnp.asarray(50, jnp.int32))  # 50 x 10 envs
    assert (np.asarray(agent.act(later, obs, jax.random.key(3), False)) == greedy).all()


# ---------------------------------------------------------------------------------- networks
def test_dueling_aggregation_by_hand():
    value = jnp.array([[2.0], [0.0]])
    advantages = jnp.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]])
    # Q = V + A - mean(A): means 2 and 1.
    np.testing.assert_allclose(dueling(value, advantages), [[1, 2, 3], [-2, -1, 3]])
    net = QNetwork((16,), 3, dueling=True)
    params = net.init(jax.random.key(0), jnp.zeros((1, 5)))
    assert set(params["params"]) == {"MLP_0", "MLP_1"}  # a value and an advantage stream
    q = net.apply(params, jnp.ones((7, 5)))
    assert q.shape == (7, 3)


# ------------------------------------------------------------------------------- jit and vmap
def _agent(**config):
    env, params = envs.make("cartpole")
    base = dict(num_envs=4, buffer_size=256, batch_size=16, learning_starts=32, hidden_sizes=(8,))
    return dqn.make(dqn.DQNConfig(**{**base, **config}), env, params)


def test_the_same_under_jit_and_vmap_and_keys_matter():
    agent = _agent(n_step=3, dueling=True, target_update_period=2)
    hp = agent.default_hparams
    one, _ = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, 19)
    keys = jnp.stack([jax.random.key(0), jax.random.key(1)])
    states = driver.init_batch(agent, keys, hp)  # the seeds vmapped, as the command line runs
    batch, metrics = jax.jit(driver.run_batch, static_argnums=(0, 3))(agent, states, hp, 19)
    for a, b in zip(jax.tree.leaves(one.learner), jax.tree.leaves(batch.learner), strict=True):
        np.testing.assert_allclose(a, b[0], rtol=1e-5, atol=1e-6)
    q_loss = np.asarray(metrics["losses/q_loss"])  # [seeds, updates]
    assert np.isfinite(q_loss[:, -1]).all()
    assert not np.allclose(q_loss[0], q_loss[1], equal_nan=True)  # another key, another run
    # Learning begins on the update whose collection brings the env steps to 32 (the 8th, of 4
    # envs): updates 8 to 19 learn, 12 gradient steps, a multiple of the target period 2, so
    # the target (tau 1) was copied at the last one.
    assert int(one.learner.steps) == 12
    online, target = jax.tree.leaves(one.learner.q), jax.tree.leaves(one.learner.target_q)
    for a, b in zip(online, target, strict=True):
        assert (np.asarray(a) == np.asarray(b)).all()


# -------------------------------------------------------------------------------------- probes
PROBE = dict(num_envs=8, buffer_size=4_000, batch_size=64, learning_starts=64, hidden_sizes=(32,))
PROBE["gradient_steps"] = 4


def train_probe(name, updates=300, **hparams):
    env, params = envs.make(f"probe/{name}")
    config = dqn.DQNConfig(**PROBE, target_update_period=1, total_timesteps=updates * 8)
    agent = dqn.make(config, env, params)
    hp = dqn.DQNHparams(learning_rate=3e-3, gamma=0.9, tau=0.05, **hparams)
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, updates)

    def q(obs):
        obs = jnp.asarray(obs, jnp.float32).reshape(-1, 1)
        return np.asarray(QNetwork(config.hidden_sizes, 2).apply(state.learner.q, obs))

    return q


def test_probes_values():
    # One-step episodes of reward 1, whatever the action: Q = 1 for both.
    np.testing.assert_allclose(train_probe("constant_reward")([0.0]), [[1.0, 1.0]], atol=0.05)
    # Reward = obs in {-1, 1}: Q(obs, .) = obs.
    q = train_probe("observation_reward")([-1.0, 1.0])
    np.testing.assert_allclose(q, [[-1.0, -1.0], [1.0, 1.0]], atol=0.1)
    # Two steps, 0 then 1: Q(obs 0, .) = gamma = 0.9, Q(obs 1, .) = 1 (the termination cuts it).
    q = train_probe("one_step_discount")([0.0, 1.0])
    np.testing.assert_allclose(q, [[0.9, 0.9], [1.0, 1.0]], atol=0.05)
    # +1 for action 1, -1 for action 0.
    np.testing.assert_allclose(train_probe("action_reward")([0.0]), [[-1.0, 1.0]], atol=0.1)
    # +1 if the action is (obs > 0), else -1.
    q = train_probe("observation_action_reward")([-1.0, 1.0])
    np.testing.assert_allclose(q, [[1.0, -1.0], [-1.0, 1.0]], atol=0.1)


# ------------------------------------------------------------------- clipping, initialisation
def test_gradient_clipping_by_hand_and_0_clips_nothing():
    grads = {"a": jnp.array([3.0, 0.0]), "b": jnp.array([[4.0]])}  # global norm sqrt(9 + 16) = 5
    clipped, norm = dqn.clip_by_global_norm(grads, 2.5)  # scaled by 2.5 / 5
    assert float(norm) == 5.0
    np.testing.assert_allclose(clipped["a"], [1.5, 0.0])
    np.testing.assert_allclose(clipped["b"], [[2.0]])
    for bound in (0.0, 5.0, 10.0):  # 0: no clipping (the default); at or above the norm: as is
        same, _ = jax.jit(dqn.clip_by_global_norm)(grads, bound)
        np.testing.assert_array_equal(same["a"], grads["a"])
        np.testing.assert_array_equal(same["b"], grads["b"])
    assert dqn.DQNHparams().max_grad_norm == 0.0


def test_q_network_kernels_start_as_init_says():
    # CartPole's 4 inputs into DQN's first hidden layer of 120. Orthogonal with gain sqrt(2):
    # the 4 rows of the kernel [4, 120] are orthogonal with squared norm 2, K K^T = 2 I. Lecun-
    # normal: entries of variance 1 / fan_in = 1/4 (flax's truncated normal, rescaled to that
    # variance), so K K^T has a diagonal near 120 / 4 = 30.
    agent = dqn.make(dqn.DQNConfig(), *envs.make("cartpole"))
    state = agent.init(jax.random.key(0), agent.default_hparams)
    kernels = {
        init: QNetwork((120, 84), 2, "relu", kernel_init=init).init(
            jax.random.key(1), jnp.zeros((1, 4))
        )["params"]["MLP_0"]["Dense_0"]["kernel"]
        for init in ("orthogonal", "lecun_normal")
    }
    orthogonal = kernels["orthogonal"]
    np.testing.assert_allclose(orthogonal @ orthogonal.T, 2 * np.eye(4), atol=1e-5)
    gram = np.asarray(kernels["lecun_normal"] @ kernels["lecun_normal"].T)
    assert 20 < gram.diagonal().min() and gram.diagonal().max() < 40, gram.diagonal()
    # DQN's default is lecun-normal: its first kernel is not orthogonal.
    first = state.learner.q["params"]["MLP_0"]["Dense_0"]["kernel"]
    assert np.abs(np.asarray(first @ first.T) - 2 * np.eye(4)).max() > 1.0


# ---------------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_before_anything_is_compiled():
    pendulum = envs.make("pendulum")
    with pytest.raises(TypeError, match=r"dqn handles Discrete action spaces; .* has Box"):
        dqn.make(dqn.DQNConfig(), *pendulum)
    with pytest.raises(ValueError, match="DQNConfig.loss='l1' is not one of: huber, mse"):
        dqn.DQNConfig(loss="l1")
    with pytest.raises(ValueError, match="target_update_period"):
        dqn.DQNConfig(target_update_period=0)
    with pytest.raises(ValueError, match=r"start_e.*a value in \[0, 1\]"):
        dqn.check_hparams(dqn.DQNHparams(start_e=1.5))
    with pytest.raises(ValueError, match=r"tau.*a value in \(0, 1\]"):
        dqn.check_hparams(dqn.DQNHparams(tau=0.0))
    with pytest.raises(ValueError, match=r"max_grad_norm.*a value >= 0 \(0: no clipping\)"):
        dqn.check_hparams(dqn.DQNHparams(max_grad_norm=-1.0))
    with pytest.raises(
        ValueError, match="DQNConfig.init='xavier' is not one of: orthogonal, lecun"
    ):
        dqn.DQNConfig(init="xavier")
    with pytest.raises(TypeError, match="dqn.make needs a DQNConfig"):
        dqn.make(dataclasses.replace(dqn.DQNConfig()).__dict__, *envs.make("cartpole"))


# ----------------------------------------------------------------------------------- learning
def _cartpole_returns(target=losses.q_learning_target, seeds=2, steps=150_000):
    env, params = envs.make("cartpole")
    agent = dqn.make(dqn.DQNConfig(total_timesteps=steps), env, params, target=target)
    keys = jax.random.split(jax.random.key(0), seeds)
    train = jax.jit(jax.vmap(driver.train, in_axes=(None, 0, None, None)), static_argnums=(0, 3))
    states, _ = train(agent, keys, agent.default_hparams, agent.config.num_updates)
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4))
    return np.asarray(evaluate(agent, states, keys, 10, True).returns).mean(axis=1)


@pytest.mark.slow
def test_cartpole_learns_and_a_target_that_ignores_terminations_does_not():
    # Calibrated on the CI machine (2 cores): at 150,000 env steps with the defaults, 4 seeds
    # evaluated 369.5, 441.7, 500 and 463.3 (10 greedy episodes each) -> asserted >= 180 (a 2x
    # margin on the worst). The negative control bootstraps through terminations (as if a pole that
    # fell went on): 9.0 to 9.8, no better than falling at once -> asserted < 30.
    returns = _cartpole_returns(seeds=2)
    assert (returns >= 180).all(), returns

    def through_terminations(reward, discount, next_q_target, next_q_online=None):
        gamma = jnp.full_like(discount, 0.99)  # the termination's 0 discount dropped
        return losses.q_learning_target(reward, gamma, next_q_target, next_q_online)

    broken = _cartpole_returns(through_terminations, seeds=2)
    assert (broken < 30).all(), broken


@pytest.mark.slow
def test_cartpole_reaches_500_at_the_default_budget():
    # 4 seeds at the default 500,000 env steps evaluated 500, 500, 500 and 497.8 on the CI
    # machine: the best reaches the cap, every seed >= 245 (a 2x margin on the worst).
    returns = _cartpole_returns(seeds=4, steps=500_000)
    assert returns.max() == 500 and (returns >= 245).all(), returns


def test_the_cli_trains_evaluates_and_says_what_it_ran(tmp_path):
    from tests.app.test_cli import rlsuite

    out = tmp_path / "dqn"
    tiny = ["--total-timesteps", "400", "--num-envs", "4", "--learning-starts", "80"]
    tiny += ["--batch-size", "16", "--buffer-size", "200", "--hidden-sizes", "8", "--no-progress"]
    proc = rlsuite("train", "dqn", *tiny, "--num-seeds", "2", "--eval-episodes", "2", "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "dqn on cartpole: 2 seeds x 400 env steps" in proc.stdout
    final = json.loads((out / "final.json").read_text())
    assert final["algo"] == "dqn" and len(final["eval_return_per_seed"]) == 2
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert {"losses/q_loss", "losses/q_mean", "charts/episodic_return"} <= set(rows[-1])
    proc = rlsuite("eval", out, "--episodes", "2", "--stochastic")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = rlsuite("train", "dqn", "--env", "pendulum", "--out", tmp_path / "no")
    assert proc.returncode == 2 and "dqn handles Discrete action spaces" in proc.stderr


def test_n_step_items_of_image_observations_point_at_the_right_next_observation():
    # MinAtar Breakout (10 x 10 x 4 images) through the conv torso, 2-step items, no learning.
    # The item of step t of env e holds next_obs of step t + 1, which is obs of step t + 2
    # where no episode ended in between (discount gamma^2 and neither flag).
    env, params = envs.make("gymnax/Breakout-MinAtar")
    config = dqn.DQNConfig(
        num_envs=2, buffer_size=200, batch_size=8, learning_starts=10_000, n_step=2,
        hidden_sizes=(8,), total_timesteps=10_000,
    )  # fmt: skip
    agent = dqn.make(config, env, params)
    hp = agent.default_hparams
    state, _ = jax.jit(driver.train, static_argnums=(0, 3))(agent, jax.random.key(0), hp, 40)
    data, size = state.buffer.data, int(state.buffer.size)
    assert size == 2 * 39  # the first step waits for its window
    obs, next_obs = np.asarray(data["obs"]), np.asarray(data["next_obs"])
    assert obs.shape[1:] == (10, 10, 4)
    discount = np.asarray(data["discount"])
    checked = 0
    for slot in range(size - 4):  # slot t * 2 + e; its pair two steps later is slot + 4
        if np.isclose(discount[slot], 0.99**2):
            np.testing.assert_array_equal(next_obs[slot], obs[slot + 4])
            checked += 1
    assert checked > 40  # most steps end no episode


# The tuned MinAtar entry (the MinAtar paper's DQN) at 200,000 of its 500,000 env steps, through
# the command line. Calibrated on the CI machine, 2 seeds, greedy evaluation of 10 episodes:
# Breakout 7.3 and 10.6 in 434 s beside another run (50.0 and 27.2 at the entry's 500,000); a
# uniformly random policy earns 0.41 per episode. Asserted: a 2x margin on the worse seed.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_minatar_breakout_learns_with_the_tuned_entry(tmp_path):
    from tests.app.test_cli import rlsuite

    out = tmp_path / "breakout"
    args = ["--env", "gymnax/Breakout-MinAtar", "--total-timesteps", "200000", "--num-seeds", "2"]
    proc = rlsuite("train", "dqn", *args, "--no-progress", "--out", out, timeout=880)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "no tuned defaults" not in proc.stderr
    returns = json.loads((out / "final.json").read_text())["eval_return_per_seed"]
    assert min(returns) >= 3.6, returns
