"""TD3 in one file: copy it, change `critic_target` (or anything else), run it.

    python experiments/td3.py --env pendulum --num-seeds 4
    python experiments/td3.py --env pendulum --target-idea single-critic
    python experiments/td3.py --env pendulum --critic-target annealed   # annealed Q-learning
    python experiments/td3.py --env pendulum --policy-delay 1 --n-step 3

Every config and hyperparameter field is a flag (`--help`); defaults are the suite's tuned ones for
the environment (`rlsuite.app.tuned`). Seeds are vmapped into one jitted call (and sharded over the
available devices). With `--out`, the run writes checkpoints (replay buffer included), metrics
and `final.json` there; `--resume` with the same flags continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import td3
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import losses


def single_critic_target(reward, discount, next_q):
    """An idea to try: bootstrap from the first target critic alone (DDPG's target with TD3's
    smoothing and delays), to see how much the clipped double-Q minimum matters."""
    return jax.lax.stop_gradient(reward + discount * next_q[0])


CRITIC_TARGETS = {"clipped-double-q": losses.td_target, "single-critic": single_critic_target}


@dataclasses.dataclass
class Args:
    config: Annotated[td3.TD3Config, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[td3.TD3Hparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`); it needs a bounded continuous action space"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    target_idea: Literal["clipped-double-q", "single-critic"] = "clipped-double-q"
    """critic target: TD3's minimum of two target critics, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("td3"))
    defaults = tuned("td3", env_name)
    default = Args(
        config=td3.TD3Config(**defaults["config"]),
        hparams=td3.TD3Hparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    agent = td3.make(args.config, env, env_params, critic_target=CRITIC_TARGETS[args.target_idea])
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
    q_mean = np.nanmean(result.metrics["losses/q_mean"][:, -100:])
    print(
        f"td3 ({args.target_idea}) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; "
        f"mean Q over the last 100 updates {q_mean:.1f}; evaluation return "
        f"{summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
