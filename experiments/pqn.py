"""PQN in one file: copy it, change the targets (or anything else), run it.

    python experiments/pqn.py --env cartpole --num-seeds 4
    python experiments/pqn.py --env cartpole --target-idea mellowmax
    python experiments/pqn.py --env gymnax/Breakout-MinAtar --num-seeds 2 --total-timesteps 500000

Every config and hyperparameter field is a flag (`--help`); defaults are the suite's tuned ones for
the environment (`rlsuite.app.tuned`). Seeds are vmapped into one jitted call (and sharded over the
available devices). With `--out`, the run writes checkpoints, metrics and `final.json` there, and
`--resume` with the same flags continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import pqn
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops.returns import td_lambda

MELLOWMAX_OMEGA = 5.0  # the temperature of the mellowmax backup (Asadi and Littman 2017)


def mellowmax(q, omega=MELLOWMAX_OMEGA):
    """`log(mean_a exp(omega q_a)) / omega` over the last axis: a soft maximum that, unlike the
    Boltzmann softmax, is a non-expansion (it lies between the mean and the max)."""
    n = q.shape[-1]
    return (jax.nn.logsumexp(omega * q, axis=-1) - jnp.log(n)) / omega


def mellowmax_targets(reward, terminated, truncated, next_q, gamma, q_lambda):
    """An idea to try: Q(lambda) targets that bootstrap from the mellowmax of the next values
    instead of their max (Asadi and Littman 2017, arXiv:1612.05628): less overestimation, at
    the price of a bias towards the mean."""
    return td_lambda(reward, mellowmax(next_q), terminated, truncated, gamma, q_lambda)


TARGETS = {"q-lambda": pqn.q_lambda_targets, "mellowmax": mellowmax_targets}


@dataclasses.dataclass
class Args:
    config: Annotated[pqn.PQNConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[pqn.PQNHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`); it needs a discrete action space"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    target_idea: Literal["q-lambda", "mellowmax"] = "q-lambda"
    """targets: Peng's Q(lambda) of the library, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("pqn"))
    defaults = tuned("pqn", env_name)
    default = Args(
        config=pqn.PQNConfig(**defaults["config"]),
        hparams=pqn.PQNHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    agent = pqn.make(args.config, env, env_params, targets=TARGETS[args.target_idea])
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
            metadata={"target_idea": args.target_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    q_mean = np.nanmean(result.metrics["losses/q_mean"][:, -10:])
    print(
        f"pqn ({args.target_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; mean Q over "
        f"the last 10 updates {q_mean:.2f}; evaluation return {summary['eval_return_mean']:.1f} "
        "(per seed: " + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"]) + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
