"""A learner of one's own on the shared off-policy loop: a toy DDPG (one critic, a deterministic
actor, no target networks), defined below in 35 lines (blank lines aside) from the library's
pieces and registered as a family, trains, logs and evaluates through `rlsuite train` with no
edit to the library."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from rlsuite.agents import learner as parts
from rlsuite.agents import off_policy, off_policy_parts, registry
from rlsuite.app import cli
from rlsuite.loop.loggers import read_metrics
from rlsuite.networks import DeterministicActor, QEnsemble

# ----------------------------------------------------------- the toy, as a user would write it
ACTOR, CRITIC = DeterministicActor((16,), 1), QEnsemble((16,), 1)  # pendulum: 3 obs, 1 action


@struct.dataclass
class DDPGHparams:
    lr: float = 1e-3
    gamma: float = 0.99
    reward_scale: float = 1.0


def init(key, hp):
    obs, action, (k1, k2) = jnp.zeros((1, 3)), jnp.zeros((1, 1)), jax.random.split(key)
    params = {"actor": ACTOR.init(k1, obs), "critic": CRITIC.init(k2, obs, action)}
    return {"params": params, "opt": parts.adam_init(params)}


def greedy(state, obs):
    return ACTOR.apply(state["params"]["actor"], obs)


def explore(state, obs, key):
    return jnp.clip(greedy(state, obs) + 0.1 * jax.random.normal(key, (len(obs), 1)), -1, 1)


def loss(params, b):  # the critic's TD error, and the actor ascending the (frozen) critic
    q = lambda c, obs, a: CRITIC.apply(c, obs, a)[0]  # noqa: E731
    pi = lambda obs: ACTOR.apply(params["actor"], obs)  # noqa: E731
    target = b["reward"] + b["discount"] * q(params["critic"], b["next_obs"], pi(b["next_obs"]))
    td = jnp.mean((q(params["critic"], b["obs"], b["action"]) - jax.lax.stop_gradient(target)) ** 2)
    return td - q(jax.lax.stop_gradient(params["critic"]), b["obs"], pi(b["obs"])).mean(), td


def learn(state, batch, key, hp):
    (_, td), grads = jax.value_and_grad(loss, has_aux=True)(state["params"], batch)
    params, opt = parts.adam_step(state["params"], grads, state["opt"], hp.lr)
    return {"params": params, "opt": opt}, {"toy_td_error": td}


def make(config, env, env_params=None):
    learner = parts.Learner(init, explore, greedy, learn)
    return off_policy.make_agent("toy_ddpg", config, env, env_params, learner, DDPGHparams(), id)


TOY = registry.Algorithm(
    name="toy_ddpg",
    make=make,
    config_cls=off_policy_parts.OffPolicyConfig,
    hparams_cls=DDPGHparams,
    offline=False,
    default_env="pendulum",
)


# ----------------------------------------------------------------------------------- the test
@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister("toy_ddpg")


def test_a_toy_learner_trains_on_the_shared_loop_through_the_cli(toy, tmp_path, capsys):
    out = tmp_path / "run"
    budget = ["--total-timesteps", "256", "--num-envs", "2", "--batch-size", "16"]
    budget += ["--learning-starts", "64", "--buffer-size", "256", "--log-interval", "32"]
    budget += ["--eval-episodes", "1", "--chunks", "2", "--cpu-devices", "1", "--no-progress"]
    argv = ["train", "toy_ddpg", "--num-seeds", "2", "--lr", "0.003", "--out", str(out)]
    assert cli.main([*argv, *budget]) == 0
    assert "toy_ddpg on pendulum: 2 seeds x 256 env steps" in capsys.readouterr().out
    record = json.loads((out / "config.json").read_text())
    assert record["algo"] == "toy_ddpg" and record["hparams"]["lr"] == 0.003
    rows = sorted(read_metrics(out), key=lambda r: (r["seed"], r["env_steps"]))
    assert [r["env_steps"] for r in rows[:8]] == [32 * i for i in range(1, 9)]
    # The loop's warm-up: 2 envs x 32 updates reach learning_starts=64 at the 32nd update, the
    # last of the second row; from there on, the toy's own loss (a row averages its updates).
    # The buffer holds 2 transitions an update, 32 a row.
    td = np.array([r["losses/toy_td_error"] for r in rows], dtype=float).reshape(2, 8)
    assert np.isnan(td[:, 0]).all() and np.isfinite(td[:, 1:]).all()
    assert [r["charts/buffer_size"] for r in rows[:8]] == [32 * i for i in range(1, 9)]
    final = json.loads((out / "final.json").read_text())
    assert final["env_steps"] == 256 and len(final["eval_return_per_seed"]) == 2
    assert cli.main(["eval", str(out), "--episodes", "2"]) == 0
