"""Proximal Policy Optimization (Schulman et al., 2017, arXiv:1707.06347) for discrete and
continuous actions, following the implementation details catalogued by Huang et al. (2022, ICLR
blog track). One `update` reads top-down: collect a rollout -> advantages (GAE that knows
truncation) -> epochs of shuffled minibatches, each a clipped-surrogate step with a global-norm
gradient clip. Its parts (config, hparams, network, setup, state) are in `ppo_config`.

    agent = ppo.make(PPOConfig(num_envs=8), env, env_params)
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

Deviations and choices, written down:

- Observation normalisation statistics live in the learner state. A rollout is collected and learned
  from with the same statistics (so the first ratio is exactly 1); they are updated afterwards.
- `hparams.reward_scale` multiplies the rewards PPO learns from by a constant (1 by default).
- Reward scaling divides rewards by the running standard deviation of the discounted return
  `G = gamma G + r`, set to 0 after every episode end (truncations included; gymnasium 1.x's
  `NormalizeReward` drops it on the terminal step and carries it across a truncation), its
  statistics in the learner state and taken over the whole rollout before its rewards are divided.
  Episode returns in the metrics are always the raw ones.
- The learning rate anneals linearly per update, from `learning_rate` to 0 at the run's end.
- The action head (`rlsuite.networks.action_heads`) owns the distribution's choices (an unsquashed
  Gaussian the environment clips, or brax.training's squashed one with a sampled entropy), and
  the network its memory (`rlsuite.networks.memory`: a feed-forward one's carry is `()`).
- Action masks (`rlsuite.environment.masks`): the policy samples, scores and acts among the legal
  actions only, from the masks the rollout kept.

A research variant passes functions in (`prepare`): a `policy_loss`, `minibatches`, a `network`,
and a learning stage `learn_with` for what reaches beyond one minibatch's loss
(`rlsuite.agents.ppo_hooks`: state across updates, a penalty against the rollout's policy, a
step after each gradient step, a phase after the epochs; FixPO is all four).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rlsuite.agents import registry
from rlsuite.agents.ppo_config import (
    PPOConfig,
    PPOHparams,
    PPOSetup,
    PPOState,
    actor_critic,
    apply,
    check_hparams,
    entropy_weight,
    env_split,
    initial_carry,
    learning_rate,
    normalized,
    optimizer,
    step,
)
from rlsuite.data.transition import Transition
from rlsuite.environment import Environment, masks
from rlsuite.environment.wrappers import EpisodeStatistics, episode_metrics
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.mesh import split_minibatch
from rlsuite.loop.rollout import (
    EnvBatch,
    RecurrentPolicy,
    reset_batch,
    rollout,
    sequence_starts,
)
from rlsuite.networks.action_heads import for_policy
from rlsuite.ops import batching, losses, running_stats
from rlsuite.ops import epochs as ops_epochs
from rlsuite.ops.returns import gae


class Epochs(NamedTuple):
    """PPO's learning stage, `prepare`'s default `learn_with`: `init(hp)` gives what the learner
    keeps across updates (`PPOState.variant`: nothing), `learn(setup, state, batch, key, lr, hp)
    -> (params, opt_state, variant, metrics)` takes the epochs of minibatch steps (`learn`). A
    variant passes a value with these two methods (`rlsuite.agents.ppo_hooks.Hooks`)."""

    def init(self, hp) -> tuple:
        return ()

    def learn(self, setup: PPOSetup, state: PPOState, batch: dict, key, lr, hp: PPOHparams):
        return learn(setup, state, batch, key, lr, hp)


def init(setup: PPOSetup, key: jax.Array, hp: PPOHparams) -> PPOState:
    config = setup.config
    key, key_net, key_env = jax.random.split(key, 3)
    obs_shape = setup.env.observation_space(setup.env_params).shape
    env = reset_batch(setup.env, setup.env_params, key_env, config.num_envs)
    params = setup.network.init(key_net, obs_shape)
    return PPOState(
        params=params,
        opt_state=optimizer(hp).init(params),
        obs_stats=running_stats.init(obs_shape),
        return_stats=running_stats.init(()),
        discounted_return=jnp.zeros((config.num_envs,)),
        env=env._replace(carry=setup.network.initial(config.num_envs)),
        key=key,
        update_step=jnp.zeros((), jnp.int32),
        variant=setup.learn_with.init(hp),
    )


def sampling_policy(setup: PPOSetup, state: PPOState) -> RecurrentPolicy:
    """The policy PPO collects with: `(key, obs, carry, action_mask=None) -> (action, extras,
    carry)`, the extras each step's log-probability, value and memory after it (and, squashed,
    the pre-tanh sample), what learning reads of a rollout."""

    def policy(key, obs, carry, action_mask=None):
        def sample(dist, value):
            action, extras = setup.head.sample(masks.masked(dist, action_mask), key)
            return action, {**extras, "value": value}

        (action, extras), carry = step(setup, state.params, state.obs_stats, obs, carry, sample)
        return action, {**extras, "carry": carry}, carry

    return RecurrentPolicy(policy, functools.partial(initial_carry, setup, state))


def collect(setup: PPOSetup, state: PPOState, key: jax.Array) -> tuple[EnvBatch, Transition]:
    """A rollout of `config.num_steps` steps of every environment with the current policy
    (`sampling_policy`)."""
    config = setup.config
    return rollout(
        setup.env, setup.env_params, sampling_policy(setup, state), key, state.env,
        config.num_steps, reset_slots=config.reset_slots,
    )  # fmt: skip


def scale_rewards(setup: PPOSetup, state: PPOState, tr: Transition, hp: PPOHparams):
    """The rewards PPO learns from, `[num_steps, num_envs]`, and the updated return statistics
    and running discounted returns (see the module docstring)."""
    reward = tr.reward * hp.reward_scale
    if not setup.config.scale_rewards:
        return reward, state.return_stats, state.discounted_return

    def accumulate(ret, xs):
        reward, done = xs
        ret = ret * hp.gamma + reward
        return jnp.where(done, 0.0, ret), ret

    last, returns = jax.lax.scan(accumulate, state.discounted_return, (reward, tr.done))
    stats = running_stats.update(state.return_stats, returns)
    return reward / jnp.sqrt(stats.var + 1e-8), stats, last


def advantages(setup: PPOSetup, state: PPOState, tr: Transition, rewards, hp: PPOHparams):
    """GAE advantages `[num_steps, num_envs]`, bootstrapping from `V(next_obs_t)` under the
    memory after step `t` (truncation aware: `rlsuite.ops.returns.gae`)."""
    next_obs = normalized(setup, state.obs_stats, tr.next_obs)
    next_values = setup.network.values_after(state.params, tr.extras["carry"], next_obs)
    values = tr.extras["value"]
    return gae(rewards, values, next_values, tr.terminated, tr.truncated, hp.gamma, hp.gae_lambda)


def learning_batch(setup: PPOSetup, tr: Transition, advantages: jax.Array, carry=()) -> dict:
    """What the epochs learn from, time-major (`[num_steps, num_envs, ...]` leaves), and what the
    network keeps of the memory (`carry`, the rollout's starting one, and `starts`)."""
    values = tr.extras["value"]
    return {
        **setup.network.learning_memory(carry, sequence_starts(tr)),
        "obs": tr.obs,
        "action": setup.head.learned_action(tr.action, tr.extras),
        "log_prob": tr.extras["log_prob"],
        "value": values,
        "advantages": advantages,
        "targets": advantages + values,
        **({masks.KEY: tr.extras[masks.KEY]} if masks.KEY in tr.extras else {}),
    }


def forward(setup: PPOSetup, params, obs_stats, minibatch: dict):
    """`(distribution, value)` over `minibatch` (from its memory), the distribution restricted
    to the legal actions where the minibatch has masks."""
    memory = minibatch["carry"], minibatch["starts"]
    dist, value = apply(setup, params, obs_stats, minibatch["obs"], *memory)
    return masks.masked(dist, minibatch.get(masks.KEY)), value


def objective(setup: PPOSetup, dist, value, minibatch: dict, key, hp: PPOHparams, entropy_weight):
    """`(total loss, metrics)` of a minibatch from its `forward`: clipped surrogate
    (`setup.policy_loss`), value loss (clipped around the rollout's values when the config says
    so) and entropy bonus."""
    config = setup.config
    log_prob = setup.head.log_prob(dist, minibatch["action"])
    entropy = setup.head.entropy(dist, key).mean()
    adv = minibatch["advantages"]
    if config.normalize_advantages:
        adv = losses.normalize_advantages(adv)
    pi_loss, pi_metrics = setup.policy_loss(log_prob, minibatch["log_prob"], adv, hp.clip_eps)
    if config.clip_value_loss:
        v_loss = losses.clipped_value_loss(
            value, minibatch["value"], minibatch["targets"], hp.vf_clip_eps
        )
    else:
        v_loss = losses.value_loss(value, minibatch["targets"])
    total = pi_loss + hp.vf_coef * v_loss - entropy_weight * entropy
    return total, {"policy_loss": pi_loss, "value_loss": v_loss, "entropy": entropy, **pi_metrics}


def loss(setup: PPOSetup, params, obs_stats, minibatch: dict, key, hp, entropy_weight=None):
    """`(total loss, metrics)` of one minibatch (`objective` of its `forward`); the entropy
    weight is `hp.ent_coef` unless given."""
    weight = hp.ent_coef if entropy_weight is None else entropy_weight
    dist, value = forward(setup, params, obs_stats, minibatch)
    return objective(setup, dist, value, minibatch, key, hp, weight)


def gradient_step(setup: PPOSetup, lr, hp: PPOHparams, loss_of: Callable) -> Callable:
    """`(carry, minibatch, key) -> (carry, metrics)`: one optimiser step on `loss_of(params,
    variant, minibatch, key) -> (loss, metrics)`, the carry `(params, opt_state, variant)`."""
    tx = optimizer(hp)

    def step(carry, minibatch, key):
        params, opt_state, variant = carry
        minibatch = split_minibatch(setup.network, minibatch)
        grads, metrics = jax.grad(loss_of, has_aux=True)(params, variant, minibatch, key)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
        return (params, opt_state, variant), metrics

    return step


def epoch_minibatches(setup: PPOSetup, batch: dict, key):
    """`(minibatches, keys)` of one epoch: `setup.minibatches`' slices of `batch` (stacked on a
    leading axis) and the keys of their steps' entropy samples (None where the head needs
    none; the others shuffle with the epoch's key itself)."""
    key, keys = setup.head.entropy_keys(key, setup.config.num_minibatches)
    return setup.minibatches(key, batch, setup.config.num_minibatches), keys


def epochs(setup: PPOSetup, state: PPOState, batch: dict, key, step: Callable):
    """`((params, opt_state, variant), metrics)`: `config.update_epochs` epochs of `step` (see
    `gradient_step`) over `batch`'s minibatches from the state's, the metrics the steps'
    means. The epochs' keys are `jax.random.split(key, update_epochs)`."""

    carry = (state.params, state.opt_state, state.variant)
    slices = functools.partial(epoch_minibatches, setup, batch)
    count = setup.config.update_epochs
    return ops_epochs.epochs(carry, key, count, slices, lambda c, xs: step(c, *xs))


def learn(setup: PPOSetup, state: PPOState, batch: dict, key, lr, hp: PPOHparams):
    """PPO's epochs over `batch` (`Epochs.learn`): params, optimizer state, the variant's state
    and the steps' mean metrics."""
    weight = entropy_weight(state, hp)

    def loss_of(params, variant, minibatch, key):
        return loss(setup, params, state.obs_stats, minibatch, key, hp, weight)

    carry, metrics = epochs(setup, state, batch, key, gradient_step(setup, lr, hp, loss_of))
    return (*carry, metrics)


class Experience(NamedTuple):
    """One rollout and what PPO derives from it before learning (`experience`)."""

    env: EnvBatch  # the batch after the rollout
    transitions: Transition  # [num_steps, num_envs] leaves
    advantages: jax.Array  # [num_steps, num_envs]
    return_stats: running_stats.RunningStats
    discounted_return: jax.Array  # [num_envs]


def experience(setup: PPOSetup, state: PPOState, key, hp: PPOHparams) -> Experience:
    """Collect a rollout with `key`, scale its rewards and compute its advantages."""
    env_batch, tr = collect(setup, state, key)
    return experience_of(setup, state, env_batch, tr, hp)


def experience_of(setup: PPOSetup, state: PPOState, env_batch, tr: Transition, hp: PPOHparams):
    """The `Experience` of a collected rollout `tr` (whose rewards a caller may have set, as
    PAIRED's adversary's regret) that left the environments at `env_batch`."""
    rewards, return_stats, discounted_return = scale_rewards(setup, state, tr, hp)
    adv = advantages(setup, state, tr, rewards, hp)
    return Experience(env_batch, tr, adv, return_stats, discounted_return)


def absorb(setup: PPOSetup, state: PPOState, exp: Experience, learned, key, lr):
    """The state after `exp`: the `(params, opt_state, variant, metrics)` that `learn` returned
    on it, the rollout's environments and statistics, `key` as the next key; and the update's
    metrics."""
    params, opt_state, variant, metrics = learned
    obs_stats = state.obs_stats
    if setup.config.normalize_observations:
        obs_stats = running_stats.update(obs_stats, exp.transitions.obs)
    state = PPOState(
        params=params,
        opt_state=opt_state,
        obs_stats=obs_stats,
        return_stats=exp.return_stats,
        discounted_return=exp.discounted_return,
        env=exp.env,
        key=key,
        update_step=state.update_step + 1,
        variant=variant,
    )
    metrics = {f"losses/{k}": v for k, v in metrics.items()}
    metrics.update(episode_metrics(exp.transitions.info))
    metrics["charts/learning_rate"] = lr
    return state, metrics


def learn_from(
    setup: PPOSetup, state: PPOState, exp: Experience, carry, key, key_next, hp, learning=None
):
    """The learning half of a PPO update, on the rollout `exp` that started from the memory
    `carry` (`()` without one): the step size, the learning batch, the epochs (with `key`) and
    the state after them, with `key_next` as its next key; returns it and the update's metrics.

    With `learning` (a bool array), the epochs run only where it is true (`batching.gate`);
    elsewhere the parameters and optimiser state are kept, the losses read 0, and `update_step`
    (which the schedules follow) does not advance. PPO, UED's student and PAIRED learn so."""
    lr = learning_rate(setup, state, hp)
    batch = learning_batch(setup, exp.transitions, exp.advantages, carry)
    learned = functools.partial(setup.learn_with.learn, setup, state, batch, key, lr, hp)
    if learning is None:
        learned = learned()
    else:

        def keep(shapes):
            zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[3])
            return state.params, state.opt_state, state.variant, zeros

        learned = batching.gate(learning, learned, keep)
    before = state.update_step
    state, metrics = absorb(setup, state, exp, learned, key_next, lr)
    if learning is not None:
        # The schedules (an annealed learning rate, a decaying entropy weight) advance with the
        # learning steps, not with the rollouts only scored (jaxued's optimiser count).
        state = state.replace(update_step=before + learning.astype(before.dtype))
    return state, metrics


def update(setup: PPOSetup, state: PPOState, hp: PPOHparams) -> tuple[PPOState, dict]:
    """One PPO iteration: collect -> rewards -> advantages -> epochs of minibatches."""
    key, key_collect, key_learn = jax.random.split(state.key, 3)
    exp = experience(setup, state, key_collect, hp)
    return learn_from(setup, state, exp, state.env.carry, key_learn, key, hp)


def act(
    setup: PPOSetup, state: PPOState, obs, key, deterministic=False, carry=(), action_mask=None
):
    """`(action, carry after it)` for `obs` from the memory `carry` (`()` without memory, where
    `obs` may be one observation or a batch; with memory a batch `[B, ...]`), among the legal
    actions of `action_mask` where one is given."""

    def read(dist, value):
        dist = masks.masked(dist, action_mask)
        return setup.head.mode(dist) if deterministic else dist.sample(seed=key)

    return step(setup, state.params, state.obs_stats, obs, carry, read)


def prepare(
    config: PPOConfig,
    env: Environment,
    env_params=None,
    policy_loss: Callable = losses.ppo_policy_loss,
    minibatches: Callable | None = None,
    network: Any = None,
    learn_with: Any = None,
) -> PPOSetup:
    """The `PPOSetup` of PPO on `env`: the environment wrapped as PPO steps it and the network;
    `make` binds the steps to it. A research variant passes its own step: `policy_loss(log_prob,
    old_log_prob, advantages, clip_eps) -> (loss, metrics)`, `minibatches(key, batch,
    num_minibatches)` (default: the network's, `shuffled_steps` or with memory `env_sequences`),
    or a `network` in the carry shape (`rlsuite.networks.memory`: `FeedForward(module)` of a
    module `apply(params, obs) -> (distribution, value)`, or `Recurrent(module)` of one with
    `RecurrentActorCritic`'s signature; default `actor_critic`), or a learning stage `learn_with`
    (`Epochs`' two methods; `rlsuite.agents.ppo_hooks.Hooks`)."""
    if not isinstance(config, PPOConfig):
        raise TypeError(f"ppo.make needs a PPOConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    space = env.action_space(env_params)
    if network is None:
        network = actor_critic(config, space, env.name, env.observation_space(env_params))
    if minibatches is None:
        minibatches = network.minibatches
    head = for_policy(space, config.distribution)
    env = EpisodeStatistics(head.wrap(env))
    learn_with = Epochs() if learn_with is None else learn_with
    return PPOSetup(config, network, env, env_params, policy_loss, minibatches, head, learn_with)


def make(config: PPOConfig, env: Environment, env_params=None, **variants) -> Agent:
    """Bind PPO to `env`; `variants` are `prepare`'s research variants (`policy_loss`,
    `minibatches`, `network`, `learn_with`)."""
    setup = prepare(config, env, env_params, **variants)
    return bind(
        setup,
        init=init,
        update=update,
        **acting(act, initial_carry, setup.network.memory),
        name="ppo",
        config=config,
        env=setup.env,
        env_params=setup.env_params,
        default_hparams=PPOHparams(),
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.num_steps,
        env_split=env_split(setup),
        trainable=trainable,
        reads_action_mask=True,
    )


def trainable(state: PPOState):
    """What a diverging update makes non-finite: the parameters and the optimiser's state."""
    return state.params, state.opt_state


# This family in the algorithm registry (`rlsuite train ppo`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="ppo",
        make=make,
        config_cls=PPOConfig,
        hparams_cls=PPOHparams,
        offline=False,
        default_env="cartpole",
        memory=True,
    )
)
