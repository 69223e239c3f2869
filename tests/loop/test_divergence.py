"""Diverged runs (rlsuite.loop.divergence): found per run, located at their update, reported in
the terminal, the metrics, the checkpoints and final.json, while the other runs of the batch end
as they do alone; strict JSON in every file; sweeps, populations and stats rank them last."""

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.app import cli, stats, sweep
from rlsuite.app.batches import Sweep
from rlsuite.loop import checkpoint
from rlsuite.loop.divergence import DIVERGED, EXIT_DIVERGED, Divergence, finite_check, located
from rlsuite.loop.files import json_text
from rlsuite.loop.loggers import read_metrics
from rlsuite.loop.population import PBT, Member
from tests import fitting

CONFIG = ppo.PPOConfig(num_envs=4, num_steps=16, num_minibatches=2, total_timesteps=4 * 64)
WILD = ppo.PPOHparams(learning_rate=50.0)  # Adam's first step moves every weight by ~50
TAME = ppo.PPOHparams()
TIMING = ("wall_seconds", "compile_seconds", "env_steps_per_second")


def strict_load(text: str):
    """json.loads that refuses NaN and Infinity, as a strict JSON parser does."""

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def stacked(*hparams):
    return jax.tree.map(lambda *v: jnp.stack([jnp.asarray(x) for x in v]), *hparams)


@pytest.fixture(scope="module")
def agent():
    env, params = envs.make("pendulum")
    return ppo.make(CONFIG, env, params)


def fit(agent, out_dir, hparams, **kwargs):
    options = dict(chunk_updates=2, env_name="pendulum", eval_episodes=2, progress=False)
    return fitting.fit(
        agent, jax.random.key(0), hparams=hparams, out_dir=out_dir, **{**options, **kwargs}
    )  # fmt: skip


@pytest.fixture(scope="module")
def batch(agent, tmp_path_factory):
    """Two configurations x two seeds: learning rate 50 (runs 0, 1), the default (runs 2, 3)."""
    out = tmp_path_factory.mktemp("batch")
    hparams = stacked(WILD, WILD, TAME, TAME)
    return out, fit(agent, out, hparams, num_seeds=4, hparams_axis=0, seeds_per_config=2)


def test_two_of_four_runs_diverge_and_the_other_two_end_as_they_do_alone(
    agent, batch, tmp_path, capfd
):
    out, result = batch
    summary = strict_load((out / "final.json").read_text())
    # Learning rate 50: Adam's first step moves every weight by about 50 (lr * m / sqrt(v) is
    # lr * sign(g) at step 1), and within an update or two the Gaussian's log-std and the values
    # overflow.
    at = summary["diverged_at_update"]
    assert at[2:] == [None, None] and all(u in (1, 2) for u in at[:2])
    assert summary["diverged_seeds"] == [0, 1]
    names = [k for k in result.metrics if k.startswith("losses/")]
    bad = np.any([~np.isfinite(result.metrics[k]) for k in names], axis=0)  # [runs, updates]
    for run in (0, 1):
        first = int(np.argmax(bad[run])) + 1  # the first update whose losses are not finite
        assert bad[run, first - 1 :].all()
        # That update, or where the parameters broke in a chunk's last update (its losses,
        # computed before each step, still finite), that update: chunks are 2 updates here.
        assert at[run] == first or (at[run] == first - 1 and at[run] % 2 == 0)
    assert not bad[2:].any()
    losses = result.metrics["losses/value_loss"]
    assert summary["eval_return_per_seed"][:2] == [None, None]

    alone = fit(agent, tmp_path, TAME, num_seeds=2)  # the same keys: seeds 0 and 1 of it alone
    assert "diverged_at_update" not in alone.summary
    returns = alone.eval_returns.mean(1)  # to float tolerance: a batch of 4, not of 2
    np.testing.assert_allclose(summary["eval_return_per_seed"][2:], returns, rtol=1e-4)
    assert summary["eval_return_mean"] == pytest.approx(alone.summary["eval_return_mean"], 1e-4)
    np.testing.assert_allclose(losses[2:], alone.metrics["losses/value_loss"], rtol=1e-4)
    # Every row of the diverged runs says so; the others' rows say 0 and hold their values.
    rows = read_metrics(out)
    for run in (0, 1):
        marks = [(r["env_steps"] // 64, r[DIVERGED]) for r in rows if r["seed"] == run]
        assert marks == [(u, float(u >= at[run])) for u in range(1, 5)]
    assert {r[DIVERGED] for r in rows if r["seed"] >= 2} == {0.0}
    assert all(DIVERGED not in r for r in read_metrics(tmp_path))
    kept = [r["charts/episodic_return"] for r in rows if r["seed"] >= 2]
    ran = [r["charts/episodic_return"] for r in read_metrics(tmp_path)]
    np.testing.assert_allclose(kept, ran, rtol=1e-4)
    assert result.metrics[DIVERGED].shape == losses.shape
    # Strict JSON in every file the run wrote (final.json was read strictly above).
    for line in (out / "metrics.jsonl").read_text().splitlines():
        strict_load(line)


def test_the_terminal_names_each_diverged_run_once(agent, tmp_path, capfd):
    fit(agent, tmp_path, stacked(WILD, TAME), num_seeds=2, hparams_axis=0)
    err = capfd.readouterr().err
    assert err.count("diverged") == 1
    assert re.search(
        r"rlsuite: warning: run 0 diverged at update (\d) \(env step (\d+)\): its parameters are "
        r"no longer finite numbers; the other run goes on",
        err,
    )


def test_a_resume_reports_the_divergence_its_checkpoint_saw(agent, batch, tmp_path, monkeypatch):
    full_dir, full = batch
    save = checkpoint.save

    def dying_save(directory, step, *args, **kwargs):
        if step == 4:
            raise KeyboardInterrupt
        return save(directory, step, *args, **kwargs)

    hparams = stacked(WILD, WILD, TAME, TAME)
    options = dict(num_seeds=4, hparams_axis=0, seeds_per_config=2)
    monkeypatch.setattr(checkpoint, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        fit(agent, tmp_path, hparams, **options)
    monkeypatch.setattr(checkpoint, "save", save)
    at = full.summary["diverged_at_update"]  # both within the first chunk (updates 1 and 2)
    assert checkpoint.read_metadata(tmp_path / "checkpoints")["diverged"] == at
    resumed = fit(agent, tmp_path, hparams, resume=True, **options)
    assert read_metrics(tmp_path) == read_metrics(full_dir)
    ended = {k: v for k, v in resumed.summary.items() if k not in TIMING and "this_call" not in k}
    assert ended == {k: v for k, v in full.summary.items() if k in ended}
    assert resumed.summary["diverged_at_update"] == at


def test_the_update_is_located_by_the_trailing_run_of_losses_that_are_not_finite():
    nan = np.nan
    metrics = {
        "losses/a": np.array(
            [
                [1.0, 2.0, nan, nan],  # diverged at index 2
                [nan, nan, 1.0, 2.0],  # no gradient step yet, then finite: the last index
                [nan, 1.0, nan, nan],  # finite at 1, then not: index 2
                [nan, nan, nan, nan],  # never finite in the chunk: index 0
            ]
        ),
        "losses/b": np.array([[1.0, 1.0, 1.0, 1.0]] * 3 + [[1.0, 1.0, 1.0, np.inf]]),
        "charts/episodic_return": np.full((4, 4), nan),  # not a loss: never read
    }
    assert [located(metrics, run) for run in range(4)] == [2, 3, 2, 0]
    assert located({"charts/x": np.zeros((1, 5))}, 0) == 4  # no losses: the chunk's last update


def test_observe_marks_the_rows_from_the_update_and_forgets_a_replaced_run(capfd):
    tracker = Divergence.start(3, None, steps_per_update=10)
    losses = {"losses/l": np.array([[1.0, 1.0], [1.0, np.nan], [1.0, 1.0]])}
    out = tracker.observe(np.array([True, True, True]), losses, first_update=1)
    assert DIVERGED not in out and not tracker.any
    out = tracker.observe(np.array([True, False, True]), losses, first_update=3)
    assert tracker.at == [None, 4, None]  # updates 3 and 4: the second, whose loss is NaN
    np.testing.assert_array_equal(out[DIVERGED], [[0, 0], [0, 1], [0, 0]])
    assert "seed 1 diverged at update 4 (env step 40)" in capfd.readouterr().err
    out = tracker.observe(np.array([True, False, True]), losses, first_update=5)
    np.testing.assert_array_equal(out[DIVERGED], [[0, 0], [1, 1], [0, 0]])
    assert capfd.readouterr().err == ""  # said once
    # Population-based training copied a finite member over it: it is no longer diverged.
    out = tracker.observe(np.array([True, True, True]), losses, first_update=7)
    assert tracker.at == [None, None, None] and DIVERGED not in out
    resumed = Divergence.start(3, [None, 4, None], steps_per_update=10)
    assert resumed.at == [None, 4, None]


def test_the_summary_leaves_out_the_diverged_runs_results():
    summary = {
        "eval_return_per_seed": [10.0, 30.0, 20.0],
        "eval_return_mean": 20.0,
        "success_rate_per_seed": [1.0, 0.5, 0.0],
        "success_rate_mean": 0.5,
        "levels": {"names": ["a"]},
    }
    assert Divergence.start(3, None, 1).summarize(summary) == summary
    ended = Divergence([None, 7, None]).summarize(summary)
    assert ended["eval_return_per_seed"] == [10.0, None, 20.0]
    assert ended["eval_return_mean"] == 15.0 and ended["success_rate_mean"] == 0.5
    assert ended["diverged_at_update"] == [None, 7, None] and ended["diverged_seeds"] == [1]
    every = Divergence([1, 2, 3]).summarize(summary)
    assert every["eval_return_mean"] is None
    assert cli.exit_status(every) == EXIT_DIVERGED == 3
    assert cli.exit_status(ended) == 0 and cli.exit_status({"summary": every}) == 3
    assert cli.exit_status(None) == 0


def test_the_check_reads_the_trainable_part_only():
    states = {"params": jnp.array([[1.0, 2.0], [jnp.nan, 0.0], [jnp.inf, 1.0]]),
              "scores": jnp.full((3, 4), jnp.nan), "count": jnp.arange(3)}  # fmt: skip
    np.testing.assert_array_equal(finite_check(lambda s: s["params"])(states), [1, 0, 0])
    np.testing.assert_array_equal(finite_check(None)(states), [0, 0, 0])  # the whole state


def test_a_sweep_ranks_a_configuration_with_a_diverged_seed_last():
    configs = [{"learning_rate": 50.0}, {"learning_rate": 1e-3}, {"learning_rate": 3e-4}]
    swept = Sweep(["learning_rate"], configs, 2, "eval_return", "grid")
    summary = {"eval_return_per_seed": [None, 900.0, 100.0, 120.0, 90.0, 80.0]}
    table = sweep.results(swept, summary)
    assert [row["config"]["learning_rate"] for row in table["rows"]] == [1e-3, 3e-4, 50.0]
    assert table["best_index"] == 1
    last = table["rows"][-1]
    assert last["diverged_seeds"] == [0] and np.isnan(last["mean"])
    text = strict_load(json_text(table))  # NaN written as null
    assert text["rows"][-1]["mean"] is None
    assert "diverged (seed 0)" in sweep.markdown(table, "t")


def test_stats_scores_a_diverged_seed_below_every_finished_seed_on_its_task(tmp_path, capsys):
    def run(name, algo, scores, diverged=()):
        path = tmp_path / name
        path.mkdir()
        record = {"algo": algo, "env": "pendulum", "num_seeds": len(scores)}
        (path / "config.json").write_text(json.dumps(record))
        final = {"eval_return_per_seed": scores, "eval_return_mean": 0.0}
        if diverged:
            final |= {"diverged_seeds": list(diverged), "diverged_at_update": [1, None]}
        (path / "final.json").write_text(json.dumps(final))
        return stats.load_run(path)

    a = run("a", "ppo", [None, -300.0], diverged=[0])
    b = run("b", "sac", [-200.0, -700.0])
    scored, notes = stats.below_for_diverged([a, b], "algo,env", "eval_return")
    # finished on pendulum: -300, -200, -700: the range is 500, so -700 - 500
    np.testing.assert_array_equal(scored[0].scores, [-1200.0, -300.0])
    assert notes == [
        f"{a.path}: seed 0 diverged, scored -1200, below the worst eval_return on pendulum "
        "(-700) by its range (500)"
    ]
    # Where every finished seed scored the same, the gap is that score's magnitude (at least 1):
    # a method whose seeds all diverged ranks below the other's worst, never ties it.
    c, d = run("c2", "ppo", [None, None], diverged=[0, 1]), run("d", "sac", [0.0, 0.0])
    scored, _ = stats.below_for_diverged([c, d], "algo,env", "eval_return")
    np.testing.assert_array_equal(scored[0].scores, [-1.0, -1.0])
    e, f = run("e", "ppo", [None, None], diverged=[0, 1]), run("f", "sac", [-50.0, -50.0])
    scored, _ = stats.below_for_diverged([e, f], "algo,env", "eval_return")
    np.testing.assert_array_equal(scored[0].scores, [-100.0, -100.0])
    # The command: the note on the terminal and in stats.md, and (scores not normalised) the
    # warning that the optimality gap is no gap to an optimum.
    written = stats.report([a.path, b.path], tmp_path / "stats", reps=10)
    err = capsys.readouterr().err
    assert f"rlsuite stats: note: {notes[0]}" in err
    assert "optimality gap compares scores with 1" in err
    assert (
        f"Diverged: {notes[0]}." in written["markdown"]
        and "Warning: the optimality" in (written["markdown"])
    )
    assert strict_load((tmp_path / "stats" / "stats.json").read_text())["diverged"] == notes
    everything = run("c", "td3", [None, None], diverged=[0, 1])
    with pytest.raises(ValueError, match="every seed on task pendulum diverged"):
        stats.below_for_diverged([everything], "algo,env", "eval_return")


@struct.dataclass
class Hp:
    lr: jnp.ndarray


def test_a_population_member_that_diverged_ranks_last():
    pbt = PBT(fields=("lr",), low=(1e-4,), high=(1.0,), log=(True,), members=4, resample=0.0)
    states = Member(state={"w": jnp.arange(4.0)}, hparams=Hp(lr=jnp.full(4, 1e-2)))
    # Member 2 earned the most in the chunk, but its parameters are no longer finite.
    metrics = {
        "charts/episodic_return": np.array([[1.0], [2.0], [9.0], [3.0]]),
        DIVERGED: np.array([[0.0], [0.0], [1.0], [0.0]]),
    }
    states = pbt(states, metrics, update=1)
    assert pbt.lineage[-1]["fitness"] == [1.0, 2.0, -np.inf, 3.0]
    assert pbt.lineage[-1]["parent"] == [0, 1, 3, 3]  # the worst copies the best
    assert strict_load(json_text(pbt.lineage[-1]))["fitness"][2] is None


TINY_CLI = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--no-progress"]


def test_every_file_of_a_diverging_sweep_and_population_is_strict_json(tmp_path, capsys):
    # A sweep whose learning rate 50 diverges on pendulum, and a population on pendulum whose
    # learning rates reach 50: every JSON file they write parses strictly; the sweep ranks
    # the diverged configuration last and its best.json is the other; plot, report and stats
    # say which seeds diverged.
    budget = [*TINY_CLI, "--total-timesteps", "2048", "--chunks", "4", "--eval-episodes", "1"]
    sweep_dir, pbt_dir = tmp_path / "sweep", tmp_path / "pbt"
    grid = ["--grid", "learning_rate=50,3e-4"]
    argv = ["sweep", "ppo", "--env", "pendulum", *grid, "--num-seeds", "2", *budget]
    assert cli.main([*argv, "--out", str(sweep_dir)]) == 0
    out = capsys.readouterr().out
    assert "| 2 | 50 | diverged (seed 0, 1) | - | diverged, diverged |" in out
    best = strict_load((sweep_dir / "best.json").read_text())
    assert best["hparams"]["learning_rate"] == pytest.approx(3e-4)
    argv = ["pbt", "ppo", "--env", "pendulum", "--population", "4", *budget]
    argv += ["--grid", "learning_rate=log:1:100"]
    assert cli.main([*argv, "--out", str(pbt_dir)]) in (0, 3)
    written = [p for d in (sweep_dir, pbt_dir) for p in d.rglob("*.json*") if p.is_file()]
    names = {p.name for p in written}
    assert {"config.json", "final.json", "metrics.jsonl", "sweep.json", "best.json"} <= names
    assert {"lineage.jsonl", "pbt.json"} <= names
    for path in written:
        text = path.read_text()
        for line in text.splitlines() if path.suffix == ".jsonl" else [text]:
            strict_load(line)
    capsys.readouterr()
    assert cli.main(["plot", str(sweep_dir), "--out", str(tmp_path / "c.png")]) == 0
    err = capsys.readouterr().err
    assert "seed 0 diverged at" in err and "seed 1 diverged at" in err
    assert cli.main(["report", str(sweep_dir)]) == 0
    assert "2 of 4 seeds diverged" in (sweep_dir / "report.md").read_text()
