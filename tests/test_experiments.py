"""Experiment scripts: subprocess smoke runs on tiny budgets (exit code, printed table, JSON)."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_script(script: str, *args: str, timeout: float = 150) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": os.environ.get(
            "JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/rlsuite/jax")
        ),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
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
@pytest.mark.parametrize("idea", ["ppo-clip", "clip-free"])
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
    [("sac.py", "min-of-critics"), ("sac.py", "mean-of-critics"), ("td3.py", "single-critic")],
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
