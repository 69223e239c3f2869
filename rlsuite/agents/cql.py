"""Conservative Q-Learning (Kumar et al. 2020, arXiv:2006.04779), CQL(H) on SAC, for continuous
actions: each critic's loss gains `weight * (E_s[log sum_a exp Q(s, a)] - E_{s,a~D}[Q(s, a)])`,
which pushes Q down on the actions the policy and a uniform proposal reach and up on the
dataset's.

    agent = cql.make(CQLConfig(), env, env_params)
    state, metrics = driver.train(agent, key, agent.default_hparams, num_updates, data=dataset)

The critics, the actor, the temperature and the target critics are SAC's own update rule
(`rlsuite.agents.sac.learner`), with the penalty passed in as its critic hook. Runs through the
shared offline loop (`rlsuite.agents.offline`).

Choices, written down:

- The log-sum-exp is importance-sampled (appendix F): `num_sampled_actions` (N) uniform actions
  in [-1, 1]^d (log density `-d log 2`), N policy actions at `s` and N at `s'`, each minus its
  log-probability, all evaluated by the critics at `s` (as the authors' code does), log-sum-exp
  over the 3N without subtracting `log 3N` (see `losses.cql_penalty`). This estimator is biased
  towards the policy: with a flat Q and a concentrated policy, its gradient pushes Q down about
  twice as hard as the exact log-sum-exp's near the policy's actions and 0.7 times as hard
  elsewhere (measured), so with broad data the greedy action can drift off the best one.
- The weight is `hparams.alpha_cql`, or, with `lagrange`, a learned `alpha'` that starts at
  `alpha_cql` and maximises `alpha' (penalty - target_action_gap)` with its own Adam
  (`losses.cql_lagrange_loss`); `log alpha'` is kept below `log 1e6` after each step, so the
  clip never stalls its gradient. The gap is compared with the unweighted penalty (the paper's
  form). With a flat Q the penalty is about `log(N 2^d)`; a gap below that keeps alpha' growing.
- The policy's temperature follows SAC's target entropy, `-target_entropy_scale * d`. With
  narrow data (an expert's) and SAC's default (scale 1), the temperature falls and the
  tanh-squashed policy can saturate at one end of the action range in states where the critics
  prefer the other end; the gradient through a saturated tanh vanishes, so it stays there. On
  the test suite's Pendulum expert dataset: at the bottom of a swing, moving fast, the data
  brakes and the critics' best action is -1 while the policy gives +0.97, so some evaluation
  episodes spin without ever balancing (normalised score 68, 4 seeds of 45-82, after 3,000
  steps). A target entropy of 0 (scale 0) keeps the policy off the ends: 92 on the same seeds,
  101 on 8 others. That is a setting, not a change of the default: the paper keeps SAC's.
- Our critics' TD loss is `0.5 * sum_k E[(Q_k - y)^2]`, as in the paper's eq. 4; the authors' code
  drops the 1/2, so its weight 5 matches `alpha_cql = 2.5` here.
- The target keeps SAC's entropy term (`losses.soft_td_target`); the authors' example runs
  drop it (`deterministic_backup`), which
  `make(..., critic_target=lambda r, d, q, lp, a: losses.td_target(r, d, q))` gives. Left out of
  the authors' code: the behaviour-cloning warm start of the actor, the max-Q backup and a
  temperature inside the log-sum-exp.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from rlsuite.agents import registry, sac
from rlsuite.agents.learner import Learner, action_dim, adam_init, adam_step, bind
from rlsuite.agents.off_policy_parts import hp_gamma, hp_reward_scale
from rlsuite.agents.offline import OfflineConfig, Rewards, make_agent
from rlsuite.environment import Environment
from rlsuite.loop.agent import Agent
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints

MAX_ALPHA_PRIME = 1e6


@dataclasses.dataclass(frozen=True)
class CQLConfig(OfflineConfig):
    """Static configuration of CQL (the shared offline fields, and these)."""

    num_critics: int = 2
    """Q networks in the ensemble; targets take their minimum, each gets the penalty"""
    autotune: bool = True
    """tune SAC's temperature towards the target entropy; otherwise keep hparams.alpha fixed"""
    num_sampled_actions: int = 10
    """N: uniform, policy-at-s and policy-at-s' actions each, per state, in the log-sum-exp"""
    lagrange: bool = False
    """tune the penalty's weight towards hparams.target_action_gap; otherwise keep alpha_cql"""

    def __post_init__(self):
        super().__post_init__()
        check_positive_ints(self, ("num_critics", "num_sampled_actions"))


@struct.dataclass
class CQLHparams(sac.SACHparams):
    """SAC's hyperparameters (and its defaults; the authors' example runs take a smaller policy
    step size for their million-step runs, e.g. 3e-5), and the penalty's."""

    alpha_cql: float = 5.0
    """weight of the conservative penalty (the initial one with config.lagrange)"""
    target_action_gap: float = 10.0
    """threshold of the penalty with config.lagrange (tau of the paper's Lagrange form); a flat Q
    already gives about log(N 2^d), 6.5 for N = 10, d = 6: raise it for larger action spaces"""
    alpha_prime_lr: float = 3e-4
    """Adam step size of log alpha' (with config.lagrange)"""


@struct.dataclass
class CQLLearner:
    sac: sac.SACLearner
    log_alpha_prime: jax.Array
    alpha_prime_opt: optax.OptState


def check_hparams(hp: CQLHparams, lagrange: bool = False) -> None:
    """Raise a `ValueError` naming the field for invalid concrete hyperparameters."""
    if not isinstance(hp, CQLHparams):
        raise TypeError(f"cql: hparams must be a CQLHparams, got {type(hp).__name__}")
    rates = ("actor_lr", "critic_lr", "alpha_lr", "alpha", "alpha_prime_lr")
    check_positive(hp, *rates, owner="cql", kind="hparams")
    for field in ("gamma", "tau"):
        check_field(hp, field, lambda v: (v >= 0) & (v <= 1), "a value in [0, 1]", "cql", "hparams")
    for field in ("target_entropy_scale", "target_action_gap"):
        check_field(hp, field, lambda v: v == v, "a number", "cql", "hparams")
    if lagrange:  # alpha' starts at alpha_cql
        check_positive(hp, "alpha_cql", owner="cql", kind="hparams")
    check_field(hp, "alpha_cql", lambda v: v >= 0, "a value >= 0", "cql", "hparams")


def make(
    config: CQLConfig,
    env: Environment,
    env_params=None,
    critic_target: Callable = losses.soft_td_target,
) -> Agent:
    """Bind CQL to `env` (a bounded 1-D Box action space; used for evaluation).
    `critic_target` is SAC's (`sac.make`), replaceable the same way."""
    if not isinstance(config, CQLConfig):
        raise TypeError(f"cql.make needs a CQLConfig, got {type(config).__name__}")
    env_params = env.check_params(env_params)
    dim = action_dim(env, env_params, "cql")
    obs_shape = env.observation_space(env_params).shape
    algo = learner(config, obs_shape, dim, critic_target)
    check = functools.partial(check_hparams, lagrange=config.lagrange)
    rewards = Rewards(gamma=hp_gamma, reward_scale=hp_reward_scale)
    return make_agent("cql", config, env, env_params, algo, CQLHparams(), check, rewards)


def learner(
    config: CQLConfig,
    obs_shape: tuple[int, ...],
    dim: int,
    critic_target: Callable = losses.soft_td_target,
) -> Learner:
    """CQL's learner: SAC's (`sac.learner`) with the conservative penalty as its critic hook,
    and the penalty's weight (a Lagrange multiplier with `lagrange`) beside it: the functions
    below (`init`, `explore`, `greedy`, `learn`) over the `Parts` this builds."""
    hook = functools.partial(penalty, config.num_sampled_actions, dim)
    base = sac.learner(config, obs_shape, dim, critic_target, critic_penalty=hook)
    parts = Parts(config, base)
    return bind(parts, init, explore, greedy, learn)


class Parts(NamedTuple):
    """What CQL's learning functions share: its config and SAC's learner with the penalty."""

    config: CQLConfig
    base: Learner


def penalty(n: int, dim: int, q_fn, q_data, policy, batch, key, hp: CQLHparams):
    """Each critic's CQL(H) penalty `[K]` on the batch (see the module docstring), from `n`
    sampled actions of each kind (uniform, the policy's now, the policy's at the next
    observation) of `dim` entries."""
    obs = batch["obs"]
    key_uniform, key_now, key_next = jax.random.split(key, 3)
    uniform = jax.random.uniform(key_uniform, (n, obs.shape[0], dim), minval=-1.0, maxval=1.0)
    now, now_log_prob = policy(obs).sample_and_log_prob(seed=key_now, sample_shape=n)
    nxt, next_log_prob = policy(batch["next_obs"]).sample_and_log_prob(
        seed=key_next, sample_shape=n
    )
    actions = jnp.concatenate([uniform, now, nxt])  # [3N, B, a]
    uniform_log_density = jnp.full((n, obs.shape[0]), -dim * math.log(2.0))
    log_density = jnp.concatenate([uniform_log_density, now_log_prob, next_log_prob])
    q_sampled = q_fn(jnp.broadcast_to(obs, (3 * n, *obs.shape)), actions)  # [K, 3N, B]
    value, lse = losses.cql_penalty(q_sampled, log_density, q_data)
    return value, {"cql_penalty": value.mean(), "cql_logsumexp": lse.mean()}


def init(parts: Parts, key, hp: CQLHparams) -> CQLLearner:
    log_alpha_prime = jnp.log(jnp.asarray(hp.alpha_cql, jnp.float32))
    return CQLLearner(
        sac=parts.base.init(key, hp),
        log_alpha_prime=log_alpha_prime,
        alpha_prime_opt=adam_init(log_alpha_prime),
    )


def explore(parts: Parts, learner: CQLLearner, obs, key):
    return parts.base.explore(learner.sac, obs, key)


def greedy(parts: Parts, learner: CQLLearner, obs):
    return parts.base.greedy(learner.sac, obs)


def learn(parts: Parts, learner: CQLLearner, batch, key, hp: CQLHparams):
    """SAC's step with the penalty at this step's weight, then (with `lagrange`) the weight's
    step towards `target_action_gap`."""
    lagrange = parts.config.lagrange
    log_alpha_prime, opt = learner.log_alpha_prime, learner.alpha_prime_opt
    if lagrange:
        weight = jnp.clip(jnp.exp(log_alpha_prime), 0.0, MAX_ALPHA_PRIME)
    else:
        weight = jnp.asarray(hp.alpha_cql, jnp.float32)
    sac_learner, metrics = parts.base.learn(learner.sac, batch, key, hp, weight)
    lagrange_loss = jnp.zeros(())
    if lagrange:
        lagrange_loss, grad = jax.value_and_grad(losses.cql_lagrange_loss)(
            log_alpha_prime, metrics["cql_penalty"], hp.target_action_gap, MAX_ALPHA_PRIME
        )
        log_alpha_prime, opt = adam_step(log_alpha_prime, grad, opt, hp.alpha_prime_lr)
        log_alpha_prime = jnp.minimum(log_alpha_prime, math.log(MAX_ALPHA_PRIME))
    metrics = {**metrics, "cql_weight": weight, "alpha_prime_loss": lagrange_loss}
    learner = CQLLearner(sac=sac_learner, log_alpha_prime=log_alpha_prime, alpha_prime_opt=opt)
    return learner, metrics


# This family in the algorithm registry (`rlsuite train cql`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="cql",
        make=make,
        config_cls=CQLConfig,
        hparams_cls=CQLHparams,
        offline=True,
        default_env="pendulum",
    )
)
