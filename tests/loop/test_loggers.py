"""Metrics logger: exact per-seed rows in JSONL and CSV, chunk form, rows combined per log
interval, strict JSON, resume, refusal to overwrite, optional backends imported only when
asked."""

import csv
import json
import math
import subprocess
import sys
import time

import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.loop.loggers import CSV, JSONL, MetricsLogger, check_backends, read_metrics
from tests.log_files import tensorboard_events, wandb_history

RET, LOSS = "charts/episodic_return", "losses/policy_loss"


def read_csv(out_dir) -> list[dict]:
    with open(out_dir / CSV, newline="") as f:
        return list(csv.DictReader(f))


def assert_csv_matches_jsonl(out_dir):
    """Every JSONL row appears in the CSV, in order, with the same values."""
    rows, table = read_metrics(out_dir), read_csv(out_dir)
    assert len(rows) == len(table)
    for row, line in zip(rows, table, strict=True):
        assert set(line) >= set(row)
        for key, value in line.items():
            if key not in row:
                assert value == ""
            elif key in ("env_steps", "seed"):
                assert int(value) == row[key]
            elif math.isnan(row[key]):
                assert value == ""  # null in the JSONL
            else:
                assert float(value) == row[key]


def test_point_rows_per_seed_exact(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.log(128, {RET: jnp.array([1.5, -2.0, 0.1]), LOSS: np.array([0.25, 0.5, 0.75])})
        logger.log(256, {RET: jnp.array([3.0, 4.0, 5.0]), LOSS: np.array([0.0, 1.0, 2.0])})
    rows = read_metrics(tmp_path)
    # 0.1 is a float32 in the jax array: the row holds that float32 value exactly.
    assert rows == [
        {"env_steps": 128, "seed": 0, RET: 1.5, LOSS: 0.25},
        {"env_steps": 128, "seed": 1, RET: -2.0, LOSS: 0.5},
        {"env_steps": 128, "seed": 2, RET: float(np.float32(0.1)), LOSS: 0.75},
        {"env_steps": 256, "seed": 0, RET: 3.0, LOSS: 0.0},
        {"env_steps": 256, "seed": 1, RET: 4.0, LOSS: 1.0},
        {"env_steps": 256, "seed": 2, RET: 5.0, LOSS: 2.0},
    ]
    assert list(read_csv(tmp_path)[0]) == ["env_steps", "seed", RET, LOSS]
    assert_csv_matches_jsonl(tmp_path)


def test_scalar_metrics_are_one_seed(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.log(10, {RET: jnp.float32(2.5), LOSS: 1})
    assert read_metrics(tmp_path) == [{"env_steps": 10, "seed": 0, RET: 2.5, LOSS: 1.0}]


def test_chunk_form(tmp_path):
    returns = np.arange(6, dtype=np.float32).reshape(2, 3)  # [num_seeds=2, T=3]
    with MetricsLogger(tmp_path) as logger:
        logger.log(np.array([100, 200, 300]), {RET: returns, LOSS: -returns})
        logger.log(jnp.array([400, 500]), {RET: jnp.array([7.0, 8.0])})  # single run, [T]
    rows = read_metrics(tmp_path)
    assert [(r["env_steps"], r["seed"], r[RET]) for r in rows] == [
        (100, 0, 0.0),
        (100, 1, 3.0),
        (200, 0, 1.0),
        (200, 1, 4.0),
        (300, 0, 2.0),
        (300, 1, 5.0),
        (400, 0, 7.0),
        (500, 0, 8.0),
    ]
    assert [r.get(LOSS) for r in rows[:6]] == [-0.0, -3.0, -1.0, -4.0, -2.0, -5.0]
    assert LOSS not in rows[6]
    assert_csv_matches_jsonl(tmp_path)


def test_shape_errors(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        with pytest.raises(ValueError, match="must be \\[num_seeds, 3\\]"):
            logger.log(np.array([1, 2, 3]), {RET: np.zeros((2, 4))})
        with pytest.raises(ValueError, match="disagree on the number of seeds"):
            logger.log(5, {RET: np.zeros(2), LOSS: np.zeros(3)})
        with pytest.raises(ValueError, match="reserved"):
            logger.log(5, {"seed": np.zeros(2)})
    assert read_metrics(tmp_path) == []


def test_new_key_widens_csv(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.log(1, {RET: np.array([1.0, 2.0])})
        logger.log(2, {RET: np.array([3.0, 4.0]), "eval/return": np.array([5.0, 6.0])})
        logger.log(3, {RET: np.array([7.0, 8.0])})
    table = read_csv(tmp_path)
    assert list(table[0]) == ["env_steps", "seed", RET, "eval/return"]
    assert [r["eval/return"] for r in table] == ["", "", "5.0", "6.0", "", ""]
    assert_csv_matches_jsonl(tmp_path)


def test_refuses_to_overwrite_existing_logs(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.log(1, {RET: np.array([1.0])})
    before = (tmp_path / JSONL).read_bytes(), (tmp_path / CSV).read_bytes()
    with pytest.raises(FileExistsError, match="resume_from_step"):
        MetricsLogger(tmp_path)
    assert ((tmp_path / JSONL).read_bytes(), (tmp_path / CSV).read_bytes()) == before


def _log_run(logger, steps):
    for step in steps:
        logger.log(step, {RET: np.array([step / 10, step / 20]), LOSS: np.array([1.0, 2.0])})


def test_resume_moves_rows_after_checkpoint_to_stale_and_appends(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        _log_run(logger, [100, 200, 300, 400])
    original = read_metrics(tmp_path)
    original_csv = (tmp_path / CSV).read_text().splitlines()
    # The run was killed after logging 400; its last checkpoint was at 200.
    with MetricsLogger(tmp_path, resume_from_step=200) as logger:
        assert read_metrics(tmp_path) == original[:4]
        _log_run(logger, [300, 400, 500])
    rows = read_metrics(tmp_path)
    assert [r["env_steps"] for r in rows] == [100, 100, 200, 200, 300, 300, 400, 400, 500, 500]
    assert rows[:4] == original[:4]
    stale = [json.loads(line) for line in (tmp_path / (JSONL + ".stale")).read_text().splitlines()]
    assert stale == original[4:]
    stale_csv = (tmp_path / (CSV + ".stale")).read_text().splitlines()
    assert stale_csv == [original_csv[0]] + original_csv[5:]
    assert_csv_matches_jsonl(tmp_path)
    # A second resume appends to the stale files: nothing is lost.
    with MetricsLogger(tmp_path, resume_from_step=300):
        pass
    stale = [json.loads(line) for line in (tmp_path / (JSONL + ".stale")).read_text().splitlines()]
    assert stale == original[4:] + rows[6:]
    stale_csv = (tmp_path / (CSV + ".stale")).read_text().splitlines()
    assert len(stale_csv) == 1 + 4 + 4 and stale_csv.count(original_csv[0]) == 1
    assert [r["env_steps"] for r in read_metrics(tmp_path)] == [100, 100, 200, 200, 300, 300]
    assert_csv_matches_jsonl(tmp_path)


def test_stale_csv_blocks_each_sit_under_their_own_header(tmp_path):
    # Three resumes whose stale rows have the columns (a, c), then (a), then (a, c) again.
    for i, (names, resume) in enumerate([("ac", None), ("a", 1), ("ac", 1), ("a", 1)]):
        with MetricsLogger(tmp_path, resume_from_step=resume) as logger:
            logger.log(1, {"a": np.array([0.0])})
            logger.log(2, {name: np.array([float(i)]) for name in names})
    blocks, header = [], None
    with open(tmp_path / (CSV + ".stale"), newline="") as f:
        for fields in csv.reader(f):
            if fields[0] == "env_steps":
                header = fields
            else:
                blocks.append(dict(zip(header, fields, strict=True)))
    assert blocks == [
        {"env_steps": "2", "seed": "0", "a": "0.0", "c": "0.0"},
        {"env_steps": "2", "seed": "0", "a": "1.0"},
        {"env_steps": "2", "seed": "0", "a": "2.0", "c": "2.0"},
    ]


def test_resume_moves_a_line_cut_short_by_a_kill_to_stale(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        _log_run(logger, [100])
    with open(tmp_path / JSONL, "a") as f:
        f.write('{"env_steps": 1')  # the kill hit mid-write
    with open(tmp_path / CSV, "a") as f:
        f.write("1")
    with MetricsLogger(tmp_path, resume_from_step=100) as logger:
        _log_run(logger, [200])
    assert [r["env_steps"] for r in read_metrics(tmp_path)] == [100, 100, 200, 200]
    assert (tmp_path / (JSONL + ".stale")).read_text() == '{"env_steps": 1\n'
    assert (tmp_path / (CSV + ".stale")).read_text().splitlines()[1:] == ["1"]
    assert_csv_matches_jsonl(tmp_path)


def test_reading_skips_only_a_last_line_cut_short(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        _log_run(logger, [100])
    good = (tmp_path / JSONL).read_text()
    (tmp_path / JSONL).write_text(good + '{"env_steps": 2')  # the kill hit mid-write
    assert [r["env_steps"] for r in read_metrics(tmp_path)] == [100, 100]
    (tmp_path / JSONL).write_text('{"env_steps": 2\n' + good)  # not the last line: an error
    with pytest.raises(ValueError, match="line 1 is not a JSON object"):
        read_metrics(tmp_path)


def test_resume_into_empty_dir_starts_fresh(tmp_path):
    with MetricsLogger(tmp_path / "run", resume_from_step=50) as logger:
        _log_run(logger, [100])
    assert len(read_metrics(tmp_path / "run")) == 2
    assert not (tmp_path / "run" / (JSONL + ".stale")).exists()


def test_tensorboard_scalars_per_seed_and_resume_purges_after_checkpoint(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=True, log_interval=10) as logger:
        logger.log(np.array([10, 20]), {RET: np.array([[1.5, 2.5], [3.5, 4.5]])})
    # Killed after the row at 20; resumed from the checkpoint at 10.
    options = dict(tensorboard=True, resume_from_step=10, log_interval=10)
    with MetricsLogger(tmp_path, **options) as logger:
        logger.log(np.array([20, 30]), {RET: np.array([[2.5, 5.5], [4.5, 6.5]])})
    first, second = tensorboard_events(tmp_path)
    assert [e for e in first if e[0] == "scalar"] == [
        ("scalar", f"{RET}/seed_0", 10, 1.5),
        ("scalar", f"{RET}/seed_1", 10, 3.5),
        ("scalar", f"{RET}/seed_0", 20, 2.5),
        ("scalar", f"{RET}/seed_1", 20, 4.5),
    ]
    # TensorBoard hides every earlier event from step 11 on when it reads this START record.
    assert second[0] == ("start", 11)
    assert [e[2] for e in second[1:]] == [20, 20, 30, 30]


def test_wandb_offline_run_gets_rows_and_a_resume_continues_it(tmp_path, monkeypatch):
    """The real wandb package in offline mode: one W&B run id for the run and its resume, per-seed
    keys against env_steps, and the resume sends only the rows the run did not have."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "wandb_home"))
    run = tmp_path / "run"
    options = dict(wandb=True, wandb_project="proj", log_interval=10)
    with MetricsLogger(run, config={"lr": 3e-4}, **options) as logger:
        logger.log(np.array([10, 20]), {RET: np.array([[1.0, 2.0], [3.0, 4.0]])})
    run_id = (run / "wandb_run_id").read_text().strip()
    (first,) = wandb_history(run).values()
    assert first == [
        {"env_steps": 10, f"{RET}/seed_0": 1.0, f"{RET}/seed_1": 3.0},
        {"env_steps": 20, f"{RET}/seed_0": 2.0, f"{RET}/seed_1": 4.0},
    ]
    # Resumed from the checkpoint at 10 after a kill that followed the row at 20: the same W&B
    # run continues, and gets only the rows it has not had (20 was sent, with these values).
    time.sleep(1.0)  # wandb names an offline run's folder by the second it starts
    with MetricsLogger(run, resume_from_step=10, **options) as logger:
        logger.log(np.array([20, 30]), {RET: np.array([[2.0, 5.0], [4.0, 6.0]])})
    runs = wandb_history(run)
    assert len(runs) == 2 and all(name.endswith(f"-{run_id}") for name in runs)
    assert list(runs.values())[1] == [{"env_steps": 30, f"{RET}/seed_0": 5.0, f"{RET}/seed_1": 6.0}]
    assert (run / "wandb_run_id").read_text().strip() == run_id
    assert [r["env_steps"] for r in read_metrics(run)] == [10, 10, 20, 20, 30, 30]


@pytest.mark.parametrize("flag,module", [("wandb", "wandb"), ("tensorboard", "tensorboardX")])
def test_backend_asked_but_missing_raises_before_writing(tmp_path, monkeypatch, flag, module):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ImportError, match=r"pip install 'rlsuite\[logging\]'"):
        MetricsLogger(tmp_path / "run", **{flag: True})
    assert not (tmp_path / "run").exists()
    with pytest.raises(ImportError, match=r"pip install 'rlsuite\[logging\]'"):
        check_backends(**{flag: True})  # the same check, on its own, writes nothing


def test_backends_not_imported_unless_asked(tmp_path):
    code = (
        "import sys, numpy as np\n"
        "from rlsuite.loop.loggers import MetricsLogger\n"
        f"with MetricsLogger({str(tmp_path)!r}) as logger:\n"
        "    logger.log(1, {'charts/episodic_return': np.array([1.0])})\n"
        "print(sorted(m for m in ('tensorboardX', 'wandb', 'tensorboard') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"
    assert len(read_metrics(tmp_path)) == 1


def strict(line: str) -> dict:
    """A JSONL line read by a strict parser (one that refuses NaN and Infinity literals)."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=refuse)


def test_values_that_are_not_numbers_are_null_and_read_back_as_nan(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        nan, inf = np.nan, np.inf
        logger.log(np.array([100, 200]), {RET: np.array([[nan, 3.0]]), LOSS: [[inf, -inf]]})
    lines = (tmp_path / JSONL).read_text().splitlines()
    assert [strict(line) for line in lines] == [
        {"env_steps": 100, "seed": 0, RET: None, LOSS: None},
        {"env_steps": 200, "seed": 0, RET: 3.0, LOSS: None},
    ]
    rows = read_metrics(tmp_path)
    assert math.isnan(rows[0][RET]) and math.isnan(rows[0][LOSS]) and rows[1][RET] == 3.0
    assert read_metrics(tmp_path) == rows  # (one NaN object, so rows read twice compare equal)
    # The CSV: an empty cell, as for a column a row does not have.
    assert (tmp_path / CSV).read_text().splitlines()[1:] == ["100,0,,", "200,0,3.0,"]
    assert_csv_matches_jsonl(tmp_path)


def test_files_with_nan_literals_are_read_and_a_resume_makes_them_strict(tmp_path):
    # As earlier versions wrote them.
    old = [{"env_steps": 10, "seed": 0, RET: float("nan")}, {"env_steps": 20, "seed": 0, RET: 1.5}]
    (tmp_path / JSONL).write_text("".join(json.dumps(r) + "\n" for r in old))
    assert "NaN" in (tmp_path / JSONL).read_text()
    rows = read_metrics(tmp_path)
    assert math.isnan(rows[0][RET]) and rows[1] == old[1]
    with MetricsLogger(tmp_path, resume_from_step=20, log_interval=10) as logger:
        logger.log(30, {RET: np.array([np.nan])})
    lines = (tmp_path / JSONL).read_text().splitlines()
    assert [strict(line)[RET] for line in lines] == [None, 1.5, None]
    assert_csv_matches_jsonl(tmp_path)


def test_rows_combine_the_updates_of_each_log_interval(tmp_path):
    # One chunk of 10 updates of 1 env step, rows every 4 steps: updates 1-4, 5-8, and 9-10 (the
    # chunk's end ends a row). Seed 0's update 4 holds 3 episodes of mean -2.
    nan = np.nan
    episodes = [[0, 1, 0, 3, 0, 0, 0, 0, 1, 0], [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]]
    returns = [
        [nan, -10, nan, -2, nan, nan, nan, nan, 5, nan],
        [1, 2, 3, 4, nan, nan, nan, nan, nan, nan],
    ]
    losses = [[nan, nan, 1, 2, 3, 4, 5, 6, 7, 8], [nan] * 10]
    metrics = {
        "charts/buffer_size": np.tile(np.arange(1.0, 11.0), (2, 1)),
        "charts/episodes": np.array(episodes, dtype=float),
        RET: np.array(returns),
        LOSS: np.array(losses),
    }
    with MetricsLogger(tmp_path, log_interval=4) as logger:
        logger.log(np.arange(1, 11), metrics)
    lines = (tmp_path / JSONL).read_text().splitlines()

    def row(step, seed, size, count, ret, loss):
        names = ("charts/buffer_size", "charts/episodes", RET, LOSS)
        values = dict(zip(names, (size, count, ret, loss), strict=True))
        return {"env_steps": step, "seed": seed, **values}

    # Returns: the mean over the episodes, (-10 * 1 + -2 * 3) / 4 = -4, and (1+2+3+4) / 4; none
    # ended in 5-8: null. Losses: the mean of the updates that have one (1, 2), (3..6), (7, 8).
    # Buffer size: its value at the row's last update. Episodes: the sum.
    assert [strict(line) for line in lines] == [
        row(4, 0, 4.0, 4.0, -4.0, 1.5),
        row(4, 1, 4.0, 4.0, 2.5, None),
        row(8, 0, 8.0, 0.0, None, 4.5),
        row(8, 1, 8.0, 0.0, None, None),
        row(10, 0, 10.0, 1.0, 5.0, 7.5),
        row(10, 1, 10.0, 0.0, None, None),
    ]
    assert_csv_matches_jsonl(tmp_path)


def _chunks(logger, chunks):
    for chunk in chunks:  # updates of 3 env steps; the loss is the update's env_steps
        steps = 3 * np.arange(4 * chunk + 1, 4 * chunk + 5)
        logger.log(steps, {LOSS: np.stack([steps, -steps]).astype(float)})


def test_a_resume_writes_the_rows_of_the_uninterrupted_run(tmp_path):
    # Chunks of 4 updates of 3 env steps, rows every 10: an interval never spans two chunks, so
    # the run resumed from its checkpoint at the end of chunk 2 (24 env steps) writes its rows.
    full, killed = tmp_path / "full", tmp_path / "killed"
    with MetricsLogger(full, log_interval=10) as logger:
        _chunks(logger, [0, 1, 2])
    rows = read_metrics(full)
    # (3, 6, 9) | 12 -- chunk end -- 15, 18 | (21, 24) -- chunk end -- (27, 30) | (33, 36)
    assert [r["env_steps"] for r in rows[::2]] == [9, 12, 18, 24, 30, 36]
    assert [r[LOSS] for r in rows[::2]] == [6.0, 12.0, 16.5, 22.5, 28.5, 34.5]
    with MetricsLogger(killed, log_interval=10) as logger:
        _chunks(logger, [0, 1, 2])  # killed after logging chunk 3, before its checkpoint
    with MetricsLogger(killed, log_interval=10, resume_from_step=24) as logger:
        _chunks(logger, [2])
    assert read_metrics(killed) == rows
    assert (killed / CSV).read_text() == (full / CSV).read_text()
    stale = [json.loads(line) for line in (killed / (JSONL + ".stale")).read_text().splitlines()]
    assert stale == rows[8:]


def test_the_default_interval_keeps_a_one_env_sac_run_small(tmp_path):
    # 12,000 updates of one env step, 2 seeds, 10 chunks, an episode every 200 steps: a row
    # per 100 steps is 120 rows per seed (a row per update was 12,000), and every finished
    # episode is still counted.
    steps = np.arange(1, 12_001)
    ended = (steps % 200 == 0).astype(float)
    with MetricsLogger(tmp_path) as logger:
        for chunk in np.split(np.arange(12_000), 10):
            returns = np.where(ended[chunk] > 0, -steps[chunk] / 10.0, np.nan)
            logger.log(
                steps[chunk],
                {
                    "charts/episodes": np.tile(ended[chunk], (2, 1)),
                    RET: np.stack([returns, 2 * returns]),
                    LOSS: np.tile(steps[chunk] / 1.0, (2, 1)),
                },
            )
    rows = read_metrics(tmp_path)
    assert len(rows) == 240 and [r["env_steps"] for r in rows[:4]] == [100, 100, 200, 200]
    assert sum(r["charts/episodes"] for r in rows) == 2 * 60
    assert rows[3][RET] == -40.0 and rows[2][LOSS] == 150.5  # (101 + ... + 200) / 100
    assert (tmp_path / JSONL).stat().st_size < 30_000


@pytest.mark.parametrize("value", [0, -100, 2.5, True, "100", None])
def test_a_bad_log_interval_is_refused_naming_it_before_anything_is_written(tmp_path, value):
    message = f"log_interval must be an int >= 1 \\(env steps per metrics row\\), got {value!r}"
    with pytest.raises(ValueError, match=message):
        check_backends(log_interval=value)  # what fit calls before it starts
    with pytest.raises(ValueError, match=message):
        MetricsLogger(tmp_path / "run", log_interval=value)
    assert not (tmp_path / "run").exists()


def test_tensorboard_gets_the_combined_rows(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=True, log_interval=20) as logger:
        logger.log(np.array([10, 20, 30]), {LOSS: np.array([[1.0, 2.0, 4.0]])})
    (events,) = tensorboard_events(tmp_path)
    assert [e for e in events if e[0] == "scalar"] == [
        ("scalar", f"{LOSS}/seed_0", 20, 1.5),
        ("scalar", f"{LOSS}/seed_0", 30, 4.0),
    ]
