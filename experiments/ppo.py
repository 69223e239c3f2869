"""PPO in one file: copy it, change `policy_loss` (or anything else), run it.

    python experiments/ppo.py --env cartpole --num-seeds 4
    python experiments/ppo.py --env pendulum --num-seeds 2 --out runs/pendulum
    python experiments/ppo.py --env cartpole --loss-idea clip-free

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
import tyro

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import losses


def clip_free_policy_loss(log_prob, old_log_prob, advantages, clip_eps):
    """An idea to try: the unclipped importance-weighted surrogate with a KL penalty instead of
    clipping (PPO-penalty with a fixed coefficient; `clip_eps` is reused as that coefficient)."""
    log_ratio = log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    approx_kl = ((ratio - 1.0) - log_ratio).mean()
    loss = -(ratio * advantages).mean() + clip_eps * approx_kl
    metrics = {"approx_kl": jax.lax.stop_gradient(approx_kl), "clip_fraction": jnp.zeros(())}
    return loss, metrics


POLICY_LOSSES = {"ppo-clip": losses.ppo_policy_loss, "clip-free": clip_free_policy_loss}


@dataclasses.dataclass
class Args:
    config: Annotated[ppo.PPOConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ppo.PPOHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`)"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    loss_idea: Literal["ppo-clip", "clip-free"] = "ppo-clip"
    """policy loss: PPO's clipped surrogate, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("ppo"))
    defaults = tuned("ppo", env_name)
    default = Args(
        config=ppo.PPOConfig(**defaults["config"]),
        hparams=ppo.PPOHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    agent = ppo.make(args.config, env, env_params, policy_loss=POLICY_LOSSES[args.loss_idea])
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
            metadata={"loss_idea": args.loss_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    print(
        f"ppo ({args.loss_idea}) on {args.env}: {args.num_seeds} seeds x {summary['env_steps']:,} "
        f"steps, {summary['env_steps_per_second']:,} steps/s; evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
