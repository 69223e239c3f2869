"""Learning curves: mean and a bootstrap confidence interval across seeds, drawn with matplotlib.

A run's rows (``read_metrics``) are binned on a grid of env steps common to every run drawn:
per seed, the mean of a bin's values, leaving out the rows where the metric is NaN (an update in
which no episode ended: with one SAC environment, most of them), then the mean and the bootstrap
interval across seeds per bin. For ``charts/episodic_*`` metrics each row counts with the
episodes it holds (``charts/episodes``), so a bin's value is the mean of the episodes that ended
in it.
"""

from __future__ import annotations

import contextlib
import math
import pathlib
import warnings
from collections.abc import Sequence

import numpy as np

from rlsuite.loop.divergence import DIVERGED
from rlsuite.loop.loggers import EPISODES  # the count of the episodes a row's episodic metrics hold
from rlsuite.ops import bootstrap


def bootstrap_ci(
    values: np.ndarray, confidence: float = 0.95, num_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`rlsuite.ops.bootstrap.bootstrap_ci`, `_BLOCK` columns at a time: the percentile
    bootstrap interval of the mean over axis 0 (seeds) of `values` `[num_seeds, num_points]`,
    NaN entries left out; `(low, high)`, each `[num_points]`."""
    return bootstrap.bootstrap_ci(values, confidence, num_resamples, seed, block=_BLOCK)


_BLOCK = bootstrap.BLOCK  # columns per block in bootstrap_ci


def curve(rows: list[dict], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """`(env_steps [T], values [num_seeds, T])` of `metric` from metrics rows (`read_metrics`)."""
    held = [r for r in rows if metric in r]
    if not held:
        logged = sorted({k for r in rows for k in r} - {"env_steps", "seed"})
        raise ValueError(f"logs no {metric!r}; its metrics: {', '.join(logged) or 'none'}")
    rows = held
    steps = np.unique([r["env_steps"] for r in rows])
    seeds = np.unique([r["seed"] for r in rows])
    values = np.full((len(seeds), len(steps)), np.nan)
    step_index = {s: i for i, s in enumerate(steps)}
    seed_index = {s: i for i, s in enumerate(seeds)}
    for r in rows:
        values[seed_index[r["seed"]], step_index[r["env_steps"]]] = r[metric]
    return steps, values


def default_bin_steps(runs: Sequence[list[dict]], metric: str, bins: int = 30) -> int:
    """Env steps per bin for drawing `metric` from these runs together: about `bins` bins over the
    longest run, never narrower than the widest gap between two rows of a seed that hold a value
    of it (so that every bin has one: rows where no episode ended hold none, and with short
    episodes in many environments most rows may be such), rounded up to 1, 2 or 5 x 10^k."""
    width = 1.0
    for rows in runs:
        steps = np.unique([r["env_steps"] for r in rows if metric in r])
        if steps.size:
            width = max(width, steps[-1] / bins)
        for seed in {r["seed"] for r in rows}:
            held = [r["env_steps"] for r in rows if r["seed"] == seed and _number(r.get(metric))]
            if held:
                width = max(width, np.diff(np.unique(held), prepend=0).max())
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale >= width:
                return m * scale
        scale *= 10


def binned_curve(rows: list[dict], metric: str, bin_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """`(bin centres [K], values [num_seeds, K])` of `metric`: bin k holds the rows with env_steps
    in `((k - 1) * bin_steps, k * bin_steps]`, up to the last logged one; a seed's value is the
    mean of its rows there whose value is a number (for `charts/episodic_*`, weighted by the
    row's `charts/episodes` where it is logged), NaN where it has none."""
    if isinstance(bin_steps, bool) or not isinstance(bin_steps, int | np.integer) or bin_steps < 1:
        raise ValueError(f"bin_steps must be an int >= 1, got {bin_steps!r}")
    curve(rows, metric)  # refuses a metric the rows lack, naming those they have
    rows = [r for r in rows if metric in r]
    seeds = {s: i for i, s in enumerate(sorted({r["seed"] for r in rows}))}
    num_bins = max(1, math.ceil(max(r["env_steps"] for r in rows) / bin_steps))
    total, weight = np.zeros((len(seeds), num_bins)), np.zeros((len(seeds), num_bins))
    weighted = metric.startswith("charts/episodic_")
    for r in rows:
        if r.get(DIVERGED, 0) > 0:  # parameters no longer finite: no value to draw
            continue
        value = r[metric]
        w = r.get(EPISODES, 1.0) if weighted else 1.0
        if value is None or not np.isfinite(value) or w is None or not w > 0:
            continue
        k = max(math.ceil(r["env_steps"] / bin_steps), 1) - 1
        total[seeds[r["seed"]], k] += w * value
        weight[seeds[r["seed"]], k] += w
    values = np.full(total.shape, np.nan)
    np.divide(total, weight, out=values, where=weight > 0)
    return (np.arange(num_bins) + 0.5) * bin_steps, values


def diverged_at(rows: list[dict]) -> dict[int, int]:
    """Per seed that diverged (`rlsuite.loop.divergence`), the env steps of its first row that
    says so; its rows from there are not drawn."""
    found: dict[int, int] = {}
    for r in rows:
        if r.get(DIVERGED, 0) > 0 and r["seed"] not in found:
            found[r["seed"]] = r["env_steps"]
    return found


def diverged_words(rows: list[dict], at_update: Sequence | None = None) -> list[str]:
    """Per seed that diverged, where: `seed 1 at update 3, env step 192`, the update from
    `at_update` (`final.json`'s `diverged_at_update`, by seed) where it is known, else `seed 1
    at env step 192` (its first row that says so)."""
    words = []
    for seed, steps in sorted(diverged_at(rows).items()):
        update = at_update[seed] if at_update and 0 <= seed < len(at_update) else None
        where = f"env step {steps:,}" if update is None else f"update {update}, env step {steps:,}"
        words.append(f"seed {seed} at {where}")
    return words


def label_of(name: str, rows: list[dict], at_update: Sequence | None = None) -> str:
    """A run's legend label: its name, and the seeds that diverged and where
    (`diverged_words`)."""
    words = diverged_words(rows, at_update)
    return f"{name} (diverged: {'; '.join(words)})" if words else name


def _number(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def describe_bins(metric: str, bin_steps: int) -> str:
    """What a binned curve of `metric` shows, for the legend."""
    what = "episodes that ended" if metric.startswith("charts/episodic_") else "logged values"
    return f"mean of the {what} per {bin_steps:,}-step bin, 95% bootstrap CI across seeds"


def plot_runs(
    runs: Sequence[tuple[str, list[dict]]],
    out: str | pathlib.Path,
    metric: str = "charts/episodic_return",
    bin_steps: int | None = None,
    diverged_at_update: Sequence[Sequence | None] | None = None,
) -> pathlib.Path:
    """Draw `(label, rows)` runs binned on one grid (`bin_steps`, default `default_bin_steps`)
    to `out`; the legend says how. A seed that diverged (`rlsuite.loop.divergence`) is marked by
    a dashed line where its curve ends and named in the legend with its update where
    `diverged_at_update` gives it (per run, `final.json`'s `diverged_at_update`, None where
    unknown); a run with no value left to draw is said to be so on the axes."""
    if bin_steps is None:
        bin_steps = default_bin_steps([rows for _, rows in runs], metric)
    updates = list(diverged_at_update or [None] * len(runs))
    curves = [
        (label_of(label, rows, at), *binned_curve(rows, metric, bin_steps))
        for (label, rows), at in zip(runs, updates, strict=True)
    ]
    fig, ax = _curves_figure(curves, metric, legend_title=describe_bins(metric, bin_steps))
    empty = []
    for (label, rows), at, line, (_, _, values) in zip(
        runs, updates, ax.get_lines(), curves, strict=True
    ):
        for steps in diverged_at(rows).values():
            ax.axvline(steps, color=line.get_color(), linestyle="--", linewidth=1)
        if diverged_at(rows) and not np.isfinite(values).any():
            words = "; ".join(diverged_words(rows, at))
            empty.append(f"{label}: no finite value of {metric} to draw\ndiverged: {words}")
    if empty:  # no point of theirs: the axes say why, over the steps they ran
        last = max(r["env_steps"] for _, rows in runs for r in rows)
        ax.set_xlim(0, last * 1.05)
        ax.text(0.5, 0.5, "\n".join(empty), transform=ax.transAxes, ha="center", va="center")
    return _save(fig, out)


def image_path(out: str | pathlib.Path) -> pathlib.Path:
    """The file `plot_curves` writes for `out`: `out` itself, or with `.png` added when it has no
    extension (as matplotlib does). An extension matplotlib cannot write raises a `ValueError`
    listing those it can."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = pathlib.Path(out)
    if not out.suffix:
        return out.with_suffix(".png")
    formats = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if out.suffix[1:].lower() not in formats:
        raise ValueError(
            f"{out}: matplotlib cannot write {out.suffix!r} images; use one of "
            + ", ".join(f".{f}" for f in sorted(formats))
        )
    return out


def plot_curves(
    curves: Sequence[tuple[str, np.ndarray, np.ndarray]],
    out: str | pathlib.Path,
    metric: str = "charts/episodic_return",
    title: str | None = None,
    legend_title: str | None = None,
    xlabel: str = "environment steps",
    whole_x: bool = False,
) -> pathlib.Path:
    """Draw `(label, x, values [num_seeds, T])` curves with their 95% intervals to `out` (`x`:
    environment steps, or e.g. the episode index of a trial, with `whole_x` ticks at whole
    numbers only). Points are marked, so that one between two missing ones (NaN) still
    shows."""
    fig, _ = _curves_figure(curves, metric, title, legend_title, xlabel, whole_x)
    return _save(fig, out)


def _curves_figure(
    curves: Sequence[tuple[str, np.ndarray, np.ndarray]],
    metric: str,
    title: str | None = None,
    legend_title: str | None = None,
    xlabel: str = "environment steps",
    whole_x: bool = False,
):
    """`(figure, axes)` of `plot_curves`, not yet saved: a line per curve, in order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for label, steps, values in curves:
        with _quiet_nan_warnings():
            mean = np.nanmean(values, axis=0)
        low, high = bootstrap_ci(values)
        (line,) = ax.plot(
            steps, mean, marker="o", markersize=3, label=f"{label} ({_seeds(values.shape[0])})"
        )
        ax.fill_between(steps, low, high, alpha=0.25, color=line.get_color(), linewidth=0)
    ax.set_xlabel(xlabel)
    if whole_x:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric}: mean and 95% bootstrap interval across seeds")
    # Below the axes, where it hides no curve.
    ax.legend(
        title=legend_title,
        title_fontsize="small",
        fontsize="small",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncols=min(len(curves), 3) or 1,
        frameon=False,
    )
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, out: str | pathlib.Path) -> pathlib.Path:
    """Write `fig` to `out` (`image_path`) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = image_path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


@contextlib.contextmanager
def _quiet_nan_warnings():
    """Silence numpy's warnings about all-NaN columns (updates where no episode finished)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def plot_adaptation(runs: Sequence[tuple[str, dict]], out: str | pathlib.Path) -> pathlib.Path:
    """Draw each run's adaptation curve (`final.json`'s `adaptation`: the mean return per episode
    index of a trial, per seed) with its 95% interval across seeds to `out`."""
    curves = []
    for label, adaptation in runs:
        values = np.asarray(adaptation["episode_return_per_seed"], dtype=np.float64)
        curves.append((label, np.arange(1, values.shape[1] + 1), values))
    return plot_curves(
        curves,
        out,
        "return of the episode",
        title="adaptation within a trial: mean and 95% bootstrap interval across seeds",
        xlabel="episode of the trial",
        whole_x=True,
    )


def plot_levels(
    images: Sequence[np.ndarray],
    titles: Sequence[str],
    out: str | pathlib.Path,
    ncols: int = 4,
    panel_inches: float = 2.0,
    dpi: int = 100,
    title: str | None = None,
) -> pathlib.Path:
    """Draw `images` (each RGB `[H, W, 3]`, uint8 or floats in [0, 1], e.g. a maze level's
    `rlsuite.envs.maze.render`) in a grid of `ncols` columns, each under its title (e.g.
    `"SixteenRooms\\nsolved 0.75"`), to `out`, with `title` above them all where given.

    Each panel is `panel_inches` wide and 1.25 times that high (the title above the picture),
    so a PNG is `ncols * panel_inches * dpi` pixels wide and `rows * 1.25 * panel_inches * dpi`
    high; unused panels of the last row stay empty.
    """
    images, titles = list(images), list(titles)
    if not images or len(titles) != len(images):
        raise ValueError(
            f"plot_levels: give one title per image and at least one image, got "
            f"{len(images)} images and {len(titles)} titles"
        )
    for index, image in enumerate(images):
        if np.ndim(image) != 3 or np.shape(image)[-1] != 3:
            raise ValueError(
                f"plot_levels: image {index} has shape {np.shape(image)}; allowed: RGB [H, W, 3]"
            )
    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"plot_levels: ncols must be an integer >= 1, got {ncols!r}")
    out = image_path(out)
    from matplotlib.figure import Figure

    ncols = min(ncols, len(images))
    nrows = math.ceil(len(images) / ncols)
    fig = Figure(figsize=(ncols * panel_inches, nrows * 1.25 * panel_inches), dpi=dpi)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, image, panel_title in zip(axes.flat, images, titles, strict=False):
        ax.imshow(np.asarray(image), interpolation="nearest")
        ax.set_title(panel_title, fontsize="small")
    if title is not None:
        fig.suptitle(title, fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    return out
