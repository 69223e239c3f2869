"""BC (`rlsuite.agents.bc`): a deterministic policy regressed onto the dataset's actions. On the
action-reward probe (one observation, so the regression's minimiser is the dataset's mean action
and its loss there the actions' variance) it learns the narrow dataset's mean action, and from
uniform actions it learns their mean, near 0, not the probe's best action 0.5, which IQL learns
from the same data (`test_iql.py`): BC cannot tell a good action from a bad one."""

import jax
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import bc
from tests.agents.offline_probe import OBS, PROBE, train_jit

CONFIG = bc.BCConfig(num_updates=20, gradient_steps=50, batch_size=64, hidden_sizes=(16,))
HP = bc.BCHparams(learning_rate=3e-3)


def _trained(data):
    agent = bc.make(CONFIG, *envs.make(PROBE, continuous=True))
    state, metrics = train_jit(agent, jax.random.key(0), HP, CONFIG.num_updates, data=data)
    return float(agent.act(state, OBS, jax.random.key(1), True)[0, 0]), metrics


def test_bc_learns_the_mean_of_the_datasets_actions(narrow_data):
    action, metrics = _trained(narrow_data)
    actions = np.asarray(narrow_data.actions, np.float64)
    np.testing.assert_allclose(action, actions.mean(), atol=0.02)  # about 0.5
    # The last update's mean loss is near the actions' variance (0.1^2), its minimum.
    np.testing.assert_allclose(metrics["losses/bc_loss"][-1], actions.var(), rtol=0.3)


def test_bc_clones_uniform_actions_to_their_mean_not_the_best_action(uniform_data):
    action, _ = _trained(uniform_data)
    mean = float(np.asarray(uniform_data.actions).mean())
    np.testing.assert_allclose(action, mean, atol=0.05)
    assert abs(action - 0.5) > 0.3  # the probe's best action is out of reach of cloning


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"hparams\.learning_rate"):
        bc.check_hparams(bc.BCHparams(learning_rate=0.0))
    with pytest.raises(TypeError, match="bounded 1-D Box"):
        bc.make(CONFIG, *envs.make("cartpole"))
