"""Environment steps per second: our environments beside gymnax's, and our brax, Playground,
Jumanji, Craftax and MiniGrid adapters beside the suites' own environments and wrappers.

Four measurements, in one run, on one machine:

1. Classic control. Our `CartPole` and `Pendulum` (each in `TimeLimit(env, env.max_episode_steps)`,
   auto-resetting `Environment.step`) beside gymnax's `CartPole-v1` and `Pendulum-v1` (gymnax's own
   auto-resetting `step`), for each batch size in `--batch-sizes`.
2. Brax adapter overhead. `TimeLimit(BraxEnv(name), 1000)` (auto-reset to a *fresh* random start
   state) beside (a) the raw brax `env.step` (no reset at all) and (b) brax's training wrappers
   (`brax.envs.wrappers.training.wrap`: `VmapWrapper` + `EpisodeWrapper` + `AutoResetWrapper`, how
   brax's PPO/SAC run, which restarts every episode from one cached first state). Three
   diagnostic rows explain the difference and measure two proposals (benchmark code, not library
   code): our wrapped core without auto-reset; the fresh resets computed only on steps where some
   environment finished (`lax.cond(any(done))`); and resets computed only for the finished
   environments, a few slots per step (gather, reset, scatter).

3. MuJoCo Playground adapter. `TimeLimit(PlaygroundEnv(task), L)` stepped as our training loop
   steps it (`rlsuite.loop.rollout.step_batch`) beside Playground's `wrap_for_brax_training`
   with `full_reset=True` (fresh starts, as ours) and with its default (one cached first state),
   for each batch size in `--playground-batch-sizes` (goal: ours / full_reset >= 0.9).
4. Jumanji, Craftax and MiniGrid adapters. Each task of `--suite-envs` through our
   `Environment.step` and as the training loop steps it (`step_batch`), beside the suite's own
   environment behind its own auto-reset (Jumanji's `AutoResetWrapper`, Craftax's
   `auto_reset=True`, XLand-MiniGrid's `GymAutoResetWrapper`), the same random actions on both
   sides, for each batch size in `--suite-batch-sizes` (goal: ours / own >= 0.9).

Each measurement jits one function that resets a batch with `jax.vmap` and `lax.scan`s `--steps`
batched steps with uniformly random actions; the function returns the final carry (env state
included, so no part of the simulation is dead code) and a checksum of observations and rewards.
Compile time is measured separately (`jit(...).lower(...).compile()`); the step rate is
`num_envs * steps / best wall time` over `--repeats` runs after one warm-up, each ended with
`block_until_ready`.

    python benchmarks/env_throughput.py          # defaults
    python benchmarks/env_throughput.py --batch-sizes 1 64 --steps 200 --brax-envs inverted_pendulum
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import tyro
from report import check_args, command, machine_info, print_tables, progress
from rich.console import Console

from rlsuite.environment.wrappers import TimeLimit

CLASSIC = ("cartpole", "pendulum")  # our classic-control environments with a gymnax twin


@dataclasses.dataclass
class Args:
    """Flags of the environment throughput benchmark."""

    batch_sizes: list[int] = dataclasses.field(default_factory=lambda: [1, 64, 1024, 4096])
    """Numbers of vmapped environments for the classic-control comparison."""
    steps: int = 1000
    """Batched steps per timed run (classic control)."""
    repeats: int = 5
    """Timed runs per measurement (after one warm-up); the best is reported."""
    classic_envs: list[str] = dataclasses.field(default_factory=lambda: ["cartpole", "pendulum"])
    """Which of our classic-control environments to compare with gymnax (cartpole, pendulum)."""
    brax_envs: list[str] = dataclasses.field(default_factory=lambda: ["inverted_pendulum", "ant"])
    """Brax environments for the adapter-overhead comparison (empty: skip it)."""
    brax_backend: str = "mjx"
    """Brax physics backend."""
    brax_batch: int = 64
    """Number of vmapped brax environments."""
    brax_steps: int = 300
    """Batched steps per timed run (brax)."""
    brax_episode_length: int = 1000
    """Time limit for our `TimeLimit` and brax's `EpisodeWrapper`."""
    brax_reset_slots: int = 0
    """Reset slots per step of the compacted-reset diagnostic (0: brax_batch // 16)."""
    playground_envs: list[str] = dataclasses.field(default_factory=lambda: ["CartpoleBalance"])
    """MuJoCo Playground tasks for the adapter comparison (empty: skip it)."""
    playground_batch_sizes: list[int] = dataclasses.field(
        default_factory=lambda: [1, 64, 1024, 4096]
    )
    """Numbers of vmapped Playground environments."""
    playground_steps: int = 200
    """Batched steps per timed run (Playground)."""
    playground_episode_length: int = 100
    """Time limit of both sides (Playground's `episode_length` is 1,000: shorter, so that the
    timed steps include episode ends and their resets)."""
    suite_envs: list[str] = dataclasses.field(
        default_factory=lambda: [
            "jumanji/Snake-v1",
            "jumanji/Knapsack-v1",
            "minigrid/MiniGrid-Empty-8x8",
            "craftax/Craftax-Classic-Symbolic-v1",
        ]
    )
    """Tasks of the JAX suites behind adapters, each beside the suite's own environment (empty:
    skip it)."""
    suite_batch_sizes: list[int] = dataclasses.field(default_factory=lambda: [1, 64, 1024, 4096])
    """Numbers of vmapped environments for the suites (Craftax's above `craftax_max_batch` are
    left out)."""
    suite_steps: int = 100
    """Batched steps per timed run (suites)."""
    craftax_max_batch: int = 1024
    """The largest Craftax batch measured: every step of Craftax's own auto-reset generates a
    world per environment (as ours does), some 1,000 steps/s on a 2-core CPU, so 4,096 take
    minutes per timed run there."""
    seed: int = 0
    """Seed of the random actions and start states."""
    out: Path = Path("benchmarks/results/env_throughput.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for its page, docs/benchmarks/)."""


# ------------------------------------------------------------------------------------------- timing
def measure(
    runs: dict[str, Callable[[jax.Array], Any]], key: jax.Array, repeats: int, env_steps: int
) -> dict[str, dict]:
    """Compile each run (timed), warm each up once, then time `repeats` rounds, the runs taking
    turns within a round (so that drift in machine speed hits all alike); keep each one's best."""
    compiled, results = {}, {}
    for name, run in runs.items():
        start = time.perf_counter()
        compiled[name] = jax.jit(run).lower(key).compile()
        results[name] = {"compile_s": time.perf_counter() - start, "times_s": []}
        jax.block_until_ready(compiled[name](key))
    for i in range(repeats):
        key_run = jax.random.fold_in(key, i + 1)
        for name, fn in compiled.items():
            start = time.perf_counter()
            out = jax.block_until_ready(fn(key_run))
            results[name]["times_s"].append(time.perf_counter() - start)
            results[name]["checksum_last_run"] = float(out[0])
            results[name]["episode_ends"] = float(out[1])
    for r in results.values():
        r["best_s"] = min(r["times_s"])
        r["steps_per_s"] = env_steps / r["best_s"]
    return results


def scan_runner(init, step, sample_action, num_envs: int, num_steps: int):
    """`run(key) -> (checksum, episode_ends, final_carry)` over `num_steps` batched steps.

    `init(keys) -> state`; `step(keys, state, actions) -> (state, obs, reward, done)`, all batched.
    """

    def run(key):
        key_init, key_loop = jax.random.split(key)
        state = init(jax.random.split(key_init, num_envs))

        def body(carry, _):
            state, key, checksum, ends = carry
            key, key_action, key_step = jax.random.split(key, 3)
            actions = jax.vmap(sample_action)(jax.random.split(key_action, num_envs))
            state, obs, reward, done = step(jax.random.split(key_step, num_envs), state, actions)
            checksum = checksum + jnp.sum(obs) + jnp.sum(reward)
            ends = ends + jnp.sum(done)
            return (state, key, checksum, ends), None

        carry = (state, key_loop, jnp.zeros(()), jnp.zeros((), jnp.int32))
        carry, _ = jax.lax.scan(body, carry, None, length=num_steps)
        return carry[2], carry[3], carry

    return run


# ---------------------------------------------------------------------------------- classic control
def contract_batch(env, params):
    """Batched `init`/`step` for anything with the six-output `step` (ours and gymnax's)."""

    def init(keys):
        return jax.vmap(env.reset, in_axes=(0, None))(keys, params)[1]

    def step(keys, state, actions):
        obs, state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None)
        )(keys, state, actions, params)
        obs = obs + info["final_observation"]  # what a training loop reads
        return state, obs, reward, jnp.logical_or(terminated, truncated)

    return init, step


def classic_pairs(names: list[str]):
    import gymnax
    from rlsuite.envs.cartpole import CartPole
    from rlsuite.envs.pendulum import Pendulum

    ours = {"cartpole": (CartPole, "CartPole-v1"), "pendulum": (Pendulum, "Pendulum-v1")}
    assert tuple(ours) == CLASSIC
    for name in names:
        cls, gymnax_name = ours[name]
        env = TimeLimit(cls(), cls.max_episode_steps)
        reference, reference_params = gymnax.make(gymnax_name)
        yield name, env, env.default_params, gymnax_name, reference, reference_params


def bench_classic(args: Args) -> list[dict]:
    rows = []
    key = jax.random.PRNGKey(args.seed)
    for name, env, params, gymnax_name, reference, reference_params in classic_pairs(
        args.classic_envs
    ):
        for num_envs in args.batch_sizes:
            row = {"env": name, "gymnax_env": gymnax_name, "num_envs": num_envs}
            runs = {}
            for side, e, p in (("ours", env, params), ("gymnax", reference, reference_params)):
                init, step = contract_batch(e, p)
                runs[side] = scan_runner(init, step, e.action_space(p).sample, num_envs, args.steps)
            row.update(measure(runs, key, args.repeats, num_envs * args.steps))
            row["ratio"] = row["ours"]["steps_per_s"] / row["gymnax"]["steps_per_s"]
            rows.append(row)
            progress(
                f"{name:9s} n={num_envs:5d}  ours {row['ours']['steps_per_s']:.3g}/s  "
                f"gymnax {row['gymnax']['steps_per_s']:.3g}/s  ratio {row['ratio']:.2f}"
            )
    return rows


# --------------------------------------------------------------------------------------------- brax
def brax_variants(name: str, backend: str, episode_length: int, slots: int) -> tuple[dict, int]:
    """`variant -> (init, step)` for the same brax environment, all batched."""
    from brax.envs.wrappers import training
    from rlsuite.envs.brax_adapter import BraxEnv

    env = BraxEnv(name, backend=backend)
    raw = env.brax_env
    limited = TimeLimit(env, episode_length)
    params = limited.default_params
    variants = {}

    def raw_init(keys):
        return jax.vmap(raw.reset)(keys)

    def raw_step(keys, state, actions):
        state = jax.vmap(raw.step)(state, actions)
        return state, state.obs, state.reward, state.done > 0.5

    variants["brax raw step (no reset)"] = (raw_init, raw_step)

    wrapped = training.wrap(raw, episode_length=episode_length)  # Vmap + Episode + AutoReset

    def wrapped_step(keys, state, actions):
        state = wrapped.step(state, actions)
        return state, state.obs, state.reward, state.done > 0.5

    variants["brax training wrappers"] = (wrapped.reset, wrapped_step)
    variants[_OURS] = contract_batch(limited, params)

    def core_init(keys):
        return jax.vmap(limited.reset_env, in_axes=(0, None))(keys, params)[1]

    def core_step(keys, state, actions):
        obs, state, reward, terminated, truncated, _ = jax.vmap(
            limited.step_env, in_axes=(0, 0, 0, None)
        )(keys, state, actions, params)
        return state, obs, reward, jnp.logical_or(terminated, truncated)

    variants["diag: ours without auto-reset"] = (core_init, core_step)

    # Two proposals for a cheaper auto-reset with the same semantics (fresh start state, same keys),
    # measured here and not library code: both need the whole batch, so they would live in a
    # batched step (a rollout helper), not in the single-environment `Environment.step`.
    def batched_core(keys, state, actions):
        keys = jax.vmap(jax.random.split)(
            keys
        )  # (step key, reset key) per env, as Environment.step
        obs, state, reward, terminated, truncated, _ = jax.vmap(
            limited.step_env, in_axes=(0, 0, 0, None)
        )(keys[:, 0], state, actions, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), keys[:, 1]

    def reset_all(done, keys_reset, obs, state):
        fresh = jax.vmap(limited.reset_env, in_axes=(0, None))(keys_reset, params)

        def select(a, b):
            return jnp.where(jnp.reshape(done, done.shape + (1,) * (a.ndim - 1)), a, b)

        return jax.tree.map(select, fresh, (obs, state))

    def cond_step(keys, state, actions):
        """Reset (all, then select) only on steps where some environment finished."""
        final_obs, state, reward, done, keys_reset = batched_core(keys, state, actions)
        obs, state = jax.lax.cond(
            jnp.any(done),
            lambda o, s: reset_all(done, keys_reset, o, s),
            lambda o, s: (o, s),
            final_obs,
            state,
        )
        return state, obs + final_obs, reward, done

    variants["diag: ours, reset under lax.cond(any(done))"] = (core_init, cond_step)

    def compact_step(keys, state, actions):
        """Reset only the finished environments, up to `slots` per step (gather, reset, scatter);
        fall back to resetting all when more than `slots` finish at once."""
        final_obs, state, reward, done, keys_reset = batched_core(keys, state, actions)
        num_envs = done.shape[0]

        def reset_some(obs, state):
            index = jnp.nonzero(done, size=slots, fill_value=num_envs)[0]  # num_envs: no slot
            fresh = jax.vmap(limited.reset_env, in_axes=(0, None))(
                keys_reset[jnp.minimum(index, num_envs - 1)], params
            )
            return jax.tree.map(lambda a, b: a.at[index].set(b, mode="drop"), (obs, state), fresh)

        obs, state = jax.lax.cond(
            jnp.sum(done) > slots,
            lambda o, s: reset_all(done, keys_reset, o, s),
            reset_some,
            final_obs,
            state,
        )
        return state, obs + final_obs, reward, done

    variants[f"diag: ours, resets of finished envs only ({slots} slots)"] = (
        core_init,
        compact_step,
    )
    return variants, env.action_size


def bench_brax(args: Args) -> list[dict]:
    rows = []
    key = jax.random.PRNGKey(args.seed)
    n, steps = args.brax_batch, args.brax_steps
    for name in args.brax_envs:
        slots = args.brax_reset_slots or max(1, n // 16)
        variants, action_size = brax_variants(
            name, args.brax_backend, args.brax_episode_length, slots
        )

        def sample(key, action_size=action_size):
            return jax.random.uniform(key, (action_size,), minval=-1.0, maxval=1.0)

        runs = {
            variant: scan_runner(init, step, sample, n, steps)
            for variant, (init, step) in variants.items()
        }
        results = measure(runs, key, args.repeats, n * steps)
        for variant, r in results.items():
            progress(
                f"{name:18s} {variant:52s} {r['steps_per_s']:.3g}/s (compile {r['compile_s']:.1f}s)"
            )
        ours, raw, wrapped = (results[v]["best_s"] for v in (_OURS, _RAW, _WRAPPED))
        for r in results.values():
            r["time_vs_raw_pct"] = 100 * (r["best_s"] / raw - 1)
            r["time_vs_brax_wrappers_pct"] = 100 * (r["best_s"] / wrapped - 1)
        rows.append(
            {
                "env": name,
                "backend": args.brax_backend,
                "num_envs": n,
                "steps": steps,
                "variants": results,
                "ours_overhead_vs_raw_pct": 100 * (ours / raw - 1),
                "ours_overhead_vs_brax_wrappers_pct": 100 * (ours / wrapped - 1),
            }
        )
    return rows


_RAW = "brax raw step (no reset)"
_OURS = "ours: TimeLimit(BraxEnv)"
_WRAPPED = "brax training wrappers"


# --------------------------------------------------------------------------------------- playground
_PG_OURS = "ours: TimeLimit(PlaygroundEnv), rollout.step_batch"
_PG_FULL = "playground wrapper, full_reset=True"
_PG_CACHED = "playground wrapper, cached first state (its default)"


def playground_variants(task: str, episode_length: int) -> tuple[dict, int]:
    """`variant -> (init, step)` for one Playground task, all batched: ours as a training loop
    steps it (`rlsuite.loop.rollout.step_batch`: fresh resets, computed on steps where some
    environment finished), and Playground's `wrap_for_brax_training` (vmap, episode, auto-reset)
    with fresh resets (`full_reset=True`, our semantics) and with its default, every episode
    from one cached first state."""
    from mujoco_playground import wrapper
    from rlsuite.envs.playground_adapter import PlaygroundEnv

    from rlsuite.loop.rollout import step_batch

    env = TimeLimit(PlaygroundEnv(task), episode_length)
    params = env.default_params
    raw = env.env.playground_env

    def ours_init(keys):
        return jax.vmap(env.reset, in_axes=(0, None))(keys, params)[1]

    def ours_step(keys, state, actions):
        obs, state, reward, terminated, truncated, info = step_batch(
            env, params, keys, state, actions
        )
        obs = obs + info["final_observation"]  # what a training loop reads
        return state, obs, reward, jnp.logical_or(terminated, truncated)

    variants = {_PG_OURS: (ours_init, ours_step)}
    for variant, full in ((_PG_FULL, True), (_PG_CACHED, False)):
        wrapped = wrapper.wrap_for_brax_training(
            raw, episode_length=episode_length, full_reset=full
        )

        def init(keys, wrapped=wrapped):
            return wrapped.reset(jax.random.key_data(keys))

        def step(keys, state, actions, wrapped=wrapped):
            state = wrapped.step(state, actions)
            return state, state.obs, state.reward, state.done > 0.5

        variants[variant] = (init, step)
    return variants, env.env.action_size


def bench_playground(args: Args) -> list[dict]:
    rows = []
    key = jax.random.PRNGKey(args.seed)
    steps = args.playground_steps
    for task in args.playground_envs:
        variants, action_size = playground_variants(task, args.playground_episode_length)

        def sample(key, action_size=action_size):
            return jax.random.uniform(key, (action_size,), minval=-1.0, maxval=1.0)

        for n in args.playground_batch_sizes:
            runs = {
                v: scan_runner(init, step, sample, n, steps) for v, (init, step) in variants.items()
            }
            results = measure(runs, key, args.repeats, n * steps)
            row = {"env": task, "num_envs": n, "steps": steps, "variants": results}
            ours = results[_PG_OURS]["steps_per_s"]
            row["ratio_vs_full_reset"] = ours / results[_PG_FULL]["steps_per_s"]
            row["ratio_vs_cached"] = ours / results[_PG_CACHED]["steps_per_s"]
            rows.append(row)
            progress(
                f"{task} n={n:5d}  ours {ours:.3g}/s  ratio vs full_reset "
                f"{row['ratio_vs_full_reset']:.2f}, vs cached {row['ratio_vs_cached']:.2f}"
            )
    return rows


# ------------------------------------------------------------------------------------------- suites
_SUITE_OURS, _SUITE_LOOP = "ours (Environment.step)", "ours (rollout step)"
_SUITE_SLOTS = "ours (rollout step, reset slots)"
_SUITE_OWN = "suite's own"
SLOT_SHARE = 16  # the slots variant resets up to num_envs / SLOT_SHARE environments a step


def loop_variant(env, params, reset_slots: int | None = None):
    """`step(keys, state, actions)` of ours as a training loop steps it (`step_batch`, with
    `reset_slots`), reading the observation and the pre-reset one, as the loop does."""
    from rlsuite.loop.rollout import step_batch

    def loop_step(keys, state, actions):
        obs, state, reward, terminated, truncated, info = step_batch(
            env, params, keys, state, actions, reset_slots=reset_slots
        )
        obs = obs + info["final_observation"]  # what a training loop reads
        return state, obs, reward, jnp.logical_or(terminated, truncated)

    return loop_step


def _checksum(tree) -> jax.Array:
    """The sum of every leaf of `tree` (a suite's structured observation), as float32."""
    return sum(jnp.sum(jnp.asarray(x, jnp.float32)) for x in jax.tree.leaves(tree))


def suite_variants(name: str) -> tuple[dict, Callable, tuple]:
    """`variant -> (init, step)` for one suite task, all batched, the action sampler, and ours
    `(env, params)` (for `loop_variant` with reset slots, sized by the batch): ours
    through `Environment.step` (as `vmap(env.step)`) and as a training loop steps it
    (`rlsuite.loop.rollout.step_batch`), beside the suite's own environment behind its own
    auto-reset: Jumanji's `AutoResetWrapper`, Craftax's `auto_reset=True` environment,
    XLand-MiniGrid's `GymAutoResetWrapper`. The suite's side is given the same actions (decoded
    to its own form) and reads its own observation (every leaf summed)."""
    from rlsuite import envs

    env, params = envs.make(name)
    core = getattr(env, "unwrapped", env)
    init, step = contract_batch(env, params)
    variants = {_SUITE_OURS: (init, step), _SUITE_LOOP: (init, loop_variant(env, params))}
    if name.startswith("jumanji/"):
        from jumanji.wrappers import AutoResetWrapper

        own = AutoResetWrapper(core.jumanji_env)

        def own_init(keys):
            return jax.vmap(own.reset)(jax.vmap(jax.random.key_data)(keys))

        def own_step(keys, carry, actions):
            state, timestep = jax.vmap(own.step)(carry[0], jax.vmap(core.decode)(actions))
            done = timestep.last()
            return (state, timestep), _checksum(timestep.observation), timestep.reward, done

    elif name.startswith("craftax/"):
        from craftax.craftax_env import make_craftax_env_from_name

        own_env = make_craftax_env_from_name(core.env_name, auto_reset=True)
        own_params = own_env.default_params

        def own_init(keys):
            return jax.vmap(own_env.reset, in_axes=(0, None))(keys, own_params)[1]

        def own_step(keys, state, actions):
            obs, state, reward, done, _ = jax.vmap(own_env.step, in_axes=(0, 0, 0, None))(
                keys, state, actions, own_params
            )
            return state, obs, reward, done

    else:
        from xminigrid.wrappers import GymAutoResetWrapper

        own_env = GymAutoResetWrapper(core.xminigrid_env)
        own_params = core.default_params

        def own_init(keys):
            return jax.vmap(own_env.reset, in_axes=(None, 0))(own_params, keys)

        def own_step(keys, timestep, actions):
            timestep = jax.vmap(own_env.step, in_axes=(None, 0, 0))(own_params, timestep, actions)
            return timestep, timestep.observation, timestep.reward, timestep.last()

    variants[_SUITE_OWN] = (own_init, own_step)
    return variants, env.action_space(params).sample, (env, params)


def bench_suites(args: Args) -> list[dict]:
    rows = []
    key = jax.random.PRNGKey(args.seed)
    steps = args.suite_steps
    for name in args.suite_envs:
        variants, sample, (env, params) = suite_variants(name)
        sizes = args.suite_batch_sizes
        if name.startswith("craftax/"):
            sizes = [n for n in sizes if n <= args.craftax_max_batch]
        for n in sizes:
            slots = max(1, n // SLOT_SHARE)
            sized = {
                **variants,
                _SUITE_SLOTS: (variants[_SUITE_LOOP][0], loop_variant(env, params, slots)),
            }
            runs = {
                v: scan_runner(init, step, sample, n, steps) for v, (init, step) in sized.items()
            }
            results = measure(runs, key, args.repeats, n * steps)
            own = results[_SUITE_OWN]["steps_per_s"]
            row = {"env": name, "num_envs": n, "steps": steps, "variants": results}
            row["reset_slots"] = slots
            row["ratio"] = results[_SUITE_OURS]["steps_per_s"] / own
            row["ratio_loop"] = results[_SUITE_LOOP]["steps_per_s"] / own
            row["ratio_slots"] = results[_SUITE_SLOTS]["steps_per_s"] / own
            rows.append(row)
            progress(
                f"{name} n={n:5d}  ours {results[_SUITE_OURS]['steps_per_s']:.3g}/s  own "
                f"{own:.3g}/s  ratio {row['ratio']:.2f}, rollout step {row['ratio_loop']:.2f}, "
                f"with {slots} reset slots {row['ratio_slots']:.2f}"
            )
    return rows


def rate_table(rows: list[dict], header: list[str], rates, columns, compiled):
    """`(header, body)` of a comparison of variants: per row the env, the batch, each of `rates`'
    env steps/s, each `(key, spec)` of `columns` (the row's own figures, formatted), and the
    compile seconds of `compiled`."""
    body = []
    for r in rows:
        v = r["variants"]
        body.append(
            [
                r["env"],
                str(r["num_envs"]),
                *(f"{v[n]['steps_per_s']:,.0f}" for n in rates),
                *(format(r[key], spec) for key, spec in columns),
                " / ".join(f"{v[n]['compile_s']:.1f}" for n in compiled),
            ]
        )
    return header, body


def suite_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["env", "num_envs", "ours steps/s", "ours rollout step/s", "suite's own steps/s"]
    header += ["ours/own", "rollout step/own", "reset slots", "with slots/own"]
    header += ["compile ours / own (s)"]
    columns = [("ratio", ".2f"), ("ratio_loop", ".2f")]
    columns += [("reset_slots", "d"), ("ratio_slots", ".2f")]
    rates = (_SUITE_OURS, _SUITE_LOOP, _SUITE_OWN)
    return rate_table(rows, header, rates, columns, (_SUITE_OURS, _SUITE_OWN))


def playground_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["env", "num_envs", "ours steps/s", "full_reset steps/s", "cached steps/s"]
    header += ["ours/full_reset", "ours/cached", "compile ours / full / cached (s)"]
    variants = (_PG_OURS, _PG_FULL, _PG_CACHED)
    columns = [("ratio_vs_full_reset", ".2f"), ("ratio_vs_cached", ".2f")]
    return rate_table(rows, header, variants, columns, variants)


# ------------------------------------------------------------------------------------------- report
def classic_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["env", "num_envs", "ours steps/s", "gymnax steps/s", "ours/gymnax"]
    header += ["compile ours (s)", "compile gymnax (s)"]
    body = [
        [
            f"{r['env']} / {r['gymnax_env']}",
            str(r["num_envs"]),
            f"{r['ours']['steps_per_s']:,.0f}",
            f"{r['gymnax']['steps_per_s']:,.0f}",
            f"{r['ratio']:.2f}",
            f"{r['ours']['compile_s']:.2f}",
            f"{r['gymnax']['compile_s']:.2f}",
        ]
        for r in rows
    ]
    return header, body


def brax_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["env", "variant", "steps/s", "time vs raw", "time vs brax wrappers", "episode ends"]
    header += ["compile (s)"]
    body = []
    for r in rows:
        for variant, v in r["variants"].items():
            body.append(
                [
                    f"{r['env']} ({r['backend']}, n={r['num_envs']})",
                    variant,
                    f"{v['steps_per_s']:,.0f}",
                    f"{v['time_vs_raw_pct']:+.1f}%",
                    f"{v['time_vs_brax_wrappers_pct']:+.1f}%",
                    f"{v['episode_ends']:.0f}",
                    f"{v['compile_s']:.1f}",
                ]
            )
    return header, body


def main(args: Args) -> dict:
    check_args(args, may_be_zero=("brax_reset_slots",), choices={"classic_envs": CLASSIC})
    console = Console(width=200)
    machine = machine_info()
    console.print(
        f"machine: {machine['cpu']}, {machine['cpus_usable']} usable cores, "
        f"jax {machine['versions']['jax']} ({machine['jax_backend']})"
    )
    classic = bench_classic(args) if args.classic_envs else []
    brax_rows = bench_brax(args) if args.brax_envs else []
    playground_rows = bench_playground(args) if args.playground_envs else []
    suite_rows = bench_suites(args) if args.suite_envs else []
    result = {
        "machine": machine,
        "command": command(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "classic": classic,
        "brax": brax_rows,
        "playground": playground_rows,
        "suites": suite_rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))

    print_tables(console, tables(result), args.markdown)
    console.print(f"wrote {args.out}")
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of each part that ran, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the environment throughput page)."""
    args = result["args"]
    classic, brax_rows = result["classic"], result["brax"]
    playground_rows, suite_rows = result["playground"], result["suites"]
    tables = []
    if classic:
        title = f"Classic control: env steps/s ({args['steps']} steps, random actions)"
        tables.append((title, *classic_table(classic)))
    if brax_rows:
        title = (
            f"Brax adapter overhead: {args['brax_steps']} steps, random actions "
            "(time = wall time per step; + is slower)"
        )
        tables.append((title, *brax_table(brax_rows)))
    if playground_rows:
        title = (
            f"MuJoCo Playground adapter: env steps/s, {args['playground_steps']} steps, random "
            f"actions, episodes of {args['playground_episode_length']} steps"
        )
        tables.append((title, *playground_table(playground_rows)))
    if suite_rows:
        title = (
            f"Jumanji, Craftax and MiniGrid adapters: env steps/s, {args['suite_steps']} steps, "
            "uniformly random actions (the same on both sides), each suite's own auto-reset; "
            f"reset slots: num_envs / {SLOT_SHARE} (`--reset-slots`)"
        )
        tables.append((title, *suite_table(suite_rows)))
    return tables


if __name__ == "__main__":
    main(tyro.cli(Args))
