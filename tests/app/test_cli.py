"""The command line, run as a user runs it: subprocesses with tiny budgets."""

import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

from rlsuite.app import cli
from rlsuite.loop import checkpoint
from tests.log_files import tensorboard_events, wandb_history
from tests.tiers import slow_but

TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2", "--no-progress"]


def rlsuite(*args, cwd=None, timeout=240, env=None):
    cmd = [sys.executable, "-m", "rlsuite.app.cli", *map(str, args)]
    env = None if env is None else {**os.environ, **env}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "demo"
    proc = rlsuite(
        "train",
        "ppo",
        "--env",
        "cartpole",
        "--num-seeds",
        "2",
        "--total-timesteps",
        "640",
        "--chunks",
        "2",
        "--out",
        out,
        *TINY,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "evaluation return" in proc.stdout
    return out


def test_the_numerics_flags_are_recorded_and_change_nothing_on_the_cpu(run_dir, tmp_path):
    # --deterministic and --matmul-precision are for accelerators; on the CPU the run is the
    # same to the bit, says so, and records them (for its resume and its report).
    out = tmp_path / "numerics"
    args = ["--env", "cartpole", "--num-seeds", "2", "--total-timesteps", "640", "--chunks", "2"]
    numerics = ["--deterministic", "--matmul-precision", "highest"]
    proc = rlsuite("train", "ppo", *args, *numerics, "--out", out, *TINY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--deterministic and --matmul-precision change nothing on the CPU" in proc.stderr
    devices = json.loads((out / "config.json").read_text())["devices"]
    assert (devices["deterministic"], devices["matmul_precision"]) == (True, "highest")
    assert (out / "metrics.jsonl").read_bytes() == (run_dir / "metrics.jsonl").read_bytes()
    assert rlsuite("report", out, "--out", tmp_path / "page.md").returncode == 0
    page = (tmp_path / "page.md").read_text()
    assert "| deterministic GPU operations | yes |" in page
    assert "| matmul precision | highest |" in page


def test_train_writes_the_run_files(run_dir):
    for name in ("config.json", "metrics.jsonl", "metrics.csv", "final.json"):
        assert (run_dir / name).is_file(), name
    assert any((run_dir / "checkpoints").iterdir())
    final = json.loads((run_dir / "final.json").read_text())
    for key in (
        "algo",
        "env",
        "num_seeds",
        "env_steps",
        "wall_seconds",
        "compile_seconds",
        "env_steps_per_second",
        "eval_return_per_seed",
        "eval_return_mean",
    ):
        assert key in final, key
    assert final["algo"] == "ppo" and final["env"] == "cartpole" and final["num_seeds"] == 2
    assert final["env_steps"] == 640 and len(final["eval_return_per_seed"]) == 2
    config = json.loads((run_dir / "config.json").read_text())
    assert config["config"]["num_envs"] == 4 and config["hparams"]["learning_rate"] == 2.5e-4
    # 10 updates of 64 steps, --chunks 2: the record holds the chunk length the run used.
    assert config["chunks"] == 2 and config["chunk_updates"] == 5
    assert checkpoint.all_steps(run_dir / "checkpoints") == [5, 10]
    # A row per 100 env steps by default (recorded), each chunk's end ending one: 128 and 192
    # in one row, 320 | 384 split by the chunk's end.
    from rlsuite.loop.loggers import read_metrics

    assert config["logging"]["log_interval"] == 100
    steps = [r["env_steps"] for r in read_metrics(run_dir) if r["seed"] == 0]
    assert steps == [64, 192, 256, 320, 384, 448, 576, 640]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_main_job_reaches_the_cartpole_threshold(tmp_path):
    # The README's first command as a user runs it (tuned defaults, every CPU core a device):
    # PPO on CartPole, 4 seeds, mean evaluation return >= 475 within 500k env steps.
    readme = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    line = next(line for line in readme.splitlines() if line.startswith("python3 -m venv"))
    command = shlex.split(line.split("&& rlsuite ", 1)[1])
    assert command[:4] == ["train", "ppo", "--env", "cartpole"], command
    proc = rlsuite(*command, "--out", tmp_path / "main", "--no-progress", timeout=840)
    assert proc.returncode == 0, proc.stderr[-3000:]
    final = json.loads((tmp_path / "main" / "final.json").read_text())
    assert final["num_seeds"] == 4 and final["env_steps"] <= 500_000, final
    assert final["eval_return_mean"] >= 475, final["eval_return_per_seed"]


def test_eval_and_plot(run_dir, tmp_path):
    proc = rlsuite("eval", run_dir, "--episodes", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "eval_greedy_3_seed0.json").read_text())  # saved beside it
    assert summary["episodes"] == 3 and len(summary["eval_return_per_seed"]) == 2
    assert proc.stdout.startswith(f"evaluation of {run_dir} at ")  # a table first, then where
    assert "95% percentile bootstrap interval of the mean across the 2 seeds" in proc.stdout
    png = tmp_path / "curves.png"
    proc = rlsuite("plot", run_dir, run_dir, "--out", png)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proc = rlsuite("plot", run_dir, "--out", png)  # never overwrites
    assert proc.returncode == 2 and "exists" in proc.stderr


def test_an_evaluation_of_one_seed_and_one_episode_says_them_in_the_singular():
    from rlsuite.app.evaluate import table

    summary = {"run": "runs/a", "env_steps": 128, "episodes": 1, "actions": "greedy"}
    text = table({**summary, "eval_return_per_seed": [9.0], "eval_return_mean": 9.0}, "seed")
    assert text.startswith("evaluation of runs/a at 128 env steps: 1 seed, 1 episode each,")


def test_an_evaluation_too_large_is_refused_before_it_compiles(run_dir, capsys):
    """`rlsuite eval RUN --episodes N`: the batch of episodes is checked against the memory
    once the run's states are read, and nothing is saved."""
    before = sorted(run_dir.iterdir())
    assert cli.main(["eval", str(run_dir), "--episodes", "1e11"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("rlsuite eval: error: ppo: an evaluation of 100,000,000,000 episodes ")
    assert "side by side in each of 2 runs needs 17,6" in said and "evaluate fewer" in said
    assert sorted(run_dir.iterdir()) == before


def test_a_finished_or_existing_run_is_left_alone(run_dir):
    before = (run_dir / "final.json").read_text()
    proc = rlsuite("train", "--resume", run_dir, "--no-progress")
    assert proc.returncode == 2 and "nothing to resume" in proc.stderr
    proc = rlsuite("train", "ppo", "--out", run_dir, *TINY)
    assert proc.returncode == 2 and "already holds a run" in proc.stderr
    assert (run_dir / "final.json").read_text() == before


# Slow (28 s with an empty compilation cache): the default run resumes PPO on two devices in
# tests/topics/test_resume.py; this one adds the TensorBoard and W&B logs a resume takes up.
@pytest.mark.slow
def test_resume_on_two_cpu_devices_ends_where_the_uninterrupted_run_does(tmp_path):
    import shutil

    from rlsuite.loop.loggers import read_metrics

    args = ["--num-seeds", "4", "--total-timesteps", "640", "--chunks", "2", "--cpu-devices", "2"]
    args += ["--eval-episodes", "2", "--log-interval", "128", *TINY]
    # The killed run also logs to TensorBoard and to W&B (offline), which its resume takes up.
    wandb_env = {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        wandb_env[name] = str(tmp_path / "wandb_home")
    for name, extra in (("full", []), ("killed", ["--tensorboard", "--wandb"])):
        proc = rlsuite(
            "train",
            "ppo",
            "--env",
            "cartpole",
            "--out",
            tmp_path / name,
            *args,
            *extra,
            env=wandb_env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    config = json.loads((tmp_path / "full" / "config.json").read_text())
    assert config["devices"] == {"platform": "cpu", "count": 2}
    assert config["logging"]["log_interval"] == 128  # what the resume reuses
    # As if killed before the second checkpoint: its last checkpoint and final.json gone.
    killed = tmp_path / "killed"
    shutil.rmtree(killed / "checkpoints" / "10")
    (killed / "final.json").unlink()
    # A record written before it held chunk_updates resumes by the rule it was made with
    # (updates // chunks: 5 here).
    record = json.loads((killed / "config.json").read_text())
    assert record.pop("chunk_updates") == 5
    (killed / "config.json").write_text(json.dumps(record))
    proc = rlsuite("train", "--resume", killed, "--no-progress", env=wandb_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr
    assert proc.stdout.startswith("resuming (from update 5) ppo on cartpole: ")
    assert read_metrics(killed) == read_metrics(tmp_path / "full")
    # Rows every 128 env steps (updates of 64), each chunk's end ending one: 128, 256, 320 |
    # 384, 512, 640. Both backends: the resume purged TensorBoard's events after the checkpoint
    # at 320 env steps and wrote them again; W&B had been sent every row before the kill, so the
    # same W&B run continues and is sent none again.
    logged = [128, 256, 320, 384, 512, 640]
    assert [r["env_steps"] for r in read_metrics(killed) if r["seed"] == 0] == logged
    before, after = tensorboard_events(killed)
    assert {e[2] for e in before if e[0] == "scalar"} == set(logged)
    assert after[0] == ("start", 321)
    assert {e[2] for e in after if e[0] == "scalar"} == {384, 512, 640}
    run_id = (killed / "wandb_run_id").read_text().strip()
    runs = wandb_history(killed)
    assert len(runs) == 2 and all(name.endswith(f"-{run_id}") for name in runs)
    assert [[r["env_steps"] for r in rows] for rows in runs.values()] == [logged, []]
    full, resumed = (
        json.loads((tmp_path / n / "final.json").read_text()) for n in ("full", "killed")
    )
    assert resumed["eval_return_per_seed"] == full["eval_return_per_seed"]
    assert len(set(full["eval_return_per_seed"])) > 1  # four different runs


@pytest.mark.parametrize(
    "args,message",
    [
        (["train", "ppx"], "unknown algorithm 'ppx'; did you mean 'ppo'"),
        (["trian"], "unknown command 'trian'; did you mean 'train'"),
        (["train", "ppo", "--env", "cartpol"], "did you mean 'cartpole'"),
        (
            ["train", "ppo", "--learning-rate", "-1"],
            "hparams.learning_rate=-1.0; allowed: a value > 0",
        ),
        (["train", "ppo", "--num-minibatches", "3"], "must divide"),
        (["train", "ppo", "--bogus", "1"], "unrecognized option --bogus (rlsuite train ppo --help"),
        (
            ["train", "pqn", "--lr", "0.1"],
            "unrecognized option --lr; did you mean --learning-rate?",
        ),
        (["eval", "runs/a", "--episode", "3"], "option --episode; did you mean --episodes?"),
        (["train", "ppo", "--env", "point_mass", "--num-seeds", "0"], "must be >= 1"),
        (["train", "sac", "--env", "cartpole"], "sac handles bounded 1-D Box"),
        # The action space is refused before the masks (discrete actions with masks, to TD3).
        (["train", "td3", "--env", "probe/masked_action"], "td3 handles bounded 1-D Box"),
        (["train", "crl", "--env", "pendulum"], "crl trains on a goal environment ("),
        (["train", "sac_her", "--env", "pendulum"], "); Pendulum is not"),
        (
            ["train", "td3", "--env", "pendulum", "--buffer-size", "1000000000000"],
            "a replay buffer of 1,000,000,000,000 transitions needs 38,000,000,000,008 bytes",
        ),
        (["train", "td3", "--env", "pendulum", "--tau", "2"], "hparams.tau=2.0"),
        (["train", "dqn", "--n-step", "1000"], "dqn: n_step=1000 is longer than CartPole's"),
        (["train", "ppo", "--cpu-devices", "0"], "--cpu-devices must be an integer >= 1"),
        (["train", "ppo", "--log-interval", "2.5"], "Error parsing --log-interval"),
        (["train", "ppo", "--seed", "99999999999999999999"], "--seed must be an integer from"),
        (["train", "ppo", "--learning-rate", "inf"], "rate=inf; allowed: a value > 0, finite"),
        (
            ["train", "ppo", "--env-option", "gravity=inf"],
            "CartPole: invalid params.gravity=inf; allowed: a value > 0, finite",
        ),
        (
            ["train", "pqn", "--total-timesteps", "3000000000", "--no-progress"],
            "pqn would take 3,000,000,000 steps per seed; a run counts its steps in 32-bit",
        ),
        # Sizes made large by the rollout: a budget below half an update, a rollout too large.
        (
            ["train", "pqn", "--num-envs", "100000000", "--total-timesteps", "2048"],
            "--total-timesteps 2,048 would be rounded up to 6,400,000,000 env steps, more than "
            "twice as many: one update of pqn takes 6,400,000,000 (all environments together), "
            "the smallest budget; allowed: --total-timesteps >= 3,200,000,000,",
        ),
        (
            ["train", "pqn", "--env", "gymnax/Breakout-MinAtar", "--num-envs", "100000"]
            + ["--num-steps", "20000", "--total-timesteps", "2e9"],
            "pqn: 1 run with each update's rollout of 2,000,000,000 env steps (observations "
            "included) beside the learner state needs 6,4",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, message, tmp_path, monkeypatch, capsys):
    """In this process (`cli.main`, the exit status it returns or exits with); the command as a
    process of its own: the next test."""
    monkeypatch.chdir(tmp_path)
    try:
        code = cli.main(list(args))
    except SystemExit as stop:  # the flag parser's own refusals
        code = stop.code
    said = capsys.readouterr()
    assert code == 2, (said.out, said.err)
    assert message in said.out + said.err
    assert not (tmp_path / "runs").exists()  # nothing was written


def test_a_run_that_ends_before_learning_starts_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """Said before anything is compiled (here --num-seeds 0 stops the run after the line)."""
    monkeypatch.chdir(tmp_path)
    argv = ["train", "dqn", "--total-timesteps", "5000", "--num-seeds", "0"]
    assert cli.main(argv) == 2
    said = capsys.readouterr().err.splitlines()
    assert said[0].startswith("rlsuite train: warning: DQNConfig: the run takes 5,000 env steps,")
    assert said[0].endswith("(lower learning_starts or raise total_timesteps to learn)")
    assert said[1].startswith("rlsuite train: error: --num-seeds") and len(said) == 2


def test_a_suggestion_is_the_value_most_likely_meant():
    from rlsuite.app.errors import closest

    flags = ["--anneal-lr", "--learning-rate", "--num-envs", "--ent-coef", "--no-anneal-lr"]
    assert closest("--lr", flags) == "--learning-rate"  # its words' initials
    assert closest("--learning", flags) == "--learning-rate"  # a beginning
    assert closest("--num-env", flags) == "--num-envs"  # each word's beginning
    assert closest("--ent", flags) == "--ent-coef"
    assert closest("--anneal-rl", flags) == "--anneal-lr"  # the closest spelling
    assert closest("--zzz", flags) is None
    assert closest("ppx", ["ppo", "sac"]) == "ppo" and closest("cartpol", ["cartpole"])


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`rlsuite list algos | head -1`: the pipe closed before the command writes."""
    cmd = [sys.executable, "-m", "rlsuite.app.cli", "list", "algos"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # (before the interpreter has even started the command)
    assert proc.wait(timeout=120) == 0 and proc.stderr.read() == ""


def test_bad_input_exits_2_from_the_command_line_too(tmp_path):
    proc = rlsuite("train", "ppo", "--env", "cartpol", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "did you mean 'cartpole'" in proc.stderr
    proc = rlsuite("train", "ppo", "--bogus", "1", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "unrecognized option --bogus" in proc.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("algo", slow_but("sac", ["sac", "td3"]))
def test_off_policy_train_resume_and_eval(algo, tmp_path):
    out = tmp_path / algo
    tiny = ["--total-timesteps", "120", "--num-envs", "2", "--learning-starts", "40"]
    tiny += ["--batch-size", "16", "--buffer-size", "64", "--hidden-sizes", "8", "--no-progress"]
    proc = rlsuite(
        "train",
        algo,
        "--env",
        "pendulum",
        "--num-seeds",
        "2",
        "--chunks",
        "3",
        "--eval-episodes",
        "1",
        "--out",
        out,
        *tiny,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{algo} on pendulum: 2 seeds x 120 env steps" in proc.stdout
    final = json.loads((out / "final.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert final["algo"] == algo and len(final["eval_return_per_seed"]) == 2
    assert config["config"]["buffer_size"] == 64 and config["config"]["hidden_sizes"] == [8]
    proc = rlsuite("eval", out, "--episodes", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        len(json.loads((out / "eval_greedy_2_seed0.json").read_text())["eval_return_per_seed"]) == 2
    )
    proc = rlsuite("train", "--resume", out)  # finished: nothing to resume, files untouched
    assert proc.returncode == 2 and "nothing to resume" in proc.stderr


def test_dataset_collect_then_offline_train_eval_and_guards(tmp_path):
    data = tmp_path / "data" / "pendulum-random.hdf5"
    proc = rlsuite(
        "dataset",
        "collect",
        "--env",
        "pendulum",
        "--quality",
        "random",
        "--size",
        "400",
        "--total-timesteps",
        "300",
        "--eval-episodes",
        "2",
        "--out",
        data,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "random dataset of 400 transitions on pendulum" in proc.stdout
    # A random dataset still trains the expert, for its reference return: said before it does.
    said = "training the sac expert on pendulum first, 300 env steps (the expert's return is"
    assert said in proc.stderr, proc.stderr
    before = data.read_bytes()
    proc = rlsuite(
        "dataset",
        "collect",
        "--env",
        "pendulum",
        "--quality",
        "random",
        "--size",
        "400",
        "--out",
        data,
    )
    assert proc.returncode == 2 and "exists; choose another --out or pass --overwrite" in (
        proc.stderr
    )
    assert data.read_bytes() == before  # never overwritten unless asked

    out = tmp_path / "bc"
    proc = rlsuite(
        "train",
        "bc",
        "--dataset",
        data,
        "--num-updates",
        "2",
        "--gradient-steps",
        "5",
        "--hidden-sizes",
        "8",
        "--num-seeds",
        "2",
        "--eval-episodes",
        "1",
        "--out",
        out,
        "--no-progress",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The total, in the unit an offline agent counts, before it starts and when it ends.
    before = "training bc on pendulum: 2 seeds x 10 gradient steps each (2 updates of 5)"
    assert proc.stdout.startswith(before), proc.stdout
    assert "bc on pendulum: 2 seeds x 10 gradient steps in" in proc.stdout
    assert " gradient steps/s after)" in proc.stdout
    final = json.loads((out / "final.json").read_text())
    # The whole run's time too: the training's, then the evaluation's and the files'.
    whole = re.search(r"after\), ([0-9.]+) s with the evaluation and the files;", proc.stdout)
    assert whole and float(whole[1]) >= round(final["wall_seconds"], 1), proc.stdout
    assert len(final["normalized_score_per_seed"]) == 2
    # No environment is stepped: the summary speaks of gradient steps only.
    assert final["gradient_steps"] == 10 and final["gradient_steps_this_call"] == 10
    assert final["gradient_steps_per_second"] > 0
    assert not [k for k in final if k.startswith("env_steps")], final
    record = json.loads((out / "config.json").read_text())
    assert record["dataset"] == str(data) and len(record["dataset_sha256"]) == 64
    proc = rlsuite("eval", out, "--episodes", "1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = json.loads((out / "eval_greedy_1_seed0.json").read_text())
    assert len(evaluated["normalized_score_per_seed"]) == 2  # as final.json has
    # --config of the run trains it again, from the dataset its record names: the same run.
    again = tmp_path / "bc-again"
    proc = rlsuite("train", "--config", out / "config.json", "--out", again, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    repeat = json.loads((again / "final.json").read_text())
    assert repeat["normalized_score_per_seed"] == final["normalized_score_per_seed"]

    for args, message in [
        (["train", "bc"], "bc is an offline algorithm: give --dataset FILE"),
        (["train", "bc", "--dataset", tmp_path / "none.hdf5"], "no such file"),
        (["train", "sac", "--dataset", data], "sac is an online algorithm"),
        (["train", "bc", "--dataset", data, "--env", "cartpole"], "does not match the dataset"),
        (
            [
                "dataset",
                "collect",
                "--env",
                "pendulum",
                "--quality",
                "meduim",
                "--size",
                "10",
                "--out",
                tmp_path / "x.hdf5",
            ],
            "unknown quality 'meduim'; did you mean 'medium'",
        ),
    ]:
        proc = rlsuite(*args, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr[-2000:])
    assert not (tmp_path / "runs").exists() and not (tmp_path / "x.hdf5").exists()


GUARDS = textwrap.dedent(
    """
    import contextlib, io, json, pathlib, sys
    import numpy as np
    sys.modules["wandb"] = None  # makes `import wandb` fail, installed or not
    from rlsuite.loop import checkpoint
    from rlsuite.app import cli

    tmp = pathlib.Path(sys.argv[1])

    def run(*args):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main([str(a) for a in args])
        return [rc, err.getvalue()]

    def help(*args):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                cli.main([*args, "--help"])
        except SystemExit as exit:
            return [exit.code, out.getvalue()]

    tiny = ["--total-timesteps", "512", "--no-progress"]
    (tmp / "afile").touch()
    checkpoint.save(tmp / "saved" / "checkpoints", 1, {"x": np.zeros(2)}, {"algo": "ppo"})
    (tmp / "bad").mkdir()
    (tmp / "bad" / "config.json").write_text("{")
    (tmp / "empty").mkdir()
    (tmp / "empty" / "config.json").write_text("{}")
    (tmp / "precious.png").write_text("precious")
    (tmp / "adir.hdf5").mkdir()
    (tmp / "done").mkdir()
    (tmp / "done" / "final.json").write_text("{}")
    (tmp / "logged").mkdir()
    (tmp / "logged" / "metrics.jsonl").write_text(
        '{"env_steps": 1, "seed": 0, "charts/episodic_return": 1.0}\\n'
    )
    out = {
        "file": run("train", "ppo", "--out", tmp / "afile" / "x", *tiny),
        "env_twice": run("train", "ppo", "--env", "cartpole", "--env", "pendulum",
                         "--out", tmp / "g", *tiny),
        "wandb": run("train", "ppo", "--wandb", "--out", tmp / "w" / "run", *tiny),
        "memory": run("train", "sac", "--env", "pendulum", "--num-seeds", "200000",
                      "--out", tmp / "m" / "run", *tiny),
        "checkpoints": run("train", "ppo", "--out", tmp / "saved", *tiny),
        "bad_json": run("train", "--resume", tmp / "bad"),
        "no_keys": run("eval", tmp / "empty"),
        "plot_none": run("plot", "--out", tmp / "p.png"),
        "plot_dir": run("plot", tmp / "logged", "--out", tmp / "nodir" / "p.png"),
        "plot_metric": run("plot", tmp / "logged", "--metric", "charts/foo",
                           "--out", tmp / "p.png"),
        # matplotlib would add ".png" and replace precious.png
        "plot_no_ext": run("plot", tmp / "logged", "--out", tmp / "precious"),
        "plot_format": run("plot", tmp / "logged", "--out", tmp / "p.txt"),
        "plot_bins": run("plot", tmp / "logged", "--bin-steps", "0", "--out", tmp / "p.png"),
        "log_interval": run("train", "ppo", "--log-interval", "0", "--out", tmp / "li", *tiny),
        "final": run("train", "ppo", "--out", tmp / "done", *tiny),
        # Output paths are checked before the expert is trained.
        "collect_file": run("dataset", "collect", "--env", "pendulum", "--quality", "expert",
                            "--size", "10", "--out", tmp / "afile" / "d.hdf5"),
        "collect_dir": run("dataset", "collect", "--env", "pendulum", "--quality", "expert",
                           "--size", "10", "--out", tmp / "adir.hdf5", "--overwrite"),
        # Not an error: a budget that is not whole updates is said to be rounded.
        "rounded": run("train", "ppo", "--num-envs", "1", "--num-steps", "8", "--num-minibatches",
                       "1", "--update-epochs", "1", "--total-timesteps", "12", "--eval-episodes",
                       "1", "--out", tmp / "r", "--no-progress"),
    }
    out["help_iql"] = help("train", "iql")  # no dataset needed to read the flags
    out["help_sac"] = help("train", "sac")
    print(json.dumps(out))
    """
)


def test_bad_input_is_refused_with_a_message_and_leaves_nothing_behind(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", GUARDS, str(tmp_path)], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = {
        "file": f"--out {tmp_path / 'afile' / 'x'}: {tmp_path / 'afile'} is a file",
        "env_twice": "--env is given 2 times (cartpole, pendulum); give it once",
        "wandb": "--wandb: MetricsLogger(wandb=True) needs the 'wandb' package",
        "memory": "the learner state of 200,000 runs with its checkpoint copy needs",
        "checkpoints": "checkpoints already holds checkpoints",
        "bad_json": f"{tmp_path / 'bad' / 'config.json'} is not valid JSON",
        "no_keys": "config.json lacks algo, env, num_seeds, config, hparams",
        "plot_none": "plot needs at least one run directory",
        "plot_dir": "nodir is not a directory",
        "plot_metric": "logs no 'charts/foo'; its metrics: charts/episodic_return",
        "plot_no_ext": f"{tmp_path / 'precious.png'} exists; choose another --out",
        "plot_format": "matplotlib cannot write '.txt' images; use one of ",
        "plot_bins": "--bin-steps must be >= 1, got 0",
        "log_interval": "--log-interval must be >= 1 env steps per row, got 0",
        "final": f"--out {tmp_path / 'done'}: {tmp_path / 'done' / 'final.json'} exists",
        "collect_file": f"{tmp_path / 'afile'} is a file, not a directory",
        "collect_dir": f"--out {tmp_path / 'adir.hdf5'} is a directory; give the name of a file",
    }
    for case, message in expected.items():
        rc, stderr = out[case]
        assert rc == 2 and message in stderr, (case, stderr)
    assert (tmp_path / "precious.png").read_text() == "precious"
    assert (tmp_path / "done" / "final.json").read_text() == "{}"
    rc, text = out["help_iql"]
    assert rc == 0 and "--expectile" in text and "--dataset" in text, text[-2000:]
    rc, text = out["help_sac"]
    assert rc == 0 and "(default: pendulum)" in text, text[-2000:]  # sac refuses cartpole
    rc, stderr = out["rounded"]
    note = "takes 8 env steps per seed, whole updates of 8, for --total-timesteps 12"
    assert rc == 0 and note in stderr, stderr
    assert json.loads((tmp_path / "r" / "final.json").read_text())["env_steps"] == 8
    # Nothing was written for the refused or failed runs; what was there is unchanged.
    for name in ("g", "w", "m", "p.png", "li"):
        assert not (tmp_path / name).exists(), name
    assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == ["checkpoints"]
    assert (tmp_path / "bad" / "config.json").read_text() == "{"


def test_a_record_from_before_log_interval_resumes_with_a_row_per_update(tmp_path, monkeypatch):
    """Runs recorded before `log_interval` existed wrote a row per update: their resume is given
    log_interval=1 (a row per update, whatever its env steps); a recorded interval is kept."""
    import types

    from rlsuite.app import runs
    from rlsuite.loop import runner

    class Stop(Exception):
        pass

    def fit(*args, output, **kwargs):
        raise Stop(output.logger_options)

    monkeypatch.setattr(runner, "fit", fit)
    config = types.SimpleNamespace(num_updates=4)
    agent = types.SimpleNamespace(config=config, env_steps_per_update=8)
    record = {"seed": 0, "num_seeds": 1, "chunks": 2, "chunk_updates": 2, "env": "cartpole"}
    record.update(eval_episodes=1, algo="ppo", config={}, hparams={})
    for logging, expect in [
        ({"tensorboard": False, "wandb": False}, 1),
        ({"tensorboard": False, "wandb": False, "log_interval": 500}, 500),
    ]:
        typed = runs.RunRecord.from_dict({**record, "logging": logging})
        with pytest.raises(Stop) as stopped:
            runs.train(typed, runs.Built(agent, None, None), tmp_path, True, False)
        assert stopped.value.args[0] == {**logging, "log_interval": expect}


def test_a_fault_inside_a_library_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    """Only the suite's own checks become one-line errors with exit status 2: a TypeError or
    ValueError raised inside jax is a fault, so it propagates with its traceback (and the new
    run's `config.json` is removed, as for any failure before the first checkpoint)."""
    import jax.numpy as jnp

    from rlsuite.app import cli, errors
    from rlsuite.loop import runner

    def fit(*args, **kwargs):
        return jnp.ones(2) @ jnp.ones(3)  # jax raises TypeError: a shape bug, not bad input

    monkeypatch.setattr(runner, "fit", fit)
    out = tmp_path / "run"
    with pytest.raises(TypeError, match="dot_general") as raised:
        cli.main(["train", "ppo", "--out", str(out), "--no-progress"])
    assert not errors.raised_here(raised.value)
    assert not out.exists()
    # The suite's own refusal of the same kind (fit's check of the hparams) is still a one-line
    # error, and leaves nothing behind either.
    monkeypatch.undo()
    assert cli.main(["train", "ppo", "--learning-rate", "-1", "--out", str(out)]) == 2
    assert "learning_rate" in capsys.readouterr().err and not out.exists()


def test_run_script_reports_the_scripts_own_checks_in_one_line_and_keeps_faults(capsys):
    """`run_script` as an experiment script uses it: its value comes back; a check raised in the
    script's own file (here, this one) or in the suite exits 2 with `<file>: error: ...`; an
    error from inside jax is a fault and propagates with its traceback."""
    import jax.numpy as jnp

    from rlsuite import envs
    from rlsuite.app.errors import run_script

    def refuse(num_seeds):
        if num_seeds < 1:
            raise ValueError(f"--num-seeds must be >= 1, got {num_seeds}")
        return num_seeds

    assert run_script(refuse, 3) == 3
    for main, args, message in [
        (refuse, (0,), "test_cli.py: error: --num-seeds must be >= 1, got 0"),
        (lambda: envs.make("nope"), (), "test_cli.py: error: unknown environment 'nope'"),
    ]:
        with pytest.raises(SystemExit) as exited:
            run_script(main, *args)
        assert exited.value.code == 2
        assert capsys.readouterr().err.startswith(message)
    with pytest.raises(TypeError, match="dot_general"):
        run_script(lambda: jnp.ones(2) @ jnp.ones(3))
