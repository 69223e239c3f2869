"""Platform start-up: make the CPU cores JAX devices and set XLA:CPU's flags before JAX starts.

    from rlsuite.loop import platform

    platform.use_cpu_cores()  # at the top of a script, before anything computes

JAX fixes its devices, and XLA reads `XLA_FLAGS`, when it first computes; afterwards
`use_cpu_cores` changes nothing.
"""

from __future__ import annotations

import os
import re

import jax
import jaxlib.version

YNN_OFF = "--xla_cpu_experimental_ynn_fusion_type="  # XLA:CPU with no YNNPACK fusions
YNN_JAXLIB = ((0, 10), (0, 12))  # jaxlib versions it is set on (measured: 0.10.2; 0.11 has it)


def use_cpu_cores(count: int | None = None) -> int:
    """Make `count` CPU cores (default: every core this process may run on) JAX's CPU devices,
    so that `run_batch` spreads the runs over them; returns the number of CPU devices in effect.

    On a CPU, XLA runs one program's small operations on one core, so without this a batch of
    seeds uses one core of several. JAX fixes its devices at its first computation: call this
    before (at the top of a script). Afterwards, or where the count was set already
    (`JAX_NUM_CPU_DEVICES`, `--xla_force_host_platform_device_count` in `XLA_FLAGS`, an earlier
    call), it changes nothing. Accelerators are unaffected: a GPU's devices stay the default.
    Where JAX is about to start, it also turns XLA:CPU's YNNPACK fusions off, which hold memory
    per matrix product on several devices and sum in an order that depends on the batch
    (`_ynnpack_off`).
    """
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"use_cpu_cores: count must be an int >= 1 or None, got {count!r}")
    preset = jax.config.jax_num_cpu_devices != -1
    preset = preset or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    started = _jax_started()
    if not preset and not started:
        if count is None:
            cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
            count = len(cores) if cores else (os.cpu_count() or 1)
        jax.config.update("jax_num_cpu_devices", count)
    if not started:
        _ynnpack_off()
    return len(jax.devices("cpu"))


def _jax_started() -> bool:
    """Whether JAX has started its backends (its device count is then fixed): the device count
    refuses a new value from then on."""
    current = jax.config.jax_num_cpu_devices
    try:
        jax.config.update("jax_num_cpu_devices", current + 1 if current > 0 else 1)
    except RuntimeError:
        return True
    jax.config.update("jax_num_cpu_devices", current)
    return False


def _ynnpack_off() -> None:
    """Turn XLA:CPU's YNNPACK fusions off (`YNN_OFF` in `XLA_FLAGS`) in a process about to start
    its CPU devices, on the jaxlib versions of `YNN_JAXLIB`, unless `XLA_FLAGS` sets that option
    already. Two reasons:

    * Memory, on several CPU devices. XLA computes f32 matrix products with YNNPACK, and each
      product queues a task on the one thread pool every CPU device shares; a finished task
      leaves the queue only when an idle pool thread looks at it. With a device per core, every
      pool thread runs a device's program, so none looks until the programs end, and a program
      holds memory for every product it has computed: a chunk of a 2-seed IQL run grew by about
      20 MB per update. XLA's own kernels queue nothing and ran as fast there
      (docs/benchmarks/offline_memory.md).
    * Batch invariance, on any number. YNNPACK's reductions sum in an order that depends on how
      many rows the batch holds (`jnp.sum` over 128 values per run differed in the last bit
      between batches of 4 and 64 runs), so a run's result depended on how many other runs
      shared its batch; XLA's own reductions gave every run the same bits in batches of 2 to 64.
      A sweep's runs of a configuration then train as a run of it alone does
      (`rlsuite.app.sweep`, docs/sweeps.md).

    The option is left in `XLA_FLAGS`, which JAX's compilation cache reads into its keys.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_experimental_ynn_fusion_type" in flags:
        return
    version = tuple(int(part) for part in re.findall(r"\d+", jaxlib.version.__version__)[:2])
    if YNN_JAXLIB[0] <= version < YNN_JAXLIB[1]:
        os.environ["XLA_FLAGS"] = f"{flags} {YNN_OFF}".strip()


MATMUL_PRECISIONS = ("default", "high", "highest")
DETERMINISTIC_OPS = "--xla_gpu_deterministic_ops=true"


def use_numerics(deterministic: bool = False, matmul_precision: str = "default") -> None:
    """Ask XLA for deterministic GPU operations (`DETERMINISTIC_OPS` in `XLA_FLAGS`: reductions
    and scatters in a fixed order, so that one key gives one run to the bit, at some speed) and
    set the precision of float32 matrix products and convolutions
    (`jax_default_matmul_precision`: `default` lets a GPU use TF32 and a TPU bfloat16 passes,
    `high` and `highest` compute more of float32's bits). On a CPU neither changes anything:
    XLA:CPU's operations are deterministic and compute float32 in float32. The flag is read when
    JAX starts its backends: call this before, as `use_cpu_cores`."""
    if matmul_precision not in MATMUL_PRECISIONS:
        raise ValueError(
            f"matmul_precision={matmul_precision!r}; allowed: {', '.join(MATMUL_PRECISIONS)}"
        )
    flags = os.environ.get("XLA_FLAGS", "")
    if deterministic and "xla_gpu_deterministic_ops" not in flags:
        if _jax_started() and jax.default_backend() != "cpu":
            raise RuntimeError("use_numerics: JAX has started; ask for deterministic ops before")
        os.environ["XLA_FLAGS"] = f"{flags} {DETERMINISTIC_OPS}".strip()
    if matmul_precision != "default":
        jax.config.update("jax_default_matmul_precision", matmul_precision)
