"""`rlsuite sweep`: configurations, keys, one compiled program, the table against separate runs,
`rlsuite train --config best.json` retraining the best bitwise, resume, and refused input."""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.agents import ppo
from rlsuite.app import batches, cli
from rlsuite.app import sweep as sweeps
from rlsuite.loop import checkpoint, driver
from tests.app.test_cli import TINY, rlsuite

BUDGET = ["--total-timesteps", "640", "--chunks", "2", "--eval-episodes", "3", *TINY]
GRID = ["--grid", "learning_rate=1e-3,3e-3", "ent_coef=0,0.02"]


def test_a_grid_is_the_product_of_its_fields_in_order():
    specs = [sweeps.parse_spec("learning_rate=1e-3,3e-3"), sweeps.parse_spec("ent_coef=0,0.02")]
    configs = sweeps.configurations(specs, None, seed=0)
    f32 = [1e-3, 3e-3, 0.02]  # the float32 values, written as their shortest decimals
    assert [np.float32(v) for v in f32] == [np.float32(x) for x in ("1e-3", "3e-3", "0.02")]
    assert configs == [
        {"learning_rate": f32[0], "ent_coef": 0.0},
        {"learning_rate": f32[0], "ent_coef": f32[2]},
        {"learning_rate": f32[1], "ent_coef": 0.0},
        {"learning_rate": f32[1], "ent_coef": f32[2]},
    ]


def test_random_search_draws_from_its_ranges_and_its_seed():
    specs = [
        sweeps.parse_spec("learning_rate=log:1e-4:1e-2"),
        sweeps.parse_spec("ent_coef=0:0.05"),
        sweeps.parse_spec("gamma=0.9,0.99"),
    ]
    draws = sweeps.configurations(specs, 400, seed=3)
    lr = np.array([d["learning_rate"] for d in draws])
    ent = np.array([d["ent_coef"] for d in draws])
    assert ((lr >= 1e-4 * (1 - 1e-6)) & (lr <= 1e-2 * (1 + 1e-6))).all()
    assert ((ent >= 0) & (ent <= 0.05)).all()
    assert {d["gamma"] for d in draws} == {0.9, 0.99}  # float32's, as the shortest decimals
    # Log-uniform: half the draws below the geometric midpoint 1e-3 (uniform would put 9% there);
    # 400 draws give a standard error of 0.025.
    assert abs((lr < 1e-3).mean() - 0.5) < 0.1
    assert abs((ent < 0.025).mean() - 0.5) < 0.1
    assert sweeps.configurations(specs, 400, seed=3) == draws
    assert sweeps.configurations(specs, 400, seed=4) != draws


def test_a_sweep_batch_is_configuration_major_with_the_seeds_keys():
    sweep = {
        "fields": ["learning_rate"],
        "configs": [{"learning_rate": 1e-3}, {"learning_rate": 2e-3}, {"learning_rate": 4e-3}],
        "seeds": 2,
    }
    hp = batches.sweep_hparams(ppo.PPOHparams(ent_coef=0.5), sweep)
    np.testing.assert_array_equal(
        hp.learning_rate, np.float32([1e-3, 1e-3, 2e-3, 2e-3, 4e-3, 4e-3])
    )
    assert hp.ent_coef == 0.5  # the fields not swept stay shared
    key = jax.random.key(7)
    seeds = jax.random.key_data(jax.random.split(key, 2))
    runs = jax.random.key_data(driver.run_keys(key, 6, 2))
    np.testing.assert_array_equal(runs, jnp.concatenate([seeds] * 3))
    plain = jax.random.key_data(jax.random.split(key, 6))
    np.testing.assert_array_equal(jax.random.key_data(driver.run_keys(key, 6)), plain)
    with pytest.raises(ValueError, match="divide num_runs=6"):
        driver.run_keys(key, 6, 4)


def _rows(run: pathlib.Path) -> dict:
    """metrics.jsonl rows by (seed, env_steps)."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {(r["seed"], r["env_steps"]): r for r in rows}


# CartPole's tuned PPO (8 environments x 64 steps, minibatches of 128), 4 updates in 2 chunks.
TUNED = ["--total-timesteps", "2048", "--chunks", "2", "--eval-episodes", "3", "--no-progress"]


@pytest.mark.slow
def test_the_table_equals_separate_runs_and_best_json_retrains_the_best_bitwise(tmp_path):
    # On one CPU device, at CartPole's tuned setup, a run's bits do not depend on the batch it
    # shares (docs/sweeps.md says where they do): the sweep's runs of a configuration equal
    # `rlsuite train` of that configuration alone, every logged row and every evaluation, for
    # the best one (through --config best.json) and for another one.
    one = ["--cpu-devices", "1"]
    proc = rlsuite(
        "sweep", "ppo", "--env", "cartpole", *GRID, "--num-seeds", "2", "--out",
        tmp_path / "sweep", *TUNED, *one,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    rows = table["rows"]
    assert len(rows) == 4 and table["seeds"] == 2
    means = [r["mean"] for r in rows]
    assert means == sorted(means, reverse=True)
    for row in rows:
        assert row["low"] <= row["mean"] <= row["high"]
        assert row["mean"] == pytest.approx(np.mean(row["per_seed"]))
    configs = json.loads((tmp_path / "sweep" / "config.json").read_text())["sweep"]["configs"]
    final = json.loads((tmp_path / "sweep" / "final.json").read_text())
    per_run = np.asarray(final["eval_return_per_seed"]).reshape(4, 2)
    for row in rows:
        np.testing.assert_array_equal(row["per_seed"], per_run[configs.index(row["config"])])
    best = json.loads((tmp_path / "sweep" / "best.json").read_text())
    assert best["num_seeds"] == 2
    assert {k: best["hparams"][k] for k in rows[0]["config"]} == rows[0]["config"]

    proc = rlsuite(
        "train", "--config", tmp_path / "sweep" / "best.json", "--out", tmp_path / "best",
        "--no-progress", *one,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    other = rows[-1]["config"]
    flags = [f"--{k.replace('_', '-')}={v!r}" for k, v in other.items()]
    proc = rlsuite(
        "train", "ppo", "--env", "cartpole", *flags, "--num-seeds", "2", "--out",
        tmp_path / "other", *TUNED, *one,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]

    swept = _rows(tmp_path / "sweep")
    for name, config in (("best", rows[0]["config"]), ("other", other)):
        c = configs.index(config)
        alone = json.loads((tmp_path / name / "final.json").read_text())
        assert alone["eval_return_per_seed"] == per_run[c].tolist()  # bitwise, every seed
        logged = _rows(tmp_path / name)
        assert len(logged) == len(swept) // 4 > 2  # its 2 seeds' rows of the 8 runs'
        for (seed, steps), row in logged.items():
            assert swept[(c * 2 + seed, steps)] | {"seed": seed} == row
    assert "bitwise retrain" not in proc.stdout  # one device: no note about several


def test_a_sweep_traces_the_update_once_and_resumes_bitwise(tmp_path, monkeypatch, capsys):
    # Every configuration x seed is one vmapped batch: the agent's update is traced once for the
    # whole sweep (both chunks run one compiled program). Killed after its first checkpoint and
    # resumed with `rlsuite sweep --resume`, it writes the table of the uninterrupted sweep.
    traces = []
    update = driver._update

    def counted(*args):
        traces.append(1)
        return update(*args)

    monkeypatch.setattr(driver, "_update", counted)
    argv = ["sweep", "ppo", "--env", "cartpole", *GRID, "--num-seeds", "2", *BUDGET]
    assert cli.main([*argv, "--out", str(tmp_path / "full")]) == 0
    assert len(traces) == 1
    full = json.loads((tmp_path / "full" / "sweep.json").read_text())

    save = checkpoint.save

    def killed(directory, step, *args, **kwargs):
        save(directory, step, *args, **kwargs)
        raise KeyboardInterrupt  # the process dies after its first checkpoint

    monkeypatch.setattr(checkpoint, "save", killed)
    assert cli.main([*argv, "--out", str(tmp_path / "cut")]) == 130  # as Ctrl-C would
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.endswith(f"continue with: rlsuite sweep --resume {tmp_path / 'cut'}")
    assert not (tmp_path / "cut" / "sweep.json").exists()
    monkeypatch.setattr(checkpoint, "save", save)
    assert cli.main(["sweep", "--resume", str(tmp_path / "cut"), "--no-progress"]) == 0
    assert json.loads((tmp_path / "cut" / "sweep.json").read_text()) == full
    assert "| 1 |" in capsys.readouterr().out
    # Killed after its training ended, before the tables: the resume writes them from final.json.
    best = (tmp_path / "full" / "best.json").read_text()
    for name in sweeps.FILES:
        (tmp_path / "full" / name).unlink()
    assert cli.main(["sweep", "--resume", str(tmp_path / "full")]) == 0
    assert json.loads((tmp_path / "full" / "sweep.json").read_text()) == full
    assert (tmp_path / "full" / "best.json").read_text() == best
    # A finished sweep has nothing to resume; a run is not a sweep.
    assert cli.main(["sweep", "--resume", str(tmp_path / "full")]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    run = tmp_path / "run"
    run.mkdir()
    record = json.loads((tmp_path / "full" / "config.json").read_text())
    del record["sweep"]
    (run / "config.json").write_text(json.dumps(record))
    assert cli.main(["sweep", "--resume", str(run)]) == 2
    assert f"holds a run, not a sweep: continue it with rlsuite train --resume {run}" in (
        capsys.readouterr().err
    )
    # A sweep is continued by its own command, which writes its tables; not by pbt or train.
    assert cli.main(["pbt", "--resume", str(tmp_path / "full")]) == 2
    said = f"holds a sweep, not a pbt: continue it with rlsuite sweep --resume {tmp_path / 'full'}"
    assert said in capsys.readouterr().err
    assert cli.main(["train", "--resume", str(tmp_path / "full")]) == 2
    said = f"holds a sweep: continue it with rlsuite sweep --resume {tmp_path / 'full'}"
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--grid", "num_envs=4,8"],
            "num_envs is a static config field of ppo (it shapes the compiled program",
        ),
        (["--grid", "learning_rat=1e-3"], "is not a hyperparameter; did you mean 'learning_rate'"),
        (["--grid", "seed=1,2"], "--grid seed is not a hyperparameter"),
        (
            ["--grid", "learning_rate=1e-4:1e-3"],
            "a range is sampled by random search; add --random",
        ),
        (["--grid", "learning_rate=-1e-3,1e-3"], "learning_rate"),
        (["--grid", "learning_rate=1e-3,fast"], "--grid learning_rate: 'fast' is not a number"),
        (["--grid", "learning_rate=1e-3", "learning_rate=1e-4"], "is given twice"),
        (["--grid", "learning_rate=log:0:1", "--random", "4"], "a log range needs LOW > 0"),
        (["--grid", "learning_rate=1e-3", "--random", "0"], "--random must be >= 1"),
        (["--num-seeds", "2"], "sweep needs --grid FIELD=V1,V2,..."),
        (["--grid", "learning_rate=1e-3", "--metric", "loss"], "--metric 'loss' is not one of"),
        (["--grid", "learning_rate=1e-3", "--metric", "normalized_score"], "needs an offline"),
    ],
)
def test_bad_sweeps_are_refused_by_name_before_anything_is_written(tmp_path, capsys, args, message):
    out = tmp_path / "sweep"
    code = cli.main(["sweep", "ppo", "--env", "cartpole", *args, "--out", str(out), *BUDGET])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_sweep_or_config_file_does_not_overwrite_a_run(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"kept": true}')
    code = cli.main(["sweep", "ppo", *GRID, "--out", str(run), *BUDGET])
    assert code == 2 and "already holds a run" in capsys.readouterr().err
    assert (run / "config.json").read_text() == '{"kept": true}'

    assert cli.main(["train", "--config", str(tmp_path / "none.json")]) == 2
    assert f"--config {tmp_path / 'none.json'}: no such file" in capsys.readouterr().err
    sweep_record = {"algo": "ppo", "env": "cartpole", "config": {}, "hparams": {}}
    (tmp_path / "sweep.json").write_text(json.dumps({**sweep_record, "sweep": {"configs": [1, 2]}}))
    assert cli.main(["train", "--config", str(tmp_path / "sweep.json")]) == 2
    assert "describes a sweep of 2 configurations; give its best.json" in capsys.readouterr().err
    (tmp_path / "sac.json").write_text(json.dumps({**sweep_record, "algo": "sac"}))
    assert cli.main(["train", "ppo", "--config", str(tmp_path / "sac.json")]) == 2
    assert "is for sac, not ppo" in capsys.readouterr().err


def test_help_names_the_sweeps_own_flags_and_train_s(capsys):
    assert cli.main(["sweep", "--help"]) == 0
    assert "--grid FIELD=V1,V2,..." in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sweep", "ppo", "--env", "cartpole", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "--random N" in out and "--learning-rate" in out
    with pytest.raises(SystemExit) as exit_:
        cli.main(["pbt", "ppo", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "--population" in out and "--ent-coef" in out
