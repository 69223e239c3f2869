"""`fit`: the host loop around the jitted driver. It runs `num_updates` in chunks and, between
chunks, saves an orbax checkpoint of the whole batched learner state, writes per-seed metrics and
moves a progress bar; at the end it evaluates every seed's policy and writes `final.json`.

    result = fit(agent, jax.random.key(0), num_seeds=8, out_dir="runs/demo", env_name="cartpole")
    result = fit(agent, jax.random.key(0), num_seeds=8, out_dir="runs/demo", resume=True, ...)

A resumed run restores the latest checkpoint and continues with the same chunk boundaries, so it
ends bitwise where the uninterrupted run would have. A run stopped before its first checkpoint
starts again from its key (the rows it logged go to `metrics.jsonl.stale`); one stopped after
its last checkpoint but before `final.json` is evaluated and summarised. Files under `out_dir`:
`checkpoints/<update>/`, `metrics.jsonl`, `metrics.csv`, `final.json`.

The summary's `wall_seconds` is the training of this call, compilation included; its
`compile_seconds` that compilation (every chunk length is compiled before the first chunk runs), and
`env_steps_per_second` the rate of the rest, over all seeds. An offline run (a dataset as `data`)
steps no environment: its keys are `gradient_steps`, `gradient_steps_this_call` and
`gradient_steps_per_second` instead (`step_unit`).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rlsuite.environment.levels import levels_of
from rlsuite.environment.meta import info_keys, trial_wrapper
from rlsuite.loop import checkpoint, driver
from rlsuite.loop.agent import Agent, config_dict
from rlsuite.loop.distributed import is_main, place, to_host
from rlsuite.loop.evaluation import adaptation_curve
from rlsuite.loop.loggers import MetricsLogger, check_backends
from rlsuite.loop.mesh import check_mesh, context_mesh
from rlsuite.ops import memory
from rlsuite.ops.sharding import ENVS


@dataclasses.dataclass
class FitResult:
    states: Any  # the batched learner state, leading axis [num_seeds]
    metrics: dict  # name -> np.ndarray [num_seeds, updates run in this call]
    eval_returns: np.ndarray  # [num_seeds, eval_episodes]
    summary: dict  # what final.json holds


def fit(
    agent: Agent,
    key: jax.Array,
    hparams: Any = None,
    *,
    num_seeds: int = 1,
    num_updates: int | None = None,
    chunk_updates: int | None = None,
    hparams_axis: int | None = None,
    seeds_per_config: int | None = None,
    out_dir: str | pathlib.Path | None = None,
    resume: bool = False,
    env_name: str = "",
    eval_episodes: int = 10,
    progress: bool = True,
    logger_options: dict | None = None,
    on_chunk: Callable[[int, dict], None] | None = None,
    between_chunks: Callable[[Any, dict, int], Any] | None = None,
    data: Any = None,
    metadata: dict | None = None,
    reference_returns: tuple[float, float] | None = None,
) -> FitResult:
    """Train `num_seeds` runs of `agent` (vmapped, sharded over devices) and evaluate them.

    `num_updates` defaults to `agent.config.num_updates`; `chunk_updates` (default:
    `chunk_length(num_updates)`, about a tenth of the run) sets how often checkpoints, logs and
    progress happen. `on_chunk(update, metrics)` is
    called on the host after each chunk is saved. `between_chunks(states, metrics, update)`
    returns the states the next chunk starts from, after every chunk but the last and before its
    checkpoint (population-based training, `rlsuite.loop.population.PBT`); it must decide from
    its arguments alone, so that a resumed run decides the same.

    Offline agents take their dataset as `data` (see `rlsuite.loop.driver`); it is not checkpointed,
    so pass something that identifies it in `metadata` (a resume must then present the same).
    `reference_returns=(random, expert)` adds D4RL's normalised scores to the summary.

    A sweep passes one set of hparams per run (`hparams_axis=0`) and `seeds_per_config`: the
    runs are then `num_seeds // seeds_per_config` configurations of `seeds_per_config` seeds,
    configuration-major, and each run is initialised and evaluated with the keys of its seed in
    a `seeds_per_config`-seed run of its configuration alone (`driver.run_keys`).
    """
    hparams = agent.default_hparams if hparams is None else hparams
    agent.check_hparams(hparams)
    num_updates = agent.config.num_updates if num_updates is None else num_updates
    for name, value in (
        ("num_seeds", num_seeds),
        ("num_updates", num_updates),
        ("chunk_updates", 1 if chunk_updates is None else chunk_updates),
        ("eval_episodes", eval_episodes),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"fit: {name} must be an int >= 1, got {value!r}")
    num_updates = int(num_updates)
    chunk_updates = chunk_length(num_updates) if chunk_updates is None else int(chunk_updates)
    if hparams_axis not in (None, 0):
        raise ValueError(
            f"fit: hparams_axis must be None (one hparams for every run) or 0 (a batch of "
            f"hparams, one per run), got {hparams_axis!r}"
        )
    if seeds_per_config is not None and (
        hparams_axis != 0
        or not isinstance(seeds_per_config, int)
        or seeds_per_config < 1
        or num_seeds % seeds_per_config
    ):
        raise ValueError(
            f"fit: seeds_per_config={seeds_per_config!r} needs hparams_axis=0 and must divide "
            f"num_seeds={num_seeds}"
        )
    if resume and out_dir is None:
        raise ValueError("fit: resume=True needs the out_dir of the run to continue")
    if out_dir is not None:
        blocked = file_in_the_way(out_dir)
        if blocked is not None:
            raise ValueError(f"fit: out_dir {out_dir}: {blocked} is a file, not a directory")
        check_backends(**(logger_options or {}))
    extra = dict(metadata or {})
    metadata = {
        **extra,
        "algo": agent.name,
        "env": env_name,
        "num_seeds": num_seeds,
        "config": config_dict(agent.config),
        "hparams": jax.tree.map(lambda x: np.asarray(x).tolist(), dataclasses.asdict(hparams)),
    }
    split_mesh = context_mesh()  # the suite's mesh, where the caller set one (runs x envs)
    if split_mesh is not None:
        check_mesh(split_mesh, num_seeds, agent.config)
    key_init, key_eval = jax.random.split(key)
    keys = driver.run_keys(key_init, num_seeds, seeds_per_config)
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    # The state is donated: a replay buffer in it is updated in place, not copied per chunk.
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4), donate_argnums=(1,))
    target = jax.eval_shape(init, agent, keys, hparams, hparams_axis, data)
    mesh = driver.run_mesh(num_seeds)
    devices = [jax.devices()[0]] if mesh is None else list(mesh.devices.flat)
    devices = [d for d in devices if d.process_index == jax.process_index()]  # this process's
    need, what = memory.tree_bytes(target), f"{agent.name}: the learner state of {num_seeds} runs"
    if out_dir is not None and devices[0].platform == "cpu":
        # A checkpoint is saved from (and restored through) a host copy of the whole state: on
        # a CPU, in the same memory as the state.
        need, what = 2 * need, f"{what} with its checkpoint copy"
    memory.check_fits(need, what, hint="use fewer seeds or a smaller buffer", devices=devices)

    ckpt_dir = None if out_dir is None else pathlib.Path(out_dir) / "checkpoints"
    start = 0
    final_path = None if out_dir is None else pathlib.Path(out_dir) / "final.json"
    # A resumed run that saved no complete checkpoint yet (none, or only the temporary folder of
    # a save that was cut short) starts again; restore refuses a corrupt or foreign one.
    latest = None if ckpt_dir is None else checkpoint.latest_step(ckpt_dir)
    if resume:
        _say_cut_short(ckpt_dir, latest)
    if resume and latest is not None:
        keys_checked = ("algo", "env", "num_seeds", "config", "hparams", *extra)
        expect = {k: metadata[k] for k in keys_checked}
        states, saved = checkpoint.restore(ckpt_dir, target, expect=expect)
        unmatched = sorted(set(saved) - set(metadata) - {"update", "env_steps"})
        if unmatched:
            raise checkpoint.CheckpointError(
                f"checkpoint {ckpt_dir} was saved with metadata "
                f"{ {k: saved[k] for k in unmatched} }; the resume must present the same "
                "(pass it in metadata=)"
            )
        states = driver.shard_runs(states, num_seeds)  # init_batch places a new run's states
        start = int(saved["update"])
        if start > num_updates:
            raise ValueError(
                f"fit: the run in {out_dir} has a checkpoint at update {start}, beyond "
                f"num_updates={num_updates}; resume it with num_updates >= {start}"
            )
        if start == num_updates and final_path.exists():
            raise ValueError(
                f"fit: the run in {out_dir} already completed {start} of {num_updates} updates; "
                "nothing to resume"
            )
    else:
        if latest is not None:  # (not a resume: that restores it)
            raise FileExistsError(
                f"{ckpt_dir} already holds checkpoints; resume the run or use another out_dir"
            )
        if not resume and final_path is not None and final_path.exists():
            raise FileExistsError(f"{final_path} exists; use another out_dir")
        states = init(agent, keys, hparams, hparams_axis, data)

    logger = None
    writes = out_dir is not None and is_main()  # several processes: process 0 writes the files
    if writes:
        resume_step = start * agent.env_steps_per_update if resume else None
        logger = MetricsLogger(out_dir, resume_from_step=resume_step, **(logger_options or {}))
    steps_per_update = agent.env_steps_per_update
    collected: dict[str, list] = {}
    wall_start = time.perf_counter()
    # Every chunk length this call runs (the last chunk may be shorter) is compiled before the
    # first chunk, so that the chunks' times, and the rate in the summary, hold no compilation.
    chunk_lengths = {
        min(chunk_updates, num_updates - u) for u in range(start, num_updates, chunk_updates)
    }
    if chunk_lengths:  # (none left where a resume continues after the last checkpoint)
        states = steady_layout(run, agent, states, hparams, min(chunk_lengths), hparams_axis, data)
    compiled = {
        n: run.lower(agent, states, hparams, n, hparams_axis, data).compile()
        for n in sorted(chunk_lengths)
    }
    compile_seconds = time.perf_counter() - wall_start
    total, done = num_updates * steps_per_update, start * steps_per_update
    with _Progress(progress and is_main(), total, done, num_seeds) as bar:
        update = start
        while update < num_updates:
            n = min(chunk_updates, num_updates - update)
            states, metrics = compiled[n](states, hparams, data)
            metrics = to_host(metrics)  # from every process, where the runs span several
            update += n
            if between_chunks is not None and update < num_updates:
                changed = between_chunks(states, metrics, update)
                # Placed as the chunk left them: the compiled chunk takes that layout only.
                states = jax.tree.map(lambda new, old: place(new, old.sharding), changed, states)
            env_steps = (np.arange(update - n, update) + 1) * steps_per_update
            if logger is not None:
                logger.log(env_steps, metrics)
            if ckpt_dir is not None:
                saved = {**metadata, "update": update, "env_steps": update * steps_per_update}
                checkpoint.save(ckpt_dir, update, states, saved)
            for name, value in metrics.items():
                collected.setdefault(name, []).append(value)
            bar.advance(update * steps_per_update, metrics.get("charts/episodic_return"))
            if on_chunk is not None:
                on_chunk(update, metrics)
    wall_seconds = time.perf_counter() - wall_start
    if logger is not None:
        logger.close()

    eval_returns, trials = evaluate_policies(
        agent, states, key_eval, eval_episodes, seeds=seeds_per_config
    )
    steps_run = (num_updates - start) * steps_per_update
    unit = step_unit(data)
    summary = {
        "algo": agent.name,
        "env": env_name,
        "num_seeds": num_seeds,
        unit: total,
        f"{unit}_this_call": steps_run,
        "wall_seconds": round(wall_seconds, 3),
        "compile_seconds": round(compile_seconds, 3),
        f"{unit}_per_second": round(
            steps_run * num_seeds / max(wall_seconds - compile_seconds, 1e-9)
        ),
        "eval_episodes": eval_episodes,
        **eval_summary(eval_returns, reference_returns),
        **trials,
    }
    if final_path is not None and writes:
        final_path.write_text(json.dumps(summary, indent=2) + "\n")
    metrics = {k: np.concatenate(v, axis=1) for k, v in collected.items()}
    return FitResult(states, metrics, eval_returns, summary)


def steady_layout(run, agent, states, hparams, num_updates: int, hparams_axis, data) -> Any:
    """`states` placed as the chunk program `run` leaves them, so that every chunk (the first,
    and the first after a resume) runs the same compiled program on the same layout.

    On a mesh that splits the environments (`rlsuite.loop.mesh`), a chunk returns the arrays the
    agent splits (environments, replay buffer) split over the envs devices, while a new or
    restored state holds them whole; a compiled chunk takes one layout only. This places the
    state as a chunk's output is (one extra compilation). Elsewhere `states` itself.
    """
    if split_envs_of(driver.run_mesh(jax.tree.leaves(states)[0].shape[0])) == 1:
        return states
    compiled = run.lower(agent, states, hparams, num_updates, hparams_axis, data).compile()
    return jax.tree.map(place, states, compiled.output_shardings[0])


def split_envs_of(mesh) -> int:
    """The devices `mesh` splits one run's environments over (1 without a mesh or a split)."""
    return 1 if mesh is None or ENVS not in mesh.axis_names else mesh.shape[ENVS]


def step_unit(data: Any) -> str:
    """What the driver's steps count: `env_steps`, or for an offline agent (which learns from
    `data` and steps no environment) `gradient_steps`; the summary's keys are named by it."""
    return "env_steps" if data is None else "gradient_steps"


def _say_cut_short(ckpt_dir: pathlib.Path, latest: int | None) -> None:
    """Tell a resume that the saves of some checkpoints were cut short (the process was killed
    while saving) and where it continues instead; their leftovers go with the next save."""
    cut = [s for s in checkpoint.incomplete_steps(ckpt_dir) if latest is None or s > latest]
    if cut:
        where = "from the start" if latest is None else f"from the complete checkpoint {latest}"
        names = ", ".join(map(str, cut))
        print(
            f"rlsuite: warning: the save of checkpoint {names} in {ckpt_dir} was cut short; "
            f"continuing {where}",
            file=sys.stderr,
        )


def chunk_length(num_updates: int, chunks: int = 10) -> int:
    """The updates per chunk for about `chunks` chunks of a `num_updates`-update run.

    Each chunk length is a compilation, so where some count of chunks between half and twice
    `chunks` divides `num_updates`, the one nearest `chunks` (the larger on a tie) sets a length
    that every chunk has: 976 updates in 8 chunks of 122, not 10 of 97 and one of 6. Otherwise
    `num_updates // chunks` (at least 1), and the last chunk is shorter.
    """
    counts = range(max(1, -(-chunks // 2)), min(2 * chunks, num_updates) + 1)
    dividing = [c for c in counts if num_updates % c == 0]
    if dividing:
        return num_updates // min(dividing, key=lambda c: (abs(c - chunks), -c))
    return max(1, num_updates // chunks)


def evaluate_policies(
    agent, states, key: jax.Array, episodes: int, deterministic: bool = True, seeds=None
) -> tuple[np.ndarray, dict]:
    """Every run's evaluation returns `[num_runs, episodes]`, and for a task family (episodes
    that are trials, `rlsuite.environment.meta.RL2`) the `trial_summary` of the same episodes
    (else `{}`). Each run's key is `driver.run_keys(key, num_runs, seeds)[i]`."""
    num_runs = jax.tree.leaves(states)[0].shape[0]
    keys = driver.run_keys(key, num_runs, seeds)
    if trial_wrapper(agent.env) is None:
        goal = "success" in info_keys(agent.env, agent.env_params)
        evaluation = jax.jit(driver.evaluate_batch, static_argnums=(0, 3, 4, 5, 6))
        sums = ("success",) if goal else ()
        result = to_host(evaluation(agent, states, keys, episodes, deterministic, None, sums))
        returns = np.asarray(result.returns)
        key_levels = jax.random.fold_in(key, 1)  # `key` keeps the evaluation it always gave
        key_levels = driver.run_keys(key_levels, num_runs, seeds)
        summary = held_out_summary(agent, states, key_levels, episodes, deterministic)
        if goal:
            summary.update(goal_summary(np.asarray(result.sums["success"])))
        return returns, summary
    sums = tuple(k for k in TRIAL_SUMS if k in info_keys(agent.env, agent.env_params))
    evaluation = jax.jit(driver.evaluate_trials_batch, static_argnums=(0, 3, 4, 5))
    result = to_host(evaluation(agent, states, keys, episodes, deterministic, sums))
    return np.asarray(result.returns), trial_summary(result)


def held_out_summary(agent, states, key: jax.Array, attempts: int, deterministic: bool) -> dict:
    """For an environment with named evaluation levels (`Levels.held_out`, the maze's eight):
    `{"held_out": {"names", "returns"}}`, each run's returns `[num_runs, num_levels, attempts]`
    (solve rate: the share above 0); else `{}`."""
    levels = levels_of(agent.env)
    if levels is None or levels.held_out is None:
        return {}
    names, held_out = levels.held_out()
    level_params = levels.params_for(agent.env_params, held_out)
    evaluation = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5))
    result = to_host(evaluation(agent, states, key, level_params, attempts, deterministic))
    return {"held_out": {"names": list(names), "returns": np.asarray(result.returns).tolist()}}


def goal_summary(success_steps: np.ndarray) -> dict:
    """What `final.json` and `rlsuite eval` say of a goal environment's episodes (its
    `info["success"]` summed per episode, `[num_runs, episodes]`): per seed and in the mean,
    `success_any` (the share of episodes with a success step) and `time_near_goal` (steps per
    episode within the threshold of the goal)."""
    any_per_seed = (success_steps > 0).mean(axis=1)
    near_per_seed = success_steps.mean(axis=1)
    return {
        "eval_success_any_per_seed": any_per_seed.tolist(),
        "eval_success_any_mean": float(any_per_seed.mean()),
        "eval_time_near_goal_per_seed": near_per_seed.tolist(),
        "eval_time_near_goal_mean": float(near_per_seed.mean()),
    }


TRIAL_SUMS = ("regret",)  # info keys a task family may report, summed over each trial


def trial_summary(result) -> dict:
    """What `final.json` and `rlsuite eval` say of a task family's trials: the adaptation curve
    (mean return per episode index of the trial, bootstrap 95% interval across seeds, and each
    seed's curve) and each summed info key's mean per trial, per seed."""
    episode_returns = np.asarray(result.episode_returns)
    summary = {}
    if episode_returns.shape[-1] > 0:
        mean, low, high = adaptation_curve(episode_returns)
        summary["adaptation"] = {
            "episode_return_mean": mean.tolist(),
            "episode_return_low": low.tolist(),
            "episode_return_high": high.tolist(),
            "episode_return_per_seed": episode_returns.mean(axis=1).tolist(),
        }
    for name, values in result.sums.items():
        per_seed = np.asarray(values).mean(axis=1)
        summary[f"eval_{name}_per_seed"] = per_seed.tolist()
        summary[f"eval_{name}_mean"] = float(per_seed.mean())
    return summary


def eval_summary(eval_returns: np.ndarray, reference_returns=None) -> dict:
    """`eval_return_per_seed` and `eval_return_mean` of returns `[num_seeds, episodes]`, and with
    `reference_returns=(random, expert)` D4RL's `normalized_score_per_seed` and `_mean`."""
    per_seed = np.asarray(eval_returns).mean(axis=1)
    summary = {
        "eval_return_per_seed": per_seed.tolist(),
        "eval_return_mean": float(per_seed.mean()),
    }
    if reference_returns is not None:
        from rlsuite.data.datasets import normalized_score

        scores = np.asarray(normalized_score(per_seed, *reference_returns))
        summary["normalized_score_per_seed"] = scores.tolist()
        summary["normalized_score_mean"] = float(scores.mean())
    return summary


def file_in_the_way(path) -> pathlib.Path | None:
    """The first of `path` and its parents that exists and is not a directory (so that no
    directory can be made at `path`), or None."""
    path = pathlib.Path(path)
    return next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)


def check_new_file(
    path, flag: str = "--out", overwrite: bool = False, hint: str = ""
) -> pathlib.Path:
    """Refuse, before anything runs, a `path` that a new file cannot be written to: one under a
    file, a directory, or (unless `overwrite`) an existing file; `hint` ends that last message.
    Returns `path` as a `pathlib.Path`."""
    path = pathlib.Path(path)
    blocked = file_in_the_way(path.parent)
    if blocked is not None:
        raise ValueError(f"{flag} {path}: {blocked} is a file, not a directory")
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give the name of a file")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; choose another {flag}{hint}")
    return path


class _Progress:
    """A rich progress bar over one run's environment steps; the rate counts all runs' steps
    (as `final.json` does). A no-op when disabled."""

    def __init__(self, enabled: bool, total: int, completed: int, num_runs: int):
        self.enabled, self.total, self.completed = enabled, total, completed
        self.num_runs = num_runs

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("[bold]env steps[/] {task.completed:,.0f}/{task.total:,.0f}"),
                BarColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("return {task.fields[ret]}"),
                TimeElapsedColumn(),
            )
            self.progress.start()
            self.task = self.progress.add_task(
                "", total=self.total, completed=self.completed, rate="", ret="-"
            )
            self.t0, self.s0 = time.perf_counter(), self.completed
        return self

    def advance(self, completed: int, returns: np.ndarray | None) -> None:
        if not self.enabled:
            return
        rate = self.num_runs * (completed - self.s0) / max(time.perf_counter() - self.t0, 1e-9)
        ret = "-"
        if returns is not None and np.isfinite(returns[:, -1]).any():
            ret = f"{np.nanmean(returns[:, -1]):.1f}"
        self.progress.update(self.task, completed=completed, rate=f"{rate:,.0f} steps/s", ret=ret)

    def __exit__(self, *exc):
        if self.enabled:
            self.progress.stop()
