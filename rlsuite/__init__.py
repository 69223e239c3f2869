"""rlsuite: JAX-accelerated research suite for classical deep reinforcement learning.

The subpackages, from the bottom layer up (each imports only those below it; `import-linter`
checks it, see `pyproject.toml`):

    rlsuite.environment   the environment contract, spaces, wrappers, the contract checker
    rlsuite.ops           math and checks: returns, losses, running statistics, batching,
                          memory, validators
    rlsuite.networks      network torsos and heads
    rlsuite.data          transitions, the replay buffer, datasets and their file formats
    rlsuite.loop          the agent contract, rollout, evaluation, driver, runner,
                          checkpoints, loggers
    rlsuite.agents        the algorithm families and their registry
    rlsuite.envs          concrete environments and adapters (the repository's envs/ folder)
    rlsuite.app           the command line, the tuned table, dataset collection, plotting
"""

from rlsuite.data.transition import Transition
from rlsuite.environment import Environment
from rlsuite.loop.episodes import EvalResult, evaluate
from rlsuite.loop.rollout import EnvBatch, RecurrentPolicy, reset_batch

__version__ = "0.1.0"

__all__ = [
    "EnvBatch",
    "Environment",
    "EvalResult",
    "RecurrentPolicy",
    "Transition",
    "evaluate",
    "reset_batch",
]
