"""DPO in one file: copy it, change the drift (or anything else), run it.

    python experiments/dpo.py --env cartpole --num-seeds 4
    python experiments/dpo.py --env pendulum --num-seeds 2 --out runs/dpo_pendulum
    python experiments/dpo.py --env cartpole --drift-idea log-both

DPO is PPO whose policy objective is `E[r A - drift(r, A)]` with DPO's discovered drift instead
of the clip (`rlsuite.agents.dpo`). The drift is a function passed in: DPO's, PPO's clip written
as a drift, or the idea defined here. Every config and hyperparameter field is a flag (`--help`);
defaults are the suite's tuned ones for the environment. Seeds are vmapped into one jitted call.
With `--out`, the run writes checkpoints, metrics and `final.json` there, and `--resume` with the
same flags continues it after a kill. At the end the script says the evaluation return and the
mean drift the updates paid.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import dpo, ppo
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import losses


def log_both(ratio, log_ratio, advantages, clip_eps, beta: float = 0.6):
    """An idea to try: DPO's branch for negative advantages, in `log r`, for both signs:
    `ReLU(log(r) A - beta tanh(log(r) A / beta))`, so that a good action's ratio is held back
    as symmetrically in `log r` as a bad one's."""
    del ratio, clip_eps
    x = log_ratio * advantages
    return jax.nn.relu(x - beta * jnp.tanh(x / beta))


def drift_of(idea: str, config: dpo.DPOConfig):
    """The drift `idea` names, at the config's scales."""
    if idea == "dpo":
        return losses.dpo_drift(config.drift_alpha, config.drift_beta)
    if idea == "ppo-clip":
        return losses.ppo_drift
    return lambda *args: log_both(*args, beta=config.drift_beta)


@dataclasses.dataclass
class Args:
    config: Annotated[dpo.DPOConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ppo.PPOHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`)"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    drift_idea: Literal["dpo", "ppo-clip", "log-both"] = "dpo"
    """the drift: DPO's, PPO's clip written as a drift, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("dpo"))
    defaults = tuned("dpo", env_name)
    default = Args(
        config=dpo.DPOConfig(**defaults["config"]),
        hparams=ppo.PPOHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    policy_loss = losses.drift_policy_loss(drift_of(args.drift_idea, args.config))
    agent = dpo.make(args.config, env, env_params, policy_loss=policy_loss)
    result = runner.fit(
        agent,
        jax.random.key(args.seed),
        args.hparams,
        schedule=runner.Schedule(num_seeds=args.num_seeds),
        output=runner.Output(
            out_dir=args.out,
            resume=args.resume,
            env_name=args.env,
            metadata={"drift_idea": args.drift_idea},  # a resume with another idea is refused
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    drift = np.asarray(result.metrics.get("losses/drift", []))
    paid = f"; mean drift {drift.mean():.4f}" if drift.size else ""
    print(
        f"dpo ({args.drift_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; "
        f"evaluation return {summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + f"){paid}"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
