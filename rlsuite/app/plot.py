"""`rlsuite plot RUN...`: learning curves of runs (per env-step bin, the mean and 95% bootstrap
interval across seeds), or with `--adaptation` the adaptation curve of task-family runs, or with
`--levels` one UED run's held-out and highest-scored levels (`rlsuite.app.plotting` draws them).

    rlsuite plot runs/a runs/b --out curves.png
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys

import jax
import numpy as np
import tyro

from rlsuite.app import runs
from rlsuite.app.argv import parse
from rlsuite.app.errors import UsageError
from rlsuite.loop.divergence import DIVERGED
from rlsuite.loop.loggers import JSONL
from rlsuite.ops.validators import counted

TOP_LEVELS = 8  # buffer levels drawn by `rlsuite plot --levels`


@dataclasses.dataclass
class PlotArgs:
    runs: tyro.conf.Positional[list[str]]
    """run directories to draw"""
    out: str = "curves.png"
    """image to write, its format from the extension (png when there is none); must not exist"""
    metric: str = "charts/episodic_return"
    """metric to draw against environment steps"""
    bin_steps: int | None = None
    """env steps per bin: each seed's mean per bin, then the mean and 95% interval across seeds
    (default: about 30 bins over the longest run, rounded to 1, 2 or 5 x 10^k)"""
    adaptation: bool = False
    """draw the adaptation curve of task-family runs (rl2) instead: the return per episode of a
    trial, mean and 95% interval across seeds, of the latest `rlsuite eval` of each run (else of
    its final evaluation, `final.json`); the legend names the file"""
    levels: bool = False
    """draw the levels of one UED run (ued) instead: its named held-out levels with their solve
    rates with greedy and with sampled actions, of the latest `rlsuite eval` of the run (else of
    its final evaluation, `final.json`; the title names the file), then the highest-scored
    levels of its level buffer (first seed, last checkpoint)"""


def main(argv: list[str]) -> dict:
    from rlsuite.app.plotting import curve, image_path, plot_runs
    from rlsuite.loop.files import check_new_file
    from rlsuite.loop.loggers import read_metrics

    args = parse(PlotArgs, argv, "rlsuite plot")
    if args.bin_steps is not None and args.bin_steps < 1:
        raise UsageError(f"--bin-steps must be >= 1, got {args.bin_steps}")
    out = image_path(args.out)  # "curves" is "curves.png", as matplotlib would write it
    check_new_file(out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: {out.parent} is not a directory")
    if not args.runs:
        raise UsageError("plot needs at least one run directory: rlsuite plot RUN [RUN ...]")
    if args.adaptation:
        return _plot_adaptation(args.runs, out)
    if args.levels:
        return _plot_levels(args.runs, out)
    drawn, at_update = [], []
    for run in args.runs:
        if not (pathlib.Path(run) / JSONL).exists():
            raise UsageError(f"{run} holds no {JSONL}")
        rows = read_metrics(run)
        try:
            curve(rows, args.metric)
        except ValueError as error:
            raise UsageError(f"{run} {error}") from None
        _say_diverged(run, rows, args.metric)
        drawn.append((pathlib.Path(run).name, rows))
        final = pathlib.Path(run) / "final.json"
        summary = json.loads(final.read_text()) if final.is_file() else {}
        at_update.append(summary.get("diverged_at_update"))
    plot_runs(drawn, out, args.metric, args.bin_steps, at_update)
    print(f"wrote {out}")
    return {"out": str(out)}


def _say_diverged(run: str, rows: list[dict], metric: str) -> None:
    """Say which seeds of `run` diverged (their curves end there; the mean after is over the
    others), and refuse a run with no value of `metric` left to draw."""
    from rlsuite.app.plotting import diverged_at

    gone = diverged_at(rows)
    values = [r.get(metric) for r in rows if r.get(DIVERGED, 0) == 0]
    if not any(v is not None and math.isfinite(v) for v in values):
        seeds = {r["seed"] for r in rows}
        everyone = gone and set(gone) == seeds
        why = "every seed diverged before it logged one" if everyone else "no row holds one"
        raise UsageError(f"{run} has no value of {metric} to draw: {why}")
    for seed, steps in sorted(gone.items()):
        print(
            f"rlsuite plot: note: {run}: seed {seed} diverged at {steps:,} env steps; its curve "
            "ends there and the mean after it is over the other seeds",
            file=sys.stderr,
        )


def _newest(run: pathlib.Path, key: str) -> tuple[dict, str] | None:
    """The newest result of `run` that holds `key`, with its file's name: the latest evaluation
    `rlsuite eval` saved in it, else its final evaluation (`final.json`); None where none does.
    What `rlsuite eval` printed last is then what the figure shows."""
    for saved in reversed(runs.saved_evaluations(run)):
        evaluated = json.loads(saved.read_text())
        if key in evaluated:
            return evaluated, saved.name
    final = run / "final.json"
    summary = json.loads(final.read_text()) if final.exists() else {}
    return (summary, final.name) if key in summary else None


def _plot_adaptation(run_dirs: list[str], out: pathlib.Path) -> dict:
    from rlsuite.app.plotting import plot_adaptation

    curves = []
    for run in run_dirs:
        final = pathlib.Path(run) / "final.json"
        if not final.exists():
            raise UsageError(f"{run} holds no final.json (a finished run writes it)")
        found = _newest(pathlib.Path(run), "adaptation")
        if found is None:
            raise UsageError(
                f"{run} has no adaptation curve: its environment "
                f"({json.loads(final.read_text()).get('env')}) is not a task family whose "
                "trials count episodes (meta/..., trained with rl2)"
            )
        summary, source = found
        if source != final.name:
            trials = f"{counted(summary['episodes'], 'trial')} per seed, {summary['actions']}"
            print(
                f"rlsuite plot: {run}: the adaptation curve of {source} ({trials}), as "
                "rlsuite eval saved it",
                file=sys.stderr,
            )
        curves.append((f"{pathlib.Path(run).name}, {source}", summary["adaptation"]))
    plot_adaptation(curves, out)
    print(f"wrote {out}")
    return {"out": str(out)}


def held_out_panels(run: pathlib.Path, levels) -> tuple[list, list[str], str | None]:
    """`(images, titles, caption)` of the named held-out levels of `levels` (a `Levels`), each
    titled with its solve rates (the share of attempts with a return above 0, over the seeds)
    with greedy and with sampled actions, from the newest result of `run` that holds them
    (`_newest`), which `caption` names; no panels where none does."""
    from rlsuite.environment.evaluations import held_out_returns

    found = _newest(run, "held_out")
    if found is None or levels.held_out is None:
        return [], [], None
    summary, source = found
    by_mode = held_out_returns(summary["held_out"])
    rates = {mode: (np.asarray(r) > 0).mean(axis=(0, 2)) for mode, r in by_mode.items()}
    names, held_out = levels.held_out()
    images, titles = [], []
    for i, name in enumerate(names):
        images.append(levels.render(jax.tree.map(lambda x, i=i: np.asarray(x[i]), held_out)))
        solved = "\n".join(f"{rate[i]:.2f} {mode}" for mode, rate in rates.items())
        titles.append(f"{name}\nsolved {solved}")
    seeds, _, attempts = np.shape(summary["held_out"]["returns"])
    caption = (
        f"held-out levels: solve rates of {source} ({attempts} attempts per level and seed, "
        f"{counted(seeds, 'seed')})"
    )
    if source != "final.json":
        print(f"rlsuite plot: {run}: {caption}, as rlsuite eval saved it", file=sys.stderr)
    return images, titles, caption


def _plot_levels(run_dirs: list[str], out: pathlib.Path) -> dict:
    from rlsuite.app.plotting import plot_levels
    from rlsuite.data import level_buffer
    from rlsuite.environment.levels import levels_of

    if len(run_dirs) != 1:
        raise UsageError(f"--levels draws one run's levels, got {len(run_dirs)} run directories")
    run = pathlib.Path(run_dirs[0])
    record = runs.read_record(run)
    built = runs.build(record)
    levels = levels_of(built.agent.env)
    if levels is None or levels.render is None:
        raise UsageError(f"{run}: its environment ({record.env}) has no levels to draw")
    images, titles, caption = held_out_panels(run, levels)
    states, _ = runs.restore(run, record, built)
    buffer = getattr(states, "buffer", None)
    if isinstance(buffer, level_buffer.LevelBufferState):
        first = jax.tree.map(lambda x: x[0], buffer)
        k = min(TOP_LEVELS, int(first.size))
        if k:
            _, scores, top = level_buffer.highest(first, k)
            for i in range(k):
                images.append(levels.render(jax.tree.map(lambda x, i=i: np.asarray(x[i]), top)))
                titles.append(f"buffer #{i + 1}\nscore {float(scores[i]):.3f}")
    elif getattr(states, "levels", None) is not None:  # PAIRED: the levels its adversary built
        last = jax.tree.map(lambda x: np.asarray(x[0]), states.levels)  # seed 0's
        for i in range(min(TOP_LEVELS, jax.tree.leaves(last)[0].shape[0])):
            images.append(levels.render(jax.tree.map(lambda x, i=i: x[i], last)))
            titles.append(f"built last #{i + 1}\n(seed 0)")
    if not images:
        raise UsageError(
            f"{run} has no held-out results (final.json, rlsuite eval's) and no levels to draw"
        )
    plot_levels(images, titles, out, title=caption)
    print(f"wrote {out}")
    return {"out": str(out), "panels": len(images)}
