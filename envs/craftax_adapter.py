"""Craftax (Classic and full, symbolic and pixels) behind the `rlsuite.environment` contract.

`CraftaxEnv(name, **options)` wraps Craftax's environment *without* its auto-reset
(`craftax.craftax_env.make_craftax_env_from_name(name, auto_reset=False)`); the one auto-reset is
`Environment.step`'s. Craftax's auto-resetting environment splits its step key as
`key_step, key_reset = jax.random.split(key)` and resets with `key_reset`, which is what
`rlsuite.environment.split_step_key` does, so the same key gives the same step and the same
fresh world in both.

* **Ends.** Craftax's `done` folds its time limit into the real ends: it is
  `timestep >= params.max_timesteps` or the player's death (health 0; in Classic also standing
  in lava, which sets the health to 0) or, in full Craftax, the final boss beaten. Here
  `terminated` is the real end (Craftax's own `is_terminal` asked with no time limit) and
  `truncated` is the time limit where the episode did not also end for real on that step
  (`terminated | truncated` is Craftax's `done`, to the step). A death on the last step of the
  time limit is `terminated`.
* **Params** are Craftax's own `EnvParams` (traced data: `jax.vmap` over them works), time limit
  included: `params.max_timesteps` (Classic 10,000, full Craftax 100,000 steps). `max_episode_steps`
  (an attribute, for information) is the constructor's `max_timesteps`; a time limit is changed
  through the params, never by wrapping the environment in `rlsuite.environment.wrappers.TimeLimit`.
  Every field of `EnvParams` is a constructor option (`CraftaxEnv("Craftax-Classic-Symbolic-v1",
  max_timesteps=500)` sets the default params); an unknown one is refused naming the allowed ones.
* **Observations** are Craftax's own, float32 (the adapter converts nothing), in `[0, 1]` but for
  full Craftax's symbolic vector, whose box is `[0, inf)`: Craftax declares `[0, 1]`, but its
  health, food, drink, energy and mana are divided by 10 where their maxima grow with the
  player's attributes (mana up to 21), and its sword, bow and armour enchantments read 1 (fire)
  or 2 (ice):
  - `Craftax-Classic-Symbolic-v1`: a vector of 1,345: the 7 x 9 cells around the player (row-major,
    the player at the centre), each with 21 channels, a one-hot of the 17 block types of
    Craftax's `BlockType` and 4 mob flags (zombie, cow, skeleton, arrow), then the inventory (12
    counts / 10: wood, stone, coal, iron, diamond, sapling, wood / stone / iron pickaxe and
    sword), the intrinsics (health, food, drink, energy, each / 10), the facing direction
    (one-hot of left, right, up, down), the light level and whether the player sleeps.
  - `Craftax-Symbolic-v1`: a vector of 8,268: the 9 x 11 cells around the player with 83
    channels (one-hots of the 37 block types and the 5 item types, flags of 8 mob kinds in each
    of 5 classes, all 0 in a dark cell, and whether the cell is lit), then 51 values: inventory
    (16), potions (6), intrinsics and attributes (9: health, food, drink, energy, mana, XP,
    dexterity, strength, intelligence, each / 10), direction (4), armour (4) and its
    enchantments (4), and light level, sleeping, resting, two spells known, the level / 10, the
    level cleared and the boss vulnerable (Craftax's `render_craftax_symbolic`).
  - `Craftax-Classic-Pixels-v1` `[63, 63, 3]` and `Craftax-Pixels-v1` `[130, 110, 3]`: RGB / 255
    (height, width, colour), the map view (7 x 9 cells of 7 pixels in Classic, 9 x 11 of 10 in
    full Craftax) above the inventory and intrinsics, drawn in 2 (Classic) or 4 rows of cells.
* **Actions** are `Discrete(17)` (Classic) or `Discrete(43)` (full), Craftax's `Action` enum. Every
  action is always legal (one that cannot act does nothing), so there is no action mask.
* **Achievements.** `info["achievement/<name>"]` is 1.0 on the step where the episode first
  unlocks `<name>`, else 0 (`env.achievement_names`, or `achievement_names(name)`, names them in
  Craftax's `Achievement` order: 22 in Classic, 67 in full Craftax), and
  `info["achievement_count"]` the number unlocked so far in the episode (int32, after the step).
  `step_env` never resets, so on the step where an episode ends (`terminated | truncated`, also
  through `Environment.step`) the count is the finished episode's: the training metric
  `charts/achievements` (`rlsuite.environment.wrappers.episode_metrics`). The evaluation
  (`rlsuite.environment.evaluations.Achievements`) sums the unlocks per episode: the
  achievements per episode and each one's success rate, in `final.json`. Craftax's own
  step info (`Achievements/<name>`: 100 where unlocked, on done steps only; Classic's `score`;
  `discount`, which is 0 at a time limit as at a death) is not passed on: the first two are these
  arrays read at episode ends, the last the time limit folded into the ends.

Pictures: `render(state, params, width, height)` draws a state with Craftax's pixel renderer
(the map around the player above the inventory, blocks of 16 pixels), symbolic environments too
(`rlsuite.envs.suite_pictures.craftax_picture`).

Names: `craftax_names()`. Craftax's `...-AutoReset-v1` aliases are the same games behind Craftax's
own auto-reset and are refused saying so (`refused()`). Nothing is downloaded: Craftax's textures
ship in its wheel; a pixels environment builds them at first use (about a minute, once) and
Craftax writes them to a cache file inside its package.

Craftax is imported lazily (inside the functions that need it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rlsuite.envs.suites import Suite

from rlsuite.environment import Environment, StepResult
from rlsuite.environment.evaluations import ACHIEVEMENT, Achievements
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field

NAMES = (
    "Craftax-Classic-Symbolic-v1",
    "Craftax-Symbolic-v1",
    "Craftax-Classic-Pixels-v1",
    "Craftax-Pixels-v1",
)
"""The Craftax environments `CraftaxEnv` adapts (Craftax's names)."""

_NO_LIMIT = int(np.iinfo(np.int32).max)  # a `max_timesteps` that no episode reaches


def installed() -> bool:
    """Whether Craftax can be imported."""
    try:
        import craftax.craftax_env  # noqa: F401
    except ImportError:
        return False
    return True


def craftax_names() -> list[str]:
    """The Craftax environments that run here (Craftax's names, e.g. `Craftax-Symbolic-v1`)."""
    return list(NAMES)


def refused() -> dict[str, str]:
    """Craftax's names that `CraftaxEnv` does not take, and why."""
    return {
        name.replace("-v1", "-AutoReset-v1"): (
            f"it is {name} behind Craftax's own auto-reset, which folds the time limit into "
            f"its episode ends; rlsuite auto-resets every environment itself: use {name}"
        )
        for name in NAMES
    }


def achievement_names(name: str) -> tuple[str, ...]:
    """The achievements of Craftax environment `name`, lower case, in the order of Craftax's
    `Achievement` enum (the `<name>` of `info["achievement/<name>"]`)."""
    _check_name(name)
    if "Classic" in name:
        from craftax.craftax_classic.constants import Achievement
    else:
        from craftax.craftax.constants import Achievement
    ordered = sorted(Achievement, key=lambda a: a.value)
    assert [a.value for a in ordered] == list(range(len(ordered)))
    return tuple(a.name.lower() for a in ordered)


def _check_name(name: str) -> None:
    why = refused().get(name)
    if why is not None:
        raise ValueError(f"Craftax environment {name!r} is not adapted: {why}")
    if name not in NAMES:
        raise ValueError(f"unknown Craftax environment {name!r}; allowed: {', '.join(NAMES)}")


# Lower bounds of the integer params fields (1 unless named here).
_INT_MINIMUM = {"mob_despawn_distance": 0}


class CraftaxEnv(Environment):
    """A Craftax environment under our contract (see the module's docstring).

    Args:
        name: one of `craftax_names()` (e.g. `"Craftax-Classic-Symbolic-v1"`).
        **options: fields of Craftax's `EnvParams` for the default params (e.g.
            `max_timesteps=500`, `day_length`, `always_diamond`; Classic: mob healths and spawn
            chances; full Craftax: `max_attribute`, `god_mode`).

    Raises:
        ValueError: for an unknown or refused name, an unknown option (naming the allowed ones)
            or an invalid value (naming the field and the values it takes), before anything is
            compiled.
    """

    def __init__(self, name: str, **options: Any):
        _check_name(name)
        from craftax.craftax_env import make_craftax_env_from_name

        # (a pixels environment prints its texture loading)
        with contextlib.redirect_stdout(io.StringIO()):
            self.craftax_env = make_craftax_env_from_name(name, auto_reset=False)
        self.env_name = name
        defaults = self.craftax_env.default_params
        fields = [f.name for f in dataclasses.fields(defaults)]
        unknown = sorted(set(options) - set(fields))
        if unknown:
            raise ValueError(
                f"Craftax environment {name!r}: unknown option(s) {unknown}; allowed: "
                f"{', '.join(fields)} (the fields of Craftax's EnvParams)"
            )
        self._param_defaults = defaults
        params = defaults.replace(**options)
        self.validate_params(params)
        self._default_params = params
        self.max_episode_steps = int(params.max_timesteps)
        self.achievement_names = achievement_names(name)
        self.num_actions = int(self.craftax_env.num_actions)
        self.observation_shape = tuple(self.craftax_env.observation_space(defaults).shape)

    # ----------------------------------------------------------------- contract
    @property
    def default_params(self) -> Any:
        return self._default_params

    @property
    def name(self) -> str:
        return f"craftax/{self.env_name}"

    def validate_params(self, params: Any) -> None:
        for field in dataclasses.fields(params):
            name = field.name
            default, value = getattr(self._param_defaults, name), getattr(params, name)
            if isinstance(value, jax.core.Tracer):
                continue
            if name == "fractal_noise_angles":
                if not isinstance(value, tuple) or len(value) != 4:
                    raise ValueError(
                        f"{self.name}: invalid params.{name}={value!r}; allowed: a tuple of 4 "
                        "angles (each None: drawn per world)"
                    )
            elif isinstance(default, bool):
                if np.asarray(value).dtype != np.bool_:
                    raise ValueError(
                        f"{self.name}: invalid params.{name}={value!r}; allowed: true or false"
                    )
            elif isinstance(default, int):
                low = _INT_MINIMUM.get(name, 1)
                check_field(
                    params,
                    name,
                    lambda v, low=low: (v == np.floor(v)) & (v >= low),
                    f"an integer >= {low}",
                    self.name,
                )
            elif name.endswith("_chance"):
                in_unit = lambda v: (v >= 0) & (v <= 1)  # noqa: E731
                check_field(params, name, in_unit, "a probability in [0, 1]", self.name)
            else:
                check_field(params, name, np.isfinite, "a finite number", self.name)

    @property
    def evaluation(self) -> Achievements:
        """Episodes, with the achievements unlocked per episode and each one's success rate."""
        return Achievements(self.achievement_names)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        return self.craftax_env.reset_env(key, params)

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any) -> StepResult:
        before = jnp.asarray(state.achievements, jnp.bool_)
        obs, state, reward, done, _ = self.craftax_env.step_env(key, state, action, params)
        done = jnp.asarray(done, jnp.bool_)
        # Craftax's own ends, asked with a time limit that no episode reaches: the real ones.
        ended = self.craftax_env.is_terminal(state, params.replace(max_timesteps=_NO_LIMIT))
        terminated = jnp.asarray(ended, jnp.bool_)
        truncated = jnp.logical_and(done, jnp.logical_not(terminated))
        achievements = jnp.asarray(state.achievements, jnp.bool_)
        unlocked = (achievements & ~before).astype(jnp.float32)
        info = {
            "achievement_count": jnp.sum(achievements, dtype=jnp.int32),
            **{ACHIEVEMENT + n: unlocked[i] for i, n in enumerate(self.achievement_names)},
        }
        return obs, state, jnp.asarray(reward, jnp.float32), terminated, truncated, info

    def observation_space(self, params: Any) -> Box:
        # Craftax declares [0, 1]; full Craftax's symbolic vector exceeds 1 (see the module's
        # docstring), so its upper bound is left open.
        open_above = self.env_name == "Craftax-Symbolic-v1"
        return Box(0.0, np.inf if open_above else 1.0, self.observation_shape, jnp.float32)

    def action_space(self, params: Any) -> Discrete:
        return Discrete(self.num_actions)

    def render(self, state: Any, params: Any, width: int, height: int):
        """uint8 RGB `[height, width, 3]` of one state, drawn by Craftax's pixel renderer
        (jitted once, the image fitted on the host; `rlsuite.envs.suite_pictures`)."""
        from rlsuite.envs.suite_pictures import craftax_picture

        return craftax_picture(self, self.env_name, state, width, height)

    def __repr__(self) -> str:
        return f"CraftaxEnv({self.env_name!r})"


SUITE = Suite(
    prefix="craftax/",
    title="Craftax",
    names=craftax_names,
    environment=CraftaxEnv,
    refused=refused,
    installed=installed,
    extra="craftax",
    limit="max_timesteps",
    renders="every Craftax environment, through Craftax's pixel renderer",
)
"""Craftax's environments: every option is `CraftaxEnv`'s (a field of Craftax's `EnvParams`
for the default params), the time limit among them (`max_timesteps`, which Craftax counts
itself)."""
