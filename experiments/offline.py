"""Offline RL in one file: make datasets with our own SAC, train BC, TD3+BC, CQL and IQL on each,
print the table of normalised scores (D4RL's: 0 = random policy, 100 = expert).

    python experiments/offline.py                           # Pendulum; about 15 min on 2 CPUs
    python experiments/offline.py --qualities medium-replay --num-updates 100 --num-seeds 2
    python experiments/offline.py --save-dir data/          # also keep the HDF5 files

The behaviour policies are trained once (`rlsuite.collect.train_behaviour`) and every quality is
recorded from them; each algorithm then trains `--num-seeds` seeds in one vmapped call per
dataset. Change an algorithm's hyperparameters below (`HPARAMS`) to try an idea.
"""

import dataclasses
import pathlib
import sys
import time

import jax
import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

import envs
from rlsuite import collect, driver
from rlsuite.agents import bc, cql, iql, sac, td3_bc
from rlsuite.datasets import normalized_score, save_d4rl
from rlsuite.tuned import tuned

ALGOS = {
    "bc": (bc.make, bc.BCConfig),
    "td3_bc": (td3_bc.make, td3_bc.TD3BCConfig),
    "cql": (cql.make, cql.CQLConfig),
    "iql": (iql.make, iql.IQLConfig),
}
# Defaults otherwise. CQL: a target entropy of 0 instead of SAC's -1, which on Pendulum's narrow
# datasets keeps the policy from saturating at the wrong end of the action range (cql.py).
HPARAMS = {"cql": cql.CQLHparams(target_entropy_scale=0.0)}


@dataclasses.dataclass
class Args:
    env: str = "pendulum"
    """environment with a tuned SAC entry (`rlsuite.tuned`) and a bounded continuous action space"""
    qualities: list[str] = dataclasses.field(
        default_factory=lambda: ["medium", "medium-replay", "medium-expert", "expert"]
    )
    """dataset qualities (random, medium, expert, medium-replay, medium-expert)"""
    algos: list[str] = dataclasses.field(default_factory=lambda: list(ALGOS))
    """offline algorithms to train"""
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
    """training budget of the expert behaviour policy (default: SAC's tuned one)"""
    eval_episodes: int = 10
    """evaluation episodes per seed"""
    save_dir: str | None = None
    """also write each dataset there in the D4RL layout (existing files are not replaced)"""


def train(algo: str, data, args: Args, key) -> np.ndarray:
    """Normalised scores `[num_seeds]` of `algo` trained on `data`."""
    make, Config = ALGOS[algo]
    env, env_params = envs.make(data.info.env)
    config = Config(
        num_updates=args.num_updates,
        gradient_steps=args.gradient_steps,
        hidden_sizes=args.hidden_sizes,
    )
    agent = make(config, env, env_params)
    hp = HPARAMS.get(algo, agent.default_hparams)
    keys = jax.random.split(key, args.num_seeds)
    states = driver.init_batch(agent, keys, hp, None, data)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    states, _ = run(agent, states, hp, args.num_updates, None, data)
    evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    result = evaluation(agent, states, jax.random.fold_in(key, 1), args.eval_episodes)
    returns = np.asarray(result.returns).mean(axis=1)
    return np.asarray(normalized_score(returns, data.info.random_return, data.info.expert_return))


def main(argv: list[str]) -> dict:
    args = tyro.cli(Args, args=argv)
    for quality in args.qualities:
        if quality not in collect.QUALITIES:
            raise ValueError(f"unknown quality {quality!r}; allowed: {collect.QUALITIES}")
    for algo in args.algos:
        if algo not in ALGOS:
            raise ValueError(f"unknown algorithm {algo!r}; allowed: {', '.join(ALGOS)}")
    env, env_params = envs.make(args.env)
    defaults = tuned("sac", args.env)
    config = sac.SACConfig(**defaults["config"])
    if args.behaviour_timesteps is not None:
        config = dataclasses.replace(config, total_timesteps=args.behaviour_timesteps)
    behaviour_agent = sac.make(config, env, env_params)
    key_behaviour, key_data, key_train = jax.random.split(jax.random.key(args.seed), 3)
    start = time.perf_counter()
    medium = any(q not in ("random", "expert") for q in args.qualities)
    behaviour = collect.train_behaviour(
        behaviour_agent,
        sac.SACHparams(**defaults["hparams"]),
        key_behaviour,
        args.env,
        medium=medium,
        seed=args.seed,
    )
    results = {}
    for quality in args.qualities:
        data = collect.dataset(behaviour_agent, behaviour, key_data, quality, args.size)
        if args.save_dir is not None:
            path = pathlib.Path(args.save_dir) / f"{args.env}-{quality}.hdf5"
            path.parent.mkdir(parents=True, exist_ok=True)
            save_d4rl(path, data)
        for algo in args.algos:
            scores = train(algo, data, args, key_train)
            results[(quality, algo)] = scores.tolist()
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
    return {"results": {f"{q}/{a}": v for (q, a), v in results.items()}}


if __name__ == "__main__":
    main(sys.argv[1:])
