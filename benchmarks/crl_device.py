"""Contrastive RL on the MJX ant (GPU): the part `crl-ant` of `benchmarks/device.sh`.

CRL (`rlsuite.agents.crl`) on `goal/ant` (brax's ant on MJX, a goal on the circle of radius 10,
torso x-y as the achieved goal, threshold 0.5, 1,000-step episodes) at the configuration of the
issue's GPU check, JaxGCRL's: 1,024 envs, batch 256, one gradient step per 16 env steps
(`gradient_steps` = 64 per collection of 1,024), symmetric InfoNCE, `norm` energy, 2 x 256
encoders, representation 64. It trains `--seeds` seeds vmapped until `--env-steps` env steps per
seed or `--budget-seconds` of wall time, whichever comes first, the wall time counted from the
start of the process (compilation included: the goal is 10 million env steps within 600 s,
JaxGCRL's "10 million environment steps in 10 minutes on a single GPU"), in jitted chunks of
`--updates-per-chunk` updates. At the end (and every `--eval-every-chunks` chunks) each seed's
greedy policy plays `--eval-episodes` episodes: success_any (the share with a success step) and
time near the goal (steps within the threshold, of 1,000).

    python benchmarks/crl_device.py                                     # GPU: at most 10 minutes
    python benchmarks/crl_device.py --env-steps 4096 --num-envs 8 --batch-size 16 \\
        --gradient-steps 1 --buffer-size 16384 --learning-starts 256 --updates-per-chunk 8 \\
        --eval-episodes 2 --max-eval-steps 50                          # CPU: runs end to end

Writes JSON to `--out` (default `$OUT/crl_device.json`, or `benchmarks/results/` without `$OUT`)
after every evaluation. The default sizes have not been measured on a GPU yet.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

START = time.perf_counter()  # the budget counts from here: imports and compilation included

import jax  # noqa: E402
import numpy as np  # noqa: E402
import tyro  # noqa: E402
from report import check_args, fmt, machine_info, markdown, print_table, progress  # noqa: E402
from rich.console import Console  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import crl  # noqa: E402
from rlsuite.environment.evaluations import goal_summary  # noqa: E402
from rlsuite.loop import driver  # noqa: E402
from rlsuite.loop.agent import config_dict  # noqa: E402


@dataclasses.dataclass
class Args:
    """Flags of the CRL ant device benchmark."""

    env: str = "goal/ant"
    """goal environment"""
    env_steps: int = 10_000_000
    """env steps per seed to train for (the goal: all of them within --budget-seconds)"""
    budget_seconds: float = 600.0
    """wall time from the start of the process (compilation included) after which training stops"""
    seeds: int = 1
    """seeds vmapped in one program"""
    num_envs: int = 1024
    """parallel environments per seed"""
    batch_size: int = 256
    """pairs per gradient step (each the others' negatives)"""
    gradient_steps: int = 64
    """gradient steps per collection of num_envs env steps (64 of 1,024: 1:16)"""
    buffer_size: int = 1_024_000
    """replay transitions per seed (1,000 steps of each env)"""
    learning_starts: int = 102_400
    """env steps of random actions first"""
    contrastive_loss: str = "symmetric"
    """forward, backward, symmetric or binary"""
    energy: str = "norm"
    """norm, l2sq, dot or cosine"""
    updates_per_chunk: int = 100
    """updates per compiled training call (the budget is checked between calls)"""
    eval_every_chunks: int = 0
    """chunks between evaluations (0: only at the end)"""
    eval_episodes: int = 64
    """greedy evaluation episodes per seed"""
    max_eval_steps: int = 1000
    """steps per evaluation episode at most"""
    seed: int = 0
    """random seed"""
    out: Path | None = None
    """JSON path (default: $OUT/crl_device.json, or benchmarks/results/crl_device.json)"""


def build(args: Args):
    env, env_params = envs.make(args.env)
    config = crl.CRLConfig(
        num_envs=args.num_envs,
        batch_size=args.batch_size,
        gradient_steps=args.gradient_steps,
        buffer_size=args.buffer_size,
        learning_starts=args.learning_starts,
        total_timesteps=args.env_steps,
        contrastive_loss=args.contrastive_loss,
        energy=args.energy,
    )
    return crl.make(config, env, env_params), crl.CRLHparams()


def main(args: Args) -> int:
    check_args(args, may_be_zero=("eval_every_chunks",))
    if not args.budget_seconds > 0:
        raise ValueError(f"--budget-seconds must be > 0, got {args.budget_seconds}")
    out = args.out or Path(os.environ.get("OUT", "benchmarks/results")) / "crl_device.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    agent, hp = build(args)
    steps_per_chunk = args.updates_per_chunk * agent.env_steps_per_update
    data = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": machine_info(),
        "config": config_dict(agent.config),
        "curve": [],
    }
    key_init, key_eval = jax.random.split(jax.random.key(args.seed))
    states = driver.init_batch(agent, jax.random.split(key_init, args.seeds), hp)
    chunk = jax.jit(driver.run_batch, static_argnums=(0, 3), donate_argnums=(1,))
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4, 5, 6))

    def evaluation(env_steps: int) -> None:
        begin = time.perf_counter()
        result = evaluate(
            agent, states, key_eval, args.eval_episodes, True, args.max_eval_steps, ("success",)
        )
        summary = goal_summary(np.asarray(result.sums["success"]))
        point = {
            "env_steps_per_seed": env_steps,
            "wall_seconds": time.perf_counter() - START,
            "eval_seconds": time.perf_counter() - begin,
            **summary,
        }
        data["curve"].append(point)
        progress(
            f"{env_steps:>12,} steps/seed at {point['wall_seconds']:6.1f} s: success_any "
            f"{summary['eval_success_any_mean']:.3f}, time near goal "
            f"{summary['eval_time_near_goal_mean']:.1f}"
        )
        out.write_text(json.dumps(data, indent=1))

    env_steps, chunks, train_seconds = 0, 0, 0.0
    first_chunk = None
    while env_steps < args.env_steps and time.perf_counter() - START < args.budget_seconds:
        begin = time.perf_counter()
        states, metrics = chunk(agent, states, hp, args.updates_per_chunk)
        jax.block_until_ready(metrics)
        seconds = time.perf_counter() - begin
        first_chunk = seconds if first_chunk is None else first_chunk
        train_seconds += seconds
        env_steps += steps_per_chunk
        chunks += 1
        if args.eval_every_chunks and chunks % args.eval_every_chunks == 0:
            evaluation(env_steps)
    wall_train = time.perf_counter() - START
    if not data["curve"] or data["curve"][-1]["env_steps_per_seed"] != env_steps:
        evaluation(env_steps)
    steady = (train_seconds - first_chunk) / max(chunks - 1, 1) if chunks > 1 else None
    data.update(
        env_steps_per_seed=env_steps,
        reached=env_steps >= args.env_steps,
        wall_seconds_to_end_of_training=wall_train,
        first_chunk_seconds=first_chunk,
        env_steps_per_second_after_first_chunk=(
            steps_per_chunk * args.seeds / steady if steady else None
        ),
    )
    out.write_text(json.dumps(data, indent=1))
    console = Console(width=200)
    title, header, body = table(data)
    print_table(console, title, header, body)
    print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    print(f"wrote {out}")
    return 0


def table(data: dict) -> tuple[str, list[str], list[list[str]]]:
    """The run's curve and its end, as (title, header, rows)."""
    header = ["env steps/seed", "wall s (from start)", "success_any", "time near goal"]
    body = [
        [
            fmt(p["env_steps_per_seed"], ",d"),
            fmt(p["wall_seconds"]),
            fmt(p["eval_success_any_mean"], ".3f"),
            fmt(p["eval_time_near_goal_mean"], ".1f"),
        ]
        for p in data.get("curve", [])
    ]
    reached = data.get("reached")
    title = (
        f"CRL on {data['args']['env']}: {data['args']['env_steps']} env steps "
        f"{'reached' if reached else 'not reached'} within the budget; steady env steps/s "
        f"{fmt(data.get('env_steps_per_second_after_first_chunk'), ',.0f')}"
    )
    return title, header, body


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
