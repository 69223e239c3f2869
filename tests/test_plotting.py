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


def test_bootstrap_resamples_only_the_seeds_a_column_has():
    rng = np.random.default_rng(1)
    full = rng.normal(size=(10, 3))
    values = full.copy()
    values[4:, 1] = np.nan  # column 1: 4 of 10 seeds (runs of different lengths)
    low, high = bootstrap_ci(values, num_resamples=20_000)
    # Seeds without a value change nothing: the same interval as from the 4 seeds alone.
    alone = bootstrap_ci(values[:4, 1:2], num_resamples=20_000)
    np.testing.assert_allclose([low[1], high[1]], np.ravel(alone), atol=0.02)
    # An independent percentile bootstrap of those 4 values.
    four = values[:4, 1]
    means = four[np.random.default_rng(7).integers(0, 4, size=(200_000, 4))].mean(axis=1)
    np.testing.assert_allclose([low[1], high[1]], np.quantile(means, [0.025, 0.975]), atol=0.02)
    # Complete columns against the same independent bootstrap.
    means = full[np.random.default_rng(8).integers(0, 10, size=(200_000, 10)), 0].mean(axis=1)
    np.testing.assert_allclose([low[0], high[0]], np.quantile(means, [0.025, 0.975]), atol=0.02)


def test_bootstrap_of_long_curves_is_done_in_blocks(monkeypatch):
    from rlsuite import plotting

    values = np.random.default_rng(2).normal(size=(5, 5_000))
    values[3:, 3_000:] = np.nan
    blocks = bootstrap_ci(values, num_resamples=300)  # 5 blocks of 1,024 columns
    monkeypatch.setattr(plotting, "_BLOCK", 10**6)
    whole = bootstrap_ci(values, num_resamples=300)
    np.testing.assert_allclose(blocks, whole, rtol=1e-12)
    # 5 seeds x 100,000 points: one array of every resample would be 8 GB; in blocks it runs.
    monkeypatch.undo()
    low, high = bootstrap_ci(np.tile(values, 20), num_resamples=2000)
    assert low.shape == (100_000,) and np.all(low <= high)
