"""The driver: seeds placed across devices with jax.sharding give the same runs."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from rlsuite import driver

SHARDED = textwrap.dedent(
    """
    import json, jax, numpy as np
    import envs
    from rlsuite import driver
    from rlsuite.agents import ppo

    env, params = envs.make("cartpole")
    agent = ppo.make(ppo.PPOConfig(num_envs=4, num_steps=16, num_minibatches=2), env, params)
    hp = agent.default_hparams
    keys = jax.random.split(jax.random.key(0), 8)
    states = driver.init_batch(agent, keys, hp)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    _, plain = run(agent, states, hp, 3)
    sharded_states = driver.shard_runs(states, 8)
    devices = {d.id for d in jax.tree.leaves(sharded_states)[0].sharding.device_set}
    _, sharded = run(agent, sharded_states, hp, 3)
    out = {name: [np.asarray(plain[name]).tolist(), np.asarray(sharded[name]).tolist()]
           for name in ("losses/value_loss", "losses/policy_loss")}
    out["devices"] = sorted(devices)

    # SAC across its warm-up: the learning gate is a batch-aware branch (rlsuite.batching).
    from rlsuite.agents import sac
    env, params = envs.make("pendulum")
    config = sac.SACConfig(num_envs=2, buffer_size=64, batch_size=8, learning_starts=6,
                           hidden_sizes=(8,))
    agent = sac.make(config, env, params)
    hp = agent.default_hparams
    states = driver.init_batch(agent, keys, hp)
    _, plain = run(agent, states, hp, 6)
    _, sharded = run(agent, driver.shard_runs(states, 8), hp, 6)
    out["sac"] = [np.asarray(m["losses/critic_loss"]).tolist() for m in (plain, sharded)]
    print(json.dumps(out))
    """
)


def test_runs_sharded_over_four_cpu_devices_match_the_unsharded_run():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    proc = subprocess.run(
        [sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == [0, 1, 2, 3]
    for name in ("losses/value_loss", "losses/policy_loss"):
        plain, sharded = np.asarray(out[name][0]), np.asarray(out[name][1])
        # First update: equal to float tolerance; XLA may reorder sums later.
        np.testing.assert_allclose(sharded[:, 0], plain[:, 0], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(sharded, plain, rtol=1e-2, atol=1e-4)
    # SAC: the first 3 updates (2 envs each; learning needs 6 steps and a batch of 8) log NaN
    # losses, then every run learns.
    plain, sharded = (np.asarray(x, dtype=float) for x in out["sac"])
    assert np.isnan(plain[:, :3]).all() and np.isfinite(plain[:, 3:]).all()
    np.testing.assert_allclose(sharded, plain, rtol=1e-4, atol=1e-6)  # NaN where plain has NaN


def test_one_device_leaves_placement_unchanged():
    tree = {"x": np.zeros((8, 3))}
    if len(jax.devices()) == 1:
        assert driver.shard_runs(tree, 8) is tree


def test_batch_hparams_broadcasts_scalars_and_checks_lengths():
    from rlsuite.agents.ppo import PPOHparams

    hp = driver.batch_hparams(PPOHparams(learning_rate=np.array([1e-3, 2e-3])), 2)
    assert hp.gamma.shape == (2,) and hp.learning_rate.shape == (2,)
    np.testing.assert_allclose(hp.gamma, [0.99, 0.99])
    np.testing.assert_allclose(hp.learning_rate, [1e-3, 2e-3])

    with pytest.raises(ValueError, match="leading axis of 3"):
        driver.batch_hparams(PPOHparams(learning_rate=np.array([1e-3, 2e-3])), 3)
