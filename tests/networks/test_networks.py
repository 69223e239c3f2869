import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.networks import (
    MLP,
    ActorCritic,
    DeterministicActor,
    QEnsemble,
    SquashedGaussianActor,
    activation_fn,
    squashed_entropy,
    squashed_log_prob,
    squashed_mode,
    tanh_gaussian,
)
from tests.trees import assert_same


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
    # silu(x) = x * sigmoid(x): silu(1) = 1 / (1 + e^-1) = 0.7310586, silu(-1) = -0.2689414
    silu = activation_fn("silu")
    np.testing.assert_allclose(silu(jnp.array([1.0, -1.0])), [0.7310586, -0.2689414], rtol=1e-6)


def test_critic_hidden_sizes_shape_the_value_network_only():
    obs = jnp.ones((3, 4))
    default = ActorCritic((16, 16), action_dim=2)
    same = ActorCritic((16, 16), action_dim=2, critic_hidden_sizes=(16, 16))
    params = default.init(jax.random.key(0), obs)
    assert_same(params, same.init(jax.random.key(0), obs))  # None means the actor's sizes
    wide = ActorCritic((16, 16), action_dim=2, critic_hidden_sizes=(32, 32, 32))
    wide_params = wide.init(jax.random.key(0), obs)["params"]
    kernels = {
        name: [layer["kernel"].shape for layer in module.values()]
        for name, module in wide_params.items()
        if name.startswith("MLP")
    }
    # MLP_0 is the critic (built first), MLP_1 the actor's mean.
    assert kernels == {
        "MLP_0": [(4, 32), (32, 32), (32, 32), (32, 1)],
        "MLP_1": [(4, 16), (16, 16), (16, 2)],
    }
    dist, value = wide.apply({"params": wide_params}, obs)
    assert value.shape == (3,) and dist.mean().shape == (3, 2)


# ------------------------------------------------------------------------ off-policy heads
HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)  # 0.9189385332


def tanh_gaussian_log_prob_ref(mean, log_std, u):
    """log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2), in float64 (the density of tanh(u))."""
    mean, log_std, u = (np.asarray(x, np.float64) for x in (mean, log_std, u))
    z = (u - mean) / np.exp(log_std)
    log_normal = (-0.5 * z**2 - log_std - HALF_LOG_2PI).sum(-1)
    return log_normal - np.log(1.0 - np.tanh(u) ** 2).sum(-1)


def _log_prob(mean, log_std, a):
    return tanh_gaussian(mean, log_std).log_prob(a)


log_prob = jax.jit(_log_prob)


def test_tanh_gaussian_log_prob_by_hand():
    # 1-D, mean 0, std 1, u = 1, a = tanh(1) = 0.7615941560:
    #   log N(1; 0, 1) = -0.5 log(2 pi) - 0.5 = -0.9189385332 - 0.5 = -1.4189385332
    #   1 - tanh(1)^2 = 0.4199743416, log = -0.8675616610
    #   log p(a) = -1.4189385332 + 0.8675616610 = -0.5513768722
    np.testing.assert_allclose(
        log_prob(jnp.zeros(1), jnp.zeros(1), jnp.tanh(jnp.ones(1))), -0.5513768722, rtol=1e-5
    )
    # 2-D, mean [0.5, -1], std [1, 2] (log_std [0, log 2]), u = [0.5, 0], a = [0.4621171573, 0]:
    #   dim 0: log N(0.5; 0.5, 1) = -0.9189385332;  log(1 - tanh(0.5)^2) = -0.2402290139
    #   dim 1: log N(0; -1, 2) = -0.9189385332 - log 2 - 0.5 * (1/2)^2 = -1.7370857138;  log 1 = 0
    #   log p(a) = -0.9189385332 - 1.7370857138 + 0.2402290139 = -2.4157952331
    np.testing.assert_allclose(
        log_prob(
            jnp.array([0.5, -1.0]), jnp.array([0.0, np.log(2.0)]), jnp.array([0.4621171573, 0.0])
        ),
        -2.4157952331,
        rtol=1e-5,
    )


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_tanh_gaussian_log_prob_against_numpy(dim):
    rng = np.random.default_rng(dim)
    mean = rng.normal(size=(6, dim)).astype(np.float32)
    log_std = rng.uniform(-1.0, 0.5, size=(6, dim)).astype(np.float32)
    u = rng.uniform(-2.0, 2.0, size=(6, dim)).astype(np.float32)
    out = log_prob(mean, log_std, np.tanh(u))
    assert out.shape == (6,)
    np.testing.assert_allclose(
        out, tanh_gaussian_log_prob_ref(mean, log_std, u), rtol=1e-4, atol=1e-4
    )
    # Under vmap over the batch axis, the same values.
    vmapped = jax.jit(jax.vmap(_log_prob))(mean, log_std, np.tanh(u))
    np.testing.assert_allclose(vmapped, out, rtol=1e-6, atol=1e-6)


@jax.jit
def _sample_and_log_prob(mean, log_std, key):
    return tanh_gaussian(mean, log_std).sample_and_log_prob(seed=key, sample_shape=(2000,))


def test_tanh_gaussian_sample_and_log_prob():
    mean, log_std = jnp.array([0.3, -0.5]), jnp.array([-0.5, 0.0])
    a, lp = _sample_and_log_prob(mean, log_std, jax.random.key(0))
    a, lp = np.asarray(a, np.float64), np.asarray(lp)
    assert a.shape == (2000, 2) and lp.shape == (2000,)
    assert np.all(np.abs(a) < 1.0)
    # The log-prob is the formula at the pre-squash sample u = atanh(a); recover u for the samples
    # away from +-1, where atanh of a float32 action is still accurate.
    moderate = np.all(np.abs(a) < 0.95, axis=-1)
    assert moderate.sum() > 1000
    u = np.arctanh(a[moderate])
    expected = tanh_gaussian_log_prob_ref(mean, log_std, u)
    np.testing.assert_allclose(lp[moderate], expected, rtol=1e-4, atol=1e-4)
    # The pre-squash samples follow N(mean, std): sample mean within ~5 standard errors.
    u_all = np.arctanh(np.clip(a, -1 + 1e-7, 1 - 1e-7))
    std = np.exp(np.asarray(log_std))
    assert np.all(np.abs(u_all.mean(0) - np.asarray(mean)) < 5 * std / np.sqrt(2000))


@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (0.5, 0.6), (-0.8, 0.4)])
def test_tanh_gaussian_density_integrates_to_one(mean, std):
    # Trapezoid rule on 20,001 points of (-1, 1), 1e-4 from each end. The mass of N(mean, std)
    # beyond |u| = atanh(1 - 1e-4) = 4.95 is below 1e-6 for these (mean, std), and without the
    # tanh correction the integral would be far from 1 (E[1 - tanh(u)^2] = 0.606 for N(0, 1)).
    grid = np.linspace(-1 + 1e-4, 1 - 1e-4, 20_001)
    lp = log_prob(jnp.full((1,), mean), jnp.full((1,), np.log(std)), grid[:, None])
    density = np.exp(np.asarray(lp, np.float64))
    integral = np.sum(0.5 * (density[1:] + density[:-1]) * np.diff(grid))
    np.testing.assert_allclose(integral, 1.0, atol=1e-4)


def test_squashed_log_prob_at_the_pre_squash_sample():
    # Equal to the reference formula at u, also where tanh(u) rounds to +-1 in float32 (|u| >= 8
    # on XLA's CPU), where the log-prob of the squashed action itself is NaN.
    mean, log_std = jnp.array([0.3, -0.5]), jnp.array([-0.5, 0.0])
    u = np.array([[0.1, -0.2], [2.0, -3.0], [9.5, -10.0]])
    lp = squashed_log_prob(tanh_gaussian(mean, log_std), jnp.asarray(u, jnp.float32))
    np.testing.assert_allclose(lp, tanh_gaussian_log_prob_ref(mean, log_std, u), rtol=1e-4)
    assert np.isfinite(lp).all()


def squashed_entropy_ref(mean, std):
    """H(tanh(u)), u ~ N(mean, std) in 1-D, by quadrature: H(u) + E[log(1 - tanh(u)^2)], with
    log(1 - tanh(u)^2) = 2 (log 2 - |u| - log1p(exp(-2|u|)))."""
    u = np.linspace(mean - 12 * std, mean + 12 * std, 200_001)
    density = np.exp(-0.5 * ((u - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi))
    log_det = 2 * (np.log(2) - np.abs(u) - np.log1p(np.exp(-2 * np.abs(u))))
    f = density * log_det
    expectation = np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(u))
    return 0.5 * np.log(2 * np.pi * np.e * std**2) + expectation


@jax.jit
def _squashed_entropy_and_grads(mean, log_std, key):
    # 200,000 items of one 1-D policy: the batch mean of the one-sample estimates and its
    # gradient with respect to the (shared) mean and log std.
    def estimate(mean, log_std):
        dist = tanh_gaussian(jnp.full((200_000, 1), mean), jnp.full((200_000, 1), log_std))
        return squashed_entropy(dist, key).mean()

    return jax.value_and_grad(estimate, argnums=(0, 1))(mean, log_std)


@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (0.5, 0.6), (-1.5, 0.3)])
def test_squashed_entropy_and_its_gradient_match_quadrature(mean, std):
    # The estimate and its gradient against the quadrature entropy and its central differences.
    # The gradient must see the squash: for mean 0.5, std 0.6 the entropy falls with the mean
    # (d/dmean = -0.74, d/dlog_std = 0.51), while a Gaussian's entropy (or a log-determinant at
    # fixed samples) has d/dmean = 0 and d/dlog_std = 1. Monte Carlo standard errors at 200,000
    # items: < 0.005.
    value, (d_mean, d_log_std) = _squashed_entropy_and_grads(
        jnp.float32(mean), jnp.float32(np.log(std)), jax.random.key(0)
    )
    h = 1e-3
    ref_mean = (squashed_entropy_ref(mean + h, std) - squashed_entropy_ref(mean - h, std)) / (2 * h)
    ref_log_std = (
        squashed_entropy_ref(mean, std * np.exp(h)) - squashed_entropy_ref(mean, std * np.exp(-h))
    ) / (2 * h)
    np.testing.assert_allclose(value, squashed_entropy_ref(mean, std), atol=0.02)
    np.testing.assert_allclose(d_mean, ref_mean, atol=0.02)
    np.testing.assert_allclose(d_log_std, ref_log_std, atol=0.02)


def test_actor_critic_squashed_head():
    # brax.training's policy: the actor outputs mean and std (softplus + 0.001), no log_std.
    net = ActorCritic((16,), action_dim=2, squash=True)
    obs = jax.random.normal(jax.random.key(1), (5, 3))
    params = net.init(jax.random.key(0), obs)
    assert "log_std" not in params["params"]
    out = params["params"]["MLP_1"]["Dense_1"]["kernel"]
    assert out.shape == (16, 4)
    dist, value = net.apply(params, obs)
    raw = MLP((16,), 4, "tanh", 0.01).apply({"params": params["params"]["MLP_1"]}, obs)
    np.testing.assert_allclose(dist.distribution.mean(), raw[:, :2], rtol=1e-6)
    std = np.log1p(np.exp(np.asarray(raw[:, 2:], np.float64))) + 0.001
    np.testing.assert_allclose(dist.distribution.stddev(), std, rtol=1e-5)
    a = dist.sample(seed=jax.random.key(2))
    assert a.shape == (5, 2) and np.all(np.abs(np.asarray(a)) < 1.0) and value.shape == (5,)


def test_squashed_mode_is_tanh_mean():
    mean = jnp.array([[0.0, 1.0, -2.0]])
    dist = tanh_gaussian(mean, jnp.full((1, 3), -1.0))
    np.testing.assert_allclose(squashed_mode(dist), [[0.0, 0.7615941560, -0.9640275801]], rtol=1e-6)


def test_squashed_gaussian_actor_shapes_and_log_std_bounds():
    net = SquashedGaussianActor((16,), action_dim=2, log_std_min=-3.0, log_std_max=1.0)
    obs = jax.random.normal(jax.random.key(1), (64, 3))
    params = net.init(jax.random.key(0), obs)
    apply = jax.jit(lambda p, o: net.apply(p, o).distribution.stddev())
    dist = net.apply(params, obs)
    assert dist.distribution.mean().shape == (64, 2)
    a, lp = dist.sample_and_log_prob(seed=jax.random.key(2))
    assert a.shape == (64, 2) and lp.shape == (64,)
    assert squashed_mode(dist).shape == (64, 2)
    # Extreme observations drive the raw log-std head far beyond the bounds in both directions; the
    # squashed log std stays in [-3, 1] and reaches both ends.
    log_std = np.log(np.asarray(apply(params, 1e6 * obs)))
    assert np.all(log_std >= -3.0 - 1e-5) and np.all(log_std <= 1.0 + 1e-5)
    np.testing.assert_allclose([log_std.min(), log_std.max()], [-3.0, 1.0], atol=1e-4)
    # Ordinary observations stay strictly inside (initial log std near the middle, -1).
    log_std = np.log(np.asarray(apply(params, obs)))
    assert np.all(np.abs(log_std + 1.0) < 0.5)


def test_deterministic_actor_within_bounds():
    net = DeterministicActor((16,), action_dim=3)
    obs = jax.random.normal(jax.random.key(1), (32, 4))
    params = net.init(jax.random.key(0), obs)
    apply = jax.jit(net.apply)
    out = apply(params, obs)
    assert out.shape == (32, 3)
    extreme = np.asarray(apply(params, 1e6 * obs))
    assert np.all(np.abs(extreme) <= 1.0)
    assert np.abs(extreme).max() > 0.999  # saturates: the bound is reached, not just respected


def test_q_ensemble_shape_and_independent_members():
    net = QEnsemble((16,), num_critics=3)
    obs, act = jnp.ones((5, 4)), jnp.full((5, 2), 0.5)
    params = net.init(jax.random.key(0), obs, act)
    q = jax.jit(net.apply)(params, obs, act)
    assert q.shape == (3, 5)
    members = params["params"]
    assert len(members) == 3
    # Different parameters, hence different values for the same (obs, action).
    kernels = [np.asarray(m["Dense_0"]["kernel"]) for m in members.values()]
    assert not np.allclose(kernels[0], kernels[1]) and not np.allclose(kernels[1], kernels[2])
    q = np.asarray(q)
    assert np.abs(q[0] - q[1]).min() > 1e-4 and np.abs(q[1] - q[2]).min() > 1e-4


def _count(params) -> int:
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))


def test_resolve_torso_chooses_by_observation_shape_and_refuses_what_cannot_work():
    from rlsuite.networks import resolve_torso

    assert resolve_torso("auto", (4,)) == "mlp"
    assert resolve_torso("auto", ()) == "mlp"  # a Discrete observation (one-hot)
    assert resolve_torso("auto", (10, 10, 4)) == "minatar"  # MinAtar
    assert resolve_torso("auto", (10, 5)) == "minatar"  # bsuite Catch, one channel
    assert resolve_torso("auto", (84, 84, 4)) == "nature"  # Atari frames
    assert resolve_torso("mlp", (10, 10, 4)) == "mlp"  # flattened, if asked
    assert resolve_torso("minatar", (84, 84, 4)) == "minatar"
    with pytest.raises(ValueError, match=r"PPOConfig.torso='cnn' is not one of: auto, mlp"):
        resolve_torso("cnn", (4,), "PPOConfig")
    with pytest.raises(ValueError, match="needs image observations"):
        resolve_torso("minatar", (4,))
    with pytest.raises(ValueError, match="at least 36 x 36 pixels; these are 10 x 10"):
        resolve_torso("nature", (10, 10, 4))


def test_encoders_by_hand_parameter_counts_and_feature_sizes():
    from rlsuite.networks import Encoder

    key = jax.random.key(0)
    # MinAtar: a 3x3 conv 4 -> 16 channels (3*3*4*16 + 16), SAME padding keeps 10x10, then a
    # dense layer from 10*10*16 to 128 (1600*128 + 128).
    minatar = Encoder("minatar", 3)
    params = minatar.init(key, jnp.zeros((1, 10, 10, 4)))
    assert _count(params) == (3 * 3 * 4 * 16 + 16) + (1600 * 128 + 128)
    assert minatar.apply(params, jnp.ones((2, 5, 10, 10, 4))).shape == (2, 5, 128)
    # Nature CNN on 84x84x4: 8x8/4 -> 20x20x32, 4x4/2 -> 9x9x64, 3x3/1 -> 7x7x64 = 3136 -> 512.
    nature = Encoder("nature", 3)
    params = nature.init(key, jnp.zeros((1, 84, 84, 4)))
    convs = (8 * 8 * 4 * 32 + 32) + (4 * 4 * 32 * 64 + 64) + (3 * 3 * 64 * 64 + 64)
    assert _count(params) == convs + (3136 * 512 + 512)
    assert nature.apply(params, jnp.ones((3, 84, 84, 4))).shape == (3, 512)
    # An [H, W] image has one channel; a Discrete observation is one-hot.
    one_channel = Encoder("minatar", 2)
    params = one_channel.init(key, jnp.zeros((1, 10, 5)))
    assert _count(params) == (3 * 3 * 1 * 16 + 16) + (10 * 5 * 16 * 128 + 128)
    onehot = Encoder("mlp", 0, num_categories=4)
    np.testing.assert_array_equal(onehot.apply({}, jnp.array([2, 0])), np.eye(4)[[2, 0]])


def test_categories_are_one_hot_encoded_field_by_field_before_the_torso():
    """A `Categories` observation: each field of the last axis one-hot (sizes (3, 2): ids
    [2, 1] -> [0, 0, 1, 0, 1]); the torso then reads the features exactly as it reads the same
    float one-hot image given as it is (same parameters, same outputs)."""
    from rlsuite.networks import Encoder, encoder, one_hot_fields

    ids = jnp.array([[2, 1], [0, 0]], jnp.uint8)
    np.testing.assert_array_equal(one_hot_fields(ids, (3, 2)), [[0, 0, 1, 0, 1], [1, 0, 0, 1, 0]])
    with pytest.raises(ValueError, match="3 fields in the last axis, sizes"):
        one_hot_fields(jnp.zeros((2, 3), jnp.uint8), (3, 2))
    key = jax.random.key(0)
    grid = jax.random.randint(key, (4, 5, 5, 3), 0, jnp.array([13, 12, 4])).astype(jnp.uint8)
    features = one_hot_fields(grid, (13, 12, 4))
    assert features.shape == (4, 5, 5, 29) and features.dtype == jnp.float32
    for torso, width in (("minatar", 128), ("mlp", 5 * 5 * 29)):
        on_ids = encoder(torso, (5, 5, 3), (13, 12, 4))
        as_is = Encoder(torso, 3)
        params = as_is.init(key, features[:1])
        out = on_ids.apply(params, grid)
        assert out.shape == (4, width)
        np.testing.assert_array_equal(out, as_is.apply(params, features))


def test_the_categories_space():
    from rlsuite.environment.spaces import Box, Categories, Discrete, categories

    space = Categories((13, 12, 4), (7, 7, 3))
    assert space.dtype == jnp.uint8 and categories(space) == (13, 12, 4)
    assert categories(Discrete(5)) == 5 and categories(Box(0, 1, (3,))) is None
    x = space.sample(jax.random.key(1))
    assert x.shape == (7, 7, 3) and x.dtype == jnp.uint8 and bool(space.contains(x))
    many = jax.vmap(space.sample)(jax.random.split(jax.random.key(2), 50)).reshape(-1, 3)
    np.testing.assert_array_equal(many.min(0), [0, 0, 0])  # each field over its whole range
    np.testing.assert_array_equal(many.max(0), [12, 11, 3])
    assert not space.contains(x.at[0, 0, 2].set(4))  # a direction id out of range
    assert not space.contains(x.astype(jnp.float32)) and not space.contains(x[0])
    with pytest.raises(ValueError, match="must hold one field per size"):
        Categories((13, 12), (7, 7, 3))
    with pytest.raises(ValueError, match="cannot hold the ids 0 to 299"):
        Categories((300,), (4, 1))
    assert repr(space) == "Categories(sizes=(13, 12, 4), shape=(7, 7, 3), dtype=uint8)"


def test_vector_observations_keep_the_networks_they_had():
    """No encoder for vectors: PPO's, SAC's and TD3's parameters are what they were (same tree,
    same initial values), so the feed-forward agents' results are unchanged."""
    from rlsuite.networks import encoder

    assert encoder("mlp", (4,)) is None
    plain = ActorCritic((8,), num_actions=2).init(jax.random.key(0), jnp.zeros((1, 4)))
    again = ActorCritic((8,), num_actions=2, encoder=encoder("mlp", (4,)))
    assert_same(again.init(jax.random.key(0), jnp.zeros((1, 4))), plain)
    assert "encoder" not in plain["params"]


def test_image_actor_critic_and_q_ensemble_share_or_own_their_encoders():
    from rlsuite.networks import Encoder

    key = jax.random.key(0)
    obs = jnp.zeros((2, 10, 10, 4))
    net = ActorCritic((8,), num_actions=3, encoder=Encoder("minatar", 3))
    params = net.init(key, obs)
    assert "encoder" in params["params"]  # one torso, read by the actor and the critic
    dist, value = net.apply(params, obs)
    assert dist.logits.shape == (2, 3) and value.shape == (2,)
    critic = QEnsemble((8,), num_critics=2, encoder=Encoder("minatar", 3))
    params = critic.init(key, obs, jnp.zeros((2, 1)))
    encoders = [k for k in params["params"] if k.startswith("encoder_")]
    assert len(encoders) == 2  # independent critics: a torso each
    assert critic.apply(params, obs, jnp.zeros((2, 1))).shape == (2, 2)


def test_the_orthogonal_initialiser_maps_over_a_vmapped_batch_with_the_same_values():
    """A QR batched by `vmap` can deadlock XLA's CPU thread pool; `orthogonal` runs once per
    batch member instead (a `scan` in the program, no batched QR), with the values the plain
    initialiser draws key by key."""
    import flax.linen as nn

    from rlsuite.networks import orthogonal

    keys = jax.random.split(jax.random.key(0), 3)
    init = orthogonal(np.sqrt(2))
    batched = jax.vmap(lambda k: init(k, (6, 4)))(keys)
    plain = nn.initializers.orthogonal(np.sqrt(2))
    for key, got in zip(keys, batched, strict=True):
        np.testing.assert_array_equal(got, plain(key, (6, 4)))
    program = str(jax.make_jaxpr(jax.vmap(lambda k: init(k, (6, 4))))(keys))
    assert "scan" in program
    # Whole networks too: an actor-critic initialised under vmap equals one per key.
    net = ActorCritic((8,), num_actions=2)
    obs = jnp.zeros((1, 3))
    stacked = jax.vmap(lambda k: net.init(k, obs))(keys)
    for i, key in enumerate(keys):
        assert_same(jax.tree.map(lambda x, i=i: x[i], stacked), net.init(key, obs))
