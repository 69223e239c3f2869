"""Shared test setup: a persistent XLA compilation cache outside the repository (compile time
dominates short tests on CPU)."""

import os

import jax

jax.config.update(
    "jax_compilation_cache_dir",
    os.environ.get("JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/rlsuite/jax")),
)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
