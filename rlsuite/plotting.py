"""Learning curves: mean and a bootstrap confidence interval across seeds, drawn with matplotlib."""

from __future__ import annotations

import contextlib
import pathlib
import warnings
from collections.abc import Sequence

import numpy as np


def bootstrap_ci(
    values: np.ndarray, confidence: float = 0.95, num_resamples: int = 2000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean over axis 0 (seeds) for each column.

    `values` is `[num_seeds, num_points]`; NaN entries (no finished episode, a shorter run) are
    left out: a column with k values resamples those k, with replacement. Returns `(low, high)`,
    each `[num_points]` (NaN where a column has no value). With one value the interval collapses
    to it. Columns with the same seeds present share their resamples, and are done a block at a
    time, so memory stays at `num_resamples x _BLOCK` floats however long the curves are.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(
            f"bootstrap_ci: values must be [num_seeds, num_points], got {values.shape}"
        )
    low, high = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    alpha = (1.0 - confidence) / 2.0
    rng = np.random.default_rng(seed)
    present = ~np.isnan(values)
    patterns, group = np.unique(present.T, axis=0, return_inverse=True)
    for g, rows in enumerate(patterns):
        k = int(rows.sum())
        if k == 0:
            continue
        # How often each present seed is drawn in each resample: a resample's mean is then a
        # product with the values, for a whole block of columns at once.
        picks = rng.integers(0, k, size=(num_resamples, k))
        counts = np.zeros((num_resamples, k))
        np.add.at(counts, (np.arange(num_resamples)[:, None], picks), 1.0)
        columns = np.flatnonzero(group.reshape(-1) == g)
        for start in range(0, columns.size, _BLOCK):
            cols = columns[start : start + _BLOCK]
            means = counts @ values[np.ix_(rows, cols)] / k  # [num_resamples, len(cols)]
            low[cols], high[cols] = np.quantile(means, [alpha, 1.0 - alpha], axis=0)
    return low, high


_BLOCK = 1024  # columns per block in bootstrap_ci


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
) -> pathlib.Path:
    """Draw `(label, env_steps, values [num_seeds, T])` curves with their 95% intervals to `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, steps, values in curves:
        with _quiet_nan_warnings():
            mean = np.nanmean(values, axis=0)
        low, high = bootstrap_ci(values)
        ax.plot(steps, mean, label=f"{label} ({values.shape[0]} seeds)")
        ax.fill_between(steps, low, high, alpha=0.25)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric}: mean and 95% bootstrap interval across seeds")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = image_path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


@contextlib.contextmanager
def _quiet_nan_warnings():
    """Silence numpy's warnings about all-NaN columns (updates where no episode finished)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
