"""What the shared off-policy loop (`rlsuite.agents.off_policy`) is made of: its configs
(`ReplayConfig`, `OffPolicyConfig`, and `SamplingConfig`, how a family's batches are drawn, with
the buffer it makes: `sampling_buffer`), what the actions are (`Actions`: `box_actions`,
`discrete_actions`), what it stores and samples (`Items`, `td_items`, `replay_item`), the plug-ins
a family passes to `make_agent` (`Plugins`) and the replay buffer they make, checked (`replay`)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlsuite.agents.learner import (
    action_dim,
)
from rlsuite.data import prioritized
from rlsuite.data.buffers import ReplayBuffer, replay_buffer
from rlsuite.environment import Environment
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import RescaleAction
from rlsuite.networks import TORSOS, activation_fn
from rlsuite.ops import footprint
from rlsuite.ops.validators import ConfigWarning, check_hidden_sizes, check_positive_ints


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Static configuration of the loop every off-policy family shares (CRL's as it is)."""

    num_envs: int = 1
    """parallel environments per agent; an update steps each of them once, or (TD3) as often as
    a whole policy-delay cycle of gradient steps takes: `agent.env_steps_per_update` counts"""
    buffer_size: int = 100_000
    """replay capacity in transitions (all envs together); the oldest are overwritten first"""
    batch_size: int = 256
    """transitions per gradient step"""
    learning_starts: int = 1_000
    """environment steps (all envs together) of uniformly random actions before learning"""
    gradient_steps: int = 1
    """gradient steps per collection (num_envs env steps; an update holds
    collections_per_update of them); the replay ratio is their quotient"""
    total_timesteps: int = 100_000
    """environment steps of the whole run (all envs together)"""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """hidden layer sizes of the actor and of each critic"""
    activation: str = "relu"
    """hidden activation: tanh, relu, elu, gelu or silu (swish)"""
    reset_slots: int | None = None
    """reset the environments that finished this many at a time (rollout.step_batch); None:
    reset the whole batch and keep the finished ones' (pays where a reset costs per environment,
    as Brax ant's does)"""
    torso: str = "auto"
    """what reads the observations before the hidden layers of the actor and of each critic:
    auto (mlp for vectors, minatar for images below 36x36, nature above), mlp, minatar or
    nature (rlsuite.networks.Encoder)"""

    def __post_init__(self):
        name = type(self).__name__
        if self.torso not in TORSOS:
            raise ValueError(f"{name}.torso={self.torso!r} is not one of: {', '.join(TORSOS)}")
        check_positive_ints(self, ("num_envs", "buffer_size", "batch_size", "gradient_steps"))
        check_positive_ints(self, ("total_timesteps",))
        if self.reset_slots is not None:
            check_positive_ints(self, ("reset_slots",))
        if isinstance(self.learning_starts, bool) or not isinstance(self.learning_starts, int):
            raise ValueError(f"{name}.learning_starts must be an integer >= 0")
        if self.learning_starts < 0:
            raise ValueError(f"{name}.learning_starts must be >= 0, got {self.learning_starts}")
        if self.buffer_size < max(self.batch_size, self.num_envs):
            raise ValueError(
                f"{name}.buffer_size={self.buffer_size} must hold at least one batch "
                f"(batch_size={self.batch_size}) and one step of every env "
                f"(num_envs={self.num_envs})"
            )
        check_hidden_sizes(self)
        activation_fn(self.activation)
        steps = self.num_updates * self.num_envs * self.collections_per_update
        if steps < self.learning_starts:  # allowed: a run may only fill its buffer
            warnings.warn(
                f"{name}: the run takes {steps:,} env steps, fewer than learning_starts="
                f"{self.learning_starts:,}: it fills the replay buffer and takes no gradient "
                "step (lower learning_starts or raise total_timesteps to learn)",
                ConfigWarning,
                stacklevel=3,
            )

    @property
    def learn_period(self) -> int:
        """Gradient steps in the learner's fixed cycle (1; TD3: `policy_delay`)."""
        return 1

    @property
    def collections_per_update(self) -> int:
        """Env steps per env in one update: enough for whole learner cycles (see above)."""
        return self.learn_period // math.gcd(self.gradient_steps, self.learn_period)

    @property
    def num_updates(self) -> int:
        """Updates in the whole run: `total_timesteps // (num_envs * collections_per_update)`
        (at least 1)."""
        return max(1, self.total_timesteps // (self.num_envs * self.collections_per_update))


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(ReplayConfig):
    """`ReplayConfig` and what a learner of TD targets adds to it (SAC, TD3): n-step replay
    items and normalised observations."""

    n_step: int = 1
    """rewards summed in each replay item's target (n-step returns)"""
    normalize_observations: bool = False
    """normalise observations with running statistics kept in the learner state"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("n_step",))
        steps = self.num_updates * self.collections_per_update  # of each environment
        if self.n_step > steps:
            raise ValueError(
                f"{type(self).__name__}.n_step={self.n_step}: an item is stored once its "
                f"environment has taken n_step steps, and the run takes {steps:,} of each "
                f"(total_timesteps / num_envs); allowed: 1 to {steps:,}"
            )


REPLAYS = ("uniform", "prioritized")


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """How a family's replay batches are drawn (fields of `DQNConfig`, `SACConfig` and
    `TD3Config`, mixed in before `OffPolicyConfig`, whose checks run first); the buffer they
    make is `sampling_buffer`'s. A prioritized batch carries `index` and `weight`: the learner
    weights each item's loss by `weight` and reports each item's priority, after which the loop
    gives it back to the buffer (`Plugins.buffer`'s `update`)."""

    replay: str = "uniform"
    """how batches are drawn: uniform, or prioritized (in proportion to each item's last
    priority to the power priority_exponent; Schaul et al. 2016, `rlsuite.data.prioritized`):
    DQN's priority is an item's loss, SAC's and TD3's the mean over their critics of its
    absolute TD error"""
    priority_exponent: float = 0.6
    """prioritized replay's alpha: items drawn in proportion to priority^alpha (0: uniformly)"""
    importance_exponent: float = 0.4
    """prioritized replay's beta at the first gradient step, annealed linearly to 1 by the last:
    the exponent of the importance weights that correct for the prioritized draw"""

    def __post_init__(self):
        super().__post_init__()
        name = type(self).__name__
        if self.replay not in REPLAYS:
            raise ValueError(f"{name}.replay={self.replay!r} is not one of: {', '.join(REPLAYS)}")
        for field in ("priority_exponent", "importance_exponent"):
            value = getattr(self, field)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (number and 0 <= value <= 1):
                raise ValueError(f"{name}.{field} must be in [0, 1], got {value!r}")


def prioritized_buffer(config) -> prioritized.PrioritizedReplay:
    """The prioritized replay of a `SamplingConfig` that is an `OffPolicyConfig`: its
    `buffer_size`, its exponents, beta annealed over the run's gradient steps after
    `learning_starts`."""
    collections = config.num_updates * config.collections_per_update
    warm_up = -(-config.learning_starts // config.num_envs)  # collections before learning
    steps = max(1, (collections - warm_up) * config.gradient_steps)
    alpha, beta = config.priority_exponent, config.importance_exponent
    return prioritized.prioritized_replay(config.buffer_size, alpha, beta, beta_steps=steps)


def sampling_buffer(config, buffer: ReplayBuffer | None = None) -> ReplayBuffer | None:
    """The replay buffer a family of a `SamplingConfig` gives `make_agent` (`Plugins.buffer`):
    `buffer` where one is passed in (it brings its own way of drawing), else the prioritized one
    where `config.replay` says so, else None (the loop's uniform one)."""
    if buffer is None and config.replay == "prioritized":
        return prioritized_buffer(config)
    return buffer


class Actions(NamedTuple):
    """How the loop handles a family's actions (`make_agent`'s `actions`).

    example: one action, zeros: `[a]` float32 in `[-1, 1]` (`box_actions`) or a `[]` int32
        index (`discrete_actions`); the replay items and the pending steps hold actions so.
    random: `(key, shape) -> actions` of that full shape, uniformly random (the warm-up's).
    wrap: `env -> env`, the environment as the learner acts in it.
    """

    example: Any
    random: Callable
    wrap: Callable


def _uniform_box(key, shape):
    return jax.random.uniform(key, shape, minval=-1.0, maxval=1.0)


def box_actions(env: Environment, env_params, name: str) -> Actions:
    """Continuous actions of a bounded 1-D Box, rescaled to `[-1, 1]^d` (a `TypeError` for
    another space, naming it)."""
    dim = action_dim(env, env_params, name)
    return Actions(jnp.zeros((dim,)), _uniform_box, RescaleAction)


def discrete_actions(env: Environment, env_params, name: str) -> Actions:
    """The int32 indices of a `Discrete(n)` action space (a `TypeError` for another space)."""
    space = env.action_space(env_params)
    if not isinstance(space, Discrete):
        raise TypeError(f"{name} handles Discrete action spaces; {env.name} has {space!r}")
    n = int(space.n)

    def uniform(key, shape):
        return jax.random.randint(key, shape, 0, n)

    return Actions(jnp.zeros((), jnp.int32), uniform, lambda env: env)


def hp_gamma(hp):
    """`hp.gamma`: the discount of a family whose hparams hold it."""
    return hp.gamma


def hp_reward_scale(hp):
    """`hp.reward_scale`: the reward factor of a family whose hparams hold it."""
    return hp.reward_scale


def _one(hp) -> float:
    return 1.0


class Items(NamedTuple):
    """What the loop stores and samples for a family, as the family declares it (`make_agent`'s
    `items`; `td_items(config)` for a learner of TD targets, `Items()` for one of none, CRL).

    n_step: rewards summed in each replay item, its discount `gamma^m (1 - terminated)`.
    normalize_observations: sampled observations (and acting's) normalised with running
        statistics kept in the state.
    gamma: `hparams -> discount` of the items' n-step returns.
    reward_scale: `hparams -> factor` on every sampled batch's rewards.
    """

    n_step: int = 1
    normalize_observations: bool = False
    gamma: Callable = _one
    reward_scale: Callable = _one


def td_items(config: OffPolicyConfig) -> Items:
    """The items of a learner of TD targets: `config`'s n-step and normalisation, the
    hyperparameters' `gamma` and `reward_scale`."""
    return Items(config.n_step, config.normalize_observations, hp_gamma, hp_reward_scale)


def replay(name: str, config: ReplayConfig, item, buffer=None, relabel=None) -> ReplayBuffer:
    """`make_agent`'s replay buffer: `buffer` once checked to be buffer-shaped (a `TypeError`
    otherwise, as for a `relabel` that is not a function), or the uniform one of
    `config.buffer_size`. Its state for `item`s must fit in the device's memory (`MemoryError`)."""
    if buffer is None:
        buffer = replay_buffer(config.buffer_size)
        what, hint = f"a replay buffer of {config.buffer_size:,} transitions", "lower buffer_size"
    else:
        missing = [f for f in ReplayBuffer._fields if not callable(getattr(buffer, f, None))]
        if missing:
            raise TypeError(
                f"{name}: buffer must be a replay buffer, a tuple of pure functions "
                f"{', '.join(ReplayBuffer._fields)} (rlsuite.data.buffers.ReplayBuffer, e.g. "
                f"rlsuite.data.buffers.replay_buffer(capacity)); got {type(buffer).__name__} "
                f"without {', '.join(missing)}"
            )
        what, hint = "the replay buffer passed in", "pass a smaller buffer"
    if relabel is not None and not callable(relabel):
        raise TypeError(
            f"{name}: relabel must be a function (key, batch) -> batch or None, "
            f"got {type(relabel).__name__}"
        )

    def fill(item):
        state = buffer.init(item)
        return state, getattr(state, "size", None)

    shapes, size = jax.eval_shape(fill, item)
    integer = hasattr(size, "dtype") and jnp.issubdtype(size.dtype, jnp.integer)
    if not (integer and size.shape == ()):
        raise TypeError(
            f"{name}: a replay buffer's state must have a size, a [] integer array of the items "
            f"it holds (logged as charts/buffer_size); {type(shapes).__name__}.size is "
            f"{_described(size)}"
        )
    footprint.check_fits(footprint.tree_bytes(shapes), f"{name}: {what}", hint=hint)
    return buffer


def _described(value) -> str:
    """What a state's `size` turned out to be, for the error that refuses it."""
    if value is None:
        return "missing"
    if hasattr(value, "dtype"):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


class Plugins(NamedTuple):
    """What a family plugs into the shared off-policy loop besides its learner (`make_agent`'s
    `plugins`); each left None is SAC's.

    buffer: default `rlsuite.data.buffers.replay_buffer(config.buffer_size)`; a buffer passed in
        brings its own capacity. Any tuple of pure functions shaped like
        `rlsuite.data.buffers.ReplayBuffer`, over a state pytree that lives in
        `OffPolicyState.buffer`:

        - `init(item) -> state`, with the example item `{"obs" [o], "action" [a], "reward" [],
          "discount" [], "next_obs" [o], "terminated" [] bool, "truncated" [] bool}` (n-step
          reward and discount, raw observations and rewards: see above);
        - `add(state, items, valid) -> state`, once per env step with that step's items, every
          leaf `[num_envs, ...]` in env order, and `valid` `[num_envs]` bool (False while the
          n-step window of the first `n_step - 1` steps fills: those items are not real);
        - `sample(state, key, batch_size) -> batch`, every leaf `[batch_size, ...]`, holding at
          least the keys the learner reads (`obs`, `action`, `reward`, `discount`, `next_obs`);
        - `can_sample(state, batch_size) -> bool []`, whether learning may start;
        - optionally `update(state, index, priorities) -> state`: its `sample` then gives each
          batch the items' slots, `"index"` `[batch_size]` (and importance weights, `"weight"`,
          which the learner's loss applies), and after each gradient step the loop calls it
          with the learner's per-item `priority` metric, which is not logged
          (`rlsuite.data.prioritized`: `sampling_buffer` for DQN's, SAC's and TD3's
          `--replay prioritized`);

        and the state has a `size` (a field or a property, a `[]` integer array: the items it
        holds), logged as `charts/buffer_size` (checked before anything is compiled).
    relabel: `(key, batch) -> batch` rewrites every sampled batch (raw observations and
        rewards, e.g. new goals and the rewards they give) before the reward scale, the
        observation normalisation and the learner; it gets its own key, split from the
        sampling key. None: no relabelling.
    items: what the loop stores and samples (`Items`; default `td_items(config)`, for a config
        with `n_step` and `normalize_observations`).
    actions: what the actions are (`Actions`; default `box_actions(env, env_params, name)`; see
        `discrete_actions`).
    reads_action_mask: the learner's `explore` and `greedy` take `action_mask=` and its `learn`
        bootstraps over the batch's `"next_action_mask"` (DQN); on an environment with masks
        the loop then gives it the masks, draws the warm-up's random actions among the legal
        ones, and stores each transition's next mask beside `next_obs` (`replay_item`).
        Without, such an environment is refused (`Agent.reads_action_mask`).
    """

    buffer: ReplayBuffer | None = None
    relabel: Callable | None = None
    items: Items | None = None
    actions: Actions | None = None
    reads_action_mask: bool = False


def replay_item(obs_shape: tuple[int, ...], action, num_masked: int | None = None) -> dict:
    """The example replay item the buffer is initialised with (see `make_agent`), with
    `action` one action (`Actions.example`); on an environment with action masks
    (`num_masked` actions), also the next state's mask, `"next_action_mask"` [n] bool, which
    the learner bootstraps over."""
    item = {
        "obs": jnp.zeros(obs_shape),
        "action": jnp.zeros_like(action),
        "reward": jnp.zeros(()),
        "discount": jnp.zeros(()),
        "next_obs": jnp.zeros(obs_shape),
        "terminated": jnp.zeros((), bool),
        "truncated": jnp.zeros((), bool),
    }
    if num_masked is not None:
        item["next_action_mask"] = jnp.zeros((num_masked,), bool)
    return item
