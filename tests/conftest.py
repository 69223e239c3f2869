"""Shared test setup: a persistent XLA compilation cache outside the repository for the processes
the tests start (compile time dominates short CLI runs on CPU), and none in the test processes
themselves.

A pytest worker lives for the whole run and compiles hundreds of programs; with the cache on, it
serialises each one to write it, and on jaxlib 0.10.2 (2 CPU cores) that serialisation crashed a
worker with a segmentation fault inside `executable.serialize()` once or twice a run, at a
different test each time (never in a short process). pytest-xdist 3.8.0's `loadgroup` scheduler
then waits forever for the crashed worker's tests (pytest-xdist issue 1323), so one crash cost a
whole CI run. The in-process tests compile without the cache; subprocesses inherit
`JAX_COMPILATION_CACHE_DIR` and keep it.
"""

import os

import jax

os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/rlsuite/jax"))
jax.config.update("jax_enable_compilation_cache", False)
