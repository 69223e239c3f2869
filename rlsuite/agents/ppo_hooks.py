"""Hooks into PPO's learning stage for a research variant that reaches beyond one minibatch's
loss: state kept across updates, a penalty that compares the policy with the one that collected
the rollout, a step after every gradient step, and a phase after the epochs. FixPO
(`rlsuite.agents.fixpo`) is all four.

A `Hooks` value is a learning stage as `ppo.prepare(learn_with=...)` takes it (`ppo.Epochs`' two
methods), built from PPO's public steps (`ppo.forward`, `ppo.objective`, `ppo.gradient_step`,
`ppo.epochs`): `ppo.make(config, env, learn_with=Hooks(penalty=...))`. `Hooks()` adds nothing:
PPO then computes what it computes without them, bit for bit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from rlsuite.agents import ppo
from rlsuite.loop.mesh import split_minibatch


def no_state(hp) -> tuple:
    """`Hooks.init` of a variant that keeps nothing across updates."""
    return ()


class Phase(NamedTuple):
    """What `Hooks.after_epochs` is given.

    carry: `(params, opt_state, variant)` after the epochs.
    step: `(carry, minibatch, key) -> (carry, metrics)`: one gradient step as the epochs take it
        (with `Hooks.after_step`).
    penalty_step: the same step on the penalty's term alone (`Hooks.penalty`).
    measure: `(carry, minibatch, key) -> metrics`: what that step would report, without taking
        it.
    split: `key -> (minibatches, keys)`: one epoch's minibatches (stacked on a leading axis) and
        the keys their steps take (None where the policy's entropy needs none).
    key: the last epoch's key (`split(key)` gives that epoch's minibatches again), so that a
        phase takes no randomness from the epochs'.
    hp: the hyperparameters.
    """

    carry: tuple
    step: Callable
    penalty_step: Callable
    measure: Callable
    split: Callable
    key: jax.Array
    hp: Any


class Hooks(NamedTuple):
    """What a research variant adds to PPO's update besides its `policy_loss`, each a function;
    `Hooks()` adds nothing.

    init: `hp -> variant`: the variant's state, kept in `PPOState.variant` across updates.
    penalty: `(variant, old_dist, dist, head, hp) -> (loss term, stats)`, added to every gradient
        step's loss. `old_dist` is the policy that collected the rollout (the update's starting
        parameters, without a gradient) and `dist` the one being learned, both over the
        minibatch and restricted to the legal actions where there are masks; `head` is the
        policy's `ActionHead` (its `kl`, `log_prob`, ...). `stats` join the step's metrics.
        None: no term, and the old policy is not computed.
    after_step: `(variant, metrics, hp) -> variant` after every gradient step, from its metrics
        (the penalty's stats among them, taken before the step). None: the variant is kept.
    after_epochs: `Phase -> ((params, opt_state, variant), metrics)`: a phase after the epochs,
        which may take more of their gradient steps; its metrics join the update's. None: none.
    """

    init: Callable = no_state
    penalty: Callable | None = None
    after_step: Callable | None = None
    after_epochs: Callable | None = None

    def learn(self, setup: ppo.PPOSetup, state: ppo.PPOState, batch: dict, key, lr, hp):
        """PPO's epochs with the hooks (`ppo.Epochs.learn`'s contract)."""
        step = self._step(setup, state, lr, hp, penalty_only=False)
        carry, metrics = ppo.epochs(setup, state, batch, key, step)
        if self.after_epochs is None:
            return (*carry, metrics)
        weight = ppo.entropy_weight(state, hp)

        def measure(carry, minibatch, key):
            params, _, variant = carry
            minibatch = split_minibatch(setup.network, minibatch)
            return self._loss(setup, state, hp, weight, False)(params, variant, minibatch, key)[1]

        last = jax.random.split(key, setup.config.update_epochs)[-1]
        penalty_step = self._step(setup, state, lr, hp, penalty_only=True)
        split = functools.partial(ppo.epoch_minibatches, setup, batch)
        carry, phase_metrics = self.after_epochs(
            Phase(carry, step, penalty_step, measure, split, last, hp)
        )
        return (*carry, {**metrics, **phase_metrics})

    def _loss(self, setup, state, hp, weight, penalty_only: bool) -> Callable:
        """`ppo.gradient_step`'s `loss_of`: PPO's loss and the penalty against the policy of the
        state's parameters (with `penalty_only`, the loss is that term alone, the metrics all)."""

        def loss_of(params, variant, minibatch, key):
            dist, value = ppo.forward(setup, params, state.obs_stats, minibatch)
            total, metrics = ppo.objective(setup, dist, value, minibatch, key, hp, weight)
            if self.penalty is None:
                return total, metrics
            old_params = jax.lax.stop_gradient(state.params)
            old_dist, _ = ppo.forward(setup, old_params, state.obs_stats, minibatch)
            term, stats = self.penalty(variant, old_dist, dist, setup.head, hp)
            return (term if penalty_only else total + term), {**metrics, **stats}

        return loss_of

    def _step(self, setup, state, lr, hp, penalty_only: bool) -> Callable:
        """One gradient step (`ppo.gradient_step`), then `after_step` on the variant."""
        weight = ppo.entropy_weight(state, hp)
        loss_of = self._loss(setup, state, hp, weight, penalty_only)
        step = ppo.gradient_step(setup, lr, hp, loss_of)
        if self.after_step is None:
            return step

        def stepped(carry, minibatch, key):
            (params, opt_state, variant), metrics = step(carry, minibatch, key)
            return (params, opt_state, self.after_step(variant, metrics, hp)), metrics

        return stepped
