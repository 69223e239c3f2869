"""Tests for rlsuite.ops.footprint: exact byte counts of pytrees, messages, the fit check."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.data.buffers import replay_buffer
from rlsuite.ops import footprint


def _tree():
    return {
        "w": jnp.zeros((3, 4), jnp.float32),  # 12 * 4 = 48
        "ids": jnp.zeros(5, jnp.int32),  # 5 * 4 = 20
        "done": jnp.zeros((2, 3), jnp.bool_),  # 6 * 1 = 6
        "half": np.zeros(3, np.float16),  # 3 * 2 = 6
        "scalar": jnp.float32(1.0),  # 4
        "key": jax.random.key(0),  # typed threefry key: 2 x uint32 = 8
        "keys": jax.random.split(jax.random.key(1), 3),  # 3 * 8 = 24
        "raw_key": jax.random.PRNGKey(2),  # uint32[2] = 8
        "nothing": None,  # not a leaf
    }


TREE_BYTES = 48 + 20 + 6 + 6 + 4 + 8 + 24 + 8  # 124


def test_tree_bytes_exact_for_arrays_and_shapes():
    tree = _tree()
    assert footprint.tree_bytes(tree) == TREE_BYTES
    shapes = jax.eval_shape(_tree)  # ShapeDtypeStructs, nothing allocated
    assert isinstance(shapes["key"], jax.ShapeDtypeStruct)
    assert footprint.tree_bytes(shapes) == TREE_BYTES
    assert footprint.tree_bytes({}) == 0
    # A typed key counts as its key data.
    assert footprint.tree_bytes(jax.random.key(0)) == jax.random.key_data(jax.random.key(0)).nbytes
    # Other implementations have other key sizes: rbg keys are uint32[4] = 16 bytes.
    assert footprint.tree_bytes(jax.random.key(0, impl="rbg")) == 16


def test_tree_bytes_of_a_replay_buffer_state():
    # capacity 100, item {obs: f32[3], action: i32}: 100 * 3 * 4 + 100 * 4 = 1,600 bytes of data,
    # plus insert_pos and size (int32 scalars): 1,608.
    buf = replay_buffer(100)
    item = {"obs": jnp.zeros(3), "action": jnp.int32(0)}
    assert footprint.tree_bytes(jax.eval_shape(buf.init, item)) == 1_608
    assert footprint.tree_bytes(buf.init(item)) == 1_608


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 bytes"),
        (1023, "1,023 bytes"),
        (1024, "1,024 bytes (1.0 KiB)"),
        (1536, "1,536 bytes (1.5 KiB)"),
        (5 * 2**20, "5,242,880 bytes (5.0 MiB)"),
        (12_345_678_901, "12,345,678,901 bytes (11.5 GiB)"),
        (3 * 2**40, "3,298,534,883,328 bytes (3.0 TiB)"),
    ],
)
def test_format_bytes(n, text):
    assert footprint.format_bytes(n) == text


def test_check_fits_raises_with_exact_bytes(monkeypatch):
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: 1_000_000)
    # 90% of 1,000,000 = 900,000: exactly that fits, one byte more does not.
    footprint.check_fits(900_000, "x")
    footprint.check_fits(10, "x")
    with pytest.raises(MemoryError) as error:
        footprint.check_fits(900_001, "sac: the learner state of 8 runs", hint="use fewer seeds")
    # 900,001 / 1024 = 878.9 KiB;  1,000,000 / 1024 = 976.6 KiB
    assert str(error.value) == (
        "sac: the learner state of 8 runs needs 900,001 bytes (878.9 KiB), more than 90% of the "
        "1,000,000 bytes (976.6 KiB) available on the host; use fewer seeds"
    )
    # Another fraction: 50% of 1,000,000 = 500,000.
    footprint.check_fits(500_000, "x", fraction=0.5)
    with pytest.raises(MemoryError, match=r"^x needs 500,001 bytes .* more than 50% of the"):
        footprint.check_fits(500_001, "x", fraction=0.5)


def test_check_fits_skips_when_memory_is_unknown(monkeypatch):
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: None)
    footprint.check_fits(10**18, "x")  # nothing to compare against: no error


def test_available_bytes_on_this_cpu():
    have = footprint.available_bytes()
    assert isinstance(have, int) and have > 0
    # Bytes, not kB: within the physical memory and of the order of /proc/meminfo's MemAvailable.
    assert have <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if os.path.exists("/proc/meminfo"):
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        assert 0.5 * kib * 1024 < have < 2 * kib * 1024
    # Real memory passes for a small need and refuses an impossible one.
    footprint.check_fits(1024, "x")
    with pytest.raises(MemoryError, match="x needs"):
        footprint.check_fits(10 * have, "x")


class _Device:
    def __init__(self, platform, free):
        self.platform, self.free = platform, free


def test_check_fits_counts_shared_host_memory_once_and_splits_over_accelerators(monkeypatch):
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: device.free)
    # Four CPU devices share one host's 1,000,000 bytes: 900,001 does not fit (it did when the
    # host's memory was counted once per device).
    cpus = [_Device("cpu", 1_000_000)] * 4
    footprint.check_fits(900_000, "x", devices=cpus)
    with pytest.raises(MemoryError, match=r"of the 1,000,000 bytes .* on the host \(4 cpu dev"):
        footprint.check_fits(900_001, "x", devices=cpus)
    # Accelerators each hold an equal share: 4 x 1,000,000 bytes, limited by the smallest.
    gpus = [_Device("gpu", 1_000_000)] * 3 + [_Device("gpu", 500_000)]
    footprint.check_fits(1_800_000, "x", devices=gpus)  # 450,000 each
    with pytest.raises(MemoryError, match=r"of the 2,000,000 bytes .* on 4 gpu devices"):
        footprint.check_fits(1_800_004, "x", devices=gpus)
    with pytest.raises(MemoryError, match="on the gpu device"):
        footprint.check_fits(900_001, "x", devices=gpus[:1])


def test_tree_bytes_does_not_wrap_around():
    huge = jax.ShapeDtypeStruct((2**62, 4), np.float32)
    assert footprint.tree_bytes(huge) == 2**62 * 4 * 4  # int64 arithmetic would give 0
