"""Contrastive RL (rlsuite.agents.crl): the learner against the contrastive ops, seeds and penalty
values under one vmap against separate runs, bad input refused before tracing, and learning on
goal/point_reach with its negative controls."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.goal import PointReach

from rlsuite import envs
from rlsuite.agents import crl, registry
from rlsuite.app import runs, tuned
from rlsuite.app.errors import UsageError
from rlsuite.loop import driver
from rlsuite.loop.agent import config_dict
from rlsuite.ops import contrastive

TINY = dict(
    num_envs=4,
    batch_size=8,
    buffer_size=4 * 60,
    learning_starts=16,
    width=16,
    hidden_sizes=(16,),
    repr_dim=8,
    total_timesteps=4 * 12,
)


def point_reach():
    return envs.make("goal/point_reach")


def tiny(**overrides):
    env, params = point_reach()
    return crl.make(crl.CRLConfig(**{**TINY, **overrides}), env, params)


# ----------------------------------------------------------------------------- the learner
def _batch(key, batch_size=8, state_dim=2, action_dim=2):
    k1, k2, k3 = jax.random.split(key, 3)
    obs = jax.random.uniform(k1, (batch_size, 2 * state_dim), minval=-1, maxval=1)
    return {
        "obs": obs,
        "action": jax.random.uniform(k2, (batch_size, action_dim), minval=-1, maxval=1),
        "future_obs": jax.random.uniform(k3, (batch_size, 2 * state_dim), minval=-1, maxval=1),
    }


def _learner(**overrides):
    config = crl.CRLConfig(**{**TINY, **overrides})
    energy = contrastive.ENERGIES[config.energy]
    loss = contrastive.LOSSES[config.contrastive_loss]
    return crl.learner(config, 2, (0, 1), 2, energy, loss)


def test_critic_loss_is_the_contrastive_loss_of_phi_against_psi_of_the_future_goal():
    learner = _learner()
    state = learner.init(jax.random.key(0), crl.CRLHparams())
    batch = _batch(jax.random.key(1))
    _, metrics = learner.learn(state, batch, jax.random.key(2), crl.CRLHparams())
    # By hand from the same parameters: phi of (state, action), psi of future_obs[goal_indices].
    net = crl.DeepMLP(16, 2, 8, "silu")
    phi = net.apply(state.critic["phi"], jnp.concatenate([batch["obs"][:, :2], batch["action"]], 1))
    psi = net.apply(state.critic["psi"], batch["future_obs"][:, :2])
    logits = contrastive.norm(phi, psi)
    expected = contrastive.forward_infonce(logits) + contrastive.logsumexp_penalty(logits, 0.1)
    np.testing.assert_allclose(metrics["critic_loss"], expected, rtol=1e-6)
    np.testing.assert_allclose(
        metrics["categorical_accuracy"], contrastive.metrics(logits)["categorical_accuracy"]
    )


def test_permuting_pairs_leaves_the_critic_loss_permuting_goals_changes_it():
    learner = _learner()
    hp = crl.CRLHparams()
    state = learner.init(jax.random.key(0), hp)
    batch = _batch(jax.random.key(1))
    perm = jnp.array([3, 1, 7, 0, 5, 2, 6, 4])

    def critic_loss(b):
        return float(learner.learn(state, b, jax.random.key(2), hp)[1]["critic_loss"])

    base = critic_loss(batch)
    together = critic_loss(jax.tree.map(lambda x: x[perm], batch))
    goals_only = critic_loss({**batch, "future_obs": batch["future_obs"][perm]})
    np.testing.assert_allclose(together, base, rtol=1e-5)
    assert abs(goals_only - base) > 1e-3


def test_the_goal_is_read_at_goal_indices_of_the_future_state():
    learner = _learner()
    hp = crl.CRLHparams()
    state = learner.init(jax.random.key(0), hp)
    batch = _batch(jax.random.key(1))
    # The future's desired-goal half is not part of its achieved goal: changing it changes nothing.
    other = {**batch, "future_obs": batch["future_obs"].at[:, 2:].set(9.0)}
    a = learner.learn(state, batch, jax.random.key(2), hp)[1]["critic_loss"]
    b = learner.learn(state, other, jax.random.key(2), hp)[1]["critic_loss"]
    np.testing.assert_array_equal(a, b)


def _energy_and_loss_cases():
    """Every energy x loss; the default run takes each energy once and each loss once (paired in
    sorted order), the slow run the rest."""
    energies, losses = sorted(contrastive.ENERGIES), sorted(contrastive.LOSSES)
    paired = set(zip(energies, losses, strict=False))
    return [
        (e, loss) if (e, loss) in paired else pytest.param(e, loss, marks=pytest.mark.slow)
        for e in energies
        for loss in losses
    ]


@pytest.mark.parametrize("energy, loss", _energy_and_loss_cases())
def test_every_energy_and_loss_learns_a_finite_step(energy, loss):
    learner = _learner(energy=energy, contrastive_loss=loss, actor_goal_shuffle=0.5)
    hp = crl.CRLHparams()
    state = learner.init(jax.random.key(0), hp)
    new, metrics = jax.jit(learner.learn)(state, _batch(jax.random.key(1)), jax.random.key(2), hp)
    assert all(np.isfinite(v) for v in jax.tree.leaves(metrics))
    changed = jax.tree.map(
        lambda a, b: bool(jnp.any(a != b)), state.critic["phi"], new.critic["phi"]
    )
    assert any(jax.tree.leaves(changed))
    # The cosine scale is learned only where it is used.
    moved = bool(new.critic["log_scale"] != state.critic["log_scale"])
    assert moved == (energy == "cosine")
    np.testing.assert_allclose(jnp.exp(state.critic["log_scale"]), 1 / 0.07, rtol=1e-6)


def test_residual_encoders_have_blocks_of_four_layers():
    net = crl.DeepMLP(8, 9, 4, "silu", layer_norm=True, residual=True)
    params = net.init(jax.random.key(0), jnp.zeros((1, 3)))
    dense = [k for k in params["params"] if k.startswith("Dense")]
    norms = [k for k in params["params"] if k.startswith("LayerNorm")]
    assert len(dense) == 10 and len(norms) == 9  # 9 hidden layers and the output layer
    out = net.apply(params, jnp.ones((5, 3)))
    assert out.shape == (5, 4) and bool(jnp.all(jnp.isfinite(out)))


# ----------------------------------------------------------------------------- batching
@pytest.mark.slow
def test_a_vmap_over_seeds_and_penalties_equals_separate_runs():
    agent = tiny()
    seeds = jax.random.split(jax.random.key(7), 3)
    penalties = (0.0, 0.1)
    keys = jnp.concatenate([seeds, seeds])
    hp = crl.CRLHparams(logsumexp_coeff=jnp.repeat(jnp.array(penalties), 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    states = driver.init_batch(agent, keys, hp, hparams_axis=0)
    states, metrics = run(agent, states, hp, agent.config.num_updates, 0)
    one = jax.jit(driver.run, static_argnums=(0, 3))
    for i in range(6):
        hp_i = crl.CRLHparams(logsumexp_coeff=penalties[i // 3])
        state = agent.init(keys[i], hp_i)
        state, m = one(agent, state, hp_i, agent.config.num_updates)
        for a, b in zip(
            jax.tree.leaves(state.learner), jax.tree.leaves(states.learner), strict=True
        ):
            np.testing.assert_allclose(a, b[i], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(
            m["losses/critic_loss"], metrics["losses/critic_loss"][i], rtol=1e-6, atol=1e-6
        )
    # The runs differ: by seed, and by penalty with the same seed.
    loss = np.asarray(metrics["losses/critic_loss"])[:, -1]
    assert len(set(np.round(loss, 6))) == 6


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "field, value, match",
    [
        ("energy", "euclid", r"CRLConfig.energy must be one of 'norm', 'l2sq', 'dot', 'cosine'"),
        ("contrastive_loss", "ce", r"CRLConfig.contrastive_loss must be one of 'forward'"),
        ("batch_size", 1, r"CRLConfig.batch_size must be >= 2"),
        ("gamma", 1.0, r"CRLConfig.gamma must be in \(0, 1\)"),
        ("gamma", 0.0, r"CRLConfig.gamma must be in \(0, 1\)"),
        ("depth", 4, r"CRLConfig.depth=4: residual"),
        ("actor_goal_shuffle", 1.5, r"CRLConfig.actor_goal_shuffle must be in \[0, 1\]"),
    ],
)
def test_bad_config_is_refused_naming_the_field(field, value, match):
    extra = {"residual": True} if field == "depth" else {}
    with pytest.raises(ValueError, match=match):
        crl.CRLConfig(**{**TINY, field: value, **extra})


def test_crl_has_no_td_fields_and_reads_records_that_named_them():
    # CRL learns no TD target: its config is the loop's (ReplayConfig) without n_step and
    # normalize_observations, and the loop stores one-step items of raw observations for it.
    fields = {f.name for f in dataclasses.fields(crl.CRLConfig)}
    assert not fields & {"n_step", "normalize_observations"}
    assert not hasattr(crl.CRLHparams(), "gamma") and not hasattr(crl.CRLHparams(), "reward_scale")
    assert tiny().env_steps_per_update == TINY["num_envs"]
    # A record written while it had them (n_step=1, normalize_observations=False) reads back;
    # one that held another value is refused by name; what is recorded still names them.
    algo = registry.get("crl")
    recorded = config_dict(crl.CRLConfig(**TINY))
    assert recorded["n_step"] == 1 and recorded["normalize_observations"] is False
    assert runs.config_of(algo, recorded) == crl.CRLConfig(**TINY)
    with pytest.raises(UsageError, match=r"CRLConfig has no field n_step .* n_step=3"):
        runs.config_of(algo, {**recorded, "n_step": 3})


def test_a_buffer_too_small_for_one_episode_is_refused():
    with pytest.raises(ValueError, match=r"capacity=40 is below max_episode_steps=50"):
        tiny(buffer_size=4 * 40)


def test_goal_indices_outside_the_state_are_refused_before_tracing():
    class Broken(PointReach):
        goal_indices = (0, 5)

    with pytest.raises(ValueError, match="goal_indices"):
        crl.make(crl.CRLConfig(**TINY), Broken(), None)

    class Short(PointReach):
        goal_indices = (0,)

    with pytest.raises(ValueError, match="goal_indices"):
        crl.make(crl.CRLConfig(**TINY), Short(), None)


def test_energy_and_loss_passed_in_must_be_functions():
    env, params = point_reach()
    with pytest.raises(TypeError, match="energy must be a function"):
        crl.make(crl.CRLConfig(**TINY), env, params, energy="norm")


# ----------------------------------------------------------------------------- learning
def _train_and_evaluate(num_seeds=3, **make_kwargs):
    """The tuned goal/point_reach run for `num_seeds` vmapped seeds; per seed the share of 64
    greedy episodes with a success step and their mean number of steps near the goal (the
    sparse reward: a return > 0 is a success, the return is the time near the goal)."""
    env, params = point_reach()
    entry = tuned.tuned("crl", "goal/point_reach")
    agent = crl.make(crl.CRLConfig(**entry["config"]), env, params, **make_kwargs)
    hp = crl.CRLHparams(**entry["hparams"])
    keys = jax.random.split(jax.random.key(0), num_seeds)
    states = driver.init_batch(agent, keys, hp)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    states, metrics = run(agent, states, hp, agent.config.num_updates)
    assert agent.config.num_updates * agent.env_steps_per_update == 64_000
    result = driver.evaluate_batch(agent, states, jax.random.key(1), 64)
    returns = np.asarray(result.returns)
    return (returns > 0).mean(axis=1), returns.mean(axis=1), metrics


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_crl_reaches_goals_on_point_reach():
    # Calibration (2 cores, 3 seeds): success_any 0.98 / 1.00 / 1.00, 32.7 / 32.6 / 33.8 of
    # 50 steps near the goal; a uniform-random policy: 0.08 and 0.33.
    success, near, metrics = _train_and_evaluate()
    assert success.mean() >= 0.9, success
    assert near.mean() >= 25, near
    accuracy = np.asarray(metrics["losses/categorical_accuracy"])[:, -100:].mean()
    assert accuracy > 4 / 256  # well above chance among 256 goals


def _goals_from_another_row(key, batch):
    """A negative control: each transition paired with another row's future state (almost
    always another episode's)."""
    return {**batch, "future_obs": jnp.roll(batch["future_obs"], 1, axis=0)}


def _sigmoid_nce(logits):
    """A negative control: binary NCE written as -mean(sigmoid(logits)) (no labels)."""
    return -jnp.mean(jax.nn.sigmoid(logits))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "control", [{"relabel": _goals_from_another_row}, {"loss": _sigmoid_nce}], ids=["goals", "nce"]
)
def test_negative_controls_do_not_learn(control):
    success, near, _ = _train_and_evaluate(num_seeds=2, **control)
    assert success.mean() < 0.2, success


def test_config_fields_are_flags_of_the_family():
    fields = {f.name for f in dataclasses.fields(crl.CRLConfig)}
    assert {"energy", "contrastive_loss", "width", "depth", "layer_norm", "residual"} <= fields
    assert crl.CRLConfig().update_to_data == 4 / 64
