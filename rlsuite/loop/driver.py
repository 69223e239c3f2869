"""The training driver: one jittable `lax.scan` of `agent.update`, batched over seeds and
hyperparameters, and a host loop that runs it in chunks with checkpoints, logs and progress.

    state, metrics = train(agent, key, hparams, num_updates)          # one run, jittable
    states = init_batch(agent, keys, hparams)                         # N runs
    states, metrics = run_batch(agent, states, hparams, num_updates)  # vmapped over runs

Offline agents learn from a dataset: pass it as `data=` (a pytree of arrays, shared by every run
and never copied per run or into checkpoints); the driver then calls `agent.init(key, hparams,
data=data)` and `agent.update(state, hparams, data=data)`, as the agent declares in its
`extra_args` (`rlsuite.loop.agent.extra_args`). The data is a traced argument, not a closure, so a
large dataset is not baked into the compiled program.

`hparams_axis=None` shares one set of hyperparameters across the runs (a seed sweep);
`hparams_axis=0` takes one set per run (a hyperparameter sweep; repeat entries for seeds).
Per-run parameters are initialised with `jax.lax.map` rather than `vmap` (a batched QR from
orthogonal initialisation can deadlock XLA on CPU; docs/design.md section 7); everything else is
vmapped.

With several devices (GPUs, or CPU cores made devices by `rlsuite.loop.platform.use_cpu_cores()`
before the first computation), `run_batch` and `evaluate_batch` give each device an equal share of
the runs (`jax.shard_map` over a one-axis mesh, `run_mesh`): each device vmaps its share and nothing
crosses devices during training. Each device's program is the one-device program at the smaller
batch, so results agree with the one-device run to float tolerance (XLA may order a batch's sums
differently), and a given device count gives bitwise the same results every time.

One run can also be split over devices: under `jax.set_mesh(rlsuite.loop.mesh.make_mesh(runs=R,
envs=E))` each group of E devices trains its share of the runs with their environments, replay
buffers and minibatches split over the group (`rlsuite.ops.sharding.split_envs`), and one
all-reduce of the gradients per gradient step (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rlsuite.loop.agent import Agent, extra_args, policy
from rlsuite.loop.distributed import place
from rlsuite.loop.episodes import (
    EvalResult,
    LevelResult,
    TrialResult,
    evaluate,
    evaluate_levels,
    evaluate_trials,
)
from rlsuite.loop.mesh import RUNS, check_mesh, context_mesh
from rlsuite.ops.sharding import ENVS


def _init(agent: Agent, key, hparams, data):
    return agent.init(key, hparams, **extra_args(agent, data=data))


def _update(agent: Agent, state, hparams, data):
    return agent.update(state, hparams, **extra_args(agent, data=data))


def run(
    agent: Agent, state: Any, hparams: Any, num_updates: int, data: Any = None
) -> tuple[Any, dict]:
    """`num_updates` updates in one `lax.scan`; metrics gain a leading `[num_updates]` axis."""
    return jax.lax.scan(
        lambda s, _: _update(agent, s, hparams, data), state, None, length=num_updates
    )


def train(
    agent: Agent, key: jax.Array, hparams: Any, num_updates: int, data: Any = None
) -> tuple[Any, dict]:
    """Initialise and train one run: a pure, jittable function of the key and hyperparameters."""
    return run(agent, _init(agent, key, hparams, data), hparams, num_updates, data)


def init_batch(
    agent: Agent, keys: jax.Array, hparams: Any, hparams_axis: int | None = None, data: Any = None
):
    """Learner states for `len(keys)` runs, stacked on a leading axis (`lax.map`, see above)
    and placed across the devices as `run_batch` spreads them (`shard_runs`)."""
    if hparams_axis is None:
        states = jax.lax.map(lambda key: _init(agent, key, hparams, data), keys)
    else:
        hparams = batch_hparams(hparams, keys.shape[0])
        states = jax.lax.map(lambda args: _init(agent, *args, data), (keys, hparams))
    return shard_runs(states, keys.shape[0])


def run_batch(
    agent: Agent,
    states: Any,
    hparams: Any,
    num_updates: int,
    hparams_axis: int | None = None,
    data: Any = None,
) -> tuple[Any, dict]:
    """`run` vmapped over the leading run axis; metrics are `[num_runs, num_updates]`.

    Over several devices each runs its own share (`per_device`). One run (on a device) is not
    vmapped: it runs as `run` and gains the axis after. A batch of one costs more than no batch
    (on CPU, XLA's batched matrix products are slower than plain ones), and under `vmap` every
    `lax.cond` on a per-run value computes both branches (`rlsuite.ops.batching.cond` only where the
    runs disagree).
    """
    num_runs = jax.tree.leaves(states)[0].shape[0]
    if hparams_axis is not None:
        hparams = batch_hparams(hparams, num_runs)

    def local(states, hparams, data):
        return _run_local(agent, states, hparams, num_updates, hparams_axis, data)

    hparams_spec = PartitionSpec() if hparams_axis is None else PartitionSpec(RUNS)
    in_specs = (PartitionSpec(RUNS), hparams_spec, PartitionSpec())
    return per_device(local, num_runs, in_specs)(states, hparams, data)


def _run_local(agent: Agent, states, hparams, num_updates: int, hparams_axis, data):
    """`run_batch` on one device's runs (`hparams` already batched when `hparams_axis=0`)."""
    num_runs = jax.tree.leaves(states)[0].shape[0]
    if num_runs == 1:
        if hparams_axis is not None:
            hparams = jax.tree.map(lambda x: x[0], hparams)
        state = jax.tree.map(lambda x: x[0], states)
        result = run(agent, state, hparams, num_updates, data)
        return jax.tree.map(lambda x: x[None], result)
    batched = jax.vmap(run, in_axes=(None, 0, hparams_axis, None, None))
    return batched(agent, states, hparams, num_updates, data)


EVAL_STEP_CAP = 10_000  # the longest evaluation episode of an environment without a time limit


def evaluate_batch(
    agent: Agent,
    states: Any,
    key: jax.Array,
    num_episodes: int,
    deterministic: bool = True,
    max_steps: int | None = None,
    sum_info: tuple[str, ...] = (),
) -> EvalResult:
    """Evaluate every run's policy for `num_episodes` episodes: results are `[num_runs, E]`
    (`sum_info`: info keys summed per episode, `rlsuite.loop.episodes.evaluate`).

    Observation statistics are read from each state and never updated (frozen in evaluation).
    An episode runs until it ends or for `max_steps` steps (default: the environment's time
    limit, or for an environment without one, whose episodes end by termination such as the
    probes', `EVAL_STEP_CAP`; `EvalResult.finished` tells an episode cut there).
    """
    if max_steps is None:
        max_steps = getattr(agent.env, "max_episode_steps", None) or EVAL_STEP_CAP

    def one(acting, key):
        env, params = agent.env, agent.env_params
        return evaluate(env, params, acting, key, num_episodes, max_steps, sum_info=sum_info)

    return _evaluate_runs(agent, states, key, deterministic, one)


def evaluate_trials_batch(
    agent: Agent,
    states: Any,
    key: jax.Array,
    num_trials: int,
    deterministic: bool = True,
    sum_info: tuple[str, ...] = (),
) -> TrialResult:
    """`evaluate_batch` for a task family (an `RL2`-wrapped environment): every run's policy for
    `num_trials` whole trials, with each episode's return (`[num_runs, num_trials, episodes]`)
    and the `sum_info` keys summed over each trial (`rlsuite.loop.episodes.evaluate_trials`)."""

    def one(acting, key):
        return evaluate_trials(
            agent.env, agent.env_params, acting, key, num_trials, sum_info=sum_info
        )

    return _evaluate_runs(agent, states, key, deterministic, one)


def evaluate_level_trials_batch(
    agent: Agent,
    states: Any,
    key: jax.Array,
    level_params: Any,
    attempts: int,
    deterministic: bool = True,
) -> TrialResult:
    """`evaluate_trials_batch` on given tasks (a task family's held-out tasks, `GivenTask`
    params with a leading `[num_tasks]` axis): every run's policy for `attempts` whole trials on
    each, trial `i * attempts + j` on task `i`; results `[num_runs, num_tasks * attempts, ...]`.
    Each trial has the key `evaluate_levels_batch` gives the attempt it matches."""
    num = jax.tree.leaves(level_params)[0].shape[0]
    params = jax.tree.map(lambda x: jnp.repeat(x, attempts, axis=0), level_params)

    def one(acting, key, params):
        return evaluate_trials(agent.env, params, acting, key, num * attempts, params_axis=0)

    return _evaluate_runs(agent, states, key, deterministic, one, params)


def evaluate_levels_batch(
    agent: Agent,
    states: Any,
    key: jax.Array,
    level_params: Any,
    attempts: int,
    deterministic: bool = True,
    max_steps: int | None = None,
) -> LevelResult:
    """`evaluate_batch` on given levels (UED's held-out mazes): every run's policy for
    `attempts` episodes on each level of `level_params` (the environment's params with a leading
    `[num_levels]` axis, `rlsuite.loop.episodes.evaluate_levels`); results are
    `[num_runs, num_levels, attempts]`. `max_steps` defaults as `evaluate_batch`'s (an episode
    still ends at the horizon its params set, e.g. the maze's `params.max_steps`)."""
    if max_steps is None:
        max_steps = getattr(agent.env, "max_episode_steps", None) or EVAL_STEP_CAP

    def one(acting, key, level_params):
        return evaluate_levels(agent.env, level_params, acting, key, attempts, max_steps)

    return _evaluate_runs(agent, states, key, deterministic, one, level_params)


def _evaluate_runs(
    agent: Agent, states: Any, key: jax.Array, deterministic: bool, evaluate_one, *shared: Any
) -> Any:
    """`evaluate_one(policy, key, *shared)` for every run's policy (`states` stacked on a leading
    run axis), each with its own key split from `key` (or `key[i]`, where `key` holds one per
    run: `run_keys`), vmapped over the runs and spread over the devices (`per_device`); `shared`
    arguments are the same for every run."""

    def one(state, key, *shared):
        return evaluate_one(policy(agent, state, deterministic), key, *shared)

    num_runs = jax.tree.leaves(states)[0].shape[0]
    per_run = key.shape == (num_runs,) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    keys = key if per_run else jax.random.split(key, num_runs)
    batched = jax.vmap(one, in_axes=(0, 0, *[None] * len(shared)))
    specs = (PartitionSpec(RUNS), PartitionSpec(RUNS), *[PartitionSpec()] * len(shared))
    return per_device(batched, num_runs, specs)(states, keys, *shared)


def run_keys(key: jax.Array, num_runs: int, seeds: int | None = None) -> jax.Array:
    """One key per run, `[num_runs]`: `jax.random.split(key, num_runs)`, or with `seeds` (which
    divides `num_runs`) the `seeds` keys of `jax.random.split(key, seeds)` repeated for each of
    `num_runs // seeds` configurations (configuration-major: run `c * seeds + s` has seed `s`'s
    key). A sweep's runs of one configuration then have the keys of a `seeds`-seed run of it
    alone, and every configuration sees the same seeds (common random numbers)."""
    if seeds is None:
        return jax.random.split(key, num_runs)
    if seeds < 1 or num_runs % seeds:
        raise ValueError(f"run_keys: seeds={seeds} must be >= 1 and divide num_runs={num_runs}")
    return jnp.tile(jax.random.split(key, seeds), num_runs // seeds)


def run_devices(num_runs: int) -> list:
    """This process's devices the runs are spread over (`run_mesh`; the default device where
    that is none), on which their memory is checked (`rlsuite.ops.footprint.check_fits`)."""
    mesh = run_mesh(num_runs)
    devices = [jax.devices()[0]] if mesh is None else list(mesh.devices.flat)
    return [d for d in devices if d.process_index == jax.process_index()]


def run_mesh(num_runs: int) -> Any:
    """The mesh the runs are spread over: the suite's context mesh (`RUNS` x `ENVS`, set with
    `jax.set_mesh(rlsuite.loop.mesh.make_mesh(...))`; its `RUNS` size must divide `num_runs`),
    else the one-axis mesh (`RUNS`) that spreads `num_runs` runs evenly: over the most devices
    whose count divides `num_runs` (all of them when it does), or None where that is one device
    (then the runs stay on the default device)."""
    mesh = context_mesh()
    if mesh is not None:
        check_mesh(mesh, num_runs)
        return mesh
    devices = jax.devices()
    count = max(d for d in range(1, len(devices) + 1) if num_runs % d == 0)
    if count == 1:
        return None
    return Mesh(np.asarray(devices[:count]), (RUNS,))


def per_device(fn: Callable, num_runs: int, in_specs: Any) -> Callable:
    """`fn` (batched over a leading run axis) applied by every device to its own runs.

    `in_specs` says per argument whether it is split over the runs (`PartitionSpec(RUNS)`) or
    given whole to every device (`PartitionSpec()`); every output is split over the runs. Where
    `run_mesh` gives no mesh, `fn` itself is returned. Inside, `fn` sees only the device's runs,
    so batch-wide decisions (`rlsuite.ops.batching.cond`) are taken per device and need no
    communication between devices.

    On a mesh whose `ENVS` axis has several devices, each group of them shares its runs: the
    runs axis is manual (each group its share) and the envs axis is left to the partitioner,
    which splits what the agent marks (`rlsuite.ops.sharding.split_envs`) over the group.
    """
    mesh = run_mesh(num_runs)
    if mesh is None:
        return fn
    split = ENVS in mesh.axis_names and mesh.shape[ENVS] > 1
    return jax.shard_map(
        fn,
        mesh=mesh,
        in_specs=in_specs,
        out_specs=PartitionSpec(RUNS),
        axis_names={RUNS} if split else set(mesh.axis_names),
        check_vma=False,
    )


def shard_runs(tree: Any, num_runs: int) -> Any:
    """Place the leading run axis of `tree` across the devices of `run_mesh(num_runs)` (a
    `device_put`; inside `jit`, a sharding constraint).

    Where that is one device (one device in all, or no count of devices above one divides the
    runs: an odd number of runs on two devices), the tree is returned unchanged. `init_batch`
    places its states; place a state made otherwise (a restored checkpoint) before passing it
    to a jitted `run_batch`: an array that was put on one device (as `mjx.put_model` does) is
    refused by a program on several.
    """
    mesh = run_mesh(num_runs)
    if mesh is None:
        return tree
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree)):
        return jax.lax.with_sharding_constraint(tree, NamedSharding(mesh, PartitionSpec(RUNS)))
    if not isinstance(mesh, Mesh):
        mesh = jax.sharding.get_mesh()  # the context mesh itself (run_mesh gave its abstract one)
    sharding = NamedSharding(mesh, PartitionSpec(RUNS))
    # A compiled program gives a zero-size leaf (SAC's n-step window at n_step=1) replicated
    # whatever was asked, so a concrete one is placed that way too: a restored state then has
    # the placement of a new run's, and the chunks' compiled programs accept each other's output.
    replicated = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda x: place(x, replicated if np.size(x) == 0 else sharding), tree)


def batch_hparams(hparams: Any, num_runs: int) -> Any:
    """Give every scalar leaf of `hparams` a leading `[num_runs]` axis; batched leaves (already
    `[num_runs]`) are kept, so `hparams.replace(learning_rate=jnp.array([...]))` is a sweep."""

    def leaf(x):
        x = jnp.asarray(x)
        if x.ndim == 0:
            return jnp.broadcast_to(x, (num_runs,))
        if x.shape[0] != num_runs:
            raise ValueError(f"batched hparams need a leading axis of {num_runs}, got {x.shape}")
        return x

    return jax.tree.map(leaf, hparams)
