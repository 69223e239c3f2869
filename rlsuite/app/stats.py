"""Statistics across run directories through rliable (Agarwal et al., 2021, "Deep Reinforcement
Learning at the Edge of the Statistical Precipice"): IQM, mean, median and optimality gap with
stratified bootstrap intervals, performance profiles and the probability of improvement.

Runs, their per-seed scores and the matrices `[seeds, tasks]` they form are read and grouped by
`rlsuite.app.scores`; the estimates are rliable's (`rlsuite.app.estimates`), and the tables and
figures written to `--out` are drawn by `rlsuite.app.stats_output`. This module re-exports the
names of all three that its callers use.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
from collections.abc import Mapping, Sequence

import tyro

from rlsuite.app.argv import parse
from rlsuite.app.estimates import (
    METRIC_NAMES,
    interval_estimates,
    performance_profiles,
    probabilities_of_improvement,
    profile_taus,
    rliable,
)
from rlsuite.app.scores import (
    NORMALIZE,
    below_for_diverged,
    load_run,
    normalize,
    parse_by,
    parse_reference,
    score_matrices,
)
from rlsuite.app.scores import Run as Run
from rlsuite.app.stats_output import markdown, plot_intervals, plot_profiles
from rlsuite.loop.files import unwritable, write_json, write_text

NO_GAP = (
    "the optimality gap compares scores with 1, which means something for normalised scores only "
    "(--normalize minmax or reference); here it is not a gap to any optimum"
)
FILES = ("stats.md", "stats.json", "intervals.png", "profiles.png")  # what `write` puts in --out


def check_out(out: pathlib.Path) -> None:
    """Refuse an `--out` that is a file, cannot be made or written to, or already holds any of
    `FILES`."""
    from rlsuite.loop.files import file_in_the_way

    blocked = file_in_the_way(out)
    if blocked is not None:
        raise ValueError(f"--out {out}: {blocked} is a file, not a directory")
    reason = unwritable(out)
    if reason is not None:
        raise ValueError(f"--out {out}: {reason}")
    held = [name for name in FILES if (out / name).exists()]
    if held:
        raise FileExistsError(
            f"--out {out} already holds {', '.join(held)}; choose another directory "
            "(nothing was written)"
        )


def report(
    run_dirs: Sequence[str | pathlib.Path],
    out: str | pathlib.Path,
    *,
    metric: str = "eval_return",
    by: str = "algo,env",
    how: str = "none",
    reference: Mapping[str, tuple[float, float]] | None = None,
    reps: int = 2000,
    seed: int = 0,
) -> dict:
    """Everything `rlsuite stats` does: the runs' score matrices (normalised by `how`), the
    aggregate intervals, the performance profiles and the probabilities of improvement, written
    to `out` as `FILES` once all are computed (an `out` holding any of them is refused first).
    Returns the summary written to `stats.json`."""
    out = pathlib.Path(out)
    check_out(out)
    if reps < 1:
        raise ValueError(f"--reps must be >= 1, got {reps}")
    if not run_dirs:
        raise ValueError("stats needs at least one run directory: rlsuite stats RUN [RUN ...]")
    parse_by(by)
    if how not in NORMALIZE:
        raise ValueError(f"--normalize {how!r}: allowed: {', '.join(NORMALIZE)}")
    rliable()  # a missing extra is said before any run is read
    runs, diverged = below_for_diverged([load_run(d, metric) for d in run_dirs], by, metric)
    for note in diverged:
        print(f"rlsuite stats: note: {note}", file=sys.stderr)
    raw, tasks = score_matrices(runs, by)
    matrices = normalize(raw, tasks, how, reference)
    points, intervals = interval_estimates(matrices, reps, seed)
    taus = profile_taus(matrices)
    profiles, profile_cis = performance_profiles(matrices, taus, reps, seed)
    pairs = probabilities_of_improvement(matrices, reps, seed)
    score = metric if how == "none" else f"{metric} ({how}-normalised)"
    seeds = ", ".join(f"{m} {s.shape[0]}" for m, s in matrices.items())
    header = (
        f"# {score}: {len(matrices)} method(s) x {len(tasks)} task(s) ({', '.join(tasks)})\n\n"
        f"Seeds per task: {seeds}. Point estimates and 95% stratified bootstrap intervals "
        f"(rliable, {reps} resamples, seed {seed}); optimality gap: 1 minus the mean score "
        "clipped at 1." + "".join(f"\n\nDiverged: {note}." for note in diverged)
    )
    if how == "none":  # a gap to a score of 1 means something for normalised scores only
        print(f"rlsuite stats: warning: {NO_GAP}", file=sys.stderr)
        header += f"\n\nWarning: {NO_GAP}."
    text = markdown(points, intervals, pairs, header=header)
    summary = {
        "runs": [str(r.path) for r in runs],
        "metric": metric,
        "by": by,
        "normalize": how,
        "reps": reps,
        "seed": seed,
        "tasks": tasks,
        "scores": {m: s.tolist() for m, s in matrices.items()},
        "aggregates": {
            m: {
                name: {"point": float(p), "low": float(lo), "high": float(hi)}
                for name, p, lo, hi in zip(METRIC_NAMES, points[m], *intervals[m], strict=True)
            }
            for m in matrices
        },
        "probability_of_improvement": [
            {"x": x, "y": y, "point": p, "low": lo, "high": hi} for x, y, p, lo, hi in pairs
        ],
        "profile_taus": taus.tolist(),
        "profiles": {m: v.tolist() for m, v in profiles.items()},
        "diverged": diverged,
    }
    images = {
        "intervals.png": plot_intervals(points, intervals, score),
        "profiles.png": plot_profiles(profiles, profile_cis, taus, score + r" ($\tau$)"),
    }
    check_out(out)  # again, just before writing
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / "stats.md", text)
    write_json(out / "stats.json", summary)
    for name, data in images.items():
        (out / name).write_bytes(data)
    return {"out": str(out), "markdown": text, **summary}


@dataclasses.dataclass
class StatsArgs:
    runs: tyro.conf.Positional[list[str]]
    """run directories; runs with the same method and task pool their seeds"""
    out: str = "stats"
    """directory to write stats.md, stats.json, intervals.png and profiles.png to; refused
    where it holds any of them"""
    metric: str = "eval_return"
    """score per seed: a `*_per_seed` entry of final.json without the suffix (eval_return,
    normalized_score for offline runs, ...) or a metrics.jsonl metric (its last value per seed)"""
    by: str = "algo,env"
    """METHOD,TASK: config.json fields naming the method and the task, several joined by `+`,
    nested ones dotted (e.g. algo+hparams.learning_rate,env)"""
    normalize: str = "none"
    """per-task scores: none, minmax (the lowest and highest of the task's runs) or reference
    (--reference)"""
    reference: list[str] = dataclasses.field(default_factory=list)
    """with --normalize reference: TASK=LOW:HIGH for every task"""
    reps: int = 2000
    """bootstrap resamples (rliable's paper: 50,000 for intervals, 2,000 for profiles)"""
    seed: int = 0
    """seed of the bootstrap"""


def main(argv: list[str]) -> dict:
    """`rlsuite stats RUN... [--by METHOD,TASK] [--out DIR]`."""
    from rlsuite.app.errors import UsageError

    args = parse(StatsArgs, argv, "rlsuite stats")
    try:
        summary = report(
            args.runs,
            args.out,
            metric=args.metric,
            by=args.by,
            how=args.normalize,
            reference=parse_reference(args.reference),
            reps=args.reps,
            seed=args.seed,
        )
    except ImportError as error:
        raise UsageError(str(error)) from None
    print(summary["markdown"])
    print(f"wrote {', '.join(FILES)} to {args.out}")
    return summary
