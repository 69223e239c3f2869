"""Experiment scripts: subprocess smoke runs on tiny budgets (exit code, printed table, JSON),
and the research ideas they define, by hand. The default run smokes one script of each kind (PPO's,
an off-policy one, the offline one, the sweep) and checks every script's ideas by hand; the slow
run smokes the rest (DQN, PQN, FixPO, RARL, UED, CRL, ADA: 42 s for the first four with an empty
compilation cache)."""

import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.tiers import slow_but

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_script(script: str, *args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    env = {
        **os.environ,  # the tests' compilation cache (conftest.py)
        "COLUMNS": "120",  # rich's table width when stdout is not a terminal
        "PYTHONIOENCODING": "utf-8",
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "experiments" / script), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.timeout(120)
def test_random_rollout_smoke():
    proc = run_script("random_rollout.py", "--num-envs", "8", "--num-steps", "10", timeout=100)
    assert proc.returncode == 0, proc.stderr
    summary = r"^80 env steps \(discrete actions\) .* [\d,]+ steps/s; \d+ episodes finished"
    assert re.search(summary, proc.stdout, re.MULTILINE), proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        ("ppo.py", ["--env", "nope"], r"unknown environment 'nope' \(envs.names\(\) lists"),
        ("sac.py", ["--num-seeds", "0"], "--num-seeds must be >= 1, got 0"),
        ("td3.py", ["--tau", "2"], r"td3: invalid hparams.tau=2.0; allowed: a value in \[0, 1\]"),
        ("random_rollout.py", ["--num-envs", "0"], "num_envs and num_steps must be >= 1"),
        ("ued.py", ["--updates", "0"], "--updates must be >= 1, got 0"),
        ("dqn.py", ["--env", "pendulum"], "dqn handles Discrete action spaces; Pendulum has Box"),
        (
            "distributional.py",
            ["--algo", "dqn"],
            "--algo 'dqn' is not one of: c51, qrdqn, iqn, rainbow",
        ),
        ("distributional.py", ["--alpha", "0"], r"--alpha must be in \(0, 1\], got 0.0"),
    ],
)
def test_scripts_report_bad_input_in_one_line(script, args, message, tmp_path):
    """A check of the suite or of the script refusing the input: `<script>: error: ...`, exit
    status 2, no traceback, nothing written."""
    out = [] if script == "random_rollout.py" else ["--out", str(tmp_path / "run")]  # (writes none)
    proc = run_script(script, *args, *out, timeout=100)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert re.search(f"^{script}: error: .*{message}", proc.stderr, re.M), proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run").exists()


@pytest.mark.timeout(180)
def test_ppo_sweep_smoke_lists_every_grid_cell(tmp_path):
    out = tmp_path / "sweep.json"
    args = ["--total-timesteps", "512", "--num-seeds", "2", "--eval-episodes", "2"]
    args += ["--learning-rates", "1e-3", "3e-4", "--ent-coefs", "0", "0.02", "--out", str(out)]
    proc = run_script("ppo_sweep.py", *args)
    assert proc.returncode == 0, proc.stderr
    assert "2 learning rates x 2 entropy coefficients x 2 seeds = 8 runs of 1 updates" in (
        proc.stdout
    )
    rows = re.findall(r"[│|]\s+(\S+) [│|]\s+(\S+) [│|]\s+(\S+) ± (\S+) [│|]\s+2 [│|]", proc.stdout)
    cells = [(lr, ent) for lr, ent, *_ in rows]
    assert cells == [("0.001", "0"), ("0.001", "0.02"), ("0.0003", "0"), ("0.0003", "0.02")]
    assert re.search(r"8 runs x 512 env steps: .* [\d,]+ env steps/s", proc.stdout), proc.stdout

    report = json.loads(out.read_text())
    assert report["num_runs"] == 8 and report["env_steps_per_second"] > 0
    assert [(c["learning_rate"], c["ent_coef"]) for c in report["cells"]] == [
        (1e-3, 0.0),
        (1e-3, 0.02),
        (3e-4, 0.0),
        (3e-4, 0.02),
    ]
    for cell, (_, _, mean, std) in zip(report["cells"], rows, strict=True):
        returns = cell["eval_return_per_seed"]
        assert len(returns) == 2 and all(1.0 <= r <= 500.0 for r in returns)  # CartPole's range
        assert float(mean) == pytest.approx(cell["eval_return_mean"], abs=0.05)
        assert float(std) == pytest.approx(cell["eval_return_std"], abs=0.05)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--learning-rates"], "--learning-rates is empty"),
        (["--num-seeds", "0"], "--num-seeds must be >= 1, got 0"),
        (["--ent-coefs", "0", "-0.1"], r"invalid hparams.ent_coef=\[0.0, -0.1\]"),
        (["--out"], "sweep.json exists; choose another --out"),
    ],
)
def test_ppo_sweep_rejects_bad_arguments_before_compiling(args, message, tmp_path):
    if args == ["--out"]:
        (tmp_path / "sweep.json").write_text("earlier results")
        args = ["--out", str(tmp_path / "sweep.json")]
    proc = run_script("ppo_sweep.py", *args, timeout=100)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert re.search(f"ppo_sweep.py: error: .*{message}", proc.stderr), proc.stderr
    assert "runs of" not in proc.stdout  # nothing was compiled or trained


@pytest.mark.timeout(180)
# The default run passes in the idea that is not the default (PPO's clip is the slow run's).
@pytest.mark.parametrize("idea", slow_but("clip-free", ["ppo-clip", "clip-free"]))
def test_ppo_script_smoke_with_a_policy_loss_passed_in(idea, tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--loss-idea", idea, "--out", str(tmp_path / "run")]
    proc = run_script("ppo.py", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(rf"ppo \({idea}\) on cartpole: 2 seeds x 1,024 steps", proc.stdout)
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert final["num_seeds"] == 2 and len(final["eval_return_per_seed"]) == 2
    if idea == "clip-free":
        return
    # Killed after its last checkpoint: --resume evaluates it again; another idea is refused.
    (tmp_path / "run" / "final.json").unlink()
    other = [a if a != idea else "clip-free" for a in args]
    proc = run_script("ppo.py", *other, "--resume")
    assert proc.returncode != 0 and "saved with loss_idea='ppo-clip'" in proc.stderr, proc.stderr
    proc = run_script("ppo.py", *args, "--resume")
    assert proc.returncode == 0, proc.stderr[-3000:]
    resumed = json.loads((tmp_path / "run" / "final.json").read_text())
    assert resumed["eval_return_per_seed"] == final["eval_return_per_seed"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("script", "idea"),
    [
        pytest.param("sac.py", "min-of-critics", marks=pytest.mark.slow),  # the default idea
        ("sac.py", "mean-of-critics"),
        pytest.param("td3.py", "single-critic", marks=pytest.mark.slow),  # the hook SAC's shows
    ],
)
def test_off_policy_scripts_smoke_with_a_critic_target_passed_in(script, idea, tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "300", "--learning-starts", "100"]
    args += ["--batch-size", "32", "--hidden-sizes", "16", "16", "--target-idea", idea]
    args += ["--eval-episodes", "1", "--out", str(tmp_path / "run")]
    proc = run_script(script, *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    algo = script.removesuffix(".py")
    assert re.search(rf"{algo} \({idea}\) on pendulum: 2 seeds x 300 steps", proc.stdout)
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert final["algo"] == algo and final["num_seeds"] == 2
    assert all(-2000 < r < 0 for r in final["eval_return_per_seed"])  # Pendulum's range


@pytest.mark.timeout(240)
def test_offline_script_smoke_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "scores.json"
    args = ["--qualities", "random", "expert", "--algos", "bc", "iql", "--size", "200"]
    args += ["--num-updates", "1", "--gradient-steps", "2", "--num-seeds", "2"]
    args += ["--behaviour-timesteps", "300", "--hidden-sizes", "8", "--out", str(out)]
    proc = run_script("offline.py", *args, timeout=220)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["partial"] is False
    assert report["behaviour"]["config"]["total_timesteps"] == 300
    assert report["datasets"] == {"random": {"transitions": 200}, "expert": {"transitions": 200}}
    assert report["reference"]["expert_env_steps"] == 300
    for quality in ("random", "expert"):
        for algo in ("bc", "iql"):
            scores = report["scores"][quality][algo]
            assert len(scores) == 2
            printed = re.search(
                rf"^{algo} on {quality} \(200 transitions\): (-?[\d.]+)$", proc.stdout, re.M
            )
            assert printed and float(printed[1]) == pytest.approx(sum(scores) / 2, abs=0.05)
    assert re.search(r"[│|]\s+random\s+[│|]\s+-?[\d.]+ ± [\d.]+\s+[│|]", proc.stdout), proc.stdout


@pytest.mark.timeout(120)
def test_offline_script_refuses_to_replace_results_before_training(tmp_path):
    out = tmp_path / "scores.json"
    out.write_text("earlier results")
    data = tmp_path / "data"
    (data / "pendulum-expert.hdf5").parent.mkdir(parents=True)
    (data / "pendulum-expert.hdf5").write_text("earlier dataset")
    args = ["--qualities", "expert", "--out", str(out), "--save-dir", str(data)]
    proc = run_script("offline.py", *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"offline.py: error: not replacing {out}, {data / 'pendulum-expert.hdf5'}" in proc.stderr
    assert out.read_text() == "earlier results"
    assert (data / "pendulum-expert.hdf5").read_text() == "earlier dataset"
    for bad, message in [
        (["--num-seeds", "0"], "--num-seeds must be >= 1, got 0"),
        (["--out", str(out / "x.json")], f"--out {out / 'x.json'}: {out} is a file"),
    ]:
        proc = run_script("offline.py", *bad)
        assert proc.returncode == 2 and f"offline.py: error: {message}" in proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr[-2000:]


def load_script(script: str) -> types.ModuleType:
    """An experiment script imported as a module (its `__main__` part does not run)."""
    path = ROOT / "experiments" / script
    spec = importlib.util.spec_from_file_location(f"experiment_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_ued_script_smoke_on_the_named_mazes_with_a_score_passed_in(tmp_path):
    from PIL import Image
    from rlsuite.envs.maze import HELD_OUT

    out = tmp_path / "run"
    args = ["--env", "maze", "--curriculum", "dr", "accel", "--score-idea", "clipped-regret"]
    args += ["--updates", "2", "--num-envs", "4", "--num-steps", "250", "--num-seeds", "2"]
    args += ["--recurrent-size", "8", "--hidden-sizes", "8", "--out", str(out)]
    proc = run_script("ued.py", *args, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for curriculum in ("dr", "accel"):  # 2 updates of 4 levels x 250 steps
        assert re.search(rf"^{curriculum} on maze: 2 seeds x 2,000 env steps in", proc.stdout, re.M)

    report = json.loads((out / "results.json").read_text())
    assert report["held_out_names"] == list(HELD_OUT) and report["score_idea"] == "clipped-regret"
    dr, accel = report["curricula"]["dr"], report["curricula"]["accel"]
    assert dr["curve_env_steps"] == accel["curve_env_steps"] == [0, 1000, 2000]
    # The same students at step 0; ACCEL learns from replays only, and its buffer (4,000 levels)
    # is far from half full: its students end as they began.
    assert dr["curve_solve_rate"][0] == accel["curve_solve_rate"][0]
    assert accel["curve_solve_rate"] == [accel["curve_solve_rate"][0]] * 3

    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[0] == "| levels | dr | accel |"
    names = [row.split(" | ")[0][2:] for row in rows[1:]]
    assert names == ["256 DR levels", *HELD_OUT, "mean of the 8 named"]
    cells = [re.findall(r"(\S+) \[(\S+), (\S+)\]", row) for row in rows[1:]]
    for curriculum, column in (("dr", 0), ("accel", 1)):
        result = report["curricula"][curriculum]
        named = np.asarray(result["named_solve_rate"])  # [seeds, mazes]
        expected = [np.mean(result["dr_solve_rate"]), *named.mean(axis=0), named.mean()]
        for row, value in zip(cells, expected, strict=True):
            mean, low, high = map(float, row[column])
            assert mean == pytest.approx(value, abs=5e-4) and low <= mean <= high, rows

    # The solve-rate curves (7 x 5 inches at 120 dpi) and a row of ACCEL's top 4 buffer levels
    # (each episode of 250 steps ends, so every new level enters): 4 panels of 200 x 250.
    assert Image.open(out / "solve_rate.png").size == (840, 600)
    assert Image.open(out / "levels.png").size == (800, 250)
    assert "wrote " in proc.stdout
    # Its results are never replaced: refused before anything is trained.
    before = (out / "results.json").read_text()
    proc = run_script("ued.py", *args, timeout=100)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert re.search(r"^ued.py: error: .*solve_rate.png exists", proc.stderr, re.M), proc.stderr
    assert " on maze:" not in proc.stdout and (out / "results.json").read_text() == before


def test_ued_script_clipped_regret_by_hand():
    """The score idea of experiments/ued.py: MaxMC with each step's regret clipped to
    [0, R_max]. Three levels, 4 steps: level 0 ends an episode at step 1 with return 0.5 and runs
    on; level 1 ends one unsolved (return 0) at step 1; level 2 ends none."""
    clipped_regret = load_script("ued.py").clipped_regret
    done = np.zeros((4, 3), bool)
    done[1, :2] = True
    reward = np.zeros((4, 3), np.float32)
    reward[1, 0] = 0.5
    value = np.array([[0.9, 0.3, 0.1], [0.1, -0.2, 0.1], [0.4, 0.3, 0.1], [0.4, 0.3, 0.1]])
    tr = types.SimpleNamespace(
        terminated=jnp.asarray(done),
        truncated=jnp.zeros((4, 3), bool),
        reward=jnp.asarray(reward),
        extras={"value": jnp.asarray(value, jnp.float32)},
    )
    unknown = jnp.full(3, -jnp.inf)
    score = np.asarray(clipped_regret(None, tr, None, unknown))
    # Level 0: R_max 0.5, regrets 0.5 - 0.9 -> 0 and 0.5 - 0.1 = 0.4: 0.2 (MaxMC: -0.4, 0.4: 0).
    # Level 1: R_max 0, so 0 whatever the values (MaxMC: -0.3, 0.2: -0.05). Level 2: NaN.
    np.testing.assert_allclose(score[:2], [0.2, 0.0], atol=1e-6)
    assert np.isnan(score[2])
    # A best return of 0.8 seen before raises level 0's R_max: regrets 0 (0.8 - 0.9) and 0.7.
    known = jnp.array([0.8, -jnp.inf, -jnp.inf])
    np.testing.assert_allclose(
        np.asarray(clipped_regret(None, tr, None, known))[0], 0.35, atol=1e-6
    )


CRL_TINY = ["--num-envs", "4", "--batch-size", "8", "--buffer-size", "240", "--learning-starts"]
CRL_TINY += ["16", "--width", "16", "--hidden-sizes", "16", "--repr-dim", "8", "--num-seeds", "2"]
CRL_TINY += ["--updates", "4", "--evaluations", "2", "--eval-episodes", "8"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_crl_script_smoke_compares_the_ideas_in_one_run(tmp_path):
    from PIL import Image

    out = tmp_path / "run"
    args = [*CRL_TINY, "--energy-idea", "norm", "l1", "--loss-idea", "smooth-forward"]
    proc = run_script("crl.py", *args, "--out", str(out), timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = ["norm/smooth-forward", "l1/smooth-forward"]
    line = r"^(\S+) on goal/point_reach: 2 seeds x 16 env steps in"  # 4 updates of 4 envs
    trained = re.findall(line, proc.stdout, re.M)
    assert trained == names, proc.stdout

    report = json.loads((out / "results.json").read_text())
    assert report["num_seeds"] == 2 and report["eval_episodes"] == 8
    assert list(report["variants"]) == names
    for name, energy in zip(names, ["norm", "l1"], strict=True):
        r = report["variants"][name]
        assert (r["energy"], r["loss"]) == (energy, "smooth-forward")
        assert r["curve_env_steps"] == [0, 8, 16]  # evaluated before training and after 2 chunks
        for key in ("curve_success_any", "curve_time_near_goal"):
            assert np.asarray(r[key]).shape == (3, 2), r[key]
        assert r["success_any"] == r["curve_success_any"][-1]
        assert r["time_near_goal"] == r["curve_time_near_goal"][-1]
        # Each a share of 8 episodes, and at most 50 steps near the goal per episode.
        assert all(0 <= 8 * v == round(8 * v) <= 8 for v in np.ravel(r["curve_success_any"]))
        assert all(0 <= v <= 50 for v in np.ravel(r["curve_time_near_goal"]))

    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows[0] == "| variant | success_any | time near goal (of 50 steps) |"
    assert [row.split(" | ")[0][2:] for row in rows[1:]] == names
    for row, name in zip(rows[1:], names, strict=True):
        cells = re.findall(r"(\S+) \[(\S+), (\S+)\]", row)
        r = report["variants"][name]
        for (mean, low, high), key, tol in zip(
            cells, ["success_any", "time_near_goal"], [5e-4, 0.05], strict=True
        ):
            assert float(mean) == pytest.approx(np.mean(r[key]), abs=tol), row
            assert float(low) <= float(mean) <= float(high), row

    # The success curves: 7 x 5 inches at 120 dpi, with axes, text and two curves drawn.
    png = out / "success.png"
    assert Image.open(png).size == (840, 600) and png.stat().st_size > 15_000
    assert "wrote " in proc.stdout
    # Its results are never replaced: refused before anything is compiled.
    before = (out / "results.json").read_text()
    proc = run_script("crl.py", *args, "--out", str(out), timeout=100)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert re.search(r"^crl.py: error: .*success.png exists", proc.stderr, re.M), proc.stderr
    assert " on goal/point_reach:" not in proc.stdout
    assert (out / "results.json").read_text() == before


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--energy-idea", "norm", "l3"], "--energy-idea 'l3' is not one of: norm, l2sq, dot, "),
        (["--loss-idea", "nce"], "--loss-idea 'nce' is not one of: forward, backward, "),
        (["--updates", "0"], "--updates must be >= 1, got 0"),
    ],
)
def test_crl_script_refuses_bad_input_in_one_line(args, message, tmp_path):
    proc = run_script("crl.py", *CRL_TINY, *args, "--out", str(tmp_path / "run"), timeout=100)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crl.py: error: {message}"), proc.stderr
    assert proc.stdout == "" and not (tmp_path / "run").exists()


def test_crl_script_ideas_by_hand():
    """The energy and loss ideas of experiments/crl.py on small inputs."""
    script = load_script("crl.py")
    phi = jnp.array([[0.0, 0.0], [1.0, 2.0]])
    psi = jnp.array([[1.0, 1.0], [0.0, -1.0]])
    # -|phi_i - psi_j|_1: (0,0)-(1,1): -2; (0,0)-(0,-1): -1; (1,2)-(1,1): -1; (1,2)-(0,-1): -4.
    np.testing.assert_allclose(script.neg_l1(phi, psi, 3.0), [[-2.0, -1.0], [-1.0, -4.0]])
    # Row 0's softmax of [log 3, 0] is [3/4, 1/4], row 1's of [0, 0] is [1/2, 1/2]; with eps 0.1
    # and B = 2 the targets are [0.95, 0.05] and [0.05, 0.95].
    logits = jnp.array([[np.log(3.0), 0.0], [0.0, 0.0]])
    row0 = -(0.95 * np.log(0.75) + 0.05 * np.log(0.25))
    expected = (row0 + np.log(2.0)) / 2  # 0.4878
    assert script.LABEL_SMOOTHING == 0.1
    np.testing.assert_allclose(script.smoothed_forward(logits), expected, rtol=1e-6)
    # Unsmoothed, it would be the forward InfoNCE: (-log 3/4 + log 2) / 2 = 0.4904.
    from rlsuite.ops import contrastive

    np.testing.assert_allclose(
        contrastive.forward_infonce(logits), (np.log(4 / 3) + np.log(2.0)) / 2, rtol=1e-6
    )


def test_crl_script_passes_its_ideas_to_the_agent(monkeypatch):
    """The script's variants train with the ideas they name: a built-in one through the config,
    one of the file's through `crl.make`, traced into the agent's update."""
    import jax

    from rlsuite import envs
    from rlsuite.agents import crl

    script = load_script("crl.py")
    calls = []

    def recorded(name, fn):
        def wrapper(*args):
            calls.append((name, tuple(np.shape(args[0]))))
            return fn(*args)

        return wrapper

    monkeypatch.setitem(script.ENERGY_IDEAS, "l1", recorded("l1", script.neg_l1))
    smooth = recorded("smooth", script.smoothed_forward)
    monkeypatch.setitem(script.LOSS_IDEAS, "smooth-forward", smooth)
    tiny = dict(num_envs=4, batch_size=8, buffer_size=240, learning_starts=16, width=16)
    args = script.Args(
        config=script.Config(**tiny, hidden_sizes=(16,), repr_dim=5),
        hparams=crl.CRLHparams(),
        env="goal/point_reach",
        updates=3,
    )
    env, params = envs.make("goal/point_reach")
    builtin = script.make_agent(args, "dot", "binary", env, params)
    assert (builtin.config.energy, builtin.config.contrastive_loss) == ("dot", "binary")
    assert builtin.config.total_timesteps == 12
    agent = script.make_agent(args, "l1", "smooth-forward", env, params)
    state = agent.init(jax.random.key(0), args.hparams)
    assert calls == []
    jax.eval_shape(agent.update, state, args.hparams)  # traces a gradient step
    # The energy of phi [8, 5] against psi, the loss of the [8, 8] logits.
    assert ("l1", (8, 5)) in calls and ("smooth", (8, 8)) in calls, calls


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_dqn_script_smoke_with_both_ideas_passed_in(tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "400", "--num-envs", "4"]
    args += ["--learning-starts", "80", "--batch-size", "16", "--buffer-size", "200"]
    args += ["--hidden-sizes", "8", "--eval-episodes", "2", "--out", str(tmp_path / "run")]
    args += ["--target-idea", "expected-sarsa", "--exploration-idea", "exponential"]
    proc = run_script("dqn.py", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = r"^dqn \(expected-sarsa, exponential exploration\) on cartpole: 2 seeds x 400 steps"
    assert re.search(line, proc.stdout, re.M), proc.stdout
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert len(final["eval_return_per_seed"]) == 2


def test_dqn_script_ideas_by_hand():
    module = load_script("dqn.py")
    # Expected SARSA at epsilon 0.05: item 0 greedy value 3 (of the target's [1, 3]), mean 2:
    # 0.95 * 3 + 0.05 * 2 = 2.95 -> y = 1 + 0.5 * 2.95; item 1 terminated: y = r.
    y = module.expected_sarsa_target(
        jnp.array([1.0, 2.0]), jnp.array([0.5, 0.0]), jnp.array([[1.0, 3.0], [4.0, 0.0]])
    )
    np.testing.assert_allclose(y, [1.0 + 0.5 * 2.95, 2.0], rtol=1e-6)
    # With an online selector that prefers action 0: 0.95 * 1 + 0.05 * 2 = 1.05.
    y = module.expected_sarsa_target(
        jnp.array([0.0]), jnp.array([1.0]), jnp.array([[1.0, 3.0]]), jnp.array([[9.0, 0.0]])
    )
    np.testing.assert_allclose(y, [1.05], rtol=1e-6)
    # The exponential schedule: start at 0, end + (start - end) e^-5 at the duration.
    hp = types.SimpleNamespace(start_e=1.0, end_e=0.1, exploration_fraction=0.5)
    assert float(module.exponential_epsilon(0, hp, 1000)) == pytest.approx(1.0)
    expected = 0.1 + 0.9 * np.exp(-5.0)
    assert float(module.exponential_epsilon(500, hp, 1000)) == pytest.approx(expected, rel=1e-6)
    assert float(module.exponential_epsilon(None, hp, 1000)) == pytest.approx(0.1)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("algo", ["c51", "qrdqn", "iqn", "rainbow"])
def test_distributional_script_smoke_with_cvar_values_passed_in(algo, tmp_path):
    args = ["--algo", algo, "--num-seeds", "2", "--total-timesteps", "400", "--num-envs", "4"]
    args += ["--learning-starts", "80", "--batch-size", "16", "--buffer-size", "200"]
    args += ["--hidden-sizes", "8", "--eval-episodes", "2", "--out", str(tmp_path / "run")]
    proc = run_script("distributional.py", *args, "--values-idea", "cvar", "--alpha", "0.5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = rf"^{algo} \(cvar values\) on cartpole: 2 seeds x 400 steps"
    assert re.search(line, proc.stdout, re.M), proc.stdout
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert final["algo"] == algo and len(final["eval_return_per_seed"]) == 2


def test_distributional_script_cvar_by_hand():
    module = load_script("distributional.py")
    # Mass 0.2, 0.3, 0.5 at -1, 0, 2: the lowest 0.25 is 0.2 at -1 and 0.05 at 0 -> -0.8;
    # the lowest 0.5 is 0.2 at -1, 0.3 at 0 -> -0.4; all of it is the mean, 0.8.
    values, probs = jnp.array([-1.0, 0.0, 2.0]), jnp.array([0.2, 0.3, 0.5])
    for alpha, expected in ((0.25, -0.8), (0.5, -0.4), (1.0, 0.8)):
        got = module.cvar_of_masses(values, probs, alpha)
        assert float(got) == pytest.approx(expected, rel=1e-6)
    # QR-DQN's: quantiles 3, 1, 2, 0 (unsorted), 1/4 each; the lowest half is 0 and 1 -> 0.5.
    config = types.SimpleNamespace()
    values = module.cvar_values("qrdqn", config, 0.5)
    module_ = types.SimpleNamespace(apply=lambda params, obs: jnp.array([[[3.0, 1.0, 2.0, 0.0]]]))
    assert float(values(module_, None, None)[0, 0]) == pytest.approx(0.5)
    # IQN's: the quantiles at alpha times the K midpoints (1/4, 3/4 -> 1/8, 3/8 at alpha 1/2).
    seen = {}

    def apply(params, obs, taus):
        seen["taus"] = taus
        return jnp.ones((1, 1, 2))

    values = module.cvar_values("iqn", types.SimpleNamespace(num_policy_taus=2), 0.5)
    values(types.SimpleNamespace(apply=apply), None, None)
    np.testing.assert_allclose(seen["taus"], [0.125, 0.375])


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_pqn_script_smoke_with_a_target_passed_in(tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "256", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--hidden-sizes", "8", "--eval-episodes", "2"]
    args += ["--target-idea", "mellowmax", "--out", str(tmp_path / "run")]
    proc = run_script("pqn.py", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^pqn \(mellowmax\) on cartpole: 2 seeds x 256 steps", proc.stdout, re.M)
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert len(final["eval_return_per_seed"]) == 2


def test_pqn_script_mellowmax_by_hand():
    module = load_script("pqn.py")
    # Equal values: their mellowmax is that value. [0, 1] at omega 5:
    # (log((1 + e^5) / 2)) / 5 = 0.86270..., between the mean 0.5 and the max 1.
    np.testing.assert_allclose(module.mellowmax(jnp.array([[2.0, 2.0]])), [2.0], rtol=1e-6)
    expected = np.log((1 + np.exp(5.0)) / 2) / 5
    np.testing.assert_allclose(module.mellowmax(jnp.array([0.0, 1.0])), expected, rtol=1e-6)
    # One step, terminated: the target is the reward whatever the backup.
    y = module.mellowmax_targets(
        jnp.array([[1.0]]), jnp.array([[True]]), jnp.array([[False]]),
        jnp.array([[[0.0, 1.0]]]), 0.9, 0.5,
    )  # fmt: skip
    np.testing.assert_allclose(y, [[1.0]])
    # Not terminated, the rollout's last step: r + gamma * mellowmax.
    y = module.mellowmax_targets(
        jnp.array([[1.0]]), jnp.array([[False]]), jnp.array([[False]]),
        jnp.array([[[0.0, 1.0]]]), 0.9, 0.5,
    )  # fmt: skip
    np.testing.assert_allclose(y, [[1.0 + 0.9 * expected]], rtol=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_fixpo_script_smoke_with_a_trust_region_passed_in(tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "512", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--hidden-sizes", "8", "--eval-episodes", "2"]
    args += ["--region-idea", "p90-kl", "--kl-target", "0.01", "--learning-rate", "0.01"]
    proc = run_script("fixpo.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^fixpo \(p90-kl\) on cartpole: 2 seeds x 512 steps", proc.stdout, re.M)
    # 8 updates of 2 seeds, each ending inside the trust region the idea defines.
    said = re.search(r"16 of 16 updates ended inside it; the fixup phase took (\d+)", proc.stdout)
    assert said, proc.stdout


def test_fixpo_script_p90_by_hand():
    module = load_script("fixpo.py")
    # The 90th percentile of 0..10 by linear interpolation: 9.
    np.testing.assert_allclose(module.p90_kl(jnp.arange(11.0)), 9.0, rtol=1e-6)
    assert module.REGION_IDEAS["max-kl"] is jnp.max


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_dpo_script_smoke_with_a_drift_passed_in(tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "512", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--hidden-sizes", "8", "--eval-episodes", "2"]
    args += ["--drift-idea", "log-both"]
    proc = run_script("dpo.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = re.search(r"^dpo \(log-both\) on cartpole: 2 seeds x 512 steps.*mean drift (\S+)$",
                     proc.stdout, re.M)  # fmt: skip
    assert said and float(said.group(1)) >= 0.0, proc.stdout
    bad = run_script("dpo.py", "--drift-idea", "clip", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "clip" in bad.stderr and not (tmp_path / "bad").exists()


def test_dpo_script_drifts_by_hand():
    module = load_script("dpo.py")
    config = module.dpo.DPOConfig()
    # log_both at r = e (log r = 1), A = 2: x = 2, 2 - 0.6 tanh(2 / 0.6); at A = -2, x = -2: 0.
    got = module.drift_of("log-both", config)(
        jnp.exp(jnp.ones(2)), jnp.ones(2), jnp.array([2.0, -2.0]), 0.2
    )
    np.testing.assert_allclose(got, [2.0 - 0.6 * np.tanh(2.0 / 0.6), 0.0], rtol=1e-6)
    assert module.drift_of("ppo-clip", config) is module.losses.ppo_drift


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_rarl_script_smoke_with_an_adversary_reward_passed_in(tmp_path):
    args = ["--num-seeds", "2", "--total-timesteps", "256", "--num-envs", "4", "--num-steps", "16"]
    args += ["--num-minibatches", "2", "--hidden-sizes", "8", "--eval-episodes", "2"]
    args += ["--adversary-idea", "effort", "--scales", "0.5", "2", "--attempts", "2"]
    proc = run_script("rarl.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(
        r"^rarl \(effort\) on pendulum: 2 seeds x 256 protagonist steps", proc.stdout, re.M
    )
    # The grid: mass x length over the two scales, 4 cells, each a mean return in [-3300, 0].
    cells = re.findall(r"^\s+(0\.5|2) x (0\.5|2)\s+(\S+)$", proc.stdout, re.M)
    assert len(cells) == 4 and all(-3300 <= float(v) <= 0 for *_, v in cells), proc.stdout
    assert re.search(r"^worst cell per seed: \S+, \S+$", proc.stdout, re.M)


def test_rarl_script_effort_by_hand():
    module = load_script("rarl.py")
    # -r - 0.1 |d|^2: reward -2, disturbance (1, 2): 2 - 0.1 * 5 = 1.5.
    value = module.effort(jnp.array([-2.0]), jnp.array([[1.0, 2.0]]))
    np.testing.assert_allclose(value, [1.5], rtol=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_ada_script_smoke_with_a_task_score_passed_in(tmp_path):
    args = ["--curriculum", "dr", "plr", "--score-idea", "near-best", "--num-seeds", "2"]
    args += ["--total-timesteps", "960", "--num-envs", "8", "--num-steps", "60"]
    args += ["--buffer-capacity", "32", "--eval-episodes", "2"]
    proc = run_script("ada.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = re.findall(
        r"^\| (dr|plr) \| (\S+) \[.*\| (\S+) \[.*\| (\S+) \[.*\| (\S+) \[", proc.stdout, re.M
    )
    assert [r[0] for r in rows] == ["dr", "plr"], proc.stdout
    for _, trial, *episodes in rows:  # a trial's return is the sum of its three episodes'
        assert abs(float(trial) - sum(map(float, episodes))) < 2e-3
    assert re.search(r"^\| plr - dr \(paired\) \| \S+ \[\S+, \S+\] \|$", proc.stdout, re.M)
    assert len(re.findall(r"^\| (open_corner|corridor) \| \S+ \| \S+ \|$", proc.stdout, re.M)) == 2
    assert (tmp_path / "run" / "adaptation.png").stat().st_size > 0
    # Killed in its second curriculum (plr's last checkpoint and summary gone; dr's run had
    # finished): --resume completes it to the same metrics.
    full = tmp_path / "run" / "plr"
    rows = (full / "metrics.jsonl").read_text()
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "run", cut)
    steps = sorted(int(p.name) for p in (cut / "plr" / "checkpoints").iterdir())
    assert len(steps) >= 2, steps
    shutil.rmtree(cut / "plr" / "checkpoints" / str(steps[-1]))
    (cut / "plr" / "final.json").unlink()
    (cut / "adaptation.png").unlink()
    proc = run_script("ada.py", *args, "--out", str(cut), "--resume")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (cut / "plr" / "metrics.jsonl").read_text() == rows
    assert (cut / "adaptation.png").stat().st_size > 0


def test_ada_script_near_best_by_hand():
    module = load_script("ada.py")
    # One env, trials of returns 1 (steps 0-1) and 3 (steps 2-3), R_max 3: the first trial
    # falls short of 3 - 0.6 = 2.4, the second reaches it; p = 1/2, learnability 1/4.
    done = jnp.array([[False], [True], [False], [True]])
    reward = jnp.array([[0.0], [1.0], [1.0], [2.0]])
    np.testing.assert_allclose(module.running_returns(done, reward)[:, 0], [0, 1, 1, 3])
    tr = types.SimpleNamespace(terminated=done, truncated=jnp.zeros_like(done), reward=reward)
    score = module.near_best(None, tr, None, jnp.array([-jnp.inf]))
    np.testing.assert_allclose(score, [0.25])
    # A best of 5 seen before: neither trial comes within 1 of it.
    np.testing.assert_allclose(module.near_best(None, tr, None, jnp.array([5.0])), [0.0])


@pytest.fixture(scope="module")
def random_dataset(tmp_path_factory):
    """A small Pendulum dataset of random actions, as `rlsuite dataset collect` writes it (the
    offline scripts' smokes)."""
    from tests.app.test_cli import rlsuite

    data = tmp_path_factory.mktemp("data") / "pendulum-random.hdf5"
    proc = rlsuite(
        "dataset", "collect", "--env", "pendulum", "--quality", "random", "--size", "400",
        "--total-timesteps", "300", "--eval-episodes", "2", "--out", data,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return data


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_csve_script_smoke_with_the_penalised_states_passed_in(random_dataset, tmp_path):
    data = random_dataset
    args = ["--dataset", str(data), "--num-seeds", "2", "--num-updates", "3"]
    args += ["--gradient-steps", "4", "--batch-size", "16", "--hidden-sizes", "8"]
    args += ["--num-models", "2", "--eval-episodes", "2", "--penalised", "random-actions"]
    proc = run_script("csve.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = re.search(
        r"^csve \(random-actions\) on pendulum-random.hdf5 \(pendulum, 400 transitions\): "
        r"2 seeds x 12 gradient steps; normalised score \S+, \S+ \(mean \S+\); last penalty",
        proc.stdout,
        re.M,
    )
    assert said, proc.stdout
    bad = run_script("csve.py", *args[:2], "--penalised", "uniform", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2 and "uniform" in bad.stderr and not (tmp_path / "b").exists()
    gone = run_script("csve.py", "--dataset", str(tmp_path / "none.hdf5"))
    assert gone.returncode == 2 and "no such file" in gone.stderr and "Traceback" not in gone.stderr


def test_csve_script_ideas_by_hand():
    module = load_script("csve.py")
    csve = module.csve
    algo = csve.learner(csve.CSVEConfig(hidden_sizes=(8,), num_models=3), (2,), 1)
    nets = algo.learn.args[0]  # (bound by learner.bind)
    state = algo.init(jax.random.key(0), csve.CSVEHparams())
    obs, key = jax.random.normal(jax.random.key(1), (5, 2)), jax.random.key(2)
    # Each idea is `csve.model_step` under its own actions, from the key's first half; the
    # second picks the member.
    key_action, key_member = jax.random.split(key)
    uniform = jax.random.uniform(key_action, (5, 1), minval=-1.0, maxval=1.0)
    sampled = csve.explore(nets, state, obs, key_action)
    for idea, action in [("random-actions", uniform), ("policy-samples", sampled)]:
        expected = csve.model_step(nets, state, obs, action, key_member)
        np.testing.assert_allclose(module.PENALISED[idea](nets, state, obs, key), expected)
    assert module.PENALISED["policy-mean"] is csve.penalised_states
    assert float(jnp.abs(uniform - csve.greedy(nets, state, obs)).max()) > 0.1


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_saq_script_smoke_with_the_penalty_passed_in(random_dataset, tmp_path):
    data = random_dataset
    args = ["--dataset", str(data), "--num-seeds", "2", "--num-updates", "4"]
    args += ["--gradient-steps", "4", "--batch-size", "16", "--hidden-sizes", "8"]
    args += ["--vq-fraction", "0.5", "--eval-episodes", "2", "--penalty", "large-margin"]
    proc = run_script("saq.py", *args, "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = re.search(
        r"^saq \(large-margin\) on pendulum-random.hdf5 \(pendulum, 400 transitions\): "
        r"2 seeds x 16 gradient steps; normalised score \S+, \S+ \(mean \S+\); last penalty",
        proc.stdout,
        re.M,
    )
    assert said, proc.stdout
    bad = run_script("saq.py", *args[:2], "--penalty", "huber", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2 and "huber" in bad.stderr and not (tmp_path / "b").exists()


def test_saq_script_ideas_by_hand():
    module = load_script("saq.py")
    # One critic, two states, three codes; the dataset's codes 0 and 2, margin 1:
    # max(1, 2 + 1, 3 + 1) - 1 = 3 and max(0 + 1, 0 + 1, 0) - 0 = 1, mean 2.
    q = jnp.array([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]])
    index = jnp.array([0, 2])
    np.testing.assert_allclose(module.large_margin(q, index), [2.0], rtol=1e-6)
    np.testing.assert_array_equal(module.no_penalty(q, index), [0.0])
    assert module.PENALTIES["cql"] is module.saq.discrete_cql_penalty
    # Passed in, it is the learner's term.
    algo = module.saq.learner(module.saq.SAQConfig(hidden_sizes=(8,)), (2,), 1, module.large_margin)
    assert algo.learn.args[0].penalty is module.large_margin
