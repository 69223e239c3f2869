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

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents.learner import (
    Learner,
    gradient_steps,
    learn_step,
    learner_act,
    learner_explore,
    over_cycles,
)
from rlsuite.agents.off_policy_parts import (
    Actions,
    Items,
    Plugins,
    ReplayConfig,
    box_actions,
    replay,
    replay_item,
    td_items,
)
from rlsuite.data.buffers import ReplayBuffer
from rlsuite.environment import Environment, masks
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import EpisodeStatistics, episode_metrics
from rlsuite.loop.agent import Agent, bind
from rlsuite.loop.mesh import field_splits
from rlsuite.loop.rollout import EnvBatch, reset_batch, rollout
from rlsuite.ops import batching, running_stats
from rlsuite.ops.returns import n_step_transitions
from rlsuite.ops.sharding import split_envs


@struct.dataclass
class OffPolicyState:
    learner: Any
    buffer: Any  # the replay buffer's state (rlsuite.data.buffers.BufferState by default)
    pending: dict  # the last n_step - 1 steps of every env, [n_step - 1, num_envs, ...]
    obs_stats: running_stats.RunningStats
    env: EnvBatch
    key: jax.Array
    collect_step: jax.Array  # env steps per env so far (collections; an update has one or more)


def make_agent(
    name: str,
    config: ReplayConfig,
    env: Environment,
    env_params,
    learner: Learner,
    default_hparams,
    check_hparams: Callable,
    plugins: Plugins | None = None,
) -> Agent:
    """Bind `learner` to `env` as an `Agent` running the shared off-policy loop above: the
    stages below (`init`, `collect`, `store`, `collect_and_store`, `learn`, `update`, `act`) over
    the `Setup` this builds, with the family's `plugins` (`Plugins`; default SAC's)."""
    plugins = Plugins() if plugins is None else plugins
    actions = plugins.actions
    actions = box_actions(env, env_params, name) if actions is None else actions
    env = EpisodeStatistics(actions.wrap(env))
    obs_space = env.observation_space(env_params)
    if isinstance(obs_space, Discrete):
        raise TypeError(f"{name} needs Box observations (vectors or images); got {obs_space!r}")
    obs_shape = tuple(obs_space.shape)
    num_masked = env.action_space(env_params).n if env.has_action_mask else None
    example = replay_item(obs_shape, actions.example, num_masked)
    buffer = replay(name, config, example, plugins.buffer, plugins.relabel)
    if learner.period != config.learn_period:
        raise ValueError(
            f"{name}: the learner's period ({learner.period}) differs from the config's "
            f"learn_period ({config.learn_period})"
        )
    items = td_items(config) if plugins.items is None else plugins.items
    horizon = getattr(env, "max_episode_steps", None)
    if horizon is not None and items.n_step > horizon:
        raise ValueError(
            f"{name}: n_step={items.n_step} is longer than {env.name}'s episodes (at most "
            f"{horizon} steps), and an item's return ends with its episode; allowed: 1 to "
            f"{horizon}"
        )
    setup = Setup(
        config, env, env_params, learner, buffer, plugins.relabel, obs_shape, actions, items,
        num_masked,
    )  # fmt: skip
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
        reads_action_mask=plugins.reads_action_mask,
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
    agent relabels), its rewards scaled and its observations normalised. With a buffer that
    takes feedback (an `update`, prioritized replay's), `learn_with_feedback`."""
    keys = jax.random.split(key, setup.config.gradient_steps * setup.config.collections_per_update)
    sample = functools.partial(sample_batch, setup, buffer_state, obs_stats, hp)
    return gradient_steps(setup.learner, learner_state, sample, keys, hp)


def sample_batch(setup: Setup, buffer_state, obs_stats, hp, key):
    """A batch sampled from `buffer_state` (relabelled, if the agent relabels), its rewards
    scaled and its observations normalised."""
    config, buffer, relabel = setup.config, setup.buffer, setup.relabel
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


def learn_with_feedback(setup: Setup, learner_state, buffer_state, obs_stats, key, hp):
    """`learn` for a buffer with an `update`: after each gradient step, the buffer is told the
    learner's `priority` of each sampled item (its `index`), and the next batch is sampled from
    the buffer so updated (a learner's cycle, TD3's, unrolled as `learn` unrolls it).
    `(learner_state, buffer_state, metrics)`, `priority` not among them."""
    keys = jax.random.split(key, setup.config.gradient_steps * setup.config.collections_per_update)

    def step(carry, key, phase):
        learner_state, buffer_state = carry
        key_sample, key_learn = jax.random.split(key)  # as `gradient_steps` splits each key
        batch = split_envs(sample_batch(setup, buffer_state, obs_stats, hp, key_sample))
        learner_state, metrics = learn_step(
            setup.learner, learner_state, batch, key_learn, hp, phase
        )
        buffer_state = setup.buffer.update(buffer_state, batch["index"], metrics.pop("priority"))
        return (learner_state, buffer_state), metrics

    period = setup.learner.period
    carry, metrics = over_cycles(period, step, (learner_state, buffer_state), keys)
    return *carry, metrics


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

    def skip(shapes, learner_state, buffer_state, *_):
        nan = jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shapes[-1])
        return (learner_state, nan) if len(shapes) == 2 else (learner_state, buffer_state, nan)

    if hasattr(setup.buffer, "update"):
        learned = batching.gate(ready, functools.partial(learn_with_feedback, setup), skip, *args)
        learner_state, buffer_state, losses = learned
        state = state.replace(buffer=buffer_state)
    else:
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
