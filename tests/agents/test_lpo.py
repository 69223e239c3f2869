"""LPO (`rlsuite.agents.lpo`): the drift network's guarantees (0 at ratio 1, never negative, its
features by hand), PPO recovered when the inner run is given PPO's clip as its drift, the outer
loop's ES step against evosax's own ask/tell on a quadratic, the command line with a resume that
ends where the uninterrupted run does, bad input refused by name, the learned drift as an
ordinary PPO run's policy loss (`--drift RUN_DIR`) with its resume and refusals, and (slow) an
outer loop that improves its population's fitness beside a control whose ES does not move."""

import dataclasses
import json
import re
import shutil
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import lpo, lpo_tasks, ppo, registry
from rlsuite.app import cli
from rlsuite.loop.loggers import read_metrics
from rlsuite.ops import losses

pytest.importorskip("evosax", reason='evosax is missing (the lpo extra: pip install -e ".[lpo]")')

SMALL = dict(num_envs=4, num_steps=16, num_minibatches=2, update_epochs=2, inner_timesteps=128)


def _drift(temporal=False, key=0):
    net = lpo.DriftNet(16)
    params = net.init(jax.random.key(key), jnp.zeros((1, 16 if temporal else 8)))
    return net, params


def test_the_features_by_hand_and_the_drift_vanishes_at_ratio_one():
    r, a = 1.5, -2.0
    got = lpo.drift_features(jnp.array([r]), jnp.log(jnp.array([r])), jnp.array([a]))[0]
    base = [0.5, np.log(1.5), 0.25, np.log(1.5) ** 2]
    np.testing.assert_allclose(got, base + [b * a for b in base], rtol=1e-6)
    timed = lpo.drift_features(jnp.array([r]), jnp.log(jnp.array([r])), jnp.array([a]), 0.25)
    np.testing.assert_allclose(timed[0], list(got) + [0.25 * g for g in got], rtol=1e-6)
    for temporal in (False, True):
        net, params = _drift(temporal)
        for progress in (0.0, 0.7):
            drift = lpo.learned_drift(net, params, temporal, progress)
            ratio = jnp.linspace(0.2, 3.0, 57)
            adv = jnp.linspace(-3.0, 3.0, 57)
            d = drift(ratio, jnp.log(ratio), adv, 0.2)
            assert (d >= 0).all() and (d > 0).any()
            at_one = drift(jnp.ones(5), jnp.zeros(5), jnp.linspace(-2, 2, 5), 0.2)
            np.testing.assert_array_equal(at_one, np.zeros(5))
            slope = jax.grad(lambda r, d=drift: d(r[None], jnp.log(r)[None], jnp.ones(1), 0.2)[0])
            assert float(slope(jnp.float32(1.0))) == 0.0


def test_the_temporal_drift_reads_the_progress():
    net, params = _drift(temporal=True, key=3)
    ratio, adv = jnp.array([1.4, 0.6]), jnp.array([1.0, -1.0])
    early = lpo.learned_drift(net, params, True, 0.0)(ratio, jnp.log(ratio), adv, 0.2)
    late = lpo.learned_drift(net, params, True, 1.0)(ratio, jnp.log(ratio), adv, 0.2)
    assert not np.allclose(early, late)
    net, params = _drift(temporal=False, key=3)  # without `temporal`, the progress is unread
    np.testing.assert_array_equal(
        lpo.learned_drift(net, params, False, 0.0)(ratio, jnp.log(ratio), adv, 0.2),
        lpo.learned_drift(net, params, False, 1.0)(ratio, jnp.log(ratio), adv, 0.2),
    )


def test_given_ppos_clip_as_its_drift_the_inner_run_is_ppo():
    env, params = envs.make("cartpole")
    config = lpo.LPOConfig(**SMALL, population_size=2)
    agent = lpo.make(config, env, params)
    setup, hp, key = agent.update.args[0], ppo.PPOHparams(), jax.random.key(4)
    state, fitness, metrics = jax.jit(
        lambda k: lpo.inner_run(setup, lambda progress: losses.ppo_drift, k, hp)
    )(key)
    # PPO itself, from the key the inner run starts from, for its updates.
    inner = lpo.inner_config(config)
    assert inner.num_updates == config.inner_updates == 2 and isinstance(inner, ppo.PPOConfig)
    key_init, _ = jax.random.split(key)
    for policy_loss, exact in (
        (losses.drift_policy_loss(losses.ppo_drift), True),
        (losses.ppo_policy_loss, False),
    ):
        agent_ppo = ppo.make(inner, env, params, policy_loss=policy_loss)
        ours = agent_ppo.init(key_init, hp)
        for _ in range(inner.num_updates):
            ours, _ = jax.jit(agent_ppo.update)(ours, hp)
        for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(ours.params), strict=True):
            if exact:
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert 0 < float(fitness) <= 500 and "losses/drift" in metrics


def _quadratic(setup, params, key, hp):
    """A fitness in place of an inner run: `-sum (w - 0.1)^2` over the drift's weights."""
    del key
    flat = jax.flatten_util.ravel_pytree(params)[0]
    state = ppo.init(setup.inner, jax.random.key(0), hp)
    return state, -jnp.sum((flat - 0.1) ** 2), {}


def test_the_es_step_is_evosaxs_ask_and_tell_on_a_quadratic():
    """Our generations against evosax's own loop (its README's: ask, evaluate, tell) with the
    same keys and the fitness negated (evosax minimises); both drive the mean to the optimum."""
    import jax.flatten_util  # noqa: F401  (the quadratic ravels the weights)

    env, params = envs.make("cartpole")
    config = lpo.LPOConfig(
        **SMALL, population_size=8, drift_hidden=2, es_learning_rate=0.05, es_sigma=0.1
    )
    agent = lpo.make(config, env, params, inner=_quadratic)
    hp = agent.default_hparams
    state = jax.jit(agent.init)(jax.random.key(1), hp)
    strategy = agent.update.args[0].strategy
    es, key = state.es, state.key
    update = jax.jit(agent.update)
    for _ in range(60):
        state, metrics = update(state, hp)
        key, key_ask, _, key_tell = jax.random.split(key, 4)
        population, es = strategy.ask(key_ask, es, strategy.default_params)
        flat = jax.vmap(lambda p: jax.flatten_util.ravel_pytree(p)[0])(population)
        fitness = jnp.sum((flat - 0.1) ** 2, axis=1)  # evosax's sign: lower is better
        es, _ = strategy.tell(key_tell, population, fitness, es, strategy.default_params)
        np.testing.assert_allclose(state.es.mean, es.mean, rtol=1e-6, atol=1e-7)
    start = jnp.sum((jax.jit(agent.init)(jax.random.key(1), hp).es.mean - 0.1) ** 2)
    assert float(jnp.sum((state.es.mean - 0.1) ** 2)) < 0.2 * float(start)
    assert float(metrics["lpo/mean_fitness"]) > -0.2 * float(start)


def test_the_command_line_trains_lpo_and_resumes_it_bitwise(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "lpo", "--env", "cartpole", "--total-timesteps", "1536"]
    args += ["--population-size", "2", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--update-epochs", "2", "--inner-timesteps", "128"]
    args += ["--drift-hidden", "8"]
    args += ["--temporal", "--fitness-episodes", "2", "--eval-episodes", "2", "--chunks", "2"]
    assert cli.main([*args, "--no-progress", "--out", str(out)]) == 0
    assert "training lpo on cartpole" in capsys.readouterr().out
    record = json.loads((out / "config.json").read_text())
    assert record["algo"] == "lpo" and record["config"]["temporal"] is True
    rows = read_metrics(out)
    # Each generation: 3 inner runs (2 members and the mean) of 2 PPO updates of 64 steps.
    assert [r["env_steps"] for r in rows] == [384, 768, 1152, 1536]
    assert all(r["lpo/fitness_min"] <= r["lpo/fitness_max"] for r in rows)
    killed = tmp_path / "killed"
    shutil.copytree(out, killed)
    shutil.rmtree(max((killed / "checkpoints").iterdir(), key=lambda p: int(p.name)))
    (killed / "final.json").unlink()
    assert cli.main(["train", "--resume", str(killed), "--no-progress"]) == 0
    assert read_metrics(killed) == rows
    final, again = (json.loads((d / "final.json").read_text()) for d in (out, killed))
    assert final["eval_return_per_seed"] == again["eval_return_per_seed"]
    capsys.readouterr()
    for flags, said in [
        (["--population-size", "3"], "LPOConfig.population_size=3 must be even"),
        (["--es-sigma", "0"], "invalid config.es_sigma=0.0; allowed: a value > 0"),
        (["--es-learning-rate", "-1"], "config.es_learning_rate=-1.0; allowed: a value >= 0"),
        (["--inner-timesteps", "0"], "LPOConfig.inner_timesteps must be an integer >= 1"),
    ]:
        bad = tmp_path / "bad"
        with pytest.raises(SystemExit) as refused:
            cli.main(["train", "lpo", *flags, "--out", str(bad)])
        assert refused.value.code == 2 and not bad.exists()
        err = " ".join(re.sub(r"[│╭╮╰╯─]", " ", capsys.readouterr().err).split())
        assert said in err, err


def _levelled(curriculum):
    """LPO over meta/bandit's levels (bandits: arm probabilities), 2 per generation, its first
    generation run, and what it started from: `(setup, state, next state, metrics, hp, the
    inner key, the ES mean)`."""
    env, params = envs.make("meta/bandit")
    config = lpo.LPOConfig(
        **SMALL, population_size=2, drift_hidden=8, num_tasks=2, curriculum=curriculum,
        buffer_capacity=4,
    )  # fmt: skip
    setup = lpo.prepare(config, env, params)
    hp = ppo.PPOHparams(learning_rate=0.05)  # large steps: the clip and the drift differ
    state = jax.jit(lambda k: lpo.init(setup, k, hp))(jax.random.key(0))
    after, metrics = jax.jit(lambda s: lpo.update(setup, s, hp))(state)
    key_inner = jax.random.split(state.key, 4)[2]
    mean = setup.strategy.get_mean(state.es)  # (ask leaves the mean as it was)
    return setup, state, after, metrics, hp, key_inner, mean


def _alone(setup, drift, key, hp, tasks):
    """Each level's inner run of `drift` alone, in its own program."""

    @jax.jit
    def on(task):
        at = setup._replace(inner=setup.inner._replace(env_params=task))
        return lpo.train_and_evaluate(at, drift, key, hp)[1]

    return np.array([float(on(jax.tree.map(lambda x, i=i: x[i], tasks))) for i in range(2)])


def test_over_a_task_distribution_a_members_fitness_is_the_mean_over_the_drawn_levels():
    # By hand: the levels drawn from the generation's inner key, the ES mean's run on each
    # alone, averaged.
    setup, _, after, metrics, hp, key_inner, mean = _levelled("dr")
    levels, tasks = lpo_tasks.drawn(setup, jax.random.fold_in(key_inner, 1))
    assert not np.allclose(levels.probs[0], levels.probs[1])
    alone = _alone(setup, mean, key_inner, hp, tasks)
    assert alone[0] != alone[1]  # the levels make a difference
    np.testing.assert_allclose(float(metrics["lpo/mean_fitness"]), alone.mean(), rtol=1e-6)
    assert after.levels is None  # domain randomisation keeps no state
    # A generation is (population + 1) x num_tasks inner runs.
    assert setup.config.generation_steps == 3 * 2 * 2 * 64
    with pytest.raises(ValueError, match=r"num_tasks=2: CartPole has no levels to draw tasks"):
        lpo.make(setup.config, *envs.make("cartpole"))
    with pytest.raises(ValueError, match=r"invalid config.num_tasks=-1; allowed: a value >= 0"):
        lpo.LPOConfig(num_tasks=-1)
    with pytest.raises(ValueError, match=r"curriculum='plr'; allowed: dr, groove"):
        lpo.LPOConfig(num_tasks=2, curriculum="plr")
    with pytest.raises(ValueError, match=r"num_tasks=0 must be >= 1 and at most buffer_capacity"):
        lpo.LPOConfig(curriculum="groove")


@pytest.mark.slow
def test_groove_scores_the_levels_by_algorithmic_regret_against_ppos_clip():
    # The first generation: the buffer is empty, so it draws new levels and stores them with
    # their regret, PPO's fitness on each minus the ES mean's drift's, each by hand alone.
    setup, state, after, metrics, hp, key_inner, mean = _levelled("groove")
    assert int(state.levels.size) == 0
    levels, tasks = lpo_tasks.drawn(setup, jax.random.split(jax.random.fold_in(key_inner, 1), 3)[2])
    drift = _alone(setup, mean, key_inner, hp, tasks)
    # PPO: the inner run given PPO's clip as its drift.
    at_clip = setup._replace(
        inner_run=lambda s, _, k, h: lpo.inner_run(s, lambda p: losses.ppo_drift, k, h)
    )
    ppo_fit = np.array(lpo.on_levels(at_clip, None, key_inner, hp, tasks)[1])
    regret = ppo_fit - drift
    assert np.any(regret != 0), (ppo_fit, drift)  # the two algorithms differ on these levels
    assert int(after.levels.size) == 2 and float(metrics["lpo/replayed"]) == 0.0
    np.testing.assert_allclose(after.levels.scores[:2], regret, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(after.levels.levels.probs[:2], levels.probs)
    np.testing.assert_allclose(float(metrics["lpo/regret"]), regret.mean(), rtol=1e-5, atol=1e-6)


def test_groove_replays_a_warm_buffer_when_the_draw_says_so_and_draws_new_levels_otherwise():
    from rlsuite.data import level_buffer

    env, params = envs.make("meta/bandit")
    config = lpo.LPOConfig(**SMALL, num_tasks=2, curriculum="groove", buffer_capacity=4)
    setup = lpo.prepare(config, env, params)
    stored = jax.vmap(setup.levels.generate)(jax.random.split(jax.random.key(5), 2))
    empty = lpo_tasks.GROOVE.init(setup, jax.random.key(0))
    full, _ = level_buffer.insert_batch(
        empty, stored, jnp.array([1.0, 2.0]), None, lpo_tasks.REPLAY
    )  # half full: warm at PLR's minimum fill of 0.5
    known = np.asarray(stored.probs)
    outcomes = set()
    for k in range(12):
        _, tasks, (replay, _, levels) = lpo_tasks.GROOVE.choose(setup, full, jax.random.key(k))
        np.testing.assert_array_equal(tasks.params.probs, levels.probs)  # the levels' params
        old = [any(np.allclose(level, s) for s in known) for level in np.asarray(levels.probs)]
        assert all(old) if replay else not any(old)
        outcomes.add(bool(replay))
    assert outcomes == {True, False}
    # An empty buffer never replays.
    assert not any(
        bool(lpo_tasks.GROOVE.choose(setup, empty, jax.random.key(k))[2][0]) for k in range(6)
    )
    # The score: the antagonist's return minus the learned algorithm's.
    np.testing.assert_array_equal(
        lpo_tasks.algorithmic_regret(jnp.array([5.0, 2.0]), jnp.array([3.0, 4.0])), [2.0, -2.0]
    )


@pytest.mark.slow
def test_a_groove_run_resumes_bitwise_with_its_level_buffer(tmp_path):
    from tests.topics.test_resume import resumes_in_process

    out = tmp_path / "run"
    args = ["train", "lpo", "--env", "meta/bandit", "--num-tasks", "2", "--curriculum", "groove"]
    args += ["--buffer-capacity", "4", "--total-timesteps", "6144", "--population-size", "2"]
    args += ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2"]
    args += ["--update-epochs", "2", "--inner-timesteps", "128", "--drift-hidden", "8"]
    args += ["--learning-rate", "0.05", "--fitness-episodes", "2", "--eval-episodes", "2"]
    assert cli.main([*args, "--chunks", "4", "--no-progress", "--out", str(out)]) == 0
    rows = read_metrics(out)
    assert len(rows) == 8 and any(r["lpo/replayed"] == 1.0 for r in rows)
    assert any(r["lpo/regret"] != 0.0 for r in rows)
    resumes_in_process(out, tmp_path)


def test_the_learned_drift_trains_ordinary_ppo_from_the_command_line(tmp_path, capsys):
    # An LPO run of 2 generations, then PPO (and DPO) with its ES mean's drift as the policy loss.
    lpo_run = tmp_path / "lpo"
    args = ["train", "lpo", "--env", "cartpole", "--total-timesteps", "768"]
    args += ["--population-size", "2", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--update-epochs", "2", "--inner-timesteps", "128"]
    args += ["--drift-hidden", "8", "--fitness-episodes", "2", "--eval-episodes", "2"]
    assert cli.main([*args, "--chunks", "2", "--no-progress", "--out", str(lpo_run)]) == 0
    # The drift the flag loads: the ES mean of the first run, unravelled, as lpo.drift_loss takes.
    from rlsuite.app import runs

    record = runs.read_record(lpo_run)
    states, _ = runs.restore(lpo_run, record, runs.build(record))
    state = jax.tree.map(lambda x: x[0], states)
    params = lpo.mean_drift(record.config, state)
    np.testing.assert_array_equal(jax.flatten_util.ravel_pytree(params)[0], state.es.mean)
    ratio, adv = jnp.array([1.3, 0.7]), jnp.array([1.0, -2.0])
    log_prob, old = jnp.log(ratio), jnp.zeros(2)
    loss, _ = runs.load_drift(str(lpo_run))[0](log_prob, old, adv, 0.2)
    drift = lpo.learned_drift(lpo.DriftNet(8), params, False, None)(ratio, jnp.log(ratio), adv, 0.2)
    np.testing.assert_allclose(loss, -jnp.mean(ratio * adv - drift), rtol=1e-6)

    ppo_args = ["train", "ppo", "--env", "cartpole", "--total-timesteps", "512", "--num-envs", "4"]
    ppo_args += ["--num-steps", "32", "--num-minibatches", "2", "--hidden-sizes", "8"]
    ppo_args += ["--learning-rate", "0.01", "--eval-episodes", "2", "--chunks", "2"]
    plain, learned = tmp_path / "plain", tmp_path / "learned"
    assert cli.main([*ppo_args, "--no-progress", "--out", str(plain)]) == 0
    flags = [*ppo_args, "--drift", str(lpo_run), "--no-progress"]
    assert cli.main([*flags, "--out", str(learned)]) == 0
    record = json.loads((learned / "config.json").read_text())
    assert record["drift"] == str(lpo_run.resolve()) and len(record["drift_sha256"]) == 64
    rows = read_metrics(learned)
    assert rows != read_metrics(plain)  # the learned drift, not the clip
    # Killed before its last checkpoint, it resumes to the same rows, the drift loaded again.
    killed = tmp_path / "killed"
    shutil.copytree(learned, killed)
    shutil.rmtree(max((killed / "checkpoints").iterdir(), key=lambda p: int(p.name)))
    (killed / "final.json").unlink()
    again = tmp_path / "again"
    shutil.copytree(killed, again)
    assert cli.main(["train", "--resume", str(killed), "--no-progress"]) == 0
    assert read_metrics(killed) == rows
    dpo_args = ["train", "dpo", *ppo_args[2:], "--drift", str(lpo_run), "--no-progress"]
    assert cli.main([*dpo_args, "--out", str(tmp_path / "dpo")]) == 0
    capsys.readouterr()
    # Refused by name, before anything is written: a family without a policy loss, a run that
    # is not LPO's, a directory with no run, a temporally-aware drift.
    timed = tmp_path / "timed"  # the run's record says temporal: refused before any restore
    shutil.copytree(lpo_run, timed)
    record = json.loads((timed / "config.json").read_text())
    record["config"]["temporal"] = True
    (timed / "config.json").write_text(json.dumps(record))
    sac = ["train", "sac", "--env", "pendulum", "--drift", str(lpo_run)]
    for words, said in [
        (sac, "--drift: sac takes no policy loss; the families that do: ppo, dpo, fixpo"),
        ([*ppo_args, "--drift", str(plain)], "a run of rlsuite train lpo, not of ppo"),
        ([*ppo_args, "--drift", str(tmp_path / "none")], "holds no run"),
        ([*ppo_args, "--drift", str(timed)], "reads the inner run's progress"),
    ]:
        bad = tmp_path / "bad"
        assert cli.main([*words, "--out", str(bad)]) == 2
        assert said in capsys.readouterr().err and not bad.exists()
    # The LPO run's drift changed since the PPO run started (here its last checkpoint is gone,
    # so the one before is the latest): the PPO run's resume is refused, and it keeps its files.
    shutil.rmtree(max((lpo_run / "checkpoints").iterdir(), key=lambda p: int(p.name)))
    assert cli.main(["train", "--resume", str(again), "--no-progress"]) == 2
    assert "changed since the run started" in capsys.readouterr().err
    assert read_metrics(again) == rows[: len(read_metrics(again))]


def test_without_evosax_make_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "evosax", None)
    monkeypatch.setitem(sys.modules, "evosax.algorithms", None)
    env, params = envs.make("cartpole")
    with pytest.raises(ValueError, match=re.escape('pip install -e ".[lpo]"')):
        lpo.make(lpo.LPOConfig(**SMALL), env, params)
    with pytest.raises(TypeError, match="lpo.make needs an LPOConfig"):
        lpo.make(ppo.PPOConfig(), env, params)
    assert registry.get("lpo").make is lpo.make


@pytest.mark.slow
def test_the_outer_loop_improves_its_populations_fitness_beside_a_frozen_control():
    """The tuned CartPole entry's inner runs (8 envs x 64 steps, 30 PPO updates of 8 epochs at
    learning rate 0.01) and population (16), 6 generations from one key. Measured on the CI
    machine (2 cores): the population's mean fitness 54.8, 99.6, 179.5, 285.3, 298.6 and 335.7;
    the control (es_learning_rate 0, the same keys) 54.8, 44.6, 26.8, 63.3, 41.6 and 53.7.
    Asserted: the last two generations' mean fitness at least twice the first's (110), the
    control's below that."""
    from rlsuite.app.tuned import tuned

    entry = tuned("lpo", "cartpole")
    env, params = envs.make("cartpole")
    hp = ppo.PPOHparams(**entry["hparams"])

    def fitness(**fields):
        config = lpo.LPOConfig(**entry["config"], **fields)
        config = dataclasses.replace(config, total_timesteps=6 * config.generation_steps)
        agent = lpo.make(config, env, params)
        state = jax.jit(agent.init)(jax.random.key(0), hp)
        update, curve = jax.jit(agent.update), []
        for _ in range(config.num_updates):
            state, metrics = update(state, hp)
            curve.append(float(metrics["lpo/fitness_mean"]))
        return np.array(curve)

    learned, frozen = fitness(), fitness(es_learning_rate=0.0)
    print({"learned": learned.round(1), "frozen": frozen.round(1)})
    assert learned[-2:].mean() >= 2 * learned[0], learned
    assert frozen[-2:].mean() < 2 * learned[0], frozen
