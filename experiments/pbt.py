"""Population-based training against a random search of the same budget, over independent seeds.

    python experiments/pbt.py --out pbt_vs_random.json

Both arms train `--seeds` independent populations of `--population` PPO members on CartPole for
the same environment steps, from the same initial draws of the learning rate and entropy
coefficient and the same keys (`rlsuite pbt` with and without `--no-exploit`): the random search
keeps each member's draw for the whole run, PBT lets the bottom quarter copy and perturb the top
quarter after every chunk. Each arm's result for a seed is its best member by the last chunk's
training return (not by the evaluation), evaluated greedily; the script prints both, the paired
difference per seed and a 95% percentile bootstrap interval of its mean.

The task: PPO on CartPole with the learning rate held constant (`--no-anneal-lr`). CleanRL's and
PureJaxRL's PPO anneal it to 0 on CartPole because a rate that learns quickly early keeps making
large updates once the policy balances, and the return collapses and recovers; a small constant
rate is stable but slow. A schedule (large, then small) does both, and PBT can find one inside a
run (its lineage lowers the rate over time), which no single fixed draw of a random search can.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import tyro

from rlsuite.app import pbt as populations
from rlsuite.app.argv import read
from rlsuite.app.errors import run_script
from rlsuite.loop import files, platform
from rlsuite.ops.bootstrap import bootstrap_ci


@dataclasses.dataclass
class Args:
    env: str = "cartpole"
    """environment (`envs.names()`)"""
    seeds: int = 5
    """independent populations per arm (the experiment's seeds)"""
    population: int = 8
    """members per population"""
    total_timesteps: int = 200_000
    """environment steps per member"""
    chunks: int = 20
    """chunks per run: PBT exploits after each but the last"""
    grid: tuple[str, ...] = ("learning_rate=log:1e-4:3e-2", "ent_coef=0:0.02")
    """the hyperparameters drawn, and PBT's ranges"""
    eval_episodes: int = 20
    """greedy evaluation episodes per member"""
    seed: int = 0
    """the draws' and keys' seed"""
    runs: pathlib.Path = pathlib.Path("runs/pbt_vs_random")
    """directory for the two arms' run directories (must not hold them)"""
    out: pathlib.Path | None = None
    """optional JSON file for the results (an existing file is not replaced)"""


def arm(args: Args, name: str, exploit: bool) -> dict:
    argv = ["ppo", "--env", args.env, "--population", str(args.population)]
    argv += ["--num-seeds", str(args.seeds), "--grid", *args.grid, "--no-anneal-lr"]
    argv += ["--total-timesteps", str(args.total_timesteps), "--chunks", str(args.chunks)]
    argv += ["--eval-episodes", str(args.eval_episodes), "--seed", str(args.seed)]
    argv += ["--out", str(args.runs / name), "--no-progress"]
    if not exploit:
        argv.append("--no-exploit")
    populations.main(read(argv))  # the command line read once, as `rlsuite pbt` reads it
    return json.loads((args.runs / name / "pbt.json").read_text())


def main(args: Args) -> dict:
    if args.seeds < 2 or args.population < 2:
        raise ValueError("--seeds and --population must be >= 2")
    for name in ("pbt", "random"):
        if (args.runs / name).exists():
            raise FileExistsError(f"{args.runs / name} exists; choose another --runs")
    if args.out is not None:
        files.check_new_file(args.out)
    platform.use_cpu_cores()  # the members split over the CPU cores (before anything runs)
    pbt, random = arm(args, "pbt", True), arm(args, "random", False)
    best = {
        arm_name: np.asarray([p["best_eval_return"] for p in table["populations"]])
        for arm_name, table in (("pbt", pbt), ("random", random))
    }
    difference = best["pbt"] - best["random"]
    low, high = bootstrap_ci(difference[:, None], num_resamples=10_000)
    results = {
        "args": {k: str(v) for k, v in dataclasses.asdict(args).items()},
        "pbt_best_per_seed": best["pbt"].tolist(),
        "random_best_per_seed": best["random"].tolist(),
        "difference_per_seed": difference.tolist(),
        "difference_mean": float(difference.mean()),
        "difference_95ci": [float(low[0]), float(high[0])],
        "pbt_final_hparams": [p["best_hparams"] for p in pbt["populations"]],
        "random_best_hparams": [p["best_hparams"] for p in random["populations"]],
    }
    print("seed  PBT best  random best  difference")
    for s in range(args.seeds):
        print(f"{s:>4}  {best['pbt'][s]:8.1f}  {best['random'][s]:11.1f}  {difference[s]:10.1f}")
    print(
        f"mean difference (PBT - random search) {difference.mean():.1f}, "
        f"95% bootstrap interval [{low[0]:.1f}, {high[0]:.1f}] over {args.seeds} seeds"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    cli_args = tyro.cli(Args)
    run_script(main, cli_args)
