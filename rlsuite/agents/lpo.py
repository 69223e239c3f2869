"""LPO, learned policy optimisation (Lu, Kuba, Letcher, Metz, Schroeder de Witt and Foerster 2022,
arXiv:2210.05639): PPO's drift function meta-learned by evolution strategies over whole PPO runs;
and its temporally-aware form (Jackson, Lu, Kirsch, Lange, Whiteson and Foerster 2024,
arXiv:2402.05828), whose drift also reads the inner run's progress.

Mirror learning writes a policy update as maximising `E[r A - drift(r, A)]` (`rlsuite.agents.dpo`
says more). LPO makes the drift a small network and learns its weights by evolution: one update
of this family is one generation,

1. the ES proposes `population_size` drift networks around its mean (evosax's OpenAI-ES,
   antithetic pairs);
2. each of them, and the mean itself, trains PPO from scratch for an inner run of
   `inner_timesteps` env steps: `population_size + 1` PPO runs, vmapped in one program;
3. each run's fitness is the mean return of `fitness_episodes` evaluation episodes of its final
   policy (sampled actions, as it was trained);
4. the ES steps its mean towards the drifts whose runs did best (centred ranks, Adam).

    rlsuite train lpo --env cartpole                      # the tuned entry: 16 generations
    rlsuite train lpo --env cartpole --temporal          # the drift reads the run's progress

The drift network (`DriftNet`): a two-layer tanh network without biases over features of the
ratio that vanish at `r = 1`, `x = [r - 1, log r, (r - 1)^2, (log r)^2]` and the same times the
advantage (8 inputs; with `temporal`, these and these times the progress `n / N` of the inner run,
16), its output through a ReLU. So the drift is 0 at `r = 1` for any weights, and never negative,
as mirror learning needs.

Choices, written down:

- Every member of a generation, and the mean, trains from the same inner key (common random
  numbers): their fitnesses differ by their drift only. Each generation draws new keys.
- The agent's policy (what `act`, `rlsuite eval` and the run's final evaluation use) is the PPO
  policy the ES mean's drift trained this generation; `lpo/mean_fitness` is its fitness.
- `total_timesteps` is the whole run's env steps, every inner run's together, as for any family;
  a generation takes `generation_steps`, `(population_size + 1) * inner_timesteps` (rounded to
  whole PPO updates), so the throughput reported is the population's.
- ES step size and noise are static (`es_learning_rate`, `es_sigma`): evosax builds its strategy
  with them. The PPO hyperparameters are the inner runs', traced as PPO's are.
- evosax is an optional dependency (`pip install -e ".[lpo]"`); the family is listed without it,
  and `make` says what to install.

A research variant passes its own inner run (`make(..., inner=fn)`, `train_and_evaluate`'s
signature): any fitness of a drift's parameters. With `num_tasks`, each member runs it on the
levels a curriculum chooses (`rlsuite.agents.lpo_tasks`: drawn fresh, or GROOVE's replay by
algorithmic regret), and its fitness is their mean (`on_levels`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from rlsuite.agents import lpo_tasks, ppo, registry
from rlsuite.agents.ppo_config import PPOBase
from rlsuite.environment import Environment
from rlsuite.environment.levels import Levels, levels_of
from rlsuite.loop import episodes
from rlsuite.loop.agent import Agent, acting, bind
from rlsuite.loop.driver import EVAL_STEP_CAP
from rlsuite.loop.rollout import recurrent
from rlsuite.ops import losses
from rlsuite.ops.validators import check_field, check_positive, check_positive_ints

MISSING = 'rlsuite train lpo needs evosax (evolution strategies): pip install -e ".[lpo]"'


@dataclasses.dataclass(frozen=True)
class LPOConfig(PPOBase):
    """`PPOBase` for every inner PPO run, the drift network and the evolution strategy. Its
    inner runs are feed-forward."""

    total_timesteps: int = 16 * 17 * 15_360
    """environment steps of the whole run, every inner run's together: generations of
    (population_size + 1) inner runs (16 here)"""
    inner_timesteps: int = 15_360
    """environment steps of each inner PPO run (its learning rate anneals over them)"""
    population_size: int = 16
    """drift networks proposed per generation, in antithetic pairs (even, >= 2)"""
    drift_hidden: int = 128
    """hidden units of the drift network"""
    temporal: bool = False
    """give the drift the inner run's progress (temporally-aware LPO)"""
    es_learning_rate: float = 0.01
    """Adam step size of the ES mean (0: the mean never moves, a control)"""
    es_sigma: float = 0.03
    """standard deviation of the ES's perturbations of the drift network's weights"""
    fitness_episodes: int = 8
    """evaluation episodes of each inner run's final policy; their mean return is its fitness"""
    num_tasks: int = 0
    """levels per generation from the environment's distribution (`levels().generate`): each
    member trains one inner run on each, its fitness their mean; 0 trains on the environment's
    own params"""
    curriculum: str = "dr"
    """how those levels are chosen (`rlsuite.agents.lpo_tasks`): dr (drawn fresh) or groove
    (replayed by their algorithmic regret against PPO's clip)"""
    buffer_capacity: int = 64
    """groove: the levels its buffer holds"""

    def __post_init__(self):
        check_positive_ints(self, ("inner_timesteps", "population_size", "drift_hidden"))
        check_positive_ints(self, ("fitness_episodes",))
        if self.population_size % 2:
            raise ValueError(
                f"LPOConfig.population_size={self.population_size} must be even (antithetic pairs)"
            )
        check_positive(self, "es_sigma", owner="LPOConfig", kind="config")
        for name in ("es_learning_rate", "num_tasks"):
            check_field(self, name, lambda v: v >= 0, "a value >= 0", "LPOConfig", "config")
        if self.curriculum not in lpo_tasks.CURRICULA:
            raise ValueError(
                f"LPOConfig.curriculum={self.curriculum!r}; allowed: "
                + ", ".join(lpo_tasks.CURRICULA)
            )
        check_positive_ints(self, ("buffer_capacity",))
        if self.curriculum == "groove" and not 1 <= self.num_tasks <= self.buffer_capacity:
            raise ValueError(
                f"LPOConfig.curriculum='groove' replays levels: num_tasks={self.num_tasks} must "
                f"be >= 1 and at most buffer_capacity={self.buffer_capacity}"
            )
        super().__post_init__()

    @property
    def inner_updates(self) -> int:
        """PPO updates of each inner run: `inner_timesteps // (num_envs * num_steps)` (at least
        1)."""
        return max(1, self.inner_timesteps // (self.num_envs * self.num_steps))

    @property
    def generation_steps(self) -> int:
        """Environment steps of one generation: `population_size + 1` inner runs (on each of
        `num_tasks` levels)."""
        runs = (self.population_size + 1) * max(1, self.num_tasks)
        return runs * self.inner_updates * self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """Generations in the whole run: `total_timesteps // generation_steps` (at least 1)."""
        return max(1, self.total_timesteps // self.generation_steps)


@struct.dataclass
class LPOState:
    es: Any
    """the evolution strategy's state (evosax's: its mean, the drift network's weights raveled)"""
    ppo: ppo.PPOState
    """the PPO run the ES mean's drift trained last (what the agent acts with)"""
    key: jax.Array
    levels: Any = None
    """the curriculum's state over levels (`lpo_tasks`; None without num_tasks or for dr)"""


class DriftNet(nn.Module):
    """The drift: `ReLU(W2 tanh(W1 x))` over the features `x` of `drift_features`, no biases."""

    hidden: int

    @nn.compact
    def __call__(self, x):
        x = jnp.tanh(nn.Dense(self.hidden, use_bias=False)(x))
        return jax.nn.relu(nn.Dense(1, use_bias=False)(x)[..., 0])


def drift_features(ratio, log_ratio, advantages, progress=None):
    """`[r - 1, log r, (r - 1)^2, (log r)^2]` and the same times `A` (`[..., 8]`); with a
    `progress` in `[0, 1]`, these and these times it (`[..., 16]`). All 0 at `r = 1`."""
    base = jnp.stack([ratio - 1.0, log_ratio, (ratio - 1.0) ** 2, log_ratio**2], axis=-1)
    x = jnp.concatenate([base, base * advantages[..., None]], axis=-1)
    if progress is None:
        return x
    return jnp.concatenate([x, x * progress], axis=-1)


def learned_drift(net: DriftNet, params, temporal: bool, progress):
    """The drift of `params` at the inner run's `progress`, as `losses.drift_policy_loss` takes
    it: `(ratio, log_ratio, advantages, clip_eps) -> drift`."""

    def drift(ratio, log_ratio, advantages, clip_eps):
        del clip_eps
        x = drift_features(ratio, log_ratio, advantages, progress if temporal else None)
        return net.apply(params, x)

    return drift


class LPOSetup(NamedTuple):
    """config; inner: the inner runs' `PPOSetup` (its policy loss replaced per drift); net: the
    drift network; strategy: evosax's OpenAI-ES over its weights; inner_run: `(setup, params,
    key, hp) -> (PPO state, fitness, metrics)`, one member's run (`train_and_evaluate`)."""

    config: LPOConfig
    inner: ppo.PPOSetup
    net: DriftNet
    strategy: Any
    inner_run: Callable
    levels: Levels | None = None  # the environment's, with num_tasks
    curriculum: lpo_tasks.Curriculum | None = None  # what chooses them, with num_tasks


def inner_config(config: LPOConfig) -> ppo.PPOConfig:
    """The `PPOConfig` of an inner run: `config`'s `PPOBase` fields, with `inner_timesteps` as
    its `total_timesteps`."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(PPOBase)}
    return ppo.PPOConfig(**{**fields, "total_timesteps": config.inner_timesteps})


def train_and_evaluate(setup: LPOSetup, params, key, hp):
    """LPO's inner run of the drift network's `params` (`inner_run` of its drift)."""
    drift_at = functools.partial(learned_drift, setup.net, params, setup.config.temporal)
    return inner_run(setup, drift_at, key, hp)


def inner_run(setup: LPOSetup, drift_at: Callable, key, hp):
    """PPO from `key` for the inner run's updates, update `n` of `N` with the policy loss of the
    drift `drift_at(n / N)`, then `fitness_episodes` evaluation episodes of its policy: `(PPO
    state, fitness, the last update's metrics)`."""
    key_init, key_eval = jax.random.split(key)
    inner = setup.inner
    num_updates = inner.config.num_updates

    def one(state, _):
        progress = state.update_step.astype(jnp.float32) / num_updates
        loss = losses.drift_policy_loss(drift_at(progress))
        return ppo.update(inner._replace(policy_loss=loss), state, hp)

    state = ppo.init(inner, key_init, hp)
    state, metrics = jax.lax.scan(one, state, None, length=num_updates)
    played = recurrent(
        lambda key, obs, **mask: (ppo.act(inner, state, obs, key, False, (), **mask)[0], {})
    )
    horizon = getattr(inner.env, "max_episode_steps", None) or EVAL_STEP_CAP  # as the driver's
    result = episodes.evaluate(
        inner.env, inner.env_params, played, key_eval, setup.config.fitness_episodes, horizon
    )
    return state, result.returns.mean(), jax.tree.map(lambda m: m[-1], metrics)


def on_levels(setup: LPOSetup, params, key, hp, tasks):
    """`setup.inner_run` of `params` on each of the levels `tasks` (params, leading axis), from
    the same `key`, vmapped: `(the first level's PPO state, fitness [N], the metrics' mean)`."""

    def on(task):
        return setup.inner_run(
            setup._replace(inner=setup.inner._replace(env_params=task)), params, key, hp
        )

    states, fitness, metrics = jax.vmap(on)(tasks)
    first = jax.tree.map(lambda x: x[0], states)
    return first, fitness, jax.tree.map(lambda m: m.mean(axis=0), metrics)


def antagonist(setup: LPOSetup, key, hp, tasks):
    """GROOVE's antagonist on each level of `tasks`: PPO with its clip, from the same key as the
    population's runs, its fitness `[N]`."""
    clip = setup._replace(
        inner_run=lambda s, _, k, h: inner_run(s, lambda p: losses.ppo_drift, k, h)
    )
    return on_levels(clip, None, key, hp, tasks)[1]


def init(setup: LPOSetup, key, hp) -> LPOState:
    key, key_net, key_ppo, key_es = jax.random.split(key, 4)
    mean = setup.net.init(key_net, jnp.zeros((1, _num_features(setup.config))))
    es = setup.strategy.init(key_es, mean, setup.strategy.default_params)
    levels = None
    if setup.curriculum is not None:
        levels = setup.curriculum.init(setup, jax.random.fold_in(key_net, 1))
    return LPOState(es=es, ppo=ppo.init(setup.inner, key_ppo, hp), key=key, levels=levels)


def _num_features(config: LPOConfig) -> int:
    return 16 if config.temporal else 8


def update(setup: LPOSetup, state: LPOState, hp) -> tuple[LPOState, dict]:
    """One generation (the module docstring); over a task distribution, every member trains on
    the levels the curriculum chooses, and it observes the ES mean's fitness on each."""
    strategy, es_params = setup.strategy, setup.strategy.default_params
    key, key_ask, key_inner, key_tell = jax.random.split(state.key, 4)
    population, es = strategy.ask(key_ask, state.es, es_params)
    mean = strategy.get_mean(es)
    members = jax.tree.map(lambda p, m: jnp.concatenate([p, m[None]]), population, mean)
    curriculum, levels = setup.curriculum, state.levels
    if curriculum is None:
        states, fitness, inner_metrics = jax.vmap(
            lambda params: setup.inner_run(setup, params, key_inner, hp)
        )(members)
    else:  # the levels from the inner key: every member meets the same ones
        levels, tasks, chosen = curriculum.choose(setup, levels, jax.random.fold_in(key_inner, 1))
        states, per_level, inner_metrics = jax.vmap(
            lambda params: on_levels(setup, params, key_inner, hp, tasks)
        )(members)
        fitness = per_level.mean(axis=-1)
    size = setup.config.population_size
    es, _ = strategy.tell(key_tell, population, -fitness[:size], es, es_params)  # it minimises
    trained = jax.tree.map(lambda x: x[size], states)
    metrics = {
        "lpo/fitness_mean": fitness[:size].mean(),
        "lpo/fitness_max": fitness[:size].max(),
        "lpo/fitness_min": fitness[:size].min(),
        "lpo/mean_fitness": fitness[size],
        "lpo/mean_norm": jnp.linalg.norm(es.mean),
    }
    metrics.update({k: v[size] for k, v in inner_metrics.items()})
    if curriculum is not None:
        levels, observed = curriculum.observe(
            setup, levels, chosen, per_level[size], lambda: antagonist(setup, key_inner, hp, tasks)
        )
        metrics.update(observed)
    return LPOState(es=es, ppo=trained, key=key, levels=levels), metrics


def act(setup: LPOSetup, state: LPOState, obs, key, deterministic=False, carry=(), **mask):
    """The action of the PPO policy the ES mean's drift trained last."""
    return ppo.act(setup.inner, state.ppo, obs, key, deterministic, carry, **mask)


def trainable(state: LPOState):
    return state.es.mean, ppo.trainable(state.ppo)


def strategy_for(config: LPOConfig, solution):
    """evosax's OpenAI-ES over `solution`'s shape: antithetic pairs, centred ranks, Adam."""
    try:
        import optax
        from evosax.algorithms import Open_ES
        from evosax.core.fitness_shaping import centered_rank_fitness_shaping_fn
    except ImportError:
        raise ValueError(MISSING) from None
    return Open_ES(
        population_size=config.population_size,
        solution=solution,
        use_antithetic_sampling=True,
        optimizer=optax.adam(config.es_learning_rate),
        std_schedule=optax.constant_schedule(config.es_sigma),
        fitness_shaping_fn=centered_rank_fitness_shaping_fn,
    )


def prepare(
    config: LPOConfig, env: Environment, env_params=None, inner: Callable = train_and_evaluate
) -> LPOSetup:
    if not isinstance(config, LPOConfig):
        raise TypeError(f"lpo.make needs an LPOConfig, got {type(config).__name__}")
    inner_setup = ppo.prepare(inner_config(config), env, env_params)
    levels = curriculum = None
    if config.num_tasks:
        levels = levels_of(env)
        if levels is None:
            raise ValueError(
                f"LPOConfig.num_tasks={config.num_tasks}: {env.name} has no levels to draw tasks "
                "from; allowed: 0, or an environment with levels (maze/..., meta/bandit, ...)"
            )
        curriculum = lpo_tasks.CURRICULA[config.curriculum]
    net = DriftNet(config.drift_hidden)
    strategy = strategy_for(config, _solution(config, net))
    return LPOSetup(config, inner_setup, net, strategy, inner, levels, curriculum)


def _solution(config: LPOConfig, net: DriftNet):
    """Zeros in the shape of the drift network's weights (what the ES searches over)."""
    template = jax.eval_shape(net.init, jax.random.key(0), jnp.zeros((1, _num_features(config))))
    return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), template)


def mean_drift(config: LPOConfig, state: LPOState):
    """The drift network's weights at the ES mean of one run's `state` (unbatched)."""
    net = DriftNet(config.drift_hidden)
    return strategy_for(config, _solution(config, net)).get_mean(state.es)


def drift_loss(config: LPOConfig, params) -> Callable:
    """PPO's policy loss with the learned drift of `params` (`mean_drift`) in place of the clip,
    for an ordinary PPO run (`rlsuite train ppo --drift RUN_DIR`). A temporally-aware drift is
    refused: it reads the run's progress, which PPO's policy loss is not given."""
    if config.temporal:
        raise ValueError(
            "the drift of an LPO run with temporal=True reads the inner run's progress, which "
            "PPO's policy loss is not given; train one with temporal=False"
        )
    return losses.drift_policy_loss(
        learned_drift(DriftNet(config.drift_hidden), params, False, None)
    )


def make(
    config: LPOConfig, env: Environment, env_params=None, inner: Callable = train_and_evaluate
) -> Agent:
    """LPO on `env` (the module docstring). A research variant passes `inner(setup, params, key,
    hparams) -> (PPO state, fitness, metrics)`, the run of one member of the population
    (`params`: the drift network's weights): `train_and_evaluate` is LPO's."""
    setup = prepare(config, env, env_params, inner)
    return bind(
        setup,
        init=init,
        update=update,
        **acting(act, None, False),
        name="lpo",
        config=config,
        env=setup.inner.env,
        env_params=setup.inner.env_params,
        default_hparams=ppo.PPOHparams(),
        check_hparams=ppo.check_hparams,
        env_steps_per_update=config.generation_steps,
        trainable=trainable,
        reads_action_mask=True,
    )


# This family in the algorithm registry (`rlsuite train lpo`).
ALGORITHM = registry.register(
    registry.Algorithm(
        name="lpo",
        make=make,
        config_cls=LPOConfig,
        hparams_cls=ppo.PPOHparams,
        offline=False,
        default_env="cartpole",
    )
)
