"""`rlsuite dataset collect` (`rlsuite.app.dataset`): its environment's options, read as
`rlsuite train` reads them, recorded in the dataset's info, and refused before anything runs."""

import numpy as np
import pytest

from rlsuite.app import cli
from rlsuite.data.dataset_files import load_d4rl

COLLECT = ["dataset", "collect", "--env", "pendulum", "--quality", "random", "--size", "400"]
COLLECT += ["--total-timesteps", "300", "--eval-episodes", "2"]


def _thdot(obs, action, gravity):
    """Pendulum's next angular velocity from an observation and a torque (dt 0.05, m = l = 1)."""
    theta = np.arctan2(obs[:, 1], obs[:, 0])
    thdot = obs[:, 2] + (1.5 * gravity * np.sin(theta) + 3.0 * np.clip(action[:, 0], -2, 2)) * 0.05
    return np.clip(thdot, -8.0, 8.0)


def test_the_environment_options_are_taken_and_recorded_in_the_dataset(tmp_path, capsys):
    out = tmp_path / "heavy.hdf5"
    argv = [*COLLECT, "--env-option", "gravity=12.0", "--out", str(out)]
    assert cli.main(argv) == 0
    assert "random dataset of 400 transitions on pendulum (gravity=12.0)" in capsys.readouterr().out
    data = load_d4rl(out)
    assert data.info.env == "pendulum" and data.info.extra["env_options"] == {"gravity": 12.0}
    # Recorded in the environment the options made: its steps follow gravity 12, not 10 (a
    # row's next observation is the one before any reset).
    obs, action = np.asarray(data.observations), np.asarray(data.actions)
    after = np.asarray(data.next_observations)[:, 2]
    np.testing.assert_allclose(after, _thdot(obs, action, 12.0), atol=1e-4)
    assert np.abs(after - _thdot(obs, action, 10.0)).max() > 0.01


@pytest.mark.parametrize(
    "option, message",
    [
        ("grav=12.0", "make('pendulum'): unknown argument(s) ['grav']; allowed: dt, gravity, "),
        ("gravity=heavy", "environment option gravity='heavy' of pendulum: gravity takes a number"),
        ("gravity", "--env-option gravity: give FIELD=VALUE (e.g. gravity=20.0)"),
    ],
)
def test_a_bad_environment_option_is_refused_in_one_line_before_anything_runs(
    option, message, tmp_path, capsys
):
    out = tmp_path / "d.hdf5"
    assert cli.main([*COLLECT, "--env-option", option, "--out", str(out)]) == 2
    printed = capsys.readouterr()
    assert printed.err.startswith(f"rlsuite dataset: error: {message}"), printed.err
    assert printed.err.count("\n") == 1 and not printed.out and not out.exists()
