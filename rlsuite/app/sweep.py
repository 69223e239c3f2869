"""`rlsuite sweep`: every hyperparameter configuration x seed of a sweep trained as one batch.

    rlsuite sweep ppo --env cartpole --grid learning_rate=1e-4,3e-4,1e-3 ent_coef=0,0.01
    rlsuite sweep ppo --env cartpole --random 32 --grid learning_rate=log:1e-4:1e-2 ent_coef=0:0.05
    rlsuite sweep --resume runs/sweep_ppo_cartpole_<time>
    rlsuite train --config runs/sweep_ppo_cartpole_<time>/best.json --out runs/best

The configurations are the grid's product (`--grid FIELD=V1,V2,...` per field) or, with
`--random N`, N draws (a field's `LOW:HIGH` uniform, `log:LOW:HIGH` log-uniform, `V1,V2,...` a
uniform choice; seeded by `--seed`). Every configuration x seed is a run of one batch: the
driver vmaps them with one set of hyperparameters per run (`hparams_axis=0`) in the chunked host
loop of `rlsuite train` (`rlsuite.loop.runner.fit`: progress, checkpoints, exact resume, logs,
evaluation), so the whole sweep compiles one program per chunk length. Every other flag is
`rlsuite train`'s, the base that the swept fields replace.

Seeds: run `c * S + s` of an S-seed sweep is seed `s` of configuration `c`, with the keys of seed
`s` of an S-seed `rlsuite train` of that configuration alone (`rlsuite.loop.driver.run_keys`):
every configuration sees the same seeds, and `best.json` retrains the best one as the sweep did.

Only hyperparameters (the algorithm's traced `hparams`) are swept: a config field (network sizes,
environment counts) shapes the compiled program, so one call cannot vary it, and is refused.

Files in `--out`, besides those of a run (`config.json` with a `sweep` entry, `metrics.jsonl`
with one row per run, `checkpoints/`, `final.json` per run): `sweep.md` (the table: per
configuration the mean evaluation return across seeds with a 95% percentile bootstrap interval,
best first), `sweep.json` (the same, with every seed's value) and `best.json` (the best
configuration, read back by `rlsuite train --config`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import pathlib

import numpy as np

from rlsuite.app import runs, train
from rlsuite.app.argv import CommandLine
from rlsuite.app.batches import Sweep
from rlsuite.app.errors import closest
from rlsuite.loop.files import float32_value, write_json, write_text
from rlsuite.ops.bootstrap import bootstrap_ci
from rlsuite.ops.validators import counted

FILES = ("sweep.md", "sweep.json", "best.json")
METRICS = ("eval_return", "normalized_score")  # a per-seed value of final.json, best the highest


@dataclasses.dataclass(frozen=True)
class Spec:
    """One swept field: listed `values` (grid points, or a random search's choices), or a range
    `low`..`high` (random search only), uniform or on a log scale."""

    field: str
    values: tuple[float, ...] = ()
    low: float | None = None
    high: float | None = None
    log: bool = False


def parse_spec(token: str) -> Spec:
    """`FIELD=V1,V2,...`, `FIELD=LOW:HIGH` or `FIELD=log:LOW:HIGH`."""
    if "=" not in token:
        raise ValueError(
            f"--grid {token!r}: write FIELD=V1,V2,... (or FIELD=LOW:HIGH, FIELD=log:LOW:HIGH "
            "with --random N)"
        )
    field, text = token.split("=", 1)

    def number(value: str) -> float:
        try:
            return float(np.float32(float(value)))  # the value a run trains with (float32)
        except ValueError:
            raise ValueError(f"--grid {field}: {value!r} is not a number") from None

    if ":" in text:
        parts = text.split(":")
        log = parts[0] == "log"
        if log:
            parts = parts[1:]
        if len(parts) != 2:
            raise ValueError(f"--grid {token!r}: a range is LOW:HIGH or log:LOW:HIGH")
        low, high = (number(p) for p in parts)
        if not low < high:
            raise ValueError(f"--grid {field}: the range {low:g}:{high:g} needs LOW < HIGH")
        if log and low <= 0:
            raise ValueError(f"--grid {field}: a log range needs LOW > 0, got {low:g}")
        return Spec(field, low=low, high=high, log=log)
    # A listed value is written as its float32's shortest decimal; a range's ends keep their
    # float32 value exactly, for the draws between them are computed from them.
    values = tuple(float32_value(number(v)) for v in text.split(",") if v != "")
    if not values:
        raise ValueError(f"--grid {field}=: give at least one value")
    if len(set(values)) != len(values):
        raise ValueError(f"--grid {field}: a value is listed twice ({text})")
    return Spec(field, values=values)


def check_fields(specs: list[Spec], algo) -> None:
    """Refuse a field that is not one of `algo`'s hyperparameters, naming the allowed ones; a
    config field is refused as static."""
    hparams = [f.name for f in dataclasses.fields(algo.hparams_cls)]
    config = {f.name for f in dataclasses.fields(algo.config_cls)}
    seen = set()
    for spec in specs:
        if spec.field in seen:
            raise ValueError(f"--grid {spec.field} is given twice; give its values once")
        seen.add(spec.field)
        if spec.field in hparams:
            continue
        allowed = f"{algo.name}'s hyperparameters: {', '.join(hparams)}"
        if spec.field in config:
            raise ValueError(
                f"--grid {spec.field}: {spec.field} is a static config field of {algo.name} (it "
                "shapes the compiled program, so one vmapped call cannot vary it; sweep it with "
                f"separate runs); a sweep varies {allowed}"
            )
        close = closest(spec.field, hparams)
        hint = f"; did you mean {close!r}?" if close else ""
        raise ValueError(f"--grid {spec.field} is not a hyperparameter{hint} ({allowed})")


def configurations(specs: list[Spec], random: int | None, seed: int) -> list[dict]:
    """The sweep's configurations: the grid's product, or `random` draws (seeded by `seed`)."""
    if random is None:
        ranged = [s.field for s in specs if s.low is not None]
        if ranged:
            raise ValueError(
                f"--grid {ranged[0]}: a range is sampled by random search; add --random N, or "
                "list the grid's values (FIELD=V1,V2,...)"
            )
        product = itertools.product(*(s.values for s in specs))
        return [dict(zip([s.field for s in specs], v, strict=True)) for v in product]
    if random < 1:
        raise ValueError(f"--random must be >= 1 configurations, got {random}")
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(random):
        config = {}
        for s in specs:
            if s.low is None:
                value = s.values[rng.integers(len(s.values))]
            elif s.log:
                value = math.exp(rng.uniform(math.log(s.low), math.log(s.high)))
            else:
                value = rng.uniform(s.low, s.high)
            config[s.field] = float32_value(value)
        draws.append(config)
    return draws


def _split_argv(argv: list[str]) -> tuple[list[str], int | None, str, list[str]]:
    """(`--grid` tokens, `--random` N, `--metric`, the rest): the sweep's own flags out of the
    command line; the rest is `rlsuite train`'s."""
    grid, random, metric, rest = [], None, "eval_return", []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--grid":
            i += 1
            while i < len(argv) and not argv[i].startswith("--"):
                grid.append(argv[i])
                i += 1
            continue
        if arg in ("--random", "--metric") or arg.startswith(("--random=", "--metric=")):
            name, value = arg.split("=", 1) if "=" in arg else (arg, None)
            if value is None:
                if i + 1 >= len(argv):
                    raise ValueError(f"{name} needs a value")
                value, i = argv[i + 1], i + 1
            if name == "--random":
                if not value.isdigit():
                    raise ValueError(f"--random must be a number of configurations, got {value!r}")
                random = int(value)
            else:
                metric = value
            i += 1
            continue
        rest.append(arg)
        i += 1
    if metric not in METRICS:
        raise ValueError(f"--metric {metric!r} is not one of: {', '.join(METRICS)}")
    return grid, random, metric, rest


def main(line: CommandLine) -> dict:
    if line.given("--resume"):
        out, _, progress = train.resume_args(line)
        return write_results(*runs.resume_batch(out, "sweep", FILES[-1], progress))
    argv = list(line.words)
    helping = line.given("-h", "--help")
    if helping:
        print(__doc__)  # the sweep's own flags; rlsuite train's follow
        if not argv or argv[0].startswith("-"):
            return {}
    grid, random, metric, rest = _split_argv(argv)
    if not grid and not helping:
        raise ValueError("sweep needs --grid FIELD=V1,V2,... (one or more fields)")
    specs = [parse_spec(token) for token in grid]
    found = {}

    def check(algo, agent, args):
        check_fields(specs, algo)
        configs = configurations(specs, random, args.seed)
        search = "grid" if random is None else "random"
        sweep = Sweep([s.field for s in specs], configs, args.num_seeds, metric, search)
        found["sweep"] = sweep

    run = train.new_run(line.with_words(rest), "sweep", check)
    if metric == "normalized_score" and runs.reference_returns(run.data) is None:
        raise ValueError(
            "--metric normalized_score needs an offline algorithm's dataset with random and "
            "expert returns; use --metric eval_return"
        )
    sweep = found["sweep"]
    num_runs = len(sweep.configs) * sweep.seeds
    run.record = dataclasses.replace(run.record, num_seeds=num_runs, batch=sweep)
    print(
        f"sweep: {counted(len(sweep.configs), 'configuration')} of {', '.join(sweep.fields)} "
        f"x {counted(sweep.seeds, 'seed')} = {counted(num_runs, 'run')}, one batch",
        flush=True,
    )
    summary = runs.start(run)
    return write_results(run.out, run.record, summary)


def results(sweep: Sweep, summary: dict) -> dict:
    """The sweep's table from a run's summary (`final.json`): per configuration its seeds' values
    of the metric, their mean and 95% percentile bootstrap interval; best (highest mean) first.

    A configuration with a seed that diverged (its value null, `rlsuite.loop.divergence`) has no
    mean (null) and ranks after every configuration whose seeds all ended: the fewer seeds
    diverged the higher, then by the mean of the others."""
    key = f"{sweep.metric}_per_seed"
    per_seed = np.asarray([np.nan if v is None else v for v in summary[key]], np.float64).reshape(
        len(sweep.configs), sweep.seeds
    )
    ended = ~np.isnan(per_seed)
    low, high = bootstrap_ci(np.where(ended.all(axis=1)[:, None], per_seed, np.nan).T)
    rows = [
        {
            "config": config,
            "per_seed": per_seed[c].tolist(),
            "mean": float(per_seed[c].mean()),
            "low": float(low[c]),
            "high": float(high[c]),
            "diverged_seeds": np.flatnonzero(~ended[c]).tolist(),
        }
        for c, config in enumerate(sweep.configs)
    ]

    def rank(c: int):
        others = per_seed[c][ended[c]]
        return (int((~ended[c]).sum()), -others.mean() if others.size else np.inf)

    order = sorted(range(len(rows)), key=rank)
    return {
        "metric": sweep.metric,
        "fields": sweep.fields,
        "seeds": sweep.seeds,
        "search": sweep.search,
        "rows": [rows[c] for c in order],
        "best_index": order[0],
    }


def markdown(table: dict, title: str) -> str:
    fields = table["fields"]
    head = ["rank", *fields, f"{table['metric']} (mean)", "95% interval", "seeds"]
    lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rank, row in enumerate(table["rows"], start=1):
        cells = [str(rank), *(f"{row['config'][f]:.4g}" for f in fields)]
        if row["diverged_seeds"]:
            seeds = ", ".join(map(str, row["diverged_seeds"]))
            cells += [f"diverged (seed {seeds})", "-"]
        else:
            cells += [f"{row['mean']:.2f}", f"[{row['low']:.2f}, {row['high']:.2f}]"]
        cells.append(", ".join("diverged" if np.isnan(v) else f"{v:.1f}" for v in row["per_seed"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def best_config(record: runs.RunRecord, table: dict) -> dict:
    """What `rlsuite train --config` reads: the record of an S-seed run of the best
    configuration alone (with the sweep's seed, chunks and evaluation)."""
    record = record.to_dict()
    best = table["rows"][0]
    keys = ("algo", "env", "seed", "chunks", "eval_episodes", "logging", "config")
    entry = {k: record[k] for k in keys}
    entry.update(
        num_seeds=table["seeds"],
        hparams={**record["hparams"], **best["config"]},
        sweep_result={k: best[k] for k in ("mean", "low", "high", "per_seed")},
    )
    if "dataset" in record:
        entry.update(dataset=record["dataset"], dataset_sha256=record["dataset_sha256"])
    if "env_options" in record:
        entry.update(env_options=record["env_options"])
    return entry


def write_results(out: pathlib.Path, record: runs.RunRecord, summary: dict) -> dict:
    """Write `sweep.md`, `sweep.json` and `best.json` into `out`; print the table."""
    table = results(record.batch, summary)
    title = (
        f"{record.algo} on {record.env_label}: {counted(len(table['rows']), 'configuration')} x "
        f"{counted(table['seeds'], 'seed')} ({table['search']} search)"
    )
    text = markdown(table, title)
    best = best_config(record, table)
    from rlsuite.loop.distributed import is_main

    if is_main():
        write_text(out / "sweep.md", text)
        write_json(out / "sweep.json", table)
        write_json(out / "best.json", best)
    print(text)
    values = ", ".join(f"{k}={v:.4g}" for k, v in table["rows"][0]["config"].items())
    top = table["rows"][0]
    if top["diverged_seeds"]:
        print(f"best: {values}, but every configuration had a seed that diverged")
    else:
        print(f"best: {values}, {table['metric']} {best['sweep_result']['mean']:.2f}")
    print(
        f"wrote {', '.join(FILES)} to {out}; retrain the best with its seeds: rlsuite train "
        f"--config {out / 'best.json'}"
    )
    count = 1 if record.devices is None else record.devices.count
    if count > 1:
        print(
            f"note: the sweep ran on {count} devices, where a run's last bits can "
            "depend on its place in the batch; for a bitwise retrain, sweep and retrain on one "
            "device (--cpu-devices 1; docs/sweeps.md)"
        )
    return {**table, "best": best, "summary": summary}
