"""The two-axis mesh (runs x envs, rlsuite.loop.mesh): one run's environments, replay buffer and
minibatches split over devices give the run the one device gives, to float tolerance; a 2 x 2 mesh
gives the separate runs; bad meshes are refused before anything runs, naming the value."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from jax.sharding import AbstractMesh

from rlsuite import envs
from rlsuite.agents import ppo, sac
from rlsuite.loop import mesh as meshes
from rlsuite.ops import sharding
from tests.tiers import FOUR_CPU_DEVICES, slow_but

SPLIT = textwrap.dedent(
    """
    import json, re, sys, jax, numpy as np
    from rlsuite import envs
    from rlsuite.agents import iql, ppo, sac
    from rlsuite.data.datasets import DatasetInfo, from_transitions
    from rlsuite.loop import driver
    from rlsuite.loop.mesh import make_mesh
    from rlsuite.loop.rollout import reset_batch, rollout

    one = make_mesh(runs=1, envs=1, devices=jax.devices()[:1])  # the one-device run
    MESHES = {"one": one, "envs4": make_mesh(runs=1, envs=4), "grid": make_mesh(runs=2, envs=2)}
    init = jax.jit(driver.init_batch, static_argnums=(0, 3))
    run = jax.jit(driver.run_batch, static_argnums=(0, 3, 4))
    keys = jax.random.split(jax.random.key(0), 2)
    out = {}

    def spec(x):
        return [str(a) for a in x.sharding.spec]

    NAMES = sys.argv[1:]  # the agents the selected tests compare

    def train(name, agent, hp, updates, metric, data=None, where=lambda s: s.env.obs):
        if name not in NAMES:
            return
        for label, mesh in MESHES.items():
            with jax.set_mesh(mesh):
                start = init(agent, keys, hp, None, data)
                states, metrics = run(agent, start, hp, updates, None, data)
                # The program that ran (a chunk's output is laid out otherwise than its input,
                # which would compile another).
                text = run.lower(agent, start, hp, updates, None, data).compile().as_text()
            out[f"{name}/{label}"] = {
                "metric": np.asarray(metrics[metric]).tolist(),
                "return": np.asarray(metrics.get("charts/episodic_return", 0.0)).tolist(),
                "spec": spec(where(states)),
                "devices": len(where(states).sharding.device_set),
                "all_reduce": "all-reduce" in text,
            }

    env, params = envs.make("cartpole")
    config = ppo.PPOConfig(num_envs=8, num_steps=16, num_minibatches=2, hidden_sizes=(16,))
    agent = ppo.make(config, env, params)
    train("ppo", agent, agent.default_hparams, 30, "losses/value_loss")
    config = ppo.PPOConfig(num_envs=8, num_steps=16, num_minibatches=2, hidden_sizes=(16,),
                           recurrent="lstm", recurrent_size=8)
    agent = ppo.make(config, env, params)
    train("ppo_lstm", agent, agent.default_hparams, 4, "losses/value_loss")

    env, params = envs.make("pendulum")
    config = sac.SACConfig(num_envs=4, buffer_size=64, batch_size=16, learning_starts=16,
                           hidden_sizes=(16,))
    agent = sac.make(config, env, params)
    train("sac", agent, agent.default_hparams, 12, "losses/critic_loss",
          where=lambda s: s.buffer.data["obs"])

    batch = reset_batch(env, params, jax.random.key(2), 4)
    uniform = lambda key, obs: (jax.random.uniform(key, (4, 1), minval=-1.0, maxval=1.0), {})
    _, tr = rollout(env, params, uniform, jax.random.key(3), batch, 50)
    data = from_transitions(tr, DatasetInfo(env="pendulum", quality="random"))
    agent = iql.make(iql.IQLConfig(num_updates=4, gradient_steps=2, batch_size=16,
                                   hidden_sizes=(16,)), env, params)
    train("iql", agent, agent.default_hparams, 4, "losses/value_loss", data,
          where=lambda s: s.learner.value["params"]["Dense_0"]["kernel"])
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def split_runs(request):
    """The runs of the agents that the selected tests compare (the slow run adds two)."""
    test = test_a_run_split_over_four_devices_is_the_one_device_run.__name__
    names = [i.callspec.params["name"] for i in request.session.items if i.originalname == test]
    env = {**os.environ, "XLA_FLAGS": FOUR_CPU_DEVICES}
    proc = subprocess.run(
        [sys.executable, "-c", SPLIT, *names], env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# One run of each kind of state in the default run (a rollout, a replay buffer); the others slow.
@pytest.mark.parametrize("name", slow_but(("ppo", "sac"), ("ppo", "ppo_lstm", "sac", "iql")))
def test_a_run_split_over_four_devices_is_the_one_device_run(split_runs, name):
    one, split, grid = (split_runs[f"{name}/{label}"] for label in ("one", "envs4", "grid"))
    plain = np.asarray(one["metric"], dtype=float)  # [runs, updates]
    assert np.isfinite(plain[:, -1]).all()
    # SAC's first updates log NaN losses (no learning before learning_starts): the same ones.
    for other in (split, grid):
        got = np.asarray(other["metric"], dtype=float)
        # The first update: equal to float tolerance (the gradient's sum over the devices is
        # taken in another order); after it, within float drift.
        first = np.isfinite(plain).argmax(axis=1)[0]
        np.testing.assert_allclose(got[:, first], plain[:, first], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got, plain, rtol=2e-2, atol=1e-3)
    # The two seeds are different runs.
    assert not np.allclose(plain[0], plain[1])
    # Where they are placed: the split arrays over 4 (and 2 x 2) devices, along envs; the
    # program sums the gradients across them (an all-reduce). The IQL witness is a parameter:
    # whole on every device of its group.
    if name == "iql":
        assert split["spec"][1:] in ([], ["None"]) or "envs" not in split["spec"]
        assert split["devices"] == 4 and grid["devices"] == 4
    else:
        assert split["spec"][:2] == ["None", "envs"] and split["devices"] == 4
        assert grid["spec"][:2] == ["runs", "envs"] and grid["devices"] == 4
    assert split["all_reduce"] and grid["all_reduce"]
    assert one["devices"] == 1


def test_ppo_split_over_devices_ends_where_the_one_device_run_ends(split_runs):
    # 30 updates of cartpole: the final returns (last 5 updates) agree within the seeds' noise.
    one, split, grid = (
        np.asarray(split_runs[f"ppo/{m}"]["return"]) for m in ("one", "envs4", "grid")
    )
    final = [r[:, -5:].mean(axis=1) for r in (one, split, grid)]
    noise = max(abs(final[0][0] - final[0][1]), 0.1 * final[0].mean())
    for other in final[1:]:
        assert np.abs(other - final[0]).max() <= noise, final


def test_parse_mesh_and_its_errors():
    assert meshes.parse_mesh("runs=2,envs=4") == {"runs": 2, "envs": 4}
    assert meshes.parse_mesh(" envs=2 ") == {"envs": 2}
    for text, message in [
        ("seeds=2", "unknown axis 'seeds'; the axes are runs, envs"),
        ("runs=2,runs=2", "axis 'runs' given twice"),
        ("envs=0", "envs='0' must be an int >= 1"),
        ("envs=two", "envs='two' must be an int >= 1"),
        ("envs", "'envs' is not axis=size"),
        ("", "names no axis"),
    ]:
        with pytest.raises(ValueError, match=message):
            meshes.parse_mesh(text)


def test_make_mesh_refuses_sizes_that_do_not_use_the_devices():
    devices = jax.devices()[:1] * 4  # four entries: the checks run before the mesh is made
    with pytest.raises(ValueError, match="envs=3 does not divide the 4 devices"):
        meshes.make_mesh(envs=3, devices=devices)
    with pytest.raises(ValueError, match=r"runs=3 x envs=2 = 6 devices, but there are 4"):
        meshes.make_mesh(runs=3, envs=2, devices=devices)
    with pytest.raises(ValueError, match="envs must be an int >= 1, got 0"):
        meshes.make_mesh(envs=0, devices=devices)
    mesh = meshes.make_mesh(devices=jax.devices()[:1])
    assert dict(mesh.shape) == {"runs": 1, "envs": 1}


def ppo_split(config):
    """What PPO with `config` on CartPole declares an env split must divide."""
    return ppo.env_split(ppo.prepare(config, *envs.make("cartpole")))


def test_check_mesh_names_the_runs_or_the_batch_it_does_not_divide():
    grid = AbstractMesh((2, 4), meshes.AXES)
    config = ppo.PPOConfig(num_envs=8, num_steps=16, num_minibatches=4)
    meshes.check_mesh(grid, 4, ppo_split(config))
    with pytest.raises(ValueError, match="runs=2 does not divide the 3 runs"):
        meshes.check_mesh(grid, 3)
    with pytest.raises(ValueError, match=r"envs=4 does not divide PPOConfig.num_envs=6; make num_"):
        meshes.check_mesh(grid, 2, ppo_split(ppo.PPOConfig(num_envs=6)))
    # 8 envs x 2 steps in 8 minibatches of 2 steps each; with memory, 8 envs in 4 of 2 envs.
    config = ppo.PPOConfig(num_envs=8, num_steps=2, num_minibatches=8)
    with pytest.raises(ValueError, match=r"the minibatch of 2 \(PPOConfig.num_minibatches=8\)"):
        meshes.check_mesh(grid, 2, ppo_split(config))
    config = ppo.PPOConfig(num_envs=8, num_steps=16, num_minibatches=4, recurrent="lstm")
    with pytest.raises(ValueError, match="does not divide the minibatch of 2"):
        meshes.check_mesh(grid, 2, ppo_split(config))
    config = sac.SACConfig(num_envs=4, batch_size=250)
    with pytest.raises(ValueError, match=r"envs=4 does not divide SACConfig.batch_size=250"):
        meshes.check_mesh(grid, 2, meshes.field_splits(config, "num_envs", "batch_size"))
    # The splits an agent declares are the ones its command line run is checked against.
    env, params = envs.make("pendulum")
    assert sac.make(config, env, params).env_split == meshes.field_splits(
        config, "num_envs", "batch_size"
    )
    with pytest.raises(ValueError, match=r"axes must be \('runs', 'envs'\)"):
        meshes.check_mesh(AbstractMesh((2,), ("runs",)), 2)


def test_split_envs_changes_nothing_without_an_envs_split():
    x = np.arange(8.0)
    assert sharding.split_envs(x) is x
    with jax.set_mesh(meshes.make_mesh(devices=jax.devices()[:1])):
        assert sharding.envs_split() == 1
        assert sharding.split_envs(x) is x
    # A context mesh with only one of the suite's axes is not the suite's mesh.
    with jax.set_mesh(jax.make_mesh((1,), ("envs",), devices=jax.devices()[:1])):
        with pytest.raises(ValueError, match=r"the suite's mesh has the axes \('runs', 'envs'\)"):
            meshes.context_mesh()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--mesh", "seeds=2"], "--mesh: unknown axis 'seeds'; the axes are runs, envs"),
        (["--mesh", "envs=3", "--cpu-devices", "2"], "envs=3 does not divide the 2 devices"),
        (["--mesh", "runs=2,envs=2", "--cpu-devices", "2"], "runs=2 x envs=2 = 4 devices"),
        (["--mesh", "runs=2", "--cpu-devices", "2"], "runs=2 does not divide the 1 runs"),
        (["--mesh", "envs=2", "--num-envs", "3"], "envs=2 does not divide PPOConfig.num_envs=3"),
    ],
)
def test_the_cli_refuses_a_bad_mesh_before_anything_is_written(flags, message, tmp_path):
    from tests.app.test_cli import rlsuite

    out = tmp_path / "run"
    proc = rlsuite("train", "ppo", "--env", "cartpole", *flags, "--out", out, "--no-progress")
    assert proc.returncode != 0
    assert message in proc.stderr.replace("\n", " "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not out.exists()
