"""RARL beside PPO: returns over a grid of test-time physics, at equal protagonist env steps.

Both sides train on `--env` (pendulum by default) at the suite's tuned PPO entry for it, from the
same `--seeds` keys, vmapped:

- RARL: `rarl.make(RARLConfig(**tuned, disturbance_bound=B), env)`: the protagonist and an
  adversary applying a torque of at most B (`--disturbance-bound`), in alternation, zero-sum;
  `total_timesteps` counts the protagonist's env steps (the adversary's phases take as many
  again);
- PPO: `ppo.make(PPOConfig(**tuned), env)`, no adversary.

Then every seed's policy (deterministic, no adversary) plays `--attempts` episodes on each cell
of a grid of physics params: each of `--fields` (pendulum: `mass` and `length`; it has no
friction) scaled by each of `--scales` (0.5x to 2x), every combination one cell
(`driver.evaluate_levels_batch`, the cells as levels). Reported per side, over seeds: the worst
cell's return and the mean over cells (each seed's, then the mean across seeds with a 95%
bootstrap interval), the nominal cell, and RARL minus PPO with the paired bootstrap interval (a
seed's two runs share their key). Also each side's train seconds, and the largest disturbance
RARL applied (`rarl/disturbance_max`, against the bound).

    python benchmarks/rarl.py                          # pendulum, 5 seeds, 1M steps, bound 0.25
    python benchmarks/rarl.py --seeds 2 --total-timesteps 100000 --disturbance-bound 0.5
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np
import tyro

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402
from report import check_args, fmt, progress  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import ppo, rarl  # noqa: E402
from rlsuite.app.tuned import tuned  # noqa: E402
from rlsuite.environment.adversarial import physics_grid  # noqa: E402
from rlsuite.loop import driver  # noqa: E402


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    env: str = "pendulum"
    """environment with a disturbance channel, at its tuned PPO entry"""
    seeds: int = 5
    """seeds per side, vmapped"""
    total_timesteps: int | None = None
    """protagonist env steps per seed (None: the tuned entry's)"""
    disturbance_bound: float = 0.25
    """RARL's bound on the adversary's disturbance (0.25: the tuned pendulum entry's)"""
    fields: list[str] = dataclasses.field(default_factory=lambda: ["mass", "length"])
    """physics params of the grid, each scaled by every --scales"""
    scales: list[float] = dataclasses.field(default_factory=lambda: [0.5, 0.71, 1.0, 1.41, 2.0])
    """factors on each field"""
    attempts: int = 10
    """evaluation episodes per seed and cell"""
    out: Path = Path("benchmarks/results/rarl.json")
    """where to write the JSON results"""


def run_side(label, agent, hp, keys, key_eval, cells, params, args) -> dict:
    train, _ = side_by_side.ours_vmapped(agent, hp, agent.config.num_updates)
    compiled, compile_s = side_by_side.timed_compile(jax.jit(train), keys)
    train_s, (states, metrics) = side_by_side.timed(compiled, keys)
    progress(f"{label}: compiled in {compile_s:.1f}s, trained in {train_s:.1f}s")
    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4))
    returns = np.asarray(evaluate(agent, states, key_eval, params, args.attempts).returns)
    per_cell = returns.mean(axis=2)  # [seeds, cells]
    nominal = cells.index(tuple(1.0 for _ in args.fields))
    side = {
        "compile_s": compile_s,
        "train_s": train_s,
        "per_seed_per_cell": per_cell.tolist(),
        "worst": side_by_side.mean_interval(per_cell.min(axis=1)),
        "mean_over_cells": side_by_side.mean_interval(per_cell.mean(axis=1)),
        "nominal": side_by_side.mean_interval(per_cell[:, nominal]),
    }
    if "rarl/disturbance_max" in metrics:
        side["disturbance_max"] = float(np.asarray(metrics["rarl/disturbance_max"]).max())
    return side


def main(args: Args) -> dict:
    check_args(args)
    if 1.0 not in args.scales:
        raise ValueError(f"--scales must hold 1.0 (the nominal physics), got {args.scales}")
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    env, params = envs.make(args.env)
    entry = tuned("ppo", args.env)
    config = dict(entry["config"])
    if args.total_timesteps is not None:
        config["total_timesteps"] = args.total_timesteps
    hp = ppo.PPOHparams(**entry["hparams"])
    bound = args.disturbance_bound
    agents = {
        "rarl": rarl.make(rarl.RARLConfig(**config, disturbance_bound=bound), env, params),
        "ppo": ppo.make(ppo.PPOConfig(**config), env, params),
    }
    cells, cell_params = physics_grid(params, args.fields, args.scales)
    keys, key_eval = side_by_side.keys_for(args.seed, args.seeds)
    row = {"env": args.env, "seeds": args.seeds, "cells": cells, "fields": args.fields}
    for label, agent in agents.items():
        row[label] = run_side(label, agent, hp, keys, key_eval, cells, cell_params, args)
        row["env_steps_per_seed"] = agent.config.num_updates * agent.env_steps_per_update
    for stat in ("worst", "mean_over_cells", "nominal"):
        ours = np.asarray(row["rarl"]["per_seed_per_cell"])
        theirs = np.asarray(row["ppo"]["per_seed_per_cell"])
        reduce = {"worst": np.min, "mean_over_cells": np.mean}.get(stat)
        if reduce is None:
            index = cells.index(tuple(1.0 for _ in args.fields))
            difference = ours[:, index] - theirs[:, index]
        else:
            difference = reduce(ours, axis=1) - reduce(theirs, axis=1)
        row[f"difference_{stat}"] = side_by_side.mean_interval(difference)
    result = side_by_side.write_result(args, machine, {}, start, {"rows": [row]})
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each side's returns over the physics grid and the paired
    differences, from the JSON `main` writes (`benchmarks/tables.py` renders it on the RARL
    page)."""
    args, row = result["args"], result["rows"][0]
    cells = row["cells"]

    def cell(x):
        return f"{x['mean']:.1f} [{x['ci'][0]:.1f}, {x['ci'][1]:.1f}]"

    header = ["side", "worst cell", "mean over cells", "nominal", "train s", "largest disturbance"]
    body = []
    for label in ("rarl", "ppo"):
        s = row[label]
        body.append(
            [
                label,
                cell(s["worst"]),
                cell(s["mean_over_cells"]),
                cell(s["nominal"]),
                fmt(s["train_s"]),
                fmt(s.get("disturbance_max"), ".3f"),
            ]
        )
    body.append(
        [
            "RARL - PPO (paired)",
            cell(row["difference_worst"]),
            cell(row["difference_mean_over_cells"]),
            cell(row["difference_nominal"]),
            "",
            "",
        ]
    )
    title = (
        f"RARL (disturbance bound {args['disturbance_bound']}) beside PPO on {args['env']}, "
        f"{row['env_steps_per_seed']:,} protagonist env steps x {args['seeds']} seeds; returns "
        f"over {len(cells)} cells ({' x '.join(args['fields'])} scaled by {args['scales']}), "
        f"{args['attempts']} episodes each"
    )
    return [(title, header, body)]


if __name__ == "__main__":
    main(tyro.cli(Args))
