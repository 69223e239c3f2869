"""Offline RL in one file: make datasets with our own SAC, train every offline family (BC, TD3+BC,
CQL, IQL, CSVE, SAQ) on each, print the table of normalised scores (D4RL's: 0 = random policy,
100 = expert).

    python experiments/offline.py                           # Pendulum; about 15 min on 2 CPUs
    python experiments/offline.py --qualities medium-replay --num-updates 100 --num-seeds 2
    python experiments/offline.py --save-dir data/          # also keep the HDF5 files
    python experiments/offline.py --env brax/hopper --hidden-sizes 256 256 --out hopper.json

The behaviour policies are trained once (`rlsuite.app.collect.train_behaviour`) and every quality is
recorded from them; each algorithm then trains `--num-seeds` seeds in one vmapped call per
dataset. Change an algorithm's hyperparameters below (`HPARAMS`) to try an idea.

The behaviour agent is SAC with the environment's behaviour defaults
(`rlsuite.app.tuned.behaviour`): its tuned entry, and for a Brax environment without one,
brax/hopper's (brax.training's
published hopper SAC configuration mapped onto ours; brax publishes none for walker2d or
halfcheetah), trained for `--behaviour-timesteps` (default 1,048,576, what its replay buffer
holds, since medium-replay keeps the whole medium run) rather than brax's 6.5M. `--out` writes
the scores per seed, the reference returns and the timings as JSON, rewritten after every
(dataset, algorithm), so a run stopped early leaves what it finished.
"""

import dataclasses
import json
import pathlib
import sys
import time

import jax
import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

from rlsuite import envs
from rlsuite.agents import cql, registry, sac, saq
from rlsuite.app import collect, tuned
from rlsuite.app.errors import run_script
from rlsuite.data.dataset_files import save_d4rl
from rlsuite.data.datasets import normalized_score
from rlsuite.loop import driver, files, platform

# Defaults otherwise. CQL: a target entropy of 0 instead of SAC's -1, which on Pendulum's narrow
# datasets keeps the policy from saturating at the wrong end of the action range (cql.py). SAQ:
# its critics at 1e-3, as its tuned Pendulum entry (rlsuite/app/tuned.py).
HPARAMS = {
    "cql": cql.CQLHparams(target_entropy_scale=0.0),
    "saq": saq.SAQHparams(critic_lr=1e-3),
}


@dataclasses.dataclass
class Args:
    env: str = "pendulum"
    """environment with a bounded continuous action space (the behaviour SAC's defaults for it:
    `rlsuite.app.tuned.behaviour`)"""
    qualities: list[str] = dataclasses.field(
        default_factory=lambda: ["medium", "medium-replay", "medium-expert", "expert"]
    )
    """dataset qualities (random, medium, expert, medium-replay, medium-expert)"""
    algos: list[str] = dataclasses.field(default_factory=registry.offline)
    """offline algorithms to train (default: every one in `rlsuite.agents.registry`)"""
    size: int = 20_000
    """transitions per dataset (medium-replay: the whole medium run)"""
    num_updates: int = 100
    """updates per run (each is gradient_steps gradient steps)"""
    gradient_steps: int = 100
    """gradient steps per update"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """hidden sizes of every network"""
    num_seeds: int = 4
    """seeds per (algorithm, dataset), vmapped"""
    seed: int = 0
    """seed of the collection and of the training runs"""
    behaviour_timesteps: int | None = None
    """training budget of the expert behaviour policy (default: its configuration's)"""
    eval_episodes: int = 10
    """evaluation episodes per seed"""
    save_dir: str | None = None
    """also write each dataset there in the D4RL layout (existing files are not replaced)"""
    episode_length: int | None = None
    """time limit of every episode (default: the environment's own)"""
    record_envs: int = 10
    """parallel environments recording each dataset (must divide the transitions per policy)"""
    out: pathlib.Path | None = None
    """also write the results there as JSON (an existing file is not replaced)"""


def make_env(args: Args, name: str):
    if args.episode_length is None:
        return envs.make(name)
    return envs.make(name, max_episode_steps=args.episode_length)


def offline_config(algo: str, args: Args):
    return registry.get(algo).config_cls(
        num_updates=args.num_updates,
        gradient_steps=args.gradient_steps,
        hidden_sizes=args.hidden_sizes,
    )


RUN = jax.jit(driver.run_batch, static_argnums=(0, 3))
EVALUATE = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))


def train(agent, data, info, args: Args, key) -> np.ndarray:
    """Normalised scores `[num_seeds]` of the offline `agent` trained on `data`.

    `data.info` is static in the compiled program; trained with the behaviour's `info` in its
    place (no quality), datasets of one size share one program per algorithm."""
    hp = HPARAMS.get(agent.name, agent.default_hparams)
    keys = jax.random.split(key, args.num_seeds)
    shared = dataclasses.replace(data, info=info)
    states = driver.init_batch(agent, keys, hp, None, shared)
    states, _ = RUN(agent, states, hp, args.num_updates, None, shared)
    result = EVALUATE(agent, states, jax.random.fold_in(key, 1), args.eval_episodes)
    returns = np.asarray(result.returns).mean(axis=1)
    return np.asarray(normalized_score(returns, data.info.random_return, data.info.expert_return))


def check(args: Args) -> None:
    """Refuse bad arguments before anything is trained."""
    for name in ("size", "num_updates", "gradient_steps", "num_seeds", "eval_episodes"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for quality in args.qualities:
        if quality not in collect.QUALITIES:
            raise ValueError(f"unknown quality {quality!r}; allowed: {collect.QUALITIES}")
    for algo in args.algos:
        if algo not in registry.offline():
            allowed = ", ".join(registry.offline())
            raise ValueError(f"unknown offline algorithm {algo!r}; allowed: {allowed}")
        offline_config(algo, args)
    paths = [] if args.out is None else [args.out]
    if args.save_dir is not None:
        paths += [dataset_path(args, quality) for quality in args.qualities]
    for path in paths:  # not under a file, not a directory: checked here, not after training
        files.check_new_file(path, "--out" if path == args.out else "--save-dir", overwrite=True)
    taken = [path for path in paths if path.exists()]
    if taken:
        raise FileExistsError(f"not replacing {', '.join(map(str, taken))}; choose another path")


def dataset_path(args: Args, quality: str) -> pathlib.Path:
    return pathlib.Path(args.save_dir) / f"{args.env}-{quality}.hdf5"


def write(args: Args, report: dict) -> None:
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")


def main(argv: list[str]) -> dict:
    args = tyro.cli(Args, args=argv)
    check(args)
    env, env_params = make_env(args, args.env)
    defaults = tuned.behaviour("sac", args.env)
    config = sac.SACConfig(**defaults["config"])
    if args.behaviour_timesteps is not None:
        config = dataclasses.replace(config, total_timesteps=args.behaviour_timesteps)
    behaviour_agent = sac.make(config, env, env_params)
    for quality in args.qualities:
        collect.check(behaviour_agent, quality, args.size, args.record_envs)
    hparams = sac.SACHparams(**defaults["hparams"])
    agents = {a: registry.get(a).make(offline_config(a, args), env, env_params) for a in args.algos}
    key_behaviour, key_data, key_train = jax.random.split(jax.random.key(args.seed), 3)
    report = {
        "partial": True,
        "args": vars(args),
        "device": str(jax.devices()[0]),
        "behaviour": {"config": dataclasses.asdict(config), "hparams": vars(hparams)},
        "datasets": {},
        "scores": {},
        "seconds": {},
    }
    start = time.perf_counter()
    medium = any(q not in ("random", "expert") for q in args.qualities)
    behaviour = collect.train_behaviour(
        behaviour_agent, hparams, key_behaviour, args.env, medium=medium, seed=args.seed
    )
    report["reference"] = {
        "random_return": behaviour.info.random_return,
        "expert_return": behaviour.info.expert_return,
        **behaviour.info.extra,
    }
    report["seconds"]["behaviour"] = time.perf_counter() - start
    write(args, report)
    results = {}
    for quality in args.qualities:
        clock = time.perf_counter()
        data = collect.dataset(
            behaviour_agent, behaviour, key_data, quality, args.size, args.record_envs
        )
        report["datasets"][quality] = {"transitions": len(data)}
        report["seconds"][quality] = time.perf_counter() - clock
        if args.save_dir is not None:
            path = dataset_path(args, quality)
            path.parent.mkdir(parents=True, exist_ok=True)
            save_d4rl(path, data)
        for algo in args.algos:
            clock = time.perf_counter()
            scores = train(agents[algo], data, behaviour.info, args, key_train)
            results[(quality, algo)] = scores.tolist()
            report["scores"].setdefault(quality, {})[algo] = scores.tolist()
            report["seconds"][f"{quality}/{algo}"] = time.perf_counter() - clock
            write(args, report)
            print(f"{algo} on {quality} ({len(data):,} transitions): {scores.mean():.1f}")

    table = Table(title=f"Normalised score on {args.env}, mean ± std over {args.num_seeds} seeds")
    table.add_column("dataset")
    for algo in args.algos:
        table.add_column(algo, justify="right")
    for quality in args.qualities:
        cells = [np.asarray(results[(quality, algo)]) for algo in args.algos]
        table.add_row(quality, *(f"{c.mean():.1f} ± {c.std():.1f}" for c in cells))
    console = Console()
    console.print(table)
    console.print(
        f"{args.num_updates * args.gradient_steps:,} gradient steps per run; random return "
        f"{behaviour.info.random_return:.1f}, expert return {behaviour.info.expert_return:.1f}; "
        f"{time.perf_counter() - start:.0f} s in all"
    )
    report["partial"] = False
    report["seconds"]["all"] = time.perf_counter() - start
    write(args, report)
    return {"results": {f"{q}/{a}": v for (q, a), v in results.items()}}


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
