"""Kill and resume through the command line, for every agent, on two CPU devices: a resumed run
ends bitwise where the uninterrupted run ends, whether it was stopped between chunks or killed
(SIGKILL) at any moment, a checkpoint save included."""

import json
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from rlsuite.agents import registry
from rlsuite.loop import checkpoint
from rlsuite.loop.loggers import read_metrics
from tests.app.test_cli import rlsuite

TWO_DEVICES = ["--num-seeds", "2", "--cpu-devices", "2", "--eval-episodes", "2", "--no-progress"]
SMALL = ["--hidden-sizes", "8"]
OFF_POLICY = ["--total-timesteps", "120", "--num-envs", "2", "--learning-starts", "40"]
OFF_POLICY += ["--batch-size", "16", "--buffer-size", "64", "--chunks", "3", *SMALL]
OFFLINE = ["--num-updates", "6", "--gradient-steps", "4", "--batch-size", "16", "--chunks", "3"]
OFFLINE += SMALL
PPO = ["--env", "cartpole", "--total-timesteps", "384", "--num-envs", "4", "--num-steps", "16"]
PPO += ["--num-minibatches", "2", "--chunks", "3", *SMALL]
AGENTS = {
    "ppo": PPO,
    # Their defaults (n_step=1): the n-step window is a zero-size leaf of the learner state.
    "sac": ["--env", "pendulum", *OFF_POLICY],
    "td3": ["--env", "pendulum", *OFF_POLICY],
    "bc": OFFLINE,
    "td3_bc": OFFLINE,
    "cql": [*OFFLINE, "--num-sampled-actions", "2"],
    "iql": OFFLINE,
    "csve": [*OFFLINE, "--num-models", "2"],
    # The learner's step decides the phase: 8 of 24 steps the VQ-VAE's, then the critics'.
    "saq": [*OFFLINE, "--vq-fraction", "0.34"],
    # The recurrent PPO of RL^2: the LSTM's carry is part of the state that resumes bitwise.
    "rl2": ["--env", "meta/bandit", *PPO[2:8], "--num-minibatches", "2", "--chunks", "3", *SMALL]
    + ["--recurrent-size", "8"],
    # The trajectory buffer (episode ids, write index) resumes with the learner; its capacity
    # (buffer_size / num_envs) holds one 50-step episode of goal/point_reach.
    "crl": ["--env", "goal/point_reach", *OFF_POLICY, "--buffer-size", "200", "--width", "8"]
    + ["--repr-dim", "4"],
    "sac_her": ["--env", "goal/point_reach", *OFF_POLICY, "--buffer-size", "200"],
    # Prioritized replay (`family:variant` runs the family with these flags): the sum tree and
    # its count of updates beside SAC's learner, and TD3's two critic steps a cycle, each
    # feeding the tree.
    "sac:prioritized": ["--env", "pendulum", *OFF_POLICY, "--replay", "prioritized"],
    "td3:prioritized": ["--env", "pendulum", *OFF_POLICY, "--replay", "prioritized"],
    # Discrete actions in the replay buffer and the n-step window, the target network and the
    # count of gradient steps.
    "dqn": ["--env", "cartpole", *OFF_POLICY, "--n-step", "2", "--target-update-period", "3"],
    # The value heads: C51's atoms, QR-DQN's quantiles, IQN's fractions drawn from the key.
    "c51": ["--env", "cartpole", *OFF_POLICY, "--num-atoms", "11", "--dueling"],
    "qrdqn": ["--env", "cartpole", *OFF_POLICY, "--num-quantiles", "5", "--n-step", "2"],
    "iqn": ["--env", "cartpole", *OFF_POLICY, "--num-taus", "4", "--num-target-taus", "4"],
    # Rainbow: the prioritized replay's sum tree and its count of updates, and noisy layers.
    "rainbow": ["--env", "cartpole", *OFF_POLICY, "--num-atoms", "11"],
    # PPO's shape without a policy: the Q network, Adam's state and the exploration schedule.
    "pqn": PPO,
    # PQN with memory: the GRU's carry of every environment resumes with the Q network.
    "pqn:gru": [*PPO, "--recurrent", "gru", "--recurrent-size", "8"],
    # PPO's state and FixPO's across updates: the KL penalty's weight and its Adam state.
    "fixpo": PPO,
    # Two PPO learners, each with its own environments, and the key of the alternation.
    "rarl": ["--env", "pendulum", *PPO[2:], "--disturbance-bound", "0.5"],
    # ACCEL: the level buffer, the last levels and branch resume with the student.
    "ued": ["--env", "maze/small", "--curriculum", "accel", "--total-timesteps", "1536"]
    + ["--num-envs", "4", "--num-steps", "64", "--chunks", "3", *SMALL, "--recurrent-size", "8"]
    + ["--buffer-capacity", "8", "--minimum-fill", "0"],
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "pendulum-random.hdf5"
    proc = rlsuite(
        "dataset", "collect", "--env", "pendulum", "--quality", "random", "--size", "400",
        "--total-timesteps", "300", "--eval-episodes", "2", "--out", path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return path


def _final(out) -> dict:
    summary = json.loads((out / "final.json").read_text())
    return {k: v for k, v in summary.items() if "second" not in k and "this_call" not in k}


def resumes_in_process(full, tmp_path) -> None:
    """The run in `full`, cut after its last but one checkpoint (the last one and final.json
    removed, as a kill leaves it), resumes in this process (`cli.main`) to `full`'s metrics
    rows and final.json: the cheap check of a family's resume, beside the processes above."""
    from rlsuite.app import cli

    steps = checkpoint.all_steps(full / "checkpoints")
    assert len(steps) >= 2, steps
    cut = tmp_path / "cut"
    shutil.copytree(full, cut)
    shutil.rmtree(cut / "checkpoints" / str(steps[-1]))
    (cut / "final.json").unlink()
    assert cli.main(["train", "--resume", str(cut), "--no-progress"]) == 0
    assert read_metrics(cut) == read_metrics(full)
    assert _final(cut) == _final(full)


# In the default run, one agent of each kind of learner state: on-policy (PPO), replay (SAC),
# offline (IQL) and recurrent (RL^2). The others share those states' parts and resume in the slow
# run, the curriculum's (ACCEL: 38 s with an empty compilation cache) among them; the default run
# resumes a curriculum's state in one process (tests/topics/test_task_curricula.py).
DEFAULT_RESUME = ("ppo", "sac", "iql", "rl2")


@pytest.mark.parametrize(
    "algo",
    [a if a in DEFAULT_RESUME else pytest.param(a, marks=pytest.mark.slow) for a in AGENTS],
)
def test_every_agent_resumes_bitwise_on_two_devices(algo, dataset, tmp_path):
    _resumes_bitwise(algo, dataset, tmp_path, TWO_DEVICES)


# A 2 x 2 mesh: two groups of two devices, each splitting one run's environments, replay
# buffer and minibatches (docs/scaling.md); the state is restored whole and placed split again.
MESH = ["--num-seeds", "2", "--cpu-devices", "4", "--mesh", "runs=2,envs=2"]
MESH += ["--eval-episodes", "2", "--no-progress"]


# Slow, every agent (31 s for PPO with an empty compilation cache): the default run resumes an
# env-split checkpoint on another mesh (tests/loop/test_multiprocess.py) and run-split ones
# bitwise on two devices (above).
@pytest.mark.slow
@pytest.mark.parametrize("algo", ["ppo", "sac", "iql"])
def test_env_split_runs_resume_bitwise_on_a_two_by_two_mesh(algo, dataset, tmp_path):
    _resumes_bitwise(algo, dataset, tmp_path, MESH)


def _resumes_bitwise(case, dataset, tmp_path, flags):
    args, algo = list(AGENTS[case]), case.partition(":")[0]
    if registry.get(algo).offline:
        args += ["--dataset", dataset]
    full = tmp_path / "full"
    proc = rlsuite("train", algo, *args, *flags, "--out", full)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = checkpoint.all_steps(full / "checkpoints")
    assert len(steps) == 3, steps
    # Killed while saving its second checkpoint: every item written, not yet committed (what
    # a kill leaves at the last moment before the rename); the third and final.json never made.
    killed = tmp_path / "killed"
    shutil.copytree(full, killed)
    ckpt = killed / "checkpoints"
    shutil.rmtree(ckpt / str(steps[2]))
    (ckpt / str(steps[1]) / "COMPLETE").unlink()
    (ckpt / str(steps[1])).rename(ckpt / f".staging-{steps[1]}")
    (killed / "final.json").unlink()
    proc = rlsuite("train", "--resume", killed, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        f"warning: the save of checkpoint {steps[1]} in {ckpt} was cut short; continuing from "
        f"the complete checkpoint {steps[0]}"
    ) in proc.stderr.replace("\n", " ")
    assert read_metrics(killed) == read_metrics(full)
    assert (killed / "metrics.jsonl.stale").is_file()  # the rows after the checkpoint, kept
    assert _final(killed) == _final(full)
    assert checkpoint.all_steps(killed / "checkpoints") == steps
    # Two different runs: their metrics differ (an untrained UED student's evaluation returns
    # can both be 0, so they are not the witness).
    rows = read_metrics(full)
    seeds = [
        [{k: v for k, v in r.items() if k != "seed"} for r in rows if r["seed"] == s]
        for s in (0, 1)
    ]
    assert seeds[0] and seeds[0] != seeds[1]


def _kill_when_saving(cmd, out, rng, timeout=240):
    """Run `cmd`; once its checkpoint directory has an entry, SIGKILL it after a random delay
    (the process saves often, so kills land in saves as well as between them). Returns whether
    it had finished first."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    try:
        ckpt = out / "checkpoints"
        while not (ckpt.is_dir() and any(ckpt.iterdir())) and proc.poll() is None:
            assert time.monotonic() - start < timeout, "no checkpoint appeared"
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.5))
        finished = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    if finished:
        assert proc.returncode == 0, proc.stderr.read()[-3000:]
    return finished


def test_sigkill_at_random_moments_then_resume_ends_bitwise_where_the_full_run_does(tmp_path):
    """SAC with a replay buffer large enough that a save takes a good share of each chunk, killed
    three times at random moments (before, during or after a save), resumed each time."""
    args = ["sac", "--env", "pendulum", "--total-timesteps", "2400", "--learning-starts", "200"]
    args += ["--batch-size", "16", "--buffer-size", "300000", "--chunks", "20", *SMALL]
    args += TWO_DEVICES
    base = [sys.executable, "-m", "rlsuite.app.cli", "train"]
    full = tmp_path / "full"
    proc = rlsuite("train", *args, "--out", full)
    assert proc.returncode == 0, proc.stderr[-3000:]

    out = tmp_path / "killed"
    rng = random.Random(0)
    finished = _kill_when_saving([*base, *map(str, args), "--out", str(out)], out, rng)
    for _ in range(2):
        if finished or (out / "final.json").exists():
            break
        finished = _kill_when_saving([*base, "--resume", str(out), "--no-progress"], out, rng)
    if not (out / "final.json").exists():
        proc = rlsuite("train", "--resume", out, "--no-progress")
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_metrics(out) == read_metrics(full)
    assert _final(out) == _final(full)
    assert checkpoint.incomplete_steps(out / "checkpoints") == []
