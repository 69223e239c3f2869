"""FixPO (Zentner, Puri, Huang and Sukhatme 2023, arXiv:2312.05405, "Guaranteed Trust Region
Optimization via Two-Phase KL Penalization"): PPO whose every update ends inside a KL trust region
around the policy that collected its rollout.

FixPO is not another learner: it is `rlsuite.agents.ppo` with its policy loss and four hooks
passed in (`ppo_hooks.Hooks`), built by `hooks`:

- the policy loss is the unclipped importance-weighted surrogate `-E[r A]`
  (`losses.importance_policy_loss`): the KL penalty, not clipping, keeps the update close;
- `penalty`: every gradient step's loss adds `beta * mean_s KL(pi_old(s) || pi(s))` over its
  minibatch, `pi_old` the policy that collected the rollout and `beta` (no gradient) the
  variant's state, kept across updates (`PPOState.variant`);
- `after_step`: after every gradient step `beta` takes one Adam step (step size
  `hparams.beta_lr`) on `L_beta = beta * (kl_target - kl_target_coef * D)`, `D` the minibatch's
  statistic of the per-state KLs before the step (`statistic`, the maximum by default): `beta`
  grows while `D > kl_target / kl_target_coef` and shrinks otherwise, never below
  `hparams.beta_min`. With `kl_target_coef > 1` the primary phase aims inside the trust region;
- `after_epochs`, the fixup phase: while some minibatch's `D` exceeds `kl_target`, rounds over
  the minibatches take one more gradient step on every minibatch that exceeds it, on the
  penalty's term alone (`ppo_hooks.Phase.penalty_step`: the KL's gradient, through the same
  optimiser, `beta` still adapting), at most `config.fixup_max_rounds` rounds.

So every update ends with `D <= kl_target` on every minibatch, unless the rounds ran out; the
metrics say it update by update: `losses/trust_region_kl` (the largest minibatch `D` after the
phase), `losses/trust_region_held` (1 where it is at most `kl_target`), `losses/fixup_steps` and
`losses/fixup_step_fraction` (the phase's gradient steps, and their share of the epochs'),
`losses/beta` (after the phase); `losses/minibatch_kl` and `losses/kl_mean` are the epochs'
steps' `D` and mean KL, before each step. `watch` measures PPO-clip's updates the same way.

    agent = fixpo.make(FixPOConfig(num_envs=8), *envs.make("cartpole"))
    rlsuite train fixpo --env pendulum

Choices, written down:

- The KL is exact, `ActionHead.kl` (for the squashed Gaussian, the Gaussians' before the tanh).
- The old policy is recomputed from the update's starting parameters on each minibatch rather
  than stored with the rollout: PPO collects and learns with the same parameters and
  observation statistics, so it is the same distribution.
- The fixup phase's minibatches are the last epoch's (`ppo_hooks.Phase.key`); a round steps on each
  minibatch that exceeds the bound at the parameters of that moment, and the phase ends when
  the largest `D` over all of them, measured after a round, is within the bound.
- The fixup steps descend the KL alone. On the whole loss, the policy gradient, which does not
  shrink near the old policy, holds the KL where `beta`'s gradient balances it; `beta` grows by
  about `beta_lr` per step, so at a large learning rate that took hundreds of rounds (CartPole,
  learning rate 0.02, `kl_target` 0.02: the first update ran out of 100 rounds at 0.078; on
  the KL alone, 7 steps).
- `beta` starts at `hparams.beta_init` and is floored at `hparams.beta_min` (our choices: 1 and
  0.01); its Adam state is kept with it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import ppo, ppo_hooks, registry
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent, derive
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints


@dataclasses.dataclass(frozen=True)
class FixPOConfig(ppo.PPOConfig):
    """`PPOConfig` and the bound on the fixup phase."""

    fixup_max_rounds: int = 100
    """most rounds over the minibatches in the fixup phase of one update (an update that needs
    more ends outside the trust region, and its losses/trust_region_held reads 0)"""

    def __post_init__(self):
        check_positive_ints(self, ("fixup_max_rounds",))
        super().__post_init__()


@struct.dataclass
class FixPOHparams(ppo.PPOHparams):
    """`PPOHparams` and the trust region's: its bound and how the penalty's weight adapts."""

    kl_target: float = 0.2
    """the trust region: each minibatch's largest KL(pi_old || pi) after every update"""
    kl_target_coef: float = 3.0
    """the primary phase aims at kl_target / kl_target_coef (beta grows above it)"""
    beta_init: float = 1.0
    """the KL penalty's weight at the start"""
    beta_lr: float = 0.01
    """Adam step size of the weight"""
    beta_min: float = 0.01
    """floor of the weight"""


def check_hparams(hp: FixPOHparams) -> None:
    """PPO's checks and the trust region's, each error naming its field."""
    if not isinstance(hp, FixPOHparams):
        raise TypeError(f"fixpo: hparams must be a FixPOHparams, got {type(hp).__name__}")
    ppo.check_hparams(hp)
    check_positive(hp, "kl_target", "kl_target_coef", "beta_lr", owner="fixpo", kind="hparams")
    check_field(hp, "beta_min", lambda v: v >= 0, "a value >= 0", "fixpo", "hparams")
    check_field(
        hp,
        "beta_init",
        lambda v: v >= hp.beta_min,
        f"a value >= beta_min ({hp.beta_min})",
        "fixpo",
        "hparams",
    )


class Penalty(NamedTuple):
    """FixPO's state across updates: the KL penalty's weight and its Adam state."""

    beta: jax.Array
    adam: optax.OptState


def _beta_optimizer() -> optax.GradientTransformation:
    return optax.scale_by_adam()


def init(hp: FixPOHparams) -> Penalty:
    beta = jnp.asarray(hp.beta_init, jnp.float32)
    return Penalty(beta, _beta_optimizer().init(beta))


def adapt(penalty: Penalty, divergence, hp: FixPOHparams) -> Penalty:
    """The weight after one Adam step on `L_beta = beta * (kl_target - kl_target_coef *
    divergence)`, floored at `beta_min`."""
    grad = hp.kl_target - hp.kl_target_coef * divergence
    direction, adam = _beta_optimizer().update(grad, penalty.adam)
    return Penalty(jnp.maximum(penalty.beta - hp.beta_lr * direction, hp.beta_min), adam)


def divergence(old_dist, dist, head, statistic: Callable = jnp.max):
    """`(KLs, stats)`: the per-state `KL(old_dist || dist)` of a minibatch (`head.kl`) and,
    without gradients, their mean (`kl_mean`) and the `statistic` the trust region bounds
    (`minibatch_kl`)."""
    kl = head.kl(old_dist, dist)
    stats = {"kl_mean": kl.mean(), "minibatch_kl": statistic(kl)}
    return kl, jax.lax.stop_gradient(stats)


def largest(phase: ppo_hooks.Phase, carry, minibatches, keys) -> jax.Array:
    """The largest `minibatch_kl` over `minibatches` at `carry`'s parameters (no step)."""

    def measure(_, xs):
        return None, phase.measure(carry, *xs)["minibatch_kl"]

    return jax.lax.scan(measure, None, (minibatches, keys))[1].max()


def hooks(config: FixPOConfig, statistic: Callable = jnp.max) -> ppo_hooks.Hooks:
    """FixPO's hooks for `config` (see the module docstring). `statistic` reduces a
    minibatch's per-state KLs to the number the trust region bounds: `jnp.max`, the paper's;
    `jnp.mean` bounds the average KL instead (TRPO's)."""
    primary = config.update_epochs * config.num_minibatches  # the epochs' gradient steps

    def penalty(state: Penalty, old_dist, dist, head, hp):
        kl, stats = divergence(old_dist, dist, head, statistic)
        return jax.lax.stop_gradient(state.beta) * kl.mean(), {**stats, "beta": state.beta}

    def after_step(state: Penalty, metrics, hp):
        return adapt(state, metrics["minibatch_kl"], hp)

    def fixup(phase: ppo_hooks.Phase):
        hp = phase.hp
        minibatches, keys = phase.split(phase.key)

        def one_round(loop):
            carry, steps, rounds, _ = loop

            def visit(inner, xs):
                carry, steps = inner
                outside = phase.measure(carry, *xs)["minibatch_kl"] > hp.kl_target
                step = phase.penalty_step
                carry = jax.lax.cond(outside, lambda c: step(c, *xs)[0], lambda c: c, carry)
                return (carry, steps + outside.astype(steps.dtype)), None

            (carry, steps), _ = jax.lax.scan(visit, (carry, steps), (minibatches, keys))
            return carry, steps, rounds + 1, largest(phase, carry, minibatches, keys)

        def going(loop):
            return (loop[3] > hp.kl_target) & (loop[2] < config.fixup_max_rounds)

        zero = jnp.zeros((), jnp.int32)
        start = (phase.carry, zero, zero, largest(phase, phase.carry, minibatches, keys))
        carry, steps, rounds, after = jax.lax.while_loop(going, one_round, start)
        return carry, {
            **held(after, hp.kl_target),
            "fixup_steps": steps.astype(jnp.float32),
            "fixup_rounds": rounds.astype(jnp.float32),
            "fixup_step_fraction": steps / primary,
            "beta": carry[2].beta,
        }

    return ppo_hooks.Hooks(init=init, penalty=penalty, after_step=after_step, after_epochs=fixup)


def held(after, kl_target) -> dict:
    """An update's trust-region metrics from the largest `minibatch_kl` after it."""
    return {
        "trust_region_kl": after,
        "trust_region_held": (after <= kl_target).astype(jnp.float32),
    }


def trust_region_summary(rows: list[dict]) -> str | None:
    """The run summary's sentence (`registry.Algorithm.summary`): whether every update of the run
    ended inside its trust region. A metric row's `losses/trust_region_held` is the share of its
    updates that did, 1 only where all did; rows without it (a diverged run's) are left out."""
    held = [
        (r["env_steps"], r["seed"], r["losses/trust_region_held"])
        for r in rows
        if isinstance(r.get("losses/trust_region_held"), float | int)
        and math.isfinite(r["losses/trust_region_held"])
    ]
    if not held:
        return None
    missed = sorted((step, seed) for step, seed, share in held if share < 1.0)
    if not missed:
        return f"trust region held after every update ({len(held)} metric rows)"
    step, seed = missed[0]
    return (
        f"trust region missed after some updates in {len(missed)} of {len(held)} metric rows "
        f"(the first at env step {step:,} of seed {seed}; losses/trust_region_held is the share "
        "of a row's updates that ended inside it): raise --fixup-max-rounds"
    )


def watch(kl_target: float = 0.2, statistic: Callable = jnp.max) -> ppo_hooks.Hooks:
    """Hooks that change nothing PPO learns and measure its trust region as FixPO's do: each
    step's `kl_mean` and `minibatch_kl` (before the step), and after the epochs
    `trust_region_kl` and `trust_region_held` (against `kl_target`) over the last epoch's
    minibatches. `ppo.make(config, env, learn_with=fixpo.watch())` is PPO-clip beside FixPO."""

    def penalty(state, old_dist, dist, head, hp):
        return 0.0, divergence(old_dist, dist, head, statistic)[1]

    def after_epochs(phase: ppo_hooks.Phase):
        minibatches, keys = phase.split(phase.key)
        return phase.carry, held(largest(phase, phase.carry, minibatches, keys), kl_target)

    return ppo_hooks.Hooks(penalty=penalty, after_epochs=after_epochs)


def make(
    config: ppo.PPOConfig,
    env: Environment,
    env_params=None,
    statistic: Callable = jnp.max,
    **variants,
) -> Agent:
    """FixPO on `env`: PPO with the importance-weighted surrogate and `hooks(statistic)`;
    `variants` are `ppo.make`'s others (`minibatches`, `network`, or another `policy_loss`)."""
    if not isinstance(config, FixPOConfig):
        raise TypeError(f"fixpo.make needs a FixPOConfig, got {type(config).__name__}")
    if "learn_with" in variants:
        raise TypeError("fixpo.make: the learning stage is FixPO's hooks; use ppo.make for another")
    variants.setdefault("policy_loss", losses.importance_policy_loss)
    agent = ppo.make(config, env, env_params, learn_with=hooks(config, statistic), **variants)
    return derive(agent, name="fixpo", default_hparams=FixPOHparams(), check_hparams=check_hparams)


# This family in the algorithm registry (`rlsuite train fixpo`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="fixpo",
        make=make,
        config_cls=FixPOConfig,
        hparams_cls=FixPOHparams,
        offline=False,
        default_env="cartpole",
        memory=True,
        summary=trust_region_summary,
    )
)
