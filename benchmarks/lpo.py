"""LPO's meta-training throughput: a generation's population of whole PPO runs vmapped in one
program, beside the same runs one after another, in one run on one machine.

For each population size (`--populations`), one LPO agent at the tuned CartPole entry's inner
runs (`rlsuite.app.tuned`: 8 envs x 64 steps, 30 PPO updates of 8 epochs, 15,360 env steps
each), one seed:

- vmapped: `agent.update`, one generation (`population_size + 1` inner runs, PPO and the fitness
  evaluation, then the ES step), compiled ahead of time and timed over `--generations`
  generations;
- one at a time: `lpo.train_and_evaluate` of one member (one inner run and its evaluation),
  compiled ahead of time and called `population_size + 1` times per generation, for the same
  generations, on the same members (the population the ES proposed), from the same keys.

Reported: the inner env steps per second of each (the env steps of the PPO runs; the fitness
episodes are extra work on both sides), and the vmapped side's over the other's. The fitness of
each side's members agrees (the same runs), which the JSON records as the largest difference.

    python benchmarks/lpo.py                                  # populations 2, 8, 16 and 32
    python benchmarks/lpo.py --populations 64 256 --generations 4   # a GPU's (device.sh)
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402
from report import check_args, fmt, progress  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import lpo, ppo  # noqa: E402
from rlsuite.app.tuned import tuned  # noqa: E402


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    populations: list[int] = dataclasses.field(default_factory=lambda: [2, 8, 16, 32])
    """population sizes (even), one LPO agent each"""
    generations: int = 2
    """timed generations per side and size, after the compiled first"""
    env: str = "cartpole"
    """the environment, at LPO's tuned entry for it"""
    out: Path = Path("benchmarks/results/lpo.json")
    """where to write the JSON results"""


def agent_for(args: Args, population: int):
    entry = tuned("lpo", args.env)
    env, params = envs.make(args.env)
    config = lpo.LPOConfig(**{**entry["config"], "population_size": population})
    return lpo.make(config, env, params), ppo.PPOHparams(**entry["hparams"])


def measure(args: Args, population: int) -> dict:
    agent, hp = agent_for(args, population)
    setup, config = agent.update.args[0], agent.config
    state = jax.jit(agent.init)(jax.random.key(args.seed), hp)
    update, compile_vmapped = side_by_side.timed_compile(jax.jit(agent.update), state, hp)
    one = jax.jit(lambda params, key: lpo.train_and_evaluate(setup, params, key, hp)[1])
    es_params = setup.strategy.default_params
    member = jax.tree.map(lambda x: x[0], setup.strategy.ask(state.key, state.es, es_params)[0])
    single, compile_single = side_by_side.timed_compile(one, member, state.key)
    vmapped_s = single_s = 0.0
    largest_gap = 0.0
    for _ in range(args.generations):
        # The members and inner key the generation below draws (`lpo.update`'s order).
        _, key_ask, key_inner, _ = jax.random.split(state.key, 4)
        population_now, es = setup.strategy.ask(key_ask, state.es, es_params)
        mean = setup.strategy.get_mean(es)
        members = jax.tree.map(lambda p, m: jnp.concatenate([p, m[None]]), population_now, mean)
        seconds, (state, metrics) = side_by_side.timed(update, state, hp)
        vmapped_s += seconds
        start = time.perf_counter()
        fitness = [
            jax.block_until_ready(single(jax.tree.map(lambda x, i=i: x[i], members), key_inner))
            for i in range(population + 1)
        ]
        single_s += time.perf_counter() - start
        gap = abs(float(np.mean(fitness[:population])) - float(metrics["lpo/fitness_mean"]))
        largest_gap = max(largest_gap, gap)
    steps = args.generations * config.generation_steps
    progress(
        f"population {population}: vmapped {vmapped_s:.1f} s, one at a time {single_s:.1f} s "
        f"for {steps:,} inner env steps"
    )
    return {
        "population": population,
        "inner_runs_per_generation": population + 1,
        "generation_env_steps": config.generation_steps,
        "generations": args.generations,
        "vmapped": {
            "compile_s": compile_vmapped,
            "train_s": vmapped_s,
            "env_steps_per_s": steps / vmapped_s,
        },
        "one_at_a_time": {
            "compile_s": compile_single,
            "train_s": single_s,
            "env_steps_per_s": steps / single_s,
        },
        "vmapped_over_one_at_a_time": single_s / vmapped_s,
        "largest_fitness_mean_gap": largest_gap,
    }


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the throughput per population size, from the JSON `main`
    writes (`benchmarks/tables.py` renders it on the LPO page)."""
    header = ["population", "inner runs / generation", "env steps / generation"]
    header += ["vmapped env steps/s", "one at a time env steps/s", "vmapped / one at a time"]
    header += ["compile s (vmapped, one)"]
    body = [
        [
            str(r["population"]),
            str(r["inner_runs_per_generation"]),
            f"{r['generation_env_steps']:,}",
            fmt(r["vmapped"]["env_steps_per_s"], ",.0f"),
            fmt(r["one_at_a_time"]["env_steps_per_s"], ",.0f"),
            f"{r['vmapped_over_one_at_a_time']:.2f}x",
            f"{r['vmapped']['compile_s']:.1f}, {r['one_at_a_time']['compile_s']:.1f}",
        ]
        for r in result["rows"]
    ]
    generations = result["rows"][0]["generations"] if result["rows"] else 0
    title = (
        f"LPO meta-training throughput on {result['args']['env']}: inner PPO env steps per "
        f"second, a generation vmapped against its runs one at a time ({generations} "
        "generations, the tuned entry's inner runs)"
    )
    return [(title, header, body)]


def main(args: Args) -> dict:
    check_args(args)
    if any(p < 2 or p % 2 for p in args.populations):
        raise SystemExit(f"--populations must be even and >= 2, got {args.populations}")
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    rows, result = [], {}
    for population in args.populations:
        rows.append(measure(args, population))
        result = side_by_side.write_result(args, machine, {}, start, {"rows": rows})
    side_by_side.show(console, args, result, tables(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
