"""DQN in one file: copy it, change the target or the exploration (or anything else), run it.

    python experiments/dqn.py --env cartpole --num-seeds 4
    python experiments/dqn.py --env cartpole --target-idea expected-sarsa
    python experiments/dqn.py --env acrobot --exploration-idea exponential --n-step 3 --dueling

Every config and hyperparameter field is a flag (`--help`); defaults are the suite's tuned ones for
the environment (`rlsuite.app.tuned`). Seeds are vmapped into one jitted call (and sharded over the
available devices). With `--out`, the run writes checkpoints (replay buffer included), metrics
and `final.json` there; `--resume` with the same flags continues it after a kill.
"""

import dataclasses
import sys
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import dqn
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.tuned import default_env, tuned
from rlsuite.loop import platform, runner
from rlsuite.ops import exploration, losses

SARSA_EPSILON = 0.05  # the behaviour an expected-SARSA target evaluates


def expected_sarsa_target(reward, discount, next_q_target, next_q_online=None):
    """An idea to try: bootstrap from the value of an epsilon-greedy policy (epsilon 0.05,
    greedy with respect to the online network where there is one) instead of its greedy
    action: `y = r + discount * ((1 - e) Q'(s', a*) + e mean_a Q'(s', a))`."""
    selector = next_q_target if next_q_online is None else next_q_online
    best = jnp.take_along_axis(next_q_target, jnp.argmax(selector, -1)[..., None], -1)[..., 0]
    value = (1 - SARSA_EPSILON) * best + SARSA_EPSILON * next_q_target.mean(axis=-1)
    return jax.lax.stop_gradient(reward + discount * value)


def exponential_epsilon(env_steps, hp, total_timesteps):
    """An idea to try: epsilon falls exponentially, `end + (start - end) exp(-5 t / T)` with T
    the schedule's duration (`exploration_fraction * total_timesteps`): fast at first, then
    slowly, where the linear schedule falls evenly."""
    end = jnp.asarray(hp.end_e, jnp.float32)
    if env_steps is None:
        return end
    duration = jnp.maximum(hp.exploration_fraction * total_timesteps, 1.0)
    decay = jnp.exp(-5.0 * jnp.asarray(env_steps, jnp.float32) / duration)
    return end + (hp.start_e - end) * decay


TARGETS = {"q-learning": losses.q_learning_target, "expected-sarsa": expected_sarsa_target}
EXPLORATIONS = {"linear": exploration.linear_epsilon, "exponential": exponential_epsilon}


@dataclasses.dataclass
class Args:
    config: Annotated[dqn.DQNConfig, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[dqn.DQNHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment name (`envs.names()`); it needs a discrete action space"""
    num_seeds: int = 4
    """independent runs, vmapped"""
    seed: int = 0
    """seed of the batch of runs"""
    target_idea: Literal["q-learning", "expected-sarsa"] = "q-learning"
    """TD target: the library's (double-Q with --double), or the idea defined in this file"""
    exploration_idea: Literal["linear", "exponential"] = "linear"
    """epsilon schedule: CleanRL's linear one, or the idea defined in this file"""
    out: str | None = None
    """run directory for checkpoints, metrics and final.json (none: keep nothing)"""
    resume: bool = False
    """continue the run in --out from its last checkpoint (give the same flags)"""
    eval_episodes: int = 10
    """evaluation episodes per seed at the end"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("dqn"))
    defaults = tuned("dqn", env_name)
    default = Args(
        config=dqn.DQNConfig(**defaults["config"]),
        hparams=dqn.DQNHparams(**defaults["hparams"]),
        env=env_name,
    )
    args = tyro.cli(Args, args=argv, default=default)
    if args.num_seeds < 1:
        raise ValueError(f"--num-seeds must be >= 1, got {args.num_seeds}")
    env, env_params = envs.make(args.env)
    target, explore = TARGETS[args.target_idea], EXPLORATIONS[args.exploration_idea]
    agent = dqn.make(args.config, env, env_params, target=target, epsilon=explore)
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
            metadata={"target_idea": args.target_idea, "exploration_idea": args.exploration_idea},
        ),
        final=runner.Final(eval_episodes=args.eval_episodes),
    )
    summary = result.summary
    q_mean = np.nanmean(result.metrics["losses/q_mean"][:, -100:])
    print(
        f"dqn ({args.target_idea}, {args.exploration_idea} exploration) on {args.env}: "
        f"{args.num_seeds} seeds x {summary['env_steps']:,} steps, "
        f"{summary['env_steps_per_second']:,} steps/s; mean Q over the last 100 updates "
        f"{q_mean:.1f}; evaluation return {summary['eval_return_mean']:.1f} (per seed: "
        + ", ".join(f"{r:.1f}" for r in summary["eval_return_per_seed"])
        + ")"
    )
    return summary


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
