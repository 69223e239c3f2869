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

    `values` is `[num_seeds, num_points]`; NaN entries (no finished episode) are ignored. Returns
    `(low, high)`, each `[num_points]`. With one seed the interval collapses to the value.
    """
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, values.shape[0], size=(num_resamples, values.shape[0]))
    with _quiet_nan_warnings():
        means = np.nanmean(values[picks], axis=1)  # [num_resamples, num_points]
        alpha = (1.0 - confidence) / 2.0
        return np.nanquantile(means, alpha, axis=0), np.nanquantile(means, 1.0 - alpha, axis=0)


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
    out = pathlib.Path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


@contextlib.contextmanager
def _quiet_nan_warnings():
    """Silence numpy's warnings about all-NaN columns (updates where no episode finished)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
