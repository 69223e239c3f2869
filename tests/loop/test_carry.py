"""A policy with memory through rollout, evaluation, the driver and a resumed run.

The counting agent's carry counts the steps since its last reset; it acts `+1` on even counts and
`-1` on odd ones, so on `Counter` (reward = action + 1) a step's reward is 2 exactly where the carry
is even. `Counter`'s own step count (`info["count"]`, steps since the environment's reset) is the
independent reference: the carry before a step must equal `count - 1` there, which holds only if
the carry was reset exactly where the episode ended (`terminated | truncated`).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite.environment.wrappers import TimeLimit
from rlsuite.loop import driver
from rlsuite.loop.agent import Agent, extra_args, policy
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import (
    TRIAL_END,
    EnvBatch,
    RecurrentPolicy,
    reset_batch,
    reset_each,
    rollout,
)
from tests import fitting
from tests.counter_env import Counter, CounterParams

NUM_ENVS, NUM_STEPS, TIME_LIMIT = 3, 7, 4
# Per environment: terminated after 3 steps; never terminated (truncated at 4); terminated after 2.
TERMINATE_AT = jnp.array([3, 0, 2])


@dataclasses.dataclass(frozen=True)
class CountingConfig:
    num_envs: int = NUM_ENVS
    num_steps: int = NUM_STEPS
    num_updates: int = 4


@struct.dataclass
class CountingHparams:
    unused: float = 0.0


@struct.dataclass
class CountingState:
    env: EnvBatch
    key: jax.Array
    update_step: jax.Array


def initial_carry(state, num_envs):
    return jnp.zeros((num_envs,), jnp.int32)


def act(state, obs, key, deterministic, carry):
    """`+1` where the carry is even, `-1` where odd; the carry counts the step."""
    action = jnp.where(carry % 2 == 0, 1.0, -1.0)[:, None]
    return action, carry + 1


def counting_policy(state=None):
    def apply(key, obs, carry):
        action, new = act(state, obs, key, False, carry)
        return action, {"carry": carry}, new

    return RecurrentPolicy(apply, lambda n: initial_carry(state, n))


def make_counting_agent(env=None) -> Agent:
    env = TimeLimit(Counter(), TIME_LIMIT) if env is None else env
    config = CountingConfig()

    def init(key, hp):
        key, key_env = jax.random.split(key)
        params = CounterParams(terminate_at=TERMINATE_AT)
        batch = reset_each(env, params, key_env, counting_policy())
        return CountingState(batch, key, jnp.zeros((), jnp.int32))

    def update(state, hp):
        key, key_run = jax.random.split(state.key)
        batch, tr = rollout(env, None, counting_policy(state), key_run, state.env, NUM_STEPS)
        mismatch = jnp.sum(tr.extras["carry"] != tr.info["count"] - 1)
        metrics = {"mismatch": mismatch, "reward": jnp.mean(tr.reward), "obs": jnp.sum(tr.obs)}
        return CountingState(batch, key, state.update_step + 1), metrics

    return Agent(
        name="counting",
        config=config,
        env=env,
        env_params=CounterParams(terminate_at=3),
        default_hparams=CountingHparams(),
        init=init,
        update=update,
        act=act,
        check_hparams=lambda hp: None,
        env_steps_per_update=NUM_ENVS * NUM_STEPS,
        initial_carry=initial_carry,
    )


def steps_since_reset(done: np.ndarray) -> np.ndarray:
    """A plain loop: for each step `[T, N]`, the steps taken since the last episode end."""
    out = np.zeros(done.shape, np.int64)
    count = np.zeros(done.shape[1], np.int64)
    for t in range(done.shape[0]):
        out[t] = count
        count = np.where(done[t], 0, count + 1)
    return out


def test_rollout_resets_the_carry_exactly_where_an_episode_ends():
    env = TimeLimit(Counter(), TIME_LIMIT)
    batch = reset_each(env, CounterParams(terminate_at=TERMINATE_AT), jax.random.key(0))
    batch = batch._replace(carry=initial_carry(None, NUM_ENVS))
    run = jax.jit(rollout, static_argnums=(0, 2, 5))
    batch, tr = run(env, None, counting_policy(), jax.random.key(1), batch, 9)
    done = np.asarray(tr.terminated | tr.truncated)
    # The three kinds of episode end, per environment (hand-derived from TERMINATE_AT and the
    # time limit): terminated at steps 3, 6, 9; truncated at 4, 8; terminated at 2, 4, 6, 8.
    np.testing.assert_array_equal(np.flatnonzero(done[:, 0]), [2, 5, 8])
    np.testing.assert_array_equal(np.flatnonzero(done[:, 1]), [3, 7])
    assert not tr.terminated[:, 1].any()
    np.testing.assert_array_equal(np.flatnonzero(done[:, 2]), [1, 3, 5, 7])
    carry = np.asarray(tr.extras["carry"])
    np.testing.assert_array_equal(carry, steps_since_reset(done))
    np.testing.assert_array_equal(carry, np.asarray(tr.info["count"]) - 1)
    np.testing.assert_array_equal(tr.reward, np.where(carry % 2 == 0, 2.0, 0.0))
    # The carry after the last step: env 0 ended at step 9 (reset to 0), env 1 is 1 step into
    # its third episode, env 2 ended at step 8 and took one step since.
    np.testing.assert_array_equal(batch.carry, [0, 1, 1])
    # Each environment stepped with its own params, held by the batch.
    np.testing.assert_array_equal(batch.params.terminate_at, TERMINATE_AT)


class TrialCounter(Counter):
    """`Counter` whose trial never ends: the carry must survive its episode ends."""

    def step_env(self, key, state, action, params):
        *out, info = super().step_env(key, state, action, params)
        return (*out, {**info, TRIAL_END: jnp.zeros((), bool)})


def test_a_reported_trial_end_replaces_the_episode_end():
    env = TrialCounter()
    params = CounterParams(terminate_at=2)
    batch = reset_batch(env, params, jax.random.key(0), 2)._replace(carry=jnp.zeros(2, jnp.int32))
    _, tr = rollout(env, params, counting_policy(), jax.random.key(1), batch, 5)
    assert tr.terminated.any()
    np.testing.assert_array_equal(
        tr.extras["carry"], np.broadcast_to(np.arange(5)[:, None], (5, 2))
    )


def test_evaluation_starts_every_episode_from_the_initial_carry():
    agent = make_counting_agent()
    state = jax.jit(agent.init)(jax.random.key(0), agent.default_hparams)
    acting = policy(agent, state, True)
    params = CounterParams(terminate_at=3)
    result = evaluate(agent.env, params, acting, jax.random.key(1), 5)
    # Carries 0, 1, 2: actions +1, -1, +1, rewards 2, 0, 2.
    np.testing.assert_array_equal(result.returns, 4.0)
    np.testing.assert_array_equal(result.lengths, 3)
    # The same policy without its memory acts +1 on every step: a return of 6.
    forgetful = policy(
        agent._replace(
            initial_carry=None,
            act=lambda s, o, k, d: act(s, o, k, d, jnp.zeros(o.shape[0], jnp.int32))[0],
        ),
        state,
        True,
    )
    assert float(evaluate(agent.env, params, forgetful, jax.random.key(1), 5).returns[0]) == 6.0


def test_driver_vmapped_seeds_carry_the_count_and_evaluate():
    agent = make_counting_agent()
    keys = jax.random.split(jax.random.key(3), 2)
    hp = agent.default_hparams
    states = driver.init_batch(agent, keys, hp)
    states, metrics = jax.jit(driver.run_batch, static_argnums=(0, 3))(agent, states, hp, 3)
    assert metrics["mismatch"].shape == (2, 3)
    np.testing.assert_array_equal(metrics["mismatch"], 0)
    # Different seeds, different starts (Counter draws its start at reset).
    assert not np.array_equal(metrics["obs"][0], metrics["obs"][1])
    result = driver.evaluate_batch(agent, states, jax.random.key(4), 3)
    np.testing.assert_array_equal(result.returns, 4.0)


def test_a_resumed_run_continues_the_carry_exactly(tmp_path):
    agent = make_counting_agent()
    options = dict(num_seeds=2, chunk_updates=2, eval_episodes=2, progress=False)
    whole = fitting.fit(agent, jax.random.key(5), out_dir=tmp_path / "whole", **options)
    fitting.fit(agent, jax.random.key(5), out_dir=tmp_path / "cut", num_updates=2, **options)
    resumed = fitting.fit(
        agent, jax.random.key(5), out_dir=tmp_path / "cut", resume=True, num_updates=4, **options
    )
    # The carry lives in the saved learner state; the resumed run's last two updates and final
    # state (carry included) are the uninterrupted run's.
    np.testing.assert_array_equal(resumed.states.env.carry, whole.states.env.carry)
    np.testing.assert_array_equal(resumed.metrics["obs"], whole.metrics["obs"][:, 2:])
    np.testing.assert_array_equal(resumed.metrics["mismatch"], 0)
    assert resumed.states.env.carry.shape == (2, NUM_ENVS)
    np.testing.assert_array_equal(whole.eval_returns, 4.0)


def test_extra_args_are_declared_not_counted():
    agent = make_counting_agent()
    assert extra_args(agent) == {}
    with pytest.raises(ValueError, match="counting takes no data"):
        extra_args(agent, data={"x": 1})
    offline = agent._replace(extra_args=("data",))
    with pytest.raises(ValueError, match="counting needs data"):
        extra_args(offline)
    assert extra_args(offline, data=1) == {"data": 1}
