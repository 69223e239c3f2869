"""The loop the offline agents share (`rlsuite.agents.offline`): the same key gives the same run
and another key another, the dataset's observation statistics, and what each family declares
that its batches make of the rewards (`offline.Rewards`). Each family's own tests are in
`test_bc.py`, `test_td3_bc.py`, `test_cql.py`, `test_iql.py`, `test_csve.py` and `test_saq.py`;
runs on datasets the suite collects, end to end, in `tests/topics/test_offline_end_to_end.py`."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import bc, cql, csve, iql, offline, saq, td3_bc
from rlsuite.data.datasets import sample
from tests.agents.offline_probe import PROBE, SMALL, train_jit
from tests.trees import leaves_equal


@pytest.mark.parametrize(
    "algo",
    [
        (iql, iql.IQLConfig(**SMALL)),
        (cql, cql.CQLConfig(**SMALL, lagrange=True)),
        (csve, csve.CSVEConfig(**SMALL, num_models=2)),
        (saq, saq.SAQConfig(**SMALL, vq_fraction=0.5)),  # both phases in the 4 updates of 5 steps
    ],
)
def test_same_key_same_run_different_key_different_run(algo, uniform_data):
    module, config = algo
    agent = module.make(config, *envs.make(PROBE, continuous=True))
    hp = agent.default_hparams
    a, ma = train_jit(agent, jax.random.key(0), hp, 4, data=uniform_data)
    b, mb = train_jit(agent, jax.random.key(0), hp, 4, data=uniform_data)
    c, mc = train_jit(agent, jax.random.key(1), hp, 4, data=uniform_data)
    assert leaves_equal(a, b) and leaves_equal(ma, mb)
    assert not np.allclose(ma["losses/critic_loss"], mc["losses/critic_loss"])


def test_observation_statistics_are_the_datasets_with_a_floored_std(uniform_data):
    # The probe's observations are all 0: variance 0, so the divisor is its floor, 1e-3 (an
    # observation of 1 in evaluation is 1,000, not the 1e4 of a floor of 1e-4).
    env, params = envs.make(PROBE, continuous=True)
    config = td3_bc.TD3BCConfig(normalize_observations=True, **{**SMALL, "gradient_steps": 4})
    agent = td3_bc.make(config, env, params)
    hp = agent.default_hparams
    stats = agent.init(jax.random.key(0), hp, uniform_data).obs_stats
    assert float(stats.mean[0]) == 0.0 and float(stats.var[0]) == 0.0
    np.testing.assert_allclose(offline.standardize(stats, jnp.ones((1,))), [1000.0], rtol=1e-6)
    # Otherwise the dataset's mean and (population) variance.
    obs = 3.0 * jax.random.normal(jax.random.key(1), uniform_data.observations.shape) + 1.0
    shifted = dataclasses.replace(uniform_data, observations=obs, next_observations=obs)
    stats = agent.init(jax.random.key(0), hp, shifted).obs_stats
    np.testing.assert_allclose(stats.mean, np.mean(np.asarray(obs), 0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, np.var(np.asarray(obs), 0), rtol=1e-4)
    x = jnp.array([[4.0]])
    expected = (4.0 - np.mean(np.asarray(obs))) / np.sqrt(np.var(np.asarray(obs)) + 1e-6)
    np.testing.assert_allclose(offline.standardize(stats, x), [[expected]], rtol=1e-4)


@pytest.mark.parametrize(
    "module, config_cls, scaled, discounted",
    [
        (bc, "BCConfig", False, False),  # no TD target: raw rewards, no discount
        (td3_bc, "TD3BCConfig", True, True),
        (cql, "CQLConfig", True, True),
        (iql, "IQLConfig", False, True),  # IQL scales no rewards
        (csve, "CSVEConfig", False, True),
        (saq, "SAQConfig", False, True),
    ],
)
def test_each_family_declares_what_its_batches_make_of_the_rewards(
    module, config_cls, scaled, discounted, uniform_data
):
    env, params = envs.make(PROBE, continuous=True)
    config = getattr(module, config_cls)(**{**SMALL, "gradient_steps": 4})
    agent = module.make(config, env, params)
    hp = agent.default_hparams
    hp = hp.replace(**{k: v for k, v in (("gamma", 0.9), ("reward_scale", 3.0)) if hasattr(hp, k)})
    setup = agent.init.args[0]  # (bound by loop.agent.bind)
    assert isinstance(setup.rewards, offline.Rewards)
    stats = agent.init(jax.random.key(0), hp, uniform_data).obs_stats
    key = jax.random.key(7)
    batch = offline.batch_from(setup, uniform_data, stats, key, hp)
    raw = sample(uniform_data, key, SMALL["batch_size"])
    rewards = np.asarray(raw["rewards"], np.float32)
    np.testing.assert_array_equal(batch["reward"], rewards * 3.0 if scaled else rewards)
    if discounted:
        expected = np.float32(0.9) * (1.0 - np.asarray(raw["terminals"], np.float32))
        np.testing.assert_array_equal(batch["discount"], expected)
    else:
        assert "discount" not in batch
