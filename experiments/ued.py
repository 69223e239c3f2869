"""UED curricula in one file: copy it, change the level score (or anything else), run it.

    python experiments/ued.py                                  # dr, plr, robust_plr, accel
    python experiments/ued.py --curriculum dr robust_plr --num-seeds 4
    python experiments/ued.py --curriculum robust_plr accel --score-idea clipped-regret
    python experiments/ued.py --curriculum dr paired --updates 200
    python experiments/ued.py --env maze --curriculum accel    # 13 x 13, 30,000 updates: a GPU's

Each curriculum (`rlsuite.agents.ued`) trains a recurrent PPO student on `maze/small` (7 x 7, the
CPU's task) or `maze` (13 x 13), its seeds vmapped into one jitted call; every config and
hyperparameter field is a flag (`--help`), with the suite's tuned values for the environment as
defaults (`rlsuite.app.tuned`). `--updates` sets the length of the run (`total_timesteps` is
`updates x num_envs x num_steps`).

Every `updates / evaluations` updates, and before the first, each seed's policy plays 256
held-out DR levels drawn from a fixed key (tests/topics/test_ued_learning.py's), the same for every
curriculum and run, sampling its actions, one attempt per level with a fresh memory. At the end
the script prints a table of solve rates (the share of attempts that reach the goal), mean over
seeds with a 95% bootstrap interval across them, on those levels and, where the environment has
named evaluation levels (the eight 13 x 13 mazes of `maze`), on each of them. In `--out` it
writes `solve_rate.png` (the solve rate on the DR levels over training, per curriculum),
`levels.png` (the highest-scored levels of each curriculum's level buffer, seed 0; PAIRED's last
levels built) and `results.json` (every seed's numbers); it refuses to replace them.

The research idea is the level score: the buffer's curricula rank levels by it (`--score-idea`:
MaxMC, positive value loss, SFL's learnability, or `clipped_regret` below).
"""

import dataclasses
import json
import pathlib
import sys
import time
from typing import Annotated, Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import ued
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.plotting import plot_curves, plot_levels
from rlsuite.app.tuned import default_env, tuned
from rlsuite.data import level_buffer
from rlsuite.environment.levels import levels_of
from rlsuite.loop import driver, files, platform, runner
from rlsuite.ops import level_scores
from rlsuite.ops.bootstrap import bootstrap_ci

EVAL_LEVELS_KEY = 12345  # the held-out DR levels: the same for every curriculum, seed and run
TOP_LEVELS = 4  # buffer levels drawn per curriculum


def clipped_regret(config, transitions, advantages, max_returns):
    """An idea to try: MaxMC with each step's regret estimate `R_max - V(s_t)` clipped to
    `[0, R_max]`, `R_max` the level's best return (this rollout's, raised to `max_returns`, the
    best seen before). Where returns are >= 0 (the maze's) a level's regret lies in that range:
    an overestimating value (V > R_max) no longer pulls the score below 0, an underestimating
    one (V < 0) no longer pushes it above R_max, and a level never solved scores exactly 0.
    `R_max - clip(V, 0, R_max)` is that clip, so MaxMC on the clipped values computes it."""
    tr = transitions
    dones = tr.terminated | tr.truncated
    best = jnp.fmax(level_scores.max_return(dones, tr.reward), max_returns)  # -inf: none
    values = jnp.clip(tr.extras["value"], 0.0, best[None])
    return level_scores.max_mc(dones, tr.reward, values, max_returns)


# None: the configured score (`UEDConfig.score`); a function: passed to `ued.make` as `score`.
SCORE_IDEAS = {"maxmc": None, "pvl": None, "learnability": None, "clipped-regret": clipped_regret}
Curriculum = Literal["dr", "plr", "robust_plr", "accel", "paired"]


@dataclasses.dataclass(frozen=True)
class Config(ued.UEDConfig):
    """The student's and the curriculum's `UEDConfig`; its curriculum, score and total_timesteps
    come from --curriculum, --score-idea and --updates."""

    curriculum: tyro.conf.Suppress[str] = "plr"  # --curriculum (a list)
    score: tyro.conf.Suppress[str] = "maxmc"  # --score-idea
    total_timesteps: tyro.conf.Suppress[int] = 500_000  # --updates


@dataclasses.dataclass
class Args:
    config: Annotated[Config, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[ued.UEDHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """environment with levels: maze/small (7 x 7) or maze (13 x 13)"""
    updates: int
    """updates per curriculum (the tuned entry's number by default)"""
    curriculum: list[Curriculum] = dataclasses.field(
        default_factory=lambda: ["dr", "plr", "robust_plr", "accel"]
    )
    """curricula to train, one after the other (paired: PAIRED's adversary, no level score)"""
    score_idea: Literal["maxmc", "pvl", "learnability", "clipped-regret"] = "maxmc"
    """level score of plr, robust_plr and accel: a configured one, or the idea in this file"""
    num_seeds: int = 4
    """independent runs per curriculum, vmapped"""
    seed: int = 0
    """seed of the runs (every curriculum starts from the same keys)"""
    evaluations: int = 10
    """evaluations on the held-out DR levels during training (the points of the curve)"""
    eval_levels: int = 256
    """held-out DR levels"""
    eval_attempts: int = 1
    """attempts per held-out level (an episode each, from a fresh memory)"""
    deterministic: bool = False
    """evaluate the policy's mode instead of sampling its actions (one attempt is then enough)"""
    out: str = "runs/ued"
    """directory for solve_rate.png, levels.png and results.json"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("ued"))
    defaults = tuned("ued", env_name)
    config = Config(**defaults["config"])
    default = Args(
        config=config,
        hparams=ued.UEDHparams(**defaults["hparams"]),
        env=env_name,
        updates=config.num_updates,
    )
    args = tyro.cli(Args, args=argv, default=default)
    for name in ("updates", "num_seeds", "evaluations", "eval_levels", "eval_attempts"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.curriculum:
        raise ValueError(
            "--curriculum is empty; give one or more of " + ", ".join(get_args(Curriculum))
        )
    curricula = list(dict.fromkeys(args.curriculum))  # in order, each once
    out = pathlib.Path(args.out)
    paths = {name: out / name for name in ("solve_rate.png", "levels.png", "results.json")}
    for path in paths.values():  # refused before anything is compiled
        files.check_new_file(path, "--out", hint=" (the script never replaces its results)")

    env, env_params = envs.make(args.env)
    levels = levels_of(env)
    if levels is None:
        raise ValueError(f"{args.env} has no levels (a UED environment: maze/small or maze)")
    agents = {c: make_agent(args, c, env, env_params) for c in curricula}
    for agent in agents.values():
        agent.check_hparams(args.hparams)  # before anything is compiled

    # The held-out levels, as env params with a leading [num_levels] axis: the DR levels, then
    # the named ones where the environment has them.
    keys = jax.random.split(jax.random.key(EVAL_LEVELS_KEY), args.eval_levels)
    eval_levels = jax.vmap(levels.generate)(keys)
    named = levels.held_out() if levels.held_out is not None else ((), None)
    if named[1] is not None:
        eval_levels = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), eval_levels, named[1])
    level_params = levels.params_for(agents[curricula[0]].env_params, eval_levels)
    # The curricula choose the levels a student trains on, not how it acts: one agent's
    # evaluation (one compilation) serves every curriculum's states.
    evaluator = agents[curricula[0]]
    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5))

    def solved(states):  # [seeds, levels]: the share of the attempts that reached the goal
        key = jax.random.key(1)
        result = evaluate(
            evaluator, states, key, level_params, args.eval_attempts, args.deterministic
        )
        return np.asarray((result.returns > 0).mean(axis=-1))

    results, states = {}, {}
    for curriculum, agent in agents.items():
        states[curriculum], results[curriculum] = train(args, agent, solved)
        r = results[curriculum]
        print(
            f"{curriculum} on {args.env}: {args.num_seeds} seeds x {r['env_steps']:,} env steps "
            f"in {r['train_seconds']:.1f} s ({r['env_steps_per_second']:,} env steps/s)"
        )
    print(solve_rate_table(results, args.eval_levels, named[0]))

    out.mkdir(parents=True, exist_ok=True)
    curves = [
        (c, np.asarray(r["curve_env_steps"]), np.asarray(r["curve_solve_rate"]).T)
        for c, r in results.items()
    ]
    plot_curves(
        curves,
        paths["solve_rate.png"],
        metric="solve rate",
        title=f"{args.env}: solve rate on {args.eval_levels} held-out DR levels",
    )
    written = [paths["solve_rate.png"]]
    if draw_levels(states, levels, paths["levels.png"], args.score_idea):
        written.append(paths["levels.png"])
    report = {
        "env": args.env,
        "score_idea": args.score_idea,
        "num_seeds": args.num_seeds,
        "updates": args.updates,
        "eval_levels": args.eval_levels,
        "eval_levels_key": EVAL_LEVELS_KEY,
        "held_out_names": list(named[0]),
        "curricula": results,
    }
    paths["results.json"].write_text(json.dumps(report, indent=2) + "\n")
    written.append(paths["results.json"])
    print("wrote " + ", ".join(map(str, written)))
    return report


def make_agent(args: Args, curriculum: str, env, env_params):
    """The UED agent of `curriculum`: the flags' config with its curriculum, score and budget."""
    fields = {f.name: getattr(args.config, f.name) for f in dataclasses.fields(ued.UEDConfig)}
    idea = SCORE_IDEAS[args.score_idea]
    fields.update(
        curriculum=curriculum,
        score="maxmc" if idea is not None else args.score_idea,
        total_timesteps=args.updates * args.config.num_envs * args.config.num_steps,
    )
    return ued.make(ued.UEDConfig(**fields), env, env_params, score=idea)


def train(args: Args, agent, solved):
    """Train `args.num_seeds` runs of `agent` in chunks, evaluating them with `solved` (states ->
    [seeds, levels] solved) before the first and after each; returns the final states and the
    curriculum's results."""
    keys = jax.random.split(jax.random.key(args.seed), args.num_seeds)
    states = jax.jit(driver.init_batch, static_argnums=0)(agent, keys, args.hparams)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3), donate_argnums=1)
    chunk = runner.chunk_length(args.updates, args.evaluations)
    compiled = {}
    curve = [solved(states)]
    updates, train_seconds = [0], 0.0
    while updates[-1] < args.updates:
        n = min(chunk, args.updates - updates[-1])
        if n not in compiled:
            compiled[n] = run.lower(agent, states, args.hparams, n).compile()
        start = time.perf_counter()
        states, _ = compiled[n](states, args.hparams)
        jax.block_until_ready(states)
        train_seconds += time.perf_counter() - start
        updates.append(updates[-1] + n)
        curve.append(solved(states))
    steps, n = agent.env_steps_per_update, args.eval_levels
    final = curve[-1]  # [seeds, levels]: the DR levels first, then the named ones
    results = {
        "env_steps": args.updates * steps,
        "train_seconds": round(train_seconds, 3),  # without compilation or evaluation
        "env_steps_per_second": round(
            args.updates * steps * args.num_seeds / max(train_seconds, 1e-9)
        ),
        "curve_env_steps": [u * steps for u in updates],
        "curve_solve_rate": [c[:, :n].mean(axis=1).tolist() for c in curve],  # [points, seeds]
        "dr_solve_rate": final[:, :n].mean(axis=1).tolist(),  # [seeds]
        "named_solve_rate": final[:, n:].tolist(),  # [seeds, named levels]
    }
    return states, results


def solve_rate_table(results: dict, eval_levels: int, names) -> str:
    """Markdown: a row per level set (the DR levels, each named level and their mean), a column
    per curriculum; each cell the mean over seeds [95% bootstrap interval across seeds]."""
    columns = {}
    for curriculum, r in results.items():
        dr = np.asarray(r["dr_solve_rate"])  # [seeds]
        named = np.asarray(r["named_solve_rate"]).reshape(len(dr), len(names))
        per_seed = [dr, *named.T] + ([named.mean(axis=1)] if names else [])
        columns[curriculum] = np.stack(per_seed, axis=1)  # [seeds, rows]
    rows = [f"{eval_levels} DR levels", *names]
    if names:
        rows.append(f"mean of the {len(names)} named")
    lines = [
        "solve rate: mean over seeds [95% bootstrap interval across seeds]",
        "| levels | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    cells = {c: _cells(values) for c, values in columns.items()}
    for i, row in enumerate(rows):
        lines.append(f"| {row} | " + " | ".join(cells[c][i] for c in columns) + " |")
    return "\n".join(lines)


def _cells(values: np.ndarray) -> list[str]:
    low, high = bootstrap_ci(values)
    rows = zip(values.mean(axis=0), low, high, strict=True)
    return [f"{mean:.3f} [{lo:.3f}, {hi:.3f}]" for mean, lo, hi in rows]


def draw_levels(states: dict, levels, out: pathlib.Path, score_idea: str) -> bool:
    """Draw a row per curriculum to `out`: the `TOP_LEVELS` highest-scored levels of its buffer
    (seed 0), or PAIRED's last levels built; False where there is none (DR keeps no level)."""
    rows = []
    for curriculum, state in states.items():
        if curriculum == "dr":
            continue  # no level buffer: every episode a fresh level
        if curriculum == "paired":
            built = jax.tree.map(lambda x: np.asarray(x[0]), state.levels)  # seed 0's [num_envs]
            titles = [f"paired: built #{i + 1}" for i in range(TOP_LEVELS)]
        else:
            buffer = jax.tree.map(lambda x: x[0], state.buffer)
            k = min(TOP_LEVELS, int(buffer.size))
            if k == 0:
                print(f"levels.png: the buffer of {curriculum} (seed 0) holds no level yet")
                continue
            _, scores, built = level_buffer.highest(buffer, k)
            titles = [f"{curriculum} #{i + 1}\n{score_idea} {s:.3f}" for i, s in enumerate(scores)]
        count = min(TOP_LEVELS, len(jax.tree.leaves(built)[0]))
        images = [
            levels.render(jax.tree.map(lambda x, i=i: np.asarray(x[i]), built))
            for i in range(count)
        ]
        rows.append(list(zip(images, titles[:count], strict=True)))
    if not rows:
        return False
    blank = np.full_like(rows[0][0][0], 255)  # white: an empty panel keeps one row a curriculum
    panels = [panel for row in rows for panel in row + [(blank, "")] * (TOP_LEVELS - len(row))]
    plot_levels(
        [image for image, _ in panels], [title for _, title in panels], out, ncols=TOP_LEVELS
    )
    return True


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
