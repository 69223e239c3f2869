"""Bernoulli bandits for meta-RL: one pull is one episode; a trial is `n` pulls of one task.

| item        | value                                                                      |
|-------------|----------------------------------------------------------------------------|
| task        | `params.probs` [k], the arms' success probabilities                        |
| observation | `zeros((1,))` float32, constant (the arms are told apart by the memory)    |
| action      | `Discrete(k)`, the arm pulled                                              |
| reward      | ~ Bernoulli(probs[action]), float32; `terminated` True after every pull    |
| info        | `regret` = max(probs) - probs[action], the expected regret of the pull     |
| samplers    | `sample_uniform`: probs ~ U[0, 1]^k (Duan et al. 2016, arXiv:1611.02779);   |
|             | `sample_paired` (k = 2): probs = [p, 1 - p] in a uniformly random order    |
|             | (gymnax's BernoulliBandit-misc), `p = params.p`                            |
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from rlsuite.envs.tasks import check_leaf_shape

from rlsuite.environment import Environment
from rlsuite.environment.meta import TaskLevels
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field


@struct.dataclass
class BanditParams:
    probs: jax.Array  # [k] float32, the task
    p: float = 0.1  # the paired distribution's setting (sample_paired)


@struct.dataclass
class BanditState:
    """A bandit has no state: every pull is a fresh one-step episode."""


class BernoulliBandit(Environment):
    """`num_arms` Bernoulli arms; every pull is a one-step episode (see the module table)."""

    max_episode_steps = 1  # every episode ends by termination, after one pull

    def __init__(self, num_arms: int = 5):
        if isinstance(num_arms, bool) or not isinstance(num_arms, int) or num_arms < 2:
            raise ValueError(
                f"BernoulliBandit: invalid num_arms={num_arms!r}; allowed: an integer >= 2"
            )
        self.num_arms = num_arms

    @property
    def default_params(self) -> BanditParams:
        """Every arm at 0.5: a placeholder; draw tasks with `sample_uniform` or `sample_paired`."""
        return BanditParams(probs=jnp.full((self.num_arms,), 0.5, jnp.float32))

    def validate_params(self, params: BanditParams) -> None:
        check_leaf_shape(params, "probs", (self.num_arms,), self.name)
        for field in ("probs", "p"):
            check_field(params, field, lambda v: (v >= 0) & (v <= 1), "values in [0, 1]", self.name)

    def reset_env(self, key: jax.Array, params: BanditParams):
        return jnp.zeros((1,), jnp.float32), BanditState()

    def step_env(self, key, state: BanditState, action, params: BanditParams):
        prob = params.probs[action]
        reward = jax.random.bernoulli(key, prob).astype(jnp.float32)
        info = {"regret": (jnp.max(params.probs) - prob).astype(jnp.float32)}
        true, false = jnp.ones((), bool), jnp.zeros((), bool)
        return jnp.zeros((1,), jnp.float32), state, reward, true, false, info

    def observation_space(self, params: BanditParams) -> Box:
        return Box(0.0, 0.0, (1,))

    def action_space(self, params: BanditParams) -> Discrete:
        return Discrete(self.num_arms)

    def trial_references(self, sample_task, params, episodes_per_trial, key) -> list:
        """Reference policies on trials of `episodes_per_trial` pulls of `sample_task`'s tasks
        (`bandit_baselines.references`; exact figures for `sample_uniform`'s)."""
        from rlsuite.envs.tasks import bandit_baselines

        if episodes_per_trial is None:
            return []
        uniform = sample_task is sample_uniform
        return bandit_baselines.references(
            sample_task, params, episodes_per_trial, key, uniform=uniform
        )

    def __repr__(self) -> str:
        return f"BernoulliBandit(num_arms={self.num_arms})"


def sample_uniform(key: jax.Array, params: BanditParams) -> BanditParams:
    """`params` with probs ~ U[0, 1]^k, k = probs.shape[-1] (Duan et al. 2016)."""
    probs = jax.random.uniform(key, jnp.shape(params.probs), jnp.float32)
    return params.replace(probs=probs)


def sample_paired(key: jax.Array, params: BanditParams) -> BanditParams:
    """`params` with probs = [p, 1 - p] or [1 - p, p], each with probability 1/2 (two arms)."""
    if jnp.shape(params.probs)[-1:] != (2,):
        raise ValueError(
            f"sample_paired: invalid params.probs of shape {jnp.shape(params.probs)}; allowed: "
            "shape (2,), the paired distribution has two arms (BernoulliBandit(num_arms=2))"
        )
    p = jnp.asarray(params.p, jnp.float32)
    pair = jnp.stack([p, 1.0 - p])
    flip = jax.random.bernoulli(key)
    return params.replace(probs=jnp.where(flip, pair[::-1], pair))


def mutate_probs(key: jax.Array, params: BanditParams, num_edits: int | jax.Array) -> BanditParams:
    """`params` after `num_edits` edits, each redrawing one arm (uniform) ~ U[0, 1]; 0 edits
    is the identity."""

    def edit(i, params):
        key_arm, key_prob = jax.random.split(jax.random.fold_in(key, i))
        arm = jax.random.randint(key_arm, (), 0, jnp.shape(params.probs)[-1])
        prob = jax.random.uniform(key_prob, (), jnp.float32)
        return params.replace(probs=params.probs.at[arm].set(prob))

    return jax.lax.fori_loop(0, num_edits, edit, params)


# Five 5-armed bandits to evaluate on, from easy to hard to tell apart.
HELD_OUT = {
    "one_good_arm": (0.9, 0.1, 0.1, 0.1, 0.1),
    "spread": (0.1, 0.3, 0.5, 0.7, 0.9),
    "two_close": (0.2, 0.55, 0.2, 0.6, 0.2),
    "all_low": (0.05, 0.1, 0.05, 0.2, 0.05),
    "all_high": (0.8, 0.85, 0.95, 0.8, 0.85),
}


def held_out_tasks() -> tuple[tuple[str, ...], BanditParams]:
    """The names of `HELD_OUT` and their params stacked `[5]` (5 arms)."""
    names = tuple(HELD_OUT)
    probs = jnp.asarray([HELD_OUT[name] for name in names], jnp.float32)
    return names, BanditParams(probs=probs, p=jnp.full((len(names),), 0.1, jnp.float32))


def tasks(num_arms: int, held_out: bool) -> TaskLevels:
    """The bandit family's tasks for a curriculum: the arms' probabilities; the held-out
    bandits where asked for (`held_out`), which need 5 arms (refused with another number)."""
    arms = len(next(iter(HELD_OUT.values())))
    if held_out and num_arms != arms:
        raise ValueError(
            f"invalid held_out=True with num_arms={num_arms}: the held-out bandits "
            f"({', '.join(HELD_OUT)}) have {arms} arms; allowed: held_out=True with "
            f"num_arms={arms}, or held_out=False"
        )
    return TaskLevels(("probs",), mutate_probs, held_out_tasks if held_out else None)
