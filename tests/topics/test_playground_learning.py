"""Learning on MuJoCo Playground's DM Control suite on a CPU, through `rlsuite train` with the
tuned entries (rlsuite/app/tuned.py says what each reached when calibrated).

- PPO on CartpoleBalance: every seed's evaluation above 685, the random policy's 379 per
  1,000-step episode plus half the gain of the calibration runs (989 to 999): a 2x margin.
- SAC on PendulumSwingup: the evaluation return, per seed, minus the random policy's (measured
  here, 16 episodes of uniform actions: about 3): the percentile bootstrap interval of its mean
  across seeds lies above 0.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.app import cli
from rlsuite.ops.bootstrap import bootstrap_ci

pytest.importorskip("mujoco_playground")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def random_return(task: str, episodes: int = 16) -> float:
    """The mean return of a whole episode of uniformly random actions."""
    env, params = envs.make(f"playground/{task}")
    size = env.action_space(params).shape[0]

    @jax.jit
    def run(key):
        keys = jax.random.split(key, episodes)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def one(carry, key):
            state, total = carry
            action = jax.random.uniform(key, (episodes, size), minval=-1, maxval=1)
            step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
            _, state, reward, *_ = step(jax.random.split(key, episodes), state, action, params)
            return (state, total + reward), None

        steps = jax.random.split(key, env.max_episode_steps)
        return jax.lax.scan(one, (state, jnp.zeros(episodes)), steps)[0][1]

    return float(np.mean(run(jax.random.key(0))))


def _train(tmp_path, algo, env, *flags):
    out = tmp_path / f"{algo}-{env}"
    argv = ["train", algo, "--env", f"playground/{env}", *flags, "--no-progress"]
    assert cli.main([*argv, "--out", str(out)]) == 0
    return json.loads((out / "final.json").read_text())


def test_ppo_balances_the_cartpole(tmp_path):
    final = _train(tmp_path, "ppo", "CartpoleBalance", "--num-seeds", "4")
    returns = final["eval_return_per_seed"]
    assert len(returns) == 4 and min(returns) >= 685, returns


def test_sac_swings_the_pendulum_up_above_the_random_policy(tmp_path):
    flags = ["--num-seeds", "3", "--total-timesteps", "60000", "--eval-episodes", "10"]
    final = _train(tmp_path, "sac", "PendulumSwingup", *flags)
    random = random_return("PendulumSwingup")
    assert 0 <= random < 20  # the pole hangs down: it earns only where it passes the top
    gain = np.asarray(final["eval_return_per_seed"]) - random
    low, high = bootstrap_ci(gain[:, None])
    assert low[0] > 0, (final["eval_return_per_seed"], low, high)
