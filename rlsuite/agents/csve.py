"""Conservative State Value Estimation (Chen et al. 2023, arXiv:2302.06884, CSVE): offline RL that
penalises the state-value function on the states the policy would reach, rather than Q on the
actions it would take.

    agent = csve.make(CSVEConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

A learned dynamics model (an ensemble of networks predicting the state change and the reward)
gives `s^ = model(s, mu(s))`, the next state of a dataset state under the policy's mean action.
`V` regresses onto the target critics at the policy's actions and is pushed down at those states
and up at the dataset's own next states (the paper's eq. 9, its section 4.2):

    L_V = E_s[(min_k Q'_k(s, a~pi) - V(s))^2] + alpha (E[V(s^)] - E[V(s')])

twin critics regress onto `r + discount * V(s')`, and the policy is advantage-weighted
regression on the dataset's actions plus a model-based term that raises the value of where its
own actions lead (eq. 10): `-E[w log pi(a|s)] - lambda E[r^(s, a~) + gamma V(s^(s, a~))] / c`,
`a~` a reparameterised sample. Runs through the shared offline loop (`rlsuite.agents.offline`).

Choices, written down:

- The dynamics model is learned with the agent, one step on every batch before the value, by
  mean squared error of each member on `(s' - s, r)`; the paper trains it first, apart. Its
  members are deterministic. The penalised state takes a random member per state (the authors'
  code samples its ensemble there); the policy's term takes the members' mean.
- `c`, the exploration term's divisor, is its own batch mean of `|r^ + gamma V|` held constant,
  as TD3+BC normalises its Q term: `lambda` then does not depend on the rewards' scale (the
  authors' code leaves the term unnormalised, with a weight per dataset). The term ignores
  terminals (the model predicts none).
- The penalty's weight is a Lagrange multiplier, as in the authors' code: `alpha'` starts at
  `alpha` and maximises `alpha' (penalty - penalty_target)` with its own Adam
  (`losses.cql_lagrange_loss`, CQL's same form), kept below 1e6. So `V(s^)` is held below
  `V(s') + penalty_target` on average, and the penalty stops pulling once it is: a fixed weight
  on this linear penalty is unbounded, and a network then tells `s^` from `s'` by the model's
  smallest errors (on a probe whose `s^` and `s'` are equal up to them, a fixed weight of 1
  pushed `V(s^)` 1.2 below `V(s')`). The authors' code compares the weighted penalty with its
  threshold (-10 there); here the unweighted one, as CQL's Lagrange form does.
- One gradient step updates the model, `V`, the critics (towards the new `V(s')`), the policy
  and then the target critics, all on the same batch. The policy is IQL's Gaussian
  (`rlsuite.agents.iql.GaussianActor`), and its advantage weights are IQL's.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import iql, registry
from rlsuite.agents.learner import Learner, action_dim, adam_init, adam_step, bind
from rlsuite.agents.off_policy_parts import hp_gamma
from rlsuite.agents.offline import OfflineConfig, Rewards, make_agent
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.networks import MLP, QEnsemble
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints

MAX_ALPHA = 1e6  # the most the penalty's weight alpha' may be (CQL's bound on its own)


@dataclasses.dataclass(frozen=True)
class CSVEConfig(OfflineConfig):
    """Static configuration of CSVE (the shared offline fields, and these)."""

    num_models: int = 5
    """members of the dynamics model's ensemble"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_models",))


@struct.dataclass
class CSVEHparams:
    """Numeric hyperparameters: traced, so a batch of them is a `vmap` axis."""

    actor_lr: float = 3e-4
    """Adam step size of the policy"""
    critic_lr: float = 3e-4
    """Adam step size of the Q networks"""
    value_lr: float = 3e-4
    """Adam step size of the state-value network"""
    model_lr: float = 1e-3
    """Adam step size of the dynamics model"""
    gamma: float = 0.99
    """discount factor"""
    tau: float = 0.005
    """Polyak step of the target critics"""
    alpha: float = 1.0
    """initial weight alpha' of the penalty E[V(s^)] - E[V(s')] in V's loss"""
    penalty_target: float = -10.0
    """the penalty's threshold: alpha' grows while E[V(s^)] - E[V(s')] exceeds it"""
    alpha_lr: float = 1e-4
    """Adam step size of log alpha'"""
    beta: float = 3.0
    """inverse temperature of the advantage weights exp(beta * A); 0 is behaviour cloning"""
    max_weight: float = 100.0
    """upper clip of the advantage weights"""
    explore_weight: float = 0.0
    """lambda: weight of the model-based term in the policy's loss; 0 leaves AWR alone"""


@struct.dataclass
class CSVELearner:
    actor: dict
    critic: dict
    target_critic: dict
    value: dict
    model: dict
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    value_opt: optax.OptState
    model_opt: optax.OptState
    log_alpha: jax.Array
    alpha_opt: optax.OptState


class Dynamics(nn.Module):
    """`num_models` networks `(obs [B, o], action [B, a]) -> [num_models, B, o + 1]`: each
    member's prediction of the state change `s' - s` and of the reward (the last entry). The
    members are separate MLPs (see `rlsuite.networks.QEnsemble`)."""

    hidden_sizes: Sequence[int] = (256, 256)
    obs_dim: int = 1
    num_models: int = 5
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs: jnp.ndarray, action: jnp.ndarray) -> jnp.ndarray:
        x = jnp.concatenate([obs, action], axis=-1)
        size = self.obs_dim + 1
        return jnp.stack(
            [MLP(self.hidden_sizes, size, self.activation)(x) for _ in range(self.num_models)]
        )


def check_hparams(hp: CSVEHparams) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, CSVEHparams):
        raise TypeError(f"csve: hparams must be a CSVEHparams, got {type(hp).__name__}")
    check_positive(
        hp,
        "actor_lr", "critic_lr", "value_lr", "model_lr", "alpha_lr", "alpha", "max_weight",
        owner="csve", kind="hparams",
    )  # fmt: skip
    for field in ("gamma", "tau"):
        check_field(
            hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "csve", "hparams"
        )
    for field in ("beta", "explore_weight"):
        check_field(hp, field, lambda v: v >= 0, "a value >= 0", "csve", "hparams")


def make(
    config: CSVEConfig, env: Environment, env_params=None, penalised: Callable | None = None
) -> Agent:
    """Bind CSVE to `env` (a bounded 1-D Box action space; used for evaluation). `penalised`
    `(nets, learner, obs, key) -> states [B, o]` chooses the states whose value is pushed down
    (default `penalised_states`: where the policy's mean action leads in the model)."""
    if not isinstance(config, CSVEConfig):
        raise TypeError(f"csve.make needs a CSVEConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "csve")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim, penalised)
    rewards = Rewards(gamma=hp_gamma)  # CSVE scales no rewards
    return make_agent("csve", config, env, env_params, algo, CSVEHparams(), check_hparams, rewards)


def learner(
    config: CSVEConfig, obs_shape: tuple[int, ...], dim: int, penalised: Callable | None = None
) -> Learner:
    """CSVE's networks and update rule for `obs_shape` observations and `dim` actions in
    `[-1, 1]`: the functions below (`init`, `explore`, `greedy`, `learn`) over the `Nets` this
    builds."""
    hidden, act = config.hidden_sizes, config.activation
    nets = Nets(
        obs_shape=obs_shape,
        dim=dim,
        actor=iql.GaussianActor(hidden, dim, act),
        critic=QEnsemble(hidden, 2, act),
        value=MLP(hidden, 1, act),
        model=Dynamics(hidden, obs_shape[0], config.num_models, act),
        penalised=penalised_states if penalised is None else penalised,
    )
    return bind(nets, init, explore, greedy, learn)


class Nets(NamedTuple):
    """What CSVE's learning functions share, fixed when its learner is built (`learner`)."""

    obs_shape: tuple[int, ...]
    dim: int
    actor: iql.GaussianActor
    critic: QEnsemble
    value: MLP
    model: Dynamics
    penalised: Callable  # (nets, learner, obs, key) -> the states V is pushed down at


def init(nets: Nets, key, hp: CSVEHparams) -> CSVELearner:
    key_actor, key_critic, key_value, key_model = jax.random.split(key, 4)
    obs, action = jnp.zeros((1, *nets.obs_shape)), jnp.zeros((1, nets.dim))
    params = {
        "actor": nets.actor.init(key_actor, obs),
        "critic": nets.critic.init(key_critic, obs, action),
        "value": nets.value.init(key_value, obs),
        "model": nets.model.init(key_model, obs, action),
    }
    log_alpha = jnp.log(jnp.asarray(hp.alpha, jnp.float32))
    return CSVELearner(
        **params,
        target_critic=params["critic"],
        **{f"{name}_opt": adam_init(p) for name, p in params.items()},
        log_alpha=log_alpha,
        alpha_opt=adam_init(log_alpha),
    )


def explore(nets: Nets, learner: CSVELearner, obs, key):
    return jnp.clip(nets.actor.apply(learner.actor, obs).sample(seed=key), -1.0, 1.0)


def greedy(nets: Nets, learner: CSVELearner, obs):
    return nets.actor.apply(learner.actor, obs).mean()


def value_fn(nets: Nets, params, obs):
    return nets.value.apply(params, obs)[..., 0]


def model_loss(nets: Nets, params, batch):
    """Each member's mean squared error on the state change and the reward, summed over the
    members."""
    target = jnp.concatenate([batch["next_obs"] - batch["obs"], batch["reward"][:, None]], -1)
    prediction = nets.model.apply(params, batch["obs"], batch["action"])
    return jnp.square(prediction - target).mean(axis=(1, 2)).sum()


def value_loss(v, target_q, v_penalised, v_data, alpha):
    """CSVE's value loss (eq. 9): `E[(Q - V(s))^2] + alpha (E[V(s^)] - E[V(s')])` over a batch
    (`alpha` held constant),
    `v` and `target_q [B]` at the dataset's states (the target held constant), `v_penalised`
    `[B]` at the states the policy reaches in the model and `v_data [B]` at the dataset's next
    states. Returns `(loss, penalty)`, the penalty `E[V(s^)] - E[V(s')]` unweighted."""
    penalty = v_penalised.mean() - v_data.mean()
    fit = jnp.square(jax.lax.stop_gradient(target_q) - v).mean()
    return fit + jax.lax.stop_gradient(alpha) * penalty, penalty


def model_step(nets: Nets, learner: CSVELearner, obs, action, key):
    """`s + model_m(s, a)[:o]`, the next state `[B, o]` of a member `m` drawn per state."""
    members = nets.model.apply(learner.model, obs, action)
    pick = jax.random.randint(key, obs.shape[:1], 0, members.shape[0])
    return obs + jnp.take_along_axis(members, pick[None, :, None], axis=0)[0, :, :-1]


def penalised_states(nets: Nets, learner: CSVELearner, obs, key):
    """CSVE's penalised states: `model_step` under the policy's mean action."""
    return model_step(nets, learner, obs, greedy(nets, learner, obs), key)


def actor_loss(nets: Nets, params, learner: CSVELearner, batch, weights, key, hp: CSVEHparams):
    """Advantage-weighted regression plus `lambda` times the normalised model-based term."""
    obs = batch["obs"]
    dist = nets.actor.apply(params, obs)
    awr = losses.awr_policy_loss(dist.log_prob(batch["action"]), weights)
    action = jnp.clip(dist.sample(seed=key), -1.0, 1.0)  # reparameterised
    predicted = nets.model.apply(learner.model, obs, action).mean(axis=0)
    reached = predicted[:, -1] + hp.gamma * value_fn(nets, learner.value, obs + predicted[:, :-1])
    scale = jax.lax.stop_gradient(jnp.abs(reached).mean()) + 1e-6
    return awr - hp.explore_weight * reached.mean() / scale, awr


def learn(nets: Nets, learner: CSVELearner, batch, key, hp: CSVEHparams):
    """One gradient step: the model, `V` with its penalty, the critics towards
    `r + discount V(s')`, the policy, the target critics."""
    key_model, key_sample, key_actor = jax.random.split(key, 3)
    obs = batch["obs"]
    m_loss, grads = jax.value_and_grad(functools.partial(model_loss, nets))(learner.model, batch)
    model, model_opt = adam_step(learner.model, grads, learner.model_opt, hp.model_lr)
    learner = learner.replace(model=model, model_opt=model_opt)

    policy_action = explore(nets, learner, obs, key_sample)
    target_q = nets.critic.apply(learner.target_critic, obs, policy_action).min(axis=0)
    penalised = jax.lax.stop_gradient(nets.penalised(nets, learner, obs, key_model))

    def v_loss_fn(params):
        v = functools.partial(value_fn, nets, params)
        return value_loss(v(obs), target_q, v(penalised), v(batch["next_obs"]), weight)

    weight = jnp.clip(jnp.exp(learner.log_alpha), 0.0, MAX_ALPHA)
    (v_loss, penalty), grads = jax.value_and_grad(v_loss_fn, has_aux=True)(learner.value)
    value, value_opt = adam_step(learner.value, grads, learner.value_opt, hp.value_lr)
    alpha_loss, grad = jax.value_and_grad(losses.cql_lagrange_loss)(
        learner.log_alpha, penalty, hp.penalty_target, MAX_ALPHA
    )
    log_alpha, alpha_opt = adam_step(learner.log_alpha, grad, learner.alpha_opt, hp.alpha_lr)
    learner = learner.replace(
        value=value,
        value_opt=value_opt,
        log_alpha=jnp.minimum(log_alpha, math.log(MAX_ALPHA)),
        alpha_opt=alpha_opt,
    )

    next_v = value_fn(nets, value, batch["next_obs"])
    (q_loss, q_mean), grads = jax.value_and_grad(
        functools.partial(iql.critic_loss, nets), has_aux=True
    )(learner.critic, batch, next_v)
    critic, critic_opt = adam_step(learner.critic, grads, learner.critic_opt, hp.critic_lr)

    data_q = nets.critic.apply(learner.target_critic, obs, batch["action"]).min(axis=0)
    weights = losses.advantage_weights(data_q - value_fn(nets, value, obs), hp.beta, hp.max_weight)
    (pi_loss, awr), grads = jax.value_and_grad(functools.partial(actor_loss, nets), has_aux=True)(
        learner.actor, learner, batch, weights, key_actor, hp
    )
    actor, actor_opt = adam_step(learner.actor, grads, learner.actor_opt, hp.actor_lr)
    learner = learner.replace(
        actor=actor,
        actor_opt=actor_opt,
        critic=critic,
        critic_opt=critic_opt,
        target_critic=optax.incremental_update(critic, learner.target_critic, hp.tau),
    )
    metrics = {
        "critic_loss": q_loss,
        "value_loss": v_loss,
        "actor_loss": pi_loss,
        "awr_loss": awr,
        "model_loss": m_loss,
        "state_penalty": penalty,
        "penalty_weight": weight,
        "q_mean": q_mean,
        "weight_mean": weights.mean(),
    }
    return learner, metrics


# This family in the algorithm registry (`rlsuite train csve`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="csve",
        make=make,
        config_cls=CSVEConfig,
        hparams_cls=CSVEHparams,
        offline=True,
        default_env="pendulum",
    )
)
