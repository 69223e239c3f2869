"""The suite's device mesh: two axes, `runs` x `envs` (docs/scaling.md).

`RUNS` spreads independent runs (seeds, hyperparameter sets) over devices: each device trains its
share and nothing crosses devices. `ENVS` splits one run's environment batch, replay buffer and
minibatches over devices (`rlsuite.ops.sharding.split_envs`) and keeps the parameters whole on
each; its gradients are summed across the devices once per gradient step.

    mesh = make_mesh(runs=2, envs=4)          # 8 devices: 2 groups of 4, one run's envs per group
    with jax.set_mesh(mesh):                  # the driver reads the context mesh
        states = init(agent, keys, hparams)
        states, metrics = run(agent, states, hparams, num_updates)

Without a context mesh the driver keeps its one-axis layout (`driver.run_mesh`): the runs over
the most devices that divide them. `parse_mesh` reads the CLI's `--mesh runs=2,envs=4`;
`check_mesh` refuses, before anything is compiled, a mesh the runs or the agent's batch sizes do
not fit, naming the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh

from rlsuite.ops.sharding import ENVS, split_envs

RUNS = "runs"  # the mesh axis the runs are placed on
AXES = (RUNS, ENVS)


class Split(NamedTuple):
    """A batch an agent splits over the `ENVS` devices (`Agent.env_split`), declared by its family:
    `size` must be a multiple of their count. `what` names it in the error (`PPOConfig.num_envs=6`)
    and `advice` says how to mend it (`{envs}` is replaced by the count)."""

    size: int
    what: str
    advice: str


def field_splits(config: Any, *fields: str) -> tuple[Split, ...]:
    """The integer `fields` of `config` (its parallel environments, its replay batch, ...) as
    splits, named `Config.field=value`."""
    return tuple(
        Split(
            value,
            f"{type(config).__name__}.{field}={value}",
            f"make {field} a multiple of {{envs}}",
        )
        for field in fields
        for value in [getattr(config, field)]
    )


def minibatch_splits(config: Any, network: Any) -> tuple[Split, ...]:
    """An on-policy learner's splits over environments: its `num_envs`, and each minibatch of
    `config.num_minibatches` (of whole environments with memory, of steps without: the
    `network`'s `minibatch_size`, `rlsuite.networks.memory`)."""
    count = config.num_minibatches
    size = network.minibatch_size(config.num_envs, config.num_steps, count)
    owner = f"{type(config).__name__}.num_minibatches={count}"
    advice = "choose num_minibatches so that each minibatch is a multiple of it"
    return (
        *field_splits(config, "num_envs"),
        Split(size, f"the minibatch of {size} ({owner})", advice),
    )


def parse_mesh(text: str) -> dict[str, int]:
    """`"runs=2,envs=4"` as `{"runs": 2, "envs": 4}`; either axis may be left out. An axis not in
    `AXES`, a repeated axis or a size that is not an int >= 1 is a `ValueError` naming it."""
    sizes: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq:
            raise ValueError(f"--mesh: {part!r} is not axis=size (e.g. runs=2,envs=4)")
        if name not in AXES:
            raise ValueError(f"--mesh: unknown axis {name!r}; the axes are {', '.join(AXES)}")
        if name in sizes:
            raise ValueError(f"--mesh: axis {name!r} given twice")
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1 or str(size) != value.strip():
            raise ValueError(f"--mesh: {name}={value.strip()!r} must be an int >= 1")
        sizes[name] = size
    if not sizes:
        raise ValueError(f"--mesh: {text!r} names no axis; e.g. runs=2,envs=4")
    return sizes


def make_mesh(runs: int | None = None, envs: int = 1, devices: Any = None) -> Mesh:
    """The `(RUNS, ENVS)` mesh over `devices` (default: every device of every process,
    `jax.devices()`), each group of `envs` consecutive devices one run's (a GPU node's devices
    are consecutive, so a run's all-reduce stays inside a node where it can). `runs=None` takes
    every device: `len(devices) // envs` groups. The sizes must use the devices exactly."""
    devices = list(jax.devices() if devices is None else devices)
    count = len(devices)
    for name, size in ((RUNS, runs), (ENVS, envs)):
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(f"mesh: {name} must be an int >= 1, got {size!r}")
    if runs is None:
        if count % envs:
            raise ValueError(
                f"mesh: envs={envs} does not divide the {count} devices "
                f"({', '.join(sorted({d.platform for d in devices}))})"
            )
        runs = count // envs
    if runs * envs != count:
        raise ValueError(
            f"mesh: runs={runs} x envs={envs} = {runs * envs} devices, but there are {count}; "
            f"give sizes whose product is {count}"
        )
    return Mesh(np.asarray(devices, dtype=object).reshape(runs, envs), AXES)


def check_mesh(mesh: Mesh, num_runs: int, splits: Sequence[Split] = ()) -> None:
    """Refuse `mesh` where its `RUNS` size does not divide `num_runs`, or its `ENVS` size does not
    divide one of the batches the agent splits (`splits`, its `env_split`), naming the value."""
    if tuple(mesh.axis_names) != AXES:
        raise ValueError(f"mesh: axes must be {AXES}, got {tuple(mesh.axis_names)}")
    runs, envs = mesh.shape[RUNS], mesh.shape[ENVS]
    if num_runs % runs:
        raise ValueError(
            f"mesh: runs={runs} does not divide the {num_runs} runs (seeds x hparams sets); "
            f"give a number of runs that is a multiple of {runs}, or another mesh"
        )
    for split in splits if envs > 1 else ():
        if split.size % envs:
            raise ValueError(
                f"mesh: envs={envs} does not divide {split.what}; {split.advice.format(envs=envs)}"
            )


def context_mesh() -> Any:
    """The suite's mesh set by `jax.set_mesh` (inside a traced function, its abstract mesh), or
    None where no mesh is set or the one set has other axes. A mesh with one of the
    suite's axes but not both, in that order, is a `ValueError` naming its axes."""
    mesh = jax.sharding.get_abstract_mesh()
    names = tuple(mesh.axis_names)
    if names == AXES:
        try:
            return jax.sharding.get_mesh()  # the concrete mesh, outside a traced function
        except ValueError:
            return mesh
    if RUNS in names or ENVS in names:
        raise ValueError(f"mesh: the suite's mesh has the axes {AXES}, got {names} (make_mesh)")
    return None


def split_minibatch(network, minibatch: dict) -> dict:
    """`minibatch` split over a mesh's envs devices along its samples (the network's
    `sample_axis`, `rlsuite.networks.memory`: steps, or with memory environments), its starting
    carry along axis 0."""
    samples = {k: v for k, v in minibatch.items() if k != "carry"}
    samples = split_envs(samples, axis=network.sample_axis)
    return {**samples, "carry": split_envs(minibatch["carry"])}
