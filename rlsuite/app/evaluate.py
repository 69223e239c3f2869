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
    from rlsuite.loop.evaluator import eval_summary, evaluate_policies

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
    text = built.agent.env.evaluation.describe(trials)  # what the environment's evaluation adds
    if text is not None:
        print(text)
    return summary
