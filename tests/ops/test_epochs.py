"""Epochs of minibatches (`rlsuite.ops.epochs`): the linear decay by hand, and the epochs' loop
against a plain Python loop over the same keys and slices."""

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.ops.epochs import epochs, linear_decay


def test_linear_decay_by_hand():
    values = [float(linear_decay(0.3, step, 4)) for step in (0, 1, 2, 4, 6)]
    np.testing.assert_allclose(values, [0.3, 0.225, 0.15, 0.0, 0.0], rtol=1e-6)  # never below 0
    assert float(linear_decay(0.3, 3, 4, anneal=False)) == np.float32(0.3)
    assert linear_decay(0.3, 3, 4, anneal=False).dtype == jnp.float32
    # Traced steps (a vmapped batch) give the same values.
    batch = jax.vmap(linear_decay, (None, 0, None))(0.3, jnp.array([0, 1, 2]), 4)
    np.testing.assert_allclose(batch, values[:3], rtol=1e-6)


def test_epochs_scan_every_slice_of_every_epoch_in_order():
    data = jnp.arange(6.0)

    def slices(key):  # the epoch's order of the data, two minibatches of three
        return jax.random.permutation(key, data).reshape(2, 3)

    def step(carry, minibatch):  # a running sum and a record of what each step saw
        return carry + minibatch.sum(), {"first": minibatch[0], "size": minibatch.size}

    key = jax.random.key(4)
    total, metrics = jax.jit(epochs, static_argnums=(2, 3, 4))(0.0, key, 3, slices, step)
    # By hand: 3 epochs of the whole data: 3 * 15; the means over the 6 steps.
    assert float(total) == 45.0
    firsts = [
        float(m[0]) for k in jax.random.split(key, 3) for m in np.asarray(slices(k))
    ]  # the same keys, in a Python loop
    np.testing.assert_allclose(float(metrics["first"]), np.mean(firsts), rtol=1e-6)
    assert float(metrics["size"]) == 3.0
