"""What `rlsuite stats` shows of its estimates (`rlsuite.app.estimates`): the markdown tables of
the aggregates and the probabilities of improvement, and rliable's figures of the intervals and
the performance profiles as PNG bytes.
"""

from __future__ import annotations

from rlsuite.app.estimates import METRIC_NAMES


def markdown(points, intervals, pairs, *, header: str = "") -> str:
    """The aggregate table (one row per method, each metric with its interval) and the
    probability-of-improvement table as markdown."""
    lines = [header, ""] if header else []
    lines += ["| method | " + " | ".join(METRIC_NAMES) + " |", "|---" + "|---:" * 4 + "|"]
    for method, point in points.items():
        low, high = intervals[method]
        cells = [
            f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for p, lo, hi in zip(point, low, high, strict=True)
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += ["", "Probability of improvement, P(X > Y) [95% CI]:", ""]
    if pairs:
        lines += ["| X | Y | P(X > Y) |", "|---|---|---:|"]
        lines += [f"| {x} | {y} | {p:.3f} [{lo:.3f}, {hi:.3f}] |" for x, y, p, lo, hi in pairs]
    else:
        lines.append("(one method: no pairs to compare)")
    return "\n".join(lines) + "\n"


def plot_intervals(points, intervals, xlabel: str) -> bytes:
    """rliable's interval-estimate figure as PNG bytes: per metric, each method's interval (a
    bar) and point estimate (a tick)."""
    plt = _pyplot()
    from rliable import plot_utils

    row_height = 0.45  # inches per method; the axis label goes 0.65 inches below the axes
    fig, _ = plot_utils.plot_interval_estimates(
        points,
        intervals,
        METRIC_NAMES,
        algorithms=list(points),
        xlabel=xlabel,
        row_height=row_height,
        xlabel_y_coordinate=-0.65 / (row_height * len(points)),
    )
    return _png(plt, fig)


def plot_profiles(profiles, intervals, taus, xlabel: str) -> bytes:
    """rliable's performance-profile figure, with the bootstrap bands, as PNG bytes."""
    plt = _pyplot()
    from rliable import plot_utils

    fig, ax = plt.subplots(figsize=(7, 4.5))
    plot_utils.plot_performance_profiles(
        profiles, taus, performance_profile_cis=intervals, ax=ax, xlabel=xlabel,
        ylabel=r"fraction of runs with score $> \tau$", legend=True,
    )  # fmt: skip
    return _png(plt, fig)


def _png(plt, fig) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
