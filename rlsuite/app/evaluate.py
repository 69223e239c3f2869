"""`rlsuite eval RUN`: evaluate a run's saved policies again (every seed, or every run of a sweep
or population), with the summary its environment gives (episodes, goal success, adaptation
within trials, held-out levels).

    rlsuite eval runs/demo --episodes 100
    rlsuite eval runs/demo --episodes 100 --stochastic   # sampled actions, not the policy's mode

It prints a table first: what was evaluated (seeds, env steps, episodes, greedy or sampled
actions), each seed's results and their mean with its 95% percentile bootstrap interval across
seeds (none for one seed); then what the environment's evaluation adds (the adaptation curve of
trials, held-out levels' solve rates) and, where the task family names them, what known
policies earn on the same tasks (random, UCB1, Thompson sampling, Bayes-optimal for a bandit;
random and the optimal policy that knows the MDP for tabular MDPs). It saves the whole result
beside the run, as
`eval_<greedy|sampled>_<episodes>_seed<seed>.json` (strict JSON; the same settings give the same
file), which `rlsuite plot --adaptation` draws in preference to `final.json`'s.
"""

from __future__ import annotations

import dataclasses
import pathlib

import jax
import numpy as np
import tyro

from rlsuite.app import runs
from rlsuite.app.argv import env_options, parse, read
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
    env_option: list[str] = dataclasses.field(default_factory=list)
    """evaluate in the environment at other options, FIELD=VALUE ... (the run's own, these
    changed: a robust policy at other physics, `--env-option mass=2.0`); the result is saved
    under a name that says them"""


def main(argv: list[str]) -> dict:
    from rlsuite.environment.evaluations import reference_table
    from rlsuite.loop.divergence import Divergence
    from rlsuite.loop.files import check_new_file, write_json
    from rlsuite.loop.policy_evaluation import check_evaluation, eval_summary, evaluate_policies

    line = read(argv)  # the --env-option words gathered, as rlsuite train reads them
    args = parse(EvalArgs, list(line.parser_words()), "rlsuite eval")
    if args.episodes < 1:
        raise UsageError("--episodes must be >= 1")
    out = pathlib.Path(args.run)
    record = runs.read_record(out)
    changed = _changed_options(record, env_options(list(line.env_options)))
    record = dataclasses.replace(record, env_options={**record.env_options, **changed})
    mode = "sampled" if args.stochastic else "greedy"
    at = "".join(f"_{k}={v}" for k, v in changed.items())
    saved = out / f"{runs.EVALUATIONS}{mode}_{args.episodes}_seed{args.seed}{at}.json"
    check_new_file(saved, overwrite=True)  # (the same settings compute the same result)
    built = runs.build(record)
    states, meta = runs.restore(out, record, built)
    check_evaluation(built.agent, record.num_seeds, args.episodes)  # (the states: in memory)
    seeds = None if record.batch is None else record.batch.seeds_per_config
    returns, trials = evaluate_policies(
        built.agent, states, jax.random.key(args.seed), args.episodes, not args.stochastic, seeds
    )
    summary = {
        "run": str(out),
        **({"env_options": record.env_options} if changed else {}),
        "env_steps": meta["env_steps"],
        "episodes": args.episodes,
        "actions": mode,
        "seed": args.seed,
        **eval_summary(returns, runs.reference_returns(built.data)),
        **trials,
    }
    # A run that diverged in training plays parameters that are not numbers: no result.
    summary = Divergence.start(record.num_seeds, meta.get("diverged"), 1).summarize(summary)
    print(table(summary, record.runs_word))
    evaluation = built.agent.env.evaluation
    text = evaluation.describe(trials)  # what the environment's evaluation adds
    if text is not None:
        print(f"\n{text}")
    references = evaluation.references(built.agent.env_params, jax.random.key(args.seed))
    if references:
        summary["references"] = [r._asdict() for r in references]
        print(f"\n{reference_table(references, summary, record.runs_word)}")
    write_json(saved, summary)
    print(f"wrote {saved}")
    return summary


def _changed_options(record, given: dict) -> dict:
    """The options of `--env-option` (`given`, as the command line gives them), as JSON values,
    that differ from the run's own; an unknown one is refused by `make` in one line."""
    from rlsuite import envs

    parsed = envs.options.options_to_json(envs.options.parse_options(record.env, given))
    if parsed:
        envs.options.make_with_options(record.env, {**record.env_options, **parsed})
    return {k: v for k, v in parsed.items() if record.env_options.get(k) != v}


def table(summary: dict, runs_word: str = "seeds") -> str:
    """The readable form of an evaluation's `summary`: a line saying what was evaluated, then a
    markdown table with a row per seed of every `*_per_seed` result and a row of their means
    with 95% percentile bootstrap intervals across seeds (a point, and said so, for one)."""
    from rlsuite.ops.bootstrap import bootstrap_ci
    from rlsuite.ops.validators import counted

    results = {
        k.removesuffix("_per_seed"): np.asarray([np.nan if x is None else x for x in v], float)
        for k, v in summary.items()
        if k.endswith("_per_seed") and isinstance(v, list) and v and np.ndim(v) == 1
    }
    count = len(next(iter(results.values())))
    gone = summary.get("diverged_seeds") or []
    left = count - len(gone)
    how = "greedy (the policy's mode)" if summary["actions"] == "greedy" else "sampled"
    word = runs_word.removesuffix("s")
    options = summary.get("env_options")
    at = "" if not options else f" in {', '.join(f'{k}={v!r}' for k, v in options.items())}"
    lines = [
        f"evaluation of {summary['run']}{at} at {summary['env_steps']:,} env steps: {count} "
        f"{runs_word}, {counted(summary['episodes'], 'episode')} each, actions {how}",
        "",
        f"| {word} | " + " | ".join(results) + " |",
        "|---|" + "---:|" * len(results),
    ]
    for seed in range(count):
        cells = ["diverged" if seed in gone else f"{v[seed]:.4g}" for v in results.values()]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    cells = []
    for values in results.values():
        low, high = bootstrap_ci(values[:, None])  # (the diverged left out: NaN)
        interval = "" if left < 2 else f" [{low[0]:.4g}, {high[0]:.4g}]"
        cells.append("-" if left == 0 else f"{np.nanmean(values):.4g}{interval}")
    lines.append("| mean | " + " | ".join(cells) + " |")
    if left == 0:
        basis = f"every {word} diverged in training: no result"
    elif left == 1:
        basis = f"one {word}: no interval across {word}s"
    else:
        basis = f"95% percentile bootstrap interval of the mean across the {left} {word}s"
    if gone and left:
        basis += f"; {len(gone)} that diverged in training left out"
    lines += ["", basis]
    return "\n".join(lines)
