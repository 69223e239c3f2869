"""FixPO in one file: copy it, change the trust region (or anything else), run it.

    python experiments/fixpo.py --env cartpole --num-seeds 4
    python experiments/fixpo.py --env pendulum --num-seeds 2 --out runs/fixpo_pendulum
    python experiments/fixpo.py --env cartpole --region-idea p90-kl --kl-target 0.05

FixPO is PPO with a KL penalty whose weight adapts and a fixup phase that ends every update
inside the trust region (`rlsuite.agents.fixpo`). What the trust region bounds is a function
passed in: each minibatch's largest per-state KL (the paper's), its mean (TRPO's), or the idea
defined here. Every config and hyperparameter field is a flag (`--help`); defaults are the
suite's tuned ones for the environment. Seeds are vmapped into one jitted call. With `--out`, the
run writes checkpoints, metrics and `final.json` there, and `--resume` with the same flags
continues it after a kill. At the end the script says how many updates ended inside the trust
region and what the fixup phase cost.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import fixpo
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner


def p90_kl(kl):
    """An idea to try: bound the 90th percentile of the per-state KLs, so that a tenth of the
    states may move further than the bound (the maximum is the paper's, the mean TRPO's)."""
    return jnp.quantile(kl, 0.9)


REGION_IDEAS = {"max-kl": jnp.max, "mean-kl": jnp.mean, "p90-kl": p90_kl}


@dataclasses.dataclass
class Args:
    config: Annotated[fixpo.FixPOConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[fixpo.FixPOHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`)"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    region_idea: Literal["max-kl", "mean-kl", "p90-kl"] = "max-kl"
    """what the trust region bounds in each minibatch: the largest per-state KL, their mean, or
    the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("fixpo"))
    defaults = tuned("fixpo", env_name)
    default = Args(
        config=fixpo.FixPOConfig(**defaults["config"]),
        hparams=fixpo.FixPOHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    statistic = REGION_IDEAS[args.region_idea]
    agent = fixpo.make(args.config, env, env_params, statistic=statistic)
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
            metadata={"region_idea": args.region_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    print(
        f"fixpo ({args.region_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; "
        f"evaluation return {summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    held = np.asarray(result.metrics.get("losses/trust_region_held", []))
    if held.size:  # the updates this call ran (a resume: those after the checkpoint)
        fixup = np.asarray(result.metrics["losses/fixup_steps"]).sum()
        primary = held.size * args.config.update_epochs * args.config.num_minibatches
        print(
            f"trust region (kl_target {args.hparams.kl_target}): {int(held.sum()):,} of "
            f"{held.size:,} updates ended inside it; the fixup phase took {int(fixup):,} "
            f"gradient steps, {fixup / primary:.2%} of the epochs' {primary:,}"
        )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
