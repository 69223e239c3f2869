"""`rlsuite eval RUN`: evaluate a run's saved policies again (every seed, or every run of a sweep
or population), with the summary its environment gives (episodes, goal success, adaptation
within trials, held-out levels).

    rlsuite eval runs/demo --episodes 100
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import jax
import numpy as np
import tyro

from rlsuite.app import runs
from rlsuite.app.errors import UsageError


@dataclasses.dataclass
class EvalArgs:
    run: tyro.conf.Positional[str]
    """run directory written by `rlsuite train`"""
    episodes: int = 100
    """evaluation episodes per seed (trials, for a task family)"""
    seed: int = 0
    """evaluation seed"""
    stochastic: bool = False
    """sample actions instead of taking the policy's mode"""


def main(argv: list[str]) -> dict:
    from rlsuite.loop.runner import eval_summary, evaluate_policies

    args = tyro.cli(EvalArgs, args=argv, prog="rlsuite eval")
    if args.episodes < 1:
        raise UsageError("--episodes must be >= 1")
    out = pathlib.Path(args.run)
    record = runs.read_record(out)
    built = runs.build(record)
    states, meta = runs.restore(out, record, built)
    seeds = None if record.batch is None else record.batch.seeds_per_config
    returns, trials = evaluate_policies(
        built.agent, states, jax.random.key(args.seed), args.episodes, not args.stochastic, seeds
    )
    summary = {
        "run": str(out),
        "env_steps": meta["env_steps"],
        "episodes": args.episodes,
        **eval_summary(returns, runs.reference_returns(built.data)),
        **trials,
    }
    print(json.dumps(summary, indent=2))
    if "adaptation" in trials:
        print(adaptation_table(trials["adaptation"]))
    if "held_out" in trials:
        print(solve_rate_table(trials["held_out"]["names"], trials["held_out"]["returns"]))
    return summary


def adaptation_table(adaptation: dict) -> str:
    """The adaptation curve as lines of text: per episode index of the trial, the mean return
    and its 95% interval across seeds."""
    lines = ["adaptation: mean return per episode of a trial (95% bootstrap interval, seeds)"]
    rows = zip(
        adaptation["episode_return_mean"],
        adaptation["episode_return_low"],
        adaptation["episode_return_high"],
        strict=True,
    )
    for i, (mean, low, high) in enumerate(rows, start=1):
        lines.append(f"  episode {i:>3}: {mean:9.3f}  [{low:.3f}, {high:.3f}]")
    return "\n".join(lines)


def solve_rate_table(names, returns) -> str:
    """A markdown table of held-out levels: per level its name, solve rate (the share of
    attempts with a return above 0), mean return and number of attempts, then a `mean` row
    (the means over the levels, the attempts summed).

    `returns` is `[num_levels, attempts]` (`rlsuite.loop.evaluation.evaluate_levels`) or
    `[num_runs, num_levels, attempts]` (`evaluate_levels_batch`), whose runs' attempts are
    pooled; `names` has one name per level.
    """
    values = np.asarray(returns, dtype=np.float64)
    names = list(names)
    if values.ndim == 3:
        values = np.moveaxis(values, 1, 0).reshape(values.shape[1], -1)
    if values.ndim != 2 or values.shape[0] != len(names) or values.shape[1] == 0:
        raise ValueError(
            f"solve_rate_table: returns must be [num_levels, attempts] or [num_runs, "
            f"num_levels, attempts] with {len(names)} levels (one per name) and at least one "
            f"attempt, got shape {np.shape(returns)}"
        )
    solved = (values > 0).mean(axis=1)
    means = values.mean(axis=1)
    lines = ["| level | solve rate | mean return | attempts |", "|---|---:|---:|---:|"]
    for name, rate, mean in zip(names, solved, means, strict=True):
        lines.append(f"| {name} | {rate:.2f} | {mean:.3f} | {values.shape[1]} |")
    lines.append(f"| mean | {solved.mean():.2f} | {means.mean():.3f} | {values.size} |")
    return "\n".join(lines)
