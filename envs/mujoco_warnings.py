"""MuJoCo's warnings as Python warnings (`MujocoWarning`), not lines appended to
`MUJOCO_LOG.TXT` in the working directory, which is what MuJoCo does by default: a run on a
Brax or Playground task whose model uses a deprecated attribute (their cheetahs' `settotalmass`)
left that file wherever it was started. `route_mujoco_warnings` installs the handler once, where
the adapters import MuJoCo's models (`brax_adapter.brax_envs`, `playground_adapter`); a handler
the user installed is kept."""

from __future__ import annotations

import warnings


class MujocoWarning(UserWarning):
    """A warning MuJoCo gave (its text after `MuJoCo: `)."""


def _warn(text: str) -> None:
    warnings.warn(f"MuJoCo: {text}", MujocoWarning, stacklevel=2)


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings to `warnings.warn` as `MujocoWarning`s, unless a handler is set."""
    import mujoco

    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_warn)
