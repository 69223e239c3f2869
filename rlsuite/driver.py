"""The training driver: one jittable `lax.scan` of `agent.update`, batched over seeds and
hyperparameters, and a host loop that runs it in chunks with checkpoints, logs and progress.

    state, metrics = train(agent, key, hparams, num_updates)          # one run, jittable
    states = init_batch(agent, keys, hparams)                         # N runs
    states, metrics = run_batch(agent, states, hparams, num_updates)  # vmapped over runs

Offline agents learn from a dataset: pass it as `data=` (a pytree of arrays, shared by every run
and never copied per run or into checkpoints); the driver then calls `agent.init(key, hparams,
data)` and `agent.update(state, hparams, data)`. The data is a traced argument, not a closure, so a
large dataset is not baked into the compiled program.

`hparams_axis=None` shares one set of hyperparameters across the runs (a seed sweep);
`hparams_axis=0` takes one set per run (a hyperparameter sweep; repeat entries for seeds).
Per-run parameters are initialised with `jax.lax.map` rather than `vmap` (a batched QR from
orthogonal initialisation can deadlock XLA on CPU; DESIGN.md section 7); everything else is vmapped.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rlsuite.agent import Agent
from rlsuite.evaluation import EvalResult, evaluate


def _init(agent: Agent, key, hparams, data):
    return agent.init(key, hparams) if data is None else agent.init(key, hparams, data)


def _update(agent: Agent, state, hparams, data):
    return agent.update(state, hparams) if data is None else agent.update(state, hparams, data)


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
    """Learner states for `len(keys)` runs, stacked on a leading axis (`lax.map`, see above)."""
    if hparams_axis is None:
        return jax.lax.map(lambda key: _init(agent, key, hparams, data), keys)
    hparams = batch_hparams(hparams, keys.shape[0])
    return jax.lax.map(lambda args: _init(agent, *args, data), (keys, hparams))


def run_batch(
    agent: Agent,
    states: Any,
    hparams: Any,
    num_updates: int,
    hparams_axis: int | None = None,
    data: Any = None,
) -> tuple[Any, dict]:
    """`run` vmapped over the leading run axis; metrics are `[num_runs, num_updates]`.

    One run is not vmapped: it runs as `run` and gains the axis after. A batch of one costs more
    than no batch (on CPU, XLA's batched matrix products are slower than plain ones), and under
    `vmap` every `lax.cond` on a per-run value computes both branches (`rlsuite.batching.cond`
    only where the runs disagree).
    """
    num_runs = jax.tree.leaves(states)[0].shape[0]
    if hparams_axis is not None:
        hparams = batch_hparams(hparams, num_runs)
    if num_runs == 1:
        if hparams_axis is not None:
            hparams = jax.tree.map(lambda x: x[0], hparams)
        state = jax.tree.map(lambda x: x[0], states)
        result = run(agent, state, hparams, num_updates, data)
        return jax.tree.map(lambda x: x[None], result)
    batched = jax.vmap(run, in_axes=(None, 0, hparams_axis, None, None))
    return batched(agent, states, hparams, num_updates, data)


def evaluate_batch(
    agent: Agent, states: Any, key: jax.Array, num_episodes: int, deterministic: bool = True
) -> EvalResult:
    """Evaluate every run's policy for `num_episodes` episodes: results are `[num_runs, E]`.

    Observation statistics are read from each state and never updated (frozen in evaluation).
    """

    def one(state, key):
        def policy(key, obs):
            return agent.act(state, obs, key, deterministic), {}

        return evaluate(agent.env, agent.env_params, policy, key, num_episodes)

    num_runs = jax.tree.leaves(states)[0].shape[0]
    return jax.vmap(one)(states, jax.random.split(key, num_runs))


def shard_runs(tree: Any, num_runs: int) -> Any:
    """Place the leading run axis of `tree` across the available devices (`jax.sharding`).

    With one device, or a run count the devices do not divide, the tree is returned unchanged;
    jitted functions then follow the placement of their inputs (no `pmap`).
    """
    devices = jax.devices()
    if len(devices) == 1 or num_runs % len(devices):
        return tree
    mesh = Mesh(np.asarray(devices), ("runs",))
    sharding = NamedSharding(mesh, PartitionSpec("runs"))
    return jax.device_put(tree, sharding)


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
