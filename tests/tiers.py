"""The default run and the slow run (`-m slow`) of a parametrised test: the default run keeps
one case of each kind and the slow run takes the rest (README, Testing)."""

import pytest


def slow_but(default, cases) -> list:
    """`cases` as `parametrize` values, those not in `default` marked slow."""
    default = {default} if isinstance(default, str) else set(default)
    return [c if c in default else pytest.param(c, marks=pytest.mark.slow) for c in cases]
