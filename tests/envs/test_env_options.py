"""Environment options (`rlsuite train ALGO --env NAME --env-option FIELD=VALUE ...`): values read
as the field's type (`envs.options.parse_options`), refused by name before anything runs,
recorded in `config.json` and used by every command that rebuilds the run's environment."""

import json
import re

import numpy as np
import pytest
from rlsuite.envs.options import make_with_options, options_to_json, parse_options

from rlsuite.app import runs, train
from rlsuite.app.argv import read
from tests.app.test_cli import rlsuite


def test_values_are_read_as_the_type_of_the_fields_default():
    # cartpole's params.gravity is a float (9.8): "20" is 20.0, not the int 20.
    assert parse_options("cartpole", {"gravity": "20"}) == {"gravity": 20.0}
    assert type(parse_options("cartpole", {"gravity": "20"})["gravity"]) is float
    # meta/bandit's constructor takes pulls: int = 100.
    pulls = parse_options("meta/bandit", {"pulls": "20"})["pulls"]
    assert pulls == 20 and type(pulls) is int
    # A bool params field (meta/point_robot's sparse) and a bool constructor argument.
    assert parse_options("meta/point_robot", {"sparse": "true"}) == {"sparse": True}
    assert parse_options("meta/point_robot", {"sparse": "0"}) == {"sparse": False}
    assert parse_options("probe/action_reward", {"continuous": "True"}) == {"continuous": True}
    # An array field: point_mass's goal_low [2] float32 from a list.
    low = parse_options("point_mass", {"goal_low": "[-0.5, -0.25]"})["goal_low"]
    assert low.dtype == np.float32 and low.tolist() == [-0.5, -0.25]
    # What config.json records reads back to the same values.
    parsed = parse_options("point_mass", {"goal_low": "[-0.5, -0.25]", "dt": "0.05"})
    recorded = json.loads(json.dumps(options_to_json(parsed)))
    assert recorded == {"goal_low": [-0.5, -0.25], "dt": 0.05}
    again = parse_options("point_mass", recorded)
    assert again["goal_low"].tolist() == [-0.5, -0.25] and again["dt"] == 0.05
    env, params = make_with_options("point_mass", recorded)
    assert params.goal_low.tolist() == [-0.5, -0.25]


@pytest.mark.parametrize(
    "name, options, message",
    [
        ("cartpole", {"gravity": "heavy"}, "gravity='heavy' of cartpole: gravity takes a number"),
        ("meta/bandit", {"pulls": "2.5"}, "pulls='2.5' of meta/bandit: pulls takes an integer"),
        ("meta/point_robot", {"sparse": "yes"}, "sparse takes true or false"),
        ("point_mass", {"goal_low": "[1, 2, 3]"}, r"goal_low takes an array of shape \(2,\)"),
        ("meta/bandit", {"pulls": 2.5}, "pulls takes an integer"),  # a config.json's value
    ],
)
def test_a_value_that_does_not_convert_names_the_field_and_its_type(name, options, message):
    with pytest.raises(ValueError, match=message):
        parse_options(name, options)


def test_the_command_line_records_the_options_and_every_command_uses_them(tmp_path):
    out = tmp_path / "heavy"
    tiny = ["--total-timesteps", "1024", "--num-seeds", "2", "--chunks", "2", "--no-progress"]
    args = ["--env", "cartpole", "--env-option", "gravity=20", "masspole=0.2", *tiny]
    proc = rlsuite("train", "ppo", *args, "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # One line naming the tuned entry in force and the options.
    assert (
        "ppo on cartpole (gravity=20.0, masspole=0.2) starts from the tuned defaults of ppo on "
        "cartpole, 1,024 env steps per seed"
    ) in proc.stdout
    assert "training ppo on cartpole (gravity=20.0, masspole=0.2)" in proc.stdout
    assert json.loads((out / "config.json").read_text())["env_options"] == {
        "gravity": 20.0,
        "masspole": 0.2,
    }
    # Resume, eval, render, report and `--config` rebuild it through the record.
    params = runs.build(runs.read_record(out)).agent.env_params
    assert (params.gravity, params.masspole) == (20.0, 0.2)
    proc = rlsuite("eval", out, "--episodes", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = rlsuite("train", "--config", out / "config.json", *tiny, "--out", tmp_path / "again")
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "again" / "config.json").read_text())
    assert again["env_options"] == {"gravity": 20.0, "masspole": 0.2}
    # A flag over a --config file's options changes that one and keeps the others.
    words = ["--config", str(out / "config.json"), "--env-option", "gravity=12"]
    merged = train.new_run(read([*words, "--out", str(tmp_path / "merged")]), "train").record
    assert merged.env_options == {"gravity": 12.0, "masspole": 0.2}
    # The options repeated as flags give the same record.
    flags = ["--env-option", "gravity=20", "--env-option=masspole=0.2"]
    proc = rlsuite("train", "ppo", "--env", "cartpole", *flags, *tiny, "--out", tmp_path / "rep")
    assert proc.returncode == 0, proc.stderr[-3000:]
    repeated = json.loads((tmp_path / "rep" / "config.json").read_text())
    assert repeated["env_options"] == again["env_options"]
    proc = rlsuite("report", out, "--out", tmp_path / "report.md")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "# ppo on cartpole (gravity=20.0, masspole=0.2)" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize(
    "options, message",
    [
        (["gravity=heavy"], "environment option gravity='heavy' of cartpole: gravity takes a"),
        (["mass=2"], r"make\('cartpole'\): unknown argument\(s\) \['mass'\]; allowed: force_mag"),
        (["gravity"], "--env-option gravity: give FIELD=VALUE"),
        (["gravity=1", "gravity=2"], "--env-option: gravity is given twice"),
    ],
)
def test_bad_options_are_refused_in_one_line_before_anything_is_written(options, message, tmp_path):
    out = tmp_path / "never"
    proc = rlsuite("train", "ppo", "--env", "cartpole", "--env-option", *options, "--out", out)
    assert proc.returncode == 2 and not out.exists(), proc.stderr[-3000:]
    [line] = proc.stderr.strip().splitlines()
    assert re.search(message, line), line


def test_untuned_environments_say_the_defaults_are_used_with_the_budget(tmp_path):
    (tmp_path / "my_tasks.py").write_text(
        "from rlsuite.envs.cartpole import CartPole\n\n\ndef pole():\n    return CartPole()\n"
    )
    args = ["--env", "my_tasks:pole", "--env-option", "length=1.0", "--total-timesteps", "1024"]
    proc = rlsuite("train", "ppo", *args, "--no-progress", "--out", "run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        "no tuned defaults for ppo on my_tasks:pole; it starts from ppo's own, 1,024 env steps "
        "per seed, which may not learn it"
    ) in proc.stderr
    record = json.loads((tmp_path / "run" / "config.json").read_text())
    assert record["env_options"] == {"length": 1.0}
