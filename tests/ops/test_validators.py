"""The validators (`rlsuite.ops.validators`): each refusal names the field and what it allows."""

import dataclasses

import numpy as np
import pytest

from rlsuite.ops import validators


@dataclasses.dataclass
class Params:
    rate: object = 0.5


NOT_FINITE = [float("inf"), float("-inf"), float("nan"), np.array([1.0, np.inf])]


@pytest.mark.parametrize("value", NOT_FINITE)
def test_a_value_that_is_not_finite_is_refused_whatever_the_check(value):
    with pytest.raises(ValueError, match=r"params\.rate=.*; allowed: any, finite"):
        validators.check_field(Params(value), "rate", lambda v: v == v, "any", "cartpole")


def test_the_check_names_the_field_and_what_it_allows():
    validators.check_positive(Params(0.5), "rate", owner="ppo", kind="hparams")
    validators.check_positive(Params(np.array([0.1, 2.0])), "rate")
    with pytest.raises(ValueError, match=r"ppo: invalid hparams\.rate=0\.0; allowed: a value > 0"):
        validators.check_positive(Params(0.0), "rate", owner="ppo", kind="hparams")
    with pytest.raises(ValueError, match="allowed: a number or an array of numbers, a value > 0"):
        validators.check_positive(Params("fast"), "rate")
    with pytest.raises(ValueError, match="check_int: n must be an integer >= 2, got 1"):
        validators.check_int(1, "n", 2, "check_int")


def test_a_count_is_said_with_its_noun_singular_for_one():
    assert validators.counted(1, "episode") == "1 episode"
    assert validators.counted(0, "seed") == "0 seeds"
    assert validators.counted(2_000, "update") == "2,000 updates"
    assert validators.counted(1, "run", "runs of the batch") == "1 run"
    assert validators.counted(3, "child", "children") == "3 children"
