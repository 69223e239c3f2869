"""Environments for rlsuite: our pure-JAX tasks, probe environments, meta-RL task families
(`tasks/`), the UED maze with its level generator, mutator and held-out mazes (`maze/`), and
Brax / gymnax adapters.

Build any of them by name with `envs.make("cartpole")`, which returns `(env, params)`.
"""

from rlsuite.envs.registry import make, names, register

__all__ = ["make", "names", "register"]
