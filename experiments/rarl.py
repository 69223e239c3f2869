"""RARL in one file: copy it, change the adversary's reward (or anything else), run it.

    python experiments/rarl.py --env pendulum --num-seeds 4
    python experiments/rarl.py --env pendulum --adversary-idea effort --out runs/rarl_effort
    python experiments/rarl.py --env pendulum --disturbance-bound 0.25 --scales 0.5 1 2

RARL trains a protagonist against an adversary that disturbs its environment, in alternation
(`rlsuite.agents.rarl`); the adversary's reward is a function passed in: RARL's zero-sum one, or
the idea defined here. Every config and hyperparameter field is a flag (`--help`); defaults are
the suite's tuned ones. At the end every seed's protagonist (deterministic, no adversary) plays
`--attempts` episodes on each cell of a grid of physics (`--fields` scaled by `--scales`), and
the script prints the mean return per cell and each seed's worst cell. With `--out`, the run
writes checkpoints, metrics and `final.json` there, and `--resume` with the same flags
continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import ppo, rarl
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.environment.adversarial import physics_grid
from rlsuite.loop import driver, platform, runner


def effort(reward, disturbance):
    """An idea to try: an adversary that pays for its effort, `-r - 0.1 |d|^2`, so it pushes
    only where a push costs the protagonist more than it costs itself (no longer zero-sum)."""
    return -reward - 0.1 * jnp.square(disturbance).sum(axis=-1)


ADVERSARY_IDEAS = {"zero-sum": rarl.zero_sum, "effort": effort}


@dataclasses.dataclass
class Args:
    config: Annotated[rarl.RARLConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ppo.PPOHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment with a disturbance channel (`envs.names()`; pendulum)"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    adversary_idea: Literal["zero-sum", "effort"] = "zero-sum"
    """the adversary's reward: RARL's, or the idea defined in this file"""
    fields: tuple[str, ...] = ("mass", "length")
    """physics params of the test grid"""
    scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    """factors on each field"""
    attempts: int = 5
    """evaluation episodes per seed and cell"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end, on the nominal physics"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("rarl"))
    defaults = tuned("rarl", env_name)
    default = Args(
        config=rarl.RARLConfig(**defaults["config"]),
        hparams=ppo.PPOHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    if args.attempts < 1:
        raise ValueError(f"--attempts must be >= 1, got {args.attempts}")
    env, env_params = envs.make(args.env)
    cells, params = physics_grid(env_params, args.fields, args.scales)
    reward = ADVERSARY_IDEAS[args.adversary_idea]
    agent = rarl.make(args.config, env, env_params, adversary_reward=reward)
    result = runner.fit(
        agent,
        jax.random.key(args.seed),
        args.hparams,
        schedule=runner.Schedule(num_seeds=args.num_seeds),
        output=runner.Output(
            out_dir=args.out,
            resume=args.resume,
            env_name=args.env,
            # a resume with another idea is refused
            metadata={"adversary_idea": args.adversary_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    print(
        f"rarl ({args.adversary_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} protagonist steps; evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4))
    key = jax.random.key(args.seed + 1)
    returns = np.asarray(evaluate(agent, result.states, key, params, args.attempts).returns)
    per_cell = returns.mean(axis=2)  # [seeds, cells]
    print(f"{' x '.join(args.fields):>20}  mean return over seeds")
    for cell, values in zip(cells, per_cell.T, strict=True):
        print(f"{' x '.join(f'{s:g}' for s in cell):>20}  {values.mean():.1f}")
    worst = per_cell.min(axis=1)
    print("worst cell per seed: " + ", ".join(f"{w:.1f}" for w in worst))
    return {**summary, "grid_cells": cells, "grid_returns": per_cell.tolist()}


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
