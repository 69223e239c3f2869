"""Action masks (`rlsuite.environment.masks`): the contract, the checker, the rollout's plumbing,
the math each agent applies, and the probe whose masked action would pay the most
(`probe/masked_action`), which trained PPO and PQN never take while unmasked runs do."""

import functools

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite import envs
from rlsuite.agents import dqn, ppo, pqn, registry
from rlsuite.agents.ppo_config import PPOConfig
from rlsuite.app import cli
from rlsuite.environment import Environment, masks
from rlsuite.environment.checker import EnvContractError, check_env
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.environment.wrappers import EpisodeStatistics, TimeLimit
from rlsuite.loop import agent as agent_lib
from rlsuite.loop.episodes import evaluate
from rlsuite.loop.rollout import reset_batch, rollout
from tests import toy_algorithm
from tests.tiers import slow_but


def test_masked_logits_give_the_legal_actions_softmax_and_entropy():
    logits = jnp.array([1.0, 3.0, 0.5, -2.0])
    mask = jnp.array([True, False, True, True])
    dist = masks.masked(distrax.Categorical(logits=logits), mask)
    legal = np.exp([1.0, 0.5, -2.0]) / np.exp([1.0, 0.5, -2.0]).sum()
    np.testing.assert_allclose(dist.probs, [legal[0], 0.0, legal[1], legal[2]], rtol=1e-6)
    np.testing.assert_allclose(dist.log_prob(2), np.log(legal[1]), rtol=1e-6)
    np.testing.assert_allclose(dist.entropy(), -(legal * np.log(legal)).sum(), rtol=1e-6)
    assert int(dist.mode()) == 0  # the largest logit, 3.0, is masked
    samples = dist.sample(seed=jax.random.key(0), sample_shape=(2000,))
    assert not np.any(np.asarray(samples) == 1)
    # No mask: the distribution itself.
    assert masks.masked(dist, None) is dist


def test_legal_max_and_uniform_legal():
    values = jnp.array([[5.0, 1.0, 2.0], [5.0, 1.0, 2.0], [5.0, 1.0, 2.0]])
    mask = jnp.array([[True, True, True], [False, True, True], [False, False, False]])
    np.testing.assert_array_equal(masks.legal_max(values, mask), [5.0, 2.0, 0.0])
    np.testing.assert_array_equal(masks.legal_max(values, None), [5.0, 5.0, 5.0])
    # What DQN's target rule reads: the masked values -inf, a row with none legal all 0; so
    # Q-learning's max and double Q-learning's argmax (online [0, 9, 1]: 1 among the legal)
    # both take the legal actions only.
    ready = np.asarray(masks.for_max(values, mask))
    np.testing.assert_array_equal(ready, [[5, 1, 2], [-np.inf, 1, 2], [0, 0, 0]])
    from rlsuite.ops import losses

    reward, discount = jnp.ones(3), jnp.array([0.5, 0.5, 0.0])
    y = losses.q_learning_target(reward, discount, jnp.asarray(ready), None)
    np.testing.assert_array_equal(y, [1 + 0.5 * 5, 1 + 0.5 * 2, 1])
    online = masks.for_max(jnp.tile(jnp.array([0.0, 9.0, 1.0]), (3, 1)), mask)
    y = losses.q_learning_target(reward, discount, jnp.asarray(ready), online)
    np.testing.assert_array_equal(y, [1 + 0.5 * 1, 1 + 0.5 * 1, 1])
    draws = masks.uniform_legal(jax.random.key(1), jnp.tile(mask[1], (9000, 1)))
    counts = np.bincount(np.asarray(draws), minlength=3)
    assert counts[0] == 0
    # 4,500 expected each; 4 standard deviations (47) apart at most.
    assert abs(counts[1] - 4500) < 190 and abs(counts[2] - 4500) < 190


def test_q_lambda_targets_maximise_over_the_legal_next_actions():
    # One step, truncated: the target is r + gamma * max over the legal next actions.
    reward = jnp.array([[1.0]])
    next_q = jnp.array([[[10.0, 3.0, 4.0]]])
    next_mask = jnp.array([[[False, True, True]]])
    no, yes = jnp.array([[False]]), jnp.array([[True]])
    target = pqn.q_lambda_targets(reward, no, yes, next_q, 0.5, 0.9, next_mask=next_mask)
    np.testing.assert_allclose(target, [[1.0 + 0.5 * 4.0]])
    unmasked = pqn.q_lambda_targets(reward, no, yes, next_q, 0.5, 0.9)
    np.testing.assert_allclose(unmasked, [[1.0 + 0.5 * 10.0]])
    # Terminated where nothing is legal: no bootstrap and no NaN.
    none_legal = jnp.zeros_like(next_mask)
    target = pqn.q_lambda_targets(reward, yes, no, next_q, 0.5, 0.9, next_mask=none_legal)
    np.testing.assert_array_equal(target, [[1.0]])


@struct.dataclass
class _Params:
    pass


class _Counter(Environment):
    """A counter whose legal actions are `action < 1 + count % 3` (a hand-checkable mask)."""

    def __init__(self, shape=(3,), dtype=jnp.bool_, space=None):
        self.shape, self.dtype, self.space = shape, dtype, space or Discrete(3)

    default_params = _Params()

    def reset_env(self, key, params):
        return jnp.zeros((1,)), jnp.zeros((), jnp.int32)

    def step_env(self, key, state, action, params):
        state = state + 1
        obs = state.astype(jnp.float32)[None]
        return obs, state, jnp.float32(0), state >= 4, jnp.asarray(False), {}

    def action_mask(self, state, params):
        return (jnp.arange(self.shape[0]) < 1 + state % 3).astype(self.dtype)

    def observation_space(self, params):
        return Box(-np.inf, np.inf, (1,))

    def action_space(self, params):
        return self.space


def test_the_checker_checks_a_masks_shape_dtype_and_action_space():
    check_env(_Counter())
    with pytest.raises(EnvContractError, match=r"gave int32\(3,\); return a bool array \[3\]"):
        check_env(_Counter(dtype=jnp.int32))
    with pytest.raises(EnvContractError, match=r"gave bool\(4,\); return a bool array \[3\]"):
        check_env(_Counter(shape=(4,)))
    with pytest.raises(EnvContractError, match="masks are for a Discrete action space"):
        check_env(_Counter(space=Box(-1.0, 1.0, (1,))))
    assert not envs.make("cartpole")[0].has_action_mask


def test_wrappers_pass_the_mask_through_and_the_rollout_keeps_it():
    env = EpisodeStatistics(TimeLimit(_Counter(), max_episode_steps=3))
    assert env.has_action_mask
    params = env.default_params
    seen = []

    def policy(key, obs, action_mask):
        seen.append(action_mask)
        return jnp.zeros(obs.shape[0], jnp.int32), {}

    batch = reset_batch(env, params, jax.random.key(0), 2)
    _, tr = rollout(env, params, policy, jax.random.key(1), batch, 8)
    count = np.arange(8) % 3  # the counter at each step: truncated after 3
    expected = np.arange(3)[None, :] < 1 + count[:, None]
    np.testing.assert_array_equal(tr.extras["action_mask"][:, 0], expected)
    # The pre-reset state's mask: the counter after the step (3 at the truncation: 1 legal).
    after = np.arange(8) % 3 + 1
    final = np.arange(3)[None, :] < 1 + after[:, None] % 3
    np.testing.assert_array_equal(tr.info["final_action_mask"][:, 0], final)
    assert seen[0].shape == (2, 3) and seen[0].dtype == jnp.bool_


def test_an_agent_that_does_not_read_masks_is_refused_an_environment_with_them(tmp_path, capsys):
    env, params = envs.make("probe/masked_action")
    stages = {"init": None, "update": None, "act": None}
    with pytest.raises(masks.MasksNotRead, match=r"does not read them \(Agent.reads_action_mask"):
        agent_lib.bind(None, **stages, name="mine", env=env)
    # The command line names the algorithms that take it, before anything is written: for a
    # family that takes the environment otherwise (the toy family, whose agent is not bound)...
    out = tmp_path / "run"
    registry.register(toy_algorithm.ALGORITHM)
    try:
        assert cli.main(["train", "toy", "--env", "probe/masked_action", "--out", str(out)]) == 2
    finally:
        registry.unregister("toy")
    said = capsys.readouterr().err
    takers = "take it: ppo, dqn, c51, qrdqn, iqn, rainbow, pqn, fixpo, dpo, lpo\n"
    assert "toy does not read them" in said and takers in said
    # ... after the family's own refusal of the environment (UED's: it has no levels).
    assert cli.main(["train", "ued", "--env", "probe/masked_action", "--out", str(out)]) == 2
    assert "ued trains on an environment with levels" in capsys.readouterr().err
    assert not out.exists()


def test_the_families_that_take_a_masked_environment_are_those_whose_agents_read_masks():
    """Where each family declares it, binding its agent (`Agent.reads_action_mask`): its agents
    on its default environment say so, and the registry finds exactly the readers that take a
    discrete environment (RL^2 takes only meta-environments) among the online families that
    take the masked probe."""
    readers = ["ppo", "rl2", "dqn", "c51", "qrdqn", "iqn", "rainbow", "pqn", "fixpo", "dpo"]
    readers.append("lpo")
    for name in registry.online():
        algo = registry.get(name)
        agent = algo.make(algo.config_cls(), *envs.make(algo.default_env))
        assert agent.reads_action_mask == (name in readers), name
    taken = registry.taking(*envs.make("probe/masked_action"))
    assert taken == ["ppo", "dqn", "c51", "qrdqn", "iqn", "rainbow", "pqn", "fixpo", "dpo", "lpo"]
    # A family whose agent does not read masks (the toy's) takes the probe only unmasked.
    registry.register(toy_algorithm.ALGORITHM)
    try:
        assert "toy" not in registry.taking(*envs.make("probe/masked_action"))
        assert "toy" in registry.taking(*envs.make("probe/masked_action", masked=False))
    finally:
        registry.unregister("toy")


def _trained(algo: str, masked: bool):
    env, params = envs.make("probe/masked_action", masked=masked)
    sizes = {"num_envs": 16, "num_steps": 8, "total_timesteps": 16 * 8 * 150}
    sizes |= {"num_minibatches": 2, "update_epochs": 4, "hidden_sizes": (16,)}
    if algo == "ppo":
        agent = ppo.make(PPOConfig(**sizes), env, params)
    elif algo == "pqn":
        agent = pqn.make(pqn.PQNConfig(**sizes), env, params)
    else:  # 150 updates of 16 env steps, after 20 of uniformly random legal ones
        replay = {"buffer_size": 2048, "batch_size": 64, "learning_starts": 320}
        config = dqn.DQNConfig(num_envs=16, **replay, total_timesteps=16 * 170, hidden_sizes=(16,))
        agent = dqn.make(config, env, params)
    hp = agent.default_hparams.replace(learning_rate=3e-3)
    updates = agent.config.num_updates

    @jax.jit
    def train(key):
        state = agent.init(key, hp)
        return jax.lax.fori_loop(0, updates, lambda i, s: agent.update(s, hp)[0], state)

    return agent, train(jax.random.key(0))


@pytest.mark.parametrize("algo", slow_but(("ppo", "dqn"), ["ppo", "pqn", "dqn"]))
def test_trained_agents_never_take_the_masked_action_that_pays_the_most(algo):
    """Over 10,000 steps (100 envs x 100) of the trained policy, exploring and greedy, the masked
    action (which pays 1, against 0.5 for the best legal one) is never taken; trained on the same
    probe without the mask, the agent takes it at about every +1 observation (5,077 of 10,000
    here with these keys; the bound is half of that)."""
    for masked in (True, False):
        agent, state = _trained(algo, masked)
        for deterministic in (False, True):
            policy = agent_lib.policy(agent, state, deterministic)
            batch = reset_batch(agent.env, agent.env_params, jax.random.key(1), 100)
            run = jax.jit(
                functools.partial(rollout, agent.env, agent.env_params, policy, num_steps=100)
            )
            _, tr = run(jax.random.key(2), batch)
            illegal = int(tr.info["illegal_action"].sum())
            if masked:
                assert illegal == 0, (algo, deterministic)
            else:
                assert illegal > 2500, (algo, deterministic, illegal)
        if masked:  # evaluation acts through the same masks
            result = evaluate(
                agent.env, agent.env_params, agent_lib.policy(agent, state, True),
                jax.random.key(4), 200, max_steps=1,
            )  # fmt: skip
            # The best legal return is 1 at -1 and 0.5 at +1: 0.75 on average (+-0.018 sd).
            assert abs(float(result.returns.mean()) - 0.75) < 0.08
