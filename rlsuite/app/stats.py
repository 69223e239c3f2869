"""Statistics across run directories through rliable (Agarwal et al., 2021, "Deep Reinforcement
Learning at the Edge of the Statistical Precipice"): IQM, mean, median and optimality gap with
stratified bootstrap intervals, performance profiles and the probability of improvement.

A run directory gives one score per seed: a `*_per_seed` entry of its `final.json`
(`eval_return`, `normalized_score` for offline runs, ...) or the last finite value of a
`metrics.jsonl` metric. Runs are grouped into methods and tasks by fields of their `config.json`
(`--by`; default: the algorithm is the method, the environment the task); runs that share a
method and a task pool their seeds. Each method's scores form a matrix `[seeds, tasks]`, which
rliable's stratified bootstrap resamples over seeds within each task, so a method must have the
same number of seeds on every task (runs that do not are refused, by name).

rliable draws its bootstrap indices from NumPy's global random state (its `random_state`
argument does not reach them), so every estimate here seeds that state with `seed`, once per
method (or per pair), and restores it afterwards: a method's interval does not depend on which
other methods are compared with it. The optional `stats` extra installs rliable
(`pip install 'rlsuite[stats]'`); it is imported only when a statistic is computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import pathlib
import sys
from collections.abc import Mapping, Sequence

import numpy as np
import tyro

from rlsuite.loop.divergence import DIVERGED, diverged_runs
from rlsuite.loop.files import unwritable, write_json, write_text

EXTRA = "pip install 'rlsuite[stats]'"
METRIC_NAMES = ("IQM", "Mean", "Median", "Optimality Gap")
NO_GAP = (
    "the optimality gap compares scores with 1, which means something for normalised scores only "
    "(--normalize minmax or reference); here it is not a gap to any optimum"
)
NORMALIZE = ("none", "minmax", "reference")
FILES = ("stats.md", "stats.json", "intervals.png", "profiles.png")  # what `write` puts in --out
PER_SEED = "_per_seed"


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


@dataclasses.dataclass(frozen=True)
class Run:
    path: pathlib.Path
    record: dict  # config.json
    scores: np.ndarray  # [seeds]


def metrics_of(path: pathlib.Path) -> tuple[list[str], list[str]]:
    """The metrics a run directory offers: `final.json`'s per-seed entries (without the
    `_per_seed` suffix) and the metrics of `metrics.jsonl`."""
    from rlsuite.loop.loggers import JSONL, read_metrics

    final = _final(path)
    gone = set(diverged_runs(final))  # a diverged seed's results are null
    per_seed = sorted(
        k[: -len(PER_SEED)]
        for k, v in final.items()
        if k.endswith(PER_SEED)
        and isinstance(v, list)
        and all(_number(x) or (x is None and i in gone) for i, x in enumerate(v))
    )
    logged = []
    if (path / JSONL).is_file():
        rows = read_metrics(path)
        logged = sorted({k for r in rows for k in r} - {"env_steps", "seed"})
    return per_seed, logged


def _number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _final(path: pathlib.Path) -> dict:
    file = path / "final.json"
    if not file.is_file():
        raise ValueError(f"{path} holds no final.json (a finished run writes it)")
    try:
        final = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{file} is not valid JSON ({error})") from None
    if not isinstance(final, dict):
        raise ValueError(f"{file} is not a JSON object")
    return final


def load_run(path: str | pathlib.Path, metric: str = "eval_return") -> Run:
    """One run directory's `config.json` and its per-seed scores of `metric`: `final.json`'s
    `<metric>_per_seed`, else the last finite value of `metric` per seed in `metrics.jsonl`.
    Refused, naming the directory and the value, where a file is missing or `metric` is not
    one the run offers (the message lists those it does)."""
    from rlsuite.loop.loggers import read_metrics

    path = pathlib.Path(path)
    if not path.is_dir():
        raise ValueError(f"{path} is not a run directory")
    config = path / "config.json"
    if not config.is_file():
        raise ValueError(f"{path} holds no run (no config.json)")
    try:
        record = json.loads(config.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{config} is not valid JSON ({error})") from None
    per_seed, logged = metrics_of(path)
    if metric in per_seed:
        values = _final(path)[metric + PER_SEED]
        scores = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    elif metric in logged:
        seeds: dict[int, float] = {}
        for row in read_metrics(path):
            value = row.get(metric)
            if row.get(DIVERGED, 0) > 0:
                seeds[int(row["seed"])] = math.nan  # diverged: ranked last (`below_for_diverged`)
            elif value is not None and math.isfinite(value):
                seeds[int(row["seed"])] = float(value)  # rows are in time order: the last wins
        count = int(record.get("num_seeds", len(seeds)))
        missing = [s for s in range(count) if s not in seeds]
        if missing:
            raise ValueError(f"{path}: metric {metric!r} has no finite value for seeds {missing}")
        scores = np.array([seeds[s] for s in range(count)])
    else:
        raise ValueError(
            f"unknown metric {metric!r} for {path}; allowed: {', '.join(per_seed) or 'none'} "
            f"(final.json), {', '.join(logged) or 'none'} (metrics.jsonl, last value per seed)"
        )
    if scores.ndim != 1 or scores.size == 0 or np.isinf(scores).any():
        raise ValueError(f"{path}: {metric!r} per seed is not a list of finite numbers: {scores}")
    return Run(path, record, scores)


def below_for_diverged(runs: Sequence[Run], by: str, metric: str) -> tuple[list[Run], list[str]]:
    """`runs` with each diverged seed's score (NaN: `rlsuite.loop.divergence`) replaced by the
    lowest finished score on its task less their range (or the lowest's magnitude, at least 1),
    so it ranks last; a line saying so per run. Refused where every seed on a task diverged."""
    _, task_fields = parse_by(by)

    def task_of(run: Run) -> str:
        return "+".join(_label(run, f) for f in task_fields)

    ended: dict[str, list] = {}
    for run in runs:
        ended.setdefault(task_of(run), []).extend(run.scores[~np.isnan(run.scores)].tolist())
    lowest = {task: min(s) for task, s in ended.items() if s}
    gap = {task: (max(ended[task]) - low) or max(abs(low), 1.0) for task, low in lowest.items()}
    scored, notes = [], []
    for run in runs:
        gone = np.flatnonzero(np.isnan(run.scores))
        task = task_of(run)
        if gone.size == 0:
            scored.append(run)
            continue
        if task not in lowest:
            named = ", ".join(str(r.path) for r in runs if task_of(r) == task)
            raise ValueError(f"every seed on task {task} diverged ({named}): nothing to rank")
        below = lowest[task] - gap[task]
        scores = np.where(np.isnan(run.scores), below, run.scores)
        scored.append(dataclasses.replace(run, scores=scores))
        notes.append(
            f"{run.path}: seed {', '.join(map(str, gone))} diverged, scored {below:.4g}, below "
            f"the worst {metric} on {task} ({lowest[task]:.4g}) by its range ({gap[task]:.4g})"
        )
    return scored, notes


def parse_by(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`--by METHOD,TASK`, each a field of `config.json` or several joined by `+` (a dotted name
    reaches inside: `hparams.learning_rate`): `(method fields, task fields)`."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f"--by {text!r}: give METHOD,TASK (e.g. algo,env or algo+hparams.learning_rate,env)"
        )
    method, task = (tuple(f.strip() for f in p.split("+")) for p in parts)
    if not all(method) or not all(task):
        raise ValueError(f"--by {text!r}: an empty field name")
    return method, task


def field(run: Run, name: str) -> str:
    """The value of `name` (dotted for nested entries) in a run's `config.json`, as text."""
    value = run.record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            allowed = sorted(k for k, v in run.record.items() if not isinstance(v, dict | list))
            nested = sorted(f"{k}.*" for k, v in run.record.items() if isinstance(v, dict))
            raise ValueError(
                f"--by: {run.path}/config.json has no field {name!r}; allowed: "
                + ", ".join(allowed + nested)
            )
        value = value[part]
    return str(value)


def _label(run: Run, name: str) -> str:
    """`field` as a method's or task's name: the value of `algo` or `env`, else `name=value`."""
    value = field(run, name)
    return value if name in ("algo", "env") else f"{name.split('.')[-1]}={value}"


def score_matrices(
    runs: Sequence[Run], by: str = "algo,env"
) -> tuple[dict[str, np.ndarray], list[str]]:
    """`({method: scores [seeds, tasks]}, tasks)`: the runs grouped by `--by` (`parse_by`),
    the seeds of runs with one method and task pooled in the order given, tasks sorted. A
    method without a task, or with different numbers of seeds on its tasks, is refused with
    the runs named (stratified bootstrap resamples seeds within each task of a matrix)."""
    method_fields, task_fields = parse_by(by)
    cells: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        method = "+".join(_label(run, f) for f in method_fields)
        task = "+".join(_label(run, f) for f in task_fields)
        cells.setdefault((method, task), []).append(run)
    methods = list(dict.fromkeys(m for m, _ in cells))
    tasks = sorted({t for _, t in cells})
    matrices = {}
    for method in methods:
        lacking = [t for t in tasks if (method, t) not in cells]
        if lacking:
            raise ValueError(
                f"method {method!r} has no run on task(s) {', '.join(lacking)}; every method "
                f"needs every task ({', '.join(tasks)})"
            )
        columns = [np.concatenate([r.scores for r in cells[method, t]]) for t in tasks]
        counts = {len(c) for c in columns}
        if len(counts) > 1:
            described = "; ".join(
                f"{t}: {len(c)} seeds ({', '.join(str(r.path) for r in cells[method, t])})"
                for t, c in zip(tasks, columns, strict=True)
            )
            raise ValueError(
                f"method {method!r} has different numbers of seeds on its tasks ({described}); "
                "stratified bootstrap needs the same seeds on every task: give runs with equal "
                "seed counts"
            )
        matrices[method] = np.stack(columns, axis=1)
    return matrices, tasks


def normalize(
    matrices: Mapping[str, np.ndarray],
    tasks: Sequence[str],
    how: str = "none",
    reference: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, np.ndarray]:
    """Scores per task mapped to `(x - low) / (high - low)`: `how="minmax"` takes low and high
    from every run of the task (all methods), `"reference"` from `reference[task]`; `"none"`
    returns the scores as they are."""
    if how not in NORMALIZE:
        raise ValueError(f"--normalize {how!r}: allowed: {', '.join(NORMALIZE)}")
    if how == "none":
        return dict(matrices)
    if how == "minmax":
        pooled = np.concatenate(list(matrices.values()), axis=0)
        low, high = pooled.min(axis=0), pooled.max(axis=0)
        flat = [t for t, lo, hi in zip(tasks, low, high, strict=True) if hi == lo]
        if flat:
            raise ValueError(
                f"--normalize minmax: every score of task(s) {', '.join(flat)} is the same; "
                "give reference scores (--normalize reference --reference TASK=LOW:HIGH)"
            )
    else:
        reference = dict(reference or {})
        lacking = [t for t in tasks if t not in reference]
        if lacking:
            raise ValueError(f"--normalize reference: no --reference for {', '.join(lacking)}")
        low = np.array([reference[t][0] for t in tasks], dtype=np.float64)
        high = np.array([reference[t][1] for t in tasks], dtype=np.float64)
        if (high == low).any():
            raise ValueError("--reference: LOW and HIGH must differ")
    return {m: (s - low) / (high - low) for m, s in matrices.items()}


def parse_reference(entries: Sequence[str]) -> dict[str, tuple[float, float]]:
    """`TASK=LOW:HIGH` entries as `{task: (low, high)}`."""
    out = {}
    for entry in entries:
        task, _, bounds = entry.rpartition("=")
        low, _, high = bounds.partition(":")
        try:
            out[task] = (float(low), float(high))
        except ValueError:
            raise ValueError(f"--reference {entry!r}: give TASK=LOW:HIGH") from None
        if not task:
            raise ValueError(f"--reference {entry!r}: give TASK=LOW:HIGH")
    return out


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

    args = tyro.cli(StatsArgs, args=argv, prog="rlsuite stats")
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
