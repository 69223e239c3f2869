"""Our agents trained beside another implementation of the same algorithm, on one machine, in one
run: what `ppo.py` and `off_policy.py` share.

Two ways to compare:
- Vmapped anchors (PureJaxRL, rejax) and brax.training beside ours for a fixed number of updates:
  each side's first call includes compilation, the best of the later ones does not
  (`take_turns`, `beside_brax`, `summarise`, `comparison_table`). brax.training cannot vmap
  seeds: N brax runs go one after another, and its compile-free time is its own per-epoch
  `training/walltime` over the epochs after the first, scaled to the whole run (`brax_run`).
- Time to a return threshold, or the return reached within a wall-clock budget, with periodic
  evaluations on both sides (`curve_rows`, `train_with_evals`, `brax_with_evals`,
  `curve_table`).

brax.training 0.14 calls `jax.device_put_replicated`, gone from current JAX: `install_brax_shim`
puts it back (see there).
"""

from __future__ import annotations

import dataclasses
import faulthandler
import functools
import gc
import json
import os
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from report import command, fmt, machine_info, print_tables, progress
from rich.console import Console

from rlsuite import envs
from rlsuite.loop import driver, platform
from rlsuite.loop.agent import config_dict
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import RecurrentPolicy
from rlsuite.ops.bootstrap import bootstrap_ci

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------- set-up
@dataclasses.dataclass
class SideBySideArgs:
    """Flags of every side-by-side benchmark (a script's `Args` adds its own)."""

    cpu_devices: int | None = None
    """CPU cores made JAX devices before anything runs (`platform.use_cpu_cores`; None: every
    core, as `rlsuite train` does). Ours splits its seeds over them; the vmapped anchors
    (`jit(vmap(train))`) run on one device, as their READMEs do; brax.training's `train` splits
    its envs over all local devices (its `pmap`). 1: every side on one device."""
    seed: int = 0
    """Base seed; each N gets its own keys."""
    eval_episodes: int = 10
    """Deterministic evaluation episodes per seed of the fixed-length comparisons (every side,
    our evaluator on our env)."""
    brax: bool = True
    """Run the comparison with brax.training's implementation of the same algorithm."""
    brax_seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """Numbers of seeds for the Brax comparison (ours vmapped, brax sequential)."""
    brax_env: str = "inverted_pendulum"
    """Brax environment of that comparison (ours: envs.make("brax/<env>"))."""
    brax_backend: str = "mjx"
    """Its brax physics backend."""
    brax_epochs: int = 4
    """Brax training epochs per run (its host loop); >= 2 so that epochs after the compiling
    first one give the compile-free rate (PPO: it must divide brax_updates)."""
    brax_max_devices: int | None = 1
    """brax.training's `max_devices_per_host`: the devices its `pmap` splits the envs over
    (None: all). 1 by default, its faster setting on a CPU whose cores are devices
    (`--cpu-devices`; docs/benchmarks/cpu-performance.md)."""
    out: Path = Path("benchmarks/results/side_by_side.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for its page, docs/benchmarks/)."""


def install_brax_shim() -> None:
    """`jax.device_put_replicated` for brax.training 0.14, which calls it and current JAX lacks.

    It replicates with an identity `pmap` over brax's axis name "i", so that the replicated
    training state carries the same sharding as the outputs of brax's `pmap`ped training epoch (a
    plain `device_put` works too, but then brax compiles its training epoch twice per run: once
    for the shim's sharding, once for its own)."""
    if hasattr(jax, "device_put_replicated"):
        return

    def device_put_replicated(x, devices):
        stacked = jax.tree.map(lambda a: jnp.stack([jnp.asarray(a)] * len(devices)), x)
        return jax.pmap(lambda a: a, axis_name="i", devices=devices)(stacked)

    jax.device_put_replicated = device_put_replicated


def brax_pair(name: str, backend: str, episode_length: int | None = None):
    """`(env, env_params, brax_env)`: ours (`envs.make("brax/<name>")`, a `TimeLimit` of
    `episode_length`, default 1000) and brax's own environment of the same name for
    brax.training's `train`; the shim installed first. A Playground name
    (`playground/CartpoleBalance`) pairs ours with Playground's own environment (`backend` is
    not used; give brax.training `brax_train_extras(name)` too)."""
    install_brax_shim()
    limit = {} if episode_length is None else {"max_episode_steps": episode_length}
    if name.startswith("playground/"):
        env, env_params = envs.make(name, **limit)
        return env, env_params, env.env.playground_env
    from brax import envs as brax_envs

    env, env_params = envs.make(f"brax/{name}", backend=backend, **limit)
    return env, env_params, brax_envs.get_environment(name, backend=backend)


def brax_train_extras(name: str) -> dict:
    """brax.training `train` keywords the environment of `brax_pair(name, ...)` needs: a
    Playground environment is wrapped by Playground's `wrap_for_brax_training` (its default
    auto-reset: every episode of an env from one cached first state)."""
    if not name.startswith("playground/"):
        return {}
    from mujoco_playground import wrapper

    return {"wrap_env_fn": wrapper.wrap_for_brax_training}


def env_label(name: str, backend: str) -> str:
    """How a table names the environment of `brax_pair(name, backend)`."""
    return name if name.startswith("playground/") else f"brax/{name} ({backend})"


def set_up(args) -> tuple[Console, dict]:
    """Every CPU core made a JAX device (`args.cpu_devices`; before the first computation), the
    machine described and printed: `(console, machine)`."""
    console = Console(width=220)
    platform.use_cpu_cores(args.cpu_devices)
    machine = machine_info()
    machine["compilation_cache_dir"] = jax.config.jax_compilation_cache_dir
    console.print(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} usable cores, "
        f"{len(machine['devices'])} JAX devices, "
        f"jax {machine['versions']['jax']} ({machine['jax_backend']}), persistent compilation "
        f"cache: {machine['compilation_cache_dir'] or 'off'}"
    )
    return console, machine


def git_info() -> dict:
    def git(*cmd):
        try:
            return subprocess.run(
                ["git", *cmd], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_in_rlsuite_envs": bool(git("status", "--porcelain", "rlsuite", "envs")),
    }


def args_dict(args) -> dict:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


def write_result(args, machine: dict, anchors: dict, start: float, parts: dict) -> dict:
    """The whole run's JSON (machine, git, anchors, the command and its flags, wall time, load,
    then `parts`: the rows of each comparison), written to `args.out` and returned."""
    result = {
        "machine": machine,
        "command": command(),
        "git": git_info(),
        "anchors": anchors,
        "args": args_dict(args),
        "total_wall_s": time.perf_counter() - start,
        "load_average_at_end": list(os.getloadavg()),
        **parts,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tracked, curves = split_curves(result)
    args.out.write_text(json.dumps(tracked, indent=2, default=float))
    if curves:
        curves_path(args.out).write_text(json.dumps(curves, default=float))
    return result


CURVES = ("train_return_curve",)  # per-update series: thousands of numbers a side


def curves_path(out: Path) -> Path:
    """Where the per-update curves of the JSON `out` go: beside it, ignored by git."""
    return out.with_name(f"{out.stem}.curves.json")


def split_curves(result: dict) -> tuple[dict, dict]:
    """`result` without its per-update curves (`CURVES`: the JSON that is tracked and makes the
    tables), and those curves by their path in it, `"part/0/side/train_return_curve"`."""
    curves = {}

    def strip(node, path):
        if isinstance(node, dict):
            kept = {}
            for key, value in node.items():
                if key in CURVES:
                    curves["/".join([*path, key])] = value
                else:
                    kept[key] = strip(value, [*path, key])
            return kept
        if isinstance(node, list):
            return [strip(value, [*path, str(i)]) for i, value in enumerate(node)]
        return node

    return strip(result, []), curves


def show(console: Console, args, result: dict, tables: list[tuple]) -> None:
    """The tables (and, with `args.markdown`, their Markdown) and where the JSON went."""
    print_tables(console, tables, args.markdown)
    console.print(f"wrote {args.out} (whole run {result['total_wall_s']:.0f}s)")


def save_partial(args, name: str, rows: list[dict]) -> None:
    """Write what is done so far to `args.out`, so that a run killed at its limit leaves it."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = {"partial": True, "args": {k: str(v) for k, v in vars(args).items()}, name: rows}
    args.out.write_text(json.dumps(partial, indent=2, default=float))


def hparams_dict(hp) -> dict:
    return {f.name: float(getattr(hp, f.name)) for f in dataclasses.fields(hp)}


# ------------------------------------------------------------------------------- fixed-length runs
def timed(fn, *args) -> tuple[float, Any]:
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - start, out


def timed_compile(fn, *args):
    """`(compiled, seconds)`: `fn` (jitted) lowered and compiled ahead of time for `args`."""
    start = time.perf_counter()
    compiled = fn.lower(*args).compile()
    return compiled, time.perf_counter() - start


def mean_interval(values) -> dict:
    """`{"mean", "ci"}`: the mean of `values` (one per seed) and its 95% percentile bootstrap
    interval across seeds (of a paired difference, when `values` are each seed's differences)."""
    values = np.asarray(values, np.float64)
    low, high = bootstrap_ci(values[:, None])
    return {"mean": float(values.mean()), "ci": [float(low[0]), float(high[0])]}


def nanmean(x, axis=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def summarise(side: dict, n: int, steps_per_update: int, num_updates: int) -> dict:
    """Derived columns from the raw times, per-update returns and evaluation returns."""
    first, steady = side["first_call_s"], min(side["steady_s"])
    side["wall_incl_compile_s"] = first
    side["wall_excl_compile_s"] = steady
    side["compile_s"] = max(first - steady, 0.0)
    side["env_steps_per_s"] = n * num_updates * steps_per_update / steady
    if "train_returns" in side:
        returns = np.asarray(side.pop("train_returns"), np.float64)  # [N, U]
        tail = max(1, num_updates // 10)
        side["train_return_last10pct"] = float(nanmean(nanmean(returns[:, -tail:], axis=1)))
        side["train_return_curve"] = [round(float(x), 2) for x in nanmean(returns, axis=0)]
    evals = np.asarray(side.pop("eval_returns"))  # [N, episodes]
    side["eval_return_mean"] = float(evals.mean())
    side["eval_return_min_seed"] = float(evals.mean(axis=1).min())
    return side


def time_to_threshold(side: dict, threshold: float, steps_per_update: int, num_updates: int):
    curve = np.asarray(side["train_return_curve"], np.float64)
    hits = np.flatnonzero(curve >= threshold)
    if hits.size == 0:
        side.update(threshold_update=None, threshold_env_steps=None, threshold_s=None)
        return
    updates = int(hits[0]) + 1
    side["threshold_update"] = updates
    side["threshold_env_steps"] = updates * steps_per_update
    side["threshold_s"] = side["wall_excl_compile_s"] * updates / num_updates
    side["threshold_s_incl_compile"] = side["compile_s"] + side["threshold_s"]


def ratios(ours: dict, anchor: dict) -> dict:
    keys = ("wall_incl_compile_s", "wall_excl_compile_s", "env_steps_per_s", "threshold_s")
    return {
        k: ours[k] / anchor[k] if ours.get(k) and anchor.get(k) else None for k in keys if k in ours
    }


def call_with_timeout(fn, seconds: int):
    """`fn` as a call that waits for its result under a hard limit of `seconds`: past it, every
    thread's stack is dumped and the process exits (pytest-timeout's thread method), since a
    deadlocked XLA computation cannot be interrupted from Python."""

    def call():
        faulthandler.dump_traceback_later(seconds, exit=True)
        try:
            return jax.block_until_ready(fn())
        finally:
            faulthandler.cancel_dump_traceback_later()

    return call


def keys_for(seed: int, n: int) -> tuple[jax.Array, jax.Array]:
    """`(keys [n], key_eval)` of the comparison with n seeds: the same on both sides."""
    key_train, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(seed), n))
    return jax.random.split(key_train, n), key_eval


def ours_vmapped(agent, hp, num_updates: int):
    """Ours as `train(keys) -> (states, metrics)`: len(keys) runs of `num_updates` updates,
    vmapped (jitted `driver.init_batch`, then `driver.run_batch`); and `returns(out, key,
    episodes)`: a side's `train_returns` `[N, U]` (episodic return per update) and
    `eval_returns` `[N, episodes]` (deterministic, `driver.evaluate_batch`) from `train`'s
    output."""
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    evaluate_runs = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))

    def train(keys):
        states = init(agent, keys, hp)
        return run(agent, states, hp, num_updates)

    def returns(out, key_eval, episodes: int) -> dict:
        states, metrics = out
        return {
            "train_returns": np.asarray(metrics["charts/episodic_return"]),
            "eval_returns": evaluate_runs(agent, states, key_eval, episodes).returns,
        }

    return train, returns


def take_turns(calls: dict[str, Callable], repeats: int, label: str) -> tuple[dict, dict]:
    """Each side's call once (compilation included: `first_call_s`), then `repeats` rounds of
    compile-free calls, the sides taking turns (`steady_s`). Returns `(sides, outputs)`: per
    side its times, and its last call's output."""
    sides = {name: {"steady_s": []} for name in calls}
    outs = {}
    for name, call in calls.items():  # first calls: compile included
        sides[name]["first_call_s"], outs[name] = timed(call)
        progress(f"{label} {name}: first call {sides[name]['first_call_s']:.1f}s")
    for _ in range(repeats):  # compile-free calls, sides taking turns
        for name, call in calls.items():
            seconds, outs[name] = timed(call)
            sides[name]["steady_s"].append(seconds)
            progress(f"{label} {name}: compiled call {seconds:.1f}s")
    return sides, outs


def summarise_sides(sides: dict, n: int, steps_per_update: int, num_updates: int, threshold):
    """`summarise` and `time_to_threshold` of every side."""
    for side in sides.values():
        summarise(side, n, steps_per_update, num_updates)
        time_to_threshold(side, threshold, steps_per_update, num_updates)


def brax_run(train_fn: Callable, seed: int, epochs: int) -> dict:
    """One brax.training run, `train_fn(seed=seed, progress_fn=...)` of `epochs` training epochs:
    its wall time, its compile-free estimate (the epochs after the first, by its own
    `training/walltime`, scaled to all `epochs`), its policy, and its evaluations `(env steps,
    return, evaluator's wall time so far)` where brax ran its evaluator."""
    walls, evals = [], []

    def progress_fn(step, metrics):
        if "eval/episode_reward" in metrics:
            reward, seconds = metrics["eval/episode_reward"], metrics["eval/walltime"]
            evals.append((int(step), float(reward), float(seconds)))
        if "training/walltime" in metrics:
            walls.append(float(metrics["training/walltime"]))

    start = time.perf_counter()
    make_policy, params, _ = train_fn(seed=seed, progress_fn=progress_fn)
    wall = time.perf_counter() - start
    epoch_s = np.diff([0.0, *walls])
    steady = float(epoch_s[1:].sum() * epochs / (epochs - 1))
    return {
        "wall": wall,
        "steady": steady,
        "params": params,
        "make_policy": make_policy,
        "evals": evals,
    }


def evaluate_params(
    env, env_params, act: Callable, params, key, episodes: int, initial: Callable | None = None
) -> jax.Array:
    """`[N, episodes]` returns of N policies through our evaluator on our env (the one every side
    is scored with): `params` holds N parameter sets stacked on a leading axis, and
    `act(params, key, obs) -> action` is one set's policy. A policy with memory gives `initial(
    num_envs) -> carry`, the carry of fresh episodes, and `act(params, key, obs, carry) ->
    (action, carry)`: each episode starts from that carry and keeps what `act` returns."""

    def one(params, key):
        def policy(key, obs):
            return act(params, key, obs), {}

        def with_memory(key, obs, carry):
            action, carry = act(params, key, obs, carry)
            return action, {}, carry

        played = policy if initial is None else RecurrentPolicy(with_memory, initial)
        return evaluate(env, env_params, played, key, episodes).returns

    keys = jax.random.split(key, jax.tree.leaves(params)[0].shape[0])
    return jax.jit(jax.vmap(one))(params, keys)


def evaluate_brax(env, env_params, make_policy, params: list, key, episodes: int) -> jax.Array:
    """`evaluate_params` of brax.training's deterministic policies, one parameter set per run."""

    def act(params, key, obs):
        return make_policy(params, deterministic=True)(obs, key)[0]

    stacked = jax.tree.map(lambda *x: jnp.stack(x), *params)
    return evaluate_params(env, env_params, act, stacked, key, episodes)


def beside_brax(
    args,
    agent,
    hp,
    env_and_params: tuple,
    one_brax_run: Callable[[int], dict],
    describe: Callable[[dict], str],
    per_run: Callable[[list[dict]], dict],
    row: dict,
) -> list[dict]:
    """One row per n in sorted `args.brax_seeds`, ours beside brax.training for a fixed number of
    updates: `{**row (its "env" first), "num_seeds", "env_steps_per_seed", "num_updates", ...,
    "ours", "brax", "ours_over_brax"}`, both sides `summarise`d.

    Ours: n seeds vmapped (`ours_vmapped`), a first call then `args.repeats` compiled calls.
    brax: `one_brax_run(seed)` for seeds `args.seed, args.seed + 1, ...`, in sequence; run i does
    not depend on n, so a smaller n reuses the first runs of a larger one. Its times are the sums
    over its n runs (`wall`, `steady`), plus `per_run(runs)`; `describe(run)` is its progress
    line. Both are evaluated with our evaluator on `env_and_params`, from the same key."""
    steps_per_update, num_updates = agent.env_steps_per_update, agent.config.num_updates
    train, returns = ours_vmapped(agent, hp, num_updates)
    rows, runs = [], []
    for n in sorted(args.brax_seeds):
        keys, key_eval = keys_for(args.seed, n)
        ours, anchor = {"steady_s": []}, {"steady_s": []}
        call = functools.partial(train, keys)
        ours["first_call_s"], out = timed(call)
        progress(f"brax n={n} ours: first call {ours['first_call_s']:.1f}s")
        while len(runs) < n:  # runs of smaller N are reused: brax run i is the same for every N
            runs.append(one_brax_run(args.seed + len(runs)))
            progress(f"brax brax run {len(runs)}/{n}: {describe(runs[-1])}")
        anchor["first_call_s"] = sum(r["wall"] for r in runs[:n])
        anchor["steady_s"] = [sum(r["steady"] for r in runs[:n])]
        anchor.update(per_run(runs[:n]))
        for _ in range(args.repeats):
            seconds, out = timed(call)
            ours["steady_s"].append(seconds)
            progress(f"brax n={n} ours: compiled call {seconds:.1f}s")

        ours.update(returns(out, key_eval, args.eval_episodes))
        params = [r["params"] for r in runs[:n]]
        anchor["eval_returns"] = evaluate_brax(
            *env_and_params, runs[0]["make_policy"], params, key_eval, args.eval_episodes
        )
        summarise(ours, n, steps_per_update, num_updates)
        summarise(anchor, n, steps_per_update, num_updates)
        rows.append(
            {
                "env": row["env"],
                "num_seeds": n,
                "env_steps_per_seed": num_updates * steps_per_update,
                "num_updates": num_updates,
                **row,
                "ours": ours,
                "brax": anchor,
                "ours_over_brax": ratios(ours, anchor),
            }
        )
    return rows


def brax_kwargs_record(brax_kwargs: dict) -> dict:
    """brax.training's `train` arguments as the JSON records them (its network factory left out)."""
    left_out = ("network_factory", "wrap_env_fn")
    record = {k: v for k, v in brax_kwargs.items() if k not in left_out}
    if "wrap_env_fn" in brax_kwargs:
        record["wrap_env_fn"] = getattr(brax_kwargs["wrap_env_fn"], "__qualname__", "?")
    return record


# ---------------------------------------------------------------------- time to a return threshold
class StopTraining(Exception):
    """Raised from brax's `progress_fn` to end a run at the threshold or at the wall budget."""


def train_with_evals(
    agent,
    hp,
    keys,
    key_eval,
    *,
    updates_per_eval,
    max_updates,
    eval_episodes,
    deterministic,
    threshold,
    max_seconds,
    label,
) -> dict:
    """Ours: N runs vmapped, in jitted chunks of `updates_per_eval` updates with an evaluation of
    every run (`driver.evaluate_batch`, `eval_episodes` episodes each) after each chunk, until
    every run has reached `threshold` in an evaluation (None: never), `max_updates` are done, or
    `max_seconds` of wall time have passed (the clock starts before the first compilation)."""
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4), donate_argnums=(1,))
    evaluate_runs = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4))
    steps_per_chunk = agent.env_steps_per_update * updates_per_eval
    points, train_s, eval_s, update, stop = [], 0.0, 0.0, 0, "updates"
    start = time.perf_counter()
    states = init(agent, keys, hp)
    while update < max_updates:
        t0 = time.perf_counter()
        states, metrics = run(agent, states, hp, updates_per_eval)
        episodic = np.asarray(metrics["charts/episodic_return"])  # waits for the chunk
        t1 = time.perf_counter()
        key_eval, key = jax.random.split(key_eval)
        result = evaluate_runs(agent, states, key, eval_episodes, deterministic)
        returns = np.asarray(result.returns).mean(axis=1)  # [N]
        t2 = time.perf_counter()
        update += updates_per_eval
        train_s, eval_s = train_s + t1 - t0, eval_s + t2 - t1
        points.append(
            {
                "env_steps": update * agent.env_steps_per_update,
                "wall_s": t2 - start,
                "train_s_total": train_s,
                "eval_s_total": eval_s,
                "chunk_train_s": t1 - t0,
                "eval_return": float(returns.mean()),
                "eval_return_per_run": returns.tolist(),
                "train_return": float(nanmean(episodic)) if np.isfinite(episodic).any() else None,
            }
        )
        progress(
            f"{label} ours: {points[-1]['env_steps']:,} steps, {t2 - start:.1f}s, eval "
            f"{returns.mean():,.1f} (min run {returns.min():,.1f})"
        )
        if threshold is not None and all(
            any(p["eval_return_per_run"][i] >= threshold for p in points)
            for i in range(len(returns))
        ):
            stop = "threshold"
            break
        if t2 - start >= max_seconds:
            stop = "budget"
            break
    side = {"runs": [{"points": points, "stop": stop}], "steps_per_chunk": steps_per_chunk}
    return summarise_curves(side, threshold, len(keys), vmapped=True)


def brax_with_evals(train_fn, seeds, threshold, max_seconds, label) -> dict:
    """brax: one `train_fn(seed=..., progress_fn=...)` run per seed, in sequence, each stopped
    (`StopTraining` raised from its `progress_fn`) at its first evaluation at or above
    `threshold` (after the first epoch) or once the side's `max_seconds` are spent."""
    runs, side_start = [], time.perf_counter()
    for seed in seeds:
        left = max_seconds - (time.perf_counter() - side_start)
        if left <= 0:
            runs.append({"points": [], "stop": "budget spent before this run"})
            continue
        points, start = [], time.perf_counter()

        def progress_fn(step, metrics, points=points, start=start, left=left, seed=seed):
            wall = time.perf_counter() - start
            point = {
                "env_steps": int(step),
                "wall_s": wall,
                "train_s_total": float(metrics.get("training/walltime", 0.0)),
                "eval_s_total": float(metrics.get("eval/walltime", 0.0)),
                "eval_return": float(metrics["eval/episode_reward"]),
            }
            points.append(point)
            progress(
                f"{label} brax seed {seed}: {step:,} steps, {wall:.1f}s, eval "
                f"{point['eval_return']:,.1f}"
            )
            if step > 0 and threshold is not None and point["eval_return"] >= threshold:
                raise StopTraining("threshold")
            if wall >= left:
                raise StopTraining("budget")

        try:
            train_fn(seed=seed, progress_fn=progress_fn)
            stop = "updates"
        except StopTraining as reason:
            stop = str(reason)
        runs.append({"points": points, "stop": stop})
        gc.collect()
    return summarise_curves({"runs": runs}, threshold, len(seeds), vmapped=False)


def _first_hit(points: list[dict], threshold: float | None, run: int | None) -> int | None:
    """Index of the first point whose evaluation (of run `run`, or the mean) reaches threshold."""
    if threshold is None:
        return None
    for j, p in enumerate(points):
        value = p["eval_return"] if run is None else p["eval_return_per_run"][run]
        if value >= threshold:
            return j
    return None


def summarise_curves(side: dict, threshold: float | None, num_runs: int, vmapped: bool) -> dict:
    """Derived figures of `train_with_evals` / `brax_with_evals`. Time and env steps (per run) to
    the threshold: vmapped runs, the evaluation at which the last of them got there; runs in
    sequence, the sum of their times. Env steps per second: compile-free training only (the
    evaluation chunks after the first, by the training time alone), all runs together."""
    summaries = []
    for run in side["runs"]:
        points = [p for p in run["points"] if p["env_steps"] > 0]  # brax's step-0 evaluation out
        if vmapped:
            firsts = [_first_hit(points, threshold, i) for i in range(num_runs)]
            hit = None if None in firsts else max(firsts)
        else:
            hit = _first_hit(points, threshold, None)
        last = points[-1] if points else None
        steady = len(points) >= 2 and last["train_s_total"] > points[0]["train_s_total"]
        summaries.append(
            {
                "stop": run["stop"],
                "threshold_s": None if hit is None else points[hit]["wall_s"],
                "threshold_env_steps": None if hit is None else points[hit]["env_steps"],
                "env_steps": last["env_steps"] if last else 0,
                "wall_s": run["points"][-1]["wall_s"] if run["points"] else 0.0,
                "eval_s": run["points"][-1]["eval_s_total"] if run["points"] else 0.0,
                "first_point_wall_s": points[0]["wall_s"] if points else None,
                "first_chunk_train_s": points[0]["train_s_total"] if points else None,
                "steady_steps": (
                    (last["env_steps"] - points[0]["env_steps"]) * (num_runs if vmapped else 1)
                    if steady
                    else 0
                ),
                "steady_s": last["train_s_total"] - points[0]["train_s_total"] if steady else 0.0,
                "eval_return_last": last["eval_return"] if last else None,
                "eval_return_best": max(p["eval_return"] for p in points) if points else None,
            }
        )
    reached = bool(summaries) and all(s["threshold_s"] is not None for s in summaries)
    steady_s = sum(s["steady_s"] for s in summaries)
    lasts = [s["eval_return_last"] for s in summaries if s["eval_return_last"] is not None]
    bests = [s["eval_return_best"] for s in summaries if s["eval_return_best"] is not None]
    side.update(
        num_runs=num_runs,
        per_run=summaries,
        stop=", ".join(sorted({s["stop"] for s in summaries})),
        threshold_s=sum(s["threshold_s"] for s in summaries) if reached else None,
        threshold_env_steps=max(s["threshold_env_steps"] for s in summaries) if reached else None,
        env_steps_per_run=min((s["env_steps"] for s in summaries), default=0),
        wall_s=sum(s["wall_s"] for s in summaries),
        eval_s=sum(s["eval_s"] for s in summaries),
        first_point_wall_s=summaries[0]["first_point_wall_s"] if summaries else None,
        env_steps_per_s=sum(s["steady_steps"] for s in summaries) / steady_s if steady_s else None,
        eval_return_last=float(np.mean(lasts)) if lasts else None,
        eval_return_best=float(np.mean(bests)) if bests else None,
    )
    return side


def curve_rows(args, name, counts, row, agent, hp, train_fn, **evals) -> list[dict]:
    """For each number of seeds n in `counts`, a row `{**row, "num_seeds": n, ...}`: ours
    (`train_with_evals` of n vmapped runs) and then brax (`brax_with_evals` of `train_fn` over n
    seeds, same threshold and budget), saving the JSON after each side."""
    rows = []
    for n in counts:
        keys, key_eval = keys_for(args.seed, n)
        label = f"{evals['label']} n={n}"
        r = {"env": row["env"], "num_seeds": n, **row}
        r["env_steps_per_update"] = agent.env_steps_per_update
        r["ours_config"] = config_dict(agent.config)
        r["ours_hparams"] = hparams_dict(hp)
        rows.append(r)
        r["ours"] = train_with_evals(agent, hp, keys, key_eval, **{**evals, "label": label})
        save_partial(args, name, rows)
        gc.collect()
        seeds = [args.seed + i for i in range(n)]
        budget = evals["threshold"], evals["max_seconds"]
        r["brax"] = brax_with_evals(train_fn, seeds, *budget, label)
        r["ours_over_brax"] = curve_ratios(r["ours"], r["brax"])
        save_partial(args, name, rows)
    return rows


def curve_ratios(ours: dict, anchor: dict) -> dict:
    keys = ("threshold_s", "env_steps_per_s")
    return {k: ours[k] / anchor[k] if ours.get(k) and anchor.get(k) else None for k in keys}


# ------------------------------------------------------------------------------------------- tables
def curve_table(rows: list[dict], label: str, threshold: float | None):
    """Rows of `bench_ant` (or off_policy's `bench_hopper`): ours, the anchor, the ratio."""
    header = ["env", "variant", "stopped by"]
    if threshold is not None:
        header += [f"s to {threshold:g} (all incl.)", f"env steps to {threshold:g} (per seed)"]
    header += ["env steps run (per seed)", "wall (s)", "of it evaluating (s)"]
    header += ["first eval at (s)", "env steps/s (compile-free, all seeds)"]
    header += ["eval return (last)", "eval return (best)"]
    body = []
    for r in rows:
        env = f"{r['env']}, N={r['num_seeds']}"
        for name, side in (("ours", r["ours"]), (label, r.get("brax"))):
            if side is None:
                continue
            cells = [env, name, side["stop"]]
            if threshold is not None:
                cells += [
                    fmt(side["threshold_s"], ",.1f", "not reached"),
                    fmt(side["threshold_env_steps"], ",.0f", "-"),
                ]
            cells += [
                fmt(side["env_steps_per_run"], ",.0f"),
                fmt(side["wall_s"]),
                fmt(side["eval_s"]),
                fmt(side["first_point_wall_s"]),
                fmt(side["env_steps_per_s"], ",.0f"),
                fmt(side["eval_return_last"]),
                fmt(side["eval_return_best"]),
            ]
            body.append(cells)
        if "ours_over_brax" in r:
            ratio = r["ours_over_brax"]
            cells = [env, f"ours / {label}", ""]
            if threshold is not None:
                cells += [fmt(ratio["threshold_s"], ".2f"), ""]
            cells += ["", "", "", "", fmt(ratio["env_steps_per_s"], ".2f"), "", ""]
            body.append(cells)
    return header, body


def brax_table(rows: list[dict]) -> tuple[str, list[str], list[list[str]]]:
    """`(title, header, body)` of `beside_brax`'s rows."""
    title = (
        f"{rows[0]['env']}, {rows[0]['env_steps_per_seed']:,} env steps per seed; ours: N seeds "
        "vmapped, brax.training: N runs in sequence"
    )
    return (title, *comparison_table(rows, "brax", "brax.training", None))


def _side_cells(side: dict, with_threshold: bool) -> list[str]:
    cells = [
        fmt(side["wall_incl_compile_s"]),
        fmt(side["wall_excl_compile_s"]),
        fmt(side["compile_s"]),
        fmt(side["env_steps_per_s"], ",.0f"),
    ]
    if with_threshold:
        cells += [
            fmt(side["threshold_env_steps"], ",.0f", "not reached"),
            fmt(side["threshold_s"], ",.2f", "-"),
        ]
    cells += [
        fmt(side.get("train_return_last10pct")),
        fmt(side["eval_return_mean"]),
    ]
    return cells


def _ratio_cells(r: dict, with_threshold: bool) -> list[str]:
    cells = [
        fmt(r["wall_incl_compile_s"], ".2f"),
        fmt(r["wall_excl_compile_s"], ".2f"),
        "",
        fmt(r["env_steps_per_s"], ".2f"),
    ]
    if with_threshold:
        cells += ["", fmt(r.get("threshold_s"), ".2f")]
    return cells + ["", ""]


def comparison_table(rows: list[dict], anchor: str, label: str, threshold: float | None):
    header = ["env", "variant", "wall incl. compile (s)", "wall excl. compile (s)", "compile (s)"]
    header.append("env steps/s (all seeds)")
    if threshold is not None:
        header += [f"env steps to {threshold:g} (per seed)", f"s to {threshold:g} (excl. compile)"]
    header += ["train return (last 10%)", "eval return"]
    body = []
    for r in rows:
        env = f"{r['env']}, N={r['num_seeds']}"
        body.append([env, "ours", *_side_cells(r["ours"], threshold is not None)])
        body.append([env, label, *_side_cells(r[anchor], threshold is not None)])
        ratio = r[f"ours_over_{anchor}"]
        body.append([env, f"ours / {label}", *_ratio_cells(ratio, threshold is not None)])
    return header, body
