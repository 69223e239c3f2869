"""A curriculum over meta-RL tasks (AdA-style) beside domain randomisation, on held-out tasks.

The RL^2 student of UED (`rlsuite.agents.ued`: recurrent PPO whose memory resets at trial ends)
trains on a task family's tasks, chosen by each of `--curricula` (`plr`, `robust_plr`, `accel`,
...) against `dr` (every trial a task drawn by the family's sampler, the distribution the
curricula draw their new tasks from), all at the suite's tuned entry for `ued` on the family,
from the same `--seeds` keys, vmapped, at equal env steps (`num_envs * num_steps` an update).

Families (`--env`): `meta/maze` with walls (`--wall-density 0.4`: a density ~ U[0, 0.4] per task,
the six held-out 5 x 5 layouts of `rlsuite.envs.tasks.maze.HELD_OUT`) and `meta/bandit` (five
arms; `held_out=True`: the five held-out bandits of `rlsuite.envs.tasks.bandits.HELD_OUT`).

Then every seed's policy (greedy) plays `--attempts` whole trials on each held-out task
(`Evaluator.level_trials`). Reported per side, over seeds: the mean trial return over the
held-out tasks (each seed's, then the mean across seeds with a 95% bootstrap interval), the
adaptation curve (the mean return of each episode of a trial on the held-out tasks) and each
task's mean trial return; and each curriculum minus DR with the paired bootstrap interval (a
seed's runs share their key).

    python benchmarks/ada.py                              # meta/maze, 5 seeds, DR and PLR
    python benchmarks/ada.py --env meta/bandit --curricula plr accel
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np
import tyro

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402
from report import check_args, fmt, progress  # noqa: E402

from rlsuite import envs  # noqa: E402
from rlsuite.agents import ued  # noqa: E402
from rlsuite.app.tuned import tuned  # noqa: E402
from rlsuite.loop.policy_evaluation import Evaluator  # noqa: E402

FAMILIES = {"meta/maze": {"wall_density": 0.4}, "meta/bandit": {"held_out": True}}


@dataclasses.dataclass
class Args(side_by_side.SideBySideArgs):
    env: str = "meta/maze"
    """task family: meta/maze (with walls) or meta/bandit"""
    curricula: list[str] = dataclasses.field(default_factory=lambda: ["plr"])
    """curricula set beside dr"""
    score: str | None = None
    """the curricula's level score (None: the tuned entry's)"""
    wall_density: float = 0.4
    """meta/maze: the largest wall density of a task"""
    seeds: int = 5
    """seeds per side, vmapped"""
    total_timesteps: int | None = None
    """env steps per seed (None: the tuned entry's)"""
    attempts: int = 50
    """trials per seed and held-out task"""
    out: Path = Path("benchmarks/results/ada.json")
    """where to write the JSON results"""


def run_side(label, agent, hp, keys, key_eval, attempts) -> dict:
    train, _ = side_by_side.ours_vmapped(agent, hp, agent.config.num_updates)
    compiled, compile_s = side_by_side.timed_compile(jax.jit(train), keys)
    train_s, (states, metrics) = side_by_side.timed(compiled, keys)
    progress(f"{label}: compiled in {compile_s:.1f}s, trained in {train_s:.1f}s")
    levels = agent.env.levels()
    names, tasks = levels.held_out()
    trials = Evaluator(agent, states, key_eval, attempts).level_trials(
        levels.params_for(agent.env_params, tasks)
    )
    returns = np.asarray(trials.returns)  # [seeds, tasks, attempts]
    curve = np.asarray(trials.episode_returns).mean(axis=(1, 2))  # [seeds, episodes]
    side = {
        "compile_s": compile_s,
        "train_s": train_s,
        "held_out_per_seed": returns.mean(axis=(1, 2)).tolist(),
        "held_out": side_by_side.mean_interval(returns.mean(axis=(1, 2))),
        "per_task": dict(zip(names, returns.mean(axis=(0, 2)).tolist(), strict=True)),
        "adaptation": [side_by_side.mean_interval(curve[:, i]) for i in range(curve.shape[1])],
        "adaptation_per_seed": curve.tolist(),
    }
    if "ued/learned" in metrics:
        side["learned_share"] = float(np.asarray(metrics["ued/learned"]).mean())
    return side


def main(args: Args) -> dict:
    curricula = tuple(c for c in ued.CURRICULA if c != "dr")
    check_args(args, choices={"env": tuple(FAMILIES), "curricula": curricula})
    console, machine = side_by_side.set_up(args)
    start = time.perf_counter()
    options = dict(FAMILIES[args.env])
    if args.env == "meta/maze":
        options["wall_density"] = args.wall_density
    env, params = envs.make(args.env, **options)
    entry = tuned("ued", args.env)
    config = dict(entry["config"])
    if args.total_timesteps is not None:
        config["total_timesteps"] = args.total_timesteps
    if args.score is not None:
        config["score"] = args.score
    hp = ued.UEDHparams(**entry["hparams"])
    keys, key_eval = side_by_side.keys_for(args.seed, args.seeds)
    row = {"env": args.env, "env_options": options, "seeds": args.seeds}
    sides = ["dr", *args.curricula]
    for label in sides:
        agent = ued.make(ued.UEDConfig(**config, curriculum=label), env, params)
        row[label] = run_side(label, agent, hp, keys, key_eval, args.attempts)
        row["env_steps_per_seed"] = agent.config.num_updates * agent.env_steps_per_update
    dr = np.asarray(row["dr"]["held_out_per_seed"])
    for label in args.curricula:
        difference = np.asarray(row[label]["held_out_per_seed"]) - dr
        row[f"{label}_minus_dr"] = side_by_side.mean_interval(difference)
    result = side_by_side.write_result(args, machine, {}, start, {"rows": [row]})
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the held-out returns and adaptation curves of every side, and
    of each held-out task's return, from the JSON `main` writes (also `benchmarks/device.sh`'s
    summary)."""
    args, row = result["args"], result["rows"][0]
    curricula = args["curricula"]
    sides = ["dr", *curricula]

    def cell(x):
        return f"{x['mean']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]"

    episodes = len(row["dr"]["adaptation"])
    header = ["side", "held-out trial return", *[f"episode {i + 1}" for i in range(episodes)]]
    header.append("train s")
    body = [
        [label, cell(row[label]["held_out"]), *map(cell, row[label]["adaptation"])]
        + [fmt(row[label]["train_s"])]
        for label in sides
    ]
    body += [
        [f"{label} - dr (paired)", cell(row[f"{label}_minus_dr"]), *[""] * episodes, ""]
        for label in curricula
    ]
    names = list(row["dr"]["per_task"])
    tasks = [[name, *[f"{row[s]['per_task'][name]:.3f}" for s in sides]] for name in names]
    title = (
        f"Curricula over {row['env']} tasks beside DR, {row['env_steps_per_seed']:,} env steps x "
        f"{row['seeds']} seeds; greedy trials on {len(names)} held-out tasks, "
        f"{args['attempts']} each"
    )
    return [
        (title, header, body),
        ("mean trial return per held-out task", ["task", *sides], tasks),
    ]


if __name__ == "__main__":
    main(tyro.cli(Args))
