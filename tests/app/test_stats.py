"""rlsuite.app.stats and `rlsuite stats`: our estimates against rliable called directly on a fixed
synthetic score matrix, the command on two tiny real runs, and refused input."""

import functools
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

library = pytest.importorskip("rliable.library", reason="the stats extra (rliable) is missing")
metrics = pytest.importorskip("rliable.metrics")

from rlsuite.app import cli, stats  # noqa: E402

REPS = 300  # bootstrap resamples in these tests (the command's default is 2,000)
SEED = 7


@pytest.fixture(scope="module")
def matrices():
    """5 methods x [10 seeds, 8 tasks], method i centred at 0.1 i (a seeded draw)."""
    rng = np.random.default_rng(1234)
    return {f"m{i}": rng.normal(0.1 * i, 0.3, size=(10, 8)) for i in range(5)}


def _rliable_aggregates(x):
    return np.array(
        [
            metrics.aggregate_iqm(x),
            metrics.aggregate_mean(x),
            metrics.aggregate_median(x),
            metrics.aggregate_optimality_gap(x),
        ]
    )


def test_interval_estimates_equal_rliable(matrices):
    points, intervals = stats.interval_estimates(matrices, REPS, SEED)
    for method, scores in matrices.items():
        np.random.seed(SEED)  # noqa: NPY002
        p, ci = library.get_interval_estimates({method: scores}, _rliable_aggregates, reps=REPS)
        np.testing.assert_array_equal(points[method], p[method])
        np.testing.assert_array_equal(intervals[method], ci[method])
        assert points[method][0] == metrics.aggregate_iqm(scores)
        assert intervals[method].shape == (2, 4)
        low, high = intervals[method]
        assert (low <= points[method]).all() and (points[method] <= high).all()
        assert (high - low > 0).all()
    # The first method's interval is what one call over every method gives it, seeded once.
    np.random.seed(SEED)  # noqa: NPY002
    _, whole = library.get_interval_estimates(matrices, _rliable_aggregates, reps=REPS)
    np.testing.assert_array_equal(intervals["m0"], whole["m0"])
    # A different seed draws other resamples: other intervals, the same points.
    points_2, intervals_2 = stats.interval_estimates(matrices, REPS, SEED + 1)
    np.testing.assert_array_equal(points_2["m3"], points["m3"])
    assert not np.array_equal(intervals_2["m3"], intervals["m3"])


def test_seeding_restores_the_global_random_state(matrices):
    np.random.seed(99)  # noqa: NPY002
    expected = np.random.random_sample(3)  # noqa: NPY002
    np.random.seed(99)  # noqa: NPY002
    stats.interval_estimates({"m0": matrices["m0"]}, 20, SEED)
    np.testing.assert_array_equal(np.random.random_sample(3), expected)  # noqa: NPY002


def test_performance_profiles_equal_rliable(matrices):
    taus = stats.profile_taus(matrices, num=21)
    pooled = np.concatenate([s.ravel() for s in matrices.values()])
    assert taus[0] == pooled.min() and taus[-1] == pooled.max()
    profiles, cis = stats.performance_profiles(matrices, taus, REPS, SEED)
    for method, scores in matrices.items():
        np.random.seed(SEED)  # noqa: NPY002
        p, ci = library.create_performance_profile({method: scores}, taus, reps=REPS)
        np.testing.assert_array_equal(profiles[method], p[method])
        np.testing.assert_array_equal(cis[method], ci[method])
        # The fraction of the 80 runs above each threshold, counted here by hand.
        counted = [(scores > t).sum() / 80 for t in taus]
        np.testing.assert_allclose(profiles[method], counted)
    assert profiles["m0"][0] == 79 / 80 and profiles["m0"][-1] == 0.0  # the minimum is not > itself


def test_probability_of_improvement_equals_rliable(matrices):
    reps = 100  # 10 pairs, each resample a Mann-Whitney U test per task: slow ones
    pairs = stats.probabilities_of_improvement(matrices, reps, SEED)
    names = list(matrices)
    assert [(x, y) for x, y, *_ in pairs] == [
        (names[i], names[j]) for i in range(5) for j in range(i + 1, 5)
    ]
    for x, y, p, low, high in pairs:
        assert p == metrics.probability_of_improvement(matrices[x], matrices[y])
        np.random.seed(SEED)  # noqa: NPY002
        _, ci = library.get_interval_estimates(
            {"pair": (matrices[x], matrices[y])}, metrics.probability_of_improvement, reps=reps
        )
        assert (low, high) == tuple(np.ravel(ci["pair"]))
        assert low <= p <= high
    by_pair = {(x, y): p for x, y, p, *_ in pairs}
    assert by_pair["m0", "m4"] < 0.25 < 0.5 < 1 - by_pair["m0", "m4"]  # m4 is 0.4 higher


def test_score_matrices_group_normalise_and_refuse(tmp_path):
    def run(name, algo, env, scores, lr=1e-3):
        record = {"algo": algo, "env": env, "num_seeds": len(scores)}
        record["hparams"] = {"learning_rate": lr}
        return stats.Run(tmp_path / name, record, np.asarray(scores, dtype=float))

    runs = [
        run("a1", "ppo", "cartpole", [1.0, 2.0]),
        run("a2", "ppo", "cartpole", [3.0]),  # pooled with a1: 3 seeds
        run("b", "ppo", "acrobot", [-1.0, -2.0, -3.0]),
        run("c", "sac", "cartpole", [5.0, 6.0, 7.0], lr=3e-4),
        run("d", "sac", "acrobot", [-4.0, -5.0, -6.0], lr=3e-4),
    ]
    matrices, tasks = stats.score_matrices(runs)
    assert tasks == ["acrobot", "cartpole"]
    np.testing.assert_array_equal(matrices["ppo"], [[-1.0, 1.0], [-2.0, 2.0], [-3.0, 3.0]])
    by_lr, _ = stats.score_matrices(runs, "hparams.learning_rate,env")
    assert list(by_lr) == ["learning_rate=0.001", "learning_rate=0.0003"]
    scaled = stats.normalize(matrices, tasks, "minmax")
    # acrobot: -6 .. -1, cartpole: 1 .. 7 over both methods.
    np.testing.assert_allclose(scaled["ppo"][:, 0], [1.0, 0.8, 0.6])
    np.testing.assert_allclose(scaled["sac"][:, 1], [4 / 6, 5 / 6, 1.0])
    ref = stats.normalize(matrices, tasks, "reference", {"acrobot": (-6, 0), "cartpole": (0, 10)})
    np.testing.assert_allclose(ref["sac"][0], [2 / 6, 0.5])
    with pytest.raises(ValueError, match="no --reference for cartpole"):
        stats.normalize(matrices, tasks, "reference", {"acrobot": (-6, 0)})
    with pytest.raises(ValueError, match="'zscore'.*none, minmax, reference"):
        stats.normalize(matrices, tasks, "zscore")
    with pytest.raises(
        ValueError,
        match=r"'ppo' has different numbers of seeds.*acrobot: 3 seeds.*b\).*cartpole: 1 seeds.*a2",
    ):
        stats.score_matrices(runs[1:2] + runs[2:])  # cartpole: 1 seed (a2), acrobot: 3 (b)
    with pytest.raises(ValueError, match="'sac' has no run on task.*acrobot"):
        stats.score_matrices(runs[:4])
    with pytest.raises(ValueError, match="no field 'hparams.gamma'.*algo, env"):
        stats.score_matrices(runs, "hparams.gamma,env")
    with pytest.raises(ValueError, match="METHOD,TASK"):
        stats.parse_by("algo")


# Two tiny real runs made through the command line: PPO on CartPole at two learning rates.
TRAIN = (
    "train ppo --env cartpole --total-timesteps 2048 --num-envs 4 --num-steps 16 "
    "--num-minibatches 2 --eval-episodes 2 --no-progress"
).split()


def _cli(*args, timeout=240):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "rlsuite.app.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _in_process(capsys, *args):
    """`rlsuite ARGS` as `_cli` runs it, in this process (`cli.main`): the exit code and what it
    printed."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """Three small PPO runs, trained in this process (`cli.main`: no interpreter each)."""
    root = tmp_path_factory.mktemp("runs")
    made = []
    for name, lr, seeds in (("slow", "0.0001", 3), ("fast", "0.0025", 3), ("two", "0.0025", 2)):
        out = root / name
        args = [*TRAIN, "--num-seeds", seeds, "--learning-rate", lr, "--out", out]
        assert cli.main([str(a) for a in args]) == 0, name
        made.append(out)
    return made


def _check_png(path: pathlib.Path) -> None:
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 100 and image.shape[1] > 300
    rgb = image[..., :3]
    assert (rgb < 0.9).mean() > 0.01  # drawn on, not blank
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 20  # several colours: bars, text, bands


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_stats_command_on_real_runs(real_runs, tmp_path):
    slow, fast, _ = real_runs
    out = tmp_path / "stats"
    args = ("stats", slow, fast, "--by", "hparams.learning_rate,env", "--reps", 200)
    done = _cli(*args, "--out", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(stats.FILES)
    text = (out / "stats.md").read_text()
    assert "| learning_rate=0.0001 |" in text and "| learning_rate=0.0025 |" in text
    assert "| learning_rate=0.0001 | learning_rate=0.0025 |" in text  # the pair's row
    assert text in done.stdout
    summary = json.loads((out / "stats.json").read_text())
    finals = [json.loads((r / "final.json").read_text()) for r in (slow, fast)]
    assert summary["tasks"] == ["cartpole"]
    np.testing.assert_array_equal(
        summary["scores"]["learning_rate=0.0025"],
        np.array(finals[1]["eval_return_per_seed"])[:, None],
    )
    iqm = summary["aggregates"]["learning_rate=0.0001"]["IQM"]
    assert iqm["point"] == metrics.aggregate_iqm(np.array(finals[0]["eval_return_per_seed"]))
    assert iqm["low"] <= iqm["point"] <= iqm["high"]
    for name in ("intervals.png", "profiles.png"):
        _check_png(out / name)
    # Default grouping: one method (ppo) pooling both runs' 6 seeds, min-max normalised.
    out_2 = tmp_path / "pooled"
    done = _cli("stats", slow, fast, "--normalize", "minmax", "--reps", 50, "--out", out_2)
    assert done.returncode == 0, done.stderr
    pooled = json.loads((out_2 / "stats.json").read_text())["scores"]["ppo"]
    assert np.shape(pooled) == (6, 1) and min(map(min, pooled)) == 0 and max(map(max, pooled)) == 1
    assert "one method: no pairs" in (out_2 / "stats.md").read_text()
    # An out directory holding the files is refused and left as it was.
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    done = _cli(*args, "--seed", 1, "--out", out)
    assert done.returncode == 2
    assert f"--out {out} already holds stats.md, stats.json, intervals.png" in done.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.timeout(600)
def test_stats_command_refuses_bad_input(real_runs, tmp_path, capsys):
    _cli = functools.partial(_in_process, capsys)  # each refusal without a new interpreter
    slow, fast, two = real_runs
    out = tmp_path / "out"
    done = _cli("stats", slow, fast, "--metric", "eval_retrun", "--out", out)
    assert done.returncode == 2
    assert "unknown metric 'eval_retrun'" in done.stderr
    assert "allowed: eval_return (final.json)" in done.stderr
    assert "charts/episodic_return" in done.stderr  # metrics.jsonl's are offered too
    # A run directory without final.json (a run that did not finish), then without config.json.
    broken = tmp_path / "broken"
    shutil.copytree(slow, broken)
    (broken / "final.json").unlink()
    done = _cli("stats", broken, fast, "--out", out)
    assert done.returncode == 2 and f"{broken} holds no final.json" in done.stderr
    done = _cli("stats", tmp_path, "--out", out)
    assert done.returncode == 2 and f"{tmp_path} holds no run (no config.json)" in done.stderr
    # One method (ppo) with 3 seeds on cartpole from `slow` but 2 from `two`, on another task.
    record = json.loads((two / "config.json").read_text())
    other = tmp_path / "other_task"
    shutil.copytree(two, other)
    (other / "config.json").write_text(json.dumps({**record, "env": "acrobot"}))
    done = _cli("stats", slow, other, "--out", out)
    assert done.returncode == 2
    assert "'ppo' has different numbers of seeds" in done.stderr
    assert (
        f"acrobot: 2 seeds ({other})" in done.stderr
        and f"cartpole: 3 seeds ({slow})" in done.stderr
    )
    done = _cli("stats", slow, "--normalize", "zscore", "--out", out)
    assert done.returncode == 2 and "--normalize 'zscore'" in done.stderr
    assert not out.exists()  # nothing written by any refused call
    # The metric chosen from metrics.jsonl: each seed's last logged value.
    done = _cli("stats", slow, fast, "--metric", "charts/episodic_return", "--reps", 20,
                "--out", out)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_missing_rliable_names_the_extra(monkeypatch, tmp_path, capsys):
    import builtins

    real_import = builtins.__import__

    def no_rliable(name, *args, **kwargs):
        if name.startswith("rliable"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rliable)
    from rlsuite.app import cli

    assert cli.main(["stats", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "install the stats extra: pip install 'rlsuite[stats]'" in capsys.readouterr().err
    with pytest.raises(ImportError, match=r"pip install 'rlsuite\[stats\]'"):
        stats.rliable()
