"""The loop SAC, TD3 and CRL share: parallel environments feeding a replay buffer that lives in the
learner state, and a number of gradient steps per environment step.

An algorithm is a `rlsuite.agents.learner.Learner`, four pure functions over its own state
(networks, target networks, optimizer states); `make_agent` binds one to an environment and a
replay buffer and returns an `Agent`. One `update` reads top-down:

    collections_per_update x (act (uniformly random during the warm-up) -> step every env once
    -> n-step replay items -> buffer.add)
    -> collections_per_update * gradient_steps x (buffer.sample -> relabel, if given
    -> learner.learn)

where `collections_per_update` is 1 unless the learner has a cycle (below).

Choices, written down:
- A family's actions are what it declares (`Actions`, `make_agent`'s `actions`). Continuous
  ones (`box_actions`, the default: SAC, TD3, CRL) live in `[-1, 1]^d`: the environment is
  wrapped in `RescaleAction`, so the networks and the warm-up never see the environment's own
  bounds. Discrete ones (`discrete_actions`: DQN) are int32 indices of a `Discrete(n)` space,
  stored as they are; the warm-up draws them uniformly.
- A `scheduled` learner's `explore` is given the environment steps taken so far (all envs
  together), so that its exploration may follow a schedule (DQN's epsilon).
- The buffer is passed in (`make_agent`'s `buffer`, any `rlsuite.data.buffers.ReplayBuffer`-shaped
  tuple of pure functions; by default the uniform one of `buffer_size` items), and so is an
  optional `relabel` of each sampled batch; the n-step window stays in the loop.
- Replay items are `(obs, action, reward, discount, next_obs, terminated, truncated)` with n-step
  `reward` and `discount = gamma^m (1 - terminated)` (`rlsuite.ops.returns.n_step_transitions`); a
  truncated episode bootstraps from its true last observation, a terminated one does not. The
  flags are those of the item's last step (they let a buffer be exported as a dataset). The last
  `n_step - 1` steps of every env wait in the state until their n-step window is complete.
- Rewards are stored raw and multiplied by `hparams.reward_scale` in every sampled batch (so a
  buffer exported as a dataset holds the environment's rewards).
- Observations are stored raw; with `normalize_observations`, each sampled batch is normalised
  with the current statistics (updated with every collected observation), as is every action.
- The n-step window, the normalisation and the discount and reward scale are what a family
  declares of its items (`Items`): a learner of TD targets takes its config's and hparams'
  (`td_items`, on an `OffPolicyConfig`); one of none (CRL, on the loop's own `ReplayConfig`)
  takes one-step items of raw observations, and its config and hparams have no such fields.
- Learning starts once `learning_starts` environment steps (all envs together) have been taken
  and the buffer holds a batch; before that, updates only collect (and log NaN losses). The gate
  is a `rlsuite.ops.batching.gate`: the runs of a driver batch pass it on the same update, so under
  the seed `vmap` the warm-up skips learning instead of computing it and selecting it away.
- The buffer's memory (its state for these items) is checked against the device before anything
  is allocated: `make_agent` refuses one that would not fit, stating the bytes it needs.
- A learner may work in a fixed cycle of `period` gradient steps (TD3: `policy_delay` critic
  steps, the last with the actor and target updates). Its phase in the cycle is a static Python
  int passed to `learn`, not a counter in the learner state: under the seed `vmap`, a
  `lax.cond` on a per-run counter computes both branches on every step (TD3's actor step on
  every critic step), and even a branch on a loop index costs about as much as the step it
  skips on CPU. So an update holds whole cycles of gradient steps: with `gradient_steps` below
  the period (TD3's default, one per env step), one update first steps every env
  `period / gcd(gradient_steps, period)` times (`collections_per_update`), then learns. For
  TD3 with one gradient step per env step that is: two env steps, a critic step, a critic step
  with the actor and target updates; the paper's order interleaves them, which differs only in
  that the first critic step may sample the second transition (the actor, hence the behaviour
  policy, is the same for both env steps either way).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents.learner import (
    Learner,
    action_dim,
    gradient_steps,
    learner_act,
    learner_explore,
)
from rlsuite.data.buffers import ReplayBuffer, replay_buffer
from rlsuite.environment import Environment, masks
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import EpisodeStatistics, RescaleAction, episode_metrics
from rlsuite.loop.agent import Agent, bind
from rlsuite.loop.mesh import field_splits
from rlsuite.loop.rollout import EnvBatch, reset_batch, rollout
from rlsuite.networks import TORSOS, activation_fn
from rlsuite.ops import batching, memory, running_stats
from rlsuite.ops.returns import n_step_transitions
from rlsuite.ops.sharding import split_envs
from rlsuite.ops.validators import check_hidden_sizes, check_positive_ints


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


def _hp_gamma(hp):
    return hp.gamma


def _hp_reward_scale(hp):
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
    return Items(config.n_step, config.normalize_observations, _hp_gamma, _hp_reward_scale)


@struct.dataclass
class OffPolicyState:
    learner: Any
    buffer: Any  # the replay buffer's state (rlsuite.data.buffers.BufferState by default)
    pending: dict  # the last n_step - 1 steps of every env, [n_step - 1, num_envs, ...]
    obs_stats: running_stats.RunningStats
    env: EnvBatch
    key: jax.Array
    collect_step: jax.Array  # env steps per env so far (collections; an update has one or more)


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
    memory.check_fits(memory.tree_bytes(shapes), f"{name}: {what}", hint=hint)
    return buffer


def _described(value) -> str:
    """What a state's `size` turned out to be, for the error that refuses it."""
    if value is None:
        return "missing"
    if hasattr(value, "dtype"):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def make_agent(
    name: str,
    config: ReplayConfig,
    env: Environment,
    env_params,
    learner: Learner,
    default_hparams,
    check_hparams: Callable,
    buffer: ReplayBuffer | None = None,
    relabel: Callable | None = None,
    items: Items | None = None,
    actions: Actions | None = None,
    reads_action_mask: bool = False,
) -> Agent:
    """Bind `learner` to `env` as an `Agent` running the shared off-policy loop above: the
    stages below (`init`, `collect`, `store`, `collect_and_store`, `learn`, `update`, `act`) over
    the `Setup` this builds. `items`: what the loop stores and samples (default `td_items(config)`,
    for a config with `n_step` and `normalize_observations`).

    `buffer` (default: `rlsuite.data.buffers.replay_buffer(config.buffer_size)`; a buffer passed in
    brings its own capacity) is any tuple of pure functions shaped like
    `rlsuite.data.buffers.ReplayBuffer`, over a state pytree that lives in `OffPolicyState.buffer`:
    - `init(item) -> state`, with the example item `{"obs" [o], "action" [a], "reward" [],
      "discount" [], "next_obs" [o], "terminated" [] bool, "truncated" [] bool}` (n-step reward
      and discount, raw observations and rewards: see above);
    - `add(state, items, valid) -> state`, once per env step with that step's items, every leaf
      `[num_envs, ...]` in env order, and `valid` `[num_envs]` bool (False while the n-step
      window of the first `n_step - 1` steps fills: those items are not real);
    - `sample(state, key, batch_size) -> batch`, every leaf `[batch_size, ...]`, holding at least
      the keys the learner reads (`obs`, `action`, `reward`, `discount`, `next_obs`);
    - `can_sample(state, batch_size) -> bool []`, whether learning may start;
    and the state has a `size` (a field or a property, a `[]` integer array: the items it holds),
    logged as `charts/buffer_size` (checked here, before anything is compiled).

    `relabel(key, batch) -> batch`, if given, rewrites every sampled batch (raw observations and
    rewards, e.g. new goals and the rewards they give) before the reward scale, the observation
    normalisation and the learner; it gets its own key, split from the sampling key.

    `actions` (default: `box_actions(env, env_params, name)`) says what the actions are: see
    `Actions`, `box_actions` and `discrete_actions`.

    `reads_action_mask`: the learner's `explore` and `greedy` take `action_mask=` and its
    `learn` bootstraps over the batch's `"next_action_mask"` (DQN); on an environment with
    masks the loop then gives it the masks, draws the warm-up's random actions among the legal
    ones, and stores each transition's next mask beside `next_obs` (`replay_item`). Without,
    such an environment is refused (`Agent.reads_action_mask`).
    """
    actions = box_actions(env, env_params, name) if actions is None else actions
    env = EpisodeStatistics(actions.wrap(env))
    obs_space = env.observation_space(env_params)
    if isinstance(obs_space, Discrete):
        raise TypeError(f"{name} needs Box observations (vectors or images); got {obs_space!r}")
    obs_shape = tuple(obs_space.shape)
    num_masked = env.action_space(env_params).n if env.has_action_mask else None
    example = replay_item(obs_shape, actions.example, num_masked)
    buffer = replay(name, config, example, buffer, relabel)
    if learner.period != config.learn_period:
        raise ValueError(
            f"{name}: the learner's period ({learner.period}) differs from the config's "
            f"learn_period ({config.learn_period})"
        )
    items = td_items(config) if items is None else items
    setup = Setup(
        config, env, env_params, learner, buffer, relabel, obs_shape, actions, items, num_masked
    )
    return bind(
        setup,
        init=init,
        update=update,
        act=act,
        name=name,
        config=config,
        env=env,
        env_params=env_params,
        default_hparams=default_hparams,
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.collections_per_update,
        env_split=field_splits(config, "num_envs", "batch_size"),
        trainable=learner_of,
        reads_action_mask=reads_action_mask,
    )


def learner_of(state: OffPolicyState):
    """What a diverging update makes non-finite: the learner (networks, targets, optimisers)."""
    return state.learner


class Setup(NamedTuple):
    """What the stages of one off-policy agent share, fixed when it is made (`make_agent`)."""

    config: ReplayConfig
    env: Environment  # wrapped: `actions.wrap`'s, episode statistics in `info`
    env_params: Any
    learner: Learner
    buffer: ReplayBuffer
    relabel: Callable | None
    obs_shape: tuple[int, ...]
    actions: Actions
    items: Items
    num_masked: int | None = None  # the actions of an environment with masks (else None)


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


def normalize(setup: Setup, obs_stats, obs):
    """`obs` normalised by the running statistics, with `normalize_observations` (else as is)."""
    if setup.items.normalize_observations:
        return running_stats.normalize(obs_stats, obs, clip=10.0)
    return obs


def init(setup: Setup, key, hp) -> OffPolicyState:
    window, num_envs = setup.items.n_step - 1, setup.config.num_envs
    obs_shape, action = setup.obs_shape, setup.actions.example
    key, key_learner, key_env = jax.random.split(key, 3)
    pending = {
        "obs": jnp.zeros((window, num_envs, *obs_shape)),
        "action": jnp.zeros((window, num_envs, *action.shape), action.dtype),
        "reward": jnp.zeros((window, num_envs)),
        "terminated": jnp.zeros((window, num_envs), bool),
        "truncated": jnp.zeros((window, num_envs), bool),
        "next_obs": jnp.zeros((window, num_envs, *obs_shape)),
    }
    if setup.num_masked is not None:
        pending["next_action_mask"] = jnp.zeros((window, num_envs, setup.num_masked), bool)
    return OffPolicyState(
        learner=setup.learner.init(key_learner, hp),
        buffer=setup.buffer.init(replay_item(obs_shape, action, setup.num_masked)),
        pending=pending,
        obs_stats=running_stats.init(obs_shape),
        env=reset_batch(setup.env, setup.env_params, key_env, num_envs),
        key=key,
        collect_step=jnp.zeros((), jnp.int32),
    )


def collect(setup: Setup, state: OffPolicyState, key):
    """Step every env once: uniformly random actions during the warm-up, the learner's
    exploration after it."""
    config = setup.config
    env_steps = state.collect_step * config.num_envs
    warm = env_steps < config.learning_starts

    def policy(key, obs, **mask):
        key_explore, key_random = jax.random.split(key)
        obs = normalize(setup, state.obs_stats, obs)
        action = learner_explore(setup.learner, state.learner, obs, key_explore, env_steps, **mask)
        if mask:  # the warm-up's random actions among the legal ones
            random = masks.uniform_legal(key_random, mask["action_mask"], action.dtype)
        else:
            random = setup.actions.random(key_random, action.shape)
        return jnp.where(warm, random, action), {}

    env, params = setup.env, setup.env_params
    return rollout(env, params, policy, key, state.env, 1, reset_slots=config.reset_slots)


def store(setup: Setup, state: OffPolicyState, tr, hp):
    """Completes the n-step window of the oldest pending step and writes it to the buffer."""
    config, n_step = setup.config, setup.items.n_step
    new = {
        "obs": tr.obs,
        "action": tr.action,
        "reward": tr.reward.astype(jnp.float32),
        "terminated": tr.terminated,
        "truncated": tr.truncated,
        "next_obs": tr.next_obs,
    }
    if setup.num_masked is not None:  # the pre-reset state's, as `next_obs` is
        new["next_action_mask"] = tr.info[masks.FINAL]
    steps = jax.tree.map(lambda p, n: jnp.concatenate([p, n]), state.pending, new)
    reward, discount, last = n_step_transitions(
        steps["reward"], steps["terminated"], steps["truncated"], setup.items.gamma(hp), n_step
    )
    # `last` [n, E] indexes the steps' axis of every observation's own axes (vectors, images).
    obs_axes = steps["next_obs"].ndim - last.ndim
    next_obs = jnp.take_along_axis(steps["next_obs"], last.reshape(*last.shape, *[1] * obs_axes), 0)
    items = {
        "obs": steps["obs"][0],
        "action": steps["action"][0],
        "reward": reward[0],
        "discount": discount[0],
        "next_obs": next_obs[0],
        "terminated": jnp.take_along_axis(steps["terminated"], last, axis=0)[0],
        "truncated": jnp.take_along_axis(steps["truncated"], last, axis=0)[0],
    }
    if setup.num_masked is not None:
        mask = steps["next_action_mask"]
        items["next_action_mask"] = jnp.take_along_axis(mask, last[..., None], 0)[0]
    # The oldest step is real once n_step - 1 collections have filled the window.
    valid = jnp.broadcast_to(state.collect_step >= n_step - 1, (config.num_envs,))
    pending = jax.tree.map(lambda x: x[1:], steps)
    # The storage is split over a mesh's envs devices, as the environments are.
    return split_envs(setup.buffer.add(state.buffer, items, valid)), pending


def collect_and_store(setup: Setup, state: OffPolicyState, hp, key):
    """Step every env once and store what completed its n-step window."""
    env_batch, tr = collect(setup, state, key)
    obs_stats = state.obs_stats
    if setup.items.normalize_observations:
        obs_stats = running_stats.update(obs_stats, tr.obs)
    buffer_state, pending = store(setup, state, tr, hp)
    state = state.replace(
        buffer=buffer_state,
        pending=pending,
        obs_stats=obs_stats,
        env=env_batch,
        collect_step=state.collect_step + 1,
    )
    return state, tr.info


def learn(setup: Setup, learner_state, buffer_state, obs_stats, key, hp):
    """An update's gradient steps, each on a batch sampled from the buffer (relabelled, if the
    agent relabels), its rewards scaled and its observations normalised."""
    config, buffer, relabel = setup.config, setup.buffer, setup.relabel

    def sample(key):
        if relabel is None:
            batch = dict(buffer.sample(buffer_state, key, config.batch_size))
        else:
            key, key_relabel = jax.random.split(key)
            batch = buffer.sample(buffer_state, key, config.batch_size)
            batch = dict(relabel(key_relabel, batch))
        batch["reward"] = batch["reward"] * setup.items.reward_scale(hp)
        batch["obs"] = normalize(setup, obs_stats, batch["obs"])
        batch["next_obs"] = normalize(setup, obs_stats, batch["next_obs"])
        return batch

    keys = jax.random.split(key, config.gradient_steps * config.collections_per_update)
    return gradient_steps(setup.learner, learner_state, sample, keys, hp)


def update(setup: Setup, state: OffPolicyState, hp):
    """Collect (one or more env steps per env, `collections_per_update`), then learn once
    learning has started and the buffer holds a batch (NaN losses before)."""
    config, cycle = setup.config, setup.config.collections_per_update
    key, key_collect, key_learn = jax.random.split(state.key, 3)
    if cycle == 1:
        state, info = collect_and_store(setup, state, hp, key_collect)
    else:
        state, info = jax.lax.scan(
            lambda state, key: collect_and_store(setup, state, hp, key),
            state,
            jax.random.split(key_collect, cycle),
        )
    ready = (state.collect_step * config.num_envs >= config.learning_starts) & (
        setup.buffer.can_sample(state.buffer, config.batch_size)
    )
    args = (state.learner, state.buffer, state.obs_stats, key_learn, hp)

    def skip(shapes, learner_state, *_):
        nan = jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes[1])
        return learner_state, nan

    learner_state, losses = batching.gate(ready, functools.partial(learn, setup), skip, *args)
    state = state.replace(learner=learner_state, key=key)
    metrics = {f"losses/{k}": jnp.nanmean(v) for k, v in losses.items()}
    metrics.update(episode_metrics(info))
    metrics["charts/buffer_size"] = state.buffer.size
    return state, metrics


def act(setup: Setup, state: OffPolicyState, obs, key, deterministic: bool = False, **mask):
    obs = normalize(setup, state.obs_stats, obs)
    env_steps = state.collect_step * setup.config.num_envs
    return learner_act(setup.learner, state.learner, obs, key, deterministic, env_steps, **mask)
