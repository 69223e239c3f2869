import json

import numpy as np
import pytest

from rlsuite.app.plotting import binned_curve, bootstrap_ci, curve, default_bin_steps, plot_curves


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
    from rlsuite.app import plotting

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


def sac_like_rows(num_seeds=2, steps=4000, episode=200):
    """Rows as a one-environment SAC run logs them with a row per update: the episodic return is
    NaN on every row but the one where an episode ended (every `episode` steps); seed s's
    episode i (1, 2, ...) returns -1000 + 10 i + s."""
    rows = []
    for t in range(1, steps + 1):
        for seed in range(num_seeds):
            ended = t % episode == 0
            ret = -1000.0 + 10 * (t // episode) + seed if ended else float("nan")
            rows.append(
                {
                    "env_steps": t,
                    "seed": seed,
                    "charts/episodes": float(ended),
                    "charts/episodic_return": ret,
                    "losses/critic_loss": 1.0 / t,
                }
            )
    return rows


def test_binned_curve_of_a_sac_like_run_by_hand():
    rows = sac_like_rows(steps=1000)
    centres, values = binned_curve(rows, "charts/episodic_return", 500)
    np.testing.assert_array_equal(centres, [250.0, 750.0])
    # Bin (0, 500]: the episodes ending at 200 and 400 (i = 1, 2); (500, 1000]: i = 3, 4, 5.
    np.testing.assert_array_equal(values, [[-985.0, -960.0], [-984.0, -959.0]])
    # A metric that is never NaN: the mean of the rows in the bin (1/1 ... 1/500, 1/501 ...).
    _, loss = binned_curve(rows, "losses/critic_loss", 500)
    expect = [np.mean(1.0 / np.arange(1, 501)), np.mean(1.0 / np.arange(501, 1001))]
    np.testing.assert_allclose(loss, [expect, expect], rtol=1e-12)


def test_episodic_bins_weight_each_row_by_its_episodes():
    # Rows as the logger combines them: the row at 300 holds 3 episodes of mean 10, the row at
    # 400 one of 30; a seed without a finished episode in a bin has NaN there.
    rows = [
        {"env_steps": 300, "seed": 0, "charts/episodic_return": 10.0, "charts/episodes": 3.0},
        {"env_steps": 400, "seed": 0, "charts/episodic_return": 30.0, "charts/episodes": 1.0},
        {"env_steps": 900, "seed": 0, "charts/episodic_return": None, "charts/episodes": 0.0},
        {"env_steps": 400, "seed": 1, "charts/episodic_return": 7.0, "charts/episodes": 2.0},
        {"env_steps": 900, "seed": 1, "charts/episodic_return": 9.0, "charts/episodes": 1.0},
    ]
    _, values = binned_curve(rows, "charts/episodic_return", 500)
    # (10 * 3 + 30 * 1) / 4 = 15, not the rows' mean 20.
    np.testing.assert_array_equal(values, [[15.0, np.nan], [7.0, 9.0]])
    with pytest.raises(ValueError, match="bin_steps must be an int >= 1, got 0"):
        binned_curve(rows, "charts/episodic_return", 0)


def test_default_bins_are_round_and_never_narrower_than_the_logged_rows():
    # A one-environment SAC run of 12,000 steps, a row per update: 12,000 / 30 = 400 -> 500.
    sac = [{"env_steps": t, "seed": 0, "r": 1.0} for t in range(1, 12_001)]
    assert default_bin_steps([sac], "r") == 500
    # PPO's 976 updates of 512 steps: 499,712 / 30 = 16,657 -> 20,000.
    ppo = [{"env_steps": 512 * u, "seed": 0, "r": 1.0} for u in range(1, 977)]
    assert default_bin_steps([ppo], "r") == 20_000
    # 10 updates of 64: 640 / 30 is narrower than one update; 64 -> 100, and every bin holds one.
    short = [{"env_steps": 64 * u, "seed": 0, "r": 1.0} for u in range(1, 11)]
    assert default_bin_steps([short], "r") == 100
    assert not np.isnan(binned_curve(short, "r", 100)[1]).any()
    # Drawn together, runs share the grid of the longest.
    assert default_bin_steps([short, ppo], "r") == 20_000
    # A goal run of 64 envs x 50-step episodes, a row per update of 64 steps: an episode ends
    # in every 50th update only (3,200 steps), so bins of 3,200 / 30 -> 200 steps would be mostly
    # empty: the widest gap between a seed's rows with a value, 3,200, sets 5,000.
    goal = [
        {"env_steps": 64 * u, "seed": s, "r": 1.0 if u % 50 == 0 else None}
        for u in range(1, 1001)
        for s in (0, 1)
    ]
    assert default_bin_steps([goal], "r") == 5_000
    assert not np.isnan(binned_curve(goal, "r", 5_000)[1][:, :-1]).any()


C0 = np.array([0x1F, 0x77, 0xB4]) / 255  # matplotlib's first line colour


def line_pixels(png) -> int:
    import matplotlib.image

    image = matplotlib.image.imread(png)[..., :3]
    return int((np.abs(image - C0) < 0.04).all(axis=-1).sum())


def test_a_sac_like_run_is_drawn_as_a_curve(tmp_path):
    """`rlsuite plot` of a run whose returns are NaN on 199 rows of 200: the curve is there, in
    pixels of its colour, far more of them than the legend's sample line alone has."""
    from rlsuite.app import cli

    run = tmp_path / "sac"
    run.mkdir()
    lines = "".join(json.dumps(r) + "\n" for r in sac_like_rows())  # NaN literals, as of old
    (run / "metrics.jsonl").write_text(lines)
    assert cli.main(["plot", str(run), "--out", str(tmp_path / "sac.png")]) == 0
    # The legend alone: a run whose one finished episode is the only point.
    lone = tmp_path / "lone"
    lone.mkdir()
    one = [r for r in sac_like_rows(num_seeds=1) if r["env_steps"] in (1, 4000)]
    (lone / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in one))
    assert cli.main(["plot", str(lone), "--out", str(tmp_path / "lone.png")]) == 0
    curve_pixels, legend_pixels = (
        line_pixels(tmp_path / "sac.png"),
        line_pixels(tmp_path / "lone.png"),
    )
    assert curve_pixels > 5 * legend_pixels + 500, (curve_pixels, legend_pixels)


def test_the_adaptation_curve_ticks_whole_episodes_only(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from rlsuite.app.plotting import plot_adaptation

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read its axis
    adaptation = {"episode_return_per_seed": [[169.0, 167.7]]}  # two episodes per trial
    out = plot_adaptation([("ant", adaptation)], tmp_path / "a.png")
    assert out.read_bytes()[:4] == b"\x89PNG"
    ticks = figures[0].axes[0].get_xticks()
    # Left to itself matplotlib ticks 1.0, 1.2, ..., 2.0 between the two episodes.
    assert len(ticks) >= 2 and np.all(ticks == np.round(ticks)), ticks


def _held_out(greedy, sampled) -> dict:
    """A `held_out` entry of one seed on the maze's eight held-out levels, two attempts each,
    level 0 solved `greedy` and `sampled` times of 2 (returns 0.9 where solved, else 0)."""
    returns = {mode: np.zeros((1, 8, 2)) for mode in ("greedy", "sampled")}
    returns["greedy"][0, 0, :greedy] = returns["sampled"][0, 0, :sampled] = 0.9
    names = ["level"] * 8
    return {
        "names": names,
        "actions": "greedy",
        "returns": returns["greedy"].tolist(),
        "returns_sampled": returns["sampled"].tolist(),
    }


def test_the_held_out_levels_are_drawn_from_the_latest_evaluation_with_both_solve_rates(
    tmp_path, capsys
):
    import os

    from rlsuite import envs
    from rlsuite.app.plot import held_out_panels

    levels = envs.make("maze")[0].levels()
    run = tmp_path / "run"
    run.mkdir()
    # final.json: nothing solved; then two evaluations, the newer one saved last.
    (run / "final.json").write_text(json.dumps({"eval_episodes": 2, "held_out": _held_out(0, 0)}))
    older, newer = run / "eval_sampled_2_seed0.json", run / "eval_greedy_2_seed3.json"
    older.write_text(json.dumps({"episodes": 2, "held_out": _held_out(2, 2)}))
    newer.write_text(json.dumps({"episodes": 2, "held_out": _held_out(1, 2)}))
    os.utime(older, (1_000, 1_000))
    (run / "eval_greedy_9_seed0.json").write_text(json.dumps({"episodes": 9}))  # none: skipped
    os.utime(run / "eval_greedy_9_seed0.json", (500, 500))
    images, titles, caption = held_out_panels(run, levels)
    assert len(images) == len(titles) == 8 and images[0].shape[-1] == 3
    # Level 0: what rlsuite eval printed last, greedy and sampled, and the file named.
    assert titles[0] == "SixteenRooms\nsolved 0.50 greedy\n1.00 sampled"
    assert titles[1] == "SixteenRooms2\nsolved 0.00 greedy\n0.00 sampled"
    assert caption.startswith(f"held-out levels: solve rates of {newer.name} (2 attempts")
    assert newer.name in capsys.readouterr().err
    # Without an evaluation that holds them, final.json's, said so; an entry of before the
    # sampled returns were kept has the greedy ones only.
    for path in (older, newer):
        path.unlink()
    _, titles, caption = held_out_panels(run, levels)
    assert titles[0] == "SixteenRooms\nsolved 0.00 greedy\n0.00 sampled"
    assert "solve rates of final.json" in caption
    old = {"held_out": {"names": ["level"] * 8, "returns": _held_out(2, 0)["returns"]}}
    (run / "final.json").write_text(json.dumps(old))
    assert held_out_panels(run, levels)[1][0] == "SixteenRooms\nsolved 1.00 greedy"
    (run / "final.json").unlink()
    assert held_out_panels(run, levels) == ([], [], None)


def test_a_seed_that_diverged_is_marked_where_its_curve_ends(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from rlsuite.app.plotting import plot_runs

    rows = [{"env_steps": 100 * t, "seed": 0, "charts/episodic_return": float(t)} for t in (1, 2)]
    rows += [
        {"env_steps": 100, "seed": 1, "charts/episodic_return": 5.0, "charts/diverged": 0.0},
        {"env_steps": 200, "seed": 1, "charts/episodic_return": None, "charts/diverged": 1.0},
    ]
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    plot_runs([("a", rows), ("b", rows)], tmp_path / "c.png", bin_steps=100,
              diverged_at_update=[None, [None, 2]])  # fmt: skip
    ax = figures[0].axes[0]
    curves = [line for line in ax.get_lines() if line.get_linestyle() != "--"]
    np.testing.assert_array_equal(curves[0].get_ydata(), [3.0, 2.0])  # drawn: both seeds, then 0
    dashed = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert dashed == [200, 200] and not ax.texts  # something to draw: no note on the axes
    legend = [t.get_text() for t in ax.get_legend().texts]
    assert legend == [
        "a (diverged: seed 1 at env step 200) (2 seeds)",  # the update unknown: its env step
        "b (diverged: seed 1 at update 2, env step 200) (2 seeds)",
    ]
