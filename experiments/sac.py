"""SAC in one file: copy it, change `critic_target` (or anything else), run it.

    python experiments/sac.py --env pendulum --num-seeds 4
    python experiments/sac.py --env pendulum --target-idea mean-of-critics
    python experiments/sac.py --env pendulum --critic-target annealed   # annealed Q-learning
    python experiments/sac.py --env brax/inverted_pendulum --num-envs 16 --total-timesteps 50000

Every config and hyperparameter field is a flag (`--help`); defaults are the suite's tuned ones for
the environment (`rlsuite.app.tuned`). Seeds are vmapped into one jitted call (and sharded over the
available devices). With `--out`, the run writes checkpoints (replay buffer included), metrics
and `final.json` there; `--resume` with the same flags continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import tyro

from rlsuite import envs
from rlsuite.agents import sac
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import losses


def mean_of_critics_target(reward, discount, next_q, next_log_prob, alpha):
    """An idea to try: bootstrap from the mean of the target critics instead of their minimum
    (less pessimistic; the overestimation that clipped double-Q guards against may come back)."""
    soft_value = next_q.mean(axis=0) - alpha * next_log_prob
    return jax.lax.stop_gradient(reward + discount * soft_value)


CRITIC_TARGETS = {
    "min-of-critics": losses.soft_td_target,
    "mean-of-critics": mean_of_critics_target,
}


@dataclasses.dataclass
class Args:
    config: Annotated[sac.SACConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[sac.SACHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`); it needs a bounded continuous action space"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    target_idea: Literal["min-of-critics", "mean-of-critics"] = "min-of-critics"
    """critic target: SAC's clipped double-Q soft target, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("sac"))
    defaults = tuned("sac", env_name)
    default = Args(
        config=sac.SACConfig(**defaults["config"]),
        hparams=sac.SACHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    agent = sac.make(args.config, env, env_params, critic_target=CRITIC_TARGETS[args.target_idea])
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
    alpha = result.metrics["losses/alpha"][:, -1]
    print(
        f"sac ({args.target_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; "
        f"final temperature {alpha.mean():.3f}; evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
