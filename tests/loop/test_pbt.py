"""Population-based training: the exploit-and-explore step against hand-derived choices, members
of any agent, lineage in the run's files, exact resume, and refused input."""

import json
import pathlib
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite.app import cli
from rlsuite.loop import checkpoint
from rlsuite.loop.population import PBT, Member

BUDGET = ["--total-timesteps", "2560", "--chunks", "5", "--eval-episodes", "2", "--no-progress"]
TINY = ["--num-envs", "4", "--num-steps", "16", "--num-minibatches", "2"]
GRID = ["--grid", "learning_rate=log:1e-4:1e-2", "ent_coef=0:0.05"]


@struct.dataclass
class Hp:
    lr: jnp.ndarray
    coef: jnp.ndarray


def step(**kwargs) -> PBT:
    fields = {"fields": ("lr", "coef"), "low": (1e-4, 0.0), "high": (1e-2, 1.0)}
    return PBT(**{**fields, "log": (True, False), "members": 4, **kwargs})


def test_the_bottom_quarter_copies_a_top_quarter_member_within_each_population():
    # Two populations of 4; a quarter is one member: population 0's best is run 1 and its worst
    # run 0; population 1's best is run 6 and its worst run 5 (a NaN fitness ranks last).
    fitness = np.array([1.0, 4.0, 3.0, 2.0, 5.0, np.nan, 7.0, 6.0])
    parents, factors = step(resample=0.0).choose(fitness, update=10)
    assert parents.tolist() == [1, 1, 2, 3, 4, 6, 6, 7]
    kept = [1, 2, 3, 4, 6, 7]
    assert (factors[kept] == 1).all()
    # A population where no member finished an episode is left alone.
    nothing = np.array([np.nan] * 4 + [5.0, 1.0, 7.0, 6.0])
    assert step().choose(nothing, update=10)[0].tolist() == [0, 1, 2, 3, 4, 6, 6, 7]
    assert set(factors[[0, 5]].ravel()) <= {0.8, 1.25}
    # Half of each population of 4: the two worst copy the two best.
    parents, _ = step(fraction=0.5).choose(fitness, update=10)
    assert set(parents[[0, 3]]) <= {1, 2} and set(parents[[5, 4]]) <= {6, 7}
    assert parents[[1, 2, 6, 7]].tolist() == [1, 2, 6, 7]
    # The same (seed, update) decides the same; another update may not.
    again = step(fraction=0.5).choose(fitness, update=10)
    assert again[0].tolist() == parents.tolist()


def test_exploit_copies_the_whole_state_and_explore_scales_within_the_range():
    pbt = step(resample=0.0)
    states = Member(
        state={"w": jnp.arange(8.0)[:, None] * jnp.ones((8, 3)), "n": jnp.arange(8)},
        hparams=Hp(lr=jnp.full(8, 9e-3), coef=jnp.linspace(0.1, 0.8, 8)),
    )
    metrics = {"charts/episodic_return": np.array([[1, 1], [4, 4], [3, 3], [2, 2]] * 2, float)}
    new = pbt(states, metrics, update=3)
    parents, factors = pbt.choose(np.array([1.0, 4, 3, 2] * 2), update=3)
    np.testing.assert_array_equal(new.state["w"], np.asarray(states.state["w"])[parents])
    np.testing.assert_array_equal(new.state["n"], parents)
    lr = np.minimum(np.float32(9e-3) * factors[:, 0], 1e-2).astype(np.float32)  # clipped at high
    np.testing.assert_allclose(new.hparams.lr, lr, rtol=1e-6)
    coef = np.asarray(states.hparams.coef)[parents] * factors[:, 1]
    np.testing.assert_allclose(new.hparams.coef, coef, rtol=1e-6)
    row = pbt.lineage[-1]
    assert row["update"] == 3 and row["parent"] == parents.tolist()
    np.testing.assert_allclose(row["hparams"]["lr"], lr, rtol=1e-6)
    # A redraw (resample=1) lands in the range, log-uniformly for the log field.
    fresh = step(resample=1.0)(states, metrics, update=3).hparams
    assert ((fresh.lr >= 1e-4) & (fresh.lr <= 1e-2)).all()
    many = step().redraw((4000, 2), update=0)
    assert abs((many[:, 0] < 1e-3).mean() - 0.5) < 0.05  # the geometric midpoint of the range
    assert abs((many[:, 1] < 0.5).mean() - 0.5) < 0.05


def test_a_population_of_one_or_a_bad_fraction_is_refused():
    with pytest.raises(ValueError, match="at least 2 members"):
        step(members=1)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 0.5\]"):
        step(fraction=0.75)


def test_a_pbt_run_records_its_lineage_and_resumes_bitwise(tmp_path, monkeypatch, capsys):
    # Two populations of 4 PPO members; killed after its second checkpoint (two exploit steps
    # done) and resumed, it ends with the uninterrupted run's lineage, metrics and evaluation.
    argv = ["pbt", "ppo", "--env", "cartpole", "--population", "4", "--num-seeds", "2", *GRID]
    argv += ["--no-anneal-lr", "--log-interval", "64", *TINY, *BUDGET]
    assert cli.main([*argv, "--out", str(tmp_path / "full")]) == 0
    rows = [json.loads(r) for r in (tmp_path / "full" / "lineage.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [8, 16, 24, 32]  # after every chunk but the last
    metrics = [
        json.loads(r) for r in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()
    ]
    for row in rows:
        fitness = np.nan_to_num(np.asarray(row["fitness"], float), nan=-np.inf)
        for start in (0, 4):
            group = fitness[start : start + 4]
            # Ties keep their order (a stable sort, best first): the best is the first of the
            # highest, the worst the last of the lowest.
            worst = start + len(group) - 1 - int(np.argmin(group[::-1]))
            best = start + int(np.argmax(group))
            assert row["parent"][worst] == best  # a quarter of 4: the worst copies the best
        # Each member trains with the hparams the step gave it: the next rows log them.
        after = [m for m in metrics if m["env_steps"] == (row["update"] + 1) * 64]
        logged = [m["hparams/learning_rate"] for m in sorted(after, key=lambda m: m["seed"])]
        np.testing.assert_allclose(logged, row["hparams"]["learning_rate"], rtol=1e-6)
    table = json.loads((tmp_path / "full" / "pbt.json").read_text())
    assert len(table["populations"]) == 2 and table["exploit"]

    save, saves = checkpoint.save, []

    def killed(directory, step, *args, **kwargs):
        save(directory, step, *args, **kwargs)
        saves.append(step)
        if len(saves) == 2:
            raise KeyboardInterrupt  # the process dies after its second checkpoint

    monkeypatch.setattr(checkpoint, "save", killed)
    assert cli.main([*argv, "--out", str(tmp_path / "cut")]) == 130  # as Ctrl-C would
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.endswith(f"continue with: rlsuite pbt --resume {tmp_path / 'cut'}")
    monkeypatch.setattr(checkpoint, "save", save)
    assert cli.main(["pbt", "--resume", str(tmp_path / "cut"), "--no-progress"]) == 0
    for name in ("lineage.jsonl", "metrics.jsonl", "pbt.json"):
        assert (tmp_path / "cut" / name).read_text() == (tmp_path / "full" / name).read_text()
    full = json.loads((tmp_path / "full" / "final.json").read_text())
    cut = json.loads((tmp_path / "cut" / "final.json").read_text())
    assert cut["eval_return_per_seed"] == full["eval_return_per_seed"]

    # Without exploit: the same initial draws and keys, never copied (a random search).
    assert cli.main([*argv, "--no-exploit", "--out", str(tmp_path / "random")]) == 0
    assert not (tmp_path / "random" / "lineage.jsonl").exists()
    first = [m for m in metrics if m["env_steps"] == 64]
    random = [
        json.loads(r) for r in (tmp_path / "random" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [m for m in random if m["env_steps"] == 64] == first


def test_members_of_an_off_policy_agent_train_and_exploit(tmp_path):
    # Any agent of the contract: SAC's members (a replay buffer in each state) are copied whole.
    argv = ["pbt", "sac", "--env", "pendulum", "--population", "2", "--num-seeds", "1"]
    argv += ["--grid", "actor_lr=log:1e-4:1e-3", "--total-timesteps", "1200", "--num-envs", "2"]
    argv += ["--learning-starts", "100", "--batch-size", "32", "--chunks", "2", "--no-progress"]
    assert cli.main([*argv, "--eval-episodes", "1", "--out", str(tmp_path / "sac")]) == 0
    rows = (tmp_path / "sac" / "lineage.jsonl").read_text().splitlines()
    assert len(rows) == 1  # after the first of 2 chunks (300 steps of each env: an episode ended)
    row = json.loads(rows[0])
    best = int(np.argmax(row["fitness"]))
    assert np.isfinite(row["fitness"]).all() and row["parent"] == [best, best]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--population", "1", *GRID], "a population needs at least 2 members"),
        ([*GRID], "pbt needs --population N"),
        (["--population", "4", "--grid", "num_envs=4,8"], "num_envs is a static config field"),
        (["--population", "4", "--grid", "learning_rate=-1:1"], "learning_rate"),
        (["--population", "4", "--fraction", "0.9", *GRID], "--fraction must be in (0, 0.5]"),
        (["--population", "4", "--random", "3", *GRID], "--random is rlsuite sweep's"),
        (["--population", "four", *GRID], "--population must be a number, got 'four'"),
    ],
)
def test_bad_populations_are_refused_by_name_before_anything_is_written(
    tmp_path, capsys, args, message
):
    out = tmp_path / "pbt"
    code = cli.main(["pbt", "ppo", "--env", "cartpole", *args, "--out", str(out), *BUDGET])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_the_comparison_script_pairs_the_arms_seed_by_seed(tmp_path):
    # experiments/pbt.py at a tiny budget: both arms run, and the difference it reports is each
    # seed's PBT best minus its random-search best, read back from the arms' pbt.json.
    script = pathlib.Path(__file__).parents[2] / "experiments" / "pbt.py"
    args = ["--seeds", "2", "--population", "2", "--total-timesteps", "2048", "--chunks", "2"]
    args += ["--eval-episodes", "1", "--runs", str(tmp_path / "runs"), "--out"]
    proc = subprocess.run(
        [sys.executable, str(script), *args, str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    for arm in ("pbt", "random"):
        table = json.loads((tmp_path / "runs" / arm / "pbt.json").read_text())
        best = [p["best_eval_return"] for p in table["populations"]]
        assert result[f"{arm}_best_per_seed"] == best
    difference = np.subtract(result["pbt_best_per_seed"], result["random_best_per_seed"])
    assert result["difference_per_seed"] == difference.tolist()
    low, high = result["difference_95ci"]
    assert low <= difference.mean() <= high
    assert "95% bootstrap interval" in proc.stdout


def test_a_population_of_one_chunk_is_refused_as_it_would_never_exploit(tmp_path, capsys):
    out = tmp_path / "pbt"
    budget = ["--total-timesteps", "2560", "--chunks", "1", "--eval-episodes", "2", "--no-progress"]
    argv = ["pbt", "ppo", "--env", "cartpole", "--population", "4", *GRID, *TINY, *budget]
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--chunks 1: the run is one chunk (40 updates), so no member is ever exploited" in err
    assert not out.exists()
    # Without exploit (a random search) one chunk is fine: the check is for exploit only.
    assert cli.main([*argv, "--no-exploit", "--out", str(out)]) == 0
