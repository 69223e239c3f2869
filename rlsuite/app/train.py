"""`rlsuite train`: a new run from the tuned defaults, a `--config FILE` and flags, or
`--resume DIR` to continue one (`rlsuite.app.runs`).

    rlsuite train ppo --env cartpole --num-seeds 8 --total-timesteps 500000 --out runs/demo
    rlsuite train --resume runs/demo
    rlsuite train --config runs/sweep/best.json --out runs/best

`new_run` parses and checks a new run's command line for `train`, `sweep` and `pbt` alike: every
refusal happens there, before anything is compiled or written.
"""

import dataclasses
import pathlib
import sys
import time
from typing import Annotated

import jax
import tyro

from rlsuite.agents import registry
from rlsuite.app import runs
from rlsuite.app.argv import CommandLine, env_options, parse, without_flags
from rlsuite.app.errors import UsageError, choose
from rlsuite.app.startup import PROCESS_FLAGS
from rlsuite.app.tuned import TUNED, tuned
from rlsuite.loop.loggers import DEFAULT_LOG_INTERVAL, check_backends

# The fields of a `--config FILE` besides the algorithm's config and hparams that a new run takes
# as its defaults (flags still override them).
CONFIG_FILE_RUN_KEYS = ("num_seeds", "seed", "chunks", "eval_episodes")


def train_args(algo: registry.Algorithm):
    """The command line of a new run of `algo`: its config and hparams fields, and the run's."""

    @dataclasses.dataclass
    class TrainArgs:
        config: Annotated[algo.config_cls, tyro.conf.OmitArgPrefixes]
        hparams: Annotated[algo.hparams_cls, tyro.conf.OmitArgPrefixes]
        env: str = "cartpole"
        """environment: a registered name (`rlsuite list envs`), or `module:Class` (or
        `module:function`) for one of your own; offline algorithms take the dataset's"""
        env_option: tuple[str, ...] = ()
        """options of the environment, FIELD=VALUE ...: what envs.make(NAME, FIELD=VALUE)
        takes, a field of its params (cartpole's gravity=20.0) or an argument of its
        constructor (meta/bandit's pulls=20), each value read as the field's type; the tuned
        defaults of NAME apply to its variants"""
        dataset: str | None = None
        """offline algorithms: the D4RL-layout HDF5 file to learn from"""
        drift: str | None = None
        """PPO's families (ppo, dpo, fixpo): a run directory of rlsuite train lpo whose learned
        drift (the ES mean of its first run, at its latest checkpoint) is the policy loss"""
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
        compilation_cache: str | None = None
        """the folder of the compiled programs kept for the next run, or off (default:
        RLSUITE_COMPILATION_CACHE, else ~/.cache/rlsuite/jax; rlsuite.loop.compile_cache)"""
        deterministic: bool = False
        """XLA's deterministic GPU operations (--xla_gpu_deterministic_ops): one key gives one
        run to the bit on a GPU, at some speed; a CPU's are deterministic already"""
        matmul_precision: str = "default"
        """float32 matrix products and convolutions: default (a GPU may use TF32, a TPU
        bfloat16 passes), high or highest (float32); a CPU computes float32 in float32"""

    return TrainArgs


def main(line: CommandLine) -> dict:
    if line.given("--resume"):
        out, mesh, progress = resume_args(line)
        batch = runs.read_record(out, "run to resume").batch
        if batch is not None:  # its tables are written by its own command
            kind = batch.kind
            raise UsageError(
                f"{out} holds a {kind}: continue it with rlsuite {kind} --resume {out}"
            )
        return runs.resume(out, mesh, progress)
    run = new_run(line, "train")
    return runs.start(run)


def resume_args(line: CommandLine) -> tuple[pathlib.Path, str | None, bool]:
    """`--resume DIR`'s directory, the `--mesh` it continues on (None: its own) and whether to
    show progress; any other argument but the run's algorithm is refused: the run continues
    exactly as its `config.json` describes it. The process and device flags are the start-up's
    (`rlsuite.app.startup`)."""
    if line.value("--resume") is None:
        raise UsageError("--resume needs the run directory")
    out = pathlib.Path(line.value("--resume"))
    rest = without_flags(line.parser_words(), ("--resume",))
    progress = "--no-progress" not in rest
    rest = [a for a in rest if a not in ("--progress", "--no-progress", "--distributed")]
    # The processes and devices that continue it: any number of them, on any mesh that fits.
    mesh = line.value("--mesh")
    start_up = ("--process-timeout", "--mesh", "--cpu-devices", "--compilation-cache")
    rest = without_flags(rest, (*PROCESS_FLAGS, *start_up))
    record = runs.read_record(out, "run to resume")
    if rest and rest != [record.algo]:
        raise UsageError(
            f"--resume continues the run exactly as {out / runs.CONFIG} describes it; "
            f"leave out the other arguments ({' '.join(rest)})"
        )
    return out, mesh, progress


def new_run(line: CommandLine, command: str, check=None) -> runs.NewRun:
    """Parse and check the command line of a new run (`rlsuite train`, `sweep` and `pbt`, as
    `command`): algorithm, environment, flags (tuned defaults, or a `--config FILE`'s),
    `--out`, mesh, loggers and dataset. `check(algo, agent, args)` adds a command's own checks.
    Every refusal happens here, before anything is compiled or written."""
    algo, args, env_name, env_opts, (env, env_params) = _parse(line, command)
    if args.num_seeds < 1 or args.chunks < 1 or args.eval_episodes < 1:
        raise UsageError("--num-seeds, --chunks and --eval-episodes must be >= 1")
    if not -(2**63) <= args.seed < 2**63:  # what jax.random.key takes
        raise UsageError(f"--seed must be an integer from -2^63 to 2^63 - 1, got {args.seed}")
    if args.log_interval < 1:
        raise UsageError(f"--log-interval must be >= 1 env steps per row, got {args.log_interval}")
    prefix = "" if command == "train" else f"{command}_"
    out = pathlib.Path(
        args.out
        or f"runs/{prefix}{algo.name}_{_file_word(env_name)}_{time.strftime('%Y%m%d-%H%M%S')}"
    )
    runs.check_out(out)
    drift = None if args.drift is None else runs.load_drift(args.drift)
    variants = {} if drift is None else {"policy_loss": drift[0]}
    agent = _made(algo, args.config, env, env_params, env_name, variants)
    if check is not None:
        check(algo, agent, args)
    mesh = None if args.mesh is None else runs.mesh_sizes(args.mesh, args.num_seeds, agent)
    steps = agent.config.num_updates * agent.env_steps_per_update
    asked = getattr(args.config, "total_timesteps", None)
    _check_rounding(algo.name, agent.env_steps_per_update, steps, asked)
    label, budget = runs.env_label(env_name, env_opts), f"{steps:,} env steps per seed"
    if line.value("--config") is None and not algo.offline:
        if (algo.name, env_name) in TUNED:  # what the run is: with the other lines it prints
            said = f"{algo.name} on {label} starts from the tuned defaults of {algo.name} on "
            print(f"rlsuite {command}: {said}{env_name}, {budget}")
        else:  # a warning
            print(
                f"rlsuite {command}: note: no tuned defaults for {algo.name} on {env_name}; it "
                f"starts from {algo.name}'s own, {budget}, which may not learn it (rlsuite list "
                "tuned)",
                file=sys.stderr,
            )
    if line.value("--total-timesteps") is not None and steps != asked:
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
        data, sha = runs.load_dataset(args.dataset, env, env_params)
    record = _record(algo, args, env_name, agent, mesh, env_opts)
    if data is not None:
        dataset = str(pathlib.Path(args.dataset).resolve())
        record = dataclasses.replace(record, dataset=dataset, dataset_sha256=sha)
    if drift is not None:
        resolved = str(pathlib.Path(args.drift).resolve())
        record = dataclasses.replace(record, drift=resolved, drift_sha256=drift[1])
    return runs.NewRun(args, agent, record, out, data)


def _check_rounding(name: str, per_update: int, steps: int, asked: int | None) -> None:
    """Refuse a run of whole updates that takes more than twice the steps asked for (a budget
    below half an update, rounded up to one): the smallest budget is one update."""
    if asked is not None and steps > 2 * asked:
        raise UsageError(
            f"--total-timesteps {asked:,} would be rounded up to {steps:,} env steps, more than "
            f"twice as many: one update of {name} takes {per_update:,} (all environments "
            f"together), the smallest budget; allowed: --total-timesteps >= "
            f"{-(-per_update // 2):,}, or fewer environments or steps per update"
        )


def _made(algo: registry.Algorithm, config, env, env_params, env_name: str, variants: dict):
    """The run's agent, with `variants` (`--drift`'s policy loss) passed to its `make` (its
    hparams are checked once, by `runner.fit`). The family's own
    refusals come first (an action space it does not handle), then an environment with action
    masks for an agent that does not read them (`Agent.reads_action_mask`), naming the
    algorithms that take it."""
    from rlsuite.environment.masks import MasksNotRead

    try:
        agent = runs.made_with(algo, config, env, env_params, variants)
    except MasksNotRead:
        agent = None
    if agent is None or (env.has_action_mask and not agent.reads_action_mask):
        raise UsageError(
            f"{env_name} has action masks and {algo.name} does not read them (it would take "
            f"masked actions); the algorithms that take it: "
            f"{', '.join(registry.taking(env, env_params))}"
        )
    return agent


def _file_word(env_name: str) -> str:
    """An environment's name as part of a folder's name: `brax/ant` is `brax-ant`, and a
    `module:Class` of the user's is `module-Class` (no `:`, which some file systems refuse)."""
    return env_name.replace("/", "-").replace(":", "-")


def _parse(line: CommandLine, command: str):
    """`(algo, args, env_name, env_options, (env, env_params))` of a new run's command line
    (the options parsed: `envs.options.parse_options`)."""
    from rlsuite import envs

    given = config_file(line)
    argv = without_flags(list(line.words), ("--config",))
    if given is not None and (not argv or argv[0].startswith("-")):
        argv = [given["algo"], *argv]  # the file names the algorithm
    if argv and argv[0] in ("-h", "--help"):
        print(
            f"usage: rlsuite {command} ALGO [--env NAME] [FLAGS]\n\nALGO is one of "
            f"{', '.join(registry.names())} (rlsuite list algos says what each is); "
            f"rlsuite {command} ALGO --help lists its flags. --env takes a registered name "
            "(rlsuite list envs) or module:Class (or module:function) for an environment of "
            "your own, and --env-option FIELD=VALUE ... its options (a params field or a "
            "constructor argument); rlsuite list tuned gives the pairs with tuned defaults."
        )
        raise SystemExit(0)
    if not argv or argv[0].startswith("-"):
        raise UsageError(
            f"{command} needs an algorithm first: rlsuite {command} ALGO "
            f"(one of {', '.join(registry.names())})"
        )
    name, argv = argv[0], argv[1:]
    choose("algorithm", name, registry.names())
    if given is not None and given["algo"] != name:
        raise UsageError(f"--config {given['path']} is for {given['algo']}, not {name}")
    algo = registry.get(name)
    check_memory(algo, line)
    env_name, dataset = _env_name(algo, line, given)
    pairs = list(line.env_options)
    # A --config file's options, on its own environment, with the flags' over them.
    kept = given.get("env_options") or {} if given and given["env"] == env_name else {}
    options = {**kept, **env_options(pairs)}
    options = envs.options.parse_options(env_name, options)  # an unknown name fails here
    made = envs.make(env_name, **options)  # and so does an unknown option, before any parsing
    argv = [*argv, "--env-option", *pairs] if pairs else argv
    TrainArgs = train_args(algo)
    if given is None:
        defaults = tuned(name, env_name)
        config, hparams = algo.config_cls(**defaults["config"]), defaults["hparams"]
        run = {}
    else:
        config, hparams = runs.config_of(algo, given["config"]), given["hparams"]
        run = {k: given[k] for k in CONFIG_FILE_RUN_KEYS if k in given}
    hparams = algo.hparams_cls(**hparams)
    default = TrainArgs(config=config, hparams=hparams, env=env_name, dataset=dataset, **run)
    args = parse(TrainArgs, argv, f"rlsuite {command} {name}", default)
    return algo, args, env_name, options, made


def _record(algo, args, env_name: str, agent, mesh: dict | None, options) -> runs.RunRecord:
    from rlsuite.envs.options import options_to_json
    from rlsuite.loop.runner import chunk_length

    return runs.RunRecord(
        algo=algo.name,
        env=env_name,
        num_seeds=args.num_seeds,
        seed=args.seed,
        chunks=args.chunks,
        chunk_updates=chunk_length(agent.config.num_updates, args.chunks),
        eval_episodes=args.eval_episodes,
        logging=runs.Logging(args.tensorboard, args.wandb, args.log_interval),
        config=args.config,
        hparams=args.hparams,
        # A resume gives the runs the same devices, so it continues bitwise (driver.run_mesh).
        devices=runs.Devices(
            jax.default_backend(), jax.device_count(), args.deterministic, args.matmul_precision
        ),
        mesh=mesh,
        env_options=options_to_json(options),
    )


def config_file(line: CommandLine) -> dict | None:
    """What `--config FILE` holds: a `config.json` of a run, or a sweep's `best.json`
    (`rlsuite.app.sweep`), with its `path`. None without the flag."""
    path = line.value("--config")
    if path is None:
        return None
    given = runs.read_json(
        pathlib.Path(path), f"--config {path}: no such file", name=f"--config {path}"
    )
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
    choose("algorithm", given["algo"], registry.names())
    return {**given, "path": path}


def check_memory(algo: registry.Algorithm, line: CommandLine) -> None:
    """Refuse a recurrent policy (`--recurrent`, `--recurrent-size`) for a family that declares
    no memory (`registry.Algorithm.memory`), naming the families that do."""
    flags = [flag for flag in ("--recurrent", "--recurrent-size") if line.given(flag)]
    if flags and not algo.memory:
        raise UsageError(
            f"{algo.name} takes no recurrent policy ({flags[0]}); the families with memory: "
            f"{', '.join(registry.with_memory())}"
        )


def _env_name(
    algo: registry.Algorithm, line: CommandLine, given: dict | None
) -> tuple[str, str | None]:
    """The environment of a new run and its dataset: `--env` (or a `--config` file's) or the
    algorithm's default for an online one; for an offline one, the environment its dataset
    (`--dataset`, or a `--config` file's) was made in."""
    from rlsuite.data.dataset_files import load_d4rl

    name, path = algo.name, line.value("--dataset")
    if not algo.offline:
        if path is not None:
            raise UsageError(
                f"{name} is an online algorithm; --dataset is for {', '.join(registry.offline())}"
            )
        env = line.value("--env")
        if env is None:
            env = algo.default_env if given is None else given["env"]
        return env, None
    if path is None and given is not None and given.get("dataset"):
        path = given["dataset"]  # an offline run's, by its path
    if path is None and line.given("--help", "-h"):
        return line.value("--env") or algo.default_env, None  # the flags, before a dataset
    if path is None:
        raise UsageError(f"{name} is an offline algorithm: give --dataset FILE")
    if not pathlib.Path(path).is_file():
        raise UsageError(f"--dataset {path}: no such file")
    env_name = load_d4rl(path).info.env
    asked = line.value("--env")
    if asked is not None and asked != env_name:
        raise UsageError(f"--env {asked} does not match the dataset's environment {env_name}")
    return env_name, path
