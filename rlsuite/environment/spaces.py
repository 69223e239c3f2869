"""Observation and action spaces: shape, dtype and bounds of what an environment takes and returns.

Spaces are plain Python objects (static under `jit`); they describe one environment instance. A
batch of environments made with `jax.vmap` has a leading batch axis that the space does not mention.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class Space:
    """Base class. `shape` and `dtype` describe one element."""

    shape: tuple[int, ...]
    dtype: Any

    def sample(self, key: jax.Array) -> jax.Array:
        raise NotImplementedError

    def contains(self, x: jax.Array) -> jax.Array:
        raise NotImplementedError


class Discrete(Space):
    """Integers `0, 1, ..., n - 1`, a scalar of integer dtype."""

    def __init__(self, n: int, dtype: Any = jnp.int32):
        if int(n) < 1:
            raise ValueError(f"Discrete space needs n >= 1, got n={n}")
        self.n = int(n)
        self.shape = ()
        self.dtype = jnp.dtype(dtype)
        if not jnp.issubdtype(self.dtype, jnp.integer) or self.n - 1 > jnp.iinfo(self.dtype).max:
            raise ValueError(
                f"Discrete({self.n}): dtype {self.dtype} cannot hold the actions 0 to {self.n - 1}"
            )

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        if not isinstance(x, jax.Array):  # a host value: checked before a cast could wrap it
            host = np.asarray(x)
            fits = np.issubdtype(host.dtype, np.integer) and host.shape == ()
            return jnp.asarray(bool(fits and 0 <= host < self.n))
        if not jnp.issubdtype(x.dtype, jnp.integer) or x.shape != ():  # 1.5, True, [0, 1]
            return jnp.zeros((), bool)
        return jnp.logical_and(x >= 0, x < self.n)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"


class Box(Space):
    """A box `[low, high]` of floats (bounds may be infinite), one element of shape `shape`."""

    def __init__(self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any = jnp.float32):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = jnp.dtype(dtype)
        self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self.shape)
        self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self.shape)
        if np.any(self.low > self.high):
            raise ValueError(f"Box bounds need low <= high, got low={self.low} high={self.high}")

    @property
    def bounded(self) -> bool:
        """True when every bound is finite (a uniform sample exists)."""
        return bool(np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high)))

    def sample(self, key: jax.Array) -> jax.Array:
        if not self.bounded:
            raise ValueError(f"cannot sample uniformly from an unbounded {self!r}")
        low, high = jnp.asarray(self.low), jnp.asarray(self.high)
        width = self.high.astype(np.float64) - self.low.astype(np.float64)
        if np.all(width <= np.finfo(self.dtype).max):
            return jax.random.uniform(key, self.shape, self.dtype, low, high)
        # `high - low` overflows the dtype (bounds near its largest value): interpolate instead,
        # each term finite. Only such boxes take this path, so every other keeps its samples.
        u = jax.random.uniform(key, self.shape, self.dtype)
        return jnp.clip(low * (1 - u) + high * u, low, high)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))

    def __repr__(self) -> str:
        lo, hi = np.unique(self.low), np.unique(self.high)
        lo = lo[0] if lo.size == 1 else self.low
        hi = hi[0] if hi.size == 1 else self.high
        return f"Box(low={lo}, high={hi}, shape={self.shape}, dtype={self.dtype.name})"


class Categories(Space):
    """An array of category ids: its last axis holds `len(sizes)` fields, field `i` an integer
    in `[0, sizes[i])` (a grid of tile and colour ids: shape `[H, W, 2]`, sizes `(tiles,
    colours)`). An environment whose observation is made of categories returns the ids, in a
    narrow integer dtype, and the networks one-hot encode them (`rlsuite.networks.Encoder`): a
    step moves the ids, not their one-hot features (`[7, 7, 3]` uint8 against `[7, 7, 29]`
    float32 for a MiniGrid view)."""

    def __init__(self, sizes: tuple[int, ...], shape: tuple[int, ...], dtype: Any = jnp.uint8):
        self.sizes = tuple(int(k) for k in sizes)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = jnp.dtype(dtype)
        if not self.shape or self.shape[-1] != len(self.sizes):
            raise ValueError(
                f"Categories: the last axis of shape {self.shape} must hold one field per size "
                f"({len(self.sizes)}: {self.sizes})"
            )
        if min(self.sizes) < 1:
            raise ValueError(f"Categories needs every size >= 1, got {self.sizes}")
        if (
            not jnp.issubdtype(self.dtype, jnp.integer)
            or max(self.sizes) - 1 > jnp.iinfo(self.dtype).max
        ):
            raise ValueError(
                f"Categories{self.sizes}: dtype {self.dtype} cannot hold the ids 0 to "
                f"{max(self.sizes) - 1}"
            )

    def sample(self, key: jax.Array) -> jax.Array:
        high = jnp.broadcast_to(jnp.asarray(self.sizes), self.shape)
        return jax.random.randint(key, self.shape, 0, high).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        return jnp.all((x >= 0) & (x < jnp.asarray(self.sizes)))

    def __repr__(self) -> str:
        return f"Categories(sizes={self.sizes}, shape={self.shape}, dtype={self.dtype.name})"


def categories(space: Space) -> int | tuple[int, ...] | None:
    """What a network one-hot encodes an observation of `space` by: `n` for a `Discrete` one,
    the fields' sizes for `Categories`, None for anything else (read as it is)."""
    if isinstance(space, Discrete):
        return space.n
    if isinstance(space, Categories):
        return space.sizes
    return None


def flat_dim(space: Space) -> int:
    """Number of scalars in one element (1 for `Discrete`)."""
    return int(np.prod(space.shape, dtype=np.int64))
