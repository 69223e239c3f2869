"""UED curricula learn on the CPU's task, `maze/small` (7 x 7, up to 10 walls, horizon 196) with
the tuned entry (32 levels x 64 steps, LSTM 64, 500 updates): the solve rate (share of episodes
with a return above 0, sampled actions) on 256 held-out DR levels drawn from a fixed key.

Calibrated on the CI machine (2 cores, no accelerator), 4 seeds each (a step-0 student solves
0.25 of them):
- DR: 0.973, 0.965, 0.961, 0.953 -> asserted >= 0.90 (the issue's bar);
- Robust PLR: 0.898, 0.855, 0.867, 0.875 -> asserted >= 0.80 (the issue's bar);
- ACCEL: 0.816, 0.836, 0.809, 0.832 -> asserted >= 0.60 and above step 0;
- PAIRED: 0.832, 0.902, 0.902, 0.898 (three agents: 907 s for the 4 seeds, slow) -> asserted
  >= 0.60, above step 0, and finite regrets.
"""

import jax
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ued
from rlsuite.app import tuned
from rlsuite.loop import driver

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # minutes each on 2 cores
HELD_OUT_KEY, HELD_OUT_LEVELS = 12345, 256


def train_and_solve(curriculum: str, seeds: int, updates: int | None = None):
    """Solve rates per seed at step 0 and after training, and the training metrics."""
    entry = tuned.tuned("ued", "maze/small")
    env, params = envs.make("maze/small")
    config = ued.UEDConfig(curriculum=curriculum, **entry["config"])
    agent = ued.make(config, env, params)
    hp = agent.default_hparams.replace(**entry["hparams"])
    levels = env.levels()
    held_out = jax.vmap(levels.generate)(
        jax.random.split(jax.random.key(HELD_OUT_KEY), HELD_OUT_LEVELS)
    )
    level_params = levels.params_for(params, held_out)

    evaluate = jax.jit(driver.evaluate_levels_batch, static_argnums=(0, 4, 5, 6))

    def solve_rate(states):
        result = evaluate(agent, states, jax.random.key(1), level_params, 1, False, 196)
        return np.asarray((result.returns > 0).mean(axis=(1, 2)))

    states = driver.init_batch(agent, jax.random.split(jax.random.key(7), seeds), hp)
    before = solve_rate(states)
    run = jax.jit(driver.run_batch, static_argnums=(0, 3))
    states, metrics = run(agent, states, hp, updates or config.num_updates)
    return before, solve_rate(states), metrics


def test_dr_solves_held_out_levels():
    before, after, _ = train_and_solve("dr", 2)
    assert (after >= 0.90).all(), (before, after)


def test_robust_plr_solves_held_out_levels():
    before, after, metrics = train_and_solve("robust_plr", 2)
    assert (after >= 0.80).all(), (before, after)
    # It learned from replays only, and replays began once the buffer was half full.
    learned = np.asarray(metrics["ued/learned"])
    assert learned[:, :10].sum() == 0 and learned.mean() > 0.5


def test_accel_beats_its_step_zero_student():
    before, after, metrics = train_and_solve("accel", 1)
    assert (after >= 0.60).all() and (after > before).all(), (before, after)
    assert (np.asarray(metrics["ued/branch"]) == ued.MUTATE).any()


def test_paired_beats_its_step_zero_student():
    before, after, metrics = train_and_solve("paired", 1)
    assert np.isfinite(np.asarray(metrics["ued/regret"])).all()
    assert (after >= 0.60).all() and (after > before).all(), (before, after)
