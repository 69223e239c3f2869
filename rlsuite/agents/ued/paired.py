"""PAIRED (Dennis et al. 2020, arXiv:2012.02096): an adversary learns to build levels on which a
protagonist does worse than an antagonist (`rlsuite train ued --curriculum paired --env maze`).

Three PPO agents: the protagonist (`PAIREDState.student`, the agent that acts) and the antagonist,
students of the same configuration, and the adversary, a PPO agent on the environment's level
editor (`Levels.editor`) whose episode builds one level. One update: the adversary builds
`num_envs` levels, the protagonist and the antagonist each play and learn on them
(`student.play_and_learn`), and the adversary learns from the regret estimate `max(antagonist
returns) - mean(protagonist returns)` per level (`level_scores.paired_regret`; 0 where either
finished no episode), its reward at the editing episode's last step. No level buffer: PAIRED is
not a `Curriculum` but another algorithm, with a state of its own.

PAIRED is reached as a curriculum's name (`UEDConfig(curriculum="paired")`, `ued.make`), its
agent named `ued` like the curricula's. A checkpoint written when PAIRED kept UED's state (with
a buffer it never used) restores into this state: its leaves are those of the same paths
(`rlsuite.loop.checkpoint.restore`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents import ppo
from rlsuite.agents.ued.student import (
    UEDConfig,
    UEDHparams,
    agent_of,
    play,
    play_and_learn,
    prepare_student,
)
from rlsuite.environment import Environment
from rlsuite.environment.levels import Levels
from rlsuite.loop.agent import Agent
from rlsuite.loop.rollout import reset_batch
from rlsuite.ops import level_scores


@struct.dataclass
class PAIREDState:
    student: ppo.PPOState  # the protagonist
    levels: Any  # [num_envs] the levels the adversary built last
    key: jax.Array
    antagonist: ppo.PPOState  # a second student
    adversary: ppo.PPOState  # the level builder, on the editor


class PAIREDSetup(struct.PyTreeNode):
    config: UEDConfig = struct.field(pytree_node=False)
    student: ppo.PPOSetup = struct.field(pytree_node=False)  # the protagonist's and antagonist's
    levels: Levels = struct.field(pytree_node=False)
    adversary: ppo.PPOSetup = struct.field(pytree_node=False)


def init(setup: PAIREDSetup, key: jax.Array, hp: UEDHparams) -> PAIREDState:
    """The three agents, the students' environments on random levels (one each)."""
    key, key_student, key_levels = jax.random.split(key, 3)
    student = ppo.init(setup.student, key_student, hp)
    levels = jax.vmap(setup.levels.generate)(jax.random.split(key_levels, setup.config.num_envs))
    student = student.replace(env=play(setup, student, levels, key_levels))
    key_antagonist, key_adversary = jax.random.split(key_student)
    antagonist = ppo.init(setup.student, key_antagonist, hp)
    antagonist = antagonist.replace(env=play(setup, antagonist, levels, key_levels))
    adversary = ppo.init(setup.adversary, key_adversary, hp)
    return PAIREDState(student, levels, key, antagonist, adversary)


def build_levels(setup: PAIREDSetup, adversary: ppo.PPOState, key):
    """The adversary's editing episodes from fresh editors (one per level, with `key`): the
    editors after them, the adversary with them, its rollout and the levels built."""
    num_envs = setup.config.num_envs
    editing = reset_batch(setup.adversary.env, setup.adversary.env_params, key, num_envs)
    editing = editing._replace(carry=ppo.initial_carry(setup.adversary, adversary, num_envs))
    adversary = adversary.replace(env=editing)
    key_next, key_collect, key_learn = jax.random.split(adversary.key, 3)
    edited, tr = ppo.collect(setup.adversary, adversary, key_collect)
    levels = jax.tree.map(lambda x: x[-1], tr.info["level"])  # each episode's last step
    return adversary, edited, tr, levels, (key_learn, key_next)


def update(setup: PAIREDSetup, state: PAIREDState, hp: UEDHparams):
    """One PAIRED update (see the module docstring)."""
    key, key_editor, key_protagonist, key_antagonist = jax.random.split(state.key, 4)
    adversary, edited, tr, levels, keys = build_levels(setup, state.adversary, key_editor)
    protagonist, played, metrics = play_and_learn(setup, state.student, levels, key_protagonist, hp)
    antagonist, rival, _ = play_and_learn(setup, state.antagonist, levels, key_antagonist, hp)
    p, a = played.transitions, rival.transitions
    regret = level_scores.paired_regret(
        p.terminated | p.truncated, p.reward, a.terminated | a.truncated, a.reward,
        clip=setup.config.regret_clip,
    )  # fmt: skip
    regret = jnp.nan_to_num(regret)
    tr = tr._replace(reward=tr.reward.at[-1].set(regret))
    exp = ppo.experience_of(setup.adversary, adversary, edited, tr, hp)
    start = adversary.env.carry
    adversary, built = ppo.learn_from(setup.adversary, adversary, exp, start, *keys, hp)

    state = PAIREDState(protagonist, levels, key, antagonist, adversary)
    metrics["ued/regret"] = jnp.mean(regret)
    metrics["ued/solved"] = jnp.mean(jnp.any(p.reward > 0, axis=0))
    metrics["ued/antagonist_solved"] = jnp.mean(jnp.any(a.reward > 0, axis=0))
    metrics["ued/walls"] = jnp.mean(jnp.sum(levels.wall_map, axis=(-2, -1)))
    metrics["ued/adversary_value_loss"] = built["losses/value_loss"]
    return state, metrics


def make(
    config: UEDConfig,
    env: Environment,
    env_params=None,
    levels: Levels | None = None,
    **variants,
) -> Agent:
    """PAIRED on `env`, whose levels and editor come from `levels` (default: the environment's
    own, `env.levels()`); `variants` are `ppo.make`'s, for the students."""
    student, levels = prepare_student(config, env, env_params, levels, **variants)
    if levels.editor is None:
        raise ValueError(
            f"ued: curriculum='paired' needs a level editor for the adversary "
            f"(Levels.editor); {env.name}'s levels have none"
        )
    editor = levels.editor()
    adversary_config = dataclasses.replace(config, num_steps=editor.episode_length)
    adversary = ppo.prepare(adversary_config, editor, editor.default_params)
    setup = PAIREDSetup(config, student, levels, adversary)
    return agent_of(setup, init, update, trainable)


def trainable(state: PAIREDState):
    """The three agents' parameters and optimiser states."""
    return tuple(ppo.trainable(s) for s in (state.student, state.antagonist, state.adversary))
