"""Sweep PPO over learning rates x entropy coefficients x seeds in one jitted, vmapped call.

    python experiments/ppo_sweep.py --env cartpole --learning-rates 2.5e-4 1e-3 --ent-coefs 0 0.01

The grid is flattened to one run per (learning rate, entropy coefficient, seed) and trained as a
single `jax.jit(driver.run_batch)` call with one set of hyperparameters per run (`hparams_axis=0`);
then every run's policy is evaluated deterministically. Every grid cell uses the same seed keys
(common random numbers), so cells differ only in their hyperparameters. This is the library-level
form of `rlsuite sweep` (the same batch, hparams and keys, `rlsuite.app.batches.sweep_hparams` and
`driver.run_keys`) without its checkpoints, logs and files. Prints the mean ± sample
std of the evaluation return across seeds per cell and the environment steps per second of training
(all runs together, compilation excluded); `--out` also writes the results as JSON.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import pathlib
import time

import jax
import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.app.batches import sweep_hparams
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env
from rlsuite.loop import driver, files, platform
from rlsuite.loop.agent import Agent


@dataclasses.dataclass
class Args:
    env: str = dataclasses.field(default_factory=lambda: default_env("ppo"))
    """environment name (`envs.names()`), e.g. cartpole, acrobot, pendulum"""
    learning_rates: tuple[float, ...] = (2.5e-4, 1e-3)
    """learning rates of the grid (annealed linearly to 0 over the run)"""
    ent_coefs: tuple[float, ...] = (0.0, 0.01)
    """entropy bonus coefficients of the grid"""
    num_seeds: int = 2
    """seeds per grid cell"""
    seed: int = 0
    """master seed: the per-run keys are split from it"""
    total_timesteps: int = 100_000
    """environment steps per run"""
    num_envs: int = 4
    """parallel environments per run"""
    num_steps: int = 128
    """steps per environment in each rollout"""
    eval_episodes: int = 10
    """deterministic evaluation episodes per run after training"""
    out: pathlib.Path | None = None
    """optional path of a JSON file for the results (an existing file is not replaced)"""


def setup(args: Args) -> tuple[Agent, list, ppo.PPOHparams]:
    """Check the arguments and build the agent, the grid cells and one hparams entry per run.

    Every invalid argument raises a `ValueError` here, before anything is compiled.
    """
    for name in ("learning_rates", "ent_coefs"):
        if not getattr(args, name):
            raise ValueError(f"--{name.replace('_', '-')} is empty: give at least one value")
    for name in ("num_seeds", "total_timesteps", "num_envs", "num_steps", "eval_episodes"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.out is not None:
        files.check_new_file(args.out)  # an existing file is not replaced
    env, env_params = envs.make(args.env)
    config = ppo.PPOConfig(
        num_envs=args.num_envs, num_steps=args.num_steps, total_timesteps=args.total_timesteps
    )
    agent = ppo.make(config, env, env_params)
    grid = agent.default_hparams.replace(
        learning_rate=np.asarray(args.learning_rates), ent_coef=np.asarray(args.ent_coefs)
    )
    agent.check_hparams(grid)  # a bad grid value raises here, naming the field
    # Flatten the grid: run i is cell i // num_seeds, seed i % num_seeds (as rlsuite sweep).
    cells = list(itertools.product(args.learning_rates, args.ent_coefs))
    sweep = {
        "fields": ["learning_rate", "ent_coef"],
        "configs": [{"learning_rate": lr, "ent_coef": ent} for lr, ent in cells],
        "seeds": args.num_seeds,
    }
    return agent, cells, sweep_hparams(agent.default_hparams, sweep)


def main(args: Args) -> dict:
    agent, cells, hparams = setup(args)
    config = agent.config
    num_runs = len(cells) * args.num_seeds
    key_init, key_eval = jax.random.split(jax.random.key(args.seed))
    # The same seeds in every cell: seed s of each has the keys of seed s of a run of it alone.
    keys = driver.run_keys(key_init, num_runs, args.num_seeds)

    print(
        f"ppo on {args.env}: {len(args.learning_rates)} learning rates x {len(args.ent_coefs)} "
        f"entropy coefficients x {args.num_seeds} seeds = {num_runs} runs of "
        f"{config.num_updates} updates ({config.num_updates * agent.env_steps_per_update:,} "
        f"env steps each), one jitted call on {jax.devices()[0]}"
    )
    states = jax.jit(driver.init_batch, static_argnums=(0, 3))(agent, keys, hparams, 0)
    start = time.perf_counter()
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    run = run.lower(agent, states, hparams, config.num_updates, 0).compile()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    states, _ = jax.block_until_ready(run(states, hparams))
    train_seconds = time.perf_counter() - start
    evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    eval_keys = driver.run_keys(key_eval, num_runs, args.num_seeds)
    returns = np.asarray(evaluation(agent, states, eval_keys, args.eval_episodes).returns)

    cell_returns = returns.mean(axis=1).reshape(len(cells), args.num_seeds)
    env_steps = num_runs * config.num_updates * agent.env_steps_per_update
    results = {
        "env": args.env,
        "num_runs": num_runs,
        "env_steps_per_run": config.num_updates * agent.env_steps_per_update,
        "compile_seconds": round(compile_seconds, 3),
        "train_seconds": round(train_seconds, 3),
        "env_steps_per_second": round(env_steps / train_seconds),
        "cells": [
            {
                "learning_rate": cell_lr,
                "ent_coef": cell_ent,
                "eval_return_per_seed": seeds.tolist(),
                "eval_return_mean": float(seeds.mean()),
                "eval_return_std": float(seeds.std(ddof=1)) if len(seeds) > 1 else 0.0,
            }
            for (cell_lr, cell_ent), seeds in zip(cells, cell_returns, strict=True)
        ],
    }
    print_table(results)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {"args": dataclasses.asdict(args), **results}
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.out}")
    return results


def print_table(results: dict) -> None:
    table = Table(title=f"PPO on {results['env']}: evaluation return across seeds")
    for column in ("learning rate", "ent coef", "eval return (mean ± std)", "seeds"):
        table.add_column(column, justify="right")
    for cell in results["cells"]:
        table.add_row(
            f"{cell['learning_rate']:g}",
            f"{cell['ent_coef']:g}",
            f"{cell['eval_return_mean']:.1f} ± {cell['eval_return_std']:.1f}",
            str(len(cell["eval_return_per_seed"])),
        )
    console = Console()
    console.print(table)
    console.print(
        f"{results['num_runs']} runs x {results['env_steps_per_run']:,} env steps: "
        f"{results['train_seconds']:.1f} s (+{results['compile_seconds']:.1f} s compile), "
        f"{results['env_steps_per_second']:,} env steps/s"
    )


if __name__ == "__main__":
    cli_args = tyro.cli(Args)
    platform.use_cpu_cores()  # runs split over the CPU cores (before anything runs)
    run_script(setup, cli_args)  # cheap: bad input fails in one line before anything compiles
    run_script(main, cli_args)
