"""Proximal Policy Optimization (Schulman et al., 2017, arXiv:1707.06347) for discrete and
continuous actions, following the implementation details catalogued by Huang et al. (2022, ICLR
blog track).

One `update` reads top-down: collect a rollout -> advantages (GAE that knows truncation) -> epochs
of shuffled minibatches, each a clipped-surrogate step with a global-norm gradient clip.

    agent = ppo.make(PPOConfig(num_envs=8), env, env_params)
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

Deviations and choices, written down:
- Observation normalisation statistics live in the learner state. A rollout is collected and learned
  from with the same statistics (so the first ratio is exactly 1); they are updated afterwards.
- `hparams.reward_scale` multiplies the rewards PPO learns from by a constant (1 by default).
- Reward scaling divides rewards by the running standard deviation of the discounted return, with
  statistics in the learner state; episode returns in the metrics are always the raw ones. The
  return is `G = gamma G + r`, set to 0 after every episode end (truncations included).
  gymnasium 1.x's `NormalizeReward` computes `G = gamma (1 - terminated) G + r` instead, which
  drops the return so far on the terminal step and carries it across a truncation. The
  statistics take the whole rollout's returns before its rewards are divided (not step by step).
- The learning rate anneals linearly per update, from `learning_rate` to 0 at
  `config.total_timesteps`.
- Continuous actions are an unsquashed diagonal Gaussian by default; the environment clips them
  (`ClipAction`), and the unclipped sample is what the log-probability is taken of. With
  `config.distribution="tanh_gaussian"` (brax.training's PPO policy) they are `tanh(u)` of a
  Gaussian sample `u` whose standard deviation the actor outputs, rescaled to the bounds
  (`RescaleAction`); the rollout keeps `u`, and log-probabilities are taken at `u` with the tanh
  correction. Its entropy has no closed form: the bonus is the Gaussian's entropy plus the
  log-determinant of the squash at one fresh reparameterised sample per item and minibatch step
  (`networks.squashed_entropy`, as brax.training), so that its gradient sees the squash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite import losses, running_stats
from rlsuite.agent import Agent, check_config, check_hidden_sizes
from rlsuite.environment import Environment, positive, require
from rlsuite.networks import (
    TORSOS,
    ActorCritic,
    activation_fn,
    encoder,
    resolve_torso,
    squashed_entropy,
    squashed_log_prob,
    squashed_mode,
)
from rlsuite.returns import gae
from rlsuite.rollout import EnvBatch, reset_batch, rollout
from rlsuite.spaces import Box, Discrete
from rlsuite.wrappers import ClipAction, EpisodeStatistics, RescaleAction, episode_metrics

DISTRIBUTIONS = ("gaussian", "tanh_gaussian")


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Static configuration (shapes, loop sizes, switches); closed over by the jitted functions."""

    num_envs: int = 4
    """parallel environments per agent"""
    num_steps: int = 128
    """steps per environment in each rollout"""
    num_minibatches: int = 4
    """minibatches per epoch; must divide num_envs * num_steps"""
    update_epochs: int = 4
    """passes over each rollout"""
    total_timesteps: int = 500_000
    """environment steps of the whole run (sets the learning-rate annealing horizon)"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """hidden layer sizes of the actor, and of the critic unless critic_hidden_sizes is set"""
    critic_hidden_sizes: tuple[int, ...] | None = None
    """hidden layer sizes of the critic (None: hidden_sizes); brax.training's PPO, for one,
    uses (32, 32, 32, 32) for the policy and (256,) * 5 for the value"""
    activation: str = "tanh"
    """hidden activation: tanh, relu, elu, gelu or silu (swish)"""
    distribution: str = "gaussian"
    """continuous actions: gaussian (unsquashed, state-independent std, clipped by the env) or
    tanh_gaussian (squashed by tanh, std an output of the actor: brax.training's policy)"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over total_timesteps"""
    normalize_advantages: bool = True
    """normalise advantages per minibatch"""
    clip_value_loss: bool = True
    """clip the value loss around the rollout's values (PPO's value clipping)"""
    normalize_observations: bool = False
    """normalise observations with running statistics kept in the learner state"""
    scale_rewards: bool = False
    """divide rewards by the running std of the discounted return"""
    reset_slots: int | None = None
    """reset the environments that finished this many at a time (rollout.step_batch); None:
    reset the whole batch and keep the finished ones' (pays where a reset costs per environment,
    as Brax ant's does)"""
    torso: str = "auto"
    """what reads the observations before the hidden layers: auto (mlp for vectors, minatar for
    images below 36x36, nature above), mlp, minatar (3x3 conv, 16 channels, dense 128) or nature
    (the DQN Nature CNN, dense 512); shared by the actor and the critic"""

    def __post_init__(self):
        if self.torso not in TORSOS:
            raise ValueError(f"PPOConfig.torso={self.torso!r} is not one of: {', '.join(TORSOS)}")
        check_config(self, ("num_envs", "num_steps", "num_minibatches", "update_epochs"))
        check_config(self, ("total_timesteps",))
        if self.reset_slots is not None:
            check_config(self, ("reset_slots",))
        batch = self.num_envs * self.num_steps
        if batch % self.num_minibatches:
            raise ValueError(
                f"PPOConfig.num_minibatches={self.num_minibatches} must divide the batch "
                f"num_envs * num_steps = {self.num_envs} * {self.num_steps} = {batch}"
            )
        check_hidden_sizes(self)
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"PPOConfig.distribution={self.distribution!r} is not one of: "
                f"{', '.join(DISTRIBUTIONS)}"
            )
        if self.critic_hidden_sizes is not None:
            check_hidden_sizes(self, "critic_hidden_sizes")
        activation_fn(self.activation)

    @property
    def num_updates(self) -> int:
        """Updates in the whole run: `total_timesteps // (num_envs * num_steps)` (at least 1)."""
        return max(1, self.total_timesteps // (self.num_envs * self.num_steps))


@struct.dataclass
class PPOHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    learning_rate: float = 2.5e-4
    """Adam step size (annealed to 0 when config.anneal_lr)"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE trace parameter"""
    clip_eps: float = 0.2
    """surrogate clipping range"""
    vf_clip_eps: float = 0.2
    """value clipping range (when config.clip_value_loss)"""
    vf_coef: float = 0.5
    """weight of the value loss"""
    ent_coef: float = 0.01
    """weight of the entropy bonus"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    adam_eps: float = 1e-5
    """Adam epsilon"""
    reward_scale: float = 1.0
    """constant factor on the rewards PPO learns from (brax.training's reward_scaling; applied
    before config.scale_rewards' running normalisation, which divides it out again)"""


@struct.dataclass
class PPOState:
    params: dict
    opt_state: optax.OptState
    obs_stats: running_stats.RunningStats
    return_stats: running_stats.RunningStats
    discounted_return: jax.Array  # [num_envs], for reward scaling
    env: EnvBatch
    key: jax.Array
    update_step: jax.Array


def check_hparams(hp: PPOHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, PPOHparams):
        raise TypeError(f"ppo: hparams must be a PPOHparams, got {type(hp).__name__}")
    fields = (
        "learning_rate",
        "clip_eps",
        "vf_clip_eps",
        "max_grad_norm",
        "adam_eps",
        "reward_scale",
    )
    positive(hp, *fields, env="ppo", kind="hparams")
    for field in ("gamma", "gae_lambda"):
        require(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "ppo", "hparams")
    for field in ("vf_coef", "ent_coef"):
        require(hp, field, lambda v: v >= 0, "a value >= 0", "ppo", "hparams")


def _optimizer(hp: PPOHparams) -> optax.GradientTransformation:
    # Built from traced hyperparameters inside the update; its state's structure does not depend
    # on their values. The learning rate is applied separately (annealed).
    return optax.chain(
        optax.clip_by_global_norm(hp.max_grad_norm), optax.scale_by_adam(eps=hp.adam_eps)
    )


def actor_critic(
    config: PPOConfig, action_space, env_name: str = "env", obs_space=None
) -> ActorCritic:
    """The actor-critic network PPO uses for `action_space` and `obs_space` (default: vector
    observations) (`apply(params, obs)`)."""
    squash = config.distribution == "tanh_gaussian"
    if isinstance(action_space, Discrete) and not squash:
        head = {"num_actions": action_space.n}
    elif isinstance(action_space, Box) and len(action_space.shape) == 1 and action_space.bounded:
        head = {"action_dim": action_space.shape[0], "squash": squash}
    else:
        allowed = "a bounded 1-D Box" if squash else "Discrete or bounded 1-D Box"
        raise TypeError(
            f"ppo with distribution={config.distribution!r} handles {allowed} action spaces; "
            f"{env_name} has {action_space!r}"
        )
    features = None
    if obs_space is not None:
        categories = obs_space.n if isinstance(obs_space, Discrete) else None
        torso = resolve_torso(config.torso, obs_space.shape, "PPOConfig")
        features = encoder(torso, obs_space.shape, categories)
    return ActorCritic(
        config.hidden_sizes,
        config.activation,
        critic_hidden_sizes=config.critic_hidden_sizes,
        encoder=features,
        **head,
    )


def make(
    config: PPOConfig,
    env: Environment,
    env_params=None,
    policy_loss: Callable = losses.ppo_policy_loss,
) -> Agent:
    """Bind PPO to `env`. `policy_loss(log_prob, old_log_prob, advantages, clip_eps) ->
    (loss, metrics)` may be replaced by a research variant."""
    if not isinstance(config, PPOConfig):
        raise TypeError(f"ppo.make needs a PPOConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    space = env.action_space(env_params)
    obs_space = env.observation_space(env_params)
    network = actor_critic(config, space, env.name, obs_space)
    squash = config.distribution == "tanh_gaussian"
    if isinstance(space, Box):
        env = RescaleAction(env) if squash else ClipAction(env)
    env = EpisodeStatistics(env)
    obs_shape = obs_space.shape

    def apply(params, obs_stats, obs):
        if config.normalize_observations:
            obs = running_stats.normalize(obs_stats, obs, clip=10.0)
        return network.apply(params, obs)

    def init(key, hp: PPOHparams) -> PPOState:
        key, key_net, key_env = jax.random.split(key, 3)
        params = network.init(key_net, jnp.zeros((1, *obs_shape)))
        return PPOState(
            params=params,
            opt_state=_optimizer(hp).init(params),
            obs_stats=running_stats.init(obs_shape),
            return_stats=running_stats.init(()),
            discounted_return=jnp.zeros((config.num_envs,)),
            env=reset_batch(env, env_params, key_env, config.num_envs),
            key=key,
            update_step=jnp.zeros((), jnp.int32),
        )

    def collect(state: PPOState, key):
        def policy(key, obs):
            dist, value = apply(state.params, state.obs_stats, obs)
            if squash:  # keep the pre-squash sample: log-probabilities are taken at it
                raw = dist.distribution.sample(seed=key)
                extras = {"log_prob": squashed_log_prob(dist, raw), "value": value, "raw": raw}
                return jnp.tanh(raw), extras
            action = dist.sample(seed=key)
            return action, {"log_prob": dist.log_prob(action), "value": value}

        return rollout(
            env, env_params, policy, key, state.env, config.num_steps, None, config.reset_slots
        )

    def scale_rewards(state: PPOState, tr, hp):
        reward = tr.reward * hp.reward_scale
        if not config.scale_rewards:
            return reward, state.return_stats, state.discounted_return

        def accumulate(ret, xs):
            reward, done = xs
            ret = ret * hp.gamma + reward
            return jnp.where(done, 0.0, ret), ret

        last, returns = jax.lax.scan(accumulate, state.discounted_return, (reward, tr.done))
        stats = running_stats.update(state.return_stats, returns)
        return reward / jnp.sqrt(stats.var + 1e-8), stats, last

    def loss_fn(params, obs_stats, batch, key, hp):
        dist, value = apply(params, obs_stats, batch["obs"])
        if squash:
            log_prob = squashed_log_prob(dist, batch["action"])
            entropy = squashed_entropy(dist, key).mean()
        else:
            log_prob = dist.log_prob(batch["action"])
            entropy = dist.entropy().mean()
        advantages = batch["advantages"]
        if config.normalize_advantages:
            advantages = losses.normalize_advantages(advantages)
        pi_loss, pi_metrics = policy_loss(log_prob, batch["log_prob"], advantages, hp.clip_eps)
        if config.clip_value_loss:
            v_loss = losses.clipped_value_loss(
                value, batch["value"], batch["targets"], hp.vf_clip_eps
            )
        else:
            v_loss = losses.value_loss(value, batch["targets"])
        total = pi_loss + hp.vf_coef * v_loss - hp.ent_coef * entropy
        metrics = {"policy_loss": pi_loss, "value_loss": v_loss, "entropy": entropy, **pi_metrics}
        return total, metrics

    def learning_rate(state: PPOState, hp: PPOHparams):
        if not config.anneal_lr:
            return jnp.asarray(hp.learning_rate, jnp.float32)
        return hp.learning_rate * jnp.maximum(1.0 - state.update_step / config.num_updates, 0.0)

    def learn(state: PPOState, batch, key, lr, hp):
        tx = _optimizer(hp)
        batch_size = config.num_envs * config.num_steps

        def minibatch_step(carry, xs):
            params, opt_state = carry
            minibatch, key = xs
            grads, metrics = jax.grad(loss_fn, has_aux=True)(
                params, state.obs_stats, minibatch, key, hp
            )
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
            return (params, opt_state), metrics

        def epoch(carry, key):
            # Keys for the squashed policy's entropy samples only: the other policies shuffle
            # with the epoch's key itself.
            key, key_entropy = jax.random.split(key) if squash else (key, None)
            order = jax.random.permutation(key, batch_size)
            shuffled = jax.tree.map(
                lambda x: x[order].reshape(config.num_minibatches, -1, *x.shape[1:]), batch
            )
            keys = jax.random.split(key_entropy, config.num_minibatches) if squash else None
            return jax.lax.scan(minibatch_step, carry, (shuffled, keys))

        keys = jax.random.split(key, config.update_epochs)
        (params, opt_state), metrics = jax.lax.scan(epoch, (state.params, state.opt_state), keys)
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    def update(state: PPOState, hp: PPOHparams):
        key, key_collect, key_learn = jax.random.split(state.key, 3)
        env_batch, tr = collect(state, key_collect)
        rewards, return_stats, discounted_return = scale_rewards(state, tr, hp)
        _, next_values = apply(state.params, state.obs_stats, tr.next_obs)
        values = tr.extras["value"]
        advantages = gae(
            rewards, values, next_values, tr.terminated, tr.truncated, hp.gamma, hp.gae_lambda
        )
        batch = {
            "obs": tr.obs,
            "action": tr.extras["raw"] if squash else tr.action,
            "log_prob": tr.extras["log_prob"],
            "value": values,
            "advantages": advantages,
            "targets": advantages + values,
        }
        batch = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), batch)
        lr = learning_rate(state, hp)
        params, opt_state, metrics = learn(state, batch, key_learn, lr, hp)
        obs_stats = state.obs_stats
        if config.normalize_observations:
            obs_stats = running_stats.update(obs_stats, tr.obs)
        state = PPOState(
            params=params,
            opt_state=opt_state,
            obs_stats=obs_stats,
            return_stats=return_stats,
            discounted_return=discounted_return,
            env=env_batch,
            key=key,
            update_step=state.update_step + 1,
        )
        metrics = {f"losses/{k}": v for k, v in metrics.items()}
        metrics.update(episode_metrics(tr.info))
        metrics["charts/learning_rate"] = lr
        return state, metrics

    def act(state: PPOState, obs, key, deterministic: bool = False):
        dist, _ = apply(state.params, state.obs_stats, obs)
        if deterministic:
            return squashed_mode(dist) if squash else dist.mode()
        return dist.sample(seed=key)

    return Agent(
        name="ppo",
        config=config,
        env=env,
        env_params=env_params,
        default_hparams=PPOHparams(),
        init=init,
        update=update,
        act=act,
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.num_steps,
    )
