"""Contrastive energies, losses and metrics against values derived by hand, against numpy and
optax as independent references, under jit and under vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from rlsuite.ops import contrastive

ENERGY_NAMES = ["norm", "l2sq", "dot", "cosine"]
LOSS_NAMES = ["forward", "backward", "symmetric", "binary"]


def _encodings(seed: int, b: int = 4, d: int = 3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(b, d)).astype(np.float32) for _ in range(2))


def _logits(seed: int, b: int = 4):
    return np.random.default_rng(seed).normal(size=(b, b)).astype(np.float32) * 2.0


# ----------------------------------------------------------------------------------- energies
def test_distance_energies_by_hand():
    # phi = (0, 0), psi = (3, 4): distance sqrt(9 + 16) = 5, squared 25, dot 0.
    phi, psi = jnp.array([[0.0, 0.0]]), jnp.array([[3.0, 4.0]])
    np.testing.assert_allclose(contrastive.norm(phi, psi, 1.0), [[-5.0]], atol=1e-5)
    np.testing.assert_allclose(contrastive.l2sq(phi, psi, 1.0), [[-25.0]], rtol=1e-6)
    np.testing.assert_allclose(contrastive.dot(phi, psi, 1.0), [[0.0]])
    # Two rows: logits[i, j] pairs phi_i with psi_j (not psi_i with phi_j).
    #   phi = [(0, 0), (1, 0)], psi = [(3, 4), (1, 1)]
    #   l2sq: [[-25, -2], [-(4 + 16) = -20, -1]]; dot: [[0, 0], [3, 1]]
    phi, psi = jnp.array([[0.0, 0.0], [1.0, 0.0]]), jnp.array([[3.0, 4.0], [1.0, 1.0]])
    np.testing.assert_allclose(contrastive.l2sq(phi, psi, 1.0), [[-25.0, -2.0], [-20.0, -1.0]])
    np.testing.assert_allclose(contrastive.dot(phi, psi, 1.0), [[0.0, 0.0], [3.0, 1.0]])
    np.testing.assert_allclose(
        contrastive.norm(phi, psi, 1.0),
        -np.sqrt([[25.0, 2.0], [20.0, 1.0]]),
        rtol=1e-6,
    )
    # The distance energies and dot ignore the scale.
    for name in ("norm", "l2sq", "dot"):
        fn = contrastive.ENERGIES[name]
        np.testing.assert_array_equal(fn(phi, psi, 7.0), fn(phi, psi, 1.0))


def test_cosine_normalises_each_row_by_its_own_norm():
    # phi rows (3, 0), (0, 1) and psi rows (1, 0), (0, 2): unit rows (1, 0), (0, 1) on both
    # sides, so the cosines are the identity. Normalising the whole batch instead (Frobenius
    # norms sqrt(10) and sqrt(5)) would give diag(3, 2) / sqrt(50) = diag(0.4243, 0.2828).
    phi = jnp.array([[3.0, 0.0], [0.0, 1.0]])
    psi = jnp.array([[1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_allclose(contrastive.cosine(phi, psi, 1.0), np.eye(2), atol=1e-6)
    # The scale multiplies the cosines.
    np.testing.assert_allclose(contrastive.cosine(phi, psi, 1 / 0.07), np.eye(2) / 0.07, rtol=1e-6)
    # Multiplying one row by a positive constant changes nothing.
    np.testing.assert_allclose(
        contrastive.cosine(phi.at[1].multiply(5.0), psi.at[0].multiply(0.25), 1.0),
        np.eye(2),
        atol=1e-6,
    )
    # Not a dot product: (1, 1) against (1, 0) is cos 45 degrees.
    np.testing.assert_allclose(
        contrastive.cosine(jnp.array([[1.0, 1.0]]), jnp.array([[2.0, 0.0]]), 1.0),
        [[np.sqrt(0.5)]],
        rtol=1e-6,
    )


def test_energies_against_numpy():
    phi, psi = _encodings(0)
    diff = phi[:, None, :] - psi[None, :, :]
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)
    expected = {
        "norm": -np.linalg.norm(diff, axis=-1),
        "l2sq": -np.sum(diff**2, axis=-1),
        "dot": phi @ psi.T,
        "cosine": 3.0 * unit(phi) @ unit(psi).T,
    }
    for name in ENERGY_NAMES:
        got = contrastive.ENERGIES[name](phi, psi, 3.0)
        assert got.shape == (4, 4)
        np.testing.assert_allclose(got, expected[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_norm_gradient_is_finite_where_phi_equals_psi():
    phi = jnp.array([[1.0, 2.0], [0.0, -1.0]])
    grad_phi, grad_psi = jax.grad(lambda a, b: contrastive.norm(a, b).sum(), argnums=(0, 1))(
        phi, phi
    )
    assert np.all(np.isfinite(grad_phi)) and np.all(np.isfinite(grad_psi))
    # Only the diagonal pairs are at distance 0; they contribute nothing: the gradient equals
    # that of the off-diagonal distances alone, -(phi_0 - phi_1) / |phi_0 - phi_1| for row 0.
    direction = (phi[0] - phi[1]) / jnp.linalg.norm(phi[0] - phi[1])
    np.testing.assert_allclose(grad_phi[0], -direction, rtol=1e-5)
    np.testing.assert_allclose(grad_phi[1], direction, rtol=1e-5)


def test_cosine_of_zero_vectors_is_finite():
    zeros = jnp.zeros((2, 3))
    ones = jnp.ones((2, 3))
    for phi, psi in ((zeros, zeros), (zeros, ones), (ones, zeros)):
        logits = contrastive.cosine(phi, psi, 10.0)
        np.testing.assert_array_equal(logits, np.zeros((2, 2)))
        grads = jax.grad(lambda a, b, s: contrastive.cosine(a, b, s).sum(), argnums=(0, 1, 2))(
            phi, psi, 10.0
        )
        for g in grads:
            assert np.all(np.isfinite(g))


def test_energies_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match=r"phi \(4,\) and psi \(4, 3\)"):
        contrastive.dot(jnp.zeros(4), jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="must both be"):
        contrastive.norm(jnp.zeros((4, 2)), jnp.zeros((4, 3)))


# ------------------------------------------------------------------------------------- losses
def test_losses_by_hand():
    # logits = I (B = 2). Row 0 is (1, 0): softmax cross-entropy with label 0 is
    #   logsumexp(1, 0) - 1 = log(e + 1) - 1 = 1.3132617 - 1 = 0.3132617; row 1 the same.
    # The columns of I are the rows, so backward = forward; symmetric = 2 * 0.3132617.
    # Penalty: 0.1 * mean_i logsumexp_i^2 = 0.1 * 1.3132617^2 = 0.1724656.
    # Binary: diagonal x = 1, label 1: -log sigmoid(1) = log(1 + e^-1) = 0.3132617;
    #   off-diagonal x = 0, label 0: -log(1 - sigmoid(0)) = log 2 = 0.6931472;
    #   mean of 2 * 0.3132617 + 2 * 0.6931472 over 4 entries = 0.5032044.
    assert np.isclose(np.log(np.e + 1) - 1, 0.3132617)
    logits = jnp.eye(2)
    np.testing.assert_allclose(contrastive.forward_infonce(logits), 0.3132617, rtol=1e-6)
    np.testing.assert_allclose(contrastive.backward_infonce(logits), 0.3132617, rtol=1e-6)
    np.testing.assert_allclose(contrastive.symmetric_infonce(logits), 0.6265234, rtol=1e-6)
    np.testing.assert_allclose(contrastive.binary_nce(logits), 0.5032044, rtol=1e-6)
    np.testing.assert_allclose(contrastive.logsumexp_penalty(logits), 0.1724656, rtol=1e-6)
    np.testing.assert_allclose(contrastive.logsumexp_penalty(logits, 1.0), 1.724656, rtol=1e-6)


def test_forward_and_backward_differ_by_hand():
    # logits = log [[2, 3], [5, 1]], so each softmax is a ratio of these numbers:
    #   forward (rows): row 0 (2, 3), label 0: -log(2 / 5) = log 2.5; row 1 (5, 1), label 1:
    #     -log(1 / 6) = log 6
    #   backward (columns): column 0 (2, 5), label 0: -log(2 / 7) = log 3.5; column 1 (3, 1),
    #     label 1: -log(1 / 4) = log 4
    logits = jnp.log(jnp.array([[2.0, 3.0], [5.0, 1.0]]))
    np.testing.assert_allclose(
        contrastive.forward_infonce(logits), (np.log(2.5) + np.log(6.0)) / 2, rtol=1e-6
    )
    np.testing.assert_allclose(
        contrastive.backward_infonce(logits), (np.log(3.5) + np.log(4.0)) / 2, rtol=1e-6
    )
    np.testing.assert_allclose(
        contrastive.symmetric_infonce(logits),
        (np.log(2.5) + np.log(6.0) + np.log(3.5) + np.log(4.0)) / 2,
        rtol=1e-6,
    )


def test_losses_against_optax():
    logits = _logits(1)
    labels = np.arange(4)
    forward = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    backward = optax.softmax_cross_entropy_with_integer_labels(logits.T, labels).mean()
    binary = optax.sigmoid_binary_cross_entropy(logits, np.eye(4)).mean()
    np.testing.assert_allclose(contrastive.forward_infonce(logits), forward, rtol=1e-5)
    np.testing.assert_allclose(contrastive.backward_infonce(logits), backward, rtol=1e-5)
    np.testing.assert_allclose(contrastive.symmetric_infonce(logits), forward + backward, rtol=1e-5)
    np.testing.assert_allclose(contrastive.binary_nce(logits), binary, rtol=1e-5)
    lse = np.log(np.exp(logits.astype(np.float64)).sum(axis=1))
    np.testing.assert_allclose(
        contrastive.logsumexp_penalty(logits, 0.3), 0.3 * np.mean(lse**2), rtol=1e-5
    )


def test_binary_nce_is_stable_for_large_logits():
    # x = +-100: a naive log(sigmoid(x)) underflows to log(0) = -inf for the wrong sign.
    # logits [[100, 100], [-100, -100]]: entry (0, 1) is a negative at 100 -> loss 100;
    # entry (1, 0) a negative at -100 -> ~0; (0, 0) a positive at 100 -> ~0; (1, 1) a positive
    # at -100 -> 100; mean 200 / 4 = 50.
    logits = jnp.array([[100.0, 100.0], [-100.0, -100.0]])
    np.testing.assert_allclose(contrastive.binary_nce(logits), 50.0, rtol=1e-6)
    grad = jax.grad(contrastive.binary_nce)(logits)
    assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("name", LOSS_NAMES + ["penalty"])
def test_permuting_pairs_together_leaves_the_loss_unchanged(name):
    fn = contrastive.logsumexp_penalty if name == "penalty" else contrastive.LOSSES[name]
    phi, psi = _encodings(2, b=5)
    perm = np.array([3, 0, 4, 1, 2])
    for energy in contrastive.ENERGIES.values():
        base = fn(energy(phi, psi, 2.0))
        # The same permutation on (s, a) rows and goals keeps every positive pair.
        together = fn(energy(phi[perm], psi[perm], 2.0))
        np.testing.assert_allclose(together, base, rtol=1e-5)
        # Permuting only the goals makes other pairs the positives.
        goals_only = fn(energy(phi, psi[perm], 2.0))
        if name != "penalty":  # a row's logsumexp does not care which goal is the positive
            assert abs(float(goals_only) - float(base)) > 1e-3


def test_losses_refuse_non_square_logits():
    for fn in (*contrastive.LOSSES.values(), contrastive.logsumexp_penalty):
        with pytest.raises(ValueError, match=r"logits must be \[B, B\], got \(2, 3\)"):
            fn(jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"got \(4,\)"):
        contrastive.metrics(jnp.zeros(4))


# ------------------------------------------------------------------------------------ metrics
def test_metrics_by_hand():
    for c in (0.5, 3.0):
        m = contrastive.metrics(c * jnp.eye(3))
        assert float(m["categorical_accuracy"]) == 1.0
        np.testing.assert_allclose(m["logits_pos"], c)
        np.testing.assert_allclose(m["logits_neg"], 0.0)
    # logits [[2, 0, 0], [0, 2, 0], [5, 4, 1]]: row argmaxes 0, 1, 0 -> accuracy 2/3 (by
    # columns it would be 1/3); positives (2 + 2 + 1) / 3 = 5/3; negatives (5 + 4) / 6 = 1.5.
    logits = jnp.array([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [5.0, 4.0, 1.0]])
    m = contrastive.metrics(logits)
    np.testing.assert_allclose(m["categorical_accuracy"], 2 / 3, rtol=1e-6)
    np.testing.assert_allclose(m["logits_pos"], 5 / 3, rtol=1e-6)
    np.testing.assert_allclose(m["logits_neg"], 1.5, rtol=1e-6)
    lse = np.log(np.exp(np.asarray(logits, np.float64)).sum(axis=1)).mean()
    np.testing.assert_allclose(m["logsumexp"], lse, rtol=1e-6)
    # The identity negated: every row's argmax is off the diagonal.
    assert float(contrastive.metrics(-jnp.eye(3))["categorical_accuracy"]) == 0.0


def test_metrics_carry_no_gradient():
    grad = jax.grad(lambda x: contrastive.metrics(x)["logits_pos"])(jnp.eye(2))
    np.testing.assert_array_equal(grad, np.zeros((2, 2)))


# ------------------------------------------------------------------------------ jit and vmap
@pytest.mark.parametrize("name", ENERGY_NAMES)
def test_energies_jit_and_vmap(name):
    fn = contrastive.ENERGIES[name]
    rng = np.random.default_rng(3)
    phi, psi = (rng.normal(size=(3, 4, 2)).astype(np.float32) for _ in range(2))
    scales = np.array([1.0, 2.0, 0.5], np.float32)
    loop = np.stack([fn(phi[k], psi[k], scales[k]) for k in range(3)])
    batched = jax.jit(jax.vmap(fn))(phi, psi, scales)
    assert batched.shape == (3, 4, 4)
    np.testing.assert_allclose(batched, loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jax.jit(fn)(phi[0], psi[0], scales[0]), loop[0], rtol=1e-5)


@pytest.mark.parametrize("name", LOSS_NAMES + ["penalty", "metrics"])
def test_losses_jit_and_vmap(name):
    if name == "penalty":
        fn = contrastive.logsumexp_penalty
    elif name == "metrics":
        fn = contrastive.metrics
    else:
        fn = contrastive.LOSSES[name]
    logits = np.stack([_logits(10 + k) for k in range(3)])
    loop = [fn(logits[k]) for k in range(3)]
    batched = jax.jit(jax.vmap(fn))(logits)
    jitted = jax.jit(fn)(logits[0])
    for k in range(3):
        jax.tree.map(
            lambda b, x, k=k: np.testing.assert_allclose(b[k], x, rtol=1e-5), batched, loop[k]
        )
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5), jitted, loop[0])
    if name == "penalty":  # the coefficient is a hyperparameter: vmap over it too
        coeffs = jnp.array([0.0, 0.1, 1.0])
        got = jax.vmap(fn, in_axes=(None, 0))(logits[0], coeffs)
        np.testing.assert_allclose(got, np.asarray(coeffs) * float(fn(logits[0], 1.0)), rtol=1e-5)


# ------------------------------------------------------------------------------- validation
def test_known_names_pass_and_tables_are_complete():
    assert list(contrastive.ENERGIES) == ENERGY_NAMES
    assert list(contrastive.LOSSES) == LOSS_NAMES
    for name in ENERGY_NAMES:
        contrastive.check_energy(name)
    for name in LOSS_NAMES:
        contrastive.check_loss(name)


@pytest.mark.parametrize("bad", ["foo", "Norm", "", None, 3, ["dot"]])
def test_unknown_names_are_refused_with_the_listed_values(bad):
    with pytest.raises(ValueError) as energy_error:
        contrastive.check_energy(bad)
    assert str(energy_error.value) == (
        f"energy must be one of 'norm', 'l2sq', 'dot', 'cosine', got {bad!r}"
    )
    with pytest.raises(ValueError) as loss_error:
        contrastive.check_loss(bad)
    assert str(loss_error.value) == (
        f"loss must be one of 'forward', 'backward', 'symmetric', 'binary', got {bad!r}"
    )
    # A config names its own field.
    with pytest.raises(ValueError, match="^contrastive_loss must be one of 'forward'"):
        contrastive.check_loss(bad, field="contrastive_loss")
