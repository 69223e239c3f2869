"""The UED student: its configuration (`UEDConfig`, a `PPOConfig` with the curriculum's static
choices), hyperparameters (`UEDHparams`, PPO's and the level buffer's) and how it plays and learns
on levels it is given (`play`, `play_and_learn`): what the curricula (`rlsuite.agents.ued`) and
PAIRED (`rlsuite.agents.ued.paired`) share.
"""

from __future__ import annotations

import dataclasses

import jax
from flax import struct

from rlsuite.agents import ppo
from rlsuite.agents.ued.curricula import CURRICULA, PAIRED, PARENTS, SCORES, buffer_config
from rlsuite.data import level_buffer
from rlsuite.environment import Environment
from rlsuite.environment.levels import Levels, levels_of
from rlsuite.environment.spaces import Discrete
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.rollout import reset_each


@dataclasses.dataclass(frozen=True)
class UEDConfig(ppo.PPOConfig):
    """`PPOConfig` of the student (an LSTM by default) and the curriculum's static choices."""

    curriculum: str = "plr"
    """dr, plr, robust_plr, accel or paired (or a curriculum registered with
    rlsuite.agents.ued.register_curriculum)"""
    score: str = "maxmc"
    """the level score: maxmc (MaxMC), pvl (positive value loss) or learnability (SFL)"""
    buffer_capacity: int = 4000
    """levels the buffer holds"""
    num_edits: int = 5
    """ACCEL: edits per mutated level"""
    accel_parents: str = "batch"
    """ACCEL: the levels a mutation edits: batch (every level of the last replay, jaxued) or easy
    (the EASY_PARENTS lowest-scored of them, dcd's base_levels=easy)"""
    regret_clip: bool = False
    """PAIRED: clip the regret estimate at 0 (minimax does; the paper and jaxued do not)"""
    recurrent: str | None = "lstm"
    """the student's recurrent core: lstm, gru or None (feed-forward)"""
    recurrent_size: int = 256
    """units of the recurrent core"""
    num_envs: int = 32
    """levels played at once"""
    num_steps: int = 256
    """steps per rollout"""
    num_minibatches: int = 1
    """minibatches per epoch (whole environment sequences)"""
    update_epochs: int = 5
    """passes over each rollout"""
    anneal_lr: bool = False
    """anneal the learning rate linearly to 0 over total_timesteps"""

    def __post_init__(self):
        for field, allowed in (
            ("curriculum", (*CURRICULA, PAIRED)),
            ("score", SCORES),
            ("accel_parents", PARENTS),
        ):
            value = getattr(self, field)
            if value not in allowed:
                raise ValueError(f"UEDConfig.{field}={value!r}; allowed: {', '.join(allowed)}")
        for field in ("buffer_capacity",):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"UEDConfig.{field}={value!r}; allowed: an integer >= 1")
        if isinstance(self.num_edits, bool) or not isinstance(self.num_edits, int):
            raise ValueError(f"UEDConfig.num_edits={self.num_edits!r}; allowed: an integer >= 0")
        if self.num_edits < 0:
            raise ValueError(f"UEDConfig.num_edits={self.num_edits!r}; allowed: an integer >= 0")
        super().__post_init__()


@struct.dataclass
class UEDHparams(ppo.PPOHparams):
    """The student's PPO hyperparameters and the level buffer's numeric settings (traced: a
    batch of them is a `vmap` axis). Defaults: jaxued's maze PLR (`examples/maze_plr.py`)."""

    learning_rate: float = 1e-4
    """Adam step size"""
    gamma: float = 0.995
    """discount factor"""
    gae_lambda: float = 0.98
    """GAE trace parameter"""
    ent_coef: float = 1e-3
    """weight of the entropy bonus"""
    replay_prob: float = 0.8
    """chance of a replay update once the buffer is filled to minimum_fill"""
    staleness_coeff: float = 0.3
    """weight of staleness in the replay distribution"""
    temperature: float = 0.3
    """rank prioritisation temperature (> 0)"""
    minimum_fill: float = 0.5
    """fill of the buffer (share of its capacity) below which nothing is replayed"""


def check_hparams(hp: UEDHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, UEDHparams):
        raise TypeError(f"ued: hparams must be a UEDHparams, got {type(hp).__name__}")
    ppo.check_hparams(hp)
    level_buffer.check_config(buffer_config(hp))


def prepare_student(
    config: UEDConfig, env: Environment, env_params=None, levels: Levels | None = None, **variants
) -> tuple[ppo.PPOSetup, Levels]:
    """The student's `PPOSetup` on `env` (`variants` are `ppo.make`'s) and the level functions it
    plays (default: the environment's own, `env.levels()`); a config, an environment without
    levels or an action space the student cannot take is refused by name."""
    if not isinstance(config, UEDConfig):
        raise TypeError(f"ued.make needs a UEDConfig, got {type(config).__name__}")
    if levels is None:
        levels = levels_of(env)
    if levels is None:
        raise ValueError(
            f"ued trains on an environment with levels (a levels() method giving "
            f"rlsuite.environment.levels.Levels, e.g. maze); {env.name} has none"
        )
    env_params = env.check_params(env_params)
    if not isinstance(env.action_space(env_params), Discrete):
        raise ValueError(
            f"ued: the action space of {env.name} is {env.action_space(env_params)!r}; the "
            "student takes Discrete actions"
        )
    return ppo.prepare(config, env, env_params, **variants), levels


def play(setup, student: ppo.PPOState, levels, key):
    """The student's environments reset onto `levels` (one each), with a fresh memory. `setup`:
    UED's or PAIRED's (its `student`, the student's `PPOSetup`, its `levels` and `config`)."""
    student_setup = setup.student
    params = setup.levels.params_for(student_setup.env_params, levels)
    env = reset_each(student_setup.env, params, key)
    num_envs = setup.config.num_envs
    return env._replace(carry=ppo.initial_carry(student_setup, student, num_envs))


def play_and_learn(setup, student: ppo.PPOState, levels, key, hp, learning=None):
    """One PPO update of `student` on `levels`: its environments reset onto them (`play`, with
    `key`), a rollout, and `learn` where `learning` (a bool array; None: always), else the
    parameters, optimiser state and `update_step` kept as they are. Returns the student, the
    rollout's `ppo.Experience` and the update's metrics."""
    env = play(setup, student, levels, key)
    student = student.replace(env=env)
    key_next, key_collect, key_learn = jax.random.split(student.key, 3)
    exp = ppo.experience(setup.student, student, key_collect, hp)
    student, metrics = ppo.learn_from(
        setup.student, student, exp, env.carry, key_learn, key_next, hp, learning
    )
    return student, exp, metrics


def act(setup, state, obs, key, deterministic: bool = False, carry=()):
    """The student's action (`ppo.act`): UED's and PAIRED's agents act with their student."""
    return ppo.act(setup.student, state.student, obs, key, deterministic, carry)


def initial_carry(setup, state, num_envs: int):
    return ppo.initial_carry(setup.student, state.student, num_envs)


def agent_of(setup, init, update, trainable) -> Agent:
    """The `Agent` named `ued` of UED's or PAIRED's `setup` and stages: its student acts, and
    its environment steps are the student's (`num_envs * num_steps` an update); `trainable` is
    what a diverging update makes non-finite (`Agent.trainable`)."""
    student, config = setup.student, setup.config
    return bind(
        setup,
        init=init,
        update=update,
        **acting(act, initial_carry, student.network.memory),
        name="ued",
        config=config,
        env=student.env,
        env_params=student.env_params,
        default_hparams=UEDHparams(),
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.num_steps,
        env_split=ppo.env_split(student),
        trainable=trainable,
    )
