"""UED curricula side by side: our DR and Robust PLR (`rlsuite.agents.ued`) beside jaxued 0.0.1's
`examples/maze_dr.py` and `examples/maze_plr.py`, on the CPU's maze task, in one run.

The task is the tuned entry `("ued", "maze/small")` (`rlsuite.app.tuned`): a 7 x 7 maze of up to
10 walls, horizon 196 (reward 1 - 0.9 t / 196 on reaching the goal), an LSTM-64 student trained
by PPO on 32 levels x 64 steps per update, 5 epochs of 1 minibatch, lr 5e-4, gamma 0.995, lambda
0.98, clip 0.2, value weight 0.5, entropy 1e-3, grad norm 0.5, `--updates` (500) updates; PLR's
buffer: MaxMC scores, rank prioritisation at temperature 0.3, staleness 0.3, replay probability
0.8 once half of its 1,000 slots are filled. Ours: `ued.make(UEDConfig(curriculum=...,
**entry["config"]), *envs.make("maze/small"))` with `UEDHparams(**entry["hparams"])`, N seeds
vmapped (`driver.init_batch` + `driver.run_batch`, spread over the CPU cores as `rlsuite train`
does). jaxued: each example's `main(config)` as its `__main__` calls it, one run per seed, in
sequence (the script runs one seed), with a config dict built from ours (`jaxued_config`: the
numbers above; `exploratory_grad_updates=False` is its Robust PLR, `use_accel=True` its ACCEL).

jaxued is run from the git-ignored `benchmarks/_anchors/jaxued/` (benchmarks/README.md says how
to fetch it), unmodified; what the benchmark changes is in `load_example`, after the import:
- `jax.tree_map`, gone from current JAX, is put back as `jax.tree.map` (the installed package
  calls it);
- `wandb` is a stub module (`WandbStub`): `init` keeps the config (a dict with `as_dict`), `log`
  keeps each call's scalars and the time of the call; no network, nothing written;
- the size, which the scripts fix: their `Maze(max_height=13, max_width=13, ...)` builds a
  `max_height` x `max_width` = 7 x 7 jaxued `Maze` whose `default_params` has
  `max_steps_in_episode` 196 (the scripts take jaxued's 250), and their `nn.OptimizedLSTMCell(
  features=256)` builds one of 64 units (`nn` is flax.linen with that one name replaced);
- their in-loop evaluation (`eval_levels`, jaxued's 13 x 13 prefabs by default, which do not fit
  a 7 x 7 maze) plays one 7 x 7 open room (`SMALL_PREFAB`, added to jaxued's `prefabs` under
  `PREFAB_NAME`) once (`eval_num_attempts` 1) every `--updates` / `--chunks` updates; checkpoints
  are off (`checkpoint_save_interval` 0).

Timing. Ours: the first (compiling) call of the jitted init plus the ahead-of-time compilation of
the training scan are its compilation; the compiled run of all updates is the rest. jaxued: the
wall time of `main` (set-up, compilation, training, its evaluations and logging); its loop runs
`--chunks` jitted calls of `eval_freq` updates, each followed by its logging, and its
compile-free time is the mean time between the stub's `wandb.log` calls over the chunks after
the first in which XLA compiled nothing (JAX's compile events; maze_plr.py's second call
compiles its training step again), times the number of chunks (its own `time_delta` measures an
asynchronous dispatch, not the computation). Every call runs under a hard limit
(`--call-timeout`; `side_by_side.call_with_timeout`). The sides take turns: per method ours then
jaxued, the next method jaxued first.

Solve rate: every trained policy of both sides plays the same 256 held-out DR levels
(`env.levels().generate` vmapped over `jax.random.split(jax.random.key(12345), 256)`) once,
sampled actions, at most 196 steps, through our evaluator on our maze
(`driver.evaluate_levels_batch` for ours; jaxued's `ActorCritic` with its trained params as a
`RecurrentPolicy` through `evaluate_levels`, our observation turned into its normalised MiniGrid
image by `rlsuite.envs.maze.to_jaxued`: the maze's observation, reward and done are jaxued's step
for step, tests/envs/test_ued_maze.py); same per-seed keys on both sides. Solve rate: the share of
returns > 0.

Same config: both sides anneal the learning rate linearly to 0 over `num_updates` learning
steps (jaxued counts optimiser steps; our student's schedule advances with its learning steps, so
under Robust PLR, where only replays learn, both end at the same rate; `--no-ours-anneal-lr`
keeps the tuned entry's constant rate on our side).

Differences that remain (the scripts fix them): a
replayed level whose rollout finishes no episode gets the score -inf in jaxued's buffer (ranked
last, replaced first) and keeps its score in ours; its network is a 16-channel
3 x 3 convolution of the 5 x 5 x 3 MiniGrid image and a 5-unit embedding of the direction before
the LSTM, then actor and critic heads of 32 ReLU units (ours: the one-hot view, Dense 64 tanh,
the LSTM, linear heads); its GAE treats a time-limit end as terminal (ours bootstraps it); its
Robust PLR runs one branch per update (`lax.switch`) and computes, without applying, the
gradient of a new-level update; ours skips the learning step there (`lax.cond`, a real branch
with one run per device, as with the default 2 seeds on 2 cores; under a `vmap` of several runs
on one device it computes both branches).

    python benchmarks/ued.py            # DR and Robust PLR, 2 seeds: 8 min on 2 idle cores
    python benchmarks/ued.py --methods accel --seeds 1 --updates 200
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import flax.linen as linen
import jax
import jax.numpy as jnp
import numpy as np
import side_by_side
import tyro
from report import check_args, fmt, progress
from rlsuite.envs.maze import to_jaxued

from rlsuite import envs
from rlsuite.agents import ued
from rlsuite.app import tuned
from rlsuite.loop import driver
from rlsuite.loop.agent import config_dict
from rlsuite.loop.episodes import evaluate_levels
from rlsuite.loop.rollout import RecurrentPolicy

ROOT = Path(__file__).resolve().parent.parent
JAXUED_COMMIT = "0f8f1284677375b889e4f13a32c9617cd009f8c4"
ENV = "maze/small"
MAZE = {"height": 7, "width": 7, "n_walls": 10, "max_steps": 196}  # maze/small's defaults
EXAMPLES = {  # method -> jaxued's example
    "dr": "maze_dr.py",
    "plr": "maze_plr.py",
    "robust_plr": "maze_plr.py",
    "accel": "maze_plr.py",
}
PREFAB_NAME = "rlsuite_open_7x7"
SMALL_PREFAB = "\n".join([">......", *["......."] * 5, "......G"])
HELD_OUT_KEY = 12345


@dataclasses.dataclass
class Args:
    """Flags of the UED benchmark."""

    cpu_devices: int | None = None
    """CPU cores made JAX devices before anything runs (`platform.use_cpu_cores`; None: every
    core, as `rlsuite train` does). Ours splits its seeds over them; jaxued's runs use one
    device. 1: every side on one device."""
    seed: int = 0
    """Base seed: ours trains from `side_by_side.keys_for(seed, seeds)`, jaxued's run i from its
    config seed `seed + i`."""
    methods: list[str] = dataclasses.field(default_factory=lambda: ["dr", "robust_plr"])
    """Curricula to compare (dr, plr, robust_plr, accel); jaxued: maze_dr.py for dr,
    maze_plr.py for the others."""
    seeds: int = 2
    """Seeds per method (ours vmapped, jaxued's runs in sequence)."""
    updates: int = 500
    """Updates per run (32 levels x 64 steps each)."""
    chunks: int = 5
    """jaxued's jitted calls per run (its eval_freq = updates / chunks); >= 2, so that the
    chunks after the first give its compile-free time."""
    eval_levels: int = 256
    """Held-out DR levels (from the fixed key 12345), one sampled attempt each per seed."""
    ours_anneal_lr: bool = True
    """Anneal our learning rate linearly to 0 over the student's learning steps, as jaxued's
    scripts do (the same config on both sides); `--no-ours-anneal-lr` keeps the tuned entry's
    constant rate."""
    call_timeout: int = 1800
    """Hard limit in seconds on each side's training call: past it the stacks are dumped and the
    process exits, keeping the JSON written so far."""
    jaxued_dir: Path = ROOT / "benchmarks/_anchors/jaxued"
    """Folder holding jaxued's `maze_dr.py` and `maze_plr.py` (commit JAXUED_COMMIT)."""
    out: Path = Path("benchmarks/results/ued.json")
    """Where to write the JSON results."""
    markdown: bool = True
    """Also print the tables as Markdown (for its page, docs/benchmarks/)."""


# ------------------------------------------------------------------------ anchor: jaxued 0.0.1
class WandbStub(types.ModuleType):
    """What the examples use of wandb: `init` keeps the config (`wandb.config`, a dict with
    `as_dict`), `log` keeps the scalars of each call and its `time.perf_counter()`; the rest
    does nothing."""

    class Config(dict):
        def as_dict(self) -> dict:
            return dict(self)

    def __init__(self):
        super().__init__("wandb")
        self.config, self.logs = None, []

    def init(self, config=None, **kwargs):
        self.config, self.logs = self.Config(config or {}), []
        return self

    def log(self, values: dict, *args, **kwargs) -> None:
        scalars = {}
        for name, value in values.items():
            try:
                array = np.asarray(value)
            except (TypeError, ValueError):
                continue
            if array.size == 1 and array.dtype.kind in "biuf":
                scalars[name] = float(array)
        self.logs.append((time.perf_counter(), scalars))

    def define_metric(self, *args, **kwargs) -> None:
        pass

    def finish(self, *args, **kwargs) -> None:
        pass

    @staticmethod
    def Image(*args, **kwargs):  # noqa: N802 (wandb's name)
        return None

    @staticmethod
    def Video(*args, **kwargs):  # noqa: N802 (wandb's name)
        return None


def sized_lstm(size: int) -> Callable:
    """`nn.OptimizedLSTMCell` of `size` units whatever size the caller asks for (the examples
    call it with `features=256`)."""

    def cell(features: int | None = None, **kwargs):
        return linen.OptimizedLSTMCell(features=size, **kwargs)

    return cell


def sized_maze(height: int, width: int, horizon: int) -> type:
    """jaxued's `Maze` built `height` x `width` whatever size the caller asks for, its default
    params with `max_steps_in_episode=horizon`."""
    from jaxued.environments import Maze
    from jaxued.environments.maze.env import EnvParams

    class SizedMaze(Maze):
        def __init__(self, max_height=13, max_width=13, **kwargs):
            super().__init__(max_height=height, max_width=width, **kwargs)

        @property
        def default_params(self) -> EnvParams:
            return EnvParams(max_steps_in_episode=horizon)

    return SizedMaze


def load_example(directory: Path, name: str, lstm: int, maze: dict) -> types.ModuleType:
    """Import jaxued's `examples/<name>` from `directory`, unmodified, with the changes of the
    module docstring: `jax.tree_map` back, a `wandb` stub, and its `Maze` and LSTM cell at the
    benchmark's size (`maze`, `lstm` units). The stub is the module's `wandb` attribute."""
    path = directory / name
    if not path.exists():
        raise FileNotFoundError(
            f"jaxued's {name} is not in {directory}; benchmarks/README.md says how to fetch it"
        )
    if not hasattr(jax, "tree_map"):
        jax.tree_map = jax.tree.map
    from jaxued.environments.maze import level

    level.prefabs.setdefault(PREFAB_NAME, SMALL_PREFAB)
    stub, previous = WandbStub(), sys.modules.get("wandb")
    sys.modules["wandb"] = stub
    try:
        spec = importlib.util.spec_from_file_location(f"jaxued_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if previous is None:
            sys.modules.pop("wandb", None)
        else:
            sys.modules["wandb"] = previous
    module.Maze = sized_maze(maze["height"], maze["width"], maze["max_steps"])
    module.nn = types.SimpleNamespace(**{**vars(linen), "OptimizedLSTMCell": sized_lstm(lstm)})
    return module


def _run_flags(method: str, updates: int, chunks: int, eval_levels: tuple[str, ...]) -> dict:
    """The flags every jaxued maze example takes besides its algorithm's: names, seed 0 (set
    per run), training mode, checkpoints off, `chunks` evaluations of one attempt."""
    return {
        "project": "rlsuite-benchmark",
        "run_name": f"rlsuite-{method}",
        "group_name": f"rlsuite-{method}",
        "seed": 0,
        "mode": "train",
        "checkpoint_directory": None,
        "checkpoint_to_eval": -1,
        "checkpoint_save_interval": 0,
        "max_number_of_checkpoints": 60,
        "eval_freq": updates // chunks,
        "eval_num_attempts": 1,
        "eval_levels": list(eval_levels),
    }


def jaxued_config(
    method: str,
    agent,
    hp: ued.UEDHparams,
    updates: int,
    chunks: int,
    n_walls: int = MAZE["n_walls"],
    eval_levels: tuple[str, ...] = (PREFAB_NAME,),
) -> dict:
    """The config dict of maze_dr.py's and maze_plr.py's `__main__` (every flag of their
    argparse) with our task's numbers (`agent`'s config and `hp`); `seed` is set per run."""
    config = agent.config
    return {
        **_run_flags(method, updates, chunks, eval_levels),
        "lr": float(hp.learning_rate),
        "max_grad_norm": float(hp.max_grad_norm),
        "num_updates": updates,
        "num_env_steps": None,
        "num_steps": config.num_steps,
        "num_train_envs": config.num_envs,
        "num_minibatches": config.num_minibatches,
        "gamma": float(hp.gamma),
        "epoch_ppo": config.update_epochs,
        "clip_eps": float(hp.clip_eps),
        "gae_lambda": float(hp.gae_lambda),
        "entropy_coeff": float(hp.ent_coef),
        "critic_coeff": float(hp.vf_coef),
        "score_function": "MaxMC",
        "exploratory_grad_updates": method == "plr",
        "level_buffer_capacity": config.buffer_capacity,
        "replay_prob": float(hp.replay_prob),
        "staleness_coeff": float(hp.staleness_coeff),
        "temperature": float(hp.temperature),
        "topk_k": 4,
        "minimum_fill_ratio": float(hp.minimum_fill),
        "prioritization": "rank",
        "buffer_duplicate_check": True,
        "use_accel": method == "accel",
        "num_edits": config.num_edits,
        "agent_view_size": 5,
        "n_walls": n_walls,
    }


def jaxued_paired_config(
    agent, hp: ued.UEDHparams, updates: int, chunks: int, eval_levels: tuple[str, ...]
) -> dict:
    """The config dict of maze_paired.py's `__main__` (every flag of its argparse): student and
    adversary PPO from our `agent`'s config and `hp` (both sides' PAIRED use one set for the
    three agents), jaxued's defaults for its editor: 50 adversary steps (ours: `n_walls` + 2,
    27 on the 13 x 13 maze) and a random z of 16; `seed` set per run."""
    config = agent.config
    ppo = {
        "lr": float(hp.learning_rate),
        "max_grad_norm": float(hp.max_grad_norm),
        "num_minibatches": config.num_minibatches,
        "gamma": float(hp.gamma),
        "epoch_ppo": config.update_epochs,
        "clip_eps": float(hp.clip_eps),
        "gae_lambda": float(hp.gae_lambda),
        "entropy_coeff": float(hp.ent_coef),
        "critic_coeff": float(hp.vf_coef),
    }
    return {
        **_run_flags("paired", updates, chunks, eval_levels),
        "num_updates": updates,
        "num_env_steps": None,
        "num_train_envs": config.num_envs,
        "student_num_steps": config.num_steps,
        **{f"student_{k}": v for k, v in ppo.items()},
        "adv_random_z_dimension": 16,
        "adv_zero_out_random_z": False,
        "adv_num_steps": 50,
        **{f"adv_{k}": v for k, v in ppo.items()},
        "agent_view_size": 5,
    }


COMPILES: list[tuple[float, float]] = []  # (time of the event, seconds) of every XLA compilation


def _record_compile(event: str, seconds: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES.append((time.perf_counter(), seconds))


def compile_seconds(start: float, end: float) -> float:
    """Seconds of XLA compilation (JAX's backend-compile events) that ended in [start, end]."""
    return sum(seconds for t, seconds in COMPILES if start <= t <= end)


def jaxued_run(module, config: dict, timeout: int) -> dict:
    """One `module.main(config)` under the time limit: its final train state, its wall time,
    and its compile-free time: the mean time between the stub's `wandb.log` calls of the chunks
    after the first that compiled nothing (XLA compilation under 5% of the chunk), times the
    number of chunks (without such a chunk: the wall time less its XLA compilation)."""
    stub = module.wandb
    start = time.perf_counter()
    state = side_by_side.call_with_timeout(
        lambda: module.main(dict(config), project=config["project"]), timeout
    )()
    wall = time.perf_counter() - start
    bounds = [start, *(t for t, _ in stub.logs)]
    chunks = [
        {"s": end - begin, "compile_s": compile_seconds(begin, end)}
        for begin, end in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    clean = [c["s"] for c in chunks[1:] if c["compile_s"] < 0.05 * c["s"]]
    if clean:
        steady, source = float(np.mean(clean)) * len(chunks), "compile-free chunks"
    else:
        steady, source = wall - compile_seconds(start, start + wall), "wall less compilation"
    return {
        "params": getattr(state, "params", None),  # maze_paired.py returns its whole state
        "wall_s": wall,
        "steady_s": steady,
        "steady_from": source,
        "chunks": chunks,
        "logs": [values for _, values in stub.logs],
    }


def jaxued_policy(module, params) -> RecurrentPolicy:
    """jaxued's `ActorCritic` with `params` as our evaluator's sampling `RecurrentPolicy`: our
    observation as its normalised image (`to_jaxued`, / 10 as its `normalize_obs`) and
    direction, one step of its `(obs, done)` sequence input, its LSTM carry."""
    from jaxued.environments.maze.env import Observation

    network = module.ActorCritic(7)

    def apply(key, obs, carry):
        image, direction = to_jaxued(obs)
        x = Observation(image=image[None] / 10.0, agent_dir=direction[None])
        resets = jnp.zeros((1, obs.shape[0]), bool)
        carry, pi, _ = network.apply(params, (x, resets), carry)
        return pi.sample(seed=key)[0], {}, carry

    return RecurrentPolicy(apply, lambda num_envs: module.ActorCritic.initialize_carry((num_envs,)))


# ---------------------------------------------------------------------------------- the runs
def held_out(env, env_params, count: int):
    """`count` DR levels from the fixed key, as params for `evaluate_levels`."""
    levels = env.levels()
    drawn = jax.vmap(levels.generate)(jax.random.split(jax.random.key(HELD_OUT_KEY), count))
    return levels.params_for(env_params, drawn)


def our_agent(method: str, anneal_lr: bool):
    entry = tuned.tuned("ued", ENV)
    config = ued.UEDConfig(curriculum=method, anneal_lr=anneal_lr, **entry["config"])
    env, env_params = envs.make(ENV, **MAZE)
    return ued.make(config, env, env_params), ued.UEDHparams(**entry["hparams"])


def ours_side(agent, hp, keys, updates: int, timeout: int) -> tuple[dict, object]:
    """Our N runs vmapped, timed as the module docstring says: `(side, states)`."""
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))

    def train():
        start = time.perf_counter()
        states = jax.block_until_ready(init(agent, keys, hp))
        compiled = run.lower(agent, states, hp, updates).compile()
        trained = time.perf_counter()
        states, metrics = jax.block_until_ready(compiled(states, hp))
        end = time.perf_counter()
        return states, metrics, (start, trained, end)

    states, metrics, (start, trained, end) = side_by_side.call_with_timeout(train, timeout)()
    solved = np.asarray(metrics["ued/solved"]) if "ued/solved" in metrics else None
    side = {
        "compile_s": trained - start,
        "wall_excl_compile_s": end - trained,
        "wall_incl_compile_s": end - start,
    }
    if solved is not None:  # [N, U]: share of the update's levels solved at least once
        side["train_solved_last10pct"] = float(solved[:, -max(1, updates // 10) :].mean())
    return side, states


def jaxued_side(args: Args, method: str, agent, hp) -> tuple[dict, object]:
    """jaxued's N runs in sequence: `(side, stacked params)`."""
    lstm = agent.config.recurrent_size
    module = load_example(args.jaxued_dir, EXAMPLES[method], lstm, MAZE)
    config = jaxued_config(method, agent, hp, args.updates, args.chunks)
    runs = []
    for i in range(args.seeds):
        run = jaxued_run(module, {**config, "seed": args.seed + i}, args.call_timeout)
        progress(f"{method} jaxued seed {args.seed + i}: {run['wall_s']:.1f}s")
        runs.append(run)
    wall = sum(r["wall_s"] for r in runs)
    steady = sum(r["steady_s"] for r in runs)
    side = {
        "config": {k: v for k, v in config.items() if k != "seed"},
        "per_run_wall_s": [r["wall_s"] for r in runs],
        "per_run_chunks": [r["chunks"] for r in runs],
        "steady_from": [r["steady_from"] for r in runs],
        "compile_s": max(wall - steady, 0.0),
        "wall_excl_compile_s": steady,
        "wall_incl_compile_s": wall,
        "last_log": [r["logs"][-1] if r["logs"] else {} for r in runs],
    }
    params = jax.tree.map(lambda *x: jnp.stack(x), *[r["params"] for r in runs])
    return side, (module, params)


def solve_rates_ours(agent, states, key, level_params) -> np.ndarray:
    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5, 6))
    result = evaluate(agent, states, key, level_params, 1, False, MAZE["max_steps"])
    return (np.asarray(result.returns) > 0).mean(axis=(1, 2))  # [N]


def solve_rates_jaxued(agent, anchor, key, level_params) -> np.ndarray:
    module, params = anchor

    def one(params, key):
        policy = jaxued_policy(module, params)
        return evaluate_levels(agent.env, level_params, policy, key, 1, MAZE["max_steps"]).returns

    keys = jax.random.split(key, jax.tree.leaves(params)[0].shape[0])  # as driver's
    returns = jax.jit(jax.vmap(one))(params, keys)
    return (np.asarray(returns) > 0).mean(axis=(1, 2))


def bench(args: Args, method: str, turn: int, level_params, save) -> dict:
    agent, hp = our_agent(method, args.ours_anneal_lr)
    keys, key_eval = side_by_side.keys_for(args.seed, args.seeds)
    order = ("ours", "jaxued") if turn % 2 == 0 else ("jaxued", "ours")
    sides, trained = {}, {}
    for name in order:
        if name == "ours":
            sides[name], trained[name] = ours_side(agent, hp, keys, args.updates, args.call_timeout)
        else:
            sides[name], trained[name] = jaxued_side(args, method, agent, hp)
        progress(f"{method} {name}: {sides[name]['wall_incl_compile_s']:.1f}s")
    rates = {
        "ours": solve_rates_ours(agent, trained["ours"], key_eval, level_params),
        "jaxued": solve_rates_jaxued(agent, trained["jaxued"], key_eval, level_params),
    }
    steps = args.seeds * args.updates * agent.env_steps_per_update
    for name, side in sides.items():
        side["env_steps_per_s"] = steps / side["wall_excl_compile_s"]
        side["solve_rate_per_seed"] = rates[name].tolist()
        side["solve_rate"] = float(rates[name].mean())
    row = {
        "method": method,
        "env": ENV,
        "num_seeds": args.seeds,
        "num_updates": args.updates,
        "env_steps_per_update": agent.env_steps_per_update,
        "held_out_levels": args.eval_levels,
        "order": list(order),
        "load_average_after": list(os.getloadavg()),
        "ours_config": config_dict(agent.config),
        "ours_hparams": side_by_side.hparams_dict(hp),
        **sides,
        "ours_over_jaxued": side_by_side.ratios(sides["ours"], sides["jaxued"]),
        "solve_rate_ours_minus_jaxued": sides["ours"]["solve_rate"] - sides["jaxued"]["solve_rate"],
    }
    row["goals"] = {
        "solve_rate_within_0.05": abs(row["solve_rate_ours_minus_jaxued"]) <= 0.05,
        "wall_at_most_1x": row["ours_over_jaxued"]["wall_incl_compile_s"] <= 1.0,
    }
    save(row)
    return row


# ------------------------------------------------------------------------------------------ report
def table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["method", "variant", "wall incl. compile (s)", "wall excl. compile (s)"]
    header += ["compile (s)", "env steps/s (all seeds)", "solve rate", "per seed"]
    body = []
    for r in rows:
        method = f"{r['method']}, N={r['num_seeds']}"
        for name in ("ours", "jaxued"):
            side = r[name]
            body.append(
                [
                    method,
                    name,
                    fmt(side["wall_incl_compile_s"]),
                    fmt(side["wall_excl_compile_s"]),
                    fmt(side["compile_s"]),
                    fmt(side["env_steps_per_s"], ",.0f"),
                    fmt(side["solve_rate"], ".3f"),
                    " ".join(f"{x:.3f}" for x in side["solve_rate_per_seed"]),
                ]
            )
        ratio = r["ours_over_jaxued"]
        body.append(
            [
                method,
                "ours / jaxued (solve rate: ours - jaxued)",
                fmt(ratio["wall_incl_compile_s"], ".2f"),
                fmt(ratio["wall_excl_compile_s"], ".2f"),
                "",
                fmt(ratio["env_steps_per_s"], ".2f"),
                fmt(r["solve_rate_ours_minus_jaxued"], "+.3f"),
                "",
            ]
        )
    return header, body


def anchor_info(args: Args) -> dict:
    files = {}
    for name in sorted(set(EXAMPLES.values())):
        path = args.jaxued_dir / name
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    try:
        version = importlib.metadata.version("jaxued")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"jaxued_commit": JAXUED_COMMIT, "jaxued_sha256": files, "jaxued_package": version}


def main(args: Args) -> dict:
    check_args(args, choices={"methods": tuple(EXAMPLES)})
    if args.chunks < 2 or args.updates % args.chunks:
        raise ValueError(
            f"--chunks must be >= 2 and divide --updates, got {args.chunks} and {args.updates}"
        )
    for name in sorted({EXAMPLES[m] for m in args.methods}):
        if not (args.jaxued_dir / name).exists():
            raise FileNotFoundError(
                f"jaxued's {name} is not in {args.jaxued_dir}; benchmarks/README.md says how to "
                "fetch it"
            )
    console, machine = side_by_side.set_up(args)
    jax.monitoring.register_event_duration_secs_listener(_record_compile)
    machine["versions"]["jaxued"] = anchor_info(args)["jaxued_package"]
    start = time.perf_counter()
    env, env_params = envs.make(ENV, **MAZE)
    level_params = held_out(env, env_params, args.eval_levels)
    rows = []

    def save(row: dict | None = None) -> dict:  # the whole JSON after every method
        rows.extend([] if row is None else [row])
        return side_by_side.write_result(args, machine, anchor_info(args), start, {"rows": rows})

    save()
    for turn, method in enumerate(args.methods):
        bench(args, method, turn, level_params, save)
    result = save()
    side_by_side.show(console, args, result, tables(result))
    return result


def tables(result: dict) -> list[tuple]:
    """`(title, header, body)` of every method beside jaxued, from the JSON `main` writes
    (`benchmarks/tables.py` renders it on the UED pages)."""
    args = result["args"]
    title = (
        f"UED on {ENV} (7 x 7, up to 10 walls, horizon 196), {args['updates']:,} updates of 32 x "
        f"64 steps; solve rate on {args['eval_levels']} held-out DR levels, 1 sampled attempt "
        "each, both sides through our evaluator; ours: N seeds vmapped, jaxued: N runs in sequence"
    )
    return [(title, *table(result["rows"]))]


if __name__ == "__main__":
    main(tyro.cli(Args))
