"""`fit`: the host loop around the jitted driver. It runs `num_updates` in chunks and, between
chunks, saves an orbax checkpoint of the whole batched learner state, writes per-seed metrics
and moves a progress bar; at the end it evaluates every policy and writes `final.json`.

    output = Output(out_dir="runs/demo", env_name="cartpole")
    result = fit(agent, jax.random.key(0), schedule=Schedule(num_seeds=8), output=output)
    result = fit(agent, ..., output=dataclasses.replace(output, resume=True))

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
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rlsuite.loop import checkpoint, driver
from rlsuite.loop.agent import Agent, config_dict
from rlsuite.loop.distributed import is_main, place, to_host
from rlsuite.loop.divergence import DIVERGED, Divergence, finite_check
from rlsuite.loop.files import WriteError, write_json
from rlsuite.loop.fit_spec import INT32_MAX as INT32_MAX
from rlsuite.loop.fit_spec import Callbacks, Final, FitResult, Output, Schedule, checked
from rlsuite.loop.fit_spec import check_int32_steps as check_int32_steps
from rlsuite.loop.fit_spec import chunk_length as chunk_length
from rlsuite.loop.interrupts import Interrupted, Progress, StopRequest, Where
from rlsuite.loop.loggers import MetricsLogger
from rlsuite.loop.mesh import check_mesh, context_mesh
from rlsuite.loop.policy_evaluation import check_evaluation, eval_summary, evaluate_policies
from rlsuite.loop.rollout import transition_bytes
from rlsuite.ops import footprint
from rlsuite.ops.sharding import ENVS
from rlsuite.ops.validators import counted


def fit(
    agent: Agent,
    key: jax.Array,
    hparams: Any = None,
    schedule: Schedule = Schedule(),
    output: Output = Output(),
    callbacks: Callbacks = Callbacks(),
    final: Final = Final(),
    data: Any = None,
) -> FitResult:
    """Train `schedule.num_seeds` runs of `agent` (vmapped, sharded over devices; `hparams` by
    default the agent's) and evaluate them: `prepare`, `train_chunks`, `finish`.

    `schedule.num_updates` defaults to `agent.config.num_updates`; `schedule.chunk_updates`
    (default: `chunk_length(num_updates)`, about a tenth of the run) sets how often checkpoints,
    logs and progress happen. `callbacks.on_chunk(update, metrics)` is called on the host after
    each chunk is saved. `callbacks.between_chunks(states, metrics, update)` returns the states
    the next chunk starts from, after every chunk but the last and before its checkpoint
    (population-based training, `rlsuite.loop.population.PBT`); it must decide from its
    arguments alone, so that a resumed run decides the same.

    Offline agents take their dataset as `data` (`rlsuite.loop.driver`); it is not checkpointed,
    so identify it in `output.metadata` (a resume must present the same).
    `final.reference_returns=(random, expert)` adds D4RL's normalised scores to the summary.

    A sweep passes one set of hparams per run (`schedule.hparams_axis=0`) and
    `schedule.seeds_per_config`: the runs are then `num_seeds // seeds_per_config`
    configurations of `seeds_per_config` seeds, configuration-major, and each run is initialised
    and evaluated with the keys of its seed in a `seeds_per_config`-seed run of its
    configuration alone (`driver.run_keys`).
    """
    for name, value, cls in (
        ("schedule", schedule, Schedule),
        ("output", output, Output),
        ("callbacks", callbacks, Callbacks),
        ("final", final, Final),
    ):
        if not isinstance(value, cls):
            raise TypeError(f"fit: {name} must be a runner.{cls.__name__}, got {value!r}")
    run = prepare(agent, key, hparams, schedule, output, final, data)
    trained = train_chunks(run, callbacks)
    return finish(run, trained, final)


@dataclasses.dataclass
class Prepared:
    """A run checked and started (`prepare`): its states (new, or restored from the last
    checkpoint at update `start`), keys and files."""

    agent: Agent
    hparams: Any
    data: Any
    schedule: Schedule  # with num_updates and chunk_updates resolved
    output: Output
    metadata: dict  # saved with each checkpoint
    states: Any
    start: int
    key_eval: jax.Array
    run: Callable  # the jitted chunk, `driver.run_batch`
    diverged: list | None = None  # per run, the update it diverged at (a resume's checkpoint)

    @property
    def ckpt_dir(self) -> pathlib.Path | None:
        out_dir = self.output.out_dir
        return None if out_dir is None else pathlib.Path(out_dir) / "checkpoints"

    @property
    def final_path(self) -> pathlib.Path | None:
        out_dir = self.output.out_dir
        return None if out_dir is None else pathlib.Path(out_dir) / "final.json"


@dataclasses.dataclass
class Trained:
    states: Any
    collected: dict  # name -> the chunks' metrics, each [num_seeds, updates]
    wall_seconds: float
    compile_seconds: float
    divergence: Divergence


def prepare(agent, key, hparams, schedule: Schedule, output: Output, final: Final, data=None):
    """Check the run's values, check that its state fits in memory, and start it: new states
    from its keys, or for a resume the last checkpoint's (refused where it does not match)."""
    hparams = agent.default_hparams if hparams is None else hparams
    agent.check_hparams(hparams)
    schedule = checked(agent, schedule, output, final)
    extra = dict(output.metadata or {})
    metadata = {
        **extra,
        "algo": agent.name,
        "env": output.env_name,
        "num_seeds": schedule.num_seeds,
        "config": config_dict(agent.config),
        "hparams": jax.tree.map(lambda x: np.asarray(x).tolist(), dataclasses.asdict(hparams)),
    }
    split_mesh = context_mesh()  # the suite's mesh, where the caller set one (runs x envs)
    if split_mesh is not None:
        check_mesh(split_mesh, schedule.num_seeds, agent.env_split)
    key_init, key_eval = jax.random.split(key)
    keys = driver.run_keys(key_init, schedule.num_seeds, schedule.seeds_per_config)
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    # The state is donated: a replay buffer in it is updated in place, not copied per chunk.
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4), donate_argnums=(1,))
    target = jax.eval_shape(init, agent, keys, hparams, schedule.hparams_axis, data)
    _check_memory(agent, target, schedule.num_seeds, output.out_dir is not None, final, data)
    prepared = Prepared(
        agent, hparams, data, schedule, output, metadata, None, 0, key_eval, run
    )  # fmt: skip
    if output.resume and prepared.ckpt_dir is not None:
        _say_cut_short(prepared.ckpt_dir, checkpoint.latest_step(prepared.ckpt_dir))
    restored = _restore(prepared, target, (*extra,))
    if restored is None:
        prepared.states = init(agent, keys, hparams, schedule.hparams_axis, data)
    else:
        prepared.states, prepared.start, prepared.diverged = restored
    return prepared


def _check_memory(agent, target, num_seeds: int, saves: bool, final: Final, data) -> None:
    """Refuse a run whose learner state, or that state with what it allocates beside it (each
    update's rollouts, the final evaluation's episodes), does not fit in the memory of this
    process's devices: the sizes that grow with the environments, their steps per update and
    the evaluation episodes, checked before anything is compiled."""
    devices = driver.run_devices(num_seeds)
    state = footprint.tree_bytes(target)
    need, what = state, f"{agent.name}: the learner state of {counted(num_seeds, 'run')}"
    if saves and devices[0].platform == "cpu":
        # A checkpoint is saved from (and restored through) a host copy of the whole state: on
        # a CPU, in the same memory as the state.
        need, what = 2 * need, f"{what} with its checkpoint copy"
    footprint.check_fits(need, what, hint="use fewer seeds or a smaller buffer", devices=devices)
    if data is None:  # an online agent: each update collects its env steps (at least)
        steps = agent.env_steps_per_update
        rollouts = num_seeds * steps * transition_bytes(agent.env, agent.env_params)
        what = (
            f"{agent.name}: {counted(num_seeds, 'run')} with each update's rollout of "
            f"{counted(steps, 'env step')} (observations included) beside the learner state"
        )
        hint = "use fewer environments or steps per update (or fewer seeds)"
        footprint.check_fits(state + rollouts, what, hint=hint, devices=devices)
    check_evaluation(agent, num_seeds, final.eval_episodes, beside=state)


def _restore(run: Prepared, target, extra: tuple) -> tuple[Any, int, list | None] | None:
    """`(states, update, diverged)` of a resume's last complete checkpoint (`diverged`: the
    update each run diverged at, None where none had), or None where the run starts
    afresh (not a resume, or a resume that saved no complete checkpoint yet); refused where the
    checkpoint does not match the run, or a new run's directory holds one."""
    ckpt_dir, final_path = run.ckpt_dir, run.final_path
    num_updates, out_dir = run.schedule.num_updates, run.output.out_dir
    # A resumed run that saved no complete checkpoint yet (none, or only the temporary folder of
    # a save that was cut short) starts again; restore refuses a corrupt or foreign one.
    latest = None if ckpt_dir is None else checkpoint.latest_step(ckpt_dir)
    if not run.output.resume or latest is None:
        if latest is not None:  # (not a resume: that restores it)
            raise FileExistsError(
                f"{ckpt_dir} already holds checkpoints; resume the run or use another out_dir"
            )
        if not run.output.resume and final_path is not None and final_path.exists():
            raise FileExistsError(f"{final_path} exists; use another out_dir")
        return None
    expect = {k: run.metadata[k] for k in ("algo", "env", "num_seeds", "config", "hparams", *extra)}
    states, saved = checkpoint.restore(ckpt_dir, target, expect=expect)
    unmatched = sorted(set(saved) - set(run.metadata) - {"update", "env_steps", "diverged"})
    if unmatched:
        raise checkpoint.CheckpointError(
            f"checkpoint {ckpt_dir} was saved with metadata "
            f"{ {k: saved[k] for k in unmatched} }; the resume must present the same "
            "(pass it in metadata=)"
        )
    states = driver.shard_runs(states, run.schedule.num_seeds)  # init places a new run's
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
    return states, start, saved.get("diverged")


def train_chunks(run: Prepared, callbacks: Callbacks) -> Trained:
    """Run the chunks from `run.start` to the end: every chunk length compiled first, then per
    chunk the callbacks, the metrics rows, a checkpoint and the progress bar."""
    agent, hparams, data = run.agent, run.hparams, run.data
    num_seeds, hparams_axis = run.schedule.num_seeds, run.schedule.hparams_axis
    num_updates, chunk_updates = run.schedule.num_updates, run.schedule.chunk_updates
    start, states, output = run.start, run.states, run.output
    logger = None
    if output.out_dir is not None and is_main():  # several processes: process 0 writes files
        resume_step = start * agent.env_steps_per_update if output.resume else None
        options = output.logger_options or {}
        logger = MetricsLogger(output.out_dir, resume_from_step=resume_step, **options)
    steps_per_update = agent.env_steps_per_update
    divergence = Divergence.start(num_seeds, run.diverged, steps_per_update, run.schedule)
    loop = _Loop(run, callbacks, logger, divergence, finite_check(agent.trainable), start)
    wall_start = time.perf_counter()
    # Every chunk length this call runs (the last chunk may be shorter) is compiled before the
    # first chunk, so that the chunks' times, and the rate in the summary, hold no compilation.
    chunk_lengths = {
        min(chunk_updates, num_updates - u) for u in range(start, num_updates, chunk_updates)
    }
    # Ctrl-C while compiling is a request too: Python would raise it wherever the interpreter
    # next runs Python code, a weakref finaliser of XLA's included, which drops it (the run then
    # went on to its end). The run stops before its first chunk.
    with StopRequest() as stop:
        lengths = counted(len(chunk_lengths), "length")
        _say(output, f"compiling the chunks ({lengths} of updates)...")
        if chunk_lengths:  # (none left where a resume continues after the last checkpoint)
            states = steady_layout(
                run.run, agent, states, hparams, min(chunk_lengths), hparams_axis, data
            )
        compiled = {
            n: run.run.lower(agent, states, hparams, n, hparams_axis, data).compile()
            for n in sorted(chunk_lengths)
        }
        compile_seconds = time.perf_counter() - wall_start
        total, done = num_updates * steps_per_update, start * steps_per_update
        with Progress(output.progress and is_main(), total, done, num_seeds) as bar:
            try:
                if stop.requested and loop.update < num_updates:
                    raise KeyboardInterrupt
                while loop.update < num_updates:
                    n = min(chunk_updates, num_updates - loop.update)
                    states = loop.chunk(compiled[n], states, n, bar)
                    if stop.requested and loop.update < num_updates:
                        raise KeyboardInterrupt
            except KeyboardInterrupt:  # Ctrl-C: said in one line by whoever started the run
                raise Interrupted(loop.where()) from None
            except WriteError as error:  # a full disk: the same, with the cause
                error.where = loop.where()
                raise
    wall_seconds = time.perf_counter() - wall_start
    if logger is not None:
        logger.close()
    return Trained(states, loop.collected, wall_seconds, compile_seconds, divergence)


@dataclasses.dataclass
class _Loop:
    """The chunk loop: where it is (`update`), and the chunks' metrics it has collected."""

    run: Prepared
    callbacks: Callbacks
    logger: MetricsLogger | None
    divergence: Divergence
    finite: Callable  # `finite_check(agent.trainable)`
    update: int
    collected: dict = dataclasses.field(default_factory=dict)

    def chunk(self, compiled, states, n: int, bar) -> Any:
        """Run one chunk of `n` updates from `states`, then its callbacks, metrics rows,
        checkpoint and progress; returns the states the next chunk starts from."""
        run, callbacks = self.run, self.callbacks
        steps_per_update = run.agent.env_steps_per_update
        states, metrics = compiled(states, run.hparams, run.data)
        metrics = to_host(metrics)  # from every process, where the runs span several
        metrics = self.divergence.observe(to_host(self.finite(states)), metrics, self.update + 1)
        self.update += n
        update = self.update
        if callbacks.between_chunks is not None and update < run.schedule.num_updates:
            changed = callbacks.between_chunks(states, metrics, update)
            # Placed as the chunk left them: the compiled chunk takes that layout only.
            states = jax.tree.map(lambda new, old: place(new, old.sharding), changed, states)
        if self.logger is not None:
            self.logger.log((np.arange(update - n, update) + 1) * steps_per_update, metrics)
        if run.ckpt_dir is not None:
            saved = {**run.metadata, "update": update, "env_steps": update * steps_per_update}
            if self.divergence.any:
                saved["diverged"] = list(self.divergence.at)
            checkpoint.save(run.ckpt_dir, update, states, saved)
        # The divergence column starts with the first run that diverged: none before.
        earlier = [np.zeros_like(v) for v in next(iter(self.collected.values()), [])]
        for name, value in metrics.items():
            self.collected.setdefault(name, earlier if name == DIVERGED else []).append(value)
        bar.advance(update * steps_per_update, metrics.get("charts/episodic_return"))
        if callbacks.on_chunk is not None:
            callbacks.on_chunk(update, metrics)
        return states

    def where(self) -> Where:
        ckpt_dir = self.run.ckpt_dir
        latest = None if ckpt_dir is None else checkpoint.latest_step(ckpt_dir)
        out_dir = self.run.output.out_dir
        out_dir = None if out_dir is None else pathlib.Path(out_dir)
        return Where(self.update, self.run.schedule.num_updates, latest, out_dir)


def _say(output: Output, text: str) -> None:
    """A line on stderr, where the run shows its progress (process 0), before what takes a while
    and shows nothing: compiling, the final evaluation."""
    if output.progress and is_main():
        print(f"rlsuite: {text}", file=sys.stderr, flush=True)


def finish(run: Prepared, trained: Trained, final: Final) -> FitResult:
    """Evaluate every run's policy and write the summary (`final.json`, process 0)."""
    agent, schedule = run.agent, run.schedule
    _say(run.output, f"evaluating {counted(final.eval_episodes, 'episode')} of each run...")
    eval_returns, trials = evaluate_policies(
        agent, trained.states, run.key_eval, final.eval_episodes, seeds=schedule.seeds_per_config
    )
    steps_per_update = agent.env_steps_per_update
    steps_run = (schedule.num_updates - run.start) * steps_per_update
    unit = step_unit(run.data)
    wall_seconds, compile_seconds = trained.wall_seconds, trained.compile_seconds
    summary = {
        "algo": agent.name,
        "env": run.output.env_name,
        "num_seeds": schedule.num_seeds,
        unit: schedule.num_updates * steps_per_update,
        f"{unit}_this_call": steps_run,
        "wall_seconds": round(wall_seconds, 3),
        "compile_seconds": round(compile_seconds, 3),
        f"{unit}_per_second": round(
            steps_run * schedule.num_seeds / max(wall_seconds - compile_seconds, 1e-9)
        ),
        "eval_episodes": final.eval_episodes,
        **eval_summary(eval_returns, final.reference_returns),
        **trials,
    }
    summary = trained.divergence.summarize(summary)
    if run.final_path is not None and run.output.out_dir is not None and is_main():
        write_json(run.final_path, summary)
    metrics = {k: np.concatenate(v, axis=1) for k, v in trained.collected.items()}
    return FitResult(trained.states, metrics, eval_returns, summary)


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
