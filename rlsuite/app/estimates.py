"""rliable's estimates over score matrices `[seeds, tasks]` (Agarwal et al., 2021): IQM, mean,
median and optimality gap with stratified bootstrap intervals (`interval_estimates`), performance
profiles (`performance_profiles`) and the probability of improvement of each pair of methods
(`probabilities_of_improvement`).

rliable draws its bootstrap indices from NumPy's global random state (its `random_state`
argument does not reach them), so every estimate here seeds that state with `seed`, once per
method (or per pair), and restores it afterwards: a method's interval does not depend on which
other methods are compared with it. The optional `stats` extra installs rliable
(`pip install 'rlsuite[stats]'`); it is imported only when a statistic is computed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import numpy as np

EXTRA = "pip install 'rlsuite[stats]'"
METRIC_NAMES = ("IQM", "Mean", "Median", "Optimality Gap")


def rliable():
    """`(library, metrics)` of rliable, or an `ImportError` that names the extra."""
    try:
        from rliable import library, metrics
    except ImportError as error:
        raise ImportError(
            f"rlsuite stats needs rliable ({error}); install the stats extra: {EXTRA}"
        ) from None
    except TypeError as error:  # arch 7 under pandas 3: deprecate_kwarg() missing an argument
        raise ImportError(
            f"rliable failed at import ({error}); its arch dependency needs pandas < 3, as the "
            f"stats extra pins: {EXTRA}"
        ) from None
    return library, metrics


@contextlib.contextmanager
def seeded(seed: int):
    """NumPy's global random state seeded with `seed` inside, restored afterwards."""
    # rliable's bootstrap draws from the global state, so that is the one to seed.
    state = np.random.get_state()  # noqa: NPY002
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def aggregates(scores: np.ndarray) -> np.ndarray:
    """rliable's IQM, mean, median and optimality gap (gamma 1) of `scores [seeds, tasks]`."""
    _, metrics = rliable()
    return np.array(
        [
            metrics.aggregate_iqm(scores),
            metrics.aggregate_mean(scores),
            metrics.aggregate_median(scores),
            metrics.aggregate_optimality_gap(scores),
        ]
    )


def interval_estimates(
    matrices: Mapping[str, np.ndarray], reps: int, seed: int, confidence: float = 0.95
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """`(points {method: [4]}, intervals {method: [2, 4]})` of `aggregates`
    (`rliable.library.get_interval_estimates`, percentile stratified bootstrap, `reps`
    resamples, the random state seeded with `seed` for each method)."""
    library, _ = rliable()
    points, intervals = {}, {}
    for method, scores in matrices.items():
        with seeded(seed):
            p, i = library.get_interval_estimates(
                {method: scores}, aggregates, reps=reps, confidence_interval_size=confidence
            )
        points[method], intervals[method] = p[method], i[method]
    return points, intervals


def profile_taus(matrices: Mapping[str, np.ndarray], num: int = 101) -> np.ndarray:
    """`num` thresholds from the lowest to the highest score of any method."""
    pooled = np.concatenate([s.ravel() for s in matrices.values()])
    return np.linspace(pooled.min(), pooled.max(), num)


def performance_profiles(
    matrices: Mapping[str, np.ndarray], taus: np.ndarray, reps: int, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """`(profiles {method: [taus]}, intervals {method: [2, taus]})`: the fraction of runs (seed
    and task) with a score above each threshold (`rliable.library.create_performance_profile`),
    seeded as `interval_estimates`."""
    library, _ = rliable()
    profiles, intervals = {}, {}
    for method, scores in matrices.items():
        with seeded(seed):
            p, i = library.create_performance_profile({method: scores}, taus, reps=reps)
        profiles[method], intervals[method] = p[method], i[method]
    return profiles, intervals


def probabilities_of_improvement(
    matrices: Mapping[str, np.ndarray], reps: int, seed: int, confidence: float = 0.95
) -> list[tuple[str, str, float, float, float]]:
    """`(x, y, P(x > y), low, high)` for each pair of methods in the order given: the
    probability that a run of `x` scores above one of `y` on a task, averaged over tasks
    (`rliable.metrics.probability_of_improvement`), with its interval from the independent
    stratified bootstrap of both methods, seeded as `interval_estimates`."""
    library, metrics = rliable()
    names, out = list(matrices), []
    for i, x in enumerate(names):
        for y in names[i + 1 :]:
            with seeded(seed):
                p, ci = library.get_interval_estimates(
                    {"pair": (matrices[x], matrices[y])},
                    metrics.probability_of_improvement,
                    reps=reps,
                    confidence_interval_size=confidence,
                )
            low, high = np.ravel(ci["pair"])
            out.append((x, y, float(p["pair"]), float(low), float(high)))
    return out
