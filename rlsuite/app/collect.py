"""Offline datasets the suite makes itself, in D4RL's qualities, with our own SAC or TD3.

    behaviour = train_behaviour(agent, hparams, key, "pendulum")   # several qualities, one training
    expert = dataset(agent, behaviour, key_data, "expert", size=100_000)
    save_d4rl("data/pendulum-expert.hdf5", expert)

`agent` is an online off-policy agent (`sac.make(...)` or `td3.make(...)`); its config sets the
behaviour runs (`total_timesteps` is the expert's training budget). Qualities, as D4RL makes them:

- `random`: uniformly random actions.
- `expert`: the policy of a fully trained run (`config.total_timesteps`), acting stochastically.
- `medium`: a second run stopped at the first evaluation (every `1/eval_points` of the budget)
  that reaches a third of the way from the random to the expert return (a normalised score of
  33), acting stochastically.
- `medium-replay`: every transition the medium run collected while training, in its replay
  buffer (the buffer must hold the whole run: `buffer_size >= total_timesteps`); its size is set by
  when the run reached medium, not by `size`.
- `medium-expert`: `size / 2` medium transitions followed by `size / 2` expert ones.

Every dataset records in its `DatasetInfo` the reference returns that D4RL's normalised score
uses: `random_return` (the uniform policy) and `expert_return` (the expert's deterministic
evaluation), both the mean over `eval_episodes` episodes, and in `extra["behaviour"]` the
behaviour agent's config and hyperparameters. The same key gives the same dataset.
Datasets store actions in the environment's own bounds.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.data.datasets import Dataset, DatasetInfo, concatenate, from_transitions
from rlsuite.data.transition import Transition
from rlsuite.environment.wrappers import RescaleAction
from rlsuite.loop import driver
from rlsuite.loop.agent import Agent
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import reset_batch, rollout

QUALITIES = ("random", "medium", "expert", "medium-replay", "medium-expert")
MEDIUM_SCORE = 100.0 / 3.0


def check(agent: Agent, quality: str, size: int, num_envs: int) -> None:
    """Refuse a request `dataset` cannot make, before anything runs."""
    if quality not in QUALITIES:
        raise ValueError(f"unknown quality {quality!r}; allowed: {', '.join(QUALITIES)}")
    if agent.name not in ("sac", "td3"):
        raise ValueError(f"datasets are collected with sac or td3 agents, got {agent.name!r}")
    if agent.config.n_step != 1 and quality == "medium-replay":
        raise ValueError("collect: medium-replay needs n_step=1 (its items are single steps)")
    for name, value in (("size", size), ("num_envs", num_envs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"collect: {name} must be an integer >= 1, got {value!r}")
    if quality == "medium-expert" and size % 2:
        raise ValueError(
            f"collect: medium-expert takes half of its size from each policy, so size must be "
            f"even, got {size}"
        )
    rows = size // 2 if quality == "medium-expert" else size
    if quality != "medium-replay" and (rows % num_envs or rows < num_envs):
        raise ValueError(
            f"collect: size={size} must give a multiple of num_envs={num_envs} transitions per "
            f"policy ({rows} for {quality})"
        )
    config = agent.config
    if quality == "medium-replay" and config.buffer_size < config.total_timesteps:
        raise ValueError(
            f"collect: medium-replay keeps the whole medium run, so buffer_size="
            f"{config.buffer_size} must be >= total_timesteps={config.total_timesteps}"
        )


# Policies as `(agent, state, key, obs) -> (action, extras)`: module-level functions, so that the
# compiled rollouts and evaluations take the learner state as an argument and are reused across
# states (the medium run's evaluations, medium and expert recordings) instead of recompiled.
def _uniform(agent: Agent, state, key, obs):
    shape = agent.env.action_space(agent.env_params).shape
    return jax.random.uniform(key, (obs.shape[0], *shape), minval=-1.0, maxval=1.0), {}


def _stochastic(agent: Agent, state, key, obs):
    return agent.act(state, obs, key, False), {}


def _greedy(agent: Agent, state, key, obs):
    return agent.act(state, obs, key, True), {}


@functools.partial(jax.jit, static_argnums=(0, 1, 4))
def _returns(agent: Agent, policy, state, key, episodes: int):
    bound = functools.partial(policy, agent, state)
    return evaluate(agent.env, agent.env_params, bound, key, episodes).returns


def _mean_return(agent: Agent, policy, state, key, episodes: int) -> float:
    return float(np.mean(_returns(agent, policy, state, key, episodes)))


def _env_bounds(agent: Agent, action):
    """Actions of the agent's `[-1, 1]` space in the environment's own bounds."""
    env = agent.env
    while not isinstance(env, RescaleAction):
        env = env.env
    space = env.env.action_space(agent.env_params)
    low, high = jnp.asarray(space.low), jnp.asarray(space.high)
    return low + (action + 1.0) * 0.5 * (high - low)


@functools.partial(jax.jit, static_argnums=(0, 1, 5, 6))
def _transitions(agent: Agent, policy, state, key_reset, key_run, steps: int, num_envs: int):
    batch = reset_batch(agent.env, agent.env_params, key_reset, num_envs)
    bound = functools.partial(policy, agent, state)
    return rollout(agent.env, agent.env_params, bound, key_run, batch, steps)[1]


def _record(
    agent: Agent, policy, state, key, steps: int, num_envs: int, info: DatasetInfo
) -> Dataset:
    tr = _transitions(agent, policy, state, *jax.random.split(key), steps, num_envs)
    tr = tr._replace(action=_env_bounds(agent, tr.action))
    return from_transitions(tr, info)


def _train(agent: Agent, hparams, key, num_updates: int):
    return jax.jit(driver.train, static_argnums=(0, 3))(agent, key, hparams, num_updates)[0]


def _medium_run(agent, hparams, key, target: float, eval_points: int, eval_episodes: int):
    """Train until the deterministic evaluation reaches `target`; (state, env steps, return).

    It evaluates at up to `eval_points` evenly spaced points and never trains past the expert's
    `num_updates`, so its replay buffer (`buffer_size >= total_timesteps`) never wraps and a
    medium-replay dataset is the run in time order."""
    points = min(eval_points, agent.config.num_updates)
    chunk = agent.config.num_updates // points
    run = jax.jit(driver.run, static_argnums=(0, 3))
    key_init, key_eval = jax.random.split(key)
    state = agent.init(key_init, hparams)
    for point in range(1, points + 1):
        state, _ = run(agent, state, hparams, chunk)
        key_eval, key_now = jax.random.split(key_eval)
        ret = _mean_return(agent, _greedy, state, key_now, eval_episodes)
        if ret >= target:
            return state, point * chunk * agent.env_steps_per_update, ret
    raise RuntimeError(
        f"the medium run never reached a return of {target:.1f} (last {ret:.1f}); raise "
        "total_timesteps or use another seed"
    )


def _replay_dataset(agent: Agent, state, info: DatasetInfo) -> Dataset:
    """The medium run's replay buffer, as `[updates, num_envs]` transitions."""
    size, num_envs = int(state.buffer.size), agent.config.num_envs
    data = jax.tree.map(
        lambda x: x[:size].reshape(size // num_envs, num_envs, *x.shape[1:]), state.buffer.data
    )
    tr = Transition(
        obs=data["obs"],
        action=_env_bounds(agent, data["action"]),
        reward=data["reward"],
        terminated=data["terminated"],
        truncated=data["truncated"],
        next_obs=data["next_obs"],
        info={},
        extras={},
    )
    return from_transitions(tr, info)


class Behaviour(NamedTuple):
    """The trained behaviour policies of a collection and the reference returns."""

    expert: Any  # learner state of the fully trained run
    medium: Any  # learner state of the run stopped at medium (None if not trained)
    info: DatasetInfo  # env, algo, seed, reference returns, how the runs went (in `extra`)


def train_behaviour(
    agent: Agent,
    hparams: Any,
    key: jax.Array,
    env_name: str,
    medium: bool = True,
    eval_episodes: int = 20,
    eval_points: int = 30,
    seed: int | None = None,
) -> Behaviour:
    """Train the expert (and, with `medium`, the medium run) once; `dataset` then records any
    quality from them."""
    if agent.name not in ("sac", "td3"):
        raise ValueError(f"datasets are collected with sac or td3 agents, got {agent.name!r}")
    for name, value in (("eval_episodes", eval_episodes), ("eval_points", eval_points)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"collect: {name} must be an integer >= 1, got {value!r}")
    # One evaluation key for the random and the expert returns: both references see the same
    # start states.
    key_expert, key_medium, key_eval = jax.random.split(key, 3)
    random_return = _mean_return(agent, _uniform, None, key_eval, eval_episodes)
    expert = _train(agent, hparams, key_expert, agent.config.num_updates)
    expert_return = _mean_return(agent, _greedy, expert, key_eval, eval_episodes)
    extra = {
        "expert_env_steps": agent.config.total_timesteps,
        # How the behaviour runs were made, so the dataset can be made again from its file.
        "behaviour": {
            "config": dataclasses.asdict(agent.config),
            "hparams": {name: np.asarray(v).tolist() for name, v in vars(hparams).items()},
        },
    }
    medium_state = None
    if medium:
        target = random_return + (expert_return - random_return) * MEDIUM_SCORE / 100.0
        medium_state, steps, medium_return = _medium_run(
            agent, hparams, key_medium, target, eval_points, eval_episodes
        )
        extra.update(medium_env_steps=steps, medium_return=medium_return)
    info = DatasetInfo(
        env=env_name,
        algo=agent.name,
        seed=seed,
        random_return=random_return,
        expert_return=expert_return,
        extra=extra,
    )
    return Behaviour(expert, medium_state, info)


def dataset(
    agent: Agent, behaviour: Behaviour, key: jax.Array, quality: str, size: int, num_envs: int = 10
) -> Dataset:
    """Record a dataset of `quality` from the `behaviour` runs of `agent`."""
    check(agent, quality, size, num_envs)
    if needs_medium(quality) and behaviour.medium is None:
        raise ValueError(f"collect: {quality} needs the medium run (train_behaviour(medium=True))")
    info = dataclasses.replace(behaviour.info, quality=quality)
    key_first, key_second = jax.random.split(key)
    rows = size // 2 if quality == "medium-expert" else size
    if quality == "random":
        return _record(agent, _uniform, None, key_first, size // num_envs, num_envs, info)
    if quality == "medium-replay":
        steps = info.extra["medium_env_steps"]
        return _replay_dataset(agent, behaviour.medium, dataclasses.replace(info, env_steps=steps))
    state = behaviour.expert if quality == "expert" else behaviour.medium
    data = _record(agent, _stochastic, state, key_first, rows // num_envs, num_envs, info)
    if quality != "medium-expert":
        return data
    second = _record(
        agent, _stochastic, behaviour.expert, key_second, rows // num_envs, num_envs, info
    )
    return dataclasses.replace(concatenate(data, second), info=info)


def needs_medium(quality: str) -> bool:
    """Whether a dataset of `quality` needs the medium run (`train_behaviour(medium=True)`)."""
    return quality not in ("random", "expert")
