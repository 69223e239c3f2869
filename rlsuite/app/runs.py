"""A run directory: its record (`config.json`) as a typed value, and its lifecycle.

    record = read_record(out)                  # RunRecord, refused by name where it is not one
    built = build(record)                      # agent, hparams and dataset it trains with
    states, meta = restore(out, record, built) # every run's learner state at its last checkpoint
    summary = start(new)                       # a new run (`NewRun`): config.json, then train
    summary = resume(out)                      # continue from the last checkpoint, bitwise

A `RunRecord` is what `rlsuite train`, `sweep` and `pbt` write into `config.json` and every other
command reads back: the algorithm, environment, seeds, chunks, evaluation, logging, the algorithm's
config and hparams (its own dataclasses), the devices and mesh it trained on, the dataset of an
offline run and the kind of batch (`rlsuite.app.batches`: None, a `Sweep` or a `Population`).
`config.json` keeps its format: a record written before a field existed reads with the rule it
was made by (`from_dict`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import pathlib
import sys
from typing import Any, NamedTuple

import jax

from rlsuite.agents import registry
from rlsuite.app.batches import Batch, batch_of
from rlsuite.app.errors import UsageError, choose
from rlsuite.loop import checkpoint, compile_cache
from rlsuite.loop.agent import config_dict
from rlsuite.loop.divergence import diverged_runs
from rlsuite.loop.files import unwritable, write_json
from rlsuite.loop.loggers import CSV, JSONL

CONFIG = "config.json"
REQUIRED = ("algo", "env", "num_seeds", "config", "hparams")


@dataclasses.dataclass(frozen=True)
class Logging:
    tensorboard: bool = False
    wandb: bool = False
    log_interval: int = 1  # env steps per metrics row; 1 (a row per update) before it was recorded


@dataclasses.dataclass(frozen=True)
class Devices:
    platform: str
    count: int


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What a run directory's `config.json` holds, typed: `config` and `hparams` are the
    algorithm's dataclasses (the hparams a sweep or population starts its runs from)."""

    algo: str
    env: str
    num_seeds: int  # the runs of the batch: seeds, configurations x seeds or members
    seed: int
    chunks: int
    chunk_updates: int
    eval_episodes: int
    logging: Logging
    config: Any
    hparams: Any
    devices: Devices | None = None  # None in a record from before they were recorded
    mesh: dict | None = None  # {"runs": R, "envs": E}, or None: no mesh
    dataset: str | None = None  # an offline run's dataset file, resolved
    dataset_sha256: str | None = None
    batch: Batch = None
    env_options: dict = dataclasses.field(default_factory=dict)  # make(env, **options), parsed

    @property
    def env_label(self) -> str:
        """The environment and its options, as a run's messages name it."""
        return env_label(self.env, self.env_options)

    @property
    def algorithm(self) -> registry.Algorithm:
        return registry.get(self.algo)

    @property
    def hparams_axis(self) -> int | None:
        """The driver's `hparams_axis`: 0 for a sweep or a population (one set per run)."""
        return None if self.batch is None else 0

    @property
    def runs_word(self) -> str:
        """What the runs are called: seeds, or the runs of a batch (singular for one)."""
        word = "seeds" if self.batch is None else "runs"
        return word[:-1] if self.num_seeds == 1 else word

    def train_hparams(self):
        """The hparams the runs train with: `hparams`, or one set per run of a batch."""
        return self.hparams if self.batch is None else self.batch.hparams(self.hparams)

    def fit_records(self, out: pathlib.Path, resumed: bool, progress: bool, data=None) -> dict:
        """`runner.fit`'s records for this run in `out` (`schedule`, `output`, `callbacks`,
        `final`) and `data`: an offline run's dataset, identified in the checkpoints by its
        hash and scored against its reference returns."""
        from rlsuite.loop import runner

        batch, offline = self.batch, data is not None
        per_config = None if batch is None else batch.seeds_per_config
        between = None if batch is None else batch.between_chunks(self.seed, out)
        metadata = {"dataset_sha256": self.dataset_sha256} if offline else None
        schedule = (self.num_seeds, None, self.chunk_updates, self.hparams_axis, per_config)
        logging = dataclasses.asdict(self.logging)
        return {
            "schedule": runner.Schedule(*schedule),
            "output": runner.Output(out, resumed, self.env, progress, logging, metadata),
            "callbacks": runner.Callbacks(between_chunks=between),
            "final": runner.Final(self.eval_episodes, reference_returns(data) if offline else None),
            "data": data,
        }

    def to_dict(self) -> dict:
        """`config.json`'s entries, in its order."""
        record = {
            "algo": self.algo,
            "env": self.env,
            "num_seeds": self.num_seeds,
            "seed": self.seed,
            "chunks": self.chunks,
            "chunk_updates": self.chunk_updates,
            "eval_episodes": self.eval_episodes,
            "logging": dataclasses.asdict(self.logging),
            "config": config_dict(self.config),
            "hparams": dataclasses.asdict(self.hparams),
            "devices": None if self.devices is None else dataclasses.asdict(self.devices),
            "mesh": self.mesh,
        }
        if self.env_options:
            record["env_options"] = self.env_options
        if self.dataset is not None:
            record.update(dataset=self.dataset, dataset_sha256=self.dataset_sha256)
        if self.batch is not None:
            record[self.batch.kind] = self.batch.to_dict()
        return record

    @classmethod
    def from_dict(cls, record: dict) -> RunRecord:
        """A record from `config.json`'s entries, of today's format or an earlier one."""
        algo = registry.get(record["algo"])
        config = config_of(algo, record["config"])
        chunk_updates = record.get("chunk_updates")
        if chunk_updates is None:  # recorded before chunk_updates: the rule it was made by
            chunk_updates = max(1, config.num_updates // record["chunks"])
        devices = record.get("devices")
        return cls(
            algo=record["algo"],
            env=record["env"],
            num_seeds=record["num_seeds"],
            seed=record["seed"],
            chunks=record["chunks"],
            chunk_updates=chunk_updates,
            eval_episodes=record["eval_episodes"],
            logging=Logging(**record["logging"]),
            config=config,
            hparams=algo.hparams_cls(**record["hparams"]),
            devices=None if devices is None else Devices(**devices),
            mesh=record.get("mesh"),
            dataset=record.get("dataset") or None,
            dataset_sha256=record.get("dataset_sha256"),
            batch=batch_of(record),
            env_options=record.get("env_options") or {},
        )


def env_label(env: str, options: dict) -> str:
    """`env` followed by its options, `cartpole (gravity=20.0)`, or `env` alone."""
    if not options:
        return env
    return f"{env} ({', '.join(f'{k}={v!r}' for k, v in options.items())})"


def config_of(algo: registry.Algorithm, fields: dict):
    """The algorithm's config from a record's `config` (JSON lists back to tuples), without the
    fields its class has retired (`retired_fields`), each of which must hold its one value."""
    retired = getattr(algo.config_cls, "retired_fields", {})
    for name, value in retired.items():
        if name in fields and fields[name] != value:
            raise UsageError(
                f"{algo.config_cls.__name__} has no field {name} (it could only be {value!r}); "
                f"the record holds {name}={fields[name]!r}"
            )
    fields = {k: v for k, v in fields.items() if k not in retired}
    return algo.config_cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def read_json(path: pathlib.Path, missing: str, name: str | None = None):
    """What the JSON file `path` holds, refused with `missing` where there is no file and with
    `name` (default: the path) where it is not JSON."""
    if not path.is_file():
        raise UsageError(missing)
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{name or path} is not valid JSON ({error})") from None


def read_record(out: pathlib.Path, what: str = "run") -> RunRecord:
    """The record of the run in `out`, refused with the file named where `config.json` is
    missing, not JSON or not one that `rlsuite train` wrote."""
    path = pathlib.Path(out) / CONFIG
    record = read_json(path, f"{out} holds no {what} (no config.json)")
    missing = [k for k in REQUIRED if not isinstance(record, dict) or k not in record]
    if missing:
        raise UsageError(
            f"{path} lacks {', '.join(missing)}: it is not a config.json that rlsuite train wrote"
        )
    choose("algorithm", record["algo"], registry.names())
    return RunRecord.from_dict(record)


def recorded_devices(out: pathlib.Path) -> Devices | None:
    """The devices the run in `out` trained on, read before JAX starts (one CPU device for a
    record from before they were recorded); None where `out` holds no `config.json`."""
    path = pathlib.Path(out) / CONFIG
    if not path.is_file():
        return None
    record = read_record(out)
    return record.devices or Devices("cpu", 1)


class Built(NamedTuple):
    agent: Any
    hparams: Any  # what the runs train with (`RunRecord.train_hparams`)
    data: Any  # an offline run's dataset, or None


def build(record: RunRecord) -> Built:
    """The agent, hparams and dataset (None for online algorithms) a record trains with; an
    offline run's dataset is refused where the file changed since the run started."""
    from rlsuite import envs

    env, env_params = envs.options.make_with_options(record.env, record.env_options)
    data = None
    if record.dataset:
        data, sha = load_dataset(record.dataset, env, env_params)
        if sha != record.dataset_sha256:
            raise UsageError(
                f"{record.dataset} changed since the run started (SHA-256 {sha[:12]}..., "
                f"the run used {record.dataset_sha256[:12]}...)"
            )
    agent = record.algorithm.make(record.config, env, env_params)
    if record.batch is not None:
        agent = record.batch.agent(agent)
    return Built(agent, record.train_hparams(), data)


def load_dataset(path: str, env=None, env_params=None):
    """The dataset in `path` and the SHA-256 of the file."""
    import hashlib

    from rlsuite.data.dataset_files import load_d4rl

    file = pathlib.Path(path)
    if not file.is_file():
        raise UsageError(f"--dataset {path}: no such file")
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    return load_d4rl(file, env=env, env_params=env_params), sha


def reference_returns(data) -> tuple[float, float] | None:
    """A dataset's `(random, expert)` returns for normalised scores, or None (no dataset, or
    one without both)."""
    refs = None if data is None else (data.info.random_return, data.info.expert_return)
    return None if refs is None or None in refs else refs


def restore(out: pathlib.Path, record: RunRecord, built: Built):
    """`(states, metadata)` of the latest checkpoint of the run in `out` (every seed, or every
    run of a sweep or population)."""
    from rlsuite.loop import driver

    keys = jax.random.split(jax.random.key(0), record.num_seeds)
    init = functools.partial(driver.init_batch, built.agent)
    target = jax.eval_shape(init, keys, built.hparams, record.hparams_axis, built.data)
    expect = {"algo": record.algo, "env": record.env}
    return checkpoint.restore(pathlib.Path(out) / "checkpoints", target, expect=expect)


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
    _report(record, result.summary, out, unit)
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


def _report(record: RunRecord, summary: dict, out, unit: str) -> None:
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
        f"({summary[f'{unit}_per_second']:,} {words}/s after); evaluation return "
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
