"""Training across two processes on this machine (jax.distributed, coordinator on 127.0.0.1, 2 CPU
devices each, gloo collectives) through the CLI: an env-split run and a seed-split run equal the
one-process run on 4 devices; only process 0 writes; a two-process checkpoint resumes in one
process and in two; bad process settings are refused before anything is written."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE

import numpy as np
import pytest

from rlsuite.loop import checkpoint
from rlsuite.loop.loggers import read_metrics
from tests.app.test_cli import rlsuite
from tests.once import built_once

PPO = ["ppo", "--env", "cartpole", "--total-timesteps", "1536", "--num-envs", "8"]
PPO += ["--num-steps", "16", "--num-minibatches", "2", "--hidden-sizes", "16", "--chunks", "3"]
PPO += ["--eval-episodes", "2", "--no-progress"]
ENV_SPLIT = ["--mesh", "runs=1,envs=4"]  # one run over the 4 devices of both processes
SEED_SPLIT = ["--num-seeds", "4"]  # 4 runs, one per device


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_processes(*args, timeout=400, slurm=False):
    """`rlsuite train ARGS` as processes 0 and 1 of a job on 127.0.0.1, 2 CPU devices each: told
    so by the process flags, or (`slurm`) by `--distributed` and the variables SLURM sets."""
    port = free_port()

    def command(i):
        flags = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
        flags = ["--distributed"] if slurm else [*flags, "--process-id", str(i)]
        return [sys.executable, "-m", "rlsuite.app.cli", "train", *map(str, args), *flags]

    def environment(i):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JAX_COORD"))}
        if slurm:
            env.update(SLURM_NTASKS="2", SLURM_PROCID=str(i), SLURM_JOB_NODELIST="localhost")
            env.update(JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}")
        return env

    procs = [
        subprocess.Popen(command(i), stdout=PIPE, stderr=PIPE, text=True, env=environment(i))
        for i in (0, 1)
    ]
    outs = [p.communicate(timeout=timeout) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-3000:]
    return [out for out, _ in outs]


def _build_runs(root) -> dict:
    out = {}
    for name, split in (("env", ENV_SPLIT), ("seed", SEED_SPLIT)):
        two = root / f"{name}-two"
        printed = two_processes(*PPO, *split, "--cpu-devices", "2", "--out", two)
        one = root / f"{name}-one"
        proc = rlsuite("train", *PPO, *split, "--cpu-devices", "4", "--out", one)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[name] = (str(two), str(one), printed)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The env-split and seed-split runs in two processes and in one: built once for the test
    run (tests/once.py), the tests that read them being dealt to either worker."""
    built = built_once(tmp_path_factory, "multiprocess", _build_runs)
    return {k: (Path(two), Path(one), printed) for k, (two, one, printed) in built.items()}


def _numbers(rows):
    keys = sorted(k for k in rows[0] if k.startswith("losses/"))
    return np.asarray([[r["seed"], r["env_steps"], *[r[k] for k in keys]] for r in rows])


def test_a_seed_split_run_over_two_processes_is_the_one_process_run(runs):
    two, one, _ = runs["seed"]
    # Each device trains its own runs without communication: bitwise the same.
    assert read_metrics(two) == read_metrics(one)
    assert json.loads((two / "config.json").read_text())["devices"] == {
        "platform": "cpu",
        "count": 4,
    }


def test_an_env_split_run_over_two_processes_is_the_one_process_run(runs):
    two, one, _ = runs["env"]
    a, b = _numbers(read_metrics(two)), _numbers(read_metrics(one))
    assert a.shape == b.shape == (12, 2 + 5)
    # The gradients summed over the 4 devices in another order (gloo across processes): the
    # first update equal to float tolerance, and the run stays within float drift.
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-4)
    final = [json.loads((d / "final.json").read_text()) for d in (two, one)]
    assert final[0]["eval_return_per_seed"] == final[1]["eval_return_per_seed"]


def test_only_process_zero_writes(runs):
    for two, _, printed in runs.values():
        rows = read_metrics(two)
        seeds = json.loads((two / "config.json").read_text())["num_seeds"]
        assert len(rows) == 12 * seeds  # written once, not once per process
        assert checkpoint.all_steps(two / "checkpoints") == [4, 8, 12]
        assert sorted(p.name for p in two.iterdir()) == [
            "checkpoints", "config.json", "final.json", "metrics.csv", "metrics.jsonl",
        ]  # fmt: skip
        # Both processes report the same summary.
        assert (
            printed[0].splitlines()[-1].split(" in ")[0]
            == printed[1].splitlines()[-1].split(" in ")[0]
        )


@pytest.mark.slow
def test_processes_told_by_slurm_variables_train_the_same_run(runs, tmp_path):
    two, _, _ = runs["seed"]
    out = tmp_path / "slurm"
    two_processes(*PPO, *SEED_SPLIT, "--cpu-devices", "2", "--out", out, slurm=True)
    assert read_metrics(out) == read_metrics(two)


def _cut_after_second_checkpoint(source, target):
    shutil.copytree(source, target)
    shutil.rmtree(target / "checkpoints" / "12")
    (target / "final.json").unlink()


@pytest.mark.slow
def test_a_two_process_checkpoint_resumes_in_one_process_and_in_two(runs, tmp_path):
    two, _, _ = runs["env"]
    full = read_metrics(two)
    # Two processes again: bitwise where the uninterrupted two-process run ends.
    again = tmp_path / "two"
    _cut_after_second_checkpoint(two, again)
    two_processes("--resume", again, "--no-progress")
    assert read_metrics(again) == full
    # One process on the same 4 devices: the restored state is the saved one (its hashes
    # checked), so the updates before the checkpoint are the run's own rows and the ones after
    # continue it to float tolerance.
    one = tmp_path / "one"
    _cut_after_second_checkpoint(two, one)
    proc = rlsuite("train", "--resume", one, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_metrics(one)
    assert rows[:8] == full[:8]
    a, b = _numbers(rows[8:]), _numbers(full[8:])
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-4)


def test_a_checkpoint_resumes_on_another_mesh(runs, tmp_path):
    _, one, _ = runs["env"]  # one process, runs=1,envs=4
    full = read_metrics(one)
    out = tmp_path / "two-devices"
    _cut_after_second_checkpoint(one, out)
    # The run's own mesh no longer fits 2 devices: refused, naming it, nothing written.
    proc = rlsuite("train", "--resume", out, "--cpu-devices", "2", "--no-progress")
    assert proc.returncode == 2
    assert "--mesh runs=1,envs=4: runs=1 x envs=4 = 4 devices, but there are 2" in proc.stderr
    assert "continue it on another mesh with --mesh" in proc.stderr
    assert read_metrics(out) == full  # untouched
    # Continued on 2 devices: the state is resharded, the run continues to float tolerance.
    proc = rlsuite("train", "--resume", out, "--mesh", "runs=1,envs=2", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "continues on {'runs': 1, 'envs': 2}" in proc.stderr.replace("\n", " ")
    rows = read_metrics(out)
    assert rows[:8] == full[:8]
    a, b = _numbers(rows[8:]), _numbers(full[8:])
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-4)
    assert json.loads((out / "config.json").read_text())["mesh"] == {"runs": 1, "envs": 4}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num-processes", "2", "--process-id", "2"], "process_id=2 is outside [0, 2)"),
        (["--num-processes", "2", "--process-id", "0"], "is not host:port"),
        (["--num-processes", "0", "--process-id", "0"], "--num-processes must be an integer >= 1"),
        (["--process-id", "1", "--process-timeout", "soon"], "--process-timeout must be seconds"),
    ],
)
def test_bad_process_settings_are_refused_before_anything_is_written(flags, message, tmp_path):
    coordinator = "localhost" if "host:port" in message else f"127.0.0.1:{free_port()}"
    out = tmp_path / "run"
    proc = rlsuite("train", *PPO, "--coordinator", coordinator, *flags, "--out", out)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert message in proc.stderr, proc.stderr[-2000:]
    assert not out.exists()


def test_an_unreachable_coordinator_is_a_clear_error_in_bounded_time(tmp_path):
    port = free_port()  # nobody listens there
    out = tmp_path / "run"
    proc = rlsuite(
        "train", *PPO, "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
        "--process-id", "1", "--process-timeout", "3", "--out", out, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"no coordinator answered at 127.0.0.1:{port} within 3 s" in proc.stderr
    assert not out.exists()
