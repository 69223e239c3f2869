"""Environments for rlsuite: our pure-JAX tasks, probe environments, meta-RL task families
(`tasks/`), the UED maze with its level generator, mutator and held-out mazes (`maze/`), and
the suites behind adapters (Brax, gymnax, MuJoCo Playground, Jumanji, Craftax, MiniGrid), each
declared as a `Suite` (`suites.py`).

Build any of them by name with `envs.make("cartpole")`, which returns `(env, params)`; options
as the command line gives them: `envs.options.parse_options`.
"""

from rlsuite.envs import options
from rlsuite.envs.registry import make, names, register, register_suite

__all__ = ["make", "names", "options", "register", "register_suite"]
