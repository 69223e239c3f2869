"""Unsupervised environment design: a recurrent PPO student trained on levels that a curriculum
chooses (`rlsuite train ued --curriculum plr --env maze`).

| curriculum   | the levels the student plays                                   | learns on   |
|--------------|----------------------------------------------------------------|-------------|
| `dr`         | domain randomisation: a fresh random level every episode       | every update|
| `plr`        | Prioritized Level Replay (Jiang et al. 2021, arXiv:2010.03934): | every update|
|              | new random levels or, with `replay_prob` once the buffer is    |             |
|              | warm, levels drawn from it by score rank and staleness         |             |
| `robust_plr` | PLR learning from replays only (Jiang et al. 2021, "Replay-    | replays     |
|              | Guided Adversarial Environment Design", arXiv:2110.02439)      |             |
| `accel`      | Robust PLR whose every replay is followed by an update on      | replays     |
|              | mutations of the levels just replayed (Parker-Holder et al.    |             |
|              | 2022, arXiv:2203.01302)                                        |             |
| `paired`     | PAIRED (Dennis et al. 2020, arXiv:2012.02096): an adversary    | every update|
|              | builds the levels; protagonist and antagonist play them; the   |             |
|              | adversary's reward is the regret estimate (`ued.paired`)       |             |

`dr`, `plr`, `robust_plr` and `accel` are values of one type, `Curriculum` (`CURRICULA`): how an
update's levels are chosen (`choose`), whether the student learns from it (`learns`) and how a
level is scored (`score`). A new curriculum is a new value, named by `register_curriculum`
(`--curriculum NAME` then trains it); they live in `rlsuite.agents.ued.curricula`. PAIRED is
another algorithm, with a state of its own: an adversary learns to build the levels
(`rlsuite.agents.ued.paired`, which `make` builds for `curriculum="paired"`).

One update of `plr`, `robust_plr` and `accel` is one branch, chosen on the device: *new* (N levels
from `Levels.generate`), *replay* (N levels sampled from the buffer) or *mutate* (ACCEL: the
levels of the previous replay, each given `num_edits` edits by `Levels.mutate`). The N
environments are reset onto the branch's levels with a fresh memory and play one rollout of
`num_steps` steps, replaying their level at every episode end. Each level is scored from that
rollout (`config.score`: MaxMC, positive value loss or SFL's learnability,
`rlsuite.ops.level_scores`; or a function passed to `make`); new and mutated levels with a
finished episode are inserted into the buffer (`rlsuite.data.level_buffer`), replayed levels get
their new scores. The branch is data, not Python control flow: every update computes the three
candidate level batches (cheap beside the rollout) and selects one, and the learning step is a
`batching.gate` (under the seed `vmap`, computed where some seed learns, and selected per seed),
so one compiled update serves every branch and a vmapped batch of seeds may take different
branches. Where the curriculum does not learn on a
branch, the student's parameters and optimiser state are left bit-identical.

The student is `rlsuite.agents.ppo` with a recurrent core (`UEDConfig` is a `PPOConfig`;
`rlsuite.agents.ued.student`, which PAIRED shares), its
update taken apart as `experience -> learn_from` (`ppo.learn_from`: step size, learning batch,
epochs, absorb); the curriculum replaces nothing of it but the levels the environments hold and
whether the epochs run. The
environment provides its level functions (`rlsuite.environment.levels.Levels`, from its
`levels()`; `make(..., levels=...)` passes others). The buffer's numeric settings
(`replay_prob`, `staleness_coeff`, `temperature`, `minimum_fill`) are hyperparameters in
`UEDHparams`, so a batch of them is a `vmap` axis like the learning rate.

Choices, written down:

- DR plays a fresh level per episode (the environment's own random levels, jaxued's DR), not a
  batch of levels per update; it has no buffer.
- The branch after a replay is always *mutate* under ACCEL (jaxued); so with replay
  probability p the long-run fractions of new, replay and mutate updates are
  (1 - p) / (1 + p), p / (1 + p), p / (1 + p) (1/9, 4/9, 4/9 at p = 0.8).
- MaxMC's best return per level is a buffer extra (`max_return`), raised by every rollout on
  the level (minimax).
- The environment steps an update counts (`env_steps_per_update`, the x axis of every curve)
  are the student's, `num_envs * num_steps`; PAIRED's antagonist plays as many again and its
  adversary `num_envs * episode_length` editing steps besides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents import ppo, registry
from rlsuite.agents.ued import paired
from rlsuite.agents.ued.curricula import (
    BUILT_IN,
    CURRICULA,
    EASY_PARENTS,
    MUTATE,
    NEW,
    PAIRED,
    PARENTS,
    REPLAY,
    SCORES,
    Curriculum,
    accel_parents,
    always,
    buffer_config,
    choose_levels,
    next_branch,
    on_replay,
    register_curriculum,
    score_levels,
    unregister_curriculum,
)
from rlsuite.agents.ued.student import (
    UEDConfig,
    UEDHparams,
    act,
    agent_of,
    check_hparams,
    initial_carry,
    play,
    play_and_learn,
    prepare_student,
)
from rlsuite.data import level_buffer
from rlsuite.environment import Environment
from rlsuite.environment.levels import Levels
from rlsuite.loop.agent import Agent
from rlsuite.ops import level_scores

__all__ = [
    "BUILT_IN", "CURRICULA", "EASY_PARENTS", "MUTATE", "NEW", "PAIRED", "PARENTS", "REPLAY",
    "SCORES", "Curriculum", "UEDConfig", "UEDHparams", "UEDSetup", "UEDState", "accel_parents",
    "act", "always", "buffer_config", "check_hparams", "choose_levels", "init", "initial_carry",
    "make", "next_branch", "on_replay", "paired", "play", "play_and_learn", "register_curriculum",
    "score_levels", "unregister_curriculum", "update",
]  # fmt: skip


@struct.dataclass
class UEDState:
    student: ppo.PPOState
    buffer: level_buffer.LevelBufferState
    levels: Any  # [num_envs] the levels of the last update (ACCEL mutates them after a replay)
    scores: jax.Array  # [num_envs] their scores (NaN: no finished episode)
    branch: jax.Array  # int32: the last update's branch (NEW, REPLAY, MUTATE)
    key: jax.Array


class UEDSetup(struct.PyTreeNode):
    config: UEDConfig = struct.field(pytree_node=False)
    student: ppo.PPOSetup = struct.field(pytree_node=False)
    levels: Levels = struct.field(pytree_node=False)
    score: Callable = struct.field(pytree_node=False)
    curriculum: Curriculum = struct.field(pytree_node=False)


def init(setup: UEDSetup, key: jax.Array, hp: UEDHparams) -> UEDState:
    key, key_student, key_levels = jax.random.split(key, 3)
    student = ppo.init(setup.student, key_student, hp)
    num_envs = setup.config.num_envs
    levels = jax.vmap(setup.levels.generate)(jax.random.split(key_levels, num_envs))
    example = jax.tree.map(lambda x: x[0], levels)
    buffer = level_buffer.init(
        setup.config.buffer_capacity, example, {"max_return": jnp.float32(-jnp.inf)}
    )
    nan = jnp.full((num_envs,), jnp.nan, jnp.float32)
    state = UEDState(student, buffer, levels, nan, jnp.asarray(NEW, jnp.int32), key)
    if setup.curriculum.choose is None:
        return state  # the environments' own random levels
    # The environments hold one level each from the start.
    return state.replace(student=student.replace(env=play(setup, student, levels, key_levels)))


def update(setup: UEDSetup, state: UEDState, hp: UEDHparams) -> tuple[UEDState, dict]:
    config, curriculum = setup.config, setup.curriculum
    if curriculum.choose is None:  # the environments' own random levels: PPO's update
        student, metrics = ppo.update(setup.student, state.student, hp)
        return state.replace(student=student), metrics
    key, key_choose, key_reset = jax.random.split(state.key, 3)
    branch, levels, buffer, slots = curriculum.choose(setup, state, key_choose, hp)
    learning = curriculum.learns(branch)
    student, exp, metrics = play_and_learn(setup, state.student, levels, key_reset, hp, learning)

    tr = exp.transitions
    known = jnp.where(slots >= 0, buffer.extras["max_return"][jnp.maximum(slots, 0)], -jnp.inf)
    scores = setup.score(config, tr, exp.advantages, known)
    dones = tr.terminated | tr.truncated
    best = jnp.fmax(known, level_scores.max_return(dones, tr.reward))
    extras = {"max_return": best}
    is_replay = branch == REPLAY
    cfg = buffer_config(hp)
    inserted, _ = level_buffer.insert_batch(
        buffer, levels, scores, extras, cfg, valid=level_scores.finished(dones) & ~is_replay
    )
    updated = level_buffer.update(buffer, slots, scores, extras)
    buffer = jax.tree.map(lambda u, i: jnp.where(is_replay, u, i), updated, inserted)

    state = state.replace(
        student=student, buffer=buffer, levels=levels, scores=scores, branch=branch, key=key
    )
    metrics["ued/branch"] = branch
    metrics["ued/learned"] = learning.astype(jnp.float32)
    metrics["ued/buffer_size"] = buffer.size
    metrics["ued/mean_score"] = jnp.nanmean(scores)
    metrics["ued/solved"] = jnp.mean(jnp.any(tr.reward > 0, axis=0))
    return state, metrics


def make(
    config: UEDConfig,
    env: Environment,
    env_params=None,
    levels: Levels | None = None,
    score: Callable | None = None,
    **variants,
) -> Agent:
    """A UED student and curriculum on `env`, whose levels come from `levels` (default: the
    environment's own, `env.levels()`). `score(config, transitions, advantages, max_returns)
    -> [num_envs]` replaces the configured level score (a research variant); `variants` are
    `ppo.make`'s (`policy_loss`, `minibatches`, `network`). `curriculum="paired"` gives PAIRED's
    agent (`rlsuite.agents.ued.paired`), which scores no levels."""
    if isinstance(config, UEDConfig) and config.curriculum == PAIRED:
        if score is not None:
            raise ValueError("ued: curriculum='paired' scores no levels; it takes no score")
        return paired.make(config, env, env_params, levels, **variants)
    student, levels = prepare_student(config, env, env_params, levels, **variants)
    curriculum = CURRICULA[config.curriculum]
    if score is None:
        score = score_levels if curriculum.score is None else curriculum.score
    setup = UEDSetup(config, student, levels, score, curriculum)
    return agent_of(setup, init, update, trainable)


def trainable(state: UEDState):
    """The student's parameters and optimiser state (the level buffer's empty scores are NaN)."""
    return ppo.trainable(state.student)


# This family in the algorithm registry (`rlsuite train ued`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="ued",
        make=make,
        config_cls=UEDConfig,
        hparams_cls=UEDHparams,
        offline=False,
        default_env="maze/small",
        memory=True,
    )
)
