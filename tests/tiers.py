"""The default run and the slow run (`-m slow`) of a parametrised test: the default run keeps
one case of each kind and the slow run takes the rest (docs/development/testing.md)."""

import pytest

# XLA:CPU's LLVM at its lowest optimisation level: what the tests compile at (tests/conftest.py),
# and what a test adds to the `XLA_FLAGS` of its own that it gives a process it starts.
COMPILE_FAST = "--xla_backend_optimization_level=0"
FOUR_CPU_DEVICES = f"--xla_force_host_platform_device_count=4 {COMPILE_FAST}"


def slow_but(default, cases) -> list:
    """`cases` as `parametrize` values, those not in `default` marked slow."""
    default = {default} if isinstance(default, str) else set(default)
    return [c if c in default else pytest.param(c, marks=pytest.mark.slow) for c in cases]
