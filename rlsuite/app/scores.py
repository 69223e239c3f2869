"""The scores `rlsuite stats` compares: run directories, their per-seed scores and the matrices
they form.

A run directory gives one score per seed: a `*_per_seed` entry of its `final.json`
(`eval_return`, `normalized_score` for offline runs, ...) or the last finite value of a
`metrics.jsonl` metric (`load_run`). Runs are grouped into methods and tasks by fields of their
`config.json` (`--by`; default: the algorithm is the method, the environment the task); runs that
share a method and a task pool their seeds. Each method's scores form a matrix `[seeds, tasks]`
(`score_matrices`), which rliable's stratified bootstrap resamples over seeds within each task, so
a method must have the same number of seeds on every task (runs that do not are refused, by name).
A diverged seed is scored below every finished seed of its task (`below_for_diverged`), and the
matrices may be normalised per task (`normalize`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np

from rlsuite.loop.divergence import DIVERGED, diverged_runs

NORMALIZE = ("none", "minmax", "reference")
PER_SEED = "_per_seed"


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
