"""rlsuite: JAX-accelerated research suite for classical deep reinforcement learning."""

from rlsuite import buffers, returns, rollout, running_stats, spaces, wrappers
from rlsuite.environment import Environment
from rlsuite.evaluation import EvalResult, evaluate
from rlsuite.rollout import EnvBatch, reset_batch
from rlsuite.transition import Transition

# `rlsuite.rollout` is the module (`rlsuite.rollout.rollout`, `.step_batch`, ...), not its
# function of the same name, so that `import rlsuite.rollout as ro` gives the module.

__version__ = "0.1.0"

__all__ = [
    "buffers",
    "returns",
    "running_stats",
    "EnvBatch",
    "Environment",
    "EvalResult",
    "Transition",
    "evaluate",
    "reset_batch",
    "rollout",
    "spaces",
    "wrappers",
]
