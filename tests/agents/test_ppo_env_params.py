"""PPO with per-environment params in its learner state: four CartPoles with four pole lengths,
changed between updates, each stepped with its own (checked against separate one-env runs)."""

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.loop import driver
from rlsuite.loop.rollout import RecurrentPolicy, rollout

CONFIG = ppo.PPOConfig(num_envs=4, num_steps=24, num_minibatches=2, total_timesteps=10_000)
FIRST = jnp.array([0.2, 0.5, 1.0, 2.0])  # half pole lengths, one per environment
SECOND = jnp.array([1.5, 0.3, 0.7, 0.4])


def with_lengths(params, lengths):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, lengths.shape), params).replace(
        length=lengths
    )


def one_env_run(agent, batch, i, params, actions):
    """Environment `i` of `batch` alone, with `params`, replaying `actions` (`[T]`): a one-env
    rollout whose policy's carry is the step index."""
    alone = jax.tree.map(lambda x: x[i : i + 1], batch._replace(carry=(), params=None))

    def replay(key, obs, t):
        return actions[t, 0], {}, t + 1

    policy = RecurrentPolicy(replay, lambda n: jnp.zeros((n,), jnp.int32))
    alone = alone._replace(carry=policy.initial(1))
    _, tr = rollout(agent.env, params, policy, jax.random.key(9), alone, actions.shape[0])
    return tr


def first_episode(tr_next_obs, done):
    """The steps up to and including the first episode end (after it, resets draw other keys)."""
    ends = np.flatnonzero(done)
    stop = ends[0] + 1 if len(ends) else len(done)
    return np.asarray(tr_next_obs[:stop])


def check_each_env_against_one_env_runs(agent, before, tr, lengths):
    params = agent.env_params
    for i in range(CONFIG.num_envs):
        own = params.replace(length=lengths[i])
        alone = one_env_run(agent, before, i, own, tr.action[:, i : i + 1])
        done = np.asarray(tr.terminated[:, i] | tr.truncated[:, i])
        ours = first_episode(tr.next_obs[:, i], done)
        np.testing.assert_allclose(
            ours, first_episode(alone.next_obs[:, 0], done), rtol=1e-6, atol=1e-7
        )
        # A negative control: the same environment with another pole length moves otherwise.
        other = params.replace(length=lengths[i] * 1.7)
        wrong = one_env_run(agent, before, i, other, tr.action[:, i : i + 1])
        assert not np.allclose(ours, first_episode(wrong.next_obs[:, 0], done), atol=1e-6)


def test_ppo_steps_each_env_with_the_params_in_its_learner_state():
    env, env_params = envs.make("cartpole")
    agent = ppo.make(CONFIG, env, env_params)
    hp = agent.default_hparams
    state = jax.jit(agent.init)(jax.random.key(0), hp)
    # The learner state holds one set of params per environment; the rollout uses them.
    state = state.replace(env=state.env._replace(params=with_lengths(env_params, FIRST)))
    setup = ppo.prepare(CONFIG, env, env_params)  # what make binds the steps to
    collect = jax.jit(ppo.collect, static_argnums=0)
    run = jax.jit(driver.run, static_argnums=(0, 3))

    for lengths in (FIRST, SECOND):
        # The update's own rollout: ppo.update collects with key split from state.key.
        _, key_collect, _ = jax.random.split(state.key, 3)
        batch, tr = collect(setup, state, key_collect)
        check_each_env_against_one_env_runs(agent, state.env, tr, lengths)
        new_state, metrics = run(agent, state, hp, 1)
        # The update continued exactly from that rollout's batch, params kept.
        np.testing.assert_array_equal(new_state.env.obs, batch.obs)
        np.testing.assert_array_equal(new_state.env.params.length, lengths)
        assert np.isfinite(metrics["losses/value_loss"]).all()
        # Between updates the learner state's params change (the episodes go on).
        state = new_state.replace(
            env=new_state.env._replace(params=with_lengths(env_params, SECOND))
        )
