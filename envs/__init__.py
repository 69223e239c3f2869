"""Environments for rlsuite: our pure-JAX tasks, probe environments, and Brax / gymnax adapters.

Build any of them by name with `envs.make("cartpole")`, which returns `(env, params)`.
"""

from rlsuite.envs.registry import make, names, register

__all__ = ["make", "names", "register"]
