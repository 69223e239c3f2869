"""RL^2 in one file: copy it, change the task distribution (or anything else), run it.

    python experiments/rl2.py --env meta/bandit --num-seeds 2
    python experiments/rl2.py --env meta/bandit --task-idea close-arms --out runs/close
    python experiments/rl2.py --env meta/maze --num-envs 64 --num-steps 60 --update-epochs 4

Every config and hyperparameter field is a flag (`--help`); defaults are the suite's tuned ones for
the task family (`rlsuite.app.tuned`). Seeds are vmapped into one jitted call. At the end every
seed's policy runs whole trials on fresh tasks and the script prints the adaptation curve: the
mean return of each episode of a trial, with a bootstrap interval across seeds. With `--out`, the
run writes checkpoints, metrics and `final.json` there (`rlsuite plot RUN --adaptation` draws the
curve), and `--resume` with the same flags continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import tyro

from rlsuite import envs
from rlsuite.agents import ppo, rl2
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.environment.evaluations import adaptation_table
from rlsuite.environment.meta import RL2, trial_wrapper
from rlsuite.loop import platform, runner


def close_arms(key, params):
    """An idea to try: bandits whose arms are hard to tell apart, probabilities ~ U[0.4, 0.6]
    (Duan et al. draw U[0, 1]); a trial must pull more to find the best arm."""
    probs = jax.random.uniform(key, params.probs.shape, minval=0.4, maxval=0.6)
    return params.replace(probs=probs)


TASK_IDEAS = {"family": None, "close-arms": close_arms}  # None: the family's own distribution


def with_task_distribution(env, sample_task):
    """`env` (a task family in the `RL2` wrapper) drawing its tasks with `sample_task` instead."""
    trials = trial_wrapper(env)
    return RL2(
        trials.env,
        sample_task,
        episodes_per_trial=trials.episodes_per_trial,
        steps_per_trial=trials.steps_per_trial,
        memory=trials.memory,
    )


@dataclasses.dataclass
class Args:
    config: Annotated[rl2.RL2Config, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ppo.PPOHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """task family (`meta/...` in `envs.names()`)"""
    num_seeds: int = 2
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    task_idea: Literal["family", "close-arms"] = "family"
    """task distribution: the family's own, or the idea defined in this file (bandits)"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 1000
    """evaluation trials per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("rl2"))
    defaults = tuned("rl2", env_name)
    default = Args(
        config=rl2.RL2Config(**defaults["config"]),
        hparams=ppo.PPOHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    if args.task_idea != "family":
        if trial_wrapper(env) is None or not hasattr(env_params, "probs"):
            raise ValueError(f"--task-idea {args.task_idea} draws bandit arms; {args.env} has none")
        env = with_task_distribution(env, TASK_IDEAS[args.task_idea])
    agent = rl2.make(args.config, env, env_params)
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
            metadata={"task_idea": args.task_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    print(
        f"rl2 ({args.task_idea} tasks) on {args.env}: {args.num_seeds} seeds x "
        f"{summary['env_steps']:,} steps, {summary['env_steps_per_second']:,} steps/s; trial "
        f"return {summary['eval_return_mean']:.3f} (per seed: "
        + ", ".join(f"{r:.3f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    if "adaptation" in summary:
        print(adaptation_table(summary["adaptation"]))
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
