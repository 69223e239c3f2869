"""The results tables of the documentation, generated from the JSON the benchmark scripts write.

A benchmark script `benchmarks/NAME.py` publishes its tables by defining `tables(result) ->
[(title, header, body)]`, made from the JSON its `main` writes to `benchmarks/results/NAME.json`
(tracked: a re-run rewrites the file, and the pages with it). A documentation page asks for a
benchmark's tables with a line of its own, `<!-- results: NAME -->`, which `docs/hooks.py`
replaces with `markdown(NAME)` when the site is built: each table under its bold title, then the
command, machine, date and commit they came from. No JSON yet: a note saying which command
writes it.

    python benchmarks/tables.py            # every published benchmark's tables, as Markdown
    python benchmarks/tables.py fixpo      # one
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
MARKER = re.compile(r"^<!-- results: (\S+) -->$", re.MULTILINE)


# The modules the scripts share, which measure nothing themselves.
SHARED = ("report", "side_by_side", "tables")


def scripts() -> list[str]:
    """Every benchmark script, by name."""
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem not in SHARED)


def published() -> list[str]:
    """The benchmark scripts that define `tables(result)`, by name."""
    return [
        name
        for name in scripts()
        if re.search(r"^def tables\(result", (HERE / f"{name}.py").read_text(), re.MULTILINE)
    ]


@functools.cache
def _script(name: str):
    """The benchmark script `benchmarks/NAME.py` as a module (it imports its neighbours)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def markdown(name: str, results: Path = RESULTS) -> str:
    """Benchmark `name`'s tables as Markdown from `results/NAME.json`, with where they came from;
    a note naming the command that writes it where there is none, and one saying so where the
    script does not make its tables from its JSON yet."""
    if name not in scripts():
        raise ValueError(
            f"results: no benchmark script benchmarks/{name}.py; allowed: {', '.join(scripts())}"
        )
    if name not in published():
        return (
            f'!!! note "Tables not generated yet"\n    `benchmarks/{name}.py` does not make its '
            f"tables from its JSON yet (a function `tables(result)`): its readings are the dated "
            f"ones on its benchmark page."
        )
    script = _script(name)
    path = results / f"{name}.json"
    if not path.exists():
        return (
            f'!!! note "No published run yet"\n    `python benchmarks/{name}.py` writes '
            f"`benchmarks/results/{name}.json`, and this table is made from it."
        )
    result = json.loads(path.read_text())
    if result.get("partial"):
        return (
            f'!!! warning "Unfinished run"\n    `benchmarks/results/{name}.json` holds a run '
            f"stopped before its end; `python benchmarks/{name}.py` writes a whole one."
        )
    from report import markdown as table

    parts = [
        f"**{title}**\n\n{table(header, body)}" for title, header, body in script.tables(result)
    ]
    return "\n\n".join([*parts, provenance(name, result)])


def provenance(name: str, result: dict) -> str:
    """The command, machine, date and commit of a result, in a sentence."""
    machine = result.get("machine", {})
    cores = machine.get("cpus_usable") or machine.get("cpu_count")
    devices = machine.get("devices") or []
    backend = machine.get("jax_backend", "?")
    where = f"{machine.get('cpu', 'an unrecorded machine')}, {cores} cores"
    where += f", JAX on {backend} ({len(devices)} device{'s' * (len(devices) != 1)})"
    git = result.get("git") or {}
    commit = git.get("commit")
    command = result.get("command", f"python benchmarks/{name}.py")
    text = f"From `{command}` on {where}, {machine.get('date', 'undated')}"
    text += f", commit `{commit[:7]}`" if commit else ""
    text += (
        " with changes to rlsuite/ or envs/ not committed"
        if git.get("uncommitted_in_rlsuite_envs")
        else ""
    )
    return f"*{text}; the JSON: `benchmarks/results/{name}.json`.*"


def render(text: str, results: Path = RESULTS) -> str:
    """`text` (a page's Markdown) with each `<!-- results: NAME -->` line replaced by
    `markdown(NAME)`."""
    return MARKER.sub(lambda m: markdown(m.group(1), results), text)


def main(argv: list[str]) -> None:
    for name in argv or published():
        print(f"## {name}\n\n{markdown(name)}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
