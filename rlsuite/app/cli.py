"""The `rlsuite` command line.

    rlsuite train ppo --env cartpole --num-seeds 8 --total-timesteps 500000 --out runs/demo
    rlsuite train --resume runs/demo
    rlsuite train --config runs/sweep/best.json --out runs/best
    rlsuite sweep ppo --env cartpole --grid learning_rate=1e-4,1e-3 ent_coef=0,0.01 --num-seeds 4
    rlsuite pbt ppo --env cartpole --population 8 --grid learning_rate=log:1e-4:1e-2
    rlsuite eval runs/demo --episodes 100
    rlsuite render runs/demo --episodes 2 --out demo.mp4
    rlsuite plot runs/a runs/b --out curves.png
    rlsuite stats runs/a runs/b runs/c --by algo,env --out stats/
    rlsuite report runs/demo
    rlsuite dataset collect --env pendulum --quality medium --size 100000 --out data/p-m.hdf5
    rlsuite train iql --dataset data/p-m.hdf5 --num-updates 1000 --out runs/iql

`train` starts from the tuned defaults for the environment (`rlsuite.app.tuned`), or from a
`--config FILE` (a run's `config.json` or a sweep's `best.json`); every config and hyperparameter
field is a flag (`rlsuite train ppo --help`). `sweep` trains configurations x seeds as one batch
(`rlsuite.app.sweep`), `pbt` populations with exploit and explore between chunks
(`rlsuite.app.pbt`), and `render` films a run's policy (`rlsuite.app.render`). `train` writes
`config.json`, `metrics.jsonl`, `metrics.csv`, `checkpoints/` and `final.json` under `--out`.
Offline algorithms learn from `--dataset FILE` (D4RL layout) and take their environment from it;
their `final.json` adds D4RL's normalised scores. `dataset collect` makes a dataset with our own SAC
or TD3 (`rlsuite.app.collect`). `stats` compares runs across tasks and seeds through rliable (the
`stats` extra; `rlsuite.app.stats`): IQM, mean, median, optimality gap, performance profiles and the
probability of improvement, as markdown tables and PNG figures. `report` writes one markdown page
about a run (`rlsuite.app.report`): its curve, evaluation, speed and configuration. The algorithms
are those of `rlsuite.agents.registry` (listed below): a family registered there trains, resumes and
evaluates here with no change to this module. This module is the one place in `rlsuite` that imports
`envs` (to resolve environment names).
"""

import contextlib
import dataclasses
import difflib
import functools
import json
import os
import pathlib
import sys
import time
import traceback
from typing import Annotated

import jax
import numpy as np
import tyro

from rlsuite.agents import registry
from rlsuite.app.tuned import behaviour, env_from_argv, flag_value, tuned
from rlsuite.loop import checkpoint
from rlsuite.loop.loggers import CSV, DEFAULT_LOG_INTERVAL, JSONL, check_backends

COMMANDS = ("train", "sweep", "pbt", "eval", "render", "plot", "dataset", "stats", "report")


class UsageError(ValueError):
    """A bad command line: reported as `error: ...` with exit status 2."""


def _train_args(algo: registry.Algorithm):
    @dataclasses.dataclass
    class TrainArgs:
        config: Annotated[algo.config_cls, tyro.conf.OmitArgPrefixes]
        hparams: Annotated[algo.hparams_cls, tyro.conf.OmitArgPrefixes]
        env: str = "cartpole"
        """environment name (`envs.names()` lists them); offline algorithms take the dataset's"""
        dataset: str | None = None
        """offline algorithms: the D4RL-layout HDF5 file to learn from"""
        num_seeds: int = 1
        """independent runs, vmapped (and sharded over the devices)"""
        seed: int = 0
        """seed of the whole batch of runs"""
        out: str | None = None
        """run directory (default: runs/<algo>_<env>_<time>); must not hold a run already"""
        chunks: int = 10
        """about this many checkpoints, log writes and progress updates per run (chunks of one
        length where such a count divides the run's updates, so that it compiles once)"""
        eval_episodes: int = 10
        """evaluation episodes per seed at the end"""
        log_interval: int = DEFAULT_LOG_INTERVAL
        """env steps per metrics row of each seed (files, TensorBoard, W&B); the updates in
        between are combined: episodic metrics over the episodes that ended, losses averaged"""
        tensorboard: bool = False
        """also write TensorBoard event files (extra: logging)"""
        wandb: bool = False
        """also log to Weights & Biases (extra: logging)"""
        progress: bool = True
        """show a progress bar"""
        cpu_devices: int | None = None
        """CPU cores made JAX devices, the seeds split evenly over them (default: every core;
        not where JAX_NUM_CPU_DEVICES or XLA_FLAGS set the count, nor on an accelerator)"""
        mesh: str | None = None
        """the device mesh, runs=R,envs=E (docs/scaling.md): R groups of E devices, each group
        training its share of the runs with one run's environments, replay buffer and
        minibatches split over its E devices (one gradient all-reduce per step); R x E must be
        the device count. Default: the runs spread over the devices, no env split"""
        distributed: bool = False
        """join the other processes of a job (jax.distributed; docs/scaling.md), reading what
        the three flags below leave out from the cluster (SLURM's variables, or what JAX
        detects); implied by any of them. Every process runs the same command; process 0
        writes the files"""
        coordinator: str | None = None
        """several processes: process 0's host:port"""
        num_processes: int | None = None
        """several processes: how many take part"""
        process_id: int | None = None
        """several processes: this one's index, 0 to num_processes - 1"""
        process_timeout: float = 60.0
        """several processes: seconds to wait for the coordinator and the others to connect"""

    return TrainArgs


def _choose(kind: str, name: str, allowed) -> None:
    if name not in allowed:
        close = difflib.get_close_matches(name, list(allowed), n=3)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown {kind} {name!r}{hint} (allowed: {', '.join(allowed)})")


RECORD_KEYS = ("algo", "env", "num_seeds", "config", "hparams")


def _read_record(out: pathlib.Path, what: str = "run") -> dict:
    """The `config.json` of the run in `out`, refused with the file named when it is missing, not
    JSON or not one that `rlsuite train` wrote."""
    path = out / "config.json"
    if not path.is_file():
        raise UsageError(f"{out} holds no {what} (no config.json)")
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not valid JSON ({error})") from None
    missing = [k for k in RECORD_KEYS if not isinstance(record, dict) or k not in record]
    if missing:
        raise UsageError(
            f"{path} lacks {', '.join(missing)}: it is not a config.json that rlsuite train wrote"
        )
    _choose("algorithm", record["algo"], registry.names())
    return record


def _check_out(out: pathlib.Path) -> None:
    """Refuse an `--out` that cannot hold a new run, before anything is written there."""
    from rlsuite.loop.runner import file_in_the_way

    blocked = file_in_the_way(out)
    if blocked is not None:
        raise UsageError(f"--out {out}: {blocked} is a file, not a directory")
    if (out / "config.json").exists():
        raise UsageError(
            f"{out} already holds a run; continue it with --resume {out} or choose another --out"
        )
    saved = _saved_in(out)
    if saved is not None:
        raise UsageError(f"--out {out}: {saved}")


def _saved_in(out: pathlib.Path) -> str | None:
    """What a run has saved in `out` (checkpoints or metrics), said in a few words, or None."""
    if checkpoint.latest_step(out / "checkpoints") is not None:
        return f"{out / 'checkpoints'} already holds checkpoints"
    for name in (JSONL, CSV):
        if (out / name).is_file() and (out / name).stat().st_size:
            return f"{out / name} already holds metrics"
    if (out / "final.json").exists():
        return f"{out / 'final.json'} exists"
    return None


def _build(record: dict):
    """Agent, hparams and dataset (None for online algorithms) from a `config.json` record."""
    from rlsuite import envs

    algo = registry.get(record["algo"])
    config = _config_of(algo, record["config"])
    hparams = _record_hparams(record)
    env, env_params = envs.make(record["env"])
    data = None
    if record.get("dataset"):
        data, sha = _load_dataset(record["dataset"], env, env_params)
        if sha != record["dataset_sha256"]:
            raise UsageError(
                f"{record['dataset']} changed since the run started (SHA-256 {sha[:12]}..., "
                f"the run used {record['dataset_sha256'][:12]}...)"
            )
    agent = algo.make(config, env, env_params)
    if "pbt" in record:  # each member's hparams live in its state
        from rlsuite.loop.population import population_agent

        agent = population_agent(agent, tuple(record["pbt"]["fields"]))
    return agent, hparams, data


def _load_dataset(path: str, env=None, env_params=None):
    """The dataset in `path` and the SHA-256 of the file."""
    import hashlib

    from rlsuite.data.dataset_files import load_d4rl

    file = pathlib.Path(path)
    if not file.is_file():
        raise UsageError(f"--dataset {path}: no such file")
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    return load_d4rl(file, env=env, env_params=env_params), sha


def _check_memory(algo: registry.Algorithm, argv: list[str]) -> None:
    """Refuse a recurrent policy (`--recurrent`, `--recurrent-size`) for a family whose config has
    none, naming the families that take one."""
    flags = [
        a.split("=")[0] for a in argv if a.split("=")[0] in ("--recurrent", "--recurrent-size")
    ]
    fields = {f.name for f in dataclasses.fields(algo.config_cls)}
    if flags and "recurrent" not in fields:
        with_memory = [
            n for n in registry.names()
            if "recurrent" in {f.name for f in dataclasses.fields(registry.get(n).config_cls)}
        ]  # fmt: skip
        raise UsageError(
            f"{algo.name} takes no recurrent policy ({flags[0]}); the families with memory: "
            f"{', '.join(with_memory)}"
        )


def _env_name(algo: registry.Algorithm, argv: list[str]) -> str:
    """The environment of a new run: `--env` or the algorithm's default for an online one; for an
    offline one, the environment its dataset was made in."""
    from rlsuite.data.dataset_files import load_d4rl

    name, path = algo.name, flag_value(argv, "--dataset")
    if not algo.offline:
        if path is not None:
            raise UsageError(
                f"{name} is an online algorithm; --dataset is for {', '.join(registry.offline())}"
            )
        return env_from_argv(argv, algo.default_env)
    if path is None and ("--help" in argv or "-h" in argv):
        return env_from_argv(argv, algo.default_env)  # the flags, before there is a dataset
    if path is None:
        raise UsageError(f"{name} is an offline algorithm: give --dataset FILE")
    if not pathlib.Path(path).is_file():
        raise UsageError(f"--dataset {path}: no such file")
    env_name = load_d4rl(path).info.env
    given = flag_value(argv, "--env")
    if given is not None and given != env_name:
        raise UsageError(f"--env {given} does not match the dataset's environment {env_name}")
    return env_name


@dataclasses.dataclass
class NewRun:
    """A new run, checked and ready to start (`new_run`): nothing is written yet."""

    args: object  # the parsed TrainArgs
    agent: object
    record: dict  # what config.json will hold
    out: pathlib.Path
    data: object = None  # an offline algorithm's dataset


def train(argv: list[str]) -> dict:
    if "--resume" in argv:
        return _resume(argv)
    run = new_run(argv, "train")
    return start_run(run, _record_hparams(run.record))


def new_run(argv: list[str], command: str, check=None) -> NewRun:
    """Parse and check the command line of a new run (`rlsuite train` and `rlsuite sweep`, as
    `command`): algorithm, environment, flags (tuned defaults, or a `--config FILE`'s),
    `--out`, mesh, loggers and dataset. `check(algo, agent, args)` adds a command's own checks.
    Every refusal happens here, before anything is compiled or written."""
    from rlsuite.loop.runner import chunk_length

    argv, given = _config_file(argv)
    if given is not None and (not argv or argv[0].startswith("-")):
        argv = [given["algo"], *argv]  # the file names the algorithm
    if not argv or argv[0].startswith("-"):
        raise UsageError(
            f"{command} needs an algorithm first: rlsuite {command} ALGO "
            f"(one of {', '.join(registry.names())})"
        )
    name, argv = argv[0], argv[1:]
    _choose("algorithm", name, registry.names())
    if given is not None and given["algo"] != name:
        raise UsageError(f"--config {given['path']} is for {given['algo']}, not {name}")
    algo = registry.get(name)
    _check_memory(algo, argv)
    if given is not None and flag_value(argv, "--env") is None and not algo.offline:
        argv = [*argv, "--env", given["env"]]
    if given is not None and given.get("dataset") and flag_value(argv, "--dataset") is None:
        argv = [*argv, "--dataset", given["dataset"]]  # an offline run's, by its path
    env_name = _env_name(algo, argv)
    from rlsuite import envs

    env, env_params = envs.make(env_name)  # an unknown name fails here, before any parsing
    TrainArgs = _train_args(algo)
    if given is None:
        defaults = tuned(name, env_name)
        default = TrainArgs(
            config=algo.config_cls(**defaults["config"]),
            hparams=algo.hparams_cls(**defaults["hparams"]),
            env=env_name,
        )
    else:
        default = TrainArgs(
            config=_config_of(algo, given["config"]),
            hparams=algo.hparams_cls(**given["hparams"]),
            env=env_name,
            **{k: given[k] for k in CONFIG_FILE_RUN_KEYS if k in given},
        )
    args = tyro.cli(TrainArgs, args=argv, default=default, prog=f"rlsuite {command} {name}")
    if args.num_seeds < 1 or args.chunks < 1 or args.eval_episodes < 1:
        raise UsageError("--num-seeds, --chunks and --eval-episodes must be >= 1")
    if args.log_interval < 1:
        raise UsageError(f"--log-interval must be >= 1 env steps per row, got {args.log_interval}")
    prefix = "" if command == "train" else f"{command}_"
    out = pathlib.Path(
        args.out
        or f"runs/{prefix}{name}_{env_name.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}"
    )
    _check_out(out)
    agent = algo.make(args.config, env, env_params)
    agent.check_hparams(args.hparams)
    if check is not None:
        check(algo, agent, args)
    mesh_sizes = None if args.mesh is None else _mesh_sizes(args.mesh, args.num_seeds, agent)
    asked = getattr(args.config, "total_timesteps", None)
    steps = agent.config.num_updates * agent.env_steps_per_update
    if flag_value(argv, "--total-timesteps") is not None and steps != asked:
        print(
            f"rlsuite {command}: note: the run takes {steps:,} env steps per seed, whole updates "
            f"of {agent.env_steps_per_update:,}, for --total-timesteps {asked:,}",
            file=sys.stderr,
        )
    for flag in ("tensorboard", "wandb"):
        try:
            check_backends(**{flag: getattr(args, flag)})
        except ImportError as error:
            raise UsageError(f"--{flag}: {error}") from None
    data, sha = (None, None)
    if args.dataset is not None:
        data, sha = _load_dataset(args.dataset, env, env_params)
    record = {
        "algo": name,
        "env": env_name,
        "num_seeds": args.num_seeds,
        "seed": args.seed,
        "chunks": args.chunks,
        "chunk_updates": chunk_length(agent.config.num_updates, args.chunks),
        "eval_episodes": args.eval_episodes,
        "logging": {
            "tensorboard": args.tensorboard,
            "wandb": args.wandb,
            "log_interval": args.log_interval,
        },
        "config": dataclasses.asdict(args.config),
        "hparams": dataclasses.asdict(args.hparams),
        # A resume gives the runs the same devices, so it continues bitwise (driver.run_mesh).
        "devices": {"platform": jax.default_backend(), "count": jax.device_count()},
        "mesh": mesh_sizes,
    }
    if data is not None:
        record.update(dataset=str(pathlib.Path(args.dataset).resolve()), dataset_sha256=sha)
    return NewRun(args, agent, record, out, data)


def start_run(run: NewRun, hparams) -> dict:
    """Write the run's `config.json` (process 0) and train it (`_fit`); a run that fails before
    saving anything leaves no directory behind."""
    from rlsuite.loop.distributed import barrier, is_main
    from rlsuite.loop.runner import fit

    out = run.out
    barrier("rlsuite train: --out checked")  # by every process, before process 0 writes there
    made = [path for path in (out, *out.parents) if not path.exists()]  # created below
    if is_main():
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UsageError(f"--out {out}: {error.strerror}") from None
        (out / "config.json").write_text(json.dumps(run.record, indent=2) + "\n")
    try:
        return _fit(fit, run.agent, hparams, run.record, out, False, run.args.progress, run.data)
    except Exception:
        if is_main():
            _forget(out, made[-1] if made else None)
        raise


# The fields of a `--config FILE` besides the algorithm's config and hparams that a new run takes
# as its defaults (flags still override them).
CONFIG_FILE_RUN_KEYS = ("num_seeds", "seed", "chunks", "eval_episodes")


def _config_file(argv: list[str]) -> tuple[list[str], dict | None]:
    """`argv` without `--config FILE`, and what the file holds: a `config.json` of a run, or a
    sweep's `best.json` (`rlsuite.app.sweep`), with its `path`. None without the flag."""
    path = flag_value(argv, "--config")
    if path is None:
        return argv, None
    file = pathlib.Path(path)
    if not file.is_file():
        raise UsageError(f"--config {path}: no such file")
    try:
        given = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"--config {path} is not valid JSON ({error})") from None
    missing = [
        k
        for k in ("algo", "env", "config", "hparams")
        if not isinstance(given, dict) or k not in given
    ]
    if missing:
        raise UsageError(
            f"--config {path} lacks {', '.join(missing)}: give a run's config.json or a sweep's "
            "best.json"
        )
    if "sweep" in given:
        raise UsageError(
            f"--config {path} describes a sweep of {len(given['sweep']['configs'])} "
            f"configurations; give its best.json (or a run's config.json)"
        )
    _choose("algorithm", given["algo"], registry.names())
    return _without_flags(argv, ("--config",)), {**given, "path": path}


def _config_of(algo: registry.Algorithm, fields: dict):
    """The algorithm's config from a record's `config` (JSON lists back to tuples)."""
    return algo.config_cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def restore_states(out: pathlib.Path, record: dict, agent, hparams, data=None):
    """`(states, metadata)` of the latest checkpoint of the run in `out` (every seed, or every
    run of a sweep or population), from its record and what `_build` made of it."""
    from rlsuite.loop import driver

    keys = jax.random.split(jax.random.key(0), record["num_seeds"])
    init = functools.partial(driver.init_batch, agent)
    target = jax.eval_shape(init, keys, hparams, _hparams_axis(record), data)
    expect = {"algo": record["algo"], "env": record["env"]}
    return checkpoint.restore(pathlib.Path(out) / "checkpoints", target, expect=expect)


def _hparams_axis(record: dict) -> int | None:
    """The driver's `hparams_axis` for a record: 0 for a sweep or a population (one set per run),
    else None."""
    return 0 if "sweep" in record or "pbt" in record else None


def _between_chunks(record: dict, out: pathlib.Path):
    """A population's exploit-and-explore step (`rlsuite.app.pbt`), or None."""
    if "pbt" not in record:
        return None
    from rlsuite.app.pbt import step_for

    return step_for(record, out)


def _record_hparams(record: dict):
    """The hparams a record trains with: its `hparams`, or for a sweep (`rlsuite.app.sweep`) one
    set per run, the swept fields batched (`sweep_hparams`)."""
    algo = registry.get(record["algo"])
    hparams = algo.hparams_cls(**record["hparams"])
    if "sweep" in record:
        from rlsuite.app.sweep import sweep_hparams

        hparams = sweep_hparams(hparams, record["sweep"])
    if "pbt" in record:
        from rlsuite.app.pbt import pbt_hparams

        hparams = pbt_hparams(hparams, record["pbt"])
    return hparams


def _without_flags(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """`argv` without `flags` and their values (`--flag value` or `--flag=value`)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        elif arg.split("=")[0] not in flags:
            kept.append(arg)
    return kept


def _mesh_sizes(text: str, num_runs: int, agent) -> dict:
    """`--mesh`'s axis sizes, refused (naming the value) where an axis is unknown, the sizes do
    not use the devices, or they do not divide the runs or the agent's batches."""
    from rlsuite.loop.mesh import check_mesh, parse_mesh

    try:
        sizes = parse_mesh(text)
    except ValueError as error:
        raise UsageError(str(error)) from None
    check_mesh(_make_mesh(sizes), num_runs, agent.config)
    return sizes


def _mesh_devices(text: str) -> int | None:
    """The CPU devices `--mesh` asks for where it gives both axes (their product), else None."""
    from rlsuite.loop.mesh import AXES, parse_mesh

    try:
        sizes = parse_mesh(text)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return sizes[AXES[0]] * sizes[AXES[1]] if len(sizes) == len(AXES) else None


def _make_mesh(sizes: dict):
    from rlsuite.loop.mesh import make_mesh

    try:
        return make_mesh(**sizes)
    except ValueError as error:
        reason = str(error).removeprefix("mesh: ")
        raise UsageError(f"--mesh {_mesh_text(sizes)}: {reason}") from None


def _mesh_text(sizes: dict) -> str:
    return ",".join(f"{name}={size}" for name, size in sizes.items())


def _forget(out: pathlib.Path, made: pathlib.Path | None) -> None:
    """After a new run failed before its first checkpoint and log row, remove the `config.json`
    it wrote and the empty folders it made (`made` and below), so that the same command can be
    run again; anything saved is kept."""
    if _saved_in(out) is not None:
        return
    (out / "config.json").unlink(missing_ok=True)
    if made is not None:
        for path in [*sorted(made.rglob("*"), reverse=True), made]:
            if path.is_dir() and not any(path.iterdir()):
                path.rmdir()


def _resume(argv: list[str]) -> dict:
    from rlsuite.loop.runner import fit

    i = argv.index("--resume")
    if i + 1 >= len(argv):
        raise UsageError("--resume needs the run directory")
    out = pathlib.Path(argv[i + 1])
    rest = argv[:i] + argv[i + 2 :]
    progress = "--no-progress" not in rest
    rest = [a for a in rest if a not in ("--progress", "--no-progress", "--distributed")]
    # The processes and devices that continue it: any number of them, on any mesh that fits.
    mesh = flag_value(rest, "--mesh")
    rest = _without_flags(rest, (*PROCESS_FLAGS, "--process-timeout", "--mesh", "--cpu-devices"))
    config_path = out / "config.json"
    record = _read_record(out, "run to resume")
    if rest and rest != [record["algo"]]:
        raise UsageError(
            f"--resume continues the run exactly as {config_path} describes it; "
            f"leave out the other arguments ({' '.join(rest)})"
        )
    agent, hparams, data = _build(record)
    if mesh is not None:
        sizes = _mesh_sizes(mesh, record["num_seeds"], agent)
        if sizes != record.get("mesh"):
            print(
                f"rlsuite train: note: the run trained on the mesh {record.get('mesh')} and "
                f"continues on {sizes} (its state resharded), so it may end apart from the "
                "uninterrupted run at float tolerance",
                file=sys.stderr,
            )
        record = {**record, "mesh": sizes}  # for this call; config.json keeps the run's own
    return _fit(fit, agent, hparams, record, out, True, progress, data)


def resume_batch(argv: list[str], kind: str, written: str) -> tuple[pathlib.Path, dict, dict]:
    """`rlsuite sweep --resume DIR` and `rlsuite pbt --resume DIR`: `(out, record, summary)` of
    the `kind` ("sweep" or "pbt") in DIR, continued from its checkpoint (`_resume`), or, where
    its training ended but the process died before it wrote `written`, the summary it saved."""
    i = argv.index("--resume")
    if i + 1 >= len(argv):
        raise UsageError("--resume needs the directory")
    out = pathlib.Path(argv[i + 1])
    record = _read_record(out, f"{kind} to resume")
    if kind not in record:
        raise UsageError(f"{out} holds no {kind}: resume it with rlsuite train --resume")
    final = out / "final.json"
    if final.is_file() and not (out / written).exists():
        return out, record, json.loads(final.read_text())
    return out, record, _resume(argv)


def _reference_returns(data) -> tuple[float, float] | None:
    """A dataset's `(random, expert)` returns for normalised scores, or None (no dataset, or
    one without both)."""
    refs = None if data is None else (data.info.random_return, data.info.expert_return)
    return None if refs is None or None in refs else refs


def _fit(
    fit, agent, hparams, record: dict, out: pathlib.Path, resume: bool, progress: bool, data=None
) -> dict:
    from rlsuite.loop.runner import step_unit

    num_updates = agent.config.num_updates
    offline = {}
    if data is not None:
        offline = {"data": data, "metadata": {"dataset_sha256": record["dataset_sha256"]}}
        offline["reference_returns"] = _reference_returns(data)
    key = step_unit(data)
    unit = key.replace("_", " ")
    per_update = agent.env_steps_per_update
    # The total before anything runs: for an offline agent, --num-updates x --gradient-steps.
    print(
        f"{'resuming' if resume else 'training'} {record['algo']} on {record['env']}: "
        f"{record['num_seeds']} {'seeds' if _hparams_axis(record) is None else 'runs'} x "
        f"{num_updates * per_update:,} {unit} each "
        f"({num_updates:,} updates of {per_update:,}); files in {out}",
        flush=True,
    )
    mesh = record.get("mesh")  # none in a record from before --mesh
    if mesh is not None:
        try:
            mesh = _make_mesh(mesh)
        except UsageError as error:
            hint = "; continue it on another mesh with --mesh" if resume else ""
            raise UsageError(f"{error}{hint}") from None
    with contextlib.nullcontext() if mesh is None else jax.set_mesh(mesh):
        result = fit(
            agent,
            jax.random.key(record["seed"]),
            hparams,
            num_seeds=record["num_seeds"],
            # A record written before it held `chunk_updates` resumes with the rule it was made by.
            chunk_updates=record.get("chunk_updates", max(1, num_updates // record["chunks"])),
            out_dir=out,
            resume=resume,
            env_name=record["env"],
            eval_episodes=record["eval_episodes"],
            progress=progress,
            # A record written before it held `log_interval` resumes with a row per update.
            logger_options={"log_interval": 1, **record["logging"]},
            hparams_axis=_hparams_axis(record),
            seeds_per_config=record["sweep"]["seeds"] if "sweep" in record else None,
            between_chunks=_between_chunks(record, out),
            **offline,
        )
    summary = result.summary
    print(
        f"{summary['algo']} on {summary['env']}: {summary['num_seeds']} "
        f"{'seeds' if _hparams_axis(record) is None else 'runs'} x "
        f"{summary[key]:,} {unit} in {summary['wall_seconds']:.1f} s, "
        f"{summary['compile_seconds']:.1f} s of it compiling "
        f"({summary[f'{key}_per_second']:,} {unit}/s after); evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
        + (
            f"; normalised score {summary['normalized_score_mean']:.1f}"
            if "normalized_score_mean" in summary
            else ""
        )
        + f"; files in {out}"
    )
    return summary


@dataclasses.dataclass
class EvalArgs:
    run: tyro.conf.Positional[str]
    """run directory written by `rlsuite train`"""
    episodes: int = 100
    """evaluation episodes per seed (trials, for a task family)"""
    seed: int = 0
    """evaluation seed"""
    stochastic: bool = False
    """sample actions instead of taking the policy's mode"""


def evaluate(argv: list[str]) -> dict:
    from rlsuite.loop.runner import eval_summary, evaluate_policies

    args = tyro.cli(EvalArgs, args=argv, prog="rlsuite eval")
    if args.episodes < 1:
        raise UsageError("--episodes must be >= 1")
    out = pathlib.Path(args.run)
    record = _read_record(out)
    agent, hparams, data = _build(record)
    states, meta = restore_states(out, record, agent, hparams, data)
    seeds = record["sweep"]["seeds"] if "sweep" in record else None
    returns, trials = evaluate_policies(
        agent, states, jax.random.key(args.seed), args.episodes, not args.stochastic, seeds
    )
    summary = {
        "run": str(out),
        "env_steps": meta["env_steps"],
        "episodes": args.episodes,
        **eval_summary(returns, _reference_returns(data)),
        **trials,
    }
    print(json.dumps(summary, indent=2))
    if "adaptation" in trials:
        print(adaptation_table(trials["adaptation"]))
    if "held_out" in trials:
        print(solve_rate_table(trials["held_out"]["names"], trials["held_out"]["returns"]))
    return summary


def adaptation_table(adaptation: dict) -> str:
    """The adaptation curve as lines of text: per episode index of the trial, the mean return
    and its 95% interval across seeds."""
    lines = ["adaptation: mean return per episode of a trial (95% bootstrap interval, seeds)"]
    rows = zip(
        adaptation["episode_return_mean"],
        adaptation["episode_return_low"],
        adaptation["episode_return_high"],
        strict=True,
    )
    for i, (mean, low, high) in enumerate(rows, start=1):
        lines.append(f"  episode {i:>3}: {mean:9.3f}  [{low:.3f}, {high:.3f}]")
    return "\n".join(lines)


def solve_rate_table(names, returns) -> str:
    """A markdown table of held-out levels: per level its name, solve rate (the share of
    attempts with a return above 0), mean return and number of attempts, then a `mean` row
    (the means over the levels, the attempts summed).

    `returns` is `[num_levels, attempts]` (`rlsuite.loop.evaluation.evaluate_levels`) or
    `[num_runs, num_levels, attempts]` (`evaluate_levels_batch`), whose runs' attempts are
    pooled; `names` has one name per level.
    """
    values = np.asarray(returns, dtype=np.float64)
    names = list(names)
    if values.ndim == 3:
        values = np.moveaxis(values, 1, 0).reshape(values.shape[1], -1)
    if values.ndim != 2 or values.shape[0] != len(names) or values.shape[1] == 0:
        raise ValueError(
            f"solve_rate_table: returns must be [num_levels, attempts] or [num_runs, "
            f"num_levels, attempts] with {len(names)} levels (one per name) and at least one "
            f"attempt, got shape {np.shape(returns)}"
        )
    solved = (values > 0).mean(axis=1)
    means = values.mean(axis=1)
    lines = ["| level | solve rate | mean return | attempts |", "|---|---:|---:|---:|"]
    for name, rate, mean in zip(names, solved, means, strict=True):
        lines.append(f"| {name} | {rate:.2f} | {mean:.3f} | {values.shape[1]} |")
    lines.append(f"| mean | {solved.mean():.2f} | {means.mean():.3f} | {values.size} |")
    return "\n".join(lines)


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
    trial at the final evaluation (`final.json`), mean and 95% interval across seeds"""
    levels: bool = False
    """draw the levels of one UED run (ued) instead: its named held-out levels with their solve
    rates at the final evaluation (`final.json`), then the highest-scored levels of its level
    buffer (first seed, last checkpoint)"""


def plot(argv: list[str]) -> dict:
    from rlsuite.app.plotting import curve, image_path, plot_runs
    from rlsuite.loop.loggers import read_metrics
    from rlsuite.loop.runner import check_new_file

    args = tyro.cli(PlotArgs, args=argv, prog="rlsuite plot")
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
    runs = []
    for run in args.runs:
        if not (pathlib.Path(run) / JSONL).exists():
            raise UsageError(f"{run} holds no {JSONL}")
        rows = read_metrics(run)
        try:
            curve(rows, args.metric)
        except ValueError as error:
            raise UsageError(f"{run} {error}") from None
        runs.append((pathlib.Path(run).name, rows))
    plot_runs(runs, out, args.metric, args.bin_steps)
    print(f"wrote {out}")
    return {"out": str(out)}


def _plot_adaptation(run_dirs: list[str], out: pathlib.Path) -> dict:
    from rlsuite.app.plotting import plot_adaptation

    runs = []
    for run in run_dirs:
        final = pathlib.Path(run) / "final.json"
        if not final.exists():
            raise UsageError(f"{run} holds no final.json (a finished run writes it)")
        summary = json.loads(final.read_text())
        if "adaptation" not in summary:
            raise UsageError(
                f"{run} has no adaptation curve: its environment ({summary.get('env')}) is not a "
                "task family whose trials count episodes (meta/..., trained with rl2)"
            )
        runs.append((pathlib.Path(run).name, summary["adaptation"]))
    plot_adaptation(runs, out)
    print(f"wrote {out}")
    return {"out": str(out)}


TOP_LEVELS = 8  # buffer levels drawn by `rlsuite plot --levels`


def _plot_levels(run_dirs: list[str], out: pathlib.Path) -> dict:
    from rlsuite.app.plotting import plot_levels
    from rlsuite.data import level_buffer
    from rlsuite.environment.levels import levels_of

    if len(run_dirs) != 1:
        raise UsageError(f"--levels draws one run's levels, got {len(run_dirs)} run directories")
    run = pathlib.Path(run_dirs[0])
    record = _read_record(run)
    agent, hparams, data = _build(record)
    levels = levels_of(agent.env)
    if levels is None or levels.render is None:
        raise UsageError(f"{run}: its environment ({record['env']}) has no levels to draw")
    images, titles = [], []
    final = run / "final.json"
    summary = json.loads(final.read_text()) if final.exists() else {}
    if "held_out" in summary and levels.held_out is not None:
        names, held_out = levels.held_out()
        solved = (np.asarray(summary["held_out"]["returns"]) > 0).mean(axis=(0, 2))
        for i, (name, rate) in enumerate(zip(names, solved, strict=True)):
            images.append(levels.render(jax.tree.map(lambda x, i=i: np.asarray(x[i]), held_out)))
            titles.append(f"{name}\nsolved {rate:.2f}")
    states, _ = restore_states(run, record, agent, hparams, data)
    buffer = getattr(states, "buffer", None)
    if isinstance(buffer, level_buffer.LevelBufferState):
        first = jax.tree.map(lambda x: x[0], buffer)
        k = min(TOP_LEVELS, int(first.size))
        if k:
            _, scores, top = level_buffer.highest(first, k)
            for i in range(k):
                images.append(levels.render(jax.tree.map(lambda x, i=i: np.asarray(x[i]), top)))
                titles.append(f"buffer #{i + 1}\nscore {float(scores[i]):.3f}")
    if not images:
        raise UsageError(f"{run} has no held-out results in final.json and no level buffer")
    plot_levels(images, titles, out)
    print(f"wrote {out}")
    return {"out": str(out), "panels": len(images)}


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


def stats(argv: list[str]) -> dict:
    from rlsuite.app import stats as run_stats

    args = tyro.cli(StatsArgs, args=argv, prog="rlsuite stats")
    try:
        summary = run_stats.report(
            args.runs,
            args.out,
            metric=args.metric,
            by=args.by,
            how=args.normalize,
            reference=run_stats.parse_reference(args.reference),
            reps=args.reps,
            seed=args.seed,
        )
    except ImportError as error:
        raise UsageError(str(error)) from None
    print(summary["markdown"])
    print(f"wrote {', '.join(run_stats.FILES)} to {args.out}")
    return summary


@dataclasses.dataclass
class ReportArgs:
    run: tyro.conf.Positional[str]
    """the run directory"""
    out: str | None = None
    """the page to write, ending in .md (default RUN/report.md); its learning curve goes beside
    it as the same name with .png; neither may exist"""
    metric: str = "charts/episodic_return"
    """the learning curve's metric"""


def report(argv: list[str]) -> dict:
    from rlsuite.app.report import write_report

    args = tyro.cli(ReportArgs, args=argv, prog="rlsuite report")
    written = write_report(args.run, args.out, args.metric)
    frame = f" and {written['frame']}" if written.get("frame") else ""
    print(f"wrote {written['page']}, {written['figure']}{frame}")
    return written


def sweep(argv: list[str]) -> dict:
    from rlsuite.app import sweep as run_sweep

    return run_sweep.main(argv)


def pbt(argv: list[str]) -> dict:
    from rlsuite.app import pbt as run_pbt

    return run_pbt.main(argv)


def render(argv: list[str]) -> dict:
    from rlsuite.app import render as run_render

    return run_render.main(argv)


@dataclasses.dataclass
class CollectArgs:
    env: str
    """environment name (`envs.names()`); it needs a bounded continuous action space"""
    quality: str
    """random, medium, expert, medium-replay or medium-expert"""
    size: int
    """transitions to record (medium-replay keeps the whole medium run instead)"""
    out: str
    """HDF5 file to write, in the D4RL layout (must not exist unless --overwrite)"""
    algo: str = "sac"
    """behaviour algorithm: sac or td3 (its tuned defaults for the environment; a Brax environment
    without any borrows brax/hopper's)"""
    seed: int = 0
    """seed of the collection: the same seed gives the same dataset"""
    total_timesteps: int | None = None
    """training budget of the expert (default: the tuned one)"""
    num_envs: int = 10
    """parallel environments while recording"""
    eval_episodes: int = 20
    """episodes of each reference return (random and expert)"""
    overwrite: bool = False
    """replace an existing file"""


def dataset(argv: list[str]) -> dict:
    from rlsuite.app.collect import QUALITIES, collect
    from rlsuite.data.dataset_files import save_d4rl
    from rlsuite.loop.runner import check_new_file

    if not argv or argv[0] != "collect":
        raise UsageError("dataset needs a subcommand: rlsuite dataset collect --help")
    args = tyro.cli(CollectArgs, args=argv[1:], prog="rlsuite dataset collect")
    _choose("quality", args.quality, QUALITIES)
    _choose("behaviour algorithm", args.algo, ("sac", "td3"))
    out = check_new_file(args.out, overwrite=args.overwrite, hint=" or pass --overwrite")
    from rlsuite import envs

    env, env_params = envs.make(args.env)
    algo = registry.get(args.algo)
    defaults = behaviour(args.algo, args.env)
    config = {**defaults["config"]}
    if args.total_timesteps is not None:
        config["total_timesteps"] = args.total_timesteps
    config = algo.config_cls(**config)
    if args.quality == "medium-replay":  # the buffer keeps the whole medium run
        size = max(config.buffer_size, config.total_timesteps)
        config = dataclasses.replace(config, buffer_size=size)
    agent = algo.make(config, env, env_params)
    start = time.perf_counter()
    data = collect(
        agent,
        algo.hparams_cls(**defaults["hparams"]),
        jax.random.key(args.seed),
        args.quality,
        args.size,
        args.env,
        num_envs=args.num_envs,
        eval_episodes=args.eval_episodes,
        seed=args.seed,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    save_d4rl(out, data, overwrite=args.overwrite)
    info = data.info
    if len(data) != args.size:
        print(
            f"rlsuite dataset collect: note: {args.quality} keeps the whole replay buffer of the "
            f"medium run, {len(data):,} transitions, whatever --size",
            file=sys.stderr,
        )
    summary = {"out": str(out), "transitions": len(data), **info.to_dict()}
    print(
        f"{args.quality} dataset of {len(data):,} transitions on {args.env} in "
        f"{time.perf_counter() - start:.0f} s: random return {info.random_return:.1f}, expert "
        f"return {info.expert_return:.1f}; wrote {out}"
    )
    return summary


def _use_cpu_cores(command: str, argv: list[str]) -> None:
    """Make the CPU cores JAX devices before anything runs (`driver.use_cpu_cores`): as many as
    `--cpu-devices` says, or a resumed CPU run recorded (runs from before the record: one), or
    every core."""
    from rlsuite.loop.driver import use_cpu_cores

    count = None
    joining = _join_processes(command, argv)
    processes = joining or 1  # the CPU devices are shared among them where the count is known
    if command in RUN_COMMANDS and "--resume" in argv and flag_value(argv, "--cpu-devices"):
        count = _cpu_devices(flag_value(argv, "--cpu-devices"))
    elif command in RUN_COMMANDS and "--resume" in argv and flag_value(argv, "--mesh"):
        count = _mesh_devices(flag_value(argv, "--mesh"))
        count = None if count is None or count % processes else count // processes
    elif command in RUN_COMMANDS and "--resume" in argv:
        i = argv.index("--resume")
        out = pathlib.Path(argv[i + 1] if i + 1 < len(argv) else "")
        if (out / "config.json").is_file():
            devices = _read_record(out).get("devices", {"platform": "cpu", "count": 1})
            # Resumed by any number of processes: the run's devices shared among them.
            count = devices["count"] if devices["platform"] == "cpu" else None
            if count is not None and count % processes == 0:
                count //= processes
    elif command in RUN_COMMANDS:
        value = flag_value(argv, "--cpu-devices")
        if value is not None and value != "None":
            count = _cpu_devices(value)
        elif flag_value(argv, "--mesh") is not None:
            count = _mesh_devices(flag_value(argv, "--mesh"))
            count = None if count is None or count % processes else count // processes
    if joining is not None:
        _initialize(argv)  # before JAX starts its devices (use_cpu_cores lists them)
    in_effect = use_cpu_cores(count)
    if "--resume" in argv and count is not None and in_effect != count:
        print(
            f"rlsuite train: warning: the run trained on {count} CPU devices and continues on "
            f"{in_effect}, so it may end apart from the uninterrupted run (at float tolerance)",
            file=sys.stderr,
        )


PROCESS_FLAGS = ("--coordinator", "--num-processes", "--process-id")
RUN_COMMANDS = ("train", "sweep", "pbt")  # the commands that train: devices, mesh, processes


def _cpu_devices(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"--cpu-devices must be an integer >= 1, got {value!r}")
    return int(value)


def _join_processes(command: str, argv: list[str]) -> int | None:
    """None where `train` runs alone; where `--distributed` or one of `PROCESS_FLAGS` is given,
    the number of processes given or read from the cluster (SLURM_NTASKS), or 0 where only
    JAX's own detection will tell (once connected)."""
    if command not in RUN_COMMANDS:
        return None
    if "--distributed" not in argv and all(flag_value(argv, f) is None for f in PROCESS_FLAGS):
        return None
    value = flag_value(argv, "--num-processes") or os.environ.get("SLURM_NTASKS")
    if value is None:
        return 0
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"--num-processes must be an integer >= 1, got {value!r}")
    return int(value)


def _initialize(argv: list[str]) -> None:
    """Join the job's processes (`rlsuite.loop.distributed.initialize`) before JAX starts, with
    the CPU collectives (gloo) that CPU devices of several processes need."""
    from rlsuite.loop import distributed

    values = {}
    names = ("coordinator_address", "num_processes", "process_id")
    for flag, name in zip(PROCESS_FLAGS, names, strict=True):
        value = flag_value(argv, flag)
        if value is not None and name != "coordinator_address":
            if not value.isdigit():
                raise UsageError(f"{flag} must be an integer >= 0, got {value!r}")
            value = int(value)
        values[name] = value
    timeout = flag_value(argv, "--process-timeout") or "60"
    try:
        values["timeout_seconds"] = float(timeout)
    except ValueError:
        raise UsageError(f"--process-timeout must be seconds, got {timeout!r}") from None
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        distributed.initialize(**values)
    except TimeoutError as error:
        raise UsageError(str(error)) from None


# What a check that refuses the input raises (and, raised elsewhere, a fault).
INPUT_ERRORS = (UsageError, ValueError, TypeError, FileExistsError, MemoryError)


def _raised_here(error: BaseException, *files: str | pathlib.Path) -> bool:
    """Whether `error` was raised in the suite's own code (`rlsuite`, `envs`) or in one of
    `files` (a script's): one of its checks refusing the input, reported in one line. One raised
    inside a library (jax, orbax, h5py, ...) is a fault rather than bad input, and keeps its
    traceback."""
    import importlib.util

    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    roots = [pathlib.Path(__file__).parents[1]]  # rlsuite/
    spec = importlib.util.find_spec("rlsuite.envs")  # installed from the repository's envs/
    if spec is not None and spec.origin is not None:
        roots.append(pathlib.Path(spec.origin).parent)
    last = pathlib.Path(frames[-1].filename).resolve()
    return any(last.is_relative_to(root.resolve()) for root in roots) or any(
        last == pathlib.Path(f).resolve() for f in files
    )


def run_script(main, *args):
    """Call an experiment script's `main(*args)` and return what it returns, reporting bad input
    as `rlsuite` does: an error that a check of the suite, or of the script itself, raised is
    printed as `<script>: error: <message>` and exits with status 2; any other keeps its
    traceback.

        if __name__ == "__main__":
            run_script(main, sys.argv[1:])
    """
    script = pathlib.Path(main.__code__.co_filename)
    try:
        return main(*args)
    except INPUT_ERRORS as error:
        if not _raised_here(error, script):
            raise
        print(f"{script.name}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _help() -> str:
    """The module's docstring and the registered algorithms."""
    return (
        f"{__doc__}\nalgorithms: {', '.join(registry.online())} (online); "
        f"{', '.join(registry.offline())} (offline: --dataset FILE)\n"
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_help())
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    try:
        _choose("command", command, COMMANDS)
        if command not in ("plot", "stats", "report"):
            _use_cpu_cores(command, rest)
        commands = {"train": train, "eval": evaluate, "plot": plot, "dataset": dataset}
        commands.update(stats=stats, report=report, sweep=sweep, pbt=pbt, render=render)
        commands[command](rest)
    except INPUT_ERRORS as error:
        if not _raised_here(error):
            raise
        print(f"rlsuite {command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
