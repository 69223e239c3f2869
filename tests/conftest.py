"""Shared test setup.

- A persistent XLA compilation cache outside the repository, for this process and (through the
  environment) for the `rlsuite` processes the tests start: compilation and tracing dominate short
  tests on a CPU. Every program is cached, however short its compilation: a warm run then loads
  them all, where compiling the short ones again cost more than reading them.
- XLA:CPU's LLVM at its lowest optimisation level (`--xla_backend_optimization_level=0` in
  `XLA_FLAGS`, for this process and the `rlsuite` processes the tests start, unless `XLA_FLAGS`
  sets a level already): the tests' programs are small and run briefly, so compiling is most of
  their time. Measured on 2 CPU cores for tests/agents/test_ppo.py and test_dqn.py (27 tests):
  207 s with an empty compilation cache at XLA's default level, 114 s at 0 (153 s at 1); with
  the cache full, 51 s and 56 s (46 s). What one test compares it computes at one level (the
  processes it starts inherit it); a test that starts a process with `XLA_FLAGS` of its own (a
  device count) adds the level to them (`tests.tiers.COMPILE_FAST`) where it compares within that
  process.
- JAX's in-memory caches cleared after each test module. A pytest worker lives for the whole run,
  and each executable it keeps holds memory maps of its own; with every module's programs kept,
  a worker neared the kernel's default limit of 65,530 maps (`vm.max_map_count`) and XLA's compiler
  then aborted or segfaulted. A module's programs are not used by the next module's tests (each
  builds its own agents), so releasing them costs nothing but the maps.
"""

import gc
import os

import jax
import pytest

from tests.tiers import COMPILE_FAST

if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" {COMPILE_FAST}").strip()
CACHE_DIR = os.environ.get("JAX_COMPILATION_CACHE_DIR", os.path.expanduser("~/.cache/rlsuite/jax"))
os.environ["JAX_COMPILATION_CACHE_DIR"] = CACHE_DIR
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_programs():
    yield
    jax.clear_caches()
    gc.collect()
