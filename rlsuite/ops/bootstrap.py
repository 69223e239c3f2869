"""Percentile bootstrap intervals of a mean across seeds (learning curves, adaptation curves)."""

from __future__ import annotations

import numpy as np

BLOCK = 1024  # columns per block


def bootstrap_ci(
    values: np.ndarray,
    confidence: float = 0.95,
    num_resamples: int = 2000,
    seed: int = 0,
    block: int = BLOCK,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean over axis 0 (seeds) for each column.

    `values` is `[num_seeds, num_points]`; NaN entries (no finished episode, a shorter run) are
    left out: a column with k values resamples those k, with replacement. Returns `(low, high)`,
    each `[num_points]` (NaN where a column has no value). With one value the interval collapses
    to it. Columns with the same seeds present share their resamples, and are done `block` at a
    time, so memory stays at `num_resamples x block` floats however long the curves are.
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
        for start in range(0, columns.size, block):
            cols = columns[start : start + block]
            means = counts @ values[np.ix_(rows, cols)] / k  # [num_resamples, len(cols)]
            low[cols], high[cols] = np.quantile(means, [alpha, 1.0 - alpha], axis=0)
    return low, high
