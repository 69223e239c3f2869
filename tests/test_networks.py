import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.networks import MLP, ActorCritic, activation_fn


def test_actor_critic_discrete_and_continuous_shapes():
    obs = jnp.ones((5, 3))
    net = ActorCritic((8, 8), num_actions=4)
    params = net.init(jax.random.key(0), obs)
    dist, value = net.apply(params, obs)
    assert dist.logits.shape == (5, 4) and value.shape == (5,)
    net = ActorCritic((8,), action_dim=2)
    params = net.init(jax.random.key(0), obs)
    dist, value = net.apply(params, obs)
    assert dist.mean().shape == (5, 2) and value.shape == (5,)
    # log_std starts at 0: unit standard deviation.
    np.testing.assert_allclose(dist.stddev(), np.ones((5, 2)))


def test_output_gain_makes_the_initial_policy_near_uniform():
    net = ActorCritic((64, 64), num_actions=3)
    obs = jax.random.normal(jax.random.key(1), (100, 4))
    dist, _ = net.apply(net.init(jax.random.key(0), obs), obs)
    # Gain 0.01 on the last layer: logits stay tiny, the policy is close to uniform.
    assert float(jnp.abs(dist.logits - dist.logits.mean(-1, keepdims=True)).max()) < 0.1
    mlp = MLP((16,), 2, out_gain=1.0)
    kernel = mlp.init(jax.random.key(0), obs)["params"]["Dense_1"]["kernel"]
    np.testing.assert_allclose(kernel.T @ kernel, np.eye(2), atol=1e-5)  # orthogonal columns


def test_unknown_activation():
    with pytest.raises(ValueError, match="unknown activation 'swish'; allowed: tanh, relu"):
        activation_fn("swish")
