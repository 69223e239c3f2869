"""A run directory's record (`config.json`) as a typed value, and what it trains with.

    record = read_record(out)                  # RunRecord, refused by name where it is not one
    built = build(record)                      # agent, hparams and dataset it trains with
    states, meta = restore(out, record, built) # every run's learner state at its last checkpoint

A `RunRecord` is what `rlsuite train`, `sweep` and `pbt` write into `config.json` and every other
command reads back: the algorithm, environment, seeds, chunks, evaluation, logging, the algorithm's
config and hparams (its own dataclasses), the devices and mesh it trained on, the dataset of an
offline run and the kind of batch (`rlsuite.app.batches`: None, a `Sweep` or a `Population`).
`config.json` keeps its format: a record written before a field existed reads with the rule it
was made by (`from_dict`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
from typing import Any, NamedTuple

import jax

from rlsuite.agents import registry
from rlsuite.app.batches import Batch, batch_of
from rlsuite.app.errors import UsageError, choose
from rlsuite.loop import checkpoint
from rlsuite.loop.agent import config_dict

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
    deterministic: bool = False  # XLA's deterministic GPU operations (`--deterministic`)
    matmul_precision: str = "default"  # of float32 matrix products (`--matmul-precision`)

    def to_dict(self) -> dict:
        """`config.json`'s entry: the platform and count, and the numerics where not XLA's
        defaults (a record from before they existed reads and writes the same)."""
        record = {"platform": self.platform, "count": self.count}
        if self.numerics != (False, "default"):
            record.update(deterministic=self.deterministic, matmul_precision=self.matmul_precision)
        return record

    @property
    def numerics(self) -> tuple[bool, str]:
        """`rlsuite.loop.platform.use_numerics`'s arguments: what a resume asks for again."""
        return self.deterministic, self.matmul_precision


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
    drift: str | None = None  # the LPO run whose learned drift is the policy loss, resolved
    drift_sha256: str | None = None  # of that drift's weights
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
            "devices": None if self.devices is None else self.devices.to_dict(),
            "mesh": self.mesh,
        }
        if self.env_options:
            record["env_options"] = self.env_options
        if self.dataset is not None:
            record.update(dataset=self.dataset, dataset_sha256=self.dataset_sha256)
        if self.batch is not None:
            record[self.batch.kind] = self.batch.to_dict()
        if self.drift is not None:
            record.update(drift=self.drift, drift_sha256=self.drift_sha256)
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
            drift=record.get("drift"),
            drift_sha256=record.get("drift_sha256"),
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
    variants = {}
    if record.drift:
        variants["policy_loss"], sha = load_drift(record.drift)
        if sha != record.drift_sha256:
            raise UsageError(
                f"the drift of {record.drift} changed since the run started (its weights' "
                f"SHA-256 {sha[:12]}..., the run used {record.drift_sha256[:12]}...)"
            )
    agent = made_with(record.algorithm, record.config, env, env_params, variants)
    if record.batch is not None:
        agent = record.batch.agent(agent)
    return Built(agent, record.train_hparams(), data)


def made_with(algo: registry.Algorithm, config, env, env_params, variants: dict):
    """`algo.make(config, env, env_params, **variants)`; a family that takes no such variant
    (`--drift`'s `policy_loss`) is refused by name."""
    try:
        return algo.make(config, env, env_params, **variants)
    except TypeError as error:
        if not variants or not any(name in str(error) for name in variants):
            raise
        taking = [n for n in ("ppo", "dpo", "fixpo") if n in registry.names()]
        raise UsageError(
            f"--drift: {algo.name} takes no policy loss; the families that do: {', '.join(taking)}"
        ) from None


def load_drift(path: str):
    """`(policy loss, SHA-256 of the drift's weights)` of the LPO run in `path`: PPO's loss with
    its learned drift (`lpo.drift_loss`), the ES mean of its first run at its latest checkpoint."""
    import hashlib

    import numpy as np

    from rlsuite.agents import lpo

    out = pathlib.Path(path)
    record = read_record(out, "run (--drift takes a run directory of rlsuite train lpo)")
    if record.algo != "lpo":
        raise UsageError(f"--drift {path}: a run of rlsuite train lpo, not of {record.algo}")
    if not checkpoint.all_steps(out / "checkpoints"):
        raise UsageError(f"--drift {path}: the run has no checkpoint yet")
    try:
        loss_of = functools.partial(lpo.drift_loss, record.config)
        loss_of(None)  # a temporally-aware drift is refused before anything is restored
    except ValueError as error:
        raise UsageError(f"--drift {path}: {error}") from None
    states, _ = restore(out, record, build(record))
    params = lpo.mean_drift(record.config, jax.tree.map(lambda x: x[0], states))
    weights = b"".join(np.asarray(leaf).tobytes() for leaf in jax.tree.leaves(params))
    return loss_of(params), hashlib.sha256(weights).hexdigest()


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


def fit_on_dataset(agent, data, sha: str, args, idea: dict):
    """An experiment script's offline run of `agent` on `data` (its file's SHA-256 `sha`): the
    seeds, output and evaluation of `args` (its fields `hparams`, `seed`, `num_seeds`, `out`,
    `resume` and `eval_episodes`), scored against the dataset's references where it has them;
    the script's `idea` flags and the dataset's hash are recorded, so that a resume with another
    of either is refused. `(result, said, scores)`: the fit's result, what the scores are
    (`normalised score` or `evaluation return`) and one per seed."""
    from rlsuite.loop import runner

    result = runner.fit(
        agent,
        jax.random.key(args.seed),
        args.hparams,
        schedule=runner.Schedule(num_seeds=args.num_seeds),
        output=runner.Output(
            out_dir=args.out,
            resume=args.resume,
            env_name=data.info.env,
            metadata={**idea, "dataset_sha256": sha},
        ),
        final=runner.Final(
            eval_episodes=args.eval_episodes, reference_returns=reference_returns(data)
        ),
        data=data,
    )
    scores = result.summary.get("normalized_score_per_seed")  # none without references
    if scores is None:
        return result, "evaluation return", result.summary["eval_return_per_seed"]
    return result, "normalised score", scores
