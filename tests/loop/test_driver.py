"""The driver: seeds placed across devices with jax.sharding give the same runs, each device
training its own runs without communication."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from rlsuite.loop import driver, platform
from tests.tiers import FOUR_CPU_DEVICES

SHARDED = textwrap.dedent(
    """
    import json, jax, numpy as np
    from rlsuite import envs
    from rlsuite.loop import driver
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
    # Every device trains its own runs: the compiled program has no collective (a vmap that XLA
    # partitioned would all-reduce the batch-wide decisions of rlsuite.ops.batching on every step).
    text = run.lower(agent, sharded_states, hp, 3).compile().as_text()
    collectives = ("all-reduce", "all-gather", "all-to-all", "collective-permute")
    out = {"collectives": [c for c in collectives if c in text]}
    out.update({name: [np.asarray(plain[name]).tolist(), np.asarray(sharded[name]).tolist()]
           for name in ("losses/value_loss", "losses/policy_loss")})
    out["devices"] = sorted(devices)

    # SAC across its warm-up: the learning gate is a batch-aware branch (rlsuite.ops.batching).
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
    # A state placed from host arrays (as a restored checkpoint is) runs chunk after chunk:
    # SAC's n-step window at n_step=1 is a zero-size leaf, which compiled programs return
    # replicated, so it must be placed that way too.
    placed = driver.shard_runs(jax.device_get(states), 8)
    chunk = run.lower(agent, placed, hp, 2).compile()
    after_one, first = chunk(placed, hp)
    _, second = chunk(after_one, hp)  # refused before: "compiled for input shardings that disagree"
    out["sac_chunks"] = np.asarray(second["losses/critic_loss"]).shape

    # A hyperparameter sweep (one learning rate per run) and its evaluation.
    env, params = envs.make("cartpole")
    agent = ppo.make(ppo.PPOConfig(num_envs=4, num_steps=16, num_minibatches=2), env, params)
    hp = agent.default_hparams.replace(learning_rate=np.geomspace(1e-4, 1e-2, 8))
    states = driver.init_batch(agent, keys, hp, 0)
    sweep = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    plain_states, plain = sweep(agent, states, hp, 3, 0)
    sharded_states, sharded = sweep(agent, driver.shard_runs(states, 8), hp, 3, 0)
    out["sweep"] = [np.asarray(m["losses/value_loss"]).tolist() for m in (plain, sharded)]
    out["sweep_devices"] = sorted(d.id for d in jax.tree.leaves(sharded)[0].sharding.device_set)
    evaluate = jax.jit(driver.evaluate_batch, static_argnums=(0, 3))
    out["eval"] = [np.asarray(evaluate(agent, s, jax.random.key(1), 2).returns).tolist()
                   for s in (plain_states, sharded_states)]

    # An offline agent: the dataset goes whole to every device.
    from rlsuite.agents import iql
    from rlsuite.data.datasets import DatasetInfo, from_transitions
    from rlsuite.loop.rollout import reset_batch, rollout
    env, params = envs.make("probe/action_reward", continuous=True)
    batch = reset_batch(env, params, jax.random.key(2), 4)
    uniform = lambda key, obs: (jax.random.uniform(key, (4, 1), minval=-1.0, maxval=1.0), {})
    _, tr = rollout(env, params, uniform, jax.random.key(3), batch, 50)
    data = from_transitions(tr, DatasetInfo(env="probe/action_reward", quality="random"))
    agent = iql.make(iql.IQLConfig(num_updates=3, gradient_steps=2, batch_size=16,
                                   hidden_sizes=(8,)), env, params)
    hp = agent.default_hparams
    states = driver.init_batch(agent, keys, hp, data=data)
    offline = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    _, plain = offline(agent, states, hp, 3, None, data)
    _, sharded = offline(agent, driver.shard_runs(states, 8), hp, 3, None, data)
    out["iql"] = [np.asarray(m["losses/value_loss"]).tolist() for m in (plain, sharded)]
    print(json.dumps(out))
    """
)


# Slow (36 s with an empty compilation cache): the default run splits PPO's and SAC's runs over four
# devices in tests/loop/test_mesh.py; this one adds a sweep's rates, an evaluation and IQL.
@pytest.mark.slow
def test_runs_sharded_over_four_cpu_devices_match_the_unsharded_run():
    env = {**os.environ, "XLA_FLAGS": FOUR_CPU_DEVICES}
    proc = subprocess.run(
        [sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == [0, 1, 2, 3]
    assert out["collectives"] == []
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
    assert out["sac_chunks"] == [8, 2]
    # A sweep: the learning rates go to the devices with their runs (a sweep whose runs got the
    # wrong rates would differ after the first update), and the runs differ from each other.
    assert out["sweep_devices"] == [0, 1, 2, 3]
    plain, sharded = (np.asarray(x) for x in out["sweep"])
    np.testing.assert_allclose(sharded, plain, rtol=1e-4, atol=1e-6)
    assert len({round(v, 6) for v in plain[:, -1]}) == 8
    np.testing.assert_allclose(out["eval"][1], out["eval"][0], rtol=1e-5)
    plain, sharded = (np.asarray(x) for x in out["iql"])
    assert np.isfinite(plain).all()
    np.testing.assert_allclose(sharded, plain, rtol=1e-4, atol=1e-6)


CORES = textwrap.dedent(
    """
    import importlib, json, pkgutil, jax
    import rlsuite, rlsuite.envs
    # Importing any module of the suite must not start JAX (a module-level jnp array would),
    # or use_cpu_cores could no longer set the device count.
    for package in (rlsuite, rlsuite.envs):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    from rlsuite.loop import driver, platform
    out = {"first": platform.use_cpu_cores(3), "again": platform.use_cpu_cores(2)}
    out["mesh"] = {n: None if (m := driver.run_mesh(n)) is None else m.devices.size
                   for n in (1, 2, 3, 4, 5, 6, 9)}
    try:
        platform.use_cpu_cores(0)
    except ValueError as error:
        out["error"] = str(error)
    print(json.dumps(out))
    """
)


def test_use_cpu_cores_before_jax_starts_and_the_most_devices_that_divide_the_runs():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-c", CORES], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # Three devices from the first call; JAX has started, so the second changes nothing.
    assert out["first"] == 3 and out["again"] == 3
    # Runs over 3 devices: 3, 6, 9 use all three; 2 and 4 use two; 1 and 5 stay on one.
    assert out["mesh"] == {"1": None, "2": 2, "3": 3, "4": 2, "5": None, "6": 3, "9": 3}
    assert "count must be an int >= 1 or None, got 0" in out["error"]
    # XLA_FLAGS' device count is the user's: use_cpu_cores leaves it.
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    proc = subprocess.run(
        [sys.executable, "-c", CORES], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["first"] == 4


CHUNK_MEMORY = textwrap.dedent(
    """
    import json, resource
    import jax, jax.numpy as jnp
    from rlsuite.loop import driver, platform
    devices = platform.use_cpu_cores(2)
    from rlsuite import envs
    from rlsuite.agents import bc
    from rlsuite.data.datasets import Dataset, DatasetInfo

    n = 2_000
    key_obs, key_act, key_next = jax.random.split(jax.random.key(0), 3)
    data = Dataset(
        observations=jax.random.normal(key_obs, (n, 3)),
        actions=jax.random.uniform(key_act, (n, 1), minval=-2.0, maxval=2.0),
        rewards=jnp.zeros(n), terminals=jnp.zeros(n, bool), timeouts=jnp.zeros(n, bool),
        next_observations=jax.random.normal(key_next, (n, 3)), info=DatasetInfo(env="pendulum"),
    )
    env, params = envs.make("pendulum")
    agent = bc.make(bc.BCConfig(gradient_steps=100), env, params)  # (256, 256) layers
    hp = agent.default_hparams
    states = driver.init_batch(agent, jax.random.split(jax.random.key(1), 2), hp, data=data)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    short, long = (run.lower(agent, states, hp, u, None, data).compile() for u in (1, 25))
    jax.block_until_ready(short(states, hp, data))  # what any first run allocates, once
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    jax.block_until_ready(long(states, hp, data))
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"devices": devices, "grown_mib": grown / 1024}))
    """
)


def test_a_chunk_on_two_cpu_devices_holds_no_memory_per_update():
    # 2 seeds of BC, one per CPU device, 25 updates of 100 gradient steps in one chunk. XLA:CPU's
    # YNNPACK matrix products held memory per product on a pool with no idle thread: this chunk
    # grew the peak by about 95 MiB (3.8 MiB per update; 2-seed IQL: 20 MB per update); with
    # them off (platform.use_cpu_cores) it grows by about 3 MiB, whatever the chunk's length.
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-c", CHUNK_MEMORY], env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == 2
    assert out["grown_mib"] < 32, out


def test_ynnpack_goes_off_before_the_cpu_devices_start(monkeypatch):
    # The option is added on the jaxlib versions known to need it, whatever the device count; a
    # user's own choice of the option, or another jaxlib, is left as is.
    monkeypatch.setattr(platform, "YNN_JAXLIB", ((0, 0), (999, 0)))
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    platform._ynnpack_off()
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=2",
        platform.YNN_OFF,
    ]
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_experimental_ynn_fusion_type=dot")
    platform._ynnpack_off()
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_experimental_ynn_fusion_type=dot"
    monkeypatch.delenv("XLA_FLAGS")
    monkeypatch.setattr(platform, "YNN_JAXLIB", ((0, 0), (0, 1)))  # a jaxlib outside the range
    platform._ynnpack_off()
    assert "XLA_FLAGS" not in os.environ


BATCH_INVARIANCE = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from rlsuite.loop import platform
    platform.use_cpu_cores(1)
    x = jax.random.normal(jax.random.key(1), (64, 128))
    big = np.asarray(jax.jit(jax.vmap(jnp.sum))(x))[8:12]
    small = np.asarray(jax.jit(jax.vmap(jnp.sum))(x[8:12]))
    print(json.dumps({"equal": bool(np.array_equal(big, small))}))
    """
)


def test_a_run_sums_the_same_bits_in_any_batch():
    # A row's sum over 128 values in a batch of 64 rows and in a batch of 4: YNNPACK's reduction
    # (jaxlib 0.10) gave them apart in the last bit; use_cpu_cores turns it off, on one device too.
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-c", BATCH_INVARIANCE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["equal"], out


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


@pytest.mark.parametrize(
    "name,algo,config",
    [
        ("gymnax/Acrobot-v1", "ppo", {"num_envs": 2, "num_steps": 8, "num_minibatches": 1}),
        ("point_mass", "sac", {"buffer_size": 64, "batch_size": 4, "learning_starts": 4}),
    ],
)
def test_an_agent_whose_env_params_hold_arrays_trains_under_jit(name, algo, config):
    """Acrobot's `available_torque` and point_mass's goal bounds are arrays: the agent, a static
    argument of `jit`, hashes as itself, not through them, and the env's checks run in the trace."""
    import importlib

    from rlsuite import envs

    module = importlib.import_module(f"rlsuite.agents.{algo}")
    env, params = envs.make(name)
    assert any(np.ndim(x) > 0 for x in jax.tree.leaves(params))
    make_config = getattr(module, f"{algo.upper()}Config")
    agent = module.make(make_config(hidden_sizes=(8,), **config), env, params)
    assert hash(agent) == hash(agent) and agent == agent
    other = module.make(make_config(hidden_sizes=(8,), **config), env, params)
    assert agent != other  # another make: another static argument
    keys = jax.random.split(jax.random.key(0), 2)
    states = driver.init_batch(agent, keys, agent.default_hparams)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    _, metrics = run(agent, states, agent.default_hparams, 6)
    losses = [v for k, v in metrics.items() if k.startswith("losses/")]
    assert losses and all(np.asarray(v).shape == (2, 6) for v in losses)
    assert np.isfinite(np.asarray(losses[0])[:, -1]).all()
