"""Running mean and variance for observation and return normalisation.

The statistics are a pytree (``RunningStats``) that lives in the learner state, so they are saved
with the params, vmapped per seed, and frozen during evaluation by simply not calling ``update``.

Batches are folded in with the parallel merge of Chan, Golub & LeVeque (1979), which combines the
batch's own (two-pass, numerically stable) mean and variance with the running ones; a single-sample
(Welford) update is ``update`` with a batch of one.

Count convention: ``count`` starts at exactly 0 (no epsilon pseudo-count), so the statistics
equal the mean and population variance (ddof=0) of all data seen. Empty statistics have
``mean=0`` and ``var=1``, so ``normalize`` is the identity (up to ``eps``) before any data arrives,
and merging with empty statistics returns the other operand (up to rounding).

``count`` is a float in the stats' dtype (float32 or wider; ``init`` refuses narrower ones, whose
count would overflow). A float32 count is exact up to 2**24 (16.7M) samples. Past that, adding a
batch of ``b`` rounds ``count + b`` to float32's spacing there (``count * 2**-23``), so a small
batch's weight is off by up to ``count * 2**-24 / b`` relative, and batches of one sample stop
adding at 2**24: the statistics then follow recent data like a moving average over about 2**24
samples rather than all of it. With batches of thousands (many environments) this is far away;
for tens of millions of single-sample updates, enable x64 and use float64 statistics.
"""

import chex
import jax
import jax.numpy as jnp
from flax import struct

Array = chex.Array


@struct.dataclass
class RunningStats:
    """Mean and population variance of everything seen so far.

    Attributes:
      mean: ``[*shape]`` running mean.
      var: ``[*shape]`` running population variance (1 while ``count == 0``).
      count: ``[]`` number of samples seen (float).
    """

    mean: Array
    var: Array
    count: Array


def init(shape: tuple[int, ...] = (), dtype=jnp.float32) -> RunningStats:
    """Empty statistics for samples of ``shape`` (e.g. ``obs_shape``, or ``()`` for returns)."""
    if not jnp.issubdtype(dtype, jnp.floating) or jnp.finfo(dtype).bits < 32:
        raise ValueError(
            f"running_stats.init: dtype must be float32 or float64, got {jnp.dtype(dtype)} "
            "(a narrower count overflows)"
        )
    shape = tuple(shape)
    return RunningStats(
        mean=jnp.zeros(shape, dtype), var=jnp.ones(shape, dtype), count=jnp.zeros((), dtype)
    )


def merge(a: RunningStats, b: RunningStats) -> RunningStats:
    """Statistics of the union of the data summarised by ``a`` and ``b`` (Chan et al. 1979)."""
    chex.assert_equal_shape([a.mean, b.mean, a.var, b.var])
    count = a.count + b.count
    safe_count = jnp.where(count > 0, count, 1.0)
    frac_b = b.count / safe_count
    delta = b.mean - a.mean
    mean = a.mean + delta * frac_b
    # M2 / count, written with fractions so nothing of size count**2 is formed.
    var = (a.var * a.count + b.var * b.count) / safe_count + delta**2 * (1.0 - frac_b) * frac_b
    # With one side empty the formulas return the other side; empty with empty keeps var = 1.
    var = jnp.where(count > 0, var, a.var)
    return RunningStats(mean=mean, var=var, count=count)


def update(stats: RunningStats, batch: Array) -> RunningStats:
    """Folds a batch into the statistics.

    Args:
      stats: statistics for samples of shape ``[*shape]``.
      batch: ``[*lead, *shape]`` with one or more leading axes (e.g. ``[B]`` or
        ``[num_steps, num_envs]``); all leading axes are samples. At least one sample.

    Returns:
      updated statistics.
    """
    lead = batch.ndim - stats.mean.ndim
    if lead < 1 or batch.shape[lead:] != stats.mean.shape:
        raise ValueError(
            f"batch shape {batch.shape} must be [*lead, *{stats.mean.shape}] with >= 1 lead axis."
        )
    axes = tuple(range(lead))
    batch = batch.astype(stats.mean.dtype)
    size = 1
    for d in batch.shape[:lead]:
        size *= d
    if size == 0:
        return stats
    batch_stats = RunningStats(
        mean=jnp.mean(batch, axis=axes),
        var=jnp.var(batch, axis=axes),
        count=jnp.asarray(size, stats.count.dtype),
    )
    return merge(stats, batch_stats)


def normalize(stats: RunningStats, x: Array, clip: float | None = None, eps: float = 1e-8) -> Array:
    """``(x - mean) / sqrt(var + eps)``, optionally clipped to ``[-clip, clip]``.

    ``x`` is ``[..., *shape]``; leading axes broadcast.
    """
    y = (x - stats.mean) * jax.lax.rsqrt(stats.var + eps)
    if clip is not None:
        y = jnp.clip(y, -clip, clip)
    return y


def denormalize(stats: RunningStats, x: Array, eps: float = 1e-8) -> Array:
    """Inverse of ``normalize`` without clipping: ``x * sqrt(var + eps) + mean``."""
    return x * jnp.sqrt(stats.var + eps) + stats.mean
