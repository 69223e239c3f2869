"""Tests for rlsuite.data.buffers: circular writes, uniform sampling of written slots, jit/vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.data.buffers import BufferState, replay_buffer


def _ids(start, n):
    return jnp.arange(start, start + n, dtype=jnp.int32)


def _sentinel(state: BufferState) -> BufferState:
    """Marks every slot as unwritten (-1); written items are >= 0."""
    return state.replace(data=jax.tree.map(lambda d: jnp.full_like(d, -1), state.data))


def test_wrap_around_exact_slots():
    buf = replay_buffer(10)
    add = jax.jit(buf.add)
    state = _sentinel(buf.init(jnp.int32(0)))
    # batch 1: items 0..3 -> slots 0..3, pos 4, size 4
    state = add(state, _ids(0, 4))
    np.testing.assert_array_equal(state.data, [0, 1, 2, 3, -1, -1, -1, -1, -1, -1])
    assert (int(state.insert_pos), int(state.size)) == (4, 4)
    # batch 2: items 4..7 -> slots 4..7, pos 8, size 8
    state = add(state, _ids(4, 4))
    np.testing.assert_array_equal(state.data, [0, 1, 2, 3, 4, 5, 6, 7, -1, -1])
    assert (int(state.insert_pos), int(state.size)) == (8, 8)
    # batch 3: items 8, 9 -> slots 8, 9; items 10, 11 wrap to slots 0, 1; pos 12 % 10 = 2
    state = add(state, _ids(8, 4))
    np.testing.assert_array_equal(state.data, [10, 11, 2, 3, 4, 5, 6, 7, 8, 9])
    assert (int(state.insert_pos), int(state.size)) == (2, 10)
    assert state.insert_pos.dtype == state.size.dtype == jnp.int32
    # size saturates at capacity; a batch of exactly capacity overwrites everything.
    state = add(state, _ids(12, 4))
    assert (int(state.insert_pos), int(state.size)) == (6, 10)
    # items 100..109 from pos 6: 100..103 -> slots 6..9, 104..109 -> slots 0..5
    state = jax.jit(buf.add)(state, _ids(100, 10))
    np.testing.assert_array_equal(state.data, [104, 105, 106, 107, 108, 109, 100, 101, 102, 103])
    assert (int(state.insert_pos), int(state.size)) == (6, 10)


def _chi_square(samples, n_valid):
    counts = np.bincount(np.asarray(samples), minlength=n_valid)
    expected = len(samples) / n_valid
    return float(((counts - expected) ** 2 / expected).sum()), counts


def test_sampling_partial_fill_only_valid_and_uniform():
    buf = replay_buffer(100)
    state = _sentinel(buf.init(jnp.int32(0)))
    for start, n in [(0, 16), (16, 16), (32, 5)]:  # 37 valid items, 63 unwritten slots
        state = buf.add(state, _ids(start, n))
    assert int(state.size) == 37
    samples = jax.jit(buf.sample, static_argnums=2)(state, jax.random.key(0), 10_000)
    assert samples.shape == (10_000,)
    assert int(samples.min()) >= 0  # never an unwritten (-1) slot
    # Uniform over 37 items: chi-square with 36 dof has mean 36, sd ~8.5. The bound 100 is ~7 sd
    # away; sampling only the first half gives ~10_000, sampling all 100 slots fails above.
    chi2, counts = _chi_square(samples, 37)
    assert chi2 < 100, chi2
    assert np.all(counts > 0) and len(counts) == 37


def test_sampling_full_buffer_covers_all_slots():
    buf = replay_buffer(20)
    state = buf.init(jnp.int32(0))
    for start in range(0, 50, 10):
        state = buf.add(state, _ids(start, 10))  # ends holding items 30..49
    samples = buf.sample(state, jax.random.key(1), 10_000)
    assert int(samples.min()) >= 30
    chi2, counts = _chi_square(samples - 30, 20)
    assert chi2 < 70, chi2  # 19 dof: mean 19, sd ~6
    assert len(counts) == 20


def test_can_sample_and_determinism():
    buf = replay_buffer(8)
    state = buf.init({"x": jnp.zeros(2)})
    assert not bool(buf.can_sample(state))
    state = buf.add(state, {"x": jnp.ones((3, 2))})
    assert bool(buf.can_sample(state)) and bool(buf.can_sample(state, 3))
    assert not bool(buf.can_sample(state, 4))
    key = jax.random.key(3)
    a, b = buf.sample(state, key, 5), buf.sample(state, key, 5)
    np.testing.assert_array_equal(a["x"], b["x"])


def test_pytree_items_multiple_leaves_and_dtypes():
    item = {
        "obs": jnp.zeros((3,), jnp.float32),
        "action": jnp.zeros((), jnp.int32),
        "done": jnp.zeros((), jnp.bool_),
        "extras": {"h": jnp.zeros((2, 2), jnp.float16)},
    }
    buf = replay_buffer(6)
    state = buf.init(item)
    assert state.data["extras"]["h"].shape == (6, 2, 2)
    assert state.data["extras"]["h"].dtype == jnp.float16
    assert state.data["done"].dtype == jnp.bool_

    def batch(ids):  # every leaf encodes the item id, so rows must stay aligned when sampled
        ids = np.asarray(ids)
        return {
            "obs": jnp.asarray(np.repeat(ids[:, None], 3, 1), jnp.float32),
            "action": jnp.asarray(ids, jnp.int32),
            "done": jnp.asarray(ids % 2 == 1),
            "extras": {"h": jnp.asarray(np.tile(ids[:, None, None], (1, 2, 2)), jnp.float16)},
        }

    add = jax.jit(buf.add)
    state = add(state, batch([0, 1, 2, 3]))
    state = add(state, batch([4, 5, 6, 7]))  # 6, 7 wrap to slots 0, 1
    np.testing.assert_array_equal(state.data["action"], [6, 7, 2, 3, 4, 5])
    out = buf.sample(state, jax.random.key(0), 64)
    ids = np.asarray(out["action"])
    assert set(ids) <= {2, 3, 4, 5, 6, 7}
    np.testing.assert_array_equal(out["obs"], np.repeat(ids[:, None], 3, 1))
    np.testing.assert_array_equal(out["done"], ids % 2 == 1)
    np.testing.assert_array_equal(out["extras"]["h"][:, 1, 0], ids)
    assert out["extras"]["h"].dtype == jnp.float16


def test_jit_and_vmap_over_independent_buffers():
    # One buffer per seed: vmapped add/sample equal the per-seed calls with the same keys.
    S, buf = 3, replay_buffer(7)
    init = jax.vmap(lambda _: _sentinel(buf.init({"a": jnp.int32(0), "b": jnp.zeros(2)})))
    states = init(jnp.arange(S))
    assert states.data["a"].shape == (S, 7) and states.size.shape == (S,)
    batches = [
        {"a": _ids(100 * s + 10 * k, 4), "b": jnp.full((4, 2), float(s))}
        for k in range(3)
        for s in range(S)
    ]
    stack = lambda bs: jax.tree.map(lambda *x: jnp.stack(x), *bs)
    vadd = jax.jit(jax.vmap(buf.add))
    vsample = jax.jit(jax.vmap(buf.sample, in_axes=(0, 0, None)), static_argnums=2)
    singles = [_sentinel(buf.init({"a": jnp.int32(0), "b": jnp.zeros(2)})) for _ in range(S)]
    for k in range(3):
        step = batches[k * S : (k + 1) * S]
        states = vadd(states, stack(step))
        singles = [buf.add(st, b) for st, b in zip(singles, step, strict=True)]
    keys = jax.random.split(jax.random.key(5), S)
    out = vsample(states, keys, 50)
    for s in range(S):
        np.testing.assert_array_equal(states.data["a"][s], singles[s].data["a"])
        ref = buf.sample(singles[s], keys[s], 50)
        np.testing.assert_array_equal(out["a"][s], ref["a"])
        assert np.all(np.asarray(out["a"][s]) // 100 == s)  # no mixing between seeds
        np.testing.assert_array_equal(out["b"][s], float(s))
    np.testing.assert_array_equal(states.insert_pos, 5)  # 12 % 7
    np.testing.assert_array_equal(states.size, 7)


@pytest.mark.parametrize("capacity", [0, -3, 2.5])
def test_bad_capacity_raises(capacity):
    with pytest.raises(ValueError, match="capacity"):
        replay_buffer(capacity)


def test_batch_larger_than_capacity_raises_naming_both():
    buf = replay_buffer(4)
    state = buf.init(jnp.float32(0))
    with pytest.raises(ValueError, match=r"batch size 5 .*capacity 4"):
        buf.add(state, jnp.zeros(5))
    with pytest.raises(ValueError, match=r"batch size 5 .*capacity 4"):
        jax.jit(buf.add)(state, jnp.zeros(5))


def test_mismatched_batch_raises_naming_leaf():
    buf = replay_buffer(4)
    state = buf.init({"obs": jnp.zeros(3), "r": jnp.float32(0)})
    with pytest.raises(ValueError, match="structure"):
        buf.add(state, {"obs": jnp.zeros((2, 3))})
    with pytest.raises(ValueError, match=r"\['obs'\].*\(2, 4\)"):
        buf.add(state, {"obs": jnp.zeros((2, 4)), "r": jnp.zeros(2)})
    with pytest.raises(ValueError, match=r"\['r'\].*int32"):
        buf.add(state, {"obs": jnp.zeros((2, 3)), "r": jnp.zeros(2, jnp.int32)})
    with pytest.raises(ValueError, match="leading"):
        buf.add(state, {"obs": jnp.zeros((2, 3)), "r": jnp.zeros(3)})


# ---------------------------------------------------------------------------------------------
# Masked writes: add(state, batch, valid) stores only the valid items, in order, in consecutive
# slots; insert_pos and size advance by the number of valid items.
# ---------------------------------------------------------------------------------------------
def _mask(*bits):
    return jnp.asarray(bits, dtype=bool)


def test_masked_add_exact_slots_and_wrap_around():
    buf = replay_buffer(6)
    add = jax.jit(buf.add)
    state = _sentinel(buf.init(jnp.int32(0)))
    # items 0..3, valid [T, F, T, F]: 0, 2 -> slots 0, 1; pos 2, size 2
    state = add(state, _ids(0, 4), _mask(1, 0, 1, 0))
    np.testing.assert_array_equal(state.data, [0, 2, -1, -1, -1, -1])
    assert (int(state.insert_pos), int(state.size)) == (2, 2)
    # items 10..13, valid [F, T, T, T]: 11, 12, 13 -> slots 2, 3, 4; pos 5, size 5
    state = add(state, _ids(10, 4), _mask(0, 1, 1, 1))
    np.testing.assert_array_equal(state.data, [0, 2, 11, 12, 13, -1])
    assert (int(state.insert_pos), int(state.size)) == (5, 5)
    # items 20..23, valid [T, F, F, T]: 20 -> slot 5, 23 wraps to slot 0; pos 1, size 6
    state = add(state, _ids(20, 4), _mask(1, 0, 0, 1))
    np.testing.assert_array_equal(state.data, [23, 2, 11, 12, 13, 20])
    assert (int(state.insert_pos), int(state.size)) == (1, 6)
    assert state.insert_pos.dtype == state.size.dtype == jnp.int32
    # a full-capacity batch 30..35 with valid [F, T, T, T, T, T]: 31..35 -> slots 1..5; pos 6 % 6
    state = add(state, _ids(30, 6), _mask(0, 1, 1, 1, 1, 1))
    np.testing.assert_array_equal(state.data, [23, 31, 32, 33, 34, 35])
    assert (int(state.insert_pos), int(state.size)) == (0, 6)
    # an all-True mask is the unmasked write
    state_all = add(state, _ids(40, 4), _mask(1, 1, 1, 1))
    state_plain = buf.add(state, _ids(40, 4))
    np.testing.assert_array_equal(state_all.data, state_plain.data)
    assert int(state_all.insert_pos) == int(state_plain.insert_pos) == 4


def test_masked_add_all_false_leaves_state_unchanged():
    buf = replay_buffer(5)
    add = jax.jit(buf.add)
    state = add(_sentinel(buf.init(jnp.int32(0))), _ids(0, 3))
    for st in (_sentinel(buf.init(jnp.int32(0))), state):  # empty, and partly filled
        out = add(st, _ids(50, 3), _mask(0, 0, 0))
        np.testing.assert_array_equal(out.data, st.data)
        assert (int(out.insert_pos), int(out.size)) == (int(st.insert_pos), int(st.size))


def test_masked_add_pytree_rows_stay_aligned():
    buf = replay_buffer(4)
    state = _sentinel(buf.init({"id": jnp.int32(0), "obs": jnp.zeros(2, jnp.int32)}))
    ids = _ids(7, 3)
    batch = {"id": ids, "obs": jnp.stack([ids, 10 * ids], axis=1)}
    # a numpy mask works too: items 7 and 9 -> slots 0 and 1
    state = jax.jit(buf.add)(state, batch, np.array([True, False, True]))
    np.testing.assert_array_equal(state.data["id"], [7, 9, -1, -1])
    np.testing.assert_array_equal(state.data["obs"], [[7, 70], [9, 90], [-1, -1], [-1, -1]])
    samples = jax.jit(buf.sample, static_argnums=2)(state, jax.random.key(0), 32)
    assert set(np.asarray(samples["id"]).tolist()) == {7, 9}
    np.testing.assert_array_equal(samples["obs"][:, 1], 10 * samples["id"])


@pytest.mark.parametrize(
    "valid",
    [
        np.ones(3, bool),  # shape (3,) for a batch of 4
        np.ones((4, 1), bool),
        np.ones((), bool),
        np.ones(4, np.int32),
        np.ones(4, np.float32),
    ],
)
def test_masked_add_bad_mask_raises(valid):
    buf = replay_buffer(8)
    state = buf.init(jnp.int32(0))
    with pytest.raises(ValueError, match=r"valid must be a bool array of shape \(4,\)"):
        buf.add(state, _ids(0, 4), valid)
    with pytest.raises(ValueError, match=r"valid must be a bool array of shape \(4,\)"):
        jax.jit(buf.add)(state, _ids(0, 4), jnp.asarray(valid))


def test_masked_add_vmap_over_buffers_with_different_masks():
    # One buffer per seed, each with its own mask: the vmapped add equals the per-seed adds.
    S, buf = 3, replay_buffer(5)
    singles = [_sentinel(buf.init(jnp.int32(0))) for _ in range(S)]
    states = jax.tree.map(lambda *x: jnp.stack(x), *singles)
    masks = [
        [_mask(1, 1, 1), _mask(0, 1, 0), _mask(1, 0, 1)],  # seed 0: 3 + 1 + 2 items (wraps)
        [_mask(0, 0, 0), _mask(1, 0, 0), _mask(0, 0, 1)],  # seed 1: 0 + 1 + 1 items
        [_mask(1, 0, 1), _mask(1, 1, 1), _mask(0, 0, 0)],  # seed 2: 2 + 3 + 0 items
    ]
    vadd = jax.jit(jax.vmap(buf.add))
    for k in range(3):
        batches = [_ids(100 * s + 10 * k, 3) for s in range(S)]
        valid = jnp.stack([masks[s][k] for s in range(S)])
        states = vadd(states, jnp.stack(batches), valid)
        singles = [buf.add(singles[s], batches[s], masks[s][k]) for s in range(S)]
    for s in range(S):
        np.testing.assert_array_equal(states.data[s], singles[s].data)
    # seed 0: 0, 1, 2 -> slots 0-2; 11 -> slot 3; 20 -> slot 4, 22 wraps to slot 0
    np.testing.assert_array_equal(states.data[0], [22, 1, 2, 11, 20])
    # seed 1: 110 -> slot 0; 122 -> slot 1
    np.testing.assert_array_equal(states.data[1], [110, 122, -1, -1, -1])
    # seed 2: 200, 202 -> slots 0, 1; 210, 211, 212 -> slots 2-4
    np.testing.assert_array_equal(states.data[2], [200, 202, 210, 211, 212])
    np.testing.assert_array_equal(states.insert_pos, [1, 2, 0])
    np.testing.assert_array_equal(states.size, [5, 2, 5])
