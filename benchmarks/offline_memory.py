"""Peak resident memory of the offline agents against the number of updates in a chunk.

A run is trained in chunks: one compiled `lax.scan` of `chunk` updates (`driver.run_batch`),
called again and again, with the metrics brought to the host in between, as `rlsuite train` does.
The memory a chunk needs must not grow with its length. Each measurement is a fresh process
(`rlsuite train`'s set-up: `platform.use_cpu_cores()`, the dataset read from a D4RL-layout HDF5
file, the agent's default sizes: (256, 256) networks, batch 256) whose peak resident set size
(`ru_maxrss` of the child, from `os.wait4`) includes start-up and compilation; `ready` is the
child's own peak after compilation, before the first chunk runs.

The dataset is 20,000 Pendulum transitions of uniformly random actions (the values do not change
what an update costs). Two tables:
- peak memory of each agent, 1 and 2 seeds, in chunks of 1, 10 and 100 updates
  (`--grid-updates` updates of `--grid-gradient-steps` gradient steps in all; CQL, whose step
  costs tens of IQL's on a CPU, `--cql-gradient-steps`), and the memory held per update of a
  chunk (the slope from the shortest chunk to the longest);
- 2 seeds, `--compare-updates` updates in one chunk against the same in `--compare-chunks`
  chunks, and their ratio; for `--contrast-agents` also with XLA:CPU's YNNPACK fusions left on,
  i.e. the CPU devices made without `platform.use_cpu_cores` (as it made them before it turned
  those fusions off), where every matrix product held memory until the chunk ended.

    python benchmarks/offline_memory.py                   # defaults
    python benchmarks/offline_memory.py --agents iql bc --compare-gradient-steps 100
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import tyro
from report import check_args, command, machine_info, markdown, print_table
from rich.console import Console

HERE = Path(__file__).resolve().parent
AGENTS = ("bc", "td3_bc", "cql", "iql")


@dataclasses.dataclass
class Args:
    """Flags of the offline memory benchmark."""

    agents: list[str] = dataclasses.field(default_factory=lambda: list(AGENTS))
    """agents to measure"""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 2])
    """numbers of seeds of the chunk-length table (split over the CPU devices, as in training)"""
    chunk_updates: list[int] = dataclasses.field(default_factory=lambda: [1, 10, 100])
    """updates per chunk of the chunk-length table; each divides --grid-updates"""
    grid_updates: int = 100
    """updates of each run of the chunk-length table"""
    grid_gradient_steps: int = 2
    """gradient steps per update in the chunk-length table"""
    compare_updates: int = 200
    """updates of the comparison runs (2 seeds), in one chunk and in --compare-chunks chunks"""
    compare_chunks: int = 20
    """chunks of the comparison's chunked run; divides --compare-updates"""
    compare_gradient_steps: int = 10
    """gradient steps per update of the comparison runs"""
    cql_gradient_steps: int = 1
    """CQL's gradient steps per update in both tables (its step costs tens of IQL's on a CPU)"""
    contrast_agents: list[str] = dataclasses.field(default_factory=lambda: ["iql"])
    """agents whose comparison is also run with YNNPACK fusions on (none: an empty list)"""
    dataset_size: int = 20_000
    """Pendulum transitions in the dataset"""
    cpu_devices: int | None = None
    """CPU cores made JAX devices in each measurement (default: every core)"""
    timeout: int = 900
    """seconds a measurement may take"""
    out: Path = Path("benchmarks/results/offline_memory.json")
    """Where to write the JSON results."""


def make_dataset(path: Path, size: int) -> None:
    """`size` Pendulum transitions of uniformly random actions, written as a D4RL file."""
    from rlsuite import envs
    from rlsuite.data.dataset_files import save_d4rl
    from rlsuite.data.datasets import DatasetInfo, from_transitions
    from rlsuite.loop.rollout import reset_batch, rollout

    env, params = envs.make("pendulum")
    space = env.action_space(params)
    num_envs = 20
    steps = -(-size // num_envs)
    key_reset, key_rollout = jax.random.split(jax.random.key(0))

    def policy(key, obs):
        shape = (obs.shape[0], *space.shape)
        return jax.random.uniform(key, shape, minval=space.low, maxval=space.high), {}

    batch = reset_batch(env, params, key_reset, num_envs)
    _, tr = rollout(env, params, policy, key_rollout, batch, steps)
    info = DatasetInfo(env="pendulum", quality="random", algo="uniform")
    data = from_transitions(tr, info)
    data = jax.tree.map(lambda x: x[:size], data)
    save_d4rl(path, data)


def child(spec: dict) -> None:
    """One measurement (run in its own process): prints a JSON line."""
    if spec["ynnpack"]:  # the CPU devices as use_cpu_cores made them before it turned YNN off
        cores = spec["cpu_devices"] or len(os.sched_getaffinity(0))
        jax.config.update("jax_num_cpu_devices", cores)
        devices = len(jax.devices("cpu"))
    else:
        from rlsuite.loop import platform

        devices = platform.use_cpu_cores(spec["cpu_devices"])
    import resource

    from rlsuite import envs
    from rlsuite.agents import bc, cql, iql, td3_bc
    from rlsuite.data.dataset_files import load_d4rl
    from rlsuite.loop import driver

    makers = {
        "bc": (bc.make, bc.BCConfig),
        "td3_bc": (td3_bc.make, td3_bc.TD3BCConfig),
        "cql": (cql.make, cql.CQLConfig),
        "iql": (iql.make, iql.IQLConfig),
    }
    env, params = envs.make("pendulum")
    data = load_d4rl(spec["dataset"], env, params)
    make, Config = makers[spec["agent"]]
    config = Config(num_updates=spec["updates"], gradient_steps=spec["gradient_steps"])
    agent = make(config, env, params)
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(0), spec["seeds"])
    states = driver.init_batch(agent, keys, hp, None, data)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4), donate_argnums=(1,))
    compiled = run.lower(agent, states, hp, spec["chunk"], None, data).compile()
    ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for _ in range(spec["updates"] // spec["chunk"]):
        states, metrics = compiled(states, hp, data)
        metrics = jax.device_get(metrics)  # to the host between chunks, as a logger takes them
    seconds = time.perf_counter() - start
    finite = all(np.isfinite(np.asarray(v)).all() for v in jax.tree.leaves(metrics))
    xla_flags = os.environ.get("XLA_FLAGS", "")
    print(
        json.dumps(
            {
                "devices": devices,
                "ready_mib": ready / 1024,
                "seconds": seconds,
                "finite": bool(finite),
                "xla_flags": xla_flags,
            }
        )
    )


def measure(spec: dict, timeout: int) -> dict:
    """`child(spec)` in a fresh process: its JSON line and its peak resident memory."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import offline_memory as m; "
    code += f"m.child({spec!r})"
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"measurement {spec} failed ({proc.returncode}):\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    return {**result, "peak_mib": usage.ru_maxrss / 1024}


def row(spec: dict, result: dict) -> dict:
    keep = ("agent", "seeds", "chunk", "updates", "gradient_steps", "ynnpack")
    return {
        **{k: spec[k] for k in keep},
        "chunks": spec["updates"] // spec["chunk"],
        "devices": result["devices"],
        "peak_mib": round(result["peak_mib"]),
        "ready_mib": round(result["ready_mib"]),
        "seconds": round(result["seconds"], 1),
        "finite": result["finite"],
    }


def gradient_steps(agent: str, steps: int, args: Args) -> int:
    return args.cql_gradient_steps if agent == "cql" else steps


def run_grid(args: Args, dataset: Path) -> list[dict]:
    rows = []
    for agent in args.agents:
        for seeds in args.seeds:
            for chunk in args.chunk_updates:
                spec = {
                    "agent": agent,
                    "seeds": seeds,
                    "chunk": chunk,
                    "updates": args.grid_updates,
                    "gradient_steps": gradient_steps(agent, args.grid_gradient_steps, args),
                    "ynnpack": False,
                    "cpu_devices": args.cpu_devices,
                    "dataset": str(dataset),
                }
                rows.append(row(spec, measure(spec, args.timeout)))
                print(json.dumps(rows[-1]), flush=True)
    return rows


def run_compare(args: Args, dataset: Path) -> list[dict]:
    rows = []
    variants = [(agent, False) for agent in args.agents]
    variants += [(agent, True) for agent in args.contrast_agents]
    for agent, ynnpack in variants:
        chunk_of_many = args.compare_updates // args.compare_chunks
        for chunk in (args.compare_updates, chunk_of_many):
            spec = {
                "agent": agent,
                "seeds": 2,
                "chunk": chunk,
                "updates": args.compare_updates,
                "gradient_steps": gradient_steps(agent, args.compare_gradient_steps, args),
                "ynnpack": ynnpack,
                "cpu_devices": args.cpu_devices,
                "dataset": str(dataset),
            }
            rows.append(row(spec, measure(spec, args.timeout)))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def grid_table(rows: list[dict], args: Args) -> tuple[list[str], list[list[str]]]:
    chunks = sorted(args.chunk_updates)
    header = ["agent", "gradient steps", "seeds"] + [f"peak MiB, chunk {c}" for c in chunks]
    header += ["MiB held per update"]
    body = []
    for agent in args.agents:
        for seeds in args.seeds:
            mine = [r for r in rows if (r["agent"], r["seeds"]) == (agent, seeds)]
            peaks = {r["chunk"]: r["peak_mib"] for r in mine}
            slope = (peaks[chunks[-1]] - peaks[chunks[0]]) / max(chunks[-1] - chunks[0], 1)
            steps = str(mine[0]["gradient_steps"])
            body.append([agent, steps, str(seeds)] + [str(peaks[c]) for c in chunks])
            body[-1].append(f"{slope:.2f}")
    return header, body


def compare_table(rows: list[dict], args: Args) -> tuple[list[str], list[list[str]], list[dict]]:
    many = args.compare_chunks
    header = ["agent", "variant", "gradient steps", "peak MiB, 1 chunk"]
    header += [f"peak MiB, {many} chunks", "ratio"]
    header += ["s, 1 chunk", f"s, {many} chunks"]
    body, ratios = [], []
    for agent, ynnpack in dict.fromkeys((r["agent"], r["ynnpack"]) for r in rows):
        pair = [r for r in rows if (r["agent"], r["ynnpack"]) == (agent, ynnpack)]
        one = next(r for r in pair if r["chunks"] == 1)
        chunked = next(r for r in pair if r["chunks"] == many)
        ratio = one["peak_mib"] / chunked["peak_mib"]
        variant = "YNNPACK on (before)" if ynnpack else "default"
        ratios.append({"agent": agent, "ynnpack": ynnpack, "ratio": round(ratio, 2)})
        body.append([agent, variant, str(one["gradient_steps"]), str(one["peak_mib"])])
        body[-1] += [str(chunked["peak_mib"]), f"{ratio:.2f}"]
        body[-1] += [str(one["seconds"]), str(chunked["seconds"])]
    return header, body, ratios


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the peaks by updates per chunk and of one chunk against many,
    from the JSON `main` writes (`benchmarks/tables.py` renders it on the offline memory page)."""
    args = SimpleNamespace(**result["args"])
    grid = f"Peak resident memory, {args.grid_updates} updates, by updates per chunk"
    compare = f"2 seeds, {args.compare_updates} updates: one chunk against {args.compare_chunks}"
    header, body, _ = compare_table(result["compare"], args)
    return [(grid, *grid_table(result["grid"], args)), (compare, header, body)]


def check(args: Args) -> None:
    check_args(args, choices={"agents": AGENTS, "contrast_agents": AGENTS})
    for chunk in args.chunk_updates:
        if args.grid_updates % chunk:
            raise ValueError(f"--chunk-updates {chunk} does not divide --grid-updates")
    if args.compare_updates % args.compare_chunks:
        raise ValueError("--compare-chunks must divide --compare-updates")


def main(args: Args) -> None:
    check(args)
    console = Console(width=160)
    machine = machine_info()
    console.print(f"machine: {machine['cpu']}, {machine['cpus_usable']} usable cores")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "pendulum_random.hdf5"
        make_dataset(dataset, args.dataset_size)
        grid = run_grid(args, dataset)
        compare = run_compare(args, dataset)
    report = {
        "machine": machine,
        "command": command(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "seconds": round(time.perf_counter() - start),
        "grid": grid,
        "compare": compare,
        "ratios": compare_table(compare, args)[2],
    }
    for title, header, body in tables(report):
        print_table(console, title, header, body)
        print(markdown(header, body))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main(tyro.cli(Args))
