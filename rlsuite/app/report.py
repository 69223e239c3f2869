"""`rlsuite report RUN`: one markdown page about one run directory.

    rlsuite report runs/demo                      # runs/demo/report.md, report.curves.png, ...
    rlsuite report runs/demo --out pages/demo.md  # demo.md, demo.curves.png, demo.environment.png

The page holds what the run's files say: the algorithm, environment, seeds, devices and mesh
(`config.json`); the learning curve (`metrics.jsonl`, drawn as `rlsuite plot` draws it, into
`<page>.curves.png` beside the page); the final evaluation per seed and every other per-seed result
of `final.json` (success rates, normalised scores, regret); the wall time, compilation and steps per
second; and the configuration and hyperparameters; and the environment's first frame, as `rlsuite
render`'s video starts (one reset, drawn by `rlsuite.envs.rendering`, into
`<page>.environment.png`), or where the environment has no renderer, a line saying so. A run that
has not finished (no `final.json`) gets the page without its evaluation, saying so. Neither the page
nor its images overwrite a file.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import tyro

from rlsuite.app.argv import parse
from rlsuite.app.plotting import curve, plot_runs
from rlsuite.app.runs import env_label, read_json
from rlsuite.loop.divergence import diverged_runs
from rlsuite.loop.files import check_new_file, derived, write_text
from rlsuite.loop.loggers import JSONL, read_metrics
from rlsuite.ops.validators import counted

SPEED_KEYS = ("wall_seconds", "compile_seconds")


def write_report(
    run: str | pathlib.Path, out: str | pathlib.Path | None = None, metric: str = ""
) -> dict:
    """Write the page of `run` to `out` (default `RUN/report.md`), its learning curve beside it
    (`<name>.curves.png`) and its environment's first frame (`<name>.environment.png`); returns
    `{"page", "figure", "frame"}` (`frame` None where the environment cannot be drawn). `metric` is
    the curve's metric (default `charts/episodic_return`). Refused before anything is written,
    naming the value: a run without `config.json` or metrics, a metric the run did not log, a page,
    figure or frame that exists already."""
    run = pathlib.Path(run)
    metric = metric or "charts/episodic_return"
    record = _read_json(run / "config.json", f"{run} holds no run (no config.json)")
    if not (run / JSONL).is_file():
        raise ValueError(f"{run} holds no metrics ({JSONL})")
    rows = read_metrics(run)
    if not rows:
        raise ValueError(f"{run}/{JSONL} has no rows yet")
    try:
        curve(rows, metric)
    except ValueError as error:
        raise ValueError(f"{run} {error}") from None
    page = check_new_file(run / "report.md" if out is None else out)
    if page.suffix != ".md":
        raise ValueError(f"--out {page}: the page is markdown; give a name ending in .md")
    if not page.parent.is_dir():
        raise ValueError(f"--out {page}: {page.parent} is not a directory")
    figure = check_new_file(derived(page, "curves"), hint=" (the page's learning curve)")
    frame = check_new_file(derived(page, "environment"), hint=" (the environment's first frame)")
    final_path = run / "final.json"
    final = _read_json(final_path, "") if final_path.is_file() else None

    at_update = None if final is None else final.get("diverged_at_update")
    plot_runs([(run.name, rows)], figure, metric, None, [at_update])
    why_not = first_frame(record, frame)
    text = render(record, final, figure.name, metric, frame.name, why_not, described(record, final))
    write_text(page, text)
    return {"page": str(page), "figure": str(figure), "frame": None if why_not else str(frame)}


def described(record: dict, final: dict | None) -> str | None:
    """What the environment's evaluation adds to `final.json`'s results, as it says it (the
    adaptation curve of trials, the solve rates of held-out levels; None: nothing)."""
    if final is None:
        return None
    from rlsuite import envs

    env, _ = envs.options.make_with_options(record["env"], record.get("env_options"))
    return env.evaluation.describe(final)


def first_frame(record: dict, path: pathlib.Path) -> str | None:
    """Draw the first state of the run's environment (a reset with the run's seed) into `path`;
    returns None where it has been, else the reason it cannot be drawn."""
    import jax
    import matplotlib.pyplot as plt

    from rlsuite.envs import rendering

    rendering.use_gl()  # before the environment imports MuJoCo
    from rlsuite import envs

    env, params = envs.options.make_with_options(record["env"], record.get("env_options"))
    try:
        envs.registry.check_renderable(env, record["env"])
        _, state = jax.jit(env.reset)(jax.random.key(record.get("seed", 0)), params)
        plt.imsave(path, rendering.render_state(env, params, state))
    except (rendering.NotRenderable, rendering.RendererUnavailable) as error:
        return str(error)
    return None


def render(
    record: dict,
    final: dict | None,
    figure: str,
    metric: str,
    frame: str | None = None,
    why_not: str | None = None,
    added: str | None = None,
) -> str:
    """The page's markdown from a run's `config.json` record and `final.json` summary (None:
    not finished), with the learning curve's image named `figure` and the first frame's named
    `frame` (None: no section), or, instead of that image, `why_not` it could not be drawn;
    `added` is what the environment's evaluation says besides the per-seed results."""
    algo = record.get("algo", "?")
    env = env_label(record.get("env", "?"), record.get("env_options") or {})
    devices = record.get("devices") or {}
    lines = [
        f"# {algo} on {env}",
        "",
        _table(
            ("", ""),
            [
                ("seeds", record.get("num_seeds")),
                ("seed", record.get("seed")),
                ("devices", f"{devices.get('count', '?')} {devices.get('platform', '')}".strip()),
                ("deterministic GPU operations", _yes_no(devices.get("deterministic"))),
                ("matmul precision", devices.get("matmul_precision")),
                ("mesh", _mesh(record.get("mesh"))),
                ("dataset", record.get("dataset")),
            ],
        ),
        "",
        "## Learning curve",
        "",
        f"![{metric}]({figure})",
        "",
        f"{metric} against environment steps: the mean of the episodes that ended in each bin, "
        "per seed, then the mean and 95% bootstrap interval across seeds.",
        "",
        "## Final evaluation",
        "",
    ]
    if final is None:
        lines += ["The run has not finished: it has no final.json yet.", ""]
    else:
        lines += [_evaluation(final), ""]
        if added is not None:  # tables of levels or achievements, an adaptation curve's lines
            lines += [_markdown(added), ""]
        lines += ["## Speed", "", _speed(final), ""]
    if frame is not None:
        lines += ["## First frame", "", _frame(frame, env, why_not), ""]
    lines += ["## Configuration", "", _fields(record.get("config", {})), ""]
    lines += ["## Hyperparameters", "", _fields(record.get("hparams", {})), ""]
    return "\n".join(line for line in lines if line is not None).rstrip() + "\n"


def _markdown(text: str) -> str:
    """What an environment's evaluation says (`Evaluation.describe`) as markdown: its tables
    (lines that start with `|`) as tables, the line before each (its caption) and any other line
    alone as a paragraph, and lines aligned in columns (an adaptation curve's) in a text fence."""
    blocks: list[tuple[bool, list[str]]] = []  # (a table, its lines)
    for line in text.splitlines():
        table = line.startswith("|")
        if blocks and blocks[-1][0] == table:
            blocks[-1][1].append(line)
            continue
        if table and blocks and len(blocks[-1][1]) > 1:  # the caption, a paragraph of its own
            blocks.append((False, [blocks[-1][1].pop()]))
        blocks.append((table, [line]))
    parts = []
    for table, block in blocks:
        body = "\n".join(block)
        parts.append(body if table or len(block) == 1 else f"```text\n{body}\n```")
    return "\n\n".join(parts)


def _frame(frame: str, env: str, why_not: str | None) -> str:
    if why_not is not None:
        return f"No picture: {why_not}."
    return (
        f"![{env}, first frame]({frame})\n\nThe environment's first state (a reset with the "
        f"run's seed), as the video of `rlsuite render` starts."
    )


def _evaluation(final: dict) -> str:
    """Every `*_per_seed` result of `final.json`: one row per seed, a column per result, and the
    mean."""
    results = {k.removesuffix("_per_seed"): v for k, v in final.items() if k.endswith("_per_seed")}
    results = {k: v for k, v in results.items() if isinstance(v, list) and v}
    if not results:
        return "final.json holds no per-seed results."
    names = list(results)
    seeds = max(len(v) for v in results.values())
    gone, at = diverged_runs(final), final.get("diverged_at_update") or []

    def cell(n: str, s: int) -> str:
        if s in gone:
            return f"diverged (update {at[s]})"
        return _number(results[n][s]) if s < len(results[n]) else ""

    rows = [(s, *[cell(n, s) for n in names]) for s in range(seeds)]
    rows.append(("mean", *[_number(final.get(f"{n}_mean")) for n in names]))
    episodes = final.get("eval_episodes")
    note = f"\n\n{counted(episodes, 'evaluation episode')} per seed." if episodes else ""
    if gone:
        means = "the means are over the others" if len(gone) < seeds else "there is no mean"
        note += (
            f" {len(gone)} of {counted(seeds, 'seed')} diverged (their parameters stopped being "
            f"finite numbers, and the learning curve ends there): {means}, and sweep, pbt and "
            "stats rank them last."
        )
    return _table(("seed", *names), rows) + note


def _speed(final: dict) -> str:
    unit = "gradient_steps" if "gradient_steps" in final else "env_steps"
    rows = [(key, final.get(key)) for key in (unit, f"{unit}_this_call", *SPEED_KEYS)]
    rows.append((f"{unit}_per_second (after compiling)", final.get(f"{unit}_per_second")))
    return _table(("", ""), [row for row in rows if row[1] is not None])


def _fields(values: dict) -> str:
    if not values:
        return "(none recorded)"
    return _table(("field", "value"), [(k, v) for k, v in values.items()])


def _mesh(sizes: dict | None) -> str | None:
    if not sizes:
        return None
    return ", ".join(f"{name}={size}" for name, size in sizes.items())


def _yes_no(value: bool | None) -> str | None:
    return None if value is None else ("yes" if value else "no")


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _table(header: tuple, rows: list[tuple]) -> str:
    rows = [row for row in rows if row[-1] is not None or len(row) > 2]
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_number(v) if v != "" else "" for v in row) + " |")
    return "\n".join(lines)


def _read_json(path: pathlib.Path, missing: str) -> dict:
    value = read_json(path, missing)
    if not isinstance(value, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return value


@dataclasses.dataclass
class ReportArgs:
    run: tyro.conf.Positional[str]
    """the run directory"""
    out: str | None = None
    """the page to write, ending in .md (default RUN/report.md); writes it, its learning curve
    as NAME.curves.png and its environment's first frame as NAME.environment.png beside it; none
    may exist"""
    metric: str = "charts/episodic_return"
    """the learning curve's metric"""


def main(argv: list[str]) -> dict:
    """`rlsuite report RUN [--out PAGE.md] [--metric M]`."""
    args = parse(ReportArgs, argv, "rlsuite report")
    written = write_report(args.run, args.out, args.metric)
    frame = f" and {written['frame']}" if written.get("frame") else ""
    print(f"wrote {written['page']}, {written['figure']}{frame}")
    return written
