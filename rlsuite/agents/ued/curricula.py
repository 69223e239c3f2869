"""UED's curricula as values of one type (`Curriculum`): how an update's levels are chosen
(`choose`), whether the student learns from the update (`learns`) and how a level is scored
(`score`). `CURRICULA` holds the built-in ones by name (`dr`, `plr`, `robust_plr`, `accel`);
`register_curriculum` adds one that `UEDConfig.curriculum` (`--curriculum NAME`) then names.
The UED agent that plays them is `rlsuite.agents.ued`; PAIRED, which builds its levels with an
adversary instead, is `rlsuite.agents.ued.paired`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.data import level_buffer
from rlsuite.ops import level_scores

SCORES = ("maxmc", "pvl", "learnability")
NEW, REPLAY, MUTATE = 0, 1, 2
PAIRED = "paired"  # not a `Curriculum`: another algorithm, with an adversary (`ued.paired`)
PARENTS = ("batch", "easy")
EASY_PARENTS = 4  # accel_parents="easy": this many of the easiest levels, each mutated N / 4 times


def buffer_config(hp) -> level_buffer.LevelBufferConfig:
    """The level buffer's settings from the hyperparameters (rank prioritisation, duplicates
    updated in place)."""
    return level_buffer.LevelBufferConfig(
        replay_prob=hp.replay_prob,
        staleness_coeff=hp.staleness_coeff,
        temperature=hp.temperature,
        minimum_fill=hp.minimum_fill,
    )


def score_levels(config, tr, advantages, max_returns) -> jax.Array:
    """`config.score` of each environment's level from its rollout (NaN where no episode
    finished: such a level is not inserted)."""
    dones = tr.terminated | tr.truncated
    if config.score == "maxmc":
        return level_scores.max_mc(dones, tr.reward, tr.extras["value"], max_returns)
    if config.score == "pvl":
        return level_scores.positive_value_loss(dones, advantages)
    return level_scores.learnability(dones, tr.reward > 0)


def next_branch(previous, replay, mutate: bool = False) -> jax.Array:
    """The branch of an update (int32 NEW, REPLAY or MUTATE) after `previous`: REPLAY where the
    buffer said `replay`, else NEW; with `mutate` (ACCEL), MUTATE after every REPLAY."""
    branch = jnp.where(replay, REPLAY, NEW)
    if mutate:
        branch = jnp.where(previous == REPLAY, MUTATE, branch)
    return branch.astype(jnp.int32)


def choose_levels(setup, state, key, hp, mutate: bool = False):
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
