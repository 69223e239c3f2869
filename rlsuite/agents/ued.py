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
|              | adversary's reward is the regret estimate (`paired_update`)    |             |

`dr`, `plr`, `robust_plr` and `accel` are values of one type, `Curriculum` (`CURRICULA`): how an
update's levels are chosen (`choose`), whether the student learns from it (`learns`) and how a
level is scored (`score`). A new curriculum is a new value, named by `register_curriculum`
(`--curriculum NAME` then trains it). PAIRED is another algorithm: an adversary learns to build
the levels (`paired_update`).

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

The student is `rlsuite.agents.ppo` with a recurrent core (`UEDConfig` is a `PPOConfig`), its
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

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents import ppo, registry
from rlsuite.data import level_buffer
from rlsuite.environment import Environment
from rlsuite.environment.levels import Levels, levels_of
from rlsuite.environment.spaces import Discrete
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.rollout import reset_batch, reset_each
from rlsuite.ops import level_scores

SCORES = ("maxmc", "pvl", "learnability")
NEW, REPLAY, MUTATE = 0, 1, 2
PAIRED = "paired"  # not a `Curriculum`: a different algorithm, with an adversary (`paired_update`)
PARENTS = ("batch", "easy")
EASY_PARENTS = 4  # accel_parents="easy": this many of the easiest levels, each mutated N / 4 times


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


@struct.dataclass
class UEDState:
    student: ppo.PPOState
    buffer: level_buffer.LevelBufferState
    levels: Any  # [num_envs] the levels of the last update (ACCEL mutates them after a replay)
    scores: jax.Array  # [num_envs] their scores (NaN: no finished episode)
    branch: jax.Array  # int32: the last update's branch (NEW, REPLAY, MUTATE)
    key: jax.Array
    antagonist: Any = None  # PAIRED: a second student (PPOState)
    adversary: Any = None  # PAIRED: the level builder (PPOState on the editor)


def buffer_config(hp: UEDHparams) -> level_buffer.LevelBufferConfig:
    """The level buffer's settings from the hyperparameters (rank prioritisation, duplicates
    updated in place)."""
    return level_buffer.LevelBufferConfig(
        replay_prob=hp.replay_prob,
        staleness_coeff=hp.staleness_coeff,
        temperature=hp.temperature,
        minimum_fill=hp.minimum_fill,
    )


def check_hparams(hp: UEDHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, UEDHparams):
        raise TypeError(f"ued: hparams must be a UEDHparams, got {type(hp).__name__}")
    ppo.check_hparams(hp)
    level_buffer.check_config(buffer_config(hp))


def score_levels(config: UEDConfig, tr, advantages, max_returns) -> jax.Array:
    """`config.score` of each environment's level from its rollout (NaN where no episode
    finished: such a level is not inserted)."""
    dones = tr.terminated | tr.truncated
    if config.score == "maxmc":
        return level_scores.max_mc(dones, tr.reward, tr.extras["value"], max_returns)
    if config.score == "pvl":
        return level_scores.positive_value_loss(dones, advantages)
    return level_scores.learnability(dones, tr.reward > 0)


class UEDSetup(struct.PyTreeNode):
    config: UEDConfig = struct.field(pytree_node=False)
    student: ppo.PPOSetup = struct.field(pytree_node=False)
    levels: Levels = struct.field(pytree_node=False)
    score: Callable = struct.field(pytree_node=False)
    adversary: ppo.PPOSetup | None = struct.field(pytree_node=False, default=None)
    curriculum: Curriculum | None = struct.field(pytree_node=False, default=None)  # None: PAIRED


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
    if setup.curriculum is not None and setup.curriculum.choose is None:
        return state  # the environments' own random levels
    # The environments hold one level each from the start.
    state = state.replace(student=student.replace(env=_play(setup, student, levels, key_levels)))
    if setup.curriculum is None:  # PAIRED
        key_antagonist, key_adversary = jax.random.split(key_student)
        antagonist = ppo.init(setup.student, key_antagonist, hp)
        antagonist = antagonist.replace(env=_play(setup, antagonist, levels, key_levels))
        adversary = ppo.init(setup.adversary, key_adversary, hp)
        state = state.replace(antagonist=antagonist, adversary=adversary)
    return state


def _play(setup: UEDSetup, student: ppo.PPOState, levels, key):
    """The student's environments reset onto `levels` (one each), with a fresh memory."""
    student_setup = setup.student
    params = setup.levels.params_for(student_setup.env_params, levels)
    env = reset_each(student_setup.env, params, key)
    num_envs = setup.config.num_envs
    return env._replace(carry=ppo.initial_carry(student_setup, student, num_envs))


def next_branch(previous, replay, mutate: bool = False) -> jax.Array:
    """The branch of an update (int32 NEW, REPLAY or MUTATE) after `previous`: REPLAY where the
    buffer said `replay`, else NEW; with `mutate` (ACCEL), MUTATE after every REPLAY."""
    branch = jnp.where(replay, REPLAY, NEW)
    if mutate:
        branch = jnp.where(previous == REPLAY, MUTATE, branch)
    return branch.astype(jnp.int32)


def choose_levels(setup: UEDSetup, state: UEDState, key, hp: UEDHparams, mutate: bool = False):
    """This update's branch, levels `[num_envs]`, the buffer (with the sampled slots stamped
    on a replay) and the replayed slots (-1 elsewhere): new levels or, as the buffer says, a
    replay (PLR); with `mutate` (ACCEL), the mutations of the last replay's levels after every
    replay (`accel_parents`, `Levels.mutate`)."""
    config, num_envs = setup.config, setup.config.num_envs
    key_replay, key_new, key_sample, key_mutate = jax.random.split(key, 4)
    cfg = buffer_config(hp)
    replay = level_buffer.should_replay(state.buffer, key_replay, cfg)
    branch = next_branch(state.branch, replay, mutate)
    new = jax.vmap(setup.levels.generate)(jax.random.split(key_new, num_envs))
    sampled_buffer, slots, replayed = level_buffer.sample(state.buffer, key_sample, num_envs, cfg)
    candidates = [new, replayed]
    if mutate:
        edit = functools.partial(setup.levels.mutate, num_edits=config.num_edits)
        parents = accel_parents(config.accel_parents, state.levels, state.scores)
        candidates.append(jax.vmap(edit)(jax.random.split(key_mutate, num_envs), parents))
    levels = jax.tree.map(lambda *xs: jnp.stack(xs)[branch], *candidates)
    is_replay = branch == REPLAY
    buffer = jax.tree.map(lambda s, b: jnp.where(is_replay, s, b), sampled_buffer, state.buffer)
    slots = jnp.where(is_replay, slots, -1)
    return branch, levels, buffer, slots


def accel_parents(how: str, levels, scores) -> Any:
    """The levels ACCEL mutates, `[N]`: `batch`, the last replay's levels themselves; `easy`,
    its `min(EASY_PARENTS, N)` lowest-scored levels (a score per level `[N]`, NaN last), each
    repeated to fill N in turn (dcd's `base_levels=easy`, with its issue #11 fixed: the indices
    are positions in the flat score array, so each picks its own level)."""
    if how == "batch":
        return levels
    n = scores.shape[0]
    easiest = jnp.argsort(jnp.where(jnp.isnan(scores), jnp.inf, scores))[: min(EASY_PARENTS, n)]
    picks = easiest[jnp.arange(n) % easiest.shape[0]]
    return jax.tree.map(lambda x: x[picks], levels)


def always(branch) -> jax.Array:
    """A curriculum's `learns`: the student learns from every update."""
    return jnp.ones((), bool)


def on_replay(branch) -> jax.Array:
    """A curriculum's `learns`: the student learns from replays only (Robust PLR, ACCEL)."""
    return branch == REPLAY


class Curriculum(NamedTuple):
    """A curriculum as a value: how an update's levels are chosen, whether the student learns
    from the update, and how a level is scored. `CURRICULA` holds the built-in ones by name;
    `register_curriculum` adds one that `UEDConfig.curriculum` (`--curriculum`) then names.

    choose: `(setup, state, key, hp) -> (branch, levels, buffer, slots)`: the update's branch
        (int32 NEW, REPLAY or MUTATE), its levels `[num_envs]`, the level buffer (the sampled
        slots stamped on a replay) and the replayed slots `[num_envs]` (-1 elsewhere), as
        `choose_levels` returns them; new levels with a finished episode enter the buffer, the
        replayed ones get their new scores. None: no buffer, the environment's own random
        level at every reset (domain randomisation), and PPO's update as it is.
    learns: `(branch) -> bool []`: whether the student learns from the update's rollout (where
        it does not, its parameters, optimiser state and schedules stay as they are).
    score: `(config, transitions, advantages, max_returns) -> [num_envs]`, a level's score from
        its rollout (NaN where no episode finished: the level is not inserted), as
        `score_levels`; None: `UEDConfig.score`'s. A `score` given to `make` takes precedence.
    """

    choose: Callable | None
    learns: Callable
    score: Callable | None = None


CURRICULA: dict[str, Curriculum] = {
    "dr": Curriculum(choose=None, learns=always),
    "plr": Curriculum(choose=choose_levels, learns=always),
    "robust_plr": Curriculum(choose=choose_levels, learns=on_replay),
    "accel": Curriculum(choose=functools.partial(choose_levels, mutate=True), learns=on_replay),
}
BUILT_IN = tuple(CURRICULA)


def register_curriculum(name: str, curriculum: Curriculum) -> None:
    """Make `UEDConfig(curriculum=name)` (`rlsuite train ued --curriculum NAME`) train with
    `curriculum`; registering a name again replaces it. A built-in name is refused."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(
            f"register_curriculum: the name must be lowercase letters, digits and underscores, "
            f"starting with a letter, got {name!r}"
        )
    if name in BUILT_IN or name == PAIRED:
        raise ValueError(f"register_curriculum: {name!r} is a built-in curriculum's name")
    if not isinstance(curriculum, Curriculum):
        raise TypeError(
            f"register_curriculum({name!r}): a Curriculum is needed, "
            f"got {type(curriculum).__name__}"
        )
    for field in Curriculum._fields:
        value = getattr(curriculum, field)
        if not (callable(value) or (value is None and field != "learns")):
            raise TypeError(
                f"register_curriculum({name!r}): Curriculum.{field} must be a function"
                f"{'' if field == 'learns' else ' or None'}, got {type(value).__name__}"
            )
    CURRICULA[name] = curriculum


def unregister_curriculum(name: str) -> Curriculum:
    """Remove the registered curriculum `name` and return it (a built-in one is refused)."""
    if name in BUILT_IN or name not in CURRICULA:
        raise ValueError(f"unregister_curriculum: no registered curriculum {name!r}")
    return CURRICULA.pop(name)


def play_and_learn(setup: UEDSetup, student: ppo.PPOState, levels, key, hp, learning=None):
    """One PPO update of `student` on `levels`: its environments reset onto them (`_play`, with
    `key`), a rollout, and `learn` where `learning` (a bool array; None: always), else the
    parameters, optimiser state and `update_step` kept as they are. Returns the student, the
    rollout's `ppo.Experience` and the update's metrics."""
    env = _play(setup, student, levels, key)
    student = student.replace(env=env)
    key_next, key_collect, key_learn = jax.random.split(student.key, 3)
    exp = ppo.experience(setup.student, student, key_collect, hp)
    student, metrics = ppo.learn_from(
        setup.student, student, exp, env.carry, key_learn, key_next, hp, learning
    )
    return student, exp, metrics


def update(setup: UEDSetup, state: UEDState, hp: UEDHparams) -> tuple[UEDState, dict]:
    config, curriculum = setup.config, setup.curriculum
    if curriculum is None:
        return paired_update(setup, state, hp)
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


def paired_update(setup: UEDSetup, state: UEDState, hp: UEDHparams) -> tuple[UEDState, dict]:
    """PAIRED (Dennis et al. 2020, arXiv:2012.02096): the adversary builds `num_envs` levels
    (one editing episode each, `Levels.editor`), the protagonist (`state.student`) and the
    antagonist each play and learn on them, and the adversary learns from the regret estimate
    `max(antagonist returns) - mean(protagonist returns)` per level
    (`level_scores.paired_regret`; 0 where either finished no episode), its reward at the
    editing episode's last step."""
    config, adversary_setup, num_envs = setup.config, setup.adversary, setup.config.num_envs
    key, key_editor, key_protagonist, key_antagonist = jax.random.split(state.key, 4)
    adversary = state.adversary
    editing = reset_batch(adversary_setup.env, adversary_setup.env_params, key_editor, num_envs)
    editing = editing._replace(carry=ppo.initial_carry(adversary_setup, adversary, num_envs))
    adversary = adversary.replace(env=editing)
    key_next, key_collect, key_learn = jax.random.split(adversary.key, 3)
    edited, tr = ppo.collect(adversary_setup, adversary, key_collect)
    levels = jax.tree.map(lambda x: x[-1], tr.info["level"])  # each episode's last step

    protagonist, played, metrics = play_and_learn(setup, state.student, levels, key_protagonist, hp)
    antagonist, rival, _ = play_and_learn(setup, state.antagonist, levels, key_antagonist, hp)
    p, a = played.transitions, rival.transitions
    regret = level_scores.paired_regret(
        p.terminated | p.truncated, p.reward, a.terminated | a.truncated, a.reward,
        clip=config.regret_clip,
    )  # fmt: skip
    regret = jnp.nan_to_num(regret)
    tr = tr._replace(reward=tr.reward.at[-1].set(regret))
    exp = ppo.experience_of(adversary_setup, adversary, edited, tr, hp)
    adversary, built = ppo.learn_from(
        adversary_setup, adversary, exp, editing.carry, key_learn, key_next, hp
    )

    state = state.replace(
        student=protagonist, antagonist=antagonist, adversary=adversary, levels=levels, key=key
    )
    metrics["ued/regret"] = jnp.mean(regret)
    metrics["ued/solved"] = jnp.mean(jnp.any(p.reward > 0, axis=0))
    metrics["ued/antagonist_solved"] = jnp.mean(jnp.any(a.reward > 0, axis=0))
    metrics["ued/walls"] = jnp.mean(jnp.sum(levels.wall_map, axis=(-2, -1)))
    metrics["ued/adversary_value_loss"] = built["losses/value_loss"]
    return state, metrics


def act(setup: UEDSetup, state: UEDState, obs, key, deterministic: bool = False, carry=()):
    return ppo.act(setup.student, state.student, obs, key, deterministic, carry)


def initial_carry(setup: UEDSetup, state: UEDState, num_envs: int):
    return ppo.initial_carry(setup.student, state.student, num_envs)


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
    `ppo.make`'s (`policy_loss`, `minibatches`, `network`)."""
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
    student = ppo.prepare(config, env, env_params, **variants)
    adversary = None
    if config.curriculum == PAIRED:
        if levels.editor is None:
            raise ValueError(
                f"ued: curriculum='paired' needs a level editor for the adversary "
                f"(Levels.editor); {env.name}'s levels have none"
            )
        editor = levels.editor()
        adversary_config = dataclasses.replace(config, num_steps=editor.episode_length)
        adversary = ppo.prepare(adversary_config, editor, editor.default_params)
    curriculum = None if config.curriculum == PAIRED else CURRICULA[config.curriculum]
    if score is None:
        score = score_levels if curriculum is None or curriculum.score is None else curriculum.score
    setup = UEDSetup(config, student, levels, score, adversary, curriculum)
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
    )


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
