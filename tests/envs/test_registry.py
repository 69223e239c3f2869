import jax
import numpy as np
import pytest
from rlsuite.envs.cartpole import CartPole
from rlsuite.envs.probes import ActionReward
from rlsuite.envs.registry import OURS

from rlsuite import envs
from rlsuite.environment.spaces import Box
from rlsuite.environment.wrappers import TimeLimit


@pytest.mark.parametrize("name", sorted(OURS))
def test_every_own_environment_resets_and_steps(name):
    env, params = envs.make(name)
    obs, state = env.reset(jax.random.key(0), params)
    action = env.action_space(params).sample(jax.random.key(1))
    obs2, *_ = env.step(jax.random.key(2), state, action, params)
    assert obs.shape == obs2.shape == env.observation_space(params).shape


def test_standard_time_limits_and_overrides():
    env, _ = envs.make("cartpole")
    assert isinstance(env, TimeLimit) and env.max_episode_steps == 500
    env, _ = envs.make("pendulum", max_episode_steps=50)
    assert env.max_episode_steps == 50
    env, _ = envs.make("cartpole", max_episode_steps=None)
    assert isinstance(env, CartPole)
    env, _ = envs.make("probe/constant_reward")
    assert not isinstance(env, TimeLimit)  # probes end by termination


def test_params_override_and_constructor_arguments():
    _, params = envs.make("cartpole", gravity=12.0)
    assert params.gravity == 12.0
    env, _ = envs.make("probe/action_reward", continuous=True)
    assert isinstance(env, ActionReward) and isinstance(env.action_space(None), Box)
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['gravty'\]; allowed: .*gravity"):
        envs.make("cartpole", gravty=12.0)
    with pytest.raises(ValueError, match="params.gravity"):
        envs.make("cartpole", gravity=-1.0)
    # Wrong types name the field too; a list would be a pytree node, not a value to vmap.
    for value in ("x", None, True, [1.0, 2.0]):
        with pytest.raises(ValueError, match=r"invalid params.gravity=.*a number or an array"):
            envs.make("cartpole", gravity=value)
    assert envs.make("cartpole", gravity=np.array([9.8, 12.0]))[1].gravity.shape == (2,)
    for steps in (2.5, "x", True):
        with pytest.raises(ValueError, match="max_episode_steps must be an integer >= 1"):
            envs.make("cartpole", max_episode_steps=steps)
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['args'\]"):
        envs.make("cartpole", args=3)  # CartPole(*args) takes none


def test_unknown_name_lists_close_matches():
    with pytest.raises(ValueError, match=r"unknown environment 'cartpol'; did you mean 'cartpole'"):
        envs.make("cartpol")
    with pytest.raises(ValueError, match=r"did you mean 'brax/ant'"):
        envs.make("brax/antt")
    with pytest.raises(ValueError, match=r"gymnax/CartPole-v1"):
        envs.make("gymnax/Cartpole-v1")
    with pytest.raises(TypeError, match="must be a string"):
        envs.make(3)


def test_names_cover_ours_brax_and_gymnax():
    names = envs.names()
    for name in (
        "cartpole",
        "point_mass",
        "probe/one_step_discount",
        "brax/ant",
        "gymnax/Acrobot-v1",
    ):
        assert name in names


def test_gymnax_time_limit_goes_to_its_params():
    env, params = envs.make("gymnax/CartPole-v1", max_episode_steps=7)
    assert params.max_steps_in_episode == 7
    _, params = envs.make("gymnax/CartPole-v1", gravity=5.0)
    assert params.gravity == 5.0
