"""Contrastive RL in one file: copy it, change the energy or the loss (or anything else), run it.

    python experiments/crl.py                                   # norm vs the l1 idea, forward
    python experiments/crl.py --energy-idea norm dot cosine --loss-idea forward smooth-forward
    python experiments/crl.py --loss-idea forward binary --num-seeds 5 --updates 2000
    python experiments/crl.py --env goal/point_u_maze --updates 5000

Each variant, an energy and a contrastive loss (`rlsuite.agents.crl`), trains a CRL agent on a
goal environment (`goal/point_reach` by default), its seeds vmapped into one jitted call; every
config and hyperparameter field is a flag (`--help`), with the suite's tuned values for the
environment as defaults (`rlsuite.app.tuned`). `--updates` sets the length of the run
(`total_timesteps` is `updates x num_envs`). Several `--energy-idea` and `--loss-idea` values
compare every pair of them in one run, each starting from the same keys.

Every `updates / evaluations` updates, and before the first, each seed's greedy policy plays
`--eval-episodes` episodes (from a fixed key, the same for every variant). At the end the script
prints a table: per variant, success_any (the share of episodes that reach the goal at least
once) and the time near the goal (steps per episode within the goal's threshold), mean over
seeds with a 95% bootstrap interval across them. In `--out` it writes `success.png` (success_any
over training, per variant) and `results.json` (every seed's numbers); it refuses to replace them.

The research ideas: the energy between phi(s, a) and psi(g) (`neg_l1` below, besides the four
of `rlsuite.ops.contrastive`) and the critic's loss over the batch's logits (`smoothed_forward`
below, besides forward, backward, symmetric InfoNCE and binary NCE).
"""

import dataclasses
import itertools
import json
import pathlib
import sys
import time
from typing import Annotated

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from rlsuite import envs
from rlsuite.agents import crl
from rlsuite.app.argv import env_from_argv
from rlsuite.app.errors import run_script
from rlsuite.app.plotting import plot_curves
from rlsuite.app.tuned import default_env, tuned
from rlsuite.environment.evaluations import goal_summary
from rlsuite.loop import driver, files, platform, runner
from rlsuite.ops.bootstrap import bootstrap_ci

EVAL_KEY = 1  # the evaluation episodes: the same for every variant, seed and evaluation
LABEL_SMOOTHING = 0.1  # smoothed_forward's share of each row's target spread over the batch


def neg_l1(phi, psi, scale=1.0):
    """An energy to try: `-||phi_i - psi_j||_1`, the negative L1 (Manhattan) distance between
    `phi [B, d]` and `psi [B, d]`, as logits `[B, B]`; like `norm`, a distance, but one that
    grows with every coordinate's gap alike. `scale` (the cosine energy's) is ignored."""
    return -jnp.sum(jnp.abs(phi[:, None, :] - psi[None, :, :]), axis=-1)


def smoothed_forward(logits):
    """A loss to try: forward InfoNCE with label smoothing: row i's target is `1 - eps` on goal
    i plus `eps / B` on every goal of the batch (eps = `LABEL_SMOOTHING`), so a critic is no
    longer pushed to separate the positive from the negatives without bound."""
    b = logits.shape[0]
    target = (1.0 - LABEL_SMOOTHING) * jnp.eye(b) + LABEL_SMOOTHING / b
    return -jnp.mean(jnp.sum(target * jax.nn.log_softmax(logits, axis=1), axis=1))


# None: the built-in one of that name (`CRLConfig.energy` / `.contrastive_loss`); a function:
# passed to `crl.make` as `energy` / `loss`.
ENERGY_IDEAS = {"norm": None, "l2sq": None, "dot": None, "cosine": None, "l1": neg_l1}
LOSS_IDEAS = {
    "forward": None,
    "backward": None,
    "symmetric": None,
    "binary": None,
    "smooth-forward": smoothed_forward,
}


@dataclasses.dataclass(frozen=True)
class Config(crl.CRLConfig):
    """CRL's `CRLConfig`; its energy, contrastive loss and total_timesteps come from
    --energy-idea, --loss-idea and --updates."""

    energy: tyro.conf.Suppress[str] = "norm"  # --energy-idea (a list)
    contrastive_loss: tyro.conf.Suppress[str] = "forward"  # --loss-idea (a list)
    total_timesteps: tyro.conf.Suppress[int] = 64_000  # --updates


@dataclasses.dataclass
class Args:
    config: Annotated[Config, tyro.conf.OmitArgPrefixes]
    hparams: Annotated[crl.CRLHparams, tyro.conf.OmitArgPrefixes]
    env: str
    """goal environment (envs/goal): goal/point_reach, goal/point_u_maze, goal/ant, ..."""
    updates: int
    """updates per variant, num_envs env steps each (the tuned entry's number by default)"""
    energy_idea: list[str] = dataclasses.field(default_factory=lambda: ["norm", "l1"])
    """energies to compare: norm, l2sq, dot, cosine, or l1 (neg_l1 in this file)"""
    loss_idea: list[str] = dataclasses.field(default_factory=lambda: ["forward"])
    """contrastive losses to compare: forward, backward, symmetric, binary, or smooth-forward
    (smoothed_forward in this file)"""
    num_seeds: int = 3
    """independent runs per variant, vmapped"""
    seed: int = 0
    """seed of the runs (every variant starts from the same keys)"""
    evaluations: int = 10
    """evaluations during training (the points of the curve)"""
    eval_episodes: int = 64
    """greedy evaluation episodes per seed and evaluation"""
    out: str = "runs/crl"
    """directory for success.png and results.json"""


def main(argv: list[str]) -> dict:
    env_name = env_from_argv(argv, default_env("crl"))
    defaults = tuned("crl", env_name)
    config = Config(**defaults["config"])
    default = Args(
        config=config,
        hparams=crl.CRLHparams(**defaults["hparams"]),
        env=env_name,
        updates=config.num_updates,
    )
    args = tyro.cli(Args, args=argv, default=default)
    for name in ("updates", "num_seeds", "evaluations", "eval_episodes"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for flag, given, ideas in (
        ("--energy-idea", args.energy_idea, ENERGY_IDEAS),
        ("--loss-idea", args.loss_idea, LOSS_IDEAS),
    ):
        unknown = [idea for idea in given if idea not in ideas]
        if unknown or not given:
            what = f"{unknown[0]!r} is not one of" if unknown else "is empty; give one or more of"
            raise ValueError(f"{flag} {what}: " + ", ".join(ideas))
    variants = list(
        itertools.product(dict.fromkeys(args.energy_idea), dict.fromkeys(args.loss_idea))
    )
    out = pathlib.Path(args.out)
    paths = {name: out / name for name in ("success.png", "results.json")}
    for path in paths.values():  # refused before anything is compiled
        files.check_new_file(path, "--out", hint=" (the script never replaces its results)")

    env, env_params = envs.make(args.env)
    agents = {f"{e}/{loss}": make_agent(args, e, loss, env, env_params) for e, loss in variants}
    for agent in agents.values():
        agent.check_hparams(args.hparams)  # before anything is compiled

    # The variants differ in how the critic learns, not in how the policy acts: one agent's
    # evaluation (one compilation) serves every variant's states.
    evaluator = next(iter(agents.values()))
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4, 5, 6))

    def success(states):  # per seed: the share of episodes with a success step, time near goal
        key = jax.random.key(EVAL_KEY)
        result = evaluate(evaluator, states, key, args.eval_episodes, True, None, ("success",))
        summary = goal_summary(np.asarray(result.sums["success"]))
        return summary["eval_success_any_per_seed"], summary["eval_time_near_goal_per_seed"]

    results = {}
    for (energy, loss), (name, agent) in zip(variants, agents.items(), strict=True):
        results[name] = {"energy": energy, "loss": loss, **train(args, agent, success)}
        r = results[name]
        print(
            f"{name} on {args.env}: {args.num_seeds} seeds x {r['env_steps']:,} env steps "
            f"in {r['train_seconds']:.1f} s ({r['env_steps_per_second']:,} env steps/s)"
        )
    print(success_table(results, args.eval_episodes, env.max_episode_steps))

    out.mkdir(parents=True, exist_ok=True)
    curves = [
        (name, np.asarray(r["curve_env_steps"]), np.asarray(r["curve_success_any"]).T)
        for name, r in results.items()
    ]
    plot_curves(
        curves,
        paths["success.png"],
        metric="success_any",
        title=f"{args.env}: success_any of {args.eval_episodes} greedy episodes",
        legend_title="energy/loss",
    )
    report = {
        "env": args.env,
        "num_seeds": args.num_seeds,
        "updates": args.updates,
        "eval_episodes": args.eval_episodes,
        "variants": results,
    }
    paths["results.json"].write_text(json.dumps(report, indent=2) + "\n")
    print("wrote " + ", ".join(map(str, paths.values())))
    return report


def make_agent(args: Args, energy: str, loss: str, env, env_params):
    """The CRL agent of one variant: the flags' config with its energy, loss and budget."""
    fields = {f.name: getattr(args.config, f.name) for f in dataclasses.fields(crl.CRLConfig)}
    energy_fn, loss_fn = ENERGY_IDEAS[energy], LOSS_IDEAS[loss]
    fields.update(
        energy="norm" if energy_fn is not None else energy,
        contrastive_loss="forward" if loss_fn is not None else loss,
        total_timesteps=args.updates * args.config.num_envs,
    )
    config = crl.CRLConfig(**fields)
    return crl.make(config, env, env_params, energy=energy_fn, loss=loss_fn)


def train(args: Args, agent, success) -> dict:
    """Train `args.num_seeds` runs of `agent` in chunks, evaluating them with `success` (states
    -> per-seed success_any and time near goal) before the first and after each."""
    keys = jax.random.split(jax.random.key(args.seed), args.num_seeds)
    states = jax.jit(driver.init_batch, static_argnums=0)(agent, keys, args.hparams)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3), donate_argnums=1)
    chunk = runner.chunk_length(args.updates, args.evaluations)
    compiled = {}
    curve = [success(states)]
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
        curve.append(success(states))
    steps = agent.env_steps_per_update
    return {
        "env_steps": args.updates * steps,
        "train_seconds": round(train_seconds, 3),  # without compilation or evaluation
        "env_steps_per_second": round(
            args.updates * steps * args.num_seeds / max(train_seconds, 1e-9)
        ),
        "curve_env_steps": [u * steps for u in updates],
        "curve_success_any": [any_ for any_, _ in curve],  # [points, seeds]
        "curve_time_near_goal": [near for _, near in curve],  # [points, seeds]
        "success_any": curve[-1][0],  # [seeds]
        "time_near_goal": curve[-1][1],  # [seeds]
    }


def success_table(results: dict, episodes: int, horizon: int) -> str:
    """Markdown: a row per variant; success_any and the time near the goal at the end, each the
    mean over seeds [95% bootstrap interval across seeds]."""
    lines = [
        f"after training, {episodes} greedy episodes per seed: mean over seeds "
        "[95% bootstrap interval across seeds]",
        f"| variant | success_any | time near goal (of {horizon} steps) |",
        "|---|---:|---:|",
    ]
    for name, r in results.items():
        values = np.stack([r["success_any"], r["time_near_goal"]], axis=1)  # [seeds, 2]
        low, high = bootstrap_ci(values)
        any_, near = (
            f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"
            for m, lo, hi, d in zip(values.mean(axis=0), low, high, (3, 1), strict=True)
        )
        lines.append(f"| {name} | {any_} | {near} |")
    return "\n".join(lines)


if __name__ == "__main__":
    platform.use_cpu_cores()  # seeds split over the CPU cores (before anything runs)
    run_script(main, sys.argv[1:])  # bad input: one line, exit status 2
