"""Value heads: what a value-based agent's network predicts for each action and how it learns
it, as a record of parts that DQN's learner (`rlsuite.agents.dqn`) is given. One loop, one
replay, one exploration schedule; the head alone differs.

    SCALAR                               # DQN: a value per action, the TD target of `dqn.make`
    categorical(num_atoms, v_min, v_max) # C51 (Bellemare et al. 2017, arXiv:1707.06887)
    quantile(num_quantiles, kappa)       # QR-DQN (Dabney et al. 2017, arXiv:1710.10044)
    implicit(num_taus, num_target_taus, num_policy_taus, embedding_size, kappa)
                                         # IQN (Dabney et al. 2018, arXiv:1806.06923)

A distributional head acts on the expected value of each action's distribution, as DQN acts on
its value (epsilon-greedy, action masks and all), and bootstraps from the distribution at the
next state's best legal action: that of the online network's expected values with `double`
(Rainbow's and Dopamine's choice), else the target network's. The replay item's discount is
`gamma^n (1 - terminated)` (docs/design.md section 3), so a terminated step's target is its
n-step reward alone, a truncated one bootstraps like any other, and n-step returns need nothing
of the head. The math is `rlsuite.ops.distributional`'s.

IQN's acting and its choice of the bootstrap action read the mean of `num_policy_taus`
quantiles at the fixed midpoints `(2i + 1) / 2K` (a deterministic estimate of the mean, so a
greedy evaluation is a function of the parameters), where Dopamine's samples those fractions
each time; its losses sample theirs, `num_taus` per item for the prediction and
`num_target_taus` for the target, independently per item.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.environment import masks
from rlsuite.networks import QNetwork
from rlsuite.networks.distributional import AtomQNetwork, ImplicitQuantileNetwork
from rlsuite.ops import distributional, losses


class ValueHead(NamedTuple):
    """A value head, given to `dqn.make(..., head=)`; `nets` is DQN's `Nets` (its `q` the module
    `network` built, its `config` the agent's), `learner` its state, `batch` a replay batch.

    name: the agent's name (`Agent.name`, the registry's).
    network: `(config, num_actions, encoder) -> flax module` of the head's outputs.
    values: `(module, params, obs, key=None) -> [..., A]`, the expected value of each action:
        what acting and the choice of the bootstrap action read (`key`: a noisy network's draw,
        `noise`; None: its mean).
    target: `(nets, learner, batch, key) -> targets`, held constant by the loss.
    loss: `(nets, params, batch, targets, key) -> (loss [], value of the taken action [B], loss
        of each item [B])`; `loss` the items' mean, weighted by the batch's importance weights
        where it has them (`batch_loss`); an item's loss is its priority in a prioritized replay.
    """

    name: str
    network: Callable
    values: Callable
    target: Callable
    loss: Callable


def taken(outputs: jax.Array, action: jax.Array) -> jax.Array:
    """The outputs of the taken `action [B]`: `[B, A, ...] -> [B, ...]`."""
    index = action.astype(jnp.int32).reshape(action.shape + (1,) * (outputs.ndim - 1))
    return jnp.take_along_axis(outputs, index, axis=1)[:, 0]


def batch_loss(batch: dict, per_item: jax.Array, mean: jax.Array | None = None) -> jax.Array:
    """The loss of a batch from its items' `per_item [B]`: their `mean` (computed from them where
    None), or, where the batch carries importance weights (`weight [B]`, a prioritized replay's),
    the mean of the weighted items."""
    weight = batch.get("weight")
    if weight is not None:
        return jnp.mean(jax.lax.stop_gradient(weight) * per_item)
    return jnp.mean(per_item) if mean is None else mean


def noise(nets: Any, key: jax.Array | None, stream: int) -> jax.Array | None:
    """The key of a noisy network's draw number `stream` of a step whose key is `key`, or None
    (the network's mean) where `config.noisy` is off or there is no key."""
    if key is None or not getattr(nets.config, "noisy", False):
        return None
    return jax.random.fold_in(key, stream)


def apply(module, params, *inputs, key: jax.Array | None = None):
    """`module.apply(params, *inputs)`, its noisy layers drawing from `key` where one is given."""
    if key is None:
        return module.apply(params, *inputs)
    return module.apply(params, *inputs, rngs={"noise": key})


def next_action(nets: Any, learner: Any, batch: dict, key: jax.Array | None = None) -> jax.Array:
    """The action bootstrapped from at each next state `[B]`: the greedy legal one of the online
    network's expected values with `config.double`, else of the target network's (a noisy
    network's drawn from `key`)."""
    params = learner.q if nets.config.double else learner.target_q
    values = nets.head.values(nets.q, params, batch["next_obs"], noise(nets, key, 1))
    return jnp.argmax(masks.for_max(values, batch.get("next_action_mask")), axis=-1)


# ------------------------------------------------------------------------------- DQN's scalar
def _scalar_network(config, num_actions, encoder):
    if config.noisy:  # one value per action, from noisy layers
        return AtomQNetwork(
            config.hidden_sizes, num_actions, None, config.activation, config.dueling, encoder,
            noisy=True,
        )  # fmt: skip
    return QNetwork(
        config.hidden_sizes,
        num_actions,
        config.activation,
        config.dueling,
        encoder,
        kernel_init=config.init,
    )


def _scalar_values(module, params, obs, key=None):
    return apply(module, params, obs, key=key)


def _scalar_target(nets, learner, batch, key):
    """`nets.target` (DQN's `target=`) on the next states' legal values."""
    mask = batch.get("next_action_mask")
    next_obs = batch["next_obs"]
    next_target = apply(nets.q, learner.target_q, next_obs, key=noise(nets, key, 2))
    next_target = masks.for_max(next_target, mask)
    next_online = None
    if nets.config.double:
        next_online = apply(nets.q, learner.q, next_obs, key=noise(nets, key, 1))
        next_online = masks.for_max(next_online, mask)
    return nets.target(batch["reward"], batch["discount"], next_target, next_online)


def _scalar_loss(nets, params, batch, y, key):
    value = taken(apply(nets.q, params, batch["obs"], key=noise(nets, key, 3)), batch["action"])
    per_item = losses.td_errors_loss(value, y, nets.config.loss)
    loss = batch_loss(batch, per_item, losses.td_loss(value, y, nets.config.loss))
    return loss, value, per_item


SCALAR = ValueHead("dqn", _scalar_network, _scalar_values, _scalar_target, _scalar_loss)
"""DQN's head: a value per action, learned by `config.loss` on `dqn.make`'s `target`."""


# --------------------------------------------------------------------------------------- C51
def _atom_network(num_atoms, config, num_actions, encoder):
    return AtomQNetwork(
        config.hidden_sizes,
        num_actions,
        num_atoms,
        config.activation,
        config.dueling,
        encoder,
        kernel_init=config.init,
        noisy=config.noisy,
    )


def _categorical_values(atoms, module, params, obs, key=None):
    logits = apply(module, params, obs, key=key)
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)


def _categorical_target(atoms, nets, learner, batch, key):
    logits = apply(nets.q, learner.target_q, batch["next_obs"], key=noise(nets, key, 2))
    logits = taken(logits, next_action(nets, learner, batch, key))
    probs = jax.nn.softmax(logits, axis=-1)
    return distributional.categorical_target(batch["reward"], batch["discount"], probs, atoms)


def _categorical_loss(atoms, nets, params, batch, target, key):
    logits = taken(apply(nets.q, params, batch["obs"], key=noise(nets, key, 3)), batch["action"])
    value = jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)
    per_item = distributional.categorical_loss(logits, target)
    return batch_loss(batch, per_item), value, per_item


def categorical(num_atoms: int, v_min: float, v_max: float, name: str = "c51") -> ValueHead:
    """C51's head: a softmax over `num_atoms` fixed atoms from `v_min` to `v_max` per action,
    learned by the cross-entropy to the projected target distribution."""
    atoms = distributional.support(num_atoms, v_min, v_max)
    return ValueHead(
        name,
        functools.partial(_atom_network, num_atoms),
        functools.partial(_categorical_values, atoms),
        functools.partial(_categorical_target, atoms),
        functools.partial(_categorical_loss, atoms),
    )


# ------------------------------------------------------------------------------------ QR-DQN
def _quantile_values(module, params, obs, key=None):
    return apply(module, params, obs, key=key).mean(axis=-1)


def _bootstrapped(batch, next_quantiles):
    """`r + discount * z'` per sample of the next distribution, held constant: `[B, M]`."""
    reward, discount = batch["reward"][:, None], batch["discount"][:, None]
    return jax.lax.stop_gradient(reward + discount * next_quantiles)


def _quantile_target(nets, learner, batch, key):
    quantiles = apply(nets.q, learner.target_q, batch["next_obs"], key=noise(nets, key, 2))
    return _bootstrapped(batch, taken(quantiles, next_action(nets, learner, batch, key)))


def _quantile_loss(kappa, nets, params, batch, target, key):
    quantiles = apply(nets.q, params, batch["obs"], key=noise(nets, key, 3))
    quantiles = taken(quantiles, batch["action"])
    taus = distributional.quantile_midpoints(quantiles.shape[-1])
    per_item = distributional.quantile_huber_loss(quantiles, taus, target, kappa)
    return batch_loss(batch, per_item), quantiles.mean(axis=-1), per_item


def quantile(num_quantiles: int, kappa: float = 1.0, name: str = "qrdqn") -> ValueHead:
    """QR-DQN's head: `num_quantiles` quantiles per action at the fixed midpoint fractions,
    learned by the quantile Huber loss (`kappa`; 0: the plain quantile loss) against the
    target's quantiles at the next state."""
    return ValueHead(
        name,
        functools.partial(_atom_network, num_quantiles),
        _quantile_values,
        _quantile_target,
        functools.partial(_quantile_loss, kappa),
    )


# --------------------------------------------------------------------------------------- IQN
class ImplicitSizes(NamedTuple):
    """IQN's sample sizes (Dopamine's N, N', K) and its fraction embedding's width."""

    num_taus: int = 64
    num_target_taus: int = 64
    num_policy_taus: int = 32
    embedding_size: int = 64


def _implicit_network(sizes, config, num_actions, encoder):
    for field in ("dueling", "noisy"):
        if getattr(config, field):
            name = type(config).__name__
            raise ValueError(f"{name}.{field}=True: IQN's head has no {field} form here")
    return ImplicitQuantileNetwork(
        config.hidden_sizes,
        num_actions,
        sizes.embedding_size,
        config.activation,
        encoder,
        kernel_init=config.init,
    )


def _implicit_values(sizes, module, params, obs, key=None):
    taus = distributional.quantile_midpoints(sizes.num_policy_taus)
    return module.apply(params, obs, taus).mean(axis=-1)


def _implicit_target(sizes, nets, learner, batch, key):
    taus = jax.random.uniform(key, (batch["reward"].shape[0], sizes.num_target_taus))
    quantiles = nets.q.apply(learner.target_q, batch["next_obs"], taus)
    return _bootstrapped(batch, taken(quantiles, next_action(nets, learner, batch)))


def _implicit_loss(sizes, kappa, nets, params, batch, target, key):
    # a key of its own: the target's fractions come from `key` itself
    taus = jax.random.uniform(jax.random.fold_in(key, 1), (target.shape[0], sizes.num_taus))
    quantiles = taken(nets.q.apply(params, batch["obs"], taus), batch["action"])
    per_item = distributional.quantile_huber_loss(quantiles, taus, target, kappa)
    return batch_loss(batch, per_item), quantiles.mean(axis=-1), per_item


IMPLICIT_SIZES = ImplicitSizes()


def implicit(sizes: ImplicitSizes = IMPLICIT_SIZES, kappa: float = 1.0, name: str = "iqn"):
    """IQN's head: quantiles at fractions drawn uniformly per item (`sizes`), through the
    fraction embedding, learned by the quantile Huber loss at those fractions (`kappa`)."""
    return ValueHead(
        name,
        functools.partial(_implicit_network, sizes),
        functools.partial(_implicit_values, sizes),
        functools.partial(_implicit_target, sizes),
        functools.partial(_implicit_loss, sizes, kappa),
    )
