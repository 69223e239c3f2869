"""RL^2 on cheetah-velocity (MJX): the meta-RL part of `benchmarks/device.sh` (part `rl2-cheetah`).

RL^2-PPO (`rlsuite.agents.rl2`: an LSTM policy trained by PPO on trials of `meta/cheetah_velocity`,
two episodes of `--max-steps` steps per target velocity v* ~ U[0, 3]) with `--seeds` seeds
vmapped in one program, trained for a fixed wall-clock budget (`--budget-seconds`, compilation
excluded and timed apart). Every `--eval-every-seconds` of training, and at the start and the end,
each seed's deterministic policy runs one trial on each of `--eval-trials` held-out targets (an
even grid over the range, the same for every seed and every evaluation), through
`rlsuite.loop.episodes.evaluate_trials`; the table gives, against env steps per seed, the
return of episode 1 and of episode 2 and the mean |v - v*| per step of each episode.

The check: at the end, episode 2's return minus episode 1's (`paired_difference`, a paired
bootstrap 95% interval across seeds) has its interval above 0: the policy does better once it has
seen a trial's first episode (it adapted to v*). The script exits 1 where it does not.

    python benchmarks/rl2_device.py                                   # GPU: 5 minutes
    python benchmarks/rl2_device.py --budget-seconds 30 --num-envs 4 --num-steps 10 \\
        --num-minibatches 2 --eval-trials 8 --max-steps 20            # CPU: runs end to end

Writes JSON to `--out` (default `$OUT/rl2_device.json`, or `benchmarks/results/` without `$OUT`).
The default sizes were chosen for one GPU and have not been measured there yet.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from report import check_args, fmt, machine_info, markdown, print_table, progress
from rich.console import Console
from side_by_side import timed_compile

from rlsuite import envs
from rlsuite.agents import rl2
from rlsuite.agents.ppo import PPOHparams
from rlsuite.environment.meta import RL2, trial_wrapper
from rlsuite.environment.wrappers import ClipAction, Wrapper
from rlsuite.loop import driver
from rlsuite.loop.agent import policy
from rlsuite.loop.episodes import adaptation_curve, evaluate_trials, paired_difference

EPISODES = 2  # episodes per trial
ERRORS = tuple(f"velocity_error_{k + 1}" for k in range(EPISODES))  # summed per trial


@dataclasses.dataclass
class Args:
    """Flags of the RL^2 cheetah-velocity device benchmark."""

    budget_seconds: float = 300.0
    """training wall time (compilation and evaluations excluded)"""
    seeds: int = 4
    """seeds vmapped in one program"""
    num_envs: int = 512
    """parallel trials per seed"""
    num_steps: int = 50
    """steps per rollout (truncated backpropagation through time of this length)"""
    num_minibatches: int = 8
    """minibatches per epoch (each a set of whole trial sequences)"""
    update_epochs: int = 4
    """passes over each rollout"""
    recurrent_size: int = 128
    """LSTM units"""
    hidden_sizes: tuple[int, ...] = (128,)
    """layers before the LSTM"""
    learning_rate: float = 3e-4
    """Adam step size (constant)"""
    gamma: float = 0.99
    """discount factor"""
    ent_coef: float = 0.001
    """entropy weight"""
    max_steps: int = 200
    """steps per episode (MAML's horizon)"""
    velocity_low: float = 0.0
    """lowest target velocity"""
    velocity_high: float = 3.0
    """highest target velocity"""
    updates_per_chunk: int = 5
    """updates per compiled training call (the budget is checked between calls)"""
    eval_every_seconds: float = 30.0
    """training seconds between evaluations"""
    eval_trials: int = 64
    """held-out targets, one trial each per seed"""
    seed: int = 0
    """random seed"""
    out: Path | None = None
    """JSON path (default: $OUT/rl2_device.json, or benchmarks/results/rl2_device.json)"""


class EpisodeErrors(Wrapper):
    """Adds `velocity_error_<k>` = |v - v*| on the steps of a trial's episode k (1-based), 0 on
    the others, to the info of an `RL2`-wrapped cheetah-velocity (so that `evaluate_trials`
    sums the error per episode)."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self.env.step_env(
            key, state, action, params
        )
        errors = {
            name: jnp.where(info["episode_index"] == k, info["velocity_error"], 0.0)
            for k, name in enumerate(ERRORS)
        }
        return obs, state, reward, terminated, truncated, {**info, **errors}


def build(args: Args):
    """The agent, its hyperparameters, and the held-out environment and targets."""
    env, params = envs.make(
        "meta/cheetah_velocity",
        max_steps=args.max_steps,
        episodes_per_trial=EPISODES,
        velocity_low=args.velocity_low,
        velocity_high=args.velocity_high,
    )
    config = rl2.RL2Config(
        num_envs=args.num_envs,
        num_steps=args.num_steps,
        num_minibatches=args.num_minibatches,
        update_epochs=args.update_epochs,
        recurrent_size=args.recurrent_size,
        hidden_sizes=tuple(args.hidden_sizes),
        normalize_observations=True,
        scale_rewards=True,
    )
    agent = rl2.make(config, env, params)
    hparams = PPOHparams(learning_rate=args.learning_rate, gamma=args.gamma, ent_coef=args.ent_coef)
    # Held-out trials: the task as given in params (no sampler), one target per trial, clipped
    # actions as PPO steps its own environment.
    held_out = ClipAction(EpisodeErrors(RL2(trial_wrapper(env).env, None, EPISODES)))
    span = args.velocity_high - args.velocity_low
    grid = args.velocity_low + span * (np.arange(args.eval_trials) + 0.5) / args.eval_trials
    targets = jnp.asarray(grid, jnp.float32)
    tasks = jax.vmap(lambda v: params.replace(target_velocity=v))(targets)
    return agent, hparams, held_out, tasks


def evaluator(agent, held_out, tasks, num_trials: int):
    """`evaluate(states, key) -> (episode_returns [S, T, 2], errors {name: [S, T]})`: every seed's
    deterministic policy, one trial per held-out target."""

    def one(state, key):
        result = evaluate_trials(
            held_out,
            tasks,
            policy(agent, state, True),
            key,
            num_trials,
            params_axis=0,
            sum_info=ERRORS,
        )
        return result.episode_returns, result.sums

    def evaluate(states, key):
        keys = jax.random.split(key, jax.tree.leaves(states)[0].shape[0])
        return jax.vmap(one)(states, keys)

    return jax.jit(evaluate)


def row(env_steps: int, seconds: float, episode_returns, errors, max_steps: int, train) -> dict:
    """One evaluation: means over seeds and targets, and each seed's."""
    returns = np.asarray(episode_returns, np.float64)  # [S, T, 2]
    per_step = {k: np.asarray(v, np.float64) / max_steps for k, v in errors.items()}
    return {
        "env_steps_per_seed": env_steps,
        "train_seconds": seconds,
        "episode_return_mean": returns.mean(axis=(0, 1)).tolist(),
        "episode_return_per_seed": returns.mean(axis=1).tolist(),
        "velocity_error_mean": [float(per_step[k].mean()) for k in ERRORS],
        "velocity_error_per_seed": [per_step[k].mean(axis=1).tolist() for k in ERRORS],
        "train_trial_return": train,
    }


def train(args: Args, save) -> dict:
    """Train for the budget, evaluating on the way; `save(partial_result)` after every
    evaluation (so that a run stopped by a time limit leaves its curve)."""
    agent, hparams, held_out, tasks = build(args)
    key_init, key_eval = jax.random.split(jax.random.key(args.seed))
    states = driver.init_batch(agent, jax.random.split(key_init, args.seeds), hparams)
    chunk = jax.jit(driver.run_batch, static_argnums=(0, 3), donate_argnums=(1,))
    chunk, train_compile = timed_compile(chunk, agent, states, hparams, args.updates_per_chunk)
    evaluate, eval_compile = timed_compile(
        evaluator(agent, held_out, tasks, args.eval_trials), states, key_eval
    )
    progress(f"compiled: training chunk {train_compile:.1f} s, evaluation {eval_compile:.1f} s")
    steps_per_chunk = args.updates_per_chunk * args.num_envs * args.num_steps

    def evaluation(env_steps, seconds, train_return):
        start = time.perf_counter()
        returns, errors = jax.device_get(evaluate(states, key_eval))
        result = row(env_steps, seconds, returns, errors, args.max_steps, train_return)
        result["eval_seconds"] = time.perf_counter() - start
        r, e = result["episode_return_mean"], result["velocity_error_mean"]
        progress(
            f"{env_steps:>12,} steps/seed  {seconds:6.1f} s  return ep1 {r[0]:9.1f} ep2 "
            f"{r[1]:9.1f}  |v - v*| ep1 {e[0]:.3f} ep2 {e[1]:.3f}"
        )
        return result, returns

    curve = []
    result, returns = evaluation(0, 0.0, None)
    curve.append(result)
    env_steps, seconds, last_eval = 0, 0.0, 0.0
    while seconds < args.budget_seconds:
        start = time.perf_counter()
        states, metrics = chunk(states, hparams)
        trial_return = jax.device_get(metrics["charts/episodic_return"])
        seconds += time.perf_counter() - start
        env_steps += steps_per_chunk
        if seconds - last_eval >= args.eval_every_seconds or seconds >= args.budget_seconds:
            finished = trial_return[np.isfinite(trial_return)]
            train_return = float(finished.mean()) if finished.size else None
            result, returns = evaluation(env_steps, seconds, train_return)
            curve.append(result)
            last_eval = seconds
            save({"partial": True, "curve": curve})

    mean, low, high = adaptation_curve(returns)
    difference = paired_difference(returns, later=1, earlier=0)
    return {
        "compile_seconds": {"train_chunk": train_compile, "evaluation": eval_compile},
        "train_seconds": seconds,
        "env_steps_per_seed": env_steps,
        "env_steps_per_second": env_steps * args.seeds / seconds,
        "targets": np.asarray(tasks.target_velocity).tolist(),
        "curve": curve,
        "adaptation": {
            "episode_return_mean": mean.tolist(),
            "episode_return_low": low.tolist(),
            "episode_return_high": high.tolist(),
        },
        "episode2_minus_episode1": {
            "mean": difference[0],
            "low": difference[1],
            "high": difference[2],
        },
        "passed": bool(difference[1] > 0),
    }


def tables(result: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """The curve against env steps and the final adaptation check (absent from a partial
    result), as (title, header, rows)."""
    header = ["env steps/seed", "train s", "ep 1 return", "ep 2 return"]
    header += ["ep 1 |v-v*|", "ep 2 |v-v*|", "train trial return"]
    curve = [
        [
            fmt(r["env_steps_per_seed"], ",d"),
            fmt(r["train_seconds"]),
            fmt(r["episode_return_mean"][0]),
            fmt(r["episode_return_mean"][1]),
            fmt(r["velocity_error_mean"][0], ".3f"),
            fmt(r["velocity_error_mean"][1], ".3f"),
            fmt(r["train_trial_return"]),
        ]
        for r in result["curve"]
    ]
    first = ("RL^2 cheetah-velocity: held-out evaluations", header, curve)
    if result.get("partial"):
        return [first]
    a, d = result["adaptation"], result["episode2_minus_episode1"]
    bounds = zip(a["episode_return_low"], a["episode_return_high"], strict=True)
    final = [
        [f"episode {k + 1}", fmt(m), f"[{fmt(lo)}, {fmt(hi)}]"]
        for k, (m, (lo, hi)) in enumerate(zip(a["episode_return_mean"], bounds, strict=True))
    ]
    final.append(["episode 2 - episode 1", fmt(d["mean"]), f"[{fmt(d['low'])}, {fmt(d['high'])}]"])
    final.append(["passed (interval above 0)", str(result["passed"]), ""])
    return [
        first,
        ("Adaptation at the end (95% bootstrap across seeds)", ["", "mean", "interval"], final),
    ]


def main(args: Args) -> int:
    check_args(args)
    for name in ("budget_seconds", "eval_every_seconds"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    out = args.out or Path(os.environ.get("OUT", "benchmarks/results")) / "rl2_device.json"
    console = Console()
    header = {"args": {k: str(v) for k, v in vars(args).items()}, "machine": machine_info()}
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(result):
        out.write_text(json.dumps({**header, **result}, indent=1))

    result = train(args, save)
    save(result)
    for title, header, body in tables(result):
        print_table(console, title, header, body)
        print(f"\n**{title}**\n\n{markdown(header, body)}\n")
    steps_per_second = result["env_steps_per_second"]
    print(f"env steps/s (training, {args.seeds} seeds): {steps_per_second:,.0f}; wrote {out}")
    print("PASS" if result["passed"] else "FAIL: episode 2 does not beat episode 1")
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args)))
