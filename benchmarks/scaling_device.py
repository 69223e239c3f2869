"""One run's PPO throughput on the MJX ant as its environment batch grows (GPU): the part
`scaling-ant` of `benchmarks/device.sh`.

PPO (`rlsuite.agents.ppo`) on `brax/ant` (MJX, 1,000-step episodes) with brax's published Ant
networks and hyperparameters (policy 4 x 32, value 5 x 256, swish, tanh Gaussian, observation
normalisation, reward scale 10; as `benchmarks/ppo.py`'s ant part), one run on one device, at
each env batch of `--num-envs` (default 1,024, 4,096, 16,384, 65,536), `--num-steps` steps per
env per update (16), `--num-minibatches` minibatches (32, so a minibatch grows with the batch)
and `--update-epochs` epochs (4). For each size:

- training: jitted `driver.init_batch`, a first `driver.run_batch` call (compilation included),
  the same call compiled ahead of time for its output, then compiled calls, each from the
  previous one's output and blocked until ready, until `--seconds-per-size` have been timed (at
  least one). A call is `--chunk-env-steps` env steps (rounded down to whole updates, at least
  one update). Env steps/s: a call's env steps over the median call.
- the raw simulator rate: a jitted `lax.scan` of `rlsuite.loop.rollout.step_batch` (the batch
  step training uses, auto-reset included) with uniformly random actions and no policy, from the
  training run's environments, as many steps per call as training's call, timed the same way for
  `--raw-seconds`.
- the fraction training / raw: the share of the simulator's rate that training keeps (the goal:
  at least 0.5), and the device's peak memory where the device reports it.

The sizes run from the smallest; a size is skipped when less time is left of `--budget-seconds`
(counted from the start of the process, so the part fits one 10-minute device command) than the
size before took. A size that fails (out of memory) is recorded with its error and the next runs.

    python benchmarks/scaling_device.py                                 # GPU: at most 9 minutes
    python benchmarks/scaling_device.py --num-envs 8 --num-steps 4 --num-minibatches 2 \\
        --update-epochs 1 --chunk-env-steps 64 --seconds-per-size 0 --raw-seconds 0  # CPU

Writes JSON to `--out` (default `$OUT/scaling_device.json`, or `benchmarks/results/` without
`$OUT`) after every size. The default sizes have not been measured on a GPU yet.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import statistics
import time
from pathlib import Path

START = time.perf_counter()  # the budget counts from here: imports and compilation included

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import tyro  # noqa: E402
from ppo import BRAX_ANT_NETWORKS, brax_ant_hparams  # noqa: E402  (benchmarks/ppo.py)
from report import check_args, fmt, machine_info, markdown, print_table, progress  # noqa: E402
from rich.console import Console  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import ppo  # noqa: E402
from rlsuite.loop import driver  # noqa: E402
from rlsuite.loop.agent import config_dict  # noqa: E402
from rlsuite.loop.rollout import step_batch  # noqa: E402

GOAL = 0.5  # the share of the raw simulator rate training should keep


@dataclasses.dataclass
class Args:
    """Flags of the ant scaling device benchmark."""

    env: str = "brax/ant"
    """environment"""
    backend: str = "mjx"
    """its brax physics backend"""
    num_envs: list[int] = dataclasses.field(default_factory=lambda: [1024, 4096, 16384, 65536])
    """env batches of the one run, smallest first"""
    num_steps: int = 16
    """steps per env per update"""
    num_minibatches: int = 32
    """minibatches per epoch (must divide num_envs * num_steps)"""
    update_epochs: int = 4
    """passes over each rollout"""
    episode_length: int = 1000
    """time limit of an episode"""
    chunk_env_steps: int = 2**21
    """env steps per timed call (whole updates, at least one)"""
    seconds_per_size: float = 10.0
    """timed training calls per size until this many seconds (at least one call)"""
    raw_seconds: float = 5.0
    """timed raw simulator calls per size until this many seconds (at least one call)"""
    budget_seconds: float = 480.0
    """wall time from the start of the process after which no new size starts"""
    seed: int = 0
    """random seed"""
    out: Path | None = None
    """JSON path (default: $OUT/scaling_device.json, or benchmarks/results/scaling_device.json)"""


def build(args: Args, num_envs: int):
    """PPO at brax's published Ant networks and hyperparameters, `num_envs` environments."""
    env, env_params = envs.make(
        args.env, backend=args.backend, max_episode_steps=args.episode_length
    )
    config = ppo.PPOConfig(
        num_envs=num_envs,
        num_steps=args.num_steps,
        num_minibatches=args.num_minibatches,
        update_epochs=args.update_epochs,
        total_timesteps=10**9,
        distribution="tanh_gaussian",
        **BRAX_ANT_NETWORKS,
    )
    return ppo.make(config, env, env_params), brax_ant_hparams()


def raw_steps(env, env_params, num_envs: int, length: int):
    """The raw simulator as `run((state, total), key) -> (state, total)`: `length`
    auto-resetting batch steps (`step_batch`) of uniformly random actions in one jitted
    `lax.scan`, from the batch's env `state`; `total` sums the rewards (kept so that no part of
    a step is left out)."""
    space = env.action_space(env_params)
    low, high = jnp.asarray(space.low), jnp.asarray(space.high)

    def run(carry, key):
        def one(carry, key):
            state, total = carry
            key_action, key_env = jax.random.split(key)
            action = jax.random.uniform(key_action, (num_envs, *low.shape), minval=low, maxval=high)
            keys = jax.random.split(key_env, num_envs)
            _, state, reward, _, _, _ = step_batch(env, env_params, keys, state, action)
            return (state, total + jnp.sum(reward)), None

        return jax.lax.scan(one, carry, jax.random.split(key, length))[0]

    return jax.jit(run)


def timed_calls(call, state, seconds: float) -> tuple[list[float], object]:
    """Calls of `call(state) -> state`, each blocked until ready, until `seconds` are timed (at
    least one); their times and the last state."""
    times = []
    while not times or sum(times) < seconds:
        begin = time.perf_counter()
        state = jax.block_until_ready(call(state))
        times.append(time.perf_counter() - begin)
    return times, state


def peak_memory_gb() -> float | None:
    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**30


def one_size(args: Args, num_envs: int) -> dict:
    """Training and raw rates at one env batch."""
    agent, hp = build(args, num_envs)
    per_update = agent.env_steps_per_update
    updates = max(1, args.chunk_env_steps // per_update)
    steps = updates * per_update
    key_train, key_raw = jax.random.split(jax.random.fold_in(jax.random.key(args.seed), num_envs))
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    begin = time.perf_counter()
    states = jax.block_until_ready(init(agent, key_train[None], hp))
    init_s = time.perf_counter() - begin
    begin = time.perf_counter()
    states, metrics = jax.block_until_ready(run(agent, states, hp, updates))
    first_s = time.perf_counter() - begin
    compiled = run.lower(agent, states, hp, updates).compile()
    train_times, (states, metrics) = timed_calls(
        lambda out: compiled(out[0], hp), (states, metrics), args.seconds_per_size
    )
    train_rate = steps / statistics.median(train_times)
    calls = len(train_times)
    progress(f"{num_envs:>7,} envs: training {train_rate:,.0f} env steps/s ({calls} calls)")

    # The raw simulator starts from the training run's environments (no reset to compile).
    raw_run = raw_steps(agent.env, agent.env_params, num_envs, steps // num_envs)
    keys = (jax.random.fold_in(key_raw, i) for i in itertools.count())
    env_state = jax.tree.map(lambda x: x[0], states.env.state)
    begin = time.perf_counter()
    raw_out = jax.block_until_ready(raw_run((env_state, jnp.zeros(())), next(keys)))
    raw_first_s = time.perf_counter() - begin
    raw_times, _ = timed_calls(lambda out: raw_run(out, next(keys)), raw_out, args.raw_seconds)
    raw_rate = steps / statistics.median(raw_times)
    share = train_rate / raw_rate
    progress(f"{num_envs:>7,} envs: raw {raw_rate:,.0f} env steps/s, training keeps {share:.2f}")
    returns = metrics["charts/episodic_return"]
    return {
        "num_envs": num_envs,
        "updates_per_call": updates,
        "env_steps_per_call": steps,
        "minibatch": per_update // args.num_minibatches,
        "init_s": init_s,
        "first_call_s": first_s,
        "train_call_s": train_times,
        "train_env_steps_per_s": train_rate,
        "raw_first_call_s": raw_first_s,
        "raw_call_s": raw_times,
        "raw_env_steps_per_s": raw_rate,
        "fraction": share,
        "peak_memory_gb": peak_memory_gb(),
        "last_episodic_return": float(jnp.nanmean(returns[:, -1])),
    }


def main(args: Args) -> int:
    check_args(args)
    for name in ("seconds_per_size", "raw_seconds"):
        if not getattr(args, name) >= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
    for n in args.num_envs:
        if (n * args.num_steps) % args.num_minibatches:
            raise ValueError(
                f"--num-minibatches {args.num_minibatches} must divide num_envs x num_steps "
                f"({n} x {args.num_steps})"
            )
    out = args.out or Path(os.environ.get("OUT", "benchmarks/results")) / "scaling_device.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "args": {k: str(v) for k, v in vars(args).items()},
        "machine": machine_info(),
        "config": config_dict(build(args, args.num_envs[0])[0].config),
        "rows": [],
    }
    last = 0.0
    for num_envs in args.num_envs:
        left = args.budget_seconds - (time.perf_counter() - START)
        if left < last:
            progress(
                f"{num_envs:>7,} envs: skipped, {left:.0f} s left, the one before took {last:.0f} s"
            )
            data["rows"].append({"num_envs": num_envs, "skipped": f"budget: {left:.0f} s left"})
            continue
        begin = time.perf_counter()
        try:
            row = one_size(args, num_envs)
        except Exception as error:  # e.g. out of device memory: the next size still runs
            progress(f"{num_envs:>7,} envs: failed: {type(error).__name__}: {str(error)[:300]}")
            row = {"num_envs": num_envs, "error": f"{type(error).__name__}: {str(error)[:2000]}"}
        last = time.perf_counter() - begin
        row["size_s"] = last
        data["rows"].append(row)
        data["wall_s"] = time.perf_counter() - START
        out.write_text(json.dumps(data, indent=1))
    title, header, body = table(data)
    print_table(Console(width=200), title, header, body)
    print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    print(f"{data['wall_s']:.0f} s in all; wrote {out}")
    return 0


def table(data: dict) -> tuple[str, list[str], list[list[str]]]:
    """Every size's rates and the fraction training keeps, as (title, header, rows)."""
    header = [
        "envs",
        "minibatch",
        "training env steps/s",
        "raw env steps/s",
        "training / raw",
        "first call (s)",
        "peak memory (GiB)",
    ]
    body = []
    for r in data["rows"]:
        if "train_env_steps_per_s" not in r:
            body.append([fmt(r["num_envs"], ",d"), r.get("skipped") or r.get("error", "-")[:60]])
            body[-1] += [""] * (len(header) - 2)
            continue
        body.append(
            [
                fmt(r["num_envs"], ",d"),
                fmt(r["minibatch"], ",d"),
                fmt(r["train_env_steps_per_s"], ",.0f"),
                fmt(r["raw_env_steps_per_s"], ",.0f"),
                fmt(r["fraction"], ".2f"),
                fmt(r["first_call_s"]),
                fmt(r.get("peak_memory_gb"), ".1f"),
            ]
        )
    met = [r["num_envs"] for r in data["rows"] if r.get("fraction", 0) >= GOAL]
    args = data["args"]
    title = (
        f"PPO on {args['env']} ({args['backend']}), one run on {data['machine']['devices'][0]}, "
        f"{args['num_steps']} steps per env per update: training's share of the raw simulator "
        f"rate >= {GOAL} at {', '.join(f'{n:,}' for n in met) or 'no size'} envs"
    )
    return title, header, body


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
