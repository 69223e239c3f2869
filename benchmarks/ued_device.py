"""UED on the 13 x 13 maze (GPU): the part `ued-maze` of `benchmarks/device.sh`.

Our DR, Robust PLR and ACCEL (`rlsuite.agents.ued`) at jaxued's maze configuration: the tuned
entry `("ued", "maze")` on `envs.make("maze")` (13 x 13, up to 25 walls, horizon 250), that is
`UEDConfig`'s and `UEDHparams`' defaults (jaxued's `examples/maze_plr.py`): 32 levels x 256 steps
per update, an LSTM of 256, 5 epochs of 1 minibatch, lr 1e-4, gamma 0.995, lambda 0.98, entropy
1e-3; MaxMC scores, replay probability 0.8, rank temperature 0.3, staleness 0.3, a buffer of
4,000 levels; ACCEL: 5 edits. Each method trains `--seeds` seeds vmapped in one program for
`--budget-seconds` of training (compilation excluded and timed apart), in jitted chunks of
`--updates-per-chunk` updates. At the start, every `--eval-every-seconds` of training and at the
end, each seed's policy plays the eight held-out mazes (`env.levels().held_out()`: SixteenRooms,
SixteenRooms2, Labyrinth, LabyrinthFlipped, Labyrinth2, StandardMaze, StandardMaze2,
StandardMaze3) `--eval-attempts` times (jaxued's 10) with sampled actions, at most 250 steps
(`driver.evaluate_levels_batch`); solve rate: the share of returns > 0. The tables give, per
method, the solve rate (mean and per maze) against env steps per seed, and env steps per second.

    python benchmarks/ued_device.py                                   # GPU: about 6 minutes
    python benchmarks/ued_device.py --budget-seconds 10 --num-envs 4 --num-steps 16 \\
        --recurrent-size 16 --buffer-capacity 64 --eval-attempts 1 --seeds 2   # CPU: end to end

Writes JSON to `--out` (default `$OUT/ued_device.json`, or `benchmarks/results/` without `$OUT`)
after every evaluation. The default sizes are jaxued's and have not been measured on a GPU yet.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import jax
import numpy as np
import tyro
from report import check_args, fmt, machine_info, markdown, print_table, progress
from rich.console import Console
from rlsuite.envs.maze import EVAL_MAX_STEPS
from side_by_side import timed_compile

from rlsuite import envs
from rlsuite.agents import ued
from rlsuite.app import tuned
from rlsuite.loop import driver
from rlsuite.loop.agent import config_dict

ENV = "maze"
METHODS = ("dr", "robust_plr", "accel")  # the default
CURRICULA = ("dr", "plr", "robust_plr", "accel")


@dataclasses.dataclass
class Args:
    """Flags of the UED maze device benchmark."""

    methods: list[str] = dataclasses.field(default_factory=lambda: list(METHODS))
    """curricula to train, one after another (dr, plr, robust_plr, accel)"""
    budget_seconds: float = 90.0
    """training wall time per method (compilation and evaluations excluded)"""
    seeds: int = 4
    """seeds vmapped in one program"""
    num_envs: int = 32
    """levels played at once per seed"""
    num_steps: int = 256
    """steps per rollout"""
    recurrent_size: int = 256
    """LSTM units"""
    buffer_capacity: int = 4000
    """levels the PLR buffer holds"""
    updates_per_chunk: int = 10
    """updates per compiled training call (the budget is checked between calls)"""
    eval_every_seconds: float = 30.0
    """training seconds between evaluations"""
    eval_attempts: int = 10
    """sampled attempts per held-out maze and seed"""
    seed: int = 0
    """random seed"""
    out: Path | None = None
    """JSON path (default: $OUT/ued_device.json, or benchmarks/results/ued_device.json)"""


def build(args: Args, method: str):
    """Our agent and hyperparameters for `method`, and the held-out mazes' names and params."""
    entry = tuned.tuned("ued", ENV)
    config = {
        **entry["config"],
        "curriculum": method,
        "num_envs": args.num_envs,
        "num_steps": args.num_steps,
        "recurrent_size": args.recurrent_size,
        "buffer_capacity": args.buffer_capacity,
    }
    env, env_params = envs.make(ENV)
    agent = ued.make(ued.UEDConfig(**config), env, env_params)
    levels = env.levels()
    names, held_out = levels.held_out()
    return agent, ued.UEDHparams(**entry["hparams"]), names, levels.params_for(env_params, held_out)


def train(args: Args, method: str, save) -> dict:
    """One method: train for the budget, evaluating on the way; `save(result so far)` after
    every evaluation."""
    agent, hparams, names, level_params = build(args, method)
    key_init, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(args.seed), 0))
    start = time.perf_counter()
    states = jax.block_until_ready(
        driver.init_batch(agent, jax.random.split(key_init, args.seeds), hparams)
    )
    init_seconds = time.perf_counter() - start
    chunk = jax.jit(driver.run_batch, static_argnums=(0, 3), donate_argnums=(1,))
    chunk, train_compile = timed_compile(chunk, agent, states, hparams, args.updates_per_chunk)
    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5, 6))
    evaluate, eval_compile = timed_compile(
        evaluate, agent, states, key_eval, level_params, args.eval_attempts, False, EVAL_MAX_STEPS
    )
    progress(
        f"{method}: init {init_seconds:.1f} s, compiled training chunk {train_compile:.1f} s, "
        f"evaluation {eval_compile:.1f} s"
    )
    steps_per_chunk = args.updates_per_chunk * agent.env_steps_per_update
    result = {
        "method": method,
        "config": config_dict(agent.config),
        "held_out": list(names),
        "compile_seconds": {"init": init_seconds, "train_chunk": train_compile},
        "curve": [],
    }
    result["compile_seconds"]["evaluation"] = eval_compile

    def evaluation(env_steps: int, seconds: float, train_return) -> None:
        begin = time.perf_counter()
        solved = np.asarray(evaluate(states, key_eval, level_params).returns) > 0  # [S, 8, A]
        point = {
            "env_steps_per_seed": env_steps,
            "train_seconds": seconds,
            "solve_rate_mean": float(solved.mean()),
            "solve_rate_per_maze": solved.mean(axis=(0, 2)).tolist(),
            "solve_rate_per_seed": solved.mean(axis=(1, 2)).tolist(),
            "train_return": train_return,
            "eval_seconds": time.perf_counter() - begin,
        }
        result["curve"].append(point)
        progress(
            f"{method}: {env_steps:>12,} steps/seed {seconds:6.1f} s  solve rate "
            f"{point['solve_rate_mean']:.3f}"
        )
        save(result)

    evaluation(0, 0.0, None)
    env_steps, seconds, last_eval = 0, 0.0, 0.0
    while seconds < args.budget_seconds:
        begin = time.perf_counter()
        states, metrics = chunk(states, hparams)
        returns = np.asarray(metrics["charts/episodic_return"])  # waits for the chunk
        seconds += time.perf_counter() - begin
        env_steps += steps_per_chunk
        if seconds - last_eval >= args.eval_every_seconds or seconds >= args.budget_seconds:
            finished = returns[np.isfinite(returns)]
            evaluation(env_steps, seconds, float(finished.mean()) if finished.size else None)
            last_eval = seconds
    result.update(
        train_seconds=seconds,
        env_steps_per_seed=env_steps,
        env_steps_per_second=env_steps * args.seeds / seconds,
    )
    save(result)
    return result


def tables(data: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per method its curve against env steps, then a summary of all methods, as (title,
    header, rows)."""
    out, summary = [], []
    for r in data.get("methods", []):
        header = ["env steps/seed", "train s", "solve rate (mean)", *r["held_out"]]
        body = [
            [
                fmt(p["env_steps_per_seed"], ",d"),
                fmt(p["train_seconds"]),
                fmt(p["solve_rate_mean"], ".3f"),
                *(fmt(x, ".2f") for x in p["solve_rate_per_maze"]),
            ]
            for p in r["curve"]
        ]
        out.append((f"{r['method']}: held-out mazes, solve rate", header, body))
        last = r["curve"][-1] if r["curve"] else None
        summary.append(
            [
                r["method"],
                fmt(r.get("env_steps_per_seed"), ",d"),
                fmt(r.get("env_steps_per_second"), ",.0f"),
                fmt(r["compile_seconds"]["train_chunk"]),
                fmt(last and last["solve_rate_mean"], ".3f"),
                " ".join(f"{x:.2f}" for x in last["solve_rate_per_seed"]) if last else "-",
            ]
        )
    header = ["method", "env steps/seed", "env steps/s (all seeds)", "compile (s)"]
    header += ["solve rate, last", "per seed"]
    out.append(("UED maze 13 x 13: summary", header, summary))
    return out


def main(args: Args) -> int:
    check_args(args, choices={"methods": CURRICULA})
    for name in ("budget_seconds", "eval_every_seconds"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    out = args.out or Path(os.environ.get("OUT", "benchmarks/results")) / "ued_device.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"args": {k: str(v) for k, v in vars(args).items()}, "machine": machine_info()}
    data["methods"] = []

    def save(result: dict) -> None:
        methods = [m for m in data["methods"] if m["method"] != result["method"]]
        data["methods"] = [*methods, result]
        out.write_text(json.dumps(data, indent=1))

    for method in args.methods:
        train(args, method, save)
    console = Console(width=200)
    for title, header, body in tables(data):
        print_table(console, title, header, body)
        print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
