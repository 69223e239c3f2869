"""`rlsuite pbt`: population-based training of any algorithm, every population in one batch.

    rlsuite pbt ppo --env cartpole --population 8 --num-seeds 5 \\
        --grid learning_rate=log:1e-5:1e-2 ent_coef=0:0.05 --anneal-lr False --chunks 20
    rlsuite pbt ... --no-exploit   # the same draws and keys, never exploited: a random search
    rlsuite pbt --resume runs/pbt_ppo_cartpole_<time>

`--num-seeds` independent populations of `--population` members each; every member starts from
its own draw of the `--grid` ranges (as `rlsuite sweep --random`: `LOW:HIGH`, `log:LOW:HIGH`,
`V1,V2,...`, whose smallest and largest values bound the exploration) and its own key. All
members of all populations train as one vmapped batch in the chunked loop of `rlsuite train`
(checkpoints, exact resume, logs); after every chunk but the last, each population exploits and
explores (`rlsuite.loop.population.PBT`): its bottom `--fraction` copies the whole learner state
of a member of its top `--fraction` and perturbs the copied hyperparameters (x0.8 or x1.25, or
a fresh draw with probability `--resample`). Each member's hyperparameters live in its state
(`population_agent`) and are logged as `hparams/<field>`.

Files in `--out`, besides a run's (`metrics.jsonl` has one row per member as its `seed`):
`lineage.jsonl` (a row per exploit step: the update, every member's fitness, parent and new
hyperparameters) and `pbt.md` / `pbt.json`: per population, its best member by the last chunk's
training fitness (not by the evaluation), that member's evaluation return and hyperparameters,
and the population's mean evaluation.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np

from rlsuite.app import runs, train
from rlsuite.app.argv import CommandLine
from rlsuite.app.batches import LINEAGE, Population
from rlsuite.loop.divergence import diverged_runs
from rlsuite.loop.files import write_json, write_text
from rlsuite.ops.validators import counted

FILES = ("pbt.md", "pbt.json")


def _split_argv(argv: list[str]) -> tuple[dict, list[str]]:
    """The pbt flags (`--population`, `--fraction`, `--resample`, `--no-exploit`) and the rest."""
    options = {"population": None, "fraction": 0.25, "resample": 0.25, "exploit": True}
    rest, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name, _, value = arg.partition("=")
        if name in ("--population", "--fraction", "--resample"):
            if not value:
                if i + 1 >= len(argv):
                    raise ValueError(f"{name} needs a value")
                value, i = argv[i + 1], i + 1
            try:
                number = int(value) if name == "--population" else float(value)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {value!r}") from None
            options[name[2:]] = number
        elif arg == "--no-exploit":
            options["exploit"] = False
        else:
            rest.append(arg)
        i += 1
    if options["population"] is None:
        raise ValueError("pbt needs --population N (members per population, at least 2)")
    if options["population"] < 2:
        raise ValueError(
            f"--population {options['population']}: a population needs at least 2 members "
            "(one to copy from, one to replace)"
        )
    if not 0 < options["fraction"] <= 0.5:
        raise ValueError(f"--fraction must be in (0, 0.5], got {options['fraction']}")
    if not 0 <= options["resample"] <= 1:
        raise ValueError(f"--resample must be a probability in [0, 1], got {options['resample']}")
    return options, rest


def bounds(specs) -> tuple[list[float], list[float], list[bool]]:
    """Each field's exploration range: a range's ends, or a list's smallest and largest value."""
    low = [s.low if s.low is not None else min(s.values) for s in specs]
    high = [s.high if s.high is not None else max(s.values) for s in specs]
    return low, high, [s.log for s in specs]


def main(line: CommandLine) -> dict:
    from rlsuite.agents import registry
    from rlsuite.app import sweep as sweeps
    from rlsuite.loop.runner import chunk_length

    if line.given("--resume"):
        out, _, progress = train.resume_args(line)
        return write_results(*runs.resume_batch(out, "pbt", FILES[-1], progress))
    argv = list(line.words)
    helping = line.given("-h", "--help")
    if helping:
        print(__doc__)  # the population's own flags; rlsuite train's follow
        if not argv or argv[0].startswith("-"):
            return {}
        argv = [*argv, "--population", "2"]  # (tyro prints rlsuite train's flags and exits)
    options, rest = _split_argv(argv)
    grid, random, metric, rest = sweeps._split_argv(rest)
    if random is not None:
        raise ValueError("--random is rlsuite sweep's; pbt draws --population members per seed")
    if not grid and not helping:
        raise ValueError("pbt needs --grid FIELD=LOW:HIGH (or log:LOW:HIGH, V1,V2,...)")
    specs = [sweeps.parse_spec(token) for token in grid]
    found = {}

    def check(algo, agent, args):
        if algo.offline:
            raise ValueError(
                f"pbt ranks members by the return of their training episodes; {algo.name} learns "
                f"from a dataset and steps no environment (online: {', '.join(registry.online())})"
            )
        sweeps.check_fields(specs, algo)
        updates = agent.config.num_updates
        if options["exploit"] and -(-updates // chunk_length(updates, args.chunks)) < 2:
            raise ValueError(
                f"--chunks {args.chunks}: the run is one chunk ({updates} updates), so no member "
                "is ever exploited (that happens between chunks); give --chunks 2 or more"
            )
        members = options["population"]
        configs = sweeps.configurations(specs, members * args.num_seeds, args.seed)
        low, high, log = bounds(specs)
        fields = [s.field for s in specs]
        pbt = Population(
            fields, low, high, log, members, args.num_seeds, configs, options["fraction"],
            options["resample"], options["exploit"]
        )  # fmt: skip
        extremes = [dict(zip(fields, v, strict=True)) for v in (low, high)]
        bounded = dataclasses.replace(pbt, configs=extremes)
        agent.check_hparams(bounded.hparams(args.hparams))  # the whole range may be explored
        found["pbt"] = pbt

    run = train.new_run(line.with_words(rest), "pbt", check)
    pbt = found["pbt"]
    run.record = dataclasses.replace(run.record, num_seeds=pbt.members * pbt.populations, batch=pbt)
    run.agent = pbt.agent(run.agent)
    print(
        f"pbt: {counted(pbt.populations, 'population')} x {counted(pbt.members, 'member')} of "
        f"{', '.join(pbt.fields)} = {counted(run.record.num_seeds, 'run')}, one batch"
        + ("" if pbt.exploit else " (no exploit: a random search)"),
        flush=True,
    )
    summary = runs.start(run)
    return write_results(run.out, run.record, summary)


def results(record: runs.RunRecord, summary: dict, out: pathlib.Path) -> dict:
    """Per population: its best member by the last chunk's training fitness, that member's
    evaluation and final hyperparameters, and the population's mean evaluation."""
    pbt = record.batch
    members, populations = pbt.members, pbt.populations
    evals = [np.nan if v is None else v for v in summary["eval_return_per_seed"]]
    evals = np.asarray(evals, np.float64).reshape(populations, members)
    fitness = _last_fitness(out, populations * members, record.chunks)
    fitness[diverged_runs(summary)] = -np.inf  # a member that diverged is the worst
    final = _final_hparams(out, pbt)
    rows = []
    for p in range(populations):
        scores = np.nan_to_num(fitness[p * members : (p + 1) * members], nan=-np.inf)
        best = int(np.argmax(scores))
        rows.append(
            {
                "population": p,
                "best_member": best,
                "best_eval_return": float(evals[p, best]),
                "mean_eval_return": float(evals[p].mean()),
                "diverged_members": np.flatnonzero(np.isnan(evals[p])).tolist(),
                "best_hparams": {f: final[f][p * members + best] for f in pbt.fields},
            }
        )
    best = np.asarray([r["best_eval_return"] for r in rows])
    return {
        "exploit": pbt.exploit,
        "populations": rows,
        "best_eval_return_mean": float(best.mean()),
    }


def _last_fitness(out: pathlib.Path, runs: int, chunks: int) -> np.ndarray:
    """Each member's mean episodic return over about the last chunk (the last `1 / chunks` of
    its env steps), from `metrics.jsonl`; NaN where no episode ended there."""
    from rlsuite.loop.loggers import read_metrics

    rows = read_metrics(out)
    total = max(r["env_steps"] for r in rows)
    start = total * (1 - 1 / chunks)
    values = [[] for _ in range(runs)]
    for row in rows:
        value = row.get("charts/episodic_return")
        if row["env_steps"] > start and value is not None and np.isfinite(value):
            values[row["seed"]].append(value)
    return np.asarray([np.mean(v) if v else np.nan for v in values])


def _final_hparams(out: pathlib.Path, pbt: Population) -> dict:
    """Each member's hyperparameters at the end: the last lineage row's, or the initial draws."""
    path = out / LINEAGE
    if path.exists() and path.read_text().strip():
        return json.loads(path.read_text().splitlines()[-1])["hparams"]
    return {f: [c[f] for c in pbt.configs] for f in pbt.fields}


def write_results(out: pathlib.Path, record: runs.RunRecord, summary: dict) -> dict:
    table = results(record, summary, out)
    fields = record.batch.fields
    head = ["population", "best member", "its eval return", "population mean", *fields]
    lines = [
        f"# {record.algo} on {record.env_label}: population-based training"
        + ("" if table["exploit"] else " without exploit (random search)"),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in table["populations"]:
        cells = [str(row["population"]), str(row["best_member"])]
        cells += [_cell(row["best_eval_return"]), _cell(row["mean_eval_return"], row)]
        cells += [f"{row['best_hparams'][f]:.4g}" for f in fields]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "The best member is the one with the highest training return over about the last chunk "
        "(its fitness, as PBT ranked members), not the highest evaluation return; a member that "
        "diverged ranks last.",
    ]
    text = "\n".join(lines) + "\n"
    from rlsuite.loop.distributed import is_main

    if is_main():
        write_text(out / "pbt.md", text)
        write_json(out / "pbt.json", table)
    print(text)
    lineage = f" and {LINEAGE}" if (out / LINEAGE).exists() else ""
    print(f"wrote {', '.join(FILES)}{lineage} to {out}")
    return {**table, "summary": summary}


def _cell(value: float, row: dict | None = None) -> str:
    """A return in the table; a diverged member has none, and a population with one no mean."""
    if not np.isnan(value):
        return f"{value:.2f}"
    if row is None:
        return "diverged"
    return f"- (member {', '.join(map(str, row['diverged_members']))} diverged)"
