"""`rlsuite.ops.batching.cond`: `lax.cond`'s results, batched or not, and under `vmap` only the
branch the whole batch takes is computed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.ops.batching import cond, traced
from tests.trees import assert_same


def counting(calls, fn):
    """`fn`, reporting each time its compiled code runs (once per batched call)."""

    def counted(*args):
        jax.debug.callback(lambda: calls.append(1))
        return fn(*args)

    return counted


def heavy(x, y):
    return {"x": 2.0 * x + y, "sum": x.sum(), "count": jnp.int32(1)}


def light(x, y):
    return {"x": x - y, "sum": jnp.zeros(()), "count": jnp.int32(0)}


X = jnp.arange(6.0).reshape(3, 2)
Y = jnp.float32(0.5)


def reference(pred, x, y):
    return jax.lax.cond(pred, heavy, light, x, y)


@pytest.mark.parametrize("pred", [True, False])
def test_unbatched_equals_lax_cond(pred):
    ours = jax.jit(lambda p, x, y: cond(p, heavy, light, x, y))(pred, X[0], Y)
    assert_same(ours, reference(pred, X[0], Y))
    assert_same(cond(pred, heavy, light, X[0], Y), reference(pred, X[0], Y))  # not jitted


@pytest.mark.parametrize(
    "pred, heavy_runs, light_runs",
    [
        ([True, True, True], 1, 0),
        ([False, False, False], 0, 1),
        ([True, False, True], 1, 1),  # the batch disagrees: both, then a select
    ],
)
def test_under_vmap_only_the_branch_the_batch_takes_runs(pred, heavy_runs, light_runs):
    heavy_calls, light_calls = [], []
    ours = jax.jit(
        jax.vmap(
            lambda p, x, y: cond(
                p, counting(heavy_calls, heavy), counting(light_calls, light), x, y
            ),
            in_axes=(0, 0, None),
        )
    )(jnp.array(pred), X, Y)
    jax.effects_barrier()
    assert (len(heavy_calls), len(light_calls)) == (heavy_runs, light_runs)
    expected = jax.vmap(reference, in_axes=(0, 0, None))(jnp.array(pred), X, Y)
    assert_same(ours, expected)
    np.testing.assert_array_equal(ours["count"], np.asarray(pred, np.int32))


def test_unbatched_predicate_with_batched_operands():
    calls = []
    ours = jax.jit(
        jax.vmap(lambda p, x: cond(p, counting(calls, heavy), light, x, Y), in_axes=(None, 0))
    )(False, X)
    jax.effects_barrier()
    assert not calls
    assert_same(ours, jax.vmap(reference, in_axes=(None, 0, None))(False, X, Y))


def test_batched_predicate_with_unbatched_operands():
    calls = []
    ours = jax.jit(
        jax.vmap(lambda p, x: cond(p, counting(calls, heavy), light, x, Y), in_axes=(0, None))
    )(jnp.array([True, False]), X[0])
    jax.effects_barrier()
    assert len(calls) == 1
    assert_same(
        ours, jax.vmap(reference, in_axes=(0, None, None))(jnp.array([True, False]), X[0], Y)
    )


@pytest.mark.parametrize(
    "preds, heavy_runs",
    [
        ([[False] * 3, [False] * 3], 0),  # no element of either axis takes the true branch
        ([[True] * 3, [True] * 3], 1),
        ([[True] * 3, [False] * 3], 1),  # the outer axis disagrees: both, then a select
    ],
)
def test_nested_vmaps_skip_on_every_axis(preds, heavy_runs):
    # Seeds outside a batch of environments, say: each vmap applies the rule in turn.
    calls = []

    def one(p, x):
        return cond(p, counting(calls, heavy), light, x, Y)

    preds = jnp.array(preds)
    xs = jnp.stack([X, X + 1.0])
    ours = jax.jit(jax.vmap(jax.vmap(one)))(preds, xs)
    jax.effects_barrier()
    assert len(calls) == heavy_runs
    expected = jax.vmap(jax.vmap(reference, in_axes=(0, 0, None)), in_axes=(0, 0, None))
    assert_same(ours, expected(preds, xs, Y))


def test_traced_replays_without_running_the_python_again():
    calls = []

    def fn(x, y):
        calls.append(1)
        return heavy(x, y)

    replay, shapes = traced(fn, X[0], Y)
    assert len(calls) == 1
    assert shapes == jax.eval_shape(heavy, X[0], Y)
    assert_same(replay(X[1], Y), heavy(X[1], Y))
    assert_same(
        jax.jit(jax.vmap(replay, in_axes=(0, None)))(X, Y), jax.vmap(heavy, (0, None))(X, Y)
    )
    assert len(calls) == 1


def test_branches_may_close_over_batched_values():
    # A float and an int closed over, each batched by the outer vmap.
    def f(p, x, z, i):
        return cond(p, lambda x: x * z + i, lambda x: x - i, x)

    def g(p, x, z, i):
        return jax.lax.cond(p, lambda x: x * z + i, lambda x: x - i, x)

    args = (jnp.array([True, False, True]), X, jnp.array([1.0, 2.0, 3.0]), jnp.arange(3))
    assert_same(jax.jit(jax.vmap(f))(*args), jax.vmap(g)(*args))


def test_nested_vmap_and_scan():
    # Seeds outside, a predicate per inner element, inside a scan: lax.cond's results.
    def run(p, x):
        def body(carry, _):
            return cond(p, heavy, light, carry, Y)["x"], None

        return jax.lax.scan(body, x, None, length=3)[0]

    def run_reference(p, x):
        def body(carry, _):
            return reference(p, carry, Y)["x"], None

        return jax.lax.scan(body, x, None, length=3)[0]

    preds = jnp.array([[True, False, True], [False, False, False]])
    xs = jnp.stack([X, X + 1.0])
    ours = jax.jit(jax.vmap(jax.vmap(run)))(preds, xs)
    assert_same(ours, jax.vmap(jax.vmap(run_reference))(preds, xs))


def test_branches_must_agree_on_their_outputs():
    with pytest.raises(TypeError, match="must return the same structure, shapes and dtypes"):
        cond(True, lambda x: x, lambda x: (x, x), X)
    with pytest.raises(TypeError, match="must return the same structure, shapes and dtypes"):
        cond(True, lambda x: x, lambda x: x.astype(jnp.int32), X)
