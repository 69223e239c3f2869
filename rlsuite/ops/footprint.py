"""Memory checks made before anything is allocated: a state too large for the device is refused
with a message that states the bytes it would need, instead of failing deep inside XLA.

    need = tree_bytes(jax.eval_shape(agent.init, key, hparams))   # shapes only, nothing allocated
    check_fits(need, "sac: the learner state of 8 seeds", hint="lower --buffer-size")
"""

from __future__ import annotations

import math
import os
from typing import Any

import jax
import numpy as np


def tree_bytes(tree: Any) -> int:
    """Bytes of every array leaf of `tree` (arrays or `jax.ShapeDtypeStruct`s)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            continue
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):  # sized by its key data
            data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(shape, dtype))
            shape, dtype = data.shape, data.dtype
        total += math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize  # exact: no wrap
    return total


def available_bytes(device: jax.Device | None = None) -> int | None:
    """Memory a new allocation may use on `device` (default: the first device), or None if it
    cannot be told. Accelerators: the allocator's limit minus what is in use. CPU: the host's
    available memory (`MemAvailable` on Linux, else the physical memory)."""
    device = device or jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: int) -> str:
    """`12,345,678,901 bytes (11.5 GiB)`."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n:,} bytes ({n / size:.1f} {unit})"
    return f"{n:,} bytes"


def check_fits(
    need: int, what: str, hint: str = "", fraction: float = 0.9, devices: Any = None
) -> None:
    """Raise a `MemoryError` stating the bytes `what` needs when they would use more than
    `fraction` of the memory available.

    `need` is split evenly over `devices` (default: the first device, where a state that is not
    placed lives). CPU devices share the host's memory, so on a CPU the whole `need` is compared
    with it once, however many CPU devices there are; an accelerator's share with the smallest
    memory available among `devices`.
    """
    devices = [jax.devices()[0]] if devices is None else list(devices)
    if devices[0].platform == "cpu":
        have = available_bytes(devices[0])
        where = "the host" if len(devices) == 1 else f"the host ({len(devices)} cpu devices)"
    else:
        available = [available_bytes(d) for d in devices]
        have = None if None in available else min(available) * len(devices)
        where = (
            f"the {devices[0].platform} device"
            if len(devices) == 1
            else f"{len(devices)} {devices[0].platform} devices"
        )
    if have is None:
        return
    if need > fraction * have:
        raise MemoryError(
            f"{what} needs {format_bytes(need)}, more than {fraction:.0%} of the "
            f"{format_bytes(have)} available on {where}" + (f"; {hint}" if hint else "")
        )
