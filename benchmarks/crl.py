"""Contrastive RL side by side: our CRL (`rlsuite.agents.crl`) on our point U-maze beside
jaxgcrl 0.2.8's CRL on its `simple_u_maze`, the same settings on both sides, in one run.

The settings (flags, defaults): 32 envs, episodes of 101 steps, batch 32, jaxgcrl's unroll of 50
steps per env per training step, its replay sizes 200 (min) / 2,000 (max) steps per env,
1,006,400 env steps per seed, 3 seeds. The physics differ: jaxgcrl's `simple_u_maze` is a brax
ball (spring backend, 10 substeps of 5 ms, its state [position, velocity], pushed by forces), ours
(`goal/point_u_maze`, envs/goal/point_maze.py) moves a point by bounded displacements (0.5 x the
action per step) and slides it along the walls, its state the position alone; both have
JaxGCRL's u_maze layout (cells of 4), its start cell, goals drawn uniformly over its goal cells,
success within 0.5 of the goal. Success rates compare two different tasks of one layout, not one
task.

jaxgcrl runs in its own virtual environment (`--jaxgcrl-python`, by default
`benchmarks/_anchors/jaxgcrl/venv/bin/python`; benchmarks/README.md says how to install it), as a
subprocess per seed, in sequence, through its command line (`run.cli`, what the `jaxgcrl`
console script calls), from a temporary working directory (its `./runs/` and checkpoints go
there). What the benchmark adds around it (`RUNNER`, run with `python -c`): a wrapper of its
`MetricsRecorder.progress` that prints each epoch's metrics and time as a JSON line, and that
passes `do_render=False` (its render plays 5,000 steps one jitted call at a time and writes HTML:
not training); a listener that sums JAX's XLA compilation events. wandb is off
(`--no-log-wandb`, `WANDB_MODE=disabled`). Its command line (run options before `crl`):

    --env simple_u_maze --num-envs 32 --episode-length 101 --total-env-steps 1006400
    --num-evals 25 --num-eval-envs 256 --seed S --no-log-wandb --checkpoint-logdir DIR
    crl --batch-size 32 --unroll-length 50 --min-replay-size 200 --max-replay-size 2000
    (and its defaults, passed explicitly: lrs 3e-4, discounting 0.99, logsumexp penalty 0.1,
    h-dim 256, n-hidden 2, repr-dim 64, fwd_infonce, norm)

Its `total_env_steps` must be prefill + num_evals * k * num_envs * unroll (k training steps per
epoch; otherwise its final assert fails): 6,400 + 25 * 25 * 32 * 50 = 1,006,400; `check` refuses
flags that break this before anything runs.

Mapping, jaxgcrl -> ours (`our_config`):
- num_envs 32 -> num_envs 32; episode_length 101 -> `envs.make("goal/point_u_maze",
  max_episode_steps=101)` (a `TimeLimit`; its `EpisodeWrapper` also ends episodes at 101 steps).
- One jaxgcrl training step: every env steps `unroll_length` (50) times, then it samples one
  window of `episode_length` (101) consecutive steps from each of the 32 envs, gives every step
  but the last of each window a future goal, shuffles the 32 x 100 transitions and takes
  100 gradient steps of batch 32 (`num_envs * (episode_length - 1) / batch_size`). Ours: one
  update steps every env once, then takes `gradient_steps` gradient steps of batch 32 sampled
  uniformly from the whole buffer: 100 / 50 = 2 per collection, the same replay ratio (1 / 16)
  and the same number of gradient steps (62,500 per seed), interleaved rather than in blocks.
- max_replay_size 2,000 steps per env -> buffer_size 64,000 transitions (2,000 per env).
- min_replay_size 200 steps per env -> learning_starts 6,400: jaxgcrl's prefill plays its
  initial (untrained, sampled) policy for 200 steps per env before its first training step;
  ours acts uniformly at random for the first 6,400 env steps (200 per env) and learns from the
  next.
- Future goals: both draw `k >= 1` steps ahead with P(k) ~ 0.99^k, in the same episode; jaxgcrl
  within its 101-step window (never the window's last step as an anchor), ours within the stored
  episode.
- Networks: phi(s, a) and psi(g) of 2 hidden layers of 256 swish units, representation 64, no
  LayerNorm (its `skip_connections` 4 adds nothing at depth 2); actor 2 x 256 swish, tanh
  Gaussian, log std squashed into [-5, 2] on both sides. Initialisation differs (jaxgcrl:
  variance scaling 1/3 fan-in uniform; ours: orthogonal).
- Losses: energy `norm` (-||phi - psi||), forward InfoNCE, logsumexp penalty 0.1, Adam 3e-4 for
  actor, critic and temperature, initial temperature 1, target entropy -0.5 |A|. jaxgcrl updates
  the actor and temperature, then the critic; ours the critic, then the actor and temperature.
- The states and observations differ with the physics: jaxgcrl's observation is [x, y, vx, vy,
  goal x, goal y] (its achieved goal the first two), ours [x, y, goal x, goal y].

Timing. Ours: N seeds vmapped (`driver.init_batch`, then `driver.run_batch` of all updates, jitted);
the first call of init plus the ahead-of-time compilation of the run are its compilation, the
compiled run its compile-free wall time (every env step and gradient step, the warm-up included).
jaxgcrl: its wall time, from just before its `cli()` (after Python's imports) to its last epoch's
metrics, less its evaluations' time (its own `eval/walltime`, compilation included); its
compile-free time is the mean of its epochs after the first (its own `training/walltime`; the
first compiles the training epoch) times the number of epochs, which leaves out its prefill
(6,400 of 1,006,400 steps). Env steps per second: ours, every env step of the N runs over the
compiled run; jaxgcrl, the env steps of its epochs after the first over their time, its N runs
together.

Success: `success_any` is the share of evaluation episodes with at least one step within 0.5 of
the goal, each policy acting greedily (tanh of its Gaussian's mean) for 101 steps. jaxgcrl's is
its own final evaluation (`eval/episode_success_any` of its last epoch: `--eval-episodes`
episodes of its evaluator on its own environment); ours `driver.evaluate_batch` with
`sum_info=("success",)`, `--eval-episodes` episodes per seed on ours. Goals of the comparison:
ours >= jaxgcrl's - 0.1, and our env steps per second >= jaxgcrl's.

    python benchmarks/crl.py                    # 3 seeds each side: 34 min on 2 loaded cores
    python benchmarks/crl.py --sides ours --seeds 1 --total-env-steps 54400 --num-evals 2
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import jax
import numpy as np
import side_by_side
import tyro
from report import check_args, fmt, progress

from rlsuite import envs
from rlsuite.agents import crl
from rlsuite.loop import driver
from rlsuite.loop.agent import config_dict

ROOT = Path(__file__).resolve().parent.parent
ENV = "goal/point_u_maze"
JAXGCRL_ENV = "simple_u_maze"
JAXGCRL_VERSION = "0.2.8"
SIDES = ("ours", "jaxgcrl")
# jaxgcrl's defaults that ours matches (passed explicitly, so that a changed default shows).
JAXGCRL_AGENT = {
    "policy-lr": 3e-4,
    "critic-lr": 3e-4,
    "alpha-lr": 3e-4,
    "discounting": 0.99,
    "logsumexp-penalty-coeff": 0.1,
    "h-dim": 256,
    "n-hidden": 2,
    "repr-dim": 64,
    "contrastive-loss-fn": "fwd_infonce",
    "energy-fn": "norm",
}


@dataclasses.dataclass
class Args:
    """Flags of the CRL benchmark."""

    cpu_devices: int | None = None
    """CPU cores made JAX devices before anything runs (`platform.use_cpu_cores`; None: every
    core). Our seeds are spread over the most devices whose count divides them (3 seeds on 2
    cores: one device, vmapped); jaxgcrl's process uses its own JAX's default (one device)."""
    seed: int = 0
    """Base seed: ours trains from `side_by_side.keys_for(seed, seeds)`, jaxgcrl's run i with
    `--seed seed + i`."""
    seeds: int = 3
    """Seeds per side (ours vmapped, jaxgcrl's runs in sequence)."""
    sides: list[str] = dataclasses.field(default_factory=lambda: list(SIDES))
    """Sides to run, in this order (ours, jaxgcrl)."""
    num_envs: int = 32
    episode_length: int = 101
    batch_size: int = 32
    unroll_length: int = 50
    """jaxgcrl's env steps per env per training step (ours: its gradient steps per training
    step over this, per collection)."""
    min_replay_size: int = 200
    """jaxgcrl's prefill, steps per env (ours: learning_starts = this x num_envs)."""
    max_replay_size: int = 2000
    """replay capacity per env (ours: buffer_size = this x num_envs)"""
    total_env_steps: int = 1_006_400
    """env steps per seed (all envs together): prefill + num_evals x k x num_envs x unroll"""
    num_evals: int = 25
    """jaxgcrl's epochs, each followed by its evaluation (>= 2: the epochs after the first
    give its compile-free time)"""
    eval_episodes: int = 256
    """greedy evaluation episodes per seed (jaxgcrl's --num-eval-envs; ours the same number)"""
    call_timeout: int = 3600
    """Hard limit in seconds on our training call and on each jaxgcrl run."""
    jaxgcrl_python: Path = ROOT / "benchmarks/_anchors/jaxgcrl/venv/bin/python"
    """The Python of the virtual environment with jaxgcrl 0.2.8 (benchmarks/README.md)."""
    out: Path = Path("benchmarks/results/crl.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for its page, docs/benchmarks/)."""


# -------------------------------------------------------------------------------------- geometry
def geometry(args: Args) -> dict:
    """jaxgcrl's schedule for these flags, and ours from it; a `ValueError` naming the flags
    where jaxgcrl would refuse them, fail its final assert, or ours could not match it."""
    n, length, batch, unroll = (
        args.num_envs,
        args.episode_length,
        args.batch_size,
        args.unroll_length,
    )
    if length < 2:
        raise ValueError(f"--episode-length must be >= 2, got {length}")
    if n * (length - 1) % batch:
        raise ValueError(
            f"--num-envs x (--episode-length - 1) = {n * (length - 1)} must be a multiple of "
            f"--batch-size {batch} (jaxgcrl's check_config)"
        )
    per_training_step = n * (length - 1) // batch
    if per_training_step % unroll:
        raise ValueError(
            f"jaxgcrl takes {per_training_step} gradient steps per training step of "
            f"--unroll-length {unroll} env steps per env: ours needs a whole number per env step"
        )
    if args.min_replay_size % unroll:
        raise ValueError(
            f"--min-replay-size {args.min_replay_size} must be a multiple of --unroll-length "
            f"{unroll} (jaxgcrl prefills whole unrolls)"
        )
    if args.max_replay_size < max(length, args.min_replay_size):
        raise ValueError(
            f"--max-replay-size {args.max_replay_size} must hold an episode ({length}) and the "
            f"prefill ({args.min_replay_size})"
        )
    if args.num_evals < 2:
        raise ValueError(f"--num-evals must be >= 2, got {args.num_evals}")
    prefill = args.min_replay_size * n
    per_epoch_unit = args.num_evals * n * unroll
    left = args.total_env_steps - prefill
    if left <= 0 or left % per_epoch_unit:
        raise ValueError(
            f"--total-env-steps {args.total_env_steps:,} must be prefill ({prefill:,}) + "
            f"--num-evals x k x --num-envs x --unroll-length ({per_epoch_unit:,} k, k >= 1), "
            "or jaxgcrl's final assert fails"
        )
    steps_per_epoch = left // args.num_evals
    training_steps = left // (n * unroll)
    return {
        "prefill_env_steps": prefill,
        "training_steps_per_epoch": left // per_epoch_unit,
        "env_steps_per_epoch": steps_per_epoch,
        "gradient_steps_per_training_step": per_training_step,
        "jaxgcrl_gradient_steps": training_steps * per_training_step,
        "ours_gradient_steps_per_collection": per_training_step // unroll,
        "ours_updates": args.total_env_steps // n,
        "ours_gradient_steps": (args.total_env_steps - prefill)
        // n
        * (per_training_step // unroll),
    }


def our_config(args: Args, geo: dict) -> crl.CRLConfig:
    """Ours at jaxgcrl's settings (module docstring): refuses what CRL refuses."""
    return crl.CRLConfig(
        num_envs=args.num_envs,
        batch_size=args.batch_size,
        buffer_size=args.max_replay_size * args.num_envs,
        learning_starts=geo["prefill_env_steps"],
        gradient_steps=geo["ours_gradient_steps_per_collection"],
        total_timesteps=args.total_env_steps,
        width=JAXGCRL_AGENT["h-dim"],
        depth=JAXGCRL_AGENT["n-hidden"],
        repr_dim=JAXGCRL_AGENT["repr-dim"],
        energy="norm",
        contrastive_loss="forward",
        gamma=JAXGCRL_AGENT["discounting"],
        hidden_sizes=(JAXGCRL_AGENT["h-dim"],) * JAXGCRL_AGENT["n-hidden"],
        activation="silu",
    )


def our_hparams() -> crl.CRLHparams:
    return crl.CRLHparams(
        actor_lr=JAXGCRL_AGENT["policy-lr"],
        critic_lr=JAXGCRL_AGENT["critic-lr"],
        alpha_lr=JAXGCRL_AGENT["alpha-lr"],
        alpha=1.0,
        target_entropy_scale=0.5,
        logsumexp_coeff=JAXGCRL_AGENT["logsumexp-penalty-coeff"],
    )


def check(args: Args) -> tuple[dict, crl.CRLConfig]:
    """Every flag checked before anything runs: `(geometry, our config)`."""
    check_args(args, choices={"sides": SIDES})
    if len(set(args.sides)) != len(args.sides):
        raise ValueError(f"--sides lists a side twice: {args.sides}")
    if args.total_env_steps % args.num_envs:
        raise ValueError(
            f"--total-env-steps {args.total_env_steps:,} must be a multiple of --num-envs "
            f"{args.num_envs}"
        )
    geo = geometry(args)
    config = our_config(args, geo)
    if "jaxgcrl" in args.sides and not args.jaxgcrl_python.exists():
        raise FileNotFoundError(
            f"no {args.jaxgcrl_python}: benchmarks/README.md says how to install jaxgcrl "
            f"{JAXGCRL_VERSION} in its own virtual environment"
        )
    return geo, config


# ------------------------------------------------------------------------------------------ ours
def ours_side(args: Args, config: crl.CRLConfig, geo: dict) -> dict:
    """Our N seeds vmapped, timed as the module docstring says, then evaluated."""
    env, env_params = envs.make(ENV, max_episode_steps=args.episode_length)
    agent = crl.make(config, env, env_params)
    hp = our_hparams()
    keys, key_eval = side_by_side.keys_for(args.seed, args.seeds)
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    updates = config.num_updates

    def train():
        start = time.perf_counter()
        states = jax.block_until_ready(init(agent, keys, hp))
        compiled = run.lower(agent, states, hp, updates).compile()
        trained = time.perf_counter()
        states, metrics = jax.block_until_ready(compiled(states, hp))
        return states, metrics, (start, trained, time.perf_counter())

    states, metrics, (start, trained, end) = side_by_side.call_with_timeout(
        train, args.call_timeout
    )()
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4, 5, 6))
    result = evaluate(agent, states, key_eval, args.eval_episodes, True, None, ("success",))
    near = np.asarray(result.sums["success"], np.float64)  # [N, E]: steps within 0.5
    steps = args.seeds * updates * agent.env_steps_per_update
    side = {
        "config": config_dict(config),
        "hparams": side_by_side.hparams_dict(hp),
        "num_updates": updates,
        "env_steps_per_seed": updates * agent.env_steps_per_update,
        "compile_s": trained - start,
        "wall_excl_compile_s": end - trained,
        "wall_incl_compile_s": end - start,
        "env_steps_per_s": steps / (end - trained),
        "success_any_per_seed": (near > 0).mean(axis=1).tolist(),
        "steps_near_goal_per_seed": near.mean(axis=1).tolist(),
    }
    for name in ("critic_loss", "categorical_accuracy"):
        if name in metrics:
            values = np.asarray(metrics[name], np.float64)[:, -max(1, updates // 100) :]
            side[f"train_{name}_last1pct"] = float(np.nanmean(values))
    return side


# --------------------------------------------------------------------------------------- jaxgcrl
RUNNER = r"""
import json, sys, time
import numpy as np
import jax

COMPILES = []


def _on_event(event, seconds, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES.append(seconds)


jax.monitoring.register_event_duration_secs_listener(_on_event)
import run
from jaxgcrl.utils import env as env_utils

START = time.perf_counter()
_progress = env_utils.MetricsRecorder.progress


def emit(kind, **fields):
    line = {"kind": kind, "t": time.perf_counter() - START, "compile_s": sum(COMPILES), **fields}
    print("RLSUITE " + json.dumps(line), flush=True)


def progress(self, num_steps, metrics, make_policy, params, env, do_render=True):
    scalars = {}
    for name, value in metrics.items():
        array = np.asarray(value)
        if array.size == 1 and array.dtype.kind in "biuf":
            scalars[name] = float(array)
    emit("progress", step=int(num_steps), metrics=scalars)
    return _progress(self, num_steps, metrics, make_policy, params, env, do_render=False)


env_utils.MetricsRecorder.progress = progress
emit("start")
run.cli()
emit("end")
"""


def jaxgcrl_command(args: Args, seed: int, checkpoints: Path) -> list[str]:
    """`python -c RUNNER` with jaxgcrl's command line: run options, then `crl` and its own."""
    run_options = {
        "env": JAXGCRL_ENV,
        "num-envs": args.num_envs,
        "episode-length": args.episode_length,
        "total-env-steps": args.total_env_steps,
        "num-evals": args.num_evals,
        "num-eval-envs": args.eval_episodes,
        "seed": seed,
        "exp-name": f"rlsuite_s{seed}",
        "checkpoint-logdir": str(checkpoints),
    }
    agent = {
        "batch-size": args.batch_size,
        "unroll-length": args.unroll_length,
        "min-replay-size": args.min_replay_size,
        "max-replay-size": args.max_replay_size,
        **JAXGCRL_AGENT,
    }
    command = [str(args.jaxgcrl_python), "-c", RUNNER]
    for name, value in run_options.items():
        command += [f"--{name}", str(value)]
    command += ["--no-log-wandb", "crl"]
    for name, value in agent.items():
        command += [f"--{name}", str(value)]
    return command


def jaxgcrl_run(args: Args, seed: int, geo: dict) -> dict:
    """One jaxgcrl run in its venv: its epochs' metrics and times (module docstring)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env.update(WANDB_MODE="disabled", WANDB_SILENT="true", JAX_PLATFORMS="cpu")
    with tempfile.TemporaryDirectory(prefix="rlsuite_jaxgcrl_") as work:
        checkpoints = Path(work) / "ckpt"
        checkpoints.mkdir()
        command = jaxgcrl_command(args, seed, checkpoints)
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command,
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.call_timeout,
            )
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(
                f"jaxgcrl seed {seed} ran past --call-timeout {args.call_timeout}s"
            ) from error
        process_s = time.perf_counter() - start
    lines = [
        json.loads(line[8:]) for line in done.stdout.splitlines() if line.startswith("RLSUITE ")
    ]
    epochs = [line for line in lines if line["kind"] == "progress"]
    if done.returncode or len(epochs) != args.num_evals:
        tail = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(
            f"jaxgcrl seed {seed} exited {done.returncode} after {len(epochs)} of "
            f"{args.num_evals} epochs:\n{' '.join(command[:2])} <RUNNER> "
            f"{' '.join(command[3:])}\n{tail}"
        )
    last = epochs[-1]["metrics"]
    walltimes = [e["metrics"]["training/walltime"] for e in epochs]
    epoch_s = np.diff([0.0, *walltimes])
    steady_s = float(epoch_s[1:].sum())
    wall = epochs[-1]["t"] - last["eval/walltime"]
    return {
        "seed": seed,
        "process_s": process_s,
        "wall_incl_compile_s": wall,
        "wall_excl_compile_s": float(epoch_s[1:].mean()) * args.num_evals,
        "steady_env_steps": geo["env_steps_per_epoch"] * (args.num_evals - 1),
        "steady_s": steady_s,
        "epoch_s": epoch_s.tolist(),
        "eval_s": last["eval/walltime"],
        "xla_compile_s": epochs[-1]["compile_s"],
        "env_steps": epochs[-1]["step"],
        "success_any": last["eval/episode_success_any"],
        "steps_near_goal": last.get("eval/episode_success"),
        "success_any_curve": [e["metrics"].get("eval/episode_success_any") for e in epochs],
        "final_metrics": last,
    }


def jaxgcrl_side(args: Args, geo: dict) -> dict:
    """jaxgcrl's N runs in sequence, summed."""
    runs = []
    for i in range(args.seeds):
        runs.append(jaxgcrl_run(args, args.seed + i, geo))
        r = runs[-1]
        progress(
            f"jaxgcrl seed {r['seed']}: {r['process_s']:.1f}s in all, success_any "
            f"{r['success_any']:.3f}, {r['steady_env_steps'] / r['steady_s']:,.0f} env steps/s"
        )
    wall = sum(r["wall_incl_compile_s"] for r in runs)
    steady = sum(r["wall_excl_compile_s"] for r in runs)
    return {
        "command": jaxgcrl_command(args, args.seed, Path("CKPT"))[3:],
        "agent_defaults_passed": JAXGCRL_AGENT,
        "runs": runs,
        "compile_s": max(wall - steady, 0.0),
        "wall_excl_compile_s": steady,
        "wall_incl_compile_s": wall,
        "env_steps_per_s": sum(r["steady_env_steps"] for r in runs)
        / sum(r["steady_s"] for r in runs),
        "success_any_per_seed": [r["success_any"] for r in runs],
        "steps_near_goal_per_seed": [r["steps_near_goal"] for r in runs],
    }


def jaxgcrl_versions(python: Path) -> dict:
    """Package versions inside jaxgcrl's venv."""
    code = (
        "import importlib.metadata as m, json\n"
        "names = ('jaxgcrl', 'jax', 'jaxlib', 'brax', 'flax', 'optax', 'numpy', 'mujoco')\n"
        "out = {}\n"
        "for n in names:\n"
        "    try:\n"
        "        out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError:\n"
        "        out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    if not python.exists():
        return {}
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-500:]}


# ---------------------------------------------------------------------------------------- report
def table(sides: dict) -> tuple[list[str], list[list[str]]]:
    header = ["variant", "wall incl. compile (s)", "wall excl. compile (s)", "compile (s)"]
    header += ["env steps/s (all seeds)", "success_any", "per seed", "steps near goal (of 101)"]
    names = {"ours": f"ours ({ENV})", "jaxgcrl": f"jaxgcrl {JAXGCRL_VERSION} ({JAXGCRL_ENV})"}
    body = []
    for name, side in sides.items():
        near = [x for x in side["steps_near_goal_per_seed"] if x is not None]
        body.append(
            [
                names[name],
                fmt(side["wall_incl_compile_s"]),
                fmt(side["wall_excl_compile_s"]),
                fmt(side["compile_s"]),
                fmt(side["env_steps_per_s"], ",.0f"),
                fmt(side["success_any"], ".3f"),
                " ".join(f"{x:.3f}" for x in side["success_any_per_seed"]),
                fmt(float(np.mean(near)) if near else None, ".1f"),
            ]
        )
    if len(sides) == 2:
        ours, theirs = sides["ours"], sides["jaxgcrl"]
        body.append(
            [
                "ours / jaxgcrl (success_any: ours - jaxgcrl)",
                fmt(ours["wall_incl_compile_s"] / theirs["wall_incl_compile_s"], ".2f"),
                fmt(ours["wall_excl_compile_s"] / theirs["wall_excl_compile_s"], ".2f"),
                "",
                fmt(ours["env_steps_per_s"] / theirs["env_steps_per_s"], ".2f"),
                fmt(ours["success_any"] - theirs["success_any"], "+.3f"),
                "",
                "",
            ]
        )
    return header, body


def main(args: Args) -> dict:
    geo, config = check(args)
    console, machine = side_by_side.set_up(args)
    anchors = {
        "jaxgcrl_python": str(args.jaxgcrl_python),
        "jaxgcrl_versions": jaxgcrl_versions(args.jaxgcrl_python),
    }
    start = time.perf_counter()
    sides: dict = {}

    def save() -> dict:
        parts = {"geometry": geo, "sides": sides}
        if len(sides) == 2:
            ours, theirs = sides["ours"], sides["jaxgcrl"]
            parts["goals"] = {
                "success_any_at_least_theirs_minus_0.1": ours["success_any"]
                >= theirs["success_any"] - 0.1,
                "env_steps_per_s_at_least_theirs": ours["env_steps_per_s"]
                >= theirs["env_steps_per_s"],
            }
        return side_by_side.write_result(args, machine, anchors, start, parts)

    for name in args.sides:
        side = ours_side(args, config, geo) if name == "ours" else jaxgcrl_side(args, geo)
        side["success_any"] = float(np.mean(side["success_any_per_seed"]))
        side["load_average_after"] = list(os.getloadavg())
        sides[name] = side
        progress(
            f"{name}: {side['wall_incl_compile_s']:.1f}s incl. compile, success_any "
            f"{side['success_any']:.3f}, {side['env_steps_per_s']:,.0f} env steps/s"
        )
        save()
    result = save()
    side_by_side.show(console, args, result, tables(result))
    if "goals" in result:
        console.print(f"goals: {result['goals']}")
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of the sides that ran, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the CRL pages)."""
    args = result["args"]
    title = (
        f"CRL on JaxGCRL's u_maze layout (ours: {ENV}, a sliding point; jaxgcrl: "
        f"{JAXGCRL_ENV}, a brax ball: the physics differ), {args['num_envs']} envs, episodes of "
        f"{args['episode_length']}, batch {args['batch_size']}, {args['total_env_steps']:,} env "
        f"steps per seed, {args['seeds']} seeds (ours vmapped, jaxgcrl in sequence); success_any "
        f"over {args['eval_episodes']} greedy episodes per seed, each side on its own environment"
    )
    return [(title, *table(result["sides"]))]


if __name__ == "__main__":
    main(tyro.cli(Args))
