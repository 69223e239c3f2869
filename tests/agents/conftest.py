"""Fixtures of the agents' tests: datasets of the action-reward probe (`offline_probe`)."""

import jax
import pytest

from tests.agents.offline_probe import probe_dataset


@pytest.fixture(scope="session")
def uniform_data():
    def uniform(key, shape):
        return jax.random.uniform(key, shape, minval=-1.0, maxval=1.0)

    return probe_dataset(uniform, jax.random.key(0))


@pytest.fixture(scope="session")
def narrow_data():
    # 0.5 + N(0, 0.1^2): 5 or more standard deviations inside the bounds [-1, 1].
    return probe_dataset(
        lambda key, shape: 0.5 + 0.1 * jax.random.normal(key, shape), jax.random.key(1)
    )
