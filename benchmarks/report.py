"""What every benchmark script shares to report: the check of its flags, a description of the
machine, the command, tables (in the terminal and as Markdown for the pages of docs/benchmarks/)
and progress lines."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import os
import platform
import shlex
import sys

import jax
from rich.console import Console
from rich.table import Table


def check_args(args, may_be_zero: tuple[str, ...] = (), choices: dict | None = None) -> None:
    """Refuse bad flags before anything runs, naming the flag: a count below 1 (every int flag
    but `seed` and `may_be_zero`, and every entry of a list of ints) and a name that is not in
    `choices[field]`."""
    for field in dataclasses.fields(args):
        value, flag = getattr(args, field.name), "--" + field.name.replace("_", "-")
        if field.name in ("seed", *may_be_zero) or isinstance(value, bool) or value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, int) and not isinstance(v, bool) and v < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
    for name, allowed in (choices or {}).items():
        value = getattr(args, name)
        for v in value if isinstance(value, list | tuple) else [value]:
            if v not in allowed:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag}: unknown {v!r}; allowed: {', '.join(allowed)}")


def machine_info() -> dict:
    """CPU model and core counts, JAX backend and devices, package versions, load and date."""
    cpu = platform.processor() or "unknown"
    # A virtual machine may name only the vendor ("AMD EPYC"): its family, model and vector
    # extensions tell two CPUs of one name apart, whose XLA code (and last bits) may differ.
    cpuinfo = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not line.strip():
                    break  # the first processor's block
                cpuinfo[key.strip()] = value.strip()
    except OSError:
        pass
    cpu = cpuinfo.get("model name", cpu)
    flags = cpuinfo.get("flags", "").split()
    versions = {}
    for package in ("jax", "jaxlib", "brax", "mujoco", "mujoco-mjx", "gymnax", "flax"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpu": cpu,
        "cpu_family_model": [cpuinfo.get("cpu family"), cpuinfo.get("model")],
        "cpu_vector_extensions": [f for f in ("avx2", "avx512f", "amx_tile") if f in flags],
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "jax_backend": jax.default_backend(),
        "devices": [str(d.device_kind) for d in jax.devices()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "load_average_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def command() -> str:
    """The command line the script was run with, as a user would type it again."""
    return shlex.join(["python", *sys.argv])


def print_table(console: Console, title: str, header: list[str], body: list[list[str]]) -> None:
    table = Table(title=title)
    for column in header:
        table.add_column(column, justify="left" if column in ("env", "variant") else "right")
    for row in body:
        table.add_row(*row)
    console.print(table)


def markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" if h in ("env", "variant") else "---:" for h in header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def print_tables(console: Console, tables: list[tuple], with_markdown: bool) -> None:
    """Each `(title, header, body)` as a terminal table; then, with `with_markdown`, each again
    as Markdown under its bold title."""
    for title, header, body in tables:
        print_table(console, title, header, body)
    if with_markdown:
        for title, header, body in tables:
            print(f"\n**{title}**\n\n{markdown(header, body)}")


def fmt(x, spec: str = ",.1f", none: str = "-") -> str:
    """A table cell: `x` formatted with `spec`, or `none` for a missing value."""
    return none if x is None else format(x, spec)


def progress(message: str) -> None:
    print(message, flush=True)
