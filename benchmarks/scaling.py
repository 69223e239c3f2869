"""One run split over devices (the mesh's `envs` axis) against the same run on one device, on the
CPU: the cost of the split at 1, 2 and 4 forced host devices.

For each device count D of `--devices`, a fresh Python process is started with
`XLA_FLAGS=--xla_force_host_platform_device_count=D` (JAX fixes its device count when it starts)
and `platform.use_cpu_cores()` called, as `rlsuite train` does. In it, one run of each agent of
`--agents` trains under `jax.set_mesh(make_mesh(runs=1, envs=D))`, its environment batch (and
for SAC its replay buffer and sampled minibatches, for PPO its minibatches) split over the D
devices by the partitioner; with D = 1 the same run also trains without a mesh (`plain`), the
anchor every row is divided by. The agents and sizes (flags, defaults):

- `ppo`: PPO on `cartpole`, 64 envs x 32 steps per update, 4 minibatches of 512 steps (128 per
  device at D = 4), 4 epochs, (64, 64) networks; 32 updates (65,536 env steps) per call.
- `sac`: SAC on `pendulum`, 64 envs, batch 256 (64 per device at D = 4), 8 gradient steps per
  collection of 64 env steps, a buffer of 100,000, learning from env step 256, (256, 256)
  networks; 32 updates (2,048 env steps, 256 gradient steps) per call.

Timing, per (agent, layout): jitted `driver.init_batch` of one run; a first `driver.run_batch`
call from the initial state (compilation included; its metrics give the first update's losses);
then `run_batch` lowered and compiled ahead of time for that call's output (`second compile`:
a split run's output is placed otherwise than `init_batch` placed its input, so jit would
compile again on its second call; the ahead-of-time program is that second program; with one
device it is the first one, found in jit's cache), whose text gives the collectives
(`all-reduce`, `all-gather`, `reduce-scatter`, `all-to-all`, `collective-permute` instructions,
counted once each however often a loop runs them); then `--repeats` calls of the compiled
program, each from the previous one's output, blocked until ready. All of it `--rounds` times,
the device counts in turn (1, 2, 4, then 4, 2, 1), each time in a new process; the later rounds
find their programs in a compilation cache the first round filled (a temporary directory), so
the compile columns are the first round's. Env steps/s: env steps of a call over the fastest
call of any round (load from other jobs only slows calls down; the table shows each round's
figure too); the ratio: that over the `plain` D = 1 row's.

Agreement: the losses (`losses/*` metrics) of the first update that learned (PPO: the first; SAC:
the first after `learning_starts`) are compared with the `plain` run's, the largest absolute
difference over them shown (near 0, float rounding: the split program sums in another order).

**Forced CPU devices share the machine's cores.** On a 2-core machine four forced devices run on
two cores, and even one device's XLA program uses about one core for such small operations; the
figure is the overhead of the split (the all-reduce of the gradients per gradient step, the
all-gathers, and the host threads the devices share), not a speed-up. `platform.use_cpu_cores()`
turns XLA:CPU's YNNPACK fusions off where there are several devices, so the D >= 2 processes run
without them and the D = 1 process with them; the JSON records each process's `XLA_FLAGS`.
(`benchmarks/scaling_device.py` is the GPU side: one run's rate as its env batch grows.)

    python benchmarks/scaling.py            # 1, 2, 4 devices, both agents, 3 rounds: about 6 min
    python benchmarks/scaling.py --tiny     # tiny sizes, devices 1 and 2, PPO: about 30 s

Writes JSON to `--out` (default `benchmarks/results/scaling.json`) after every device count.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tyro
from report import check_args, command, fmt, machine_info, markdown, print_table, progress
from rich.console import Console

AGENTS = ("ppo", "sac")
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
# An HLO instruction's opcode (its async form included) after `= <shape> `.
_OPCODE = re.compile(r"=\s*\S.*?\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


@dataclasses.dataclass
class Args:
    """Flags of the CPU scaling benchmark."""

    devices: list[int] = dataclasses.field(default_factory=lambda: [1, 2, 4])
    """forced CPU device counts, one process each (each must divide the batches split)"""
    agents: list[str] | None = None
    """agents to measure, of ppo and sac (default: both; with --tiny, ppo)"""
    ppo_env: str = "cartpole"
    """PPO's environment"""
    ppo_num_envs: int = 64
    """PPO's environments (the whole batch, split over the devices)"""
    ppo_num_steps: int = 32
    """PPO's steps per environment per update"""
    ppo_num_minibatches: int = 4
    """PPO's minibatches per epoch"""
    ppo_update_epochs: int = 4
    """PPO's passes over each rollout"""
    ppo_hidden: int = 64
    """PPO's hidden units (two layers)"""
    ppo_updates: int = 32
    """PPO updates per timed call"""
    sac_env: str = "pendulum"
    """SAC's environment"""
    sac_num_envs: int = 64
    """SAC's environments (split over the devices, as its buffer is)"""
    sac_batch_size: int = 256
    """SAC's minibatch per gradient step (split over the devices)"""
    sac_gradient_steps: int = 8
    """SAC's gradient steps per collection of num_envs env steps"""
    sac_buffer_size: int = 100_000
    """SAC's replay buffer"""
    sac_learning_starts: int = 256
    """env steps before SAC learns"""
    sac_hidden: int = 256
    """SAC's hidden units (two layers)"""
    sac_updates: int = 32
    """SAC updates per timed call"""
    repeats: int = 3
    """compiled calls timed per run and round (the fastest of all counts: other jobs on the
    cores slow some calls down, never speed one up)"""
    rounds: int = 3
    """passes over the device counts (1, 2, 4, then 4, 2, 1, ...), each process new; the later
    ones find their programs in the compilation cache the first filled"""
    mesh_one: bool = True
    """with one device, also train under the mesh runs=1, envs=1 (beside the plain run)"""
    tiny: bool = False
    """a smoke run: tiny sizes, one repeat, devices 1 and 2, no mesh row at one device (these
    override their flags), PPO unless --agents says otherwise; its times mean nothing"""
    seed: int = 0
    """random seed (the same for every device count)"""
    child_timeout: int = 900
    """seconds a device count's process may take before it is stopped"""
    out: Path = Path("benchmarks/results/scaling.json")
    """JSON path"""
    child: int = 0
    """(internal) measure in this process, whose device count is this; write to --child-out"""
    child_out: Path | None = None
    """(internal) the child's JSON path"""


TINY = dict(
    ppo_num_envs=16,
    ppo_num_steps=8,
    ppo_num_minibatches=2,
    ppo_update_epochs=1,
    ppo_hidden=16,
    ppo_updates=2,
    sac_num_envs=16,
    sac_batch_size=32,
    sac_gradient_steps=1,
    sac_buffer_size=1024,
    sac_learning_starts=32,
    sac_hidden=16,
    sac_updates=4,
    repeats=1,
    rounds=1,
    devices=[1, 2],
    mesh_one=False,
)


def sized(args: Args) -> Args:
    """The flags in effect: `--tiny`'s sizes over the others, and the default agents."""
    if args.tiny:
        args = dataclasses.replace(args, **TINY)
    if args.agents is None:
        args = dataclasses.replace(args, agents=["ppo"] if args.tiny else list(AGENTS))
    return args


# ------------------------------------------------------------------------------ in the child
def build(name: str, args: Args):
    """`(agent, hparams, env steps per update)` of one agent at the flags' sizes."""
    from rlsuite import envs
    from rlsuite.agents import ppo, sac

    if name == "ppo":
        env, params = envs.make(args.ppo_env)
        config = ppo.PPOConfig(
            num_envs=args.ppo_num_envs,
            num_steps=args.ppo_num_steps,
            num_minibatches=args.ppo_num_minibatches,
            update_epochs=args.ppo_update_epochs,
            hidden_sizes=(args.ppo_hidden,) * 2,
            total_timesteps=10_000_000,
        )
        agent = ppo.make(config, env, params)
    else:
        env, params = envs.make(args.sac_env)
        config = sac.SACConfig(
            num_envs=args.sac_num_envs,
            batch_size=args.sac_batch_size,
            gradient_steps=args.sac_gradient_steps,
            buffer_size=args.sac_buffer_size,
            learning_starts=args.sac_learning_starts,
            hidden_sizes=(args.sac_hidden,) * 2,
            total_timesteps=10_000_000,
        )
        agent = sac.make(config, env, params)
    return agent, agent.default_hparams, agent.env_steps_per_update


def count_collectives(text: str) -> dict[str, int]:
    """Collective instructions in compiled HLO text, by opcode."""
    counts = dict.fromkeys(COLLECTIVES, 0)
    for match in _OPCODE.finditer(text):
        counts[match.group(1)] += 1
    return counts


def measure(name: str, args: Args, mesh) -> dict:
    """One run of agent `name` (under `mesh`, or with no mesh where None): times, collectives
    and the first call's per-update losses."""
    import contextlib

    import jax
    import numpy as np

    from rlsuite.loop import driver
    from rlsuite.loop.mesh import check_mesh

    agent, hp, steps_per_update = build(name, args)
    updates = args.ppo_updates if name == "ppo" else args.sac_updates
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    context = contextlib.nullcontext() if mesh is None else jax.set_mesh(mesh)
    with context:
        if mesh is not None:
            check_mesh(mesh, 1, agent.env_split)  # refuses sizes the devices do not divide
        begin = time.perf_counter()
        states = jax.block_until_ready(
            init(agent, jax.random.split(jax.random.key(args.seed), 1), hp)
        )
        init_s = time.perf_counter() - begin
        begin = time.perf_counter()
        states, metrics = jax.block_until_ready(run(agent, states, hp, updates))
        first_s = time.perf_counter() - begin
        losses = {
            k: np.asarray(v[0], np.float64).tolist()
            for k, v in metrics.items()
            if k.startswith("losses/")
        }
        begin = time.perf_counter()
        compiled = run.lower(agent, states, hp, updates).compile()
        compile_s = time.perf_counter() - begin
        collectives = count_collectives(compiled.as_text())
        times = []
        for _ in range(args.repeats):
            begin = time.perf_counter()
            states, metrics = jax.block_until_ready(compiled(states, hp))
            times.append(time.perf_counter() - begin)
    best = min(times)
    return {
        "agent": name,
        "env": args.ppo_env if name == "ppo" else args.sac_env,
        "config": {k: str(v) for k, v in dataclasses.asdict(agent.config).items()},
        "env_steps_per_call": updates * steps_per_update,
        "updates_per_call": updates,
        "init_s": init_s,
        "first_call_s": first_s,
        "compile_s": compile_s,
        "call_s": times,
        "env_steps_per_s": updates * steps_per_update / best,
        "collectives": collectives,
        "losses": losses,
    }


def child(args: Args) -> int:
    """Measure every agent at this process's device count; write the JSON to `--child-out`."""
    import jax

    from rlsuite.loop import platform
    from rlsuite.loop.mesh import make_mesh

    platform.use_cpu_cores()  # as `rlsuite train`: XLA_FLAGS set the count; the CPU flags follow
    count = len(jax.devices())
    if count != args.child:
        raise RuntimeError(f"asked for {args.child} CPU devices, JAX has {count}")
    layouts = [("plain", None)] if count == 1 else []
    if count > 1 or args.mesh_one:
        layouts.append((f"mesh runs=1, envs={count}", make_mesh(runs=1, envs=count)))
    result = {"devices": count, "xla_flags": os.environ.get("XLA_FLAGS", ""), "rows": []}
    for name in args.agents:
        for layout, mesh in layouts:
            row = {"devices": count, "layout": layout, **measure(name, args, mesh)}
            result["rows"].append(row)
            progress(
                f"  {name} {layout}: {row['env_steps_per_s']:,.0f} env steps/s, first call "
                f"{row['first_call_s']:.1f} s, compile {row['compile_s']:.1f} s, "
                f"collectives {sum(row['collectives'].values())}"
            )
            args.child_out.write_text(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------ in the parent
def in_child(args: Args, devices: int, tmp: str) -> dict:
    """This script's measurements in a child process with `devices` forced CPU devices, and
    JAX's compilation cache in `tmp` (unless `JAX_COMPILATION_CACHE_DIR` names one): its JSON
    (what it wrote before it ended, or was stopped at `--child-timeout`), return code and time."""
    env = dict(os.environ)
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", ""))
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env.pop("JAX_NUM_CPU_DEVICES", None)
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(tmp) / "cache"))
    out = Path(tmp) / f"child-{devices}.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, __file__, *sys.argv[1:], "--child", str(devices)]
    command += ["--child-out", str(out)]
    begin = time.perf_counter()
    try:
        rc = subprocess.run(command, env=env, timeout=args.child_timeout).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    result = json.loads(out.read_text()) if out.exists() else {"devices": devices}
    result.setdefault("rows", [])
    result.update(returncode=rc, process_s=time.perf_counter() - begin)
    return result


def merge(rows: list[dict], new: list[dict], round_: int) -> None:
    """Add a round's rows to `rows`: a row measured before keeps its first round's compile
    times and losses (later rounds find the programs in the compilation cache) and gains the
    new calls; its rate is that of the fastest call of any round."""
    for row in new:
        key = (row["agent"], row["devices"], row["layout"])
        old = next((r for r in rows if (r["agent"], r["devices"], r["layout"]) == key), None)
        rate = row["env_steps_per_s"]
        if old is None:
            rows.append({**row, "rates_by_round": [rate], "call_s_by_round": [row["call_s"]]})
            continue
        old["rates_by_round"].append(rate)
        old["call_s_by_round"].append(row["call_s"])
        old["env_steps_per_s"] = max(old["rates_by_round"])
        old[f"first_call_s_round_{round_}"] = row["first_call_s"]


def first_learning_update(losses: dict) -> int | None:
    """The first update index at which every loss is finite (SAC's first learning update)."""
    import math

    length = min((len(v) for v in losses.values()), default=0)
    for i in range(length):
        if all(math.isfinite(v[i]) for v in losses.values()):
            return i
    return None


def compare(rows: list[dict]) -> None:
    """Each row's ratio to, and first-update loss difference from, its agent's `plain` row."""
    for row in rows:
        anchor = next(
            (r for r in rows if r["agent"] == row["agent"] and r["layout"] == "plain"), None
        )
        if anchor is None:
            row.update(ratio=None, first_update=None, first_update_max_abs_diff=None)
            continue
        row["ratio"] = row["env_steps_per_s"] / anchor["env_steps_per_s"]
        index = first_learning_update(anchor["losses"])
        row["first_update"] = index
        if index is None:
            row["first_update_max_abs_diff"] = None
            continue
        diffs = {k: abs(row["losses"][k][index] - v[index]) for k, v in anchor["losses"].items()}
        row["first_update_diffs"] = diffs
        row["first_update_max_abs_diff"] = max(diffs.values())


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of every agent and device count, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the scaling page)."""
    data = result
    header = [
        "agent",
        "devices",
        "layout",
        "env steps/s",
        "by round",
        "ratio to 1 device",
        "all-reduce",
        "all-gather",
        "first update max abs diff",
        "second compile (s)",
        "first call (s)",
    ]
    body = []
    for r in data["rows"]:
        c = r["collectives"]
        others = ", ".join(
            f"{v} {k}" for k, v in c.items() if v and k not in ("all-reduce", "all-gather")
        )
        body.append(
            [
                f"{r['agent']} ({r['env']})",
                str(r["devices"]),
                r["layout"],
                fmt(r["env_steps_per_s"], ",.0f"),
                " / ".join(fmt(x, ",.0f") for x in r["rates_by_round"]),
                fmt(r.get("ratio"), ".2f"),
                str(c["all-reduce"]) + (f" (+ {others})" if others else ""),
                str(c["all-gather"]),
                "anchor"
                if r["layout"] == "plain"
                else fmt(r.get("first_update_max_abs_diff"), ".1e"),
                fmt(r["compile_s"]),
                fmt(r["first_call_s"]),
            ]
        )
    title = (
        f"One run split over forced CPU devices (mesh envs=D), env steps/s and its ratio to one "
        f"device; {data['machine']['cpus_usable']} CPU cores shared by every device"
    )
    return [(title, header, body)]


def main(args: Args) -> int:
    args = sized(args)
    check_args(args, may_be_zero=("child",), choices={"agents": AGENTS})
    if args.child:
        return child(args)
    if 1 not in args.devices:
        raise ValueError("--devices must include 1 (the anchor every row is divided by)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": machine_info(),
        "command": command(),
        "processes": [],
        "rows": [],
    }
    start = time.perf_counter()
    counts = sorted(set(args.devices))
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            # One process at a time (they do not share the cores), in the reverse order every
            # other round, so that a drift of the machine's load favours no device count.
            for devices in counts if round_ % 2 == 0 else counts[::-1]:
                progress(f"round {round_ + 1}, {devices} device(s): a process of its own")
                result = in_child(args, devices, tmp)
                rows = result.pop("rows")
                data["processes"].append({"round": round_ + 1, **result})
                merge(data["rows"], rows, round_ + 1)
                if result["returncode"] != 0:
                    progress(f"{devices} device(s): the process ended with {result['returncode']}")
                compare(data["rows"])
                data["wall_s"] = time.perf_counter() - start
                data["load_average_at_end"] = os.getloadavg()
                args.out.write_text(json.dumps(data, indent=1))
    for title, header, body in tables(data):
        print_table(Console(width=220), title, header, body)
        print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    print(f"{data['wall_s']:.0f} s in all; wrote {args.out}")
    return 0 if all(p["returncode"] == 0 for p in data["processes"]) else 1


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
