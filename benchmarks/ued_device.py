"""UED on the 13 x 13 maze (GPU): the parts `ued-maze*` of `benchmarks/device.sh`.

Our DR, Robust PLR, ACCEL and PAIRED (`rlsuite.agents.ued`) at jaxued's maze configuration:
the tuned entry `("ued", "maze")` on `envs.make("maze")` (13 x 13, up to 25 walls, horizon 250),
that is `UEDConfig`'s and `UEDHparams`' defaults (jaxued's `examples/maze_plr.py`): 32 levels x
256 steps per update, an LSTM of 256, 5 epochs of 1 minibatch, lr 1e-4, gamma 0.995, lambda
0.98, entropy 1e-3; MaxMC scores, replay probability 0.8, rank temperature 0.3, staleness 0.3, a
buffer of 4,000 levels; ACCEL: 5 edits; PAIRED: the editor of 25 walls (`maze/editor`'s 13 x
13), one PPO configuration for protagonist, antagonist and adversary. Each method trains
`--seeds` seeds vmapped in one program for
`--budget-seconds` of training (compilation excluded and timed apart), in jitted chunks of
`--updates-per-chunk` updates. At the start, every `--eval-every-seconds` of training and at the
end, each seed's policy plays the eight held-out mazes (`env.levels().held_out()`: SixteenRooms,
SixteenRooms2, Labyrinth, LabyrinthFlipped, Labyrinth2, StandardMaze, StandardMaze2,
StandardMaze3) `--eval-attempts` times (jaxued's 10) with sampled actions, at most 250 steps
(`driver.evaluate_levels_batch`); solve rate: the share of returns > 0. The tables give, per
method, the solve rate (mean and per maze) against env steps per seed, and env steps per second
(the student's; PAIRED's antagonist and adversary step besides). With `--jaxued-updates N`,
after each method jaxued 0.0.1's example script for it (`maze_dr.py`, `maze_plr.py`,
`maze_paired.py`, fetched into `--jaxued-dir` as benchmarks/README.md says, run as
benchmarks/ued.py runs them) trains one seed for N updates at the same sizes on the same
device, for its student env steps/s beside ours ("ours / jaxued": all our seeds together
against its one).

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
METHODS = ("dr", "robust_plr", "accel", "paired")  # the default
CURRICULA = ("dr", "plr", "robust_plr", "accel", "paired")
JAXUED_SCRIPT = {
    "dr": "maze_dr.py",
    "plr": "maze_plr.py",
    "robust_plr": "maze_plr.py",
    "accel": "maze_plr.py",
    "paired": "maze_paired.py",
}
MAZE = {"height": 13, "width": 13, "n_walls": 25, "max_steps": EVAL_MAX_STEPS}  # maze's defaults
JAXUED_EVAL_LEVELS = ("SixteenRooms",)  # one prefab: its own evaluation is not what is timed


@dataclasses.dataclass
class Args:
    """Flags of the UED maze device benchmark."""

    methods: list[str] = dataclasses.field(default_factory=lambda: list(METHODS))
    """curricula to train, one after another (dr, plr, robust_plr, accel, paired)"""
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
    ours: bool = True
    """train our curricula (`--no-ours`: only jaxued's side, with --jaxued-updates)"""
    jaxued_updates: int = 0
    """after each of our methods, jaxued 0.0.1's example script for it (maze_dr.py,
    maze_plr.py, maze_paired.py, from --jaxued-dir) trains one seed for this many updates at
    the same sizes, in 2 jitted calls, for its env steps/s (compile-free: the second call);
    0 skips it"""
    jaxued_dir: Path = Path("benchmarks/_anchors/jaxued")
    """folder of jaxued's example scripts (benchmarks/README.md says how to fetch them)"""
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


def jaxued_side(args: Args, method: str, save, result: dict) -> None:
    """jaxued's script for `method`, one seed, `args.jaxued_updates` updates at our sizes (the
    module docstring of benchmarks/ued.py says how it is run unmodified): its env steps/s from
    the compile-free second half, in `result["jaxued"]`."""
    import ued as side  # benchmarks/ued.py: the shims and config builders of jaxued's examples

    agent, hparams, _, _ = build(args, method)
    module = side.load_example(args.jaxued_dir, JAXUED_SCRIPT[method], args.recurrent_size, MAZE)
    updates, chunks = args.jaxued_updates, 2
    if method == "paired":
        config = side.jaxued_paired_config(agent, hparams, updates, chunks, JAXUED_EVAL_LEVELS)
        steps_per_update = 2 * args.num_envs * args.num_steps  # protagonist and antagonist
    else:
        config = side.jaxued_config(
            method, agent, hparams, updates, chunks, MAZE["n_walls"], JAXUED_EVAL_LEVELS
        )
        steps_per_update = args.num_envs * args.num_steps
    config["seed"] = args.seed
    run = side.jaxued_run(module, config, timeout=600)
    student_steps = updates * args.num_envs * args.num_steps
    result["jaxued"] = {
        "script": JAXUED_SCRIPT[method],
        "updates": updates,
        "wall_s": run["wall_s"],
        "steady_s": run["steady_s"],
        "steady_from": run["steady_from"],
        "env_steps_per_second": updates * steps_per_update / run["steady_s"],
        "student_env_steps_per_second": student_steps / run["steady_s"],
    }
    progress(
        f"jaxued {JAXUED_SCRIPT[method]} ({method}): {updates} updates, "
        f"{result['jaxued']['student_env_steps_per_second']:,.0f} student env steps/s"
    )
    save(result)


def merge(*datas: dict) -> dict:
    """The JSON of several runs of this script (device.sh's UED parts) as one: per method, our
    curve from the run that trained it and jaxued's figures from the run that measured them."""
    methods: dict[str, dict] = {}
    for data in datas:
        for r in data.get("methods", []):
            entry = methods.setdefault(r["method"], {})
            entry.update({k: v for k, v in r.items() if v or k not in entry})
    return {"methods": list(methods.values())}


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
        if body:
            out.append((f"{r['method']}: held-out mazes, solve rate", header, body))
        last = r["curve"][-1] if r["curve"] else None
        summary.append(
            [
                r["method"],
                fmt(r.get("env_steps_per_seed"), ",d"),
                fmt(r.get("env_steps_per_second"), ",.0f"),
                fmt(r["compile_seconds"].get("train_chunk")),
                fmt(last and last["solve_rate_mean"], ".3f"),
                " ".join(f"{x:.2f}" for x in last["solve_rate_per_seed"]) if last else "-",
                fmt(r.get("jaxued", {}).get("student_env_steps_per_second"), ",.0f"),
                fmt(
                    r.get("jaxued")
                    and r.get("env_steps_per_second")
                    and r["env_steps_per_second"] / r["jaxued"]["student_env_steps_per_second"],
                    ".2f",
                ),
            ]
        )
    header = ["method", "env steps/seed", "env steps/s (all seeds)", "compile (s)"]
    header += ["solve rate, last", "per seed", "jaxued env steps/s (1 seed)", "ours / jaxued"]
    out.append(("UED maze 13 x 13: summary", header, summary))
    return out


def main(args: Args) -> int:
    check_args(args, may_be_zero=("jaxued_updates",), choices={"methods": CURRICULA})
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

    if args.jaxued_updates > 0:
        import ued as side

        jax.monitoring.register_event_duration_secs_listener(side._record_compile)
    if not (args.ours or args.jaxued_updates > 0):
        raise ValueError("--no-ours needs --jaxued-updates > 0: nothing would run")
    for method in args.methods:
        if args.ours:
            result = train(args, method, save)
        else:
            result = {"method": method, "held_out": [], "curve": [], "compile_seconds": {}}
        if args.jaxued_updates > 0:
            jaxued_side(args, method, save, result)
    console = Console(width=200)
    for title, header, body in tables(data):
        print_table(console, title, header, body)
        print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
