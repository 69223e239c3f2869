import numpy as np

from rlsuite.plotting import bootstrap_ci, curve, plot_curves


def test_bootstrap_interval_brackets_the_mean_and_collapses_without_spread():
    values = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0], [10.0, 5.0]])
    low, high = bootstrap_ci(values)
    assert low[0] < values[:, 0].mean() < high[0]
    assert 1.0 <= low[0] and high[0] <= 10.0  # resampled means stay within the data
    assert low[1] == high[1] == 5.0  # every seed equal: no spread
    one_seed = bootstrap_ci(np.array([[7.0, 8.0]]))
    np.testing.assert_array_equal(one_seed, [[7.0, 8.0], [7.0, 8.0]])


def test_bootstrap_interval_ignores_missing_values():
    values = np.array([[1.0, np.nan], [3.0, 4.0]])
    low, high = bootstrap_ci(values)
    assert low[1] == high[1] == 4.0


def test_curve_from_rows_and_png(tmp_path):
    rows = [
        {"env_steps": 10, "seed": 0, "r": 1.0},
        {"env_steps": 10, "seed": 1, "r": 3.0},
        {"env_steps": 20, "seed": 1, "r": 4.0},
        {"env_steps": 20, "seed": 0, "r": 2.0, "other": 0.0},
    ]
    steps, values = curve(rows, "r")
    np.testing.assert_array_equal(steps, [10, 20])
    np.testing.assert_array_equal(values, [[1.0, 2.0], [3.0, 4.0]])
    out = plot_curves([("run", steps, values)], tmp_path / "c.png", "r")
    assert out.read_bytes()[:4] == b"\x89PNG"
