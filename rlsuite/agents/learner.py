"""What an off-policy algorithm is, apart from any loop: a `Learner` (its networks and learning
rule as pure functions), and the helpers every learner and loop shares: acting, a scan of gradient
steps, the observation encoder, Adam with a traced step size, the action-space check.

The online loop (`rlsuite.agents.off_policy`) and the offline one (`rlsuite.agents.offline`) both
drive a `Learner` through `gradient_steps`; SAC, TD3, CQL, IQL, BC, TD3+BC, CSVE and SAQ are
`Learner`s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box
from rlsuite.networks import encoder, resolve_torso, squashed_mode
from rlsuite.ops import losses
from rlsuite.ops.sharding import split_envs


class Learner(NamedTuple):
    """An off-policy algorithm's networks and learning rule, as pure functions.

    init: `(key, hparams) -> learner state`.
    explore: `(learner, obs [E, o], key) -> action [E, ...]`, the behaviour policy (in
      `[-1, 1]^a` for continuous actions); with `scheduled`, `(learner, obs, key, env_steps)`,
      where `env_steps` (`[]` int32, or None outside a loop that steps environments) is the
      environment steps taken so far, all envs together (DQN's epsilon follows them).
    greedy: `(learner, obs [..., o]) -> action`, the deterministic policy for evaluation.
    learn: `(learner, batch, key, hparams) -> (learner, metrics)`, one gradient step on a batch
      `{"obs", "action", "reward", "discount", "next_obs"}` (observations already normalised).
      With `period > 1` it also takes the keyword `phase`, the step's position in the cycle,
      `0 .. period - 1`, a static Python int.
    period: gradient steps in the learner's fixed cycle (1: none).
    scheduled: whether `explore` takes the environment steps (above).
    """

    init: Callable[[jax.Array, Any], Any]
    explore: Callable[..., jax.Array]
    greedy: Callable[[Any, jax.Array], jax.Array]
    learn: Callable[..., tuple[Any, dict]]
    period: int = 1
    scheduled: bool = False


def bind(
    nets: Any, init, explore, greedy, learn, period: int = 1, scheduled: bool = False
) -> Learner:
    """The `Learner` of an algorithm written as module-level functions over its networks: each
    takes `nets` (what they share, fixed when the learner is built) as its first argument, which
    this binds. Every learner is built through this."""
    stages = (functools.partial(f, nets) for f in (init, explore, greedy, learn))
    return Learner(*stages, period=period, scheduled=scheduled)


def sample_actor(nets: Any, learner_state, obs, key):
    """`explore` of a stochastic actor (`nets.actor`, its parameters `learner_state.actor`): a
    sample of its distribution."""
    return nets.actor.apply(learner_state.actor, obs).sample(seed=key)


def squashed_greedy(nets: Any, learner_state, obs):
    """`greedy` of a tanh-squashed Gaussian actor: `tanh(mean)`."""
    return squashed_mode(nets.actor.apply(learner_state.actor, obs))


def learner_explore(learner: Learner, learner_state, obs, key, env_steps=None, **mask):
    """`learner.explore` on a batch of observations, given the environment steps where it is
    `scheduled` (see `Learner`); `mask`: `action_mask=`, for a learner that reads masks."""
    if learner.scheduled:
        return learner.explore(learner_state, obs, key, env_steps, **mask)
    return learner.explore(learner_state, obs, key, **mask)


def learner_act(
    learner: Learner, learner_state, obs, key, deterministic: bool, env_steps=None, **mask
):
    """`learner`'s action for one observation `[o]` or a batch `[B, o]` (already normalised);
    `env_steps` as `learner_explore` takes them, and `mask` (`action_mask=`) too."""
    if deterministic:
        return learner.greedy(learner_state, obs, **mask)
    if obs.ndim == 1:
        one = {k: v[None] for k, v in mask.items()}
        return learner_explore(learner, learner_state, obs[None], key, env_steps, **one)[0]
    return learner_explore(learner, learner_state, obs, key, env_steps, **mask)


def gradient_steps(learner: Learner, learner_state, sample: Callable, keys: jax.Array, hp):
    """One gradient step of `learner` per key of `keys` `[n]`, each on the batch `sample(key)`:
    `(learner_state, metrics)` with metrics stacked `[n]`. Each step splits its key into the
    sampling and the learning key.

    The online and offline loops both learn through this, in a `lax.scan` (`over_cycles`); for
    a learner with a cycle (`period > 1`; `n` must then be a multiple of it) the scan runs over
    cycles, each unrolled so that every step gets its static `phase`.
    """

    def one(state, key, phase):
        key_sample, key_learn = jax.random.split(key)
        batch = split_envs(sample(key_sample))  # over a mesh's envs devices (docs/scaling.md)
        return learn_step(learner, state, batch, key_learn, hp, phase)

    return over_cycles(learner.period, one, learner_state, keys)


def learn_step(learner: Learner, learner_state, batch, key, hp, phase: int = 0):
    """`learner.learn` on one batch, given its static `phase` where the learner has a cycle."""
    if learner.period == 1:
        return learner.learn(learner_state, batch, key, hp)
    return learner.learn(learner_state, batch, key, hp, phase=phase)


def over_cycles(period: int, step: Callable, carry, keys: jax.Array):
    """`lax.scan` of `step(carry, key, phase) -> (carry, metrics)` over `keys` `[n]`: with
    `period` 1 over the keys (`phase` 0); else over cycles of `period` keys (`n` must be a
    multiple of it), each unrolled so that every step gets its static `phase`. `(carry,
    metrics)`, metrics stacked `[n]`."""
    if period == 1:
        return jax.lax.scan(lambda carry, key: step(carry, key, 0), carry, keys)
    num_steps = keys.shape[0]
    if num_steps % period:
        raise ValueError(f"{num_steps} gradient steps are not whole cycles of {period}")

    def cycle(carry, cycle_keys):
        metrics = []
        for phase in range(period):
            carry, step_metrics = step(carry, cycle_keys[phase], phase)
            metrics.append(step_metrics)
        return carry, jax.tree.map(lambda *x: jnp.stack(x), *metrics)

    cycles = keys.reshape(num_steps // period, period, *keys.shape[1:])  # raw keys: [n, 2]
    carry, metrics = jax.lax.scan(cycle, carry, cycles)
    return carry, jax.tree.map(lambda x: x.reshape(num_steps, *x.shape[2:]), metrics)


def obs_encoder(config: Any, obs_shape: tuple[int, ...], categories=None):
    """The `rlsuite.networks.Encoder` a learner's networks read `obs_shape` observations with
    (None for vectors), from `config.torso` (configs without one: `"auto"`); `categories`: the
    observation space's (`rlsuite.environment.spaces.categories`), ids one-hot encoded first."""
    owner = type(config).__name__
    torso = resolve_torso(getattr(config, "torso", "auto"), tuple(obs_shape), owner)
    return encoder(torso, tuple(obs_shape), categories)


def adam_init(params):
    """Adam's state for `params`; the step size is applied by `adam_step`."""
    return optax.scale_by_adam().init(params)


def adam_step(params, grads, opt_state, learning_rate):
    """One Adam step with a (traced) `learning_rate`: `(params, opt_state)`."""
    updates, opt_state = optax.scale_by_adam().update(grads, opt_state, params)
    step = jax.tree.map(lambda u: -learning_rate * u, updates)
    return optax.apply_updates(params, step), opt_state


def temperature_step(log_alpha, alpha_opt, log_prob, target_entropy, learning_rate):
    """One Adam step of the log temperature towards `target_entropy` on the policy's
    `log_prob` of its own actions (SAC's automatic temperature): `(log_alpha, alpha_opt,
    loss)`."""
    loss, grad = jax.value_and_grad(losses.temperature_loss)(log_alpha, log_prob, target_entropy)
    log_alpha, alpha_opt = adam_step(log_alpha, grad, alpha_opt, learning_rate)
    return log_alpha, alpha_opt, loss


def action_dim(env: Environment, env_params, algo: str) -> int:
    """The size of a 1-D bounded Box action space; a `TypeError` for anything else."""
    space = env.action_space(env_params)
    if isinstance(space, Box) and len(space.shape) == 1 and space.bounded:
        return space.shape[0]
    raise TypeError(
        f"{algo} handles bounded 1-D Box (continuous) action spaces; {env.name} has {space!r}"
    )
