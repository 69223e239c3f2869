"""Prioritized replay for SAC and TD3 (`--replay prioritized`): each item's critic loss weighted
by its importance weight and its absolute TD error reported as its priority (against values
derived by hand from the critics' outputs and targets), the loop feeding those priorities to the
sum tree, bad input refused by name, seeds, and the command line."""

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import dqn, off_policy, sac, sac_her, td3
from rlsuite.agents.learner import learn_step
from rlsuite.data import prioritized
from rlsuite.loop import driver
from rlsuite.ops import losses
from tests.app.test_cli import rlsuite
from tests.tiers import slow_but
from tests.trees import leaves_equal

FAMILIES = {
    "sac": (sac.make, sac.SACConfig, sac.SACHparams),
    "td3": (td3.make, td3.TD3Config, td3.TD3Hparams),
}
WEIGHT = np.array([1.0, 0.5, 0.25, 0.0], np.float32)
REWARD = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


# ------------------------------------------------------------------------------ the losses' math
def test_weighted_critic_losses_and_priorities_match_numpy():
    q = np.array([[0.5, 1.0, -1.0, 2.0], [0.0, 3.0, -0.5, 1.0]], np.float32)  # [K=2, B=4]
    y = np.array([1.0, 1.0, 0.0, -1.0], np.float32)
    diff = q - y  # [[-0.5, 0, -1, 3], [-1, 2, -0.5, 2]]
    # 0.5 * sum_k mean_b w_b (q - y)^2: w (q - y)^2 is 0.25, 0, 0.25, 0 for the first critic
    # and 1, 2, 0.0625, 0 for the second: 0.5 * (0.5 + 3.0625) / 4
    assert float(losses.critic_loss(q, y, WEIGHT)) == pytest.approx(0.4453125)
    np.testing.assert_allclose(
        losses.critic_loss(q, y, WEIGHT), 0.5 * (WEIGHT * diff**2).mean(axis=1).sum(), rtol=1e-6
    )
    # without weights, the plain loss, the same floats as the weights' absence always gave
    unweighted = 0.5 * jnp.square(q - y).mean(axis=-1).sum()
    assert float(losses.critic_loss(q, y)) == float(unweighted)
    # |q - y| averaged over the critics: (0.5 + 1) / 2, (0 + 2) / 2, (1 + 0.5) / 2, (3 + 2) / 2
    np.testing.assert_allclose(losses.critic_priority(q, y), [0.75, 1.0, 0.75, 2.5], rtol=1e-6)
    # the expectile 0.9: u = y - q > 0 weighs 0.9, u < 0 weighs 0.1; summed over the 2 critics
    u = y - q
    asym = np.where(u < 0, 0.1, 0.9)
    expected = (WEIGHT * asym * u**2).mean(axis=1).sum()
    np.testing.assert_allclose(losses.expectile_critic_loss(q, y, 0.9, WEIGHT), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"critic_loss: targets \(4,\), weight \(3,\)"):
        losses.critic_loss(q, y, WEIGHT[:3])


# --------------------------------------------------------------------- one learner step by hand
def _learner(family):
    """A learner whose every gradient step is a whole update (TD3's delay 1: its actor too)."""
    if family == "sac":
        config = sac.SACConfig(hidden_sizes=(8,))
        return sac.learner(config, (3,), 2), sac.SACHparams()
    config = td3.TD3Config(hidden_sizes=(8,), policy_delay=1)
    return td3.learner(config, (3,), 2, config.policy_delay), td3.TD3Hparams()


def _batch(reward=REWARD, prioritized_batch=True):
    """Four items of discount 0, so that every target is the item's reward (SAC's soft target and
    TD3's clipped one alike: `y = r + 0 * (...)`)."""
    key_obs, key_action, key_next = jax.random.split(jax.random.key(7), 3)
    batch = {
        "obs": jax.random.normal(key_obs, (4, 3)),
        "action": jax.random.uniform(key_action, (4, 2), minval=-1.0, maxval=1.0),
        "reward": jnp.asarray(reward),
        "discount": jnp.zeros(4),
        "next_obs": jax.random.normal(key_next, (4, 3)),
    }
    if prioritized_batch:
        batch["index"] = jnp.arange(4, dtype=jnp.int32)
        batch["weight"] = jnp.asarray(WEIGHT)
    return batch


@pytest.mark.parametrize("family", ["sac", "td3"])
def test_one_step_weights_each_items_critic_loss_and_reports_its_absolute_td_error(family):
    learner, hp = _learner(family)
    state = learner.init(jax.random.key(0), hp)
    learn = jax.jit(learner.learn)
    nets = learner.learn.args[0]
    batch = _batch()
    q = np.asarray(nets.critic.apply(state.critic, batch["obs"], batch["action"]), np.float64)
    assert q.shape == (2, 4)
    new, metrics = learn(state, batch, jax.random.key(1), hp)
    # by hand: 0.5 * sum over the critics of the batch mean of w (q - r)^2; |q - r| averaged
    hand_loss = 0.5 * (WEIGHT * (q - REWARD) ** 2).mean(axis=1).sum()
    np.testing.assert_allclose(metrics["critic_loss"], hand_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["priority"], np.abs(q - REWARD).mean(axis=0), rtol=1e-5)
    # the gradient is the weighted loss's too: the item of weight 0 moves nothing, whatever
    # its target (the actor's loss does not read rewards)
    other, other_metrics = learn(state, _batch(REWARD + [0, 0, 0, 100]), jax.random.key(1), hp)
    assert leaves_equal(new, other)
    assert float(other_metrics["critic_loss"]) == float(metrics["critic_loss"])
    # a uniform batch (no index, no weights): the plain mean, and no priorities
    _, plain = learn(state, _batch(prioritized_batch=False), jax.random.key(1), hp)
    np.testing.assert_allclose(plain["critic_loss"], 0.5 * ((q - REWARD) ** 2).mean(1).sum(), 1e-5)
    assert "priority" not in plain


# ------------------------------------------------------------- the loop feeds the sum tree
def _agent(family, **fields):
    make, Config, _ = FAMILIES[family]
    config = Config(
        num_envs=2, buffer_size=64, batch_size=8, learning_starts=8, hidden_sizes=(8,),
        replay="prioritized", total_timesteps=48, **fields,
    )  # fmt: skip
    return make(config, *envs.make("pendulum"))


@pytest.mark.parametrize("family", ["sac", "td3"])
def test_after_the_learning_steps_the_sampled_leaves_hold_the_new_priorities(family):
    agent = _agent(family)
    hp = agent.default_hparams
    state, metrics = jax.jit(driver.train, static_argnums=(0, 3))(
        agent, jax.random.key(0), hp, agent.config.num_updates
    )
    buffer = state.buffer
    assert isinstance(buffer, prioritized.PrioritizedState)
    assert "losses/priority" not in metrics and np.isfinite(metrics["losses/critic_loss"][-1])
    # every learning update told the buffer each of its gradient steps' priorities: SAC one
    # step per update of 2 env steps from update 4 on (21 updates), TD3 2 per update of 4 env
    # steps from update 2 on (11 updates, 22 steps)
    assert int(buffer.updates) == {"sac": 21, "td3": 22}[family]
    assert int(buffer.updates) == int(state.learner.critic_opt.count)
    setup = agent.update.args[0]
    leaves = buffer.tree.shape[0] // 2
    np.testing.assert_allclose(buffer.tree[1], buffer.tree[leaves:].sum(), rtol=1e-5)
    held = np.asarray(buffer.tree[leaves : leaves + int(buffer.size)])
    assert len(np.unique(held)) > 10  # no longer all at the first priority
    # One more update's learning, the loop's own, and the same steps by hand: each step's
    # batch drawn from the buffer as the previous step left it.
    key = jax.random.key(3)
    feedback = jax.jit(functools.partial(off_policy.learn_with_feedback, setup))
    _, after, _ = feedback(state.learner, buffer, state.obs_stats, key, hp)
    learner_state, replica = state.learner, buffer
    steps = agent.config.gradient_steps * agent.config.collections_per_update
    for phase, step_key in enumerate(jax.random.split(key, steps)):
        key_sample, key_learn = jax.random.split(step_key)
        batch = off_policy.sample_batch(setup, replica, state.obs_stats, hp, key_sample)
        learner_state, step_metrics = learn_step(
            setup.learner, learner_state, batch, key_learn, hp, phase
        )
        replica = setup.buffer.update(replica, batch["index"], step_metrics["priority"])
        # the leaves at the sampled slots: (|priority| + epsilon)^alpha, alpha 0.6
        expected = (np.abs(np.asarray(step_metrics["priority"])) + 1e-6) ** 0.6
        np.testing.assert_allclose(replica.tree[leaves + batch["index"]], expected, rtol=1e-5)
    # the loop's (jitted) tree is the one by hand; its last step's leaves as above
    np.testing.assert_allclose(after.tree[leaves + batch["index"]], expected, rtol=1e-4)
    np.testing.assert_allclose(after.tree, replica.tree, rtol=1e-4, atol=1e-6)
    assert int(after.updates) == int(buffer.updates) + steps


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls", [sac.SACConfig, td3.TD3Config, dqn.DQNConfig])
def test_bad_sampling_fields_are_refused_by_name(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=rf"{name}.replay='ranked' is not one of: uniform, prio"):
        cls(replay="ranked")
    for field, value in [("priority_exponent", 1.5), ("importance_exponent", -0.1)]:
        with pytest.raises(ValueError, match=rf"{name}.{field} must be in \[0, 1\], got {value}"):
            cls(**{field: value})
    with pytest.raises(ValueError, match=rf"{name}.priority_exponent must be in \[0, 1\]"):
        cls(priority_exponent="high")


def test_sac_her_refuses_prioritized_replay_by_name():
    with pytest.raises(ValueError, match=r"SACHERConfig.replay='prioritized': SAC \+ HER draws"):
        sac_her.SACHERConfig(replay="prioritized")


def test_the_command_line_refuses_bad_sampling_flags_before_compiling(tmp_path):
    for algo, args, message in [
        ("sac", ["--replay", "foo"], "SACConfig.replay='foo' is not one of: uniform,"),
        ("td3", ["--importance-exponent", "1.5"], "TD3Config.importance_exponent must be in"),
    ]:
        proc = rlsuite("train", algo, *args, "--out", tmp_path / algo, timeout=120)
        stderr = " ".join(proc.stderr.replace("│", " ").split())
        assert proc.returncode == 2 and message in stderr, stderr[-2000:]
        assert not (tmp_path / algo).exists()


# -------------------------------------------------------------------------------------- seeds
# TD3 in the slow run: the loop and the feedback are one for both, SAC their representative.
@pytest.mark.parametrize("family", slow_but("sac", ["sac", "td3"]))
def test_same_key_same_run_different_key_different_run(family):
    agent = _agent(family)
    hp = agent.default_hparams
    train = jax.jit(driver.train, static_argnums=(0, 3))
    a, ma = train(agent, jax.random.key(0), hp, 12)
    b, mb = train(agent, jax.random.key(0), hp, 12)
    c, mc = train(agent, jax.random.key(1), hp, 12)
    assert leaves_equal(a, b) and leaves_equal(ma, mb)
    assert not np.allclose(a.buffer.tree, c.buffer.tree)
    assert not np.allclose(ma["losses/critic_loss"][6:], mc["losses/critic_loss"][6:])


# ---------------------------------------------------------------------------- command line
@pytest.mark.parametrize("family", slow_but("td3", ["sac", "td3"]))
def test_rlsuite_train_takes_replay_prioritized(family, tmp_path):
    from rlsuite.app import cli

    out = tmp_path / "run"
    args = ["train", family, "--env", "pendulum", "--replay", "prioritized"]
    args += ["--total-timesteps", "96", "--num-envs", "2", "--learning-starts", "16"]
    args += ["--batch-size", "8", "--buffer-size", "64", "--hidden-sizes", "8"]
    args += ["--chunks", "1", "--eval-episodes", "1", "--no-progress", "--out", str(out)]
    assert cli.main(args) == 0
    assert json.loads((out / "config.json").read_text())["config"]["replay"] == "prioritized"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert np.isfinite(rows[-1]["losses/critic_loss"])
