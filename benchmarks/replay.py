"""Prioritized replay: ours (`rlsuite.data.prioritized`) beside flashbax 0.1.3's prioritised item
buffer, the library the off-policy loop would otherwise take, in one run on one machine.

What a DQN update asks of its replay, timed as one jitted `lax.scan` of `--steps` iterations:
`add` one item per environment (`--num-envs`), `sample` a batch (`--batch-size`) with its
probabilities, and write the batch's new priorities back (`update` / `set_priorities`), at
`--capacity` items of CartPole's shape (`--obs-size` 4) or MinAtar's (`--obs-size 400`), for 1 and
8 seeds vmapped. The compile-free rate is the best of `--repeats` calls after the first. The
importance weights are computed on both sides from the probabilities each returns, as the
learner needs them.

The contract the loop needs beyond speed, checked and reported per side: the sampling frequencies
against the priorities (a chi-square p-value over 16,000 draws from 64 items of known priorities),
a `valid` mask on `add` (the n-step window's first steps are not items: ours drops them, flashbax
stores every item it is given, so a wrapper must set their priority to 0 after each add), and the
state a pytree of arrays (exact resume through the checkpoint, both).

    pip install --no-deps flashbax==0.1.3        # the anchor (it needs only jax, chex, flax)
    python benchmarks/replay.py                  # CPU: 2,000 steps at 100,000 items
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from report import check_args, command, machine_info, markdown, print_table
from rich.console import Console
from scipy import stats

from rlsuite.data import prioritized


@dataclasses.dataclass
class Args:
    """Flags of the replay benchmark."""

    steps: int = 2_000
    """add / sample / priority-update iterations per timed call"""
    capacity: int = 100_000
    """items each buffer holds"""
    num_envs: int = 8
    """items added per iteration"""
    batch_size: int = 32
    """items sampled per iteration"""
    obs_size: int = 4
    """floats per observation (4: CartPole; 400: MinAtar's 10 x 10 x 4)"""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1, 8])
    """buffers vmapped in one call (each its own seed)"""
    repeats: int = 3
    """timed calls after the compiling one; the best counts"""
    out: Path = Path(__file__).parent / "results" / "replay.json"
    """where the JSON goes"""


def item(args: Args, n: int) -> dict:
    """`n` replay items of the loop's layout, zeros."""
    return {
        "obs": jnp.zeros((n, args.obs_size)),
        "action": jnp.zeros((n,), jnp.int32),
        "reward": jnp.zeros((n,)),
        "discount": jnp.zeros((n,)),
        "next_obs": jnp.zeros((n, args.obs_size)),
        "terminated": jnp.zeros((n,), bool),
        "truncated": jnp.zeros((n,), bool),
    }


def new_items(args: Args, key) -> dict:
    """`num_envs` items whose values depend on `key` (so that no step is computed once)."""
    value = jax.random.uniform(key)
    items = item(args, args.num_envs)
    return {
        **{k: v + value for k, v in items.items() if v.dtype == jnp.float32},
        "action": items["action"] + (value > 0.5).astype(jnp.int32),
        "terminated": items["terminated"] | (value > 0.9),
        "truncated": items["truncated"] | (value > 0.95),
    }


def weights(probability, size, beta=0.4):
    w = (size * jnp.maximum(probability, 1e-30)) ** -beta
    return w / w.max()


def ours(args: Args):
    """`(init, step)` of our buffer: `step(state, key) -> state`."""
    buffer = prioritized.prioritized_replay(args.capacity, 0.6, 0.4, beta_steps=args.steps)
    example = jax.tree.map(lambda x: x[0], item(args, 1))

    def step(state, key):
        key_add, key_sample, key_priority = jax.random.split(key, 3)
        state = buffer.add(state, new_items(args, key_add))
        batch = buffer.sample(state, key_sample, args.batch_size)
        priorities = jax.random.uniform(key_priority, (args.batch_size,)) + batch["weight"] * 0
        return buffer.update(state, batch["index"], priorities)

    return (lambda: buffer.init(example)), step


def flashbax_side(args: Args):
    """`(init, step)` of flashbax's prioritised item buffer, the same iteration."""
    import flashbax

    buffer = flashbax.make_prioritised_item_buffer(
        max_length=args.capacity, min_length=1, sample_batch_size=args.batch_size,
        add_batches=True, priority_exponent=0.6,
    )  # fmt: skip
    example = jax.tree.map(lambda x: x[0], item(args, 1))

    def step(state, key):
        key_add, key_sample, key_priority = jax.random.split(key, 3)
        state = buffer.add(state, new_items(args, key_add))
        sample = buffer.sample(state, key_sample)
        size = jnp.minimum(state.current_index + 1, args.capacity)  # approximately the fill
        weight = weights(sample.probabilities, size)
        priorities = jax.random.uniform(key_priority, (args.batch_size,)) + weight * 0
        return buffer.set_priorities(state, sample.indices, priorities)

    return (lambda: buffer.init(example)), step


SIDES = {"ours": ours, "flashbax": flashbax_side}


def time_side(name: str, seeds: int, args: Args) -> dict:
    init, step = SIDES[name](args)

    def run(states, keys):
        def one(state, key):
            state, _ = jax.lax.scan(
                lambda s, k: (step(s, k), None), state, jax.random.split(key, args.steps)
            )
            return state

        return jax.vmap(one)(states, keys)

    states = jax.vmap(lambda _: init())(jnp.arange(seeds))
    keys = jax.random.split(jax.random.key(0), seeds)
    run = jax.jit(run)
    start = time.perf_counter()
    jax.block_until_ready(run(states, keys))
    first = time.perf_counter() - start
    best = np.inf
    for _ in range(args.repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(states, keys))
        best = min(best, time.perf_counter() - start)
    return {
        "side": name,
        "seeds": seeds,
        "steps_per_s_all_seeds": round(args.steps * seeds / best),
        "compile_s": round(max(first - best, 0.0), 2),
        "state_mib_per_seed": round(
            sum(x.nbytes for x in jax.tree.leaves(states)) / seeds / 2**20, 1
        ),
    }


def frequencies(name: str) -> float:
    """The chi-square p-value of 16,000 draws (500 batches of 32) from 64 items of priorities
    1 .. 64 (exponent 1) against the priorities' shares."""
    example = {"x": jnp.zeros(())}
    priorities = jnp.arange(1.0, 65.0)
    if name == "ours":
        buffer = prioritized.prioritized_replay(64, alpha=1.0)
        state = buffer.add(buffer.init(example), {"x": jnp.arange(64.0)})
        state = buffer.update(state, jnp.arange(64), priorities - 1e-6)
        draw = lambda key: buffer.sample(state, key, 32)["index"]  # noqa: E731
    else:
        import flashbax

        buffer = flashbax.make_prioritised_item_buffer(
            64, 1, 32, add_batches=True, priority_exponent=1.0
        )
        state = buffer.add(buffer.init({"x": jnp.zeros(())}), {"x": jnp.arange(64.0)})
        state = buffer.set_priorities(state, jnp.arange(64), priorities)
        draw = lambda key: buffer.sample(state, key).indices  # noqa: E731
    drawn = jnp.concatenate([draw(jax.random.key(i)) for i in range(500)])
    counts = np.bincount(np.asarray(drawn), minlength=64)
    shares = np.arange(1.0, 65.0) / np.arange(1.0, 65.0).sum()  # float64: sums that agree
    return float(stats.chisquare(counts, shares * counts.sum()).pvalue)


def main(args: Args) -> None:
    check_args(args)
    rows = [time_side(name, n, args) for n in args.seeds for name in SIDES]
    for row in rows:
        other = next(r for r in rows if r["seeds"] == row["seeds"] and r["side"] == "flashbax")
        row["ours_over_flashbax"] = (
            round(row["steps_per_s_all_seeds"] / other["steps_per_s_all_seeds"], 2)
            if row["side"] == "ours" else "-"
        )  # fmt: skip
    contract = [
        {
            "side": "ours",
            "chi_square_p": round(frequencies("ours"), 3),
            "valid_mask": "dropped on add",
            "state": "pytree of arrays",
        },
        {
            "side": "flashbax",
            "chi_square_p": round(frequencies("flashbax"), 3),
            "valid_mask": "none: stored, priority to be zeroed after",
            "state": "pytree of arrays",
        },
    ]
    report = {"machine": machine_info(), "command": command()}
    result = {
        **report,
        "args": {k: str(v) for k, v in vars(args).items()},
        "rows": rows,
        "contract": contract,
    }
    for title, header, body in tables(result):
        print_table(Console(), title, header, body)
        print(markdown(header, body))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the timings and of the contract checks, from the JSON `main`
    writes (`benchmarks/tables.py` renders it on the DQN and Rainbow pages)."""
    out = []
    for title, rows in (
        ("Prioritized replay: add, sample, priority update per second", result["rows"]),
        ("Prioritized replay: what the loop needs besides speed", result["contract"]),
    ):
        header = list(rows[0])
        body = [[str(row.get(k, "-")) for k in header] for row in rows]
        out.append((title, header, body))
    return out


if __name__ == "__main__":
    main(tyro.cli(Args))
