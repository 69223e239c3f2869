"""Run a random policy on a vmapped batch of environments on the accelerator and print throughput.

    python experiments/random_rollout.py --env cartpole --num-envs 1024 --num-steps 1000

A first look at an environment: its spaces, its episode returns under a random policy, and how many
environment steps per second one jitted `lax.scan` over a vmapped batch reaches on this machine.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import tyro

from rlsuite import envs
from rlsuite.app.errors import run_script
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import EpisodeStatistics
from rlsuite.loop.rollout import reset_batch, rollout


@dataclasses.dataclass
class Args:
    env: str = "cartpole"
    """environment name (`envs.names()`), e.g. cartpole, pendulum, brax/ant, gymnax/CartPole-v1"""
    num_envs: int = 1024
    """environments stepped side by side (vmapped)"""
    num_steps: int = 1000
    """steps per environment in the timed rollout"""
    seed: int = 0
    """seed of the run"""


def main(args: Args) -> dict:
    if args.num_envs < 1 or args.num_steps < 1:
        raise ValueError(
            f"num_envs and num_steps must be >= 1, got {args.num_envs}, {args.num_steps}"
        )
    env, params = envs.make(args.env)
    env = EpisodeStatistics(env)
    space = env.action_space(params)
    print(f"env {args.env}: observations {env.observation_space(params)}, actions {space}")

    def policy(key, obs):
        keys = jax.random.split(key, obs.shape[0])
        action = jax.vmap(space.sample)(keys)
        return action, {}

    @jax.jit
    def run(key):
        key_reset, key_run = jax.random.split(key)
        batch = reset_batch(env, params, key_reset, args.num_envs)
        _, transitions = rollout(env, params, policy, key_run, batch, args.num_steps)
        done = transitions.info["episode_done"]
        episodes = done.sum()
        mean_return = (transitions.info["episode_return"] * done).sum() / jnp.maximum(episodes, 1)
        return episodes, mean_return

    key = jax.random.key(args.seed)
    start = time.perf_counter()
    jax.block_until_ready(run(key))
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    episodes, mean_return = jax.block_until_ready(run(key))
    seconds = time.perf_counter() - start
    steps = args.num_envs * args.num_steps
    result = {
        "env": args.env,
        "device": str(jax.devices()[0]),
        "num_envs": args.num_envs,
        "env_steps": steps,
        "compile_seconds": round(compile_seconds, 3),
        "seconds": round(seconds, 3),
        "env_steps_per_second": round(steps / seconds),
        "episodes_finished": int(episodes),
        "random_policy_mean_return": float(mean_return),
    }
    kind = "discrete" if isinstance(space, Discrete) else "continuous"
    print(
        f"{steps:,} env steps ({kind} actions) on {result['device']} in {seconds:.3f} s "
        f"(+{compile_seconds:.1f} s compile): {result['env_steps_per_second']:,} steps/s; "
        f"{int(episodes):,} episodes finished, mean random-policy return {float(mean_return):.2f}"
    )
    return result


if __name__ == "__main__":
    run_script(main, tyro.cli(Args))  # bad input: one line, exit status 2
