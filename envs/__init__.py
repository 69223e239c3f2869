"""Environments for rlsuite: our pure-JAX tasks, probe environments, and Brax / gymnax adapters.

    import envs
    env, params = envs.make("cartpole")
"""

from envs.registry import make, names

__all__ = ["make", "names"]
