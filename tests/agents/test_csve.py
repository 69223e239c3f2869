"""CSVE (`rlsuite.agents.csve`): its value loss and penalty by hand, with the fixed point of a
tabular V derived from them; the penalised states read off the dynamics model; the model
learning a linear system inside the learner's steps; the probe's best action learned from
uniform actions, and (slow) by the model-based term alone; the Lagrange weight moving each way;
bad input refused by name. Learning above BC on a medium-replay dataset:
`tests/topics/test_offline_end_to_end.py` (slow)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import csve, iql
from tests.agents.offline_probe import OBS, PROBE, SMALL, train_jit


def test_value_loss_and_penalty_by_hand():
    # fit: ((2 - 1)^2 + (2 - 2)^2) / 2 = 0.5; penalty: mean(3, 1) - mean(0, 1) = 1.5.
    v, q = jnp.array([1.0, 2.0]), jnp.array([2.0, 2.0])
    pen, data = jnp.array([3.0, 1.0]), jnp.array([0.0, 1.0])
    loss, penalty = csve.value_loss(v, q, pen, data, 0.5)
    np.testing.assert_allclose([loss, penalty], [0.5 + 0.5 * 1.5, 1.5], rtol=1e-6)
    # The gradient: -2 (q - v) / B on the fitted values, +alpha / B on the penalised states,
    # -alpha / B on the dataset's next states; none to the targets or the weight.
    grads = jax.grad(lambda *a: csve.value_loss(*a)[0], argnums=(0, 1, 2, 3, 4))(
        v, q, pen, data, 0.5
    )
    np.testing.assert_allclose(grads[0], [-1.0, 0.0], atol=1e-6)
    np.testing.assert_array_equal(grads[1], 0.0)
    np.testing.assert_allclose(grads[2], [0.25, 0.25], rtol=1e-6)
    np.testing.assert_allclose(grads[3], [-0.25, -0.25], rtol=1e-6)
    assert float(grads[4]) == 0.0


def test_a_tabular_value_settles_where_the_penalty_and_the_fit_balance():
    # V a table over 3 states. Setting the gradient to 0 at a state x gives
    # V(x) = mean of its targets - alpha (n_penalised(x) - n_next(x)) / (2 n_data(x)):
    # x = 0: targets 1, 3, one of each other kind: 2; x = 1: target 2, penalised twice and a
    # next state once: 2 - 1 / 2 = 1.5; x = 2: target -1, penalised once and a next state
    # twice: -1 + 1 / 2 = -0.5.
    data, q = jnp.array([0, 0, 1, 2]), jnp.array([1.0, 3.0, 2.0, -1.0])
    penalised, nxt = jnp.array([1, 1, 2, 0]), jnp.array([0, 2, 2, 1])

    def loss(table):
        return csve.value_loss(table[data], q, table[penalised], table[nxt], 1.0)[0]

    descend = jax.jit(lambda _, table: table - 0.5 * jax.grad(loss)(table))
    table = jax.lax.fori_loop(0, 2000, descend, jnp.zeros(3))
    np.testing.assert_allclose(table, [2.0, 1.5, -0.5], atol=1e-4)


def _learner(obs_dim=2, num_models=3):
    config = csve.CSVEConfig(hidden_sizes=(32, 32), num_models=num_models)
    algo = csve.learner(config, (obs_dim,), 1)
    return algo, algo.learn.args[0]  # (bound by learner.bind)


def test_penalised_states_are_a_members_next_state_under_the_policys_mean():
    algo, nets = _learner()
    state = algo.init(jax.random.key(0), csve.CSVEHparams())
    obs = jax.random.normal(jax.random.key(1), (6, 2))
    key = jax.random.key(2)
    got = csve.penalised_states(nets, state, obs, key)
    members = nets.model.apply(state.model, obs, csve.greedy(nets, state, obs))  # [3, 6, 3]
    pick = jax.random.randint(key, (6,), 0, 3)
    np.testing.assert_allclose(got, obs + members[pick, jnp.arange(6), :2], rtol=1e-6)
    assert len(set(np.asarray(pick).tolist())) > 1  # the members differ from state to state


def test_the_dynamics_model_learns_a_linear_system_within_the_steps():
    # s' = s + 0.5 a (both dimensions), r = s_0 - a: every member learns it from the batches.
    algo, nets = _learner()
    hp = csve.CSVEHparams(model_lr=3e-3)
    state = algo.init(jax.random.key(0), hp)

    def batch(key):
        k1, k2 = jax.random.split(key)
        obs = jax.random.uniform(k1, (64, 2), minval=-1, maxval=1)
        action = jax.random.uniform(k2, (64, 1), minval=-1, maxval=1)
        return {
            "obs": obs,
            "action": action,
            "reward": obs[:, 0] - action[:, 0],
            "discount": jnp.full((64,), 0.9),
            "next_obs": obs + 0.5 * action,
        }

    def step(state, key):
        return algo.learn(state, batch(key), key, hp)

    state, metrics = jax.lax.scan(step, state, jax.random.split(jax.random.key(1), 1500))
    assert metrics["model_loss"][-1] < 0.01 * metrics["model_loss"][0]
    test = batch(jax.random.key(9))
    prediction = nets.model.apply(state.model, test["obs"], test["action"])
    np.testing.assert_allclose(
        prediction[..., :2], (0.5 * test["action"]).repeat(2, -1)[None].repeat(3, 0), atol=0.05
    )
    np.testing.assert_allclose(prediction[..., 2], test["reward"][None].repeat(3, 0), atol=0.05)


def test_csve_learns_the_probe_from_uniform_actions(uniform_data):
    env, params = envs.make(PROBE, continuous=True)
    config = csve.CSVEConfig(
        num_updates=30, gradient_steps=100, hidden_sizes=(32, 32), num_models=2
    )
    agent = csve.make(config, env, params)
    # As IQL's probe test (beta 10: the weighted uniform actions have mean 0.493). One-step
    # episodes: the penalised state and the next state are both 0 up to the model's error.
    hp = csve.CSVEHparams(actor_lr=1e-3, critic_lr=1e-3, value_lr=1e-3, beta=10.0)
    state, metrics = train_jit(agent, jax.random.key(0), hp, 30, data=uniform_data)
    assert np.isfinite(metrics["losses/critic_loss"]).all()
    np.testing.assert_allclose(agent.act(state, OBS, None, True), [[0.5]], atol=0.1)
    assert metrics["losses/model_loss"][-1] < 1e-3


@pytest.mark.slow
def test_the_model_based_term_alone_moves_the_policy_towards_the_best_action(uniform_data):
    # With no advantage weighting (beta 0) the policy clones the dataset's mean action, 0; the
    # model-based term (lambda 1) moves it towards where the model's reward is highest, 0.5.
    env, params = envs.make(PROBE, continuous=True)
    config = csve.CSVEConfig(
        num_updates=30, gradient_steps=100, hidden_sizes=(32, 32), num_models=2
    )
    agent = csve.make(config, env, params)
    hp = csve.CSVEHparams(actor_lr=1e-3, critic_lr=1e-3, value_lr=1e-3, beta=0.0)
    actions = []
    for weight in (0.0, 1.0):
        state, _ = train_jit(
            agent, jax.random.key(0), hp.replace(explore_weight=weight), 30, data=uniform_data
        )
        actions.append(float(agent.act(state, OBS, None, True)[0, 0]))
    cloned, explored = actions
    assert abs(cloned) < 0.05 and explored > 0.15, actions


def test_the_penalty_weight_grows_above_its_target_and_shrinks_below(uniform_data):
    env, params = envs.make(PROBE, continuous=True)
    agent = csve.make(csve.CSVEConfig(**SMALL), env, params)
    weights = {}
    for target in (-10.0, 10.0):  # the probe's penalty stays near 0: above -10, below 10
        hp = csve.CSVEHparams(penalty_target=target, alpha_lr=1e-2)
        _, metrics = train_jit(agent, jax.random.key(0), hp, 4, data=uniform_data)
        weights[target] = np.asarray(metrics["losses/penalty_weight"])
    assert weights[-10.0][-1] > 1.0 > weights[10.0][-1], weights


def test_csve_bad_input_is_refused_with_the_field_named():
    env, params = envs.make(PROBE, continuous=True)
    with pytest.raises(TypeError, match="csve handles bounded 1-D Box"):
        csve.make(csve.CSVEConfig(), *envs.make(PROBE))  # discrete actions
    with pytest.raises(TypeError, match="needs a CSVEConfig"):
        csve.make(iql.IQLConfig(), env, params)
    agent = csve.make(csve.CSVEConfig(), env, params)
    agent.check_hparams(agent.default_hparams)
    bad = [("model_lr", 0.0), ("alpha", 0.0), ("alpha_lr", -1.0), ("gamma", 1.5), ("beta", -1.0)]
    for field, value in [*bad, ("explore_weight", -0.1), ("tau", -0.1)]:
        with pytest.raises(ValueError, match=rf"csve: invalid hparams\.{field}"):
            agent.check_hparams(csve.CSVEHparams(**{field: value}))
    with pytest.raises(ValueError, match="num_models must be an integer >= 1"):
        csve.CSVEConfig(num_models=0)
