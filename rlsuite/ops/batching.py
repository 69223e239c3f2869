"""`cond`: a `jax.lax.cond` that stays a branch under `vmap`.

Under `vmap`, `jax.lax.cond` with a batched predicate becomes a select: both branches are
computed for every element of the batch. Where the predicate is usually the same across the
batch (the off-policy warm-up gate, which every seed of a driver batch passes on the same
update; "did any environment finish" in a batched step), that doubles the cost for nothing.
`cond` has its own batching rule:

    all(pred)  -> only the batched true branch
    none       -> only the batched false branch
    otherwise  -> both, then a select per element (what `lax.cond` does under `vmap`)

Under nested `vmap`s each one applies the rule in turn, so a branch no element of any axis takes
is skipped. The true branch appears once in a batched program, the false one twice (alone, where
the whole batch takes it, and beside the true one for a disagreeing batch): give the heavy
computation to the true branch. The results equal `jax.lax.cond`'s, batched or not. Values the
branches close over (traced ones included) are passed to them as operands, so a branch may be any
closure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from rlsuite.environment import select


def traced(fn: Callable, *operands: Any) -> tuple[Callable, Any]:
    """`fn` traced once at `operands`: `(replay, shapes)`, where `replay(*operands)` evaluates
    the recorded computation (no Python of `fn` runs again) and `shapes` is its output's
    `jax.ShapeDtypeStruct` tree. For a branch whose shapes another branch needs (`cond`'s
    `false_fn` returning placeholders of `true_fn`'s shapes) without tracing it twice."""
    closed, shapes = jax.make_jaxpr(fn, return_shape=True)(*operands)
    tree = jax.tree.structure(shapes)

    def replay(*operands):
        flat = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *jax.tree.leaves(operands))
        return jax.tree.unflatten(tree, flat)

    return replay, shapes


def cond(pred: Any, true_fn: Callable, false_fn: Callable, *operands: Any) -> Any:
    """`jax.lax.cond(pred, true_fn, false_fn, *operands)`, computing under `vmap` only the
    branch the whole batch takes, and both (with a select) only when the batch disagrees.

    Forward-mode only: `jax.custom_batching.custom_vmap` has no reverse-mode rule, so `grad`
    through it fails ("Linearization failed"), where `jax.lax.cond` works. Its users (the
    rollout's reset skip, the off-policy learning gate) are never differentiated through; take
    gradients inside a branch, not across the conditional.
    """
    true_closed, true_out = jax.make_jaxpr(true_fn, return_shape=True)(*operands)
    false_closed, false_out = jax.make_jaxpr(false_fn, return_shape=True)(*operands)
    out_tree = jax.tree.structure(true_out)

    # Shapes and dtypes must agree; shardings may not (inside `shard_map` a constant, such as an
    # empty array, has none).
    def types(out):
        return [(x.shape, x.dtype) for x in jax.tree.leaves(out)]

    if out_tree != jax.tree.structure(false_out) or types(true_out) != types(false_out):
        raise TypeError(
            f"cond: true_fn and false_fn must return the same structure, shapes and dtypes; "
            f"true_fn gives {true_out}, false_fn gives {false_out}"
        )

    def evaluate(closed):
        def branch(flat_operands, consts):
            return jax.tree.unflatten(
                out_tree, jax.core.eval_jaxpr(closed.jaxpr, consts, *flat_operands)
            )

        return branch

    branches = (evaluate(false_closed), evaluate(true_closed))
    flat_operands = jax.tree.leaves(operands)
    consts = (list(false_closed.consts), list(true_closed.consts))

    @custom_vmap
    def batched_cond(pred, flat_operands, consts):
        return jax.lax.cond(
            pred,
            lambda ops, c: branches[1](ops, c[1]),
            lambda ops, c: branches[0](ops, c[0]),
            flat_operands,
            consts,
        )

    @batched_cond.def_vmap
    def rule(axis_size, in_batched, pred, flat_operands, consts):
        pred_batched, *args_batched = in_batched
        batched_out = jax.tree.map(lambda _: True, true_out)
        axes = jax.tree.map(lambda b: 0 if b else None, tuple(args_batched))

        def run(index):
            """The branch `index`, batched."""

            def one(ops, c):
                return branches[index](ops, c[index])

            return jax.vmap(one, in_axes=axes, axis_size=axis_size)

        # The decisions below are `cond`s again, so an enclosing `vmap` (a second batch axis)
        # applies this rule to them in turn instead of turning them into selects. Each branch
        # runs at most once: the first `cond` computes the true branch if any element takes it
        # (else the false one, the whole answer); only a disagreeing batch adds the false
        # branch and a select.
        if not pred_batched:
            return cond(pred, run(1), run(0), flat_operands, consts), batched_out

        first = cond(jnp.any(pred), run(1), run(0), flat_operands, consts)

        def keep(first, ops, c):
            return first

        def mix(first, ops, c):
            return jax.vmap(select)(pred, first, run(0)(ops, c))

        agree = jnp.all(pred) | ~jnp.any(pred)
        return cond(agree, keep, mix, first, flat_operands, consts), batched_out

    return batched_cond(jnp.asarray(pred), flat_operands, consts)


def gate(pred: Any, fn: Callable, otherwise: Callable, *operands: Any) -> Any:
    """A learning step taken only where `pred` holds: `fn(*operands)` where it does, else
    `otherwise(shapes, *operands)`, with `shapes` the `jax.ShapeDtypeStruct` tree of `fn`'s
    output (to fill its metrics: with NaN, which a row's mean then skips, or with zeros). A
    `cond`: under `vmap`, `fn` is computed only where some run of the batch takes it. The
    off-policy loop's warm-up and UED's replay-only learning both learn through this."""
    fn_traced, shapes = traced(fn, *operands)
    return cond(pred, fn_traced, lambda *ops: otherwise(shapes, *ops), *operands)
