"""Offline agents' gradient updates per second, beside JAX-CORL's published training times.

JAX-CORL (Nishimori et al., the JAX ports of CORL's single-file offline algorithms) publishes the
wall time of 1M gradient updates with batch 256 on D4RL's locomotion datasets, compile included,
for IQL and CQL on a GTX 1080 Ti (`PUBLISHED_MINUTES`). Those figures are quoted, not re-run here
(its code needs D4RL's downloaded datasets, which nothing in this suite fetches). CSVE and SAQ
have no such figure: theirs is ours alone. SAQ's rate mixes its two phases (its VQ-VAE's steps,
the first fifth, and its critics'), as a run does.

Ours: each agent with the reference sizes (256x256 networks, batch 256) on a dataset of
`--dataset-size` transitions shaped like D4RL's halfcheetah (17-dimensional observations, 6
actions; the values are random, which does not change the cost of an update), through
`rlsuite.loop.driver.run_batch`. The first call includes compilation; the compile-free rate is
the best of `--repeats` further calls. Minutes per 1M updates = (compile time + 1M / rate) / 60, one
seed; with `--seeds N > 1`, N seeds train in one vmapped call and the rate counts all their updates.

    python benchmarks/offline.py                          # CPU: 2,000 updates per agent
    python benchmarks/offline.py --updates 100000 --seeds 1 8   # on a GPU
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

from rlsuite.agents import bc, cql, csve, iql, saq, td3_bc
from rlsuite.data.datasets import Dataset, DatasetInfo
from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.loop import divergence, driver

PUBLISHED_MINUTES = {"iql": 9.0, "cql": 56.0}  # JAX-CORL, 1M updates, GTX 1080 Ti
AGENTS = {
    "bc": (bc.make, bc.BCConfig),
    "td3_bc": (td3_bc.make, td3_bc.TD3BCConfig),
    "iql": (iql.make, iql.IQLConfig),
    "cql": (cql.make, cql.CQLConfig),
    "csve": (csve.make, csve.CSVEConfig),
    "saq": (saq.make, saq.SAQConfig),
}


@dataclasses.dataclass
class Args:
    """Flags of the offline benchmark."""

    agents: list[str] = dataclasses.field(
        default_factory=lambda: ["iql", "cql", "td3_bc", "bc", "csve", "saq"]
    )
    """agents to time"""
    updates: int = 2_000
    """gradient updates per timed call (per seed)"""
    gradient_steps: int = 500
    """gradient steps per driver update (one scan iteration of the driver)"""
    seeds: list[int] = dataclasses.field(default_factory=lambda: [1])
    """numbers of vmapped seeds"""
    repeats: int = 2
    """compile-free calls after the first; the best is kept"""
    dataset_size: int = 1_000_000
    """transitions in the synthetic dataset"""
    out: Path = Path("benchmarks/results/offline.json")
    """Where to write the JSON results."""


class _Shapes(Environment):
    """Spaces of D4RL's halfcheetah, for binding the agents. Never stepped here: `reset_env` and
    `step_env` only give the shapes that the agents' contract check traces."""

    @property
    def default_params(self):
        return None

    def observation_space(self, params):
        return Box(-np.inf, np.inf, (17,))

    def action_space(self, params):
        return Box(-1.0, 1.0, (6,))

    def reset_env(self, key, params):
        return jnp.zeros(17), jnp.zeros(())

    def step_env(self, key, state, action, params):
        flag = jnp.zeros((), bool)
        return jnp.zeros(17), state, jnp.zeros(()), flag, flag, {}


def synthetic(size: int, key) -> Dataset:
    k = jax.random.split(key, 4)
    return Dataset(
        observations=jax.random.normal(k[0], (size, 17)),
        actions=jax.random.uniform(k[1], (size, 6), minval=-1.0, maxval=1.0),
        rewards=jax.random.normal(k[2], (size,)),
        terminals=jax.random.uniform(k[3], (size,)) < 0.001,
        timeouts=jnp.zeros((size,), bool),
        next_observations=jax.random.normal(k[0], (size, 17)) + 0.1,
        info=DatasetInfo(env="synthetic-halfcheetah-shapes"),
    )


def time_agent(name: str, data: Dataset, seeds: int, args: Args) -> dict:
    make, Config = AGENTS[name]
    num_updates = max(1, args.updates // args.gradient_steps)
    config = Config(num_updates=num_updates, gradient_steps=args.gradient_steps)
    agent = make(config, _Shapes(), None)
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(0), seeds)
    states = jax.block_until_ready(driver.init_batch(agent, keys, hp, None, data))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    start = time.perf_counter()
    out = jax.block_until_ready(run(agent, states, hp, num_updates, None, data))
    first = time.perf_counter() - start
    best = np.inf
    for _ in range(args.repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(run(agent, states, hp, num_updates, None, data))
        best = min(best, time.perf_counter() - start)
    # Every run's networks stayed finite (the driver's own check; a metric may be NaN by design,
    # as SAQ's of the phase a step is not in).
    assert np.asarray(divergence.finite_check(agent.trainable)(out[0])).all()
    done = num_updates * args.gradient_steps
    rate = done / best  # updates per second of one seed
    compile_s = max(first - best, 0.0)
    minutes = (compile_s + 1_000_000 / rate) / 60
    row = {
        "agent": name,
        "seeds": seeds,
        "updates_per_s_per_seed": round(rate),
        "updates_per_s_all_seeds": round(rate * seeds),
        "compile_s": round(compile_s, 1),
        "minutes_per_1M_updates": round(minutes, 1),
    }
    if name in PUBLISHED_MINUTES:
        row["jax_corl_minutes_gtx1080ti"] = PUBLISHED_MINUTES[name]
        row["jax_corl_over_ours"] = round(PUBLISHED_MINUTES[name] / minutes, 2)
    return row


def main(args: Args) -> None:
    check_args(args, choices={"agents": tuple(AGENTS)})
    data = synthetic(args.dataset_size, jax.random.key(1))
    rows = [time_agent(name, data, n, args) for n in args.seeds for name in args.agents]
    report = {"machine": machine_info(), "command": command()}
    result = {**report, "args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}
    for title, header, body in tables(result):
        print_table(Console(), title, header, body)
        print(markdown(header, body))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of every agent's update rate, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the offline families' pages)."""
    rows = result["rows"]
    header = list(rows[0])
    for row in rows:
        header += [k for k in row if k not in header]
    body = [[str(row.get(k, "-")) for k in header] for row in rows]
    return [("Offline gradient updates (batch 256, 256x256 networks)", header, body)]


if __name__ == "__main__":
    main(tyro.cli(Args))
