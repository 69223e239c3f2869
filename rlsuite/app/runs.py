"""A run directory's lifecycle: a new run checked and started, a run resumed and trained, the
lines that announce and report it, the mesh it trains on (`--mesh`) and the evaluations that
`rlsuite eval` saved in it.

    record = read_record(out)                  # RunRecord, refused by name where it is not one
    built = build(record)                      # agent, hparams and dataset it trains with
    states, meta = restore(out, record, built) # every run's learner state at its last checkpoint
    summary = start(new)                       # a new run (`NewRun`): config.json, then train
    summary = resume(out)                      # continue from the last checkpoint, bitwise

The record (`RunRecord`), its reading and what it trains with (`read_record`, `build`,
`restore`) are `rlsuite.app.run_record`'s; this module re-exports them, so that a command reads
a run directory through `runs` alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import sys
import time
from typing import Any

import jax

from rlsuite.app.errors import UsageError
from rlsuite.app.run_record import CONFIG, REQUIRED, Built, RunRecord, build, read_record
from rlsuite.app.run_record import Devices as Devices
from rlsuite.app.run_record import Logging as Logging
from rlsuite.app.run_record import config_of as config_of
from rlsuite.app.run_record import env_label as env_label
from rlsuite.app.run_record import load_dataset as load_dataset
from rlsuite.app.run_record import load_drift as load_drift
from rlsuite.app.run_record import made_with as made_with
from rlsuite.app.run_record import read_json as read_json
from rlsuite.app.run_record import recorded_devices as recorded_devices
from rlsuite.app.run_record import reference_returns as reference_returns
from rlsuite.app.run_record import restore as restore
from rlsuite.loop import checkpoint, compile_cache
from rlsuite.loop.divergence import diverged_runs
from rlsuite.loop.files import unwritable, write_json
from rlsuite.loop.loggers import CSV, JSONL, read_metrics

EVALUATIONS = "eval_"  # the files `rlsuite eval` saves in a run directory start so


def saved_evaluations(run: pathlib.Path) -> list[pathlib.Path]:
    """The evaluations `rlsuite eval` saved in `run`, newest last."""
    return sorted(run.glob(f"{EVALUATIONS}*.json"), key=lambda p: p.stat().st_mtime)


def check_out(out: pathlib.Path) -> None:
    """Refuse an `--out` that cannot hold a new run, before anything is written there."""
    from rlsuite.loop.files import file_in_the_way

    blocked = file_in_the_way(out)
    if blocked is not None:
        raise UsageError(f"--out {out}: {blocked} is a file, not a directory")
    reason = unwritable(out)
    if reason is not None:
        raise UsageError(f"--out {out}: {reason}")
    saved = saved_in(out)
    if (out / CONFIG).exists() and (saved is not None or not _never_started(out)):
        raise UsageError(
            f"{out} already holds a run; continue it with --resume {out} or choose another --out"
        )
    if saved is not None:
        raise UsageError(f"--out {out}: {saved}")
    if (out / CONFIG).exists():
        print(
            f"rlsuite: note: {out / CONFIG} is that of a run that saved nothing (no checkpoint, "
            "metrics or final.json); this run takes its place",
            file=sys.stderr,
        )


def _never_started(out: pathlib.Path) -> bool:
    """Whether the `config.json` in `out` (which has saved nothing else) is that of a run that
    never started: a record `rlsuite train` wrote, or a file its write left empty or cut short
    (before those writes were atomic). Any other file is kept."""
    try:
        record = json.loads((out / CONFIG).read_text() or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return True
    return record == {} or (isinstance(record, dict) and all(k in record for k in REQUIRED))


def saved_in(out: pathlib.Path) -> str | None:
    """What a run has saved in `out` (checkpoints or metrics), said in a few words, or None."""
    if checkpoint.latest_step(out / "checkpoints") is not None:
        return f"{out / 'checkpoints'} already holds checkpoints"
    for name in (JSONL, CSV):
        if (out / name).is_file() and (out / name).stat().st_size:
            return f"{out / name} already holds metrics"
    if (out / "final.json").exists():
        return f"{out / 'final.json'} exists"
    return None


def _forget(out: pathlib.Path, made: pathlib.Path | None) -> None:
    """After a new run failed before it saved anything, remove the `config.json`, the empty
    metrics files and the empty folders (`made` and below) it made: the command can run again."""
    if saved_in(out) is not None:
        return
    for name in (CONFIG, JSONL, CSV):  # the metrics files are empty here (saved_in)
        (out / name).unlink(missing_ok=True)
    if made is not None:
        for path in [*sorted(made.rglob("*"), reverse=True), made]:
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()


@dataclasses.dataclass
class NewRun:
    """A new run, checked and ready to start (`rlsuite.app.train.new_run`): nothing is written
    yet."""

    args: Any  # the parsed command line
    agent: Any
    record: RunRecord
    out: pathlib.Path
    data: Any = None  # an offline algorithm's dataset


def start(run: NewRun) -> dict:
    """Write the run's `config.json` (process 0) and train it; a run that fails before saving
    anything leaves no directory behind."""
    from rlsuite.loop.distributed import barrier, is_main

    out = run.out
    barrier("rlsuite train: --out checked")  # by every process, before process 0 writes there
    made = [path for path in (out, *out.parents) if not path.exists()]  # created below
    if is_main():
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(f"--out {out}: {error.strerror}") from None
    built = Built(run.agent, run.record.train_hparams(), run.data)
    try:
        if is_main():
            write_json(out / CONFIG, run.record.to_dict())
        return train(run.record, built, out, False, run.args.progress)
    except Exception:
        if is_main():
            _forget(out, made[-1] if made else None)
        raise


def resume(out: pathlib.Path, mesh: str | None = None, progress: bool = True) -> dict:
    """Continue the run in `out` from its last checkpoint, on its recorded mesh or on `mesh`
    (`runs=R,envs=E`: its state resharded, so it may end apart from the uninterrupted run at
    float tolerance)."""
    record = read_record(out, "run to resume")
    built = build(record)
    if mesh is not None:
        sizes = mesh_sizes(mesh, record.num_seeds, built.agent)
        if sizes != record.mesh:
            print(
                f"rlsuite train: note: the run trained on the mesh {record.mesh} and "
                f"continues on {sizes} (its state resharded), so it may end apart from the "
                "uninterrupted run at float tolerance",
                file=sys.stderr,
            )
        record = dataclasses.replace(record, mesh=sizes)  # this call's; config.json keeps its own
    return train(record, built, out, True, progress)


def resume_batch(out: pathlib.Path, kind: str, written: str, progress: bool = True):
    """`(out, record, summary)` of the batch of `kind` ("sweep" or "pbt") in `out`, continued
    from its checkpoint (`resume`), or, where its training ended but the process died before it
    wrote `written`, the summary it saved."""
    record = read_record(out, f"{kind} to resume")
    if record.batch is None or record.batch.kind != kind:
        held = "run" if record.batch is None else record.batch.kind
        command = "train" if record.batch is None else record.batch.kind
        raise UsageError(
            f"{out} holds a {held}, not a {kind}: continue it with rlsuite {command} --resume {out}"
        )
    final = out / "final.json"
    if final.is_file() and not (out / written).exists():
        return out, record, json.loads(final.read_text())
    return out, record, resume(out, progress=progress)


def train(record: RunRecord, built: Built, out: pathlib.Path, resumed: bool, progress: bool):
    """Train the record's runs in `out` (`rlsuite.loop.runner.fit`) under its mesh, printing a
    line before and a summary after; returns the summary (`final.json`)."""
    from rlsuite.loop import runner

    began = time.perf_counter()
    unit = runner.step_unit(built.data)
    _announce(record, built, out, resumed, unit)
    mesh = None
    if record.mesh is not None:
        try:
            mesh = make_mesh(record.mesh)
        except UsageError as error:
            hint = "; continue it on another mesh with --mesh" if resumed else ""
            raise UsageError(f"{error}{hint}") from None
    with contextlib.nullcontext() if mesh is None else jax.set_mesh(mesh):
        records = record.fit_records(out, resumed, progress, built.data)
        result = runner.fit(built.agent, jax.random.key(record.seed), built.hparams, **records)
    _report(record, result.summary, out, unit, time.perf_counter() - began)
    _family_summary(record, out)
    return result.summary


def _announce(record: RunRecord, built: Built, out, resumed: bool, unit: str) -> None:
    num_updates, per_update = built.agent.config.num_updates, built.agent.env_steps_per_update
    words, at = unit.replace("_", " "), checkpoint.latest_step(out / "checkpoints")
    doing = f"resuming (from update {at:,})" if resumed and at else "resuming" if resumed else ""
    # The total before anything runs: for an offline agent, --num-updates x --gradient-steps.
    print(
        f"{doing or 'training'} {record.algo} on {record.env_label}: "
        f"{record.num_seeds} {record.runs_word} x {num_updates * per_update:,} {words} each "
        f"({num_updates:,} update{'' if num_updates == 1 else 's'} of {per_update:,}); "
        f"files in {out}",
        flush=True,
    )


def _report(record: RunRecord, summary: dict, out, unit: str, whole: float) -> None:
    """The run's summary line; `whole` is the seconds of the whole run, the final evaluation
    and the files included (the summary's `wall_seconds` is the training's)."""
    words = unit.replace("_", " ")
    score = ""
    if "normalized_score_mean" in summary:
        score = f"; normalised score {summary['normalized_score_mean']:.1f}"
    per_seed = ", ".join(_number(r) for r in summary["eval_return_per_seed"])
    diverged = diverged_runs(summary)
    over = ""
    if diverged:
        left = summary["num_seeds"] - len(diverged)
        over = f" over the {left} that did not diverge" if left else ""
    print(
        f"{summary['algo']} on {record.env_label}: {summary['num_seeds']} {record.runs_word} x "
        f"{summary[unit]:,} {words} in {summary['wall_seconds']:.1f} s, "
        f"{summary['compile_seconds']:.1f} s of it compiling "
        f"({summary[f'{unit}_per_second']:,} {words}/s after), {whole:.1f} s with the "
        "evaluation and the files; evaluation return "
        f"{_number(summary['eval_return_mean'], 'none')}{over} (per seed: {per_seed}){score}; "
        f"files in {out}{compile_cache.said()}"
    )
    if diverged:
        at = summary["diverged_at_update"]
        which = ", ".join(f"{run} at update {at[run]}" for run in diverged)
        print(
            f"diverged: {len(diverged)} of {summary['num_seeds']} {record.runs_word} ({which}); "
            "their results are null in final.json and rank last in sweep, pbt and stats",
            file=sys.stderr,
        )


def _family_summary(record: RunRecord, out: pathlib.Path) -> None:
    """The family's own sentence on the whole run, where its record has one
    (`registry.Algorithm.summary`), from the run's metric rows."""
    summarize = record.algorithm.summary
    line = None if summarize is None else summarize(read_metrics(out))
    if line:
        print(f"{record.algo}: {line}")


def _number(value, missing: str = "diverged") -> str:
    return missing if value is None else f"{value:.1f}"


def mesh_sizes(text: str, num_runs: int, agent) -> dict:
    """`--mesh`'s axis sizes, refused (naming the value) where an axis is unknown, the sizes do
    not use the devices, or they do not divide the runs or the agent's batches."""
    from rlsuite.loop.mesh import check_mesh

    sizes = parse_mesh(text)
    check_mesh(make_mesh(sizes), num_runs, agent.env_split)
    return sizes


def parse_mesh(text: str) -> dict:
    from rlsuite.loop import mesh

    try:
        return mesh.parse_mesh(text)
    except ValueError as error:
        raise UsageError(str(error)) from None


def make_mesh(sizes: dict):
    from rlsuite.loop import mesh

    try:
        return mesh.make_mesh(**sizes)
    except ValueError as error:
        reason = str(error).removeprefix("mesh: ")
        text = ",".join(f"{name}={size}" for name, size in sizes.items())
        raise UsageError(f"--mesh {text}: {reason}") from None
