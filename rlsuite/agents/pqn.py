"""PQN (Gallici et al. 2024, "Simplifying Deep Temporal Difference Learning", arXiv:2407.04811):
online Q(lambda) over many vectorised environments, with LayerNorm in the Q-network, and no
replay buffer and no target network.

    agent = pqn.make(PQNConfig(), env, env_params)            # env: a Discrete action space
    state = agent.init(key, agent.default_hparams)
    state, metrics = agent.update(state, agent.default_hparams)

One update has PPO's shape, read top-down:

    collect `num_envs x num_steps` steps, epsilon-greedy on the current network (`collect`)
    -> Q(lambda) targets, computed backwards over the rollout (`targets`)
    -> `update_epochs` epochs of `num_minibatches` shuffled minibatches of the squared TD error
       (`learn`), with gradients clipped by global norm and Adam's step size decayed linearly
       to 0 over the run.

The targets are Peng's Q(lambda) (`rlsuite.ops.returns.td_lambda` on `max_a Q(s'_t, a)`):
`G_t = r_t + gamma (1 - terminated_t) [(1 - lambda) max_a Q(s'_t, a) + lambda G_{t+1}]`, the
trace cut where an episode ended (a truncated step bootstraps fully from its true last
observation `s'_t`; a terminated one not at all) and at the rollout's last step. The values are
the network's at the start of the update, as the rollout's own are. Exploration is epsilon-greedy
with DQN's linear schedule (`rlsuite.ops.exploration.linear_epsilon`, on the environment steps
at the start of each rollout). Defaults are purejaxql's CartPole configuration
(`pqn_cartpole.yaml`).

Action masks (`rlsuite.environment.masks`): where the environment has them, the greedy and the
exploring actions are chosen among the legal actions, and the targets' maximum is over the legal
actions at each next observation (`next_mask`, from the pre-reset state's masks).

Memory (`recurrent="gru"` or `"lstm"`, `rlsuite train pqn --recurrent gru`): the Q-network in
the carry shape of `rlsuite.networks.memory`, as recurrent PPO's. The rollout keeps the memory
after each step; the targets bootstrap from `Q(s'_t, .)` under that memory (a truncated step's
true last observation included); each minibatch is whole sequences of environments re-run from
the rollout's starting carry, a fresh carry where an episode began. purejaxql's PQN-RNN differs:
its targets are re-computed by the network of each minibatch step, over a window that reaches
back into the previous rollout, and it feeds the last action to the core.

Research variants are functions passed in: `make(..., targets=fn)` replaces the target
computation (`q_lambda_targets`' signature; it is given `next_mask=` where the environment has
masks) and `make(..., epsilon=fn)` the schedule.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry
from rlsuite.agents.learner import obs_encoder
from rlsuite.environment import Environment, masks, spaces
from rlsuite.environment.spaces import Discrete
from rlsuite.environment.wrappers import EpisodeStatistics, episode_metrics
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.mesh import minibatch_splits, split_minibatch
from rlsuite.loop.rollout import EnvBatch, RecurrentPolicy, reset_batch, rollout, sequence_starts
from rlsuite.networks import TORSOS, QNetwork, activation_fn
from rlsuite.networks.memory import FeedForward, Recurrent
from rlsuite.networks.recurrent import RecurrentQNetwork, check_cell
from rlsuite.ops import exploration
from rlsuite.ops.epochs import epochs, linear_decay
from rlsuite.ops.returns import td_lambda
from rlsuite.ops.validators import (
    check_field,
    check_hidden_sizes,
    check_positive,
    check_positive_ints,
)


@dataclasses.dataclass(frozen=True)
class PQNConfig:
    """Static configuration of PQN (purejaxql's CartPole values)."""

    num_envs: int = 32
    """parallel environments"""
    num_steps: int = 64
    """steps per environment in each rollout"""
    num_minibatches: int = 16
    """minibatches per epoch"""
    update_epochs: int = 4
    """passes over each rollout"""
    total_timesteps: int = 500_000
    """environment steps of the whole run (all envs together)"""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """hidden layer sizes of the Q network"""
    activation: str = "relu"
    """hidden activation: tanh, relu, elu, gelu or silu (swish)"""
    layer_norm: bool = True
    """LayerNorm after every hidden layer (the paper's stabiliser without a target network)"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0 over the run"""
    torso: str = "auto"
    """what reads the observations before the hidden layers: auto (mlp for vectors, minatar
    for images below 36x36, nature above), mlp, minatar or nature"""
    reset_slots: int | None = None
    """reset the environments that finished this many at a time (None: the whole batch)"""
    recurrent: str | None = None
    """a recurrent core after the hidden layers, memory carried as recurrent PPO's: gru or lstm
    (None: none). Each minibatch is then whole sequences of num_envs / num_minibatches envs"""
    recurrent_size: int = 128
    """units of the recurrent core"""

    def __post_init__(self):
        name = type(self).__name__
        check_positive_ints(
            self, ("num_envs", "num_steps", "num_minibatches", "update_epochs", "total_timesteps")
        )
        if self.reset_slots is not None:
            check_positive_ints(self, ("reset_slots",))
        if self.torso not in TORSOS:
            raise ValueError(f"{name}.torso={self.torso!r} is not one of: {', '.join(TORSOS)}")
        check_hidden_sizes(self)
        activation_fn(self.activation)
        if self.recurrent is not None:
            check_cell(self.recurrent, name)
            check_positive_ints(self, ("recurrent_size",))
            if self.num_envs % self.num_minibatches:
                raise ValueError(
                    f"{name}.num_minibatches={self.num_minibatches} must divide num_envs="
                    f"{self.num_envs} with recurrent={self.recurrent!r} (minibatches are whole "
                    "sequences of the environments)"
                )
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"{name}.num_minibatches={self.num_minibatches} must divide the rollout's "
                f"num_envs * num_steps = {self.num_envs * self.num_steps} steps"
            )

    @property
    def num_updates(self) -> int:
        """Updates in the whole run: `total_timesteps // (num_envs * num_steps)` (at least 1)."""
        return max(1, self.total_timesteps // (self.num_envs * self.num_steps))


@struct.dataclass
class PQNHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    learning_rate: float = 1e-4
    """Adam step size (decayed linearly to 0 with anneal_lr)"""
    gamma: float = 0.99
    """discount factor"""
    q_lambda: float = 0.95
    """trace of the Q(lambda) targets (0: one-step Q-learning)"""
    start_e: float = 1.0
    """exploration epsilon at the first environment step (read once, by init)"""
    end_e: float = 0.2
    """exploration epsilon from exploration_fraction of the run on (read once, by init)"""
    exploration_fraction: float = 0.2
    """share of total_timesteps over which epsilon falls linearly (read once, by init)"""
    max_grad_norm: float = 10.0
    """gradients are scaled down to this global norm where theirs is larger"""
    reward_scale: float = 0.1
    """constant factor on the rewards learned from"""


@struct.dataclass
class PQNState:
    """The network, Adam's state, the environments, the key, the updates taken (int32 []) and
    the exploration schedule's hyperparameters (float32 [], from `init`'s, as DQN keeps them)."""

    params: Any
    opt_state: optax.OptState
    env: EnvBatch
    key: jax.Array
    update_step: jax.Array
    start_e: jax.Array
    end_e: jax.Array
    exploration_fraction: jax.Array


class PQNSetup(NamedTuple):
    """What PQN's stages share, fixed when it is made (`make`)."""

    config: PQNConfig
    env: Environment  # wrapped: episode statistics in `info`
    env_params: Any
    network: FeedForward | Recurrent  # the Q-network in the carry shape (rlsuite.networks.memory)
    targets: Callable
    epsilon: Callable


def check_hparams(hp: PQNHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, PQNHparams):
        raise TypeError(f"pqn: hparams must be a PQNHparams, got {type(hp).__name__}")
    check_positive(
        hp, "learning_rate", "max_grad_norm", "reward_scale", owner="pqn", kind="hparams"
    )
    for field in ("gamma", "q_lambda", "start_e", "end_e", "exploration_fraction"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "pqn", "hparams")


def q_lambda_targets(reward, terminated, truncated, next_q, gamma, q_lambda, next_mask=None):
    """Peng's Q(lambda) targets `[T, E]` of a time-major rollout: `td_lambda` of the rewards on
    `max_a next_q` (`next_q [T, E, A]`, the values at each step's true next observation), the
    maximum over the legal actions of `next_mask [T, E, A]` where the environment has masks."""
    next_value = masks.legal_max(next_q, next_mask)
    return td_lambda(reward, next_value, terminated, truncated, gamma, q_lambda)


def init(setup: PQNSetup, key, hp: PQNHparams) -> PQNState:
    config = setup.config
    key, key_net, key_env = jax.random.split(key, 3)
    obs_shape = setup.env.observation_space(setup.env_params).shape
    params = setup.network.init(key_net, obs_shape)
    schedule = exploration.schedule_of(hp)
    env = reset_batch(setup.env, setup.env_params, key_env, config.num_envs)
    return PQNState(
        params=params,
        opt_state=optimizer(hp).init(params),
        env=env._replace(carry=setup.network.initial(config.num_envs)),
        key=key,
        update_step=jnp.zeros((), jnp.int32),
        **schedule,
    )


def optimizer(hp: PQNHparams) -> optax.GradientTransformation:
    """Clipping and Adam without the step size (applied separately, decayed), as PPO's."""
    return optax.chain(optax.clip_by_global_norm(hp.max_grad_norm), optax.scale_by_adam())


def env_steps(setup: PQNSetup, state: PQNState):
    """The environment steps taken before this update (all envs together)."""
    return state.update_step * setup.config.num_envs * setup.config.num_steps


def initial_carry(setup: PQNSetup, state: PQNState, num_envs: int):
    """The memory of `num_envs` fresh episodes (`Agent.initial_carry`; `()` without memory)."""
    return setup.network.initial(num_envs)


def collect(setup: PQNSetup, state: PQNState, key):
    """A rollout of `num_steps` steps of every environment, epsilon-greedy at this update's
    epsilon, keeping the memory after each step (`extras["carry"]`, `()` without memory)."""
    eps = setup.epsilon(env_steps(setup, state), state, setup.config.total_timesteps)

    def policy(key, obs, carry, action_mask=None):
        def read(q):
            return exploration.epsilon_greedy(q, key, eps, action_mask)

        action, carry = setup.network.step(state.params, carry, obs, read)
        return action, {"carry": carry}, carry

    config = setup.config
    env_batch, tr = rollout(
        setup.env, setup.env_params, RecurrentPolicy(policy, setup.network.initial), key,
        state.env, config.num_steps, reset_slots=config.reset_slots,
    )  # fmt: skip
    return env_batch, tr, eps


def targets(setup: PQNSetup, state: PQNState, tr, hp: PQNHparams):
    """The rollout's regression targets `[num_steps, num_envs]` (`setup.targets`, Q(lambda) by
    default) from the network's values at every step's true next observation (under the memory
    after that step)."""
    next_q = setup.network.values_after(state.params, tr.extras["carry"], tr.next_obs)
    reward = tr.reward * hp.reward_scale
    mask = {} if masks.FINAL not in tr.info else {"next_mask": tr.info[masks.FINAL]}
    return setup.targets(reward, tr.terminated, tr.truncated, next_q, hp.gamma, hp.q_lambda, **mask)


def loss(setup: PQNSetup, params, minibatch: dict):
    """Half the mean squared error between the values of the actions taken and their targets
    (with memory, of whole sequences re-run from their starting carry)."""
    memory = minibatch["carry"], minibatch["obs"], minibatch["starts"]
    q = setup.network.apply(params, *memory)
    taken = jnp.take_along_axis(q, minibatch["action"][..., None], axis=-1)[..., 0]
    error = taken - jax.lax.stop_gradient(minibatch["targets"])
    return 0.5 * jnp.square(error).mean(), taken.mean()


def learning_rate(setup: PQNSetup, state: PQNState, hp: PQNHparams):
    """This update's step size: decayed linearly to 0 over the run with `anneal_lr`."""
    config = setup.config
    return linear_decay(hp.learning_rate, state.update_step, config.num_updates, config.anneal_lr)


def learn(setup: PQNSetup, state: PQNState, batch: dict, key, lr, hp: PQNHparams):
    """`update_epochs` epochs over `batch` (`[num_steps, num_envs, ...]` leaves), each a scan
    of gradient steps over shuffled minibatches: `(params, opt_state, metrics)`."""
    config, tx = setup.config, optimizer(hp)

    def minibatch_step(carry, minibatch):
        params, opt_state = carry
        minibatch = split_minibatch(setup.network, minibatch)  # over a mesh's envs devices
        (value, q_mean), grads = jax.value_and_grad(functools.partial(loss, setup), has_aux=True)(
            params, minibatch
        )
        grad_norm = optax.global_norm(grads)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, jax.tree.map(lambda u: -lr * u, updates))
        return (params, opt_state), {"q_loss": value, "q_mean": q_mean, "grad_norm": grad_norm}

    def slices(key):
        return setup.network.minibatches(key, batch, config.num_minibatches)

    carry = (state.params, state.opt_state)
    (params, opt_state), metrics = epochs(carry, key, config.update_epochs, slices, minibatch_step)
    return params, opt_state, metrics


def update(setup: PQNSetup, state: PQNState, hp: PQNHparams):
    """One PQN iteration: collect -> Q(lambda) targets -> epochs of minibatches."""
    key, key_collect, key_learn = jax.random.split(state.key, 3)
    env_batch, tr, eps = collect(setup, state, key_collect)
    batch = {"obs": tr.obs, "action": tr.action, "targets": targets(setup, state, tr, hp)}
    batch.update(setup.network.learning_memory(state.env.carry, sequence_starts(tr)))
    lr = learning_rate(setup, state, hp)
    params, opt_state, learned = learn(setup, state, batch, key_learn, lr, hp)
    state = state.replace(
        params=params,
        opt_state=opt_state,
        env=env_batch,
        key=key,
        update_step=state.update_step + 1,
    )
    metrics = {f"losses/{k}": v for k, v in learned.items()}
    metrics.update(episode_metrics(tr.info))
    metrics["charts/epsilon"] = eps
    metrics["charts/learning_rate"] = lr
    return state, metrics


def act(
    setup: PQNSetup, state: PQNState, obs, key, deterministic=False, carry=(), action_mask=None
):
    """`(action, carry after it)`: the greedy action, or epsilon-greedy at the epsilon of the
    environment steps taken (among the legal actions of `action_mask`, where one is given), from
    the memory `carry` (`()` without memory, where `obs` may be one observation or a batch)."""
    eps = setup.epsilon(env_steps(setup, state), state, setup.config.total_timesteps)

    def read(q):
        if deterministic:
            return jnp.argmax(masks.masked_values(q, action_mask), axis=-1).astype(jnp.int32)
        return exploration.epsilon_greedy(q, key, eps, action_mask)

    return setup.network.step(state.params, carry, obs, read)


def prepare(
    config: PQNConfig,
    env: Environment,
    env_params=None,
    targets: Callable = q_lambda_targets,
    epsilon: Callable = exploration.linear_epsilon,
) -> PQNSetup:
    """The `PQNSetup` of PQN on `env` (a `Discrete` action space; another is a `TypeError`
    naming it): the environment wrapped as PQN steps it and the Q-network; `make` binds the
    stages to it.

    `targets(reward, terminated, truncated, next_q [T, E, A], gamma, q_lambda) -> [T, E]` and
    `epsilon(env_steps, schedule, total_timesteps) -> []` (`exploration.linear_epsilon`'s) may
    be replaced by research variants."""
    if not isinstance(config, PQNConfig):
        raise TypeError(f"pqn.make needs a PQNConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    space = env.action_space(env_params)
    if not isinstance(space, Discrete):
        raise TypeError(f"pqn handles Discrete action spaces; {env.name} has {space!r}")
    obs_space = env.observation_space(env_params)
    if isinstance(obs_space, Discrete):
        raise TypeError(f"pqn needs Box observations (vectors or images); got {obs_space!r}")
    network = q_network(config, int(space.n), obs_space)
    return PQNSetup(config, EpisodeStatistics(env), env_params, network, targets, epsilon)


def make(config: PQNConfig, env: Environment, env_params=None, **variants) -> Agent:
    """Bind PQN to `env`; `variants` are `prepare`'s research variants (`targets`, `epsilon`)."""
    setup = prepare(config, env, env_params, **variants)
    config, network = setup.config, setup.network
    return bind(
        setup,
        init=init,
        update=update,
        **acting(act, initial_carry, network.memory),
        name="pqn",
        config=config,
        env=setup.env,
        env_params=setup.env_params,
        default_hparams=PQNHparams(),
        check_hparams=check_hparams,
        env_steps_per_update=config.num_envs * config.num_steps,
        env_split=minibatch_splits(config, network),
        trainable=trainable,
        reads_action_mask=True,
    )


def q_network(config: PQNConfig, num_actions: int, obs_space) -> FeedForward | Recurrent:
    """PQN's Q-network in the carry shape: `FeedForward(QNetwork)`, or with `config.recurrent`
    `Recurrent(RecurrentQNetwork)`, the hidden layers LayerNorm'd with `config.layer_norm`."""
    shape = tuple(obs_space.shape)
    layers = {
        "hidden_sizes": config.hidden_sizes,
        "num_actions": num_actions,
        "activation": config.activation,
        "encoder": obs_encoder(config, shape, spaces.categories(obs_space)),
        "layer_norm": config.layer_norm,
    }
    if config.recurrent is None:
        return FeedForward(QNetwork(**layers))
    return Recurrent(RecurrentQNetwork(config.recurrent, config.recurrent_size, **layers))


def trainable(state: PQNState):
    """What a diverging update makes non-finite: the network and the optimiser's state."""
    return state.params, state.opt_state


# This family in the algorithm registry (`rlsuite train pqn`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="pqn",
        make=make,
        config_cls=PQNConfig,
        hparams_cls=PQNHparams,
        offline=False,
        default_env="cartpole",
        memory=True,
    )
)
