"""The `rlsuite` command line.

    rlsuite train ppo --env cartpole --num-seeds 8 --total-timesteps 500000 --out runs/demo
    rlsuite train --resume runs/demo
    rlsuite eval runs/demo --episodes 100
    rlsuite plot runs/a runs/b --out curves.png

`train` starts from the tuned defaults for the environment (`rlsuite.tuned`); every config and
hyperparameter field is a flag (`rlsuite train ppo --help`). It writes `config.json`,
`metrics.jsonl`, `metrics.csv`, `checkpoints/` and `final.json` under `--out`. This module is the
one place in `rlsuite` that imports `envs` (to resolve environment names).
"""

import dataclasses
import difflib
import functools
import json
import pathlib
import sys
import time
from typing import Annotated, Any, NamedTuple

import jax
import numpy as np
import tyro

from rlsuite.agents import ppo, sac, td3
from rlsuite.tuned import env_from_argv, tuned


class Algo(NamedTuple):
    make: Any
    config_cls: type
    hparams_cls: type


ALGOS = {
    "ppo": Algo(ppo.make, ppo.PPOConfig, ppo.PPOHparams),
    "sac": Algo(sac.make, sac.SACConfig, sac.SACHparams),
    "td3": Algo(td3.make, td3.TD3Config, td3.TD3Hparams),
}
COMMANDS = ("train", "eval", "plot")


class UsageError(ValueError):
    """A bad command line: reported as `error: ...` with exit status 2."""


def _train_args(algo: Algo):
    @dataclasses.dataclass
    class TrainArgs:
        config: Annotated[algo.config_cls, tyro.conf.OmitArgPrefixes]
        hparams: Annotated[algo.hparams_cls, tyro.conf.OmitArgPrefixes]
        env: str = "cartpole"
        """environment name (`envs.names()` lists them)"""
        num_seeds: int = 1
        """independent runs, vmapped (and sharded over the devices)"""
        seed: int = 0
        """seed of the whole batch of runs"""
        out: str | None = None
        """run directory (default: runs/<algo>_<env>_<time>); must not hold a run already"""
        chunks: int = 10
        """checkpoints, log writes and progress updates per run"""
        eval_episodes: int = 10
        """evaluation episodes per seed at the end"""
        tensorboard: bool = False
        """also write TensorBoard event files (extra: logging)"""
        wandb: bool = False
        """also log to Weights & Biases (extra: logging)"""
        progress: bool = True
        """show a progress bar"""

    return TrainArgs


def _choose(kind: str, name: str, allowed) -> None:
    if name not in allowed:
        close = difflib.get_close_matches(name, list(allowed), n=3)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown {kind} {name!r}{hint} (allowed: {', '.join(allowed)})")


def _build(record: dict):
    """Agent, hparams and env name from a `config.json` record."""
    import envs

    algo = ALGOS[record["algo"]]
    config = algo.config_cls(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in record["config"].items()}
    )
    hparams = algo.hparams_cls(**record["hparams"])
    env, env_params = envs.make(record["env"])
    return algo.make(config, env, env_params), hparams


def train(argv: list[str]) -> dict:
    from rlsuite.runner import fit

    if "--resume" in argv:
        return _resume(argv)
    if not argv or argv[0].startswith("-"):
        raise UsageError(
            f"train needs an algorithm first: rlsuite train ALGO (one of {', '.join(ALGOS)})"
        )
    name, argv = argv[0], argv[1:]
    _choose("algorithm", name, ALGOS)
    algo = ALGOS[name]
    env_name = env_from_argv(argv)
    import envs

    env, env_params = envs.make(env_name)  # an unknown name fails here, before any parsing
    defaults = tuned(name, env_name)
    TrainArgs = _train_args(algo)
    default = TrainArgs(
        config=algo.config_cls(**defaults["config"]),
        hparams=algo.hparams_cls(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(TrainArgs, args=argv, default=default, prog=f"rlsuite train {name}")
    if args.num_seeds < 1 or args.chunks < 1 or args.eval_episodes < 1:
        raise UsageError("--num-seeds, --chunks and --eval-episodes must be >= 1")
    out = pathlib.Path(
        args.out or f"runs/{name}_{env_name.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}"
    )
    if (out / "config.json").exists():
        raise UsageError(
            f"{out} already holds a run; continue it with --resume {out} or choose another --out"
        )
    agent = algo.make(args.config, env, env_params)
    agent.check_hparams(args.hparams)
    record = {
        "algo": name,
        "env": env_name,
        "num_seeds": args.num_seeds,
        "seed": args.seed,
        "chunks": args.chunks,
        "eval_episodes": args.eval_episodes,
        "logging": {"tensorboard": args.tensorboard, "wandb": args.wandb},
        "config": dataclasses.asdict(args.config),
        "hparams": dataclasses.asdict(args.hparams),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(record, indent=2) + "\n")
    return _fit(fit, agent, args.hparams, record, out, resume=False, progress=args.progress)


def _resume(argv: list[str]) -> dict:
    from rlsuite.runner import fit

    i = argv.index("--resume")
    if i + 1 >= len(argv):
        raise UsageError("--resume needs the run directory")
    out = pathlib.Path(argv[i + 1])
    rest = argv[:i] + argv[i + 2 :]
    progress = "--no-progress" not in rest
    rest = [a for a in rest if a not in ("--progress", "--no-progress")]
    config_path = out / "config.json"
    if not config_path.exists():
        raise UsageError(f"{out} holds no run to resume (no config.json)")
    record = json.loads(config_path.read_text())
    if rest and rest != [record["algo"]]:
        raise UsageError(
            f"--resume continues the run exactly as {config_path} describes it; "
            f"leave out the other arguments ({' '.join(rest)})"
        )
    agent, hparams = _build(record)
    return _fit(fit, agent, hparams, record, out, resume=True, progress=progress)


def _fit(
    fit, agent, hparams, record: dict, out: pathlib.Path, resume: bool, progress: bool
) -> dict:
    num_updates = agent.config.num_updates
    result = fit(
        agent,
        jax.random.key(record["seed"]),
        hparams,
        num_seeds=record["num_seeds"],
        chunk_updates=max(1, num_updates // record["chunks"]),
        out_dir=out,
        resume=resume,
        env_name=record["env"],
        eval_episodes=record["eval_episodes"],
        progress=progress,
        logger_options=record["logging"],
    )
    summary = result.summary
    print(
        f"{summary['algo']} on {summary['env']}: {summary['num_seeds']} seeds x "
        f"{summary['env_steps']:,} env steps in {summary['wall_seconds']:.1f} s "
        f"({summary['env_steps_per_second']:,} steps/s); evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + f"); files in {out}"
    )
    return summary


@dataclasses.dataclass
class EvalArgs:
    run: tyro.conf.Positional[str]
    """run directory written by `rlsuite train`"""
    episodes: int = 100
    """evaluation episodes per seed"""
    seed: int = 0
    """evaluation seed"""
    stochastic: bool = False
    """sample actions instead of taking the policy's mode"""


def evaluate(argv: list[str]) -> dict:
    from rlsuite import checkpoint, driver

    args = tyro.cli(EvalArgs, args=argv, prog="rlsuite eval")
    if args.episodes < 1:
        raise UsageError("--episodes must be >= 1")
    out = pathlib.Path(args.run)
    if not (out / "config.json").exists():
        raise UsageError(f"{out} holds no run (no config.json)")
    record = json.loads((out / "config.json").read_text())
    agent, hparams = _build(record)
    keys = jax.random.split(jax.random.key(0), record["num_seeds"])
    target = jax.eval_shape(functools.partial(driver.init_batch, agent), keys, hparams)
    states, meta = checkpoint.restore(
        out / "checkpoints", target, expect={"algo": record["algo"], "env": record["env"]}
    )
    evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4))
    returns = np.asarray(
        evaluation(
            agent, states, jax.random.key(args.seed), args.episodes, not args.stochastic
        ).returns
    )
    summary = {
        "run": str(out),
        "env_steps": meta["env_steps"],
        "episodes": args.episodes,
        "eval_return_per_seed": returns.mean(axis=1).tolist(),
        "eval_return_mean": float(returns.mean()),
    }
    print(json.dumps(summary, indent=2))
    return summary


@dataclasses.dataclass
class PlotArgs:
    runs: tyro.conf.Positional[list[str]]
    """run directories to draw"""
    out: str = "curves.png"
    """PNG to write (must not exist)"""
    metric: str = "charts/episodic_return"
    """metric to draw against environment steps"""


def plot(argv: list[str]) -> dict:
    from rlsuite.loggers import read_metrics
    from rlsuite.plotting import curve, plot_curves

    args = tyro.cli(PlotArgs, args=argv, prog="rlsuite plot")
    out = pathlib.Path(args.out)
    if out.exists():
        raise UsageError(f"{out} exists; choose another --out")
    curves = []
    for run in args.runs:
        if not (pathlib.Path(run) / "metrics.jsonl").exists():
            raise UsageError(f"{run} holds no metrics.jsonl")
        steps, values = curve(read_metrics(run), args.metric)
        curves.append((pathlib.Path(run).name, steps, values))
    plot_curves(curves, out, args.metric)
    print(f"wrote {out}")
    return {"out": str(out)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    try:
        _choose("command", command, COMMANDS)
        {"train": train, "eval": evaluate, "plot": plot}[command](rest)
    except (UsageError, ValueError, TypeError, FileExistsError, MemoryError) as error:
        print(f"rlsuite {command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
