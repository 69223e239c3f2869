"""Locomotion task families on MJX: Brax's halfcheetah with a target velocity per trial and Brax's
ant with a direction per trial (the MuJoCo meta-RL benchmarks of MAML, Finn et al. 2017,
arXiv:1703.03400, ProMP, Rothfuss et al. 2019, arXiv:1810.06784, and varibad, Zintgraf et al.
2020, arXiv:1910.08348).

| item        | `CheetahVelocity`                        | `AntDirection`                          |
|-------------|------------------------------------------|-----------------------------------------|
| robot       | `BraxEnv("halfcheetah")` (MJX)           | `BraxEnv("ant")` (MJX)                  |
| task        | `params.target_velocity` v* (float32 []) | `params.direction` d, float32 [2], unit |
| sampler     | `sample_velocity`: v* ~ U[velocity_low,  | `sample_direction`: d = (+-1, 0), each  |
|             | velocity_high] (default [0, 3])          | w.p. 1/2 (forward_backward, default),   |
|             |                                          | or (cos t, sin t), t ~ U[0, 2 pi)       |
| velocity    | v = torso x displacement / dt            | v = torso (x, y) displacement / dt      |
| reward      | -abs(v - v*) - 0.05 * sum(action^2)      | d . v + 1 (healthy) - 0.5 * sum(a^2)    |
| episode     | `max_steps` (200) steps, then truncated; | the same; `terminated` where the torso  |
|             | never terminated                         | height leaves [0.2, 1.0] (Brax's ant)   |
| info        | velocity, target_velocity,               | velocity (d . v), x_velocity,           |
|             | velocity_error = abs(v - v*), Brax's     | y_velocity and Brax's other metrics     |
|             | metrics                                  |                                         |

Both take Brax's own reward and replace its forward term only: the control cost (cheetah: 0.05,
MAML's and varibad's 0.5 * 0.1, passed to Brax as its `ctrl_cost_weight`; ant: Brax's 0.5) and the
ant's healthy reward (1 per step) come from Brax's metrics; Brax's ant has no contact cost (its
`reward_contact` is 0; MAML's and ProMP's ant subtract 0.5e-3 * sum(clip(cfrc_ext)^2)). dt = 0.05
(5 MJX steps of 0.01) for both. The episode length is MAML's horizon of 200 steps (varibad's too);
the observation is Brax's (no x, y position, no task).

Ant directions: forward/backward (MAML's and ProMP's ant-fwd-back) by default;
`forward_backward=False` in params draws an angle in the plane (ProMP's and varibad's 2-D
direction variant). `sample_task(key, params)` draws either family's task by its params type.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.brax_adapter import BraxEnv, BraxParams
from rlsuite.envs.tasks import check_leaf_shape

from rlsuite.environment import StepResult
from rlsuite.ops.validators import check_field

CHEETAH_CTRL_COST = 0.05  # MAML's and varibad's 0.5 * 1e-1 (Brax's halfcheetah default: 0.1)


@struct.dataclass
class CheetahVelocityParams:
    target_velocity: jax.Array = struct.field(
        default_factory=lambda: jnp.asarray(1.5, jnp.float32)
    )  # [] float32, the task v*
    velocity_low: float = 0.0
    velocity_high: float = 3.0


@struct.dataclass
class AntDirectionParams:
    direction: jax.Array = struct.field(
        default_factory=lambda: jnp.array([1.0, 0.0], jnp.float32)
    )  # [2] float32 unit vector, the task
    forward_backward: bool = True  # sample_direction: (+-1, 0) if True, else any angle


@struct.dataclass
class MJXTaskState:
    """Brax's state and the step count the horizon is checked against."""

    brax_state: Any  # brax.envs.State
    time: jax.Array  # int32 scalar, steps taken in this episode


class _BraxTask(BraxEnv):
    """A Brax environment whose reward depends on a task in params, with its own horizon.

    Subclasses give `_task_reward(info, params) -> (reward, info)` from Brax's metrics."""

    def __init__(self, brax_name: str, max_steps: int, backend: str, **env_kwargs: Any):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(
                f"{type(self).__name__}: invalid max_steps={max_steps!r}; allowed: an integer >= 1"
            )
        super().__init__(brax_name, backend, **env_kwargs)
        self.max_episode_steps = max_steps  # counted in step_env (no TimeLimit needed)

    @property
    def name(self) -> str:
        return type(self).__name__

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, MJXTaskState]:
        obs, brax_state = super().reset_env(key, BraxParams())
        return obs, MJXTaskState(brax_state, jnp.zeros((), jnp.int32))

    def step_env(self, key: jax.Array, state: MJXTaskState, action, params) -> StepResult:
        obs, brax_state, _, terminated, _, info = super().step_env(
            key, state.brax_state, action, BraxParams()
        )
        reward, info = self._task_reward(info, params)
        time = state.time + 1
        truncated = time >= self.max_episode_steps
        state = MJXTaskState(brax_state, time)
        return obs, state, reward.astype(jnp.float32), terminated, truncated, info

    def _task_reward(self, info: dict, params: Any) -> tuple[jax.Array, dict]:
        raise NotImplementedError

    def _task_leaf(self, params: Any, field: str, shape: tuple[int, ...]) -> jax.Array:
        """`params.<field>` as float32, checked at trace time to be one task's (a batch of tasks
        passes `validate_params`, and must be mapped over with `jax.vmap`)."""
        value = getattr(params, field)
        if jnp.shape(value) != shape:
            raise ValueError(
                f"{self.name}: params.{field} of shape {jnp.shape(value)} in step; allowed: shape "
                f"{shape}, one task per environment (batch tasks with jax.vmap)"
            )
        return jnp.asarray(value, jnp.float32)

    def __repr__(self) -> str:
        return f"{self.name}(max_steps={self.max_episode_steps}, backend={self.backend!r})"


class CheetahVelocity(_BraxTask):
    """Brax's halfcheetah rewarded for running at `params.target_velocity` (module table).

    `env_kwargs` go to Brax's `Halfcheetah` (e.g. `reset_noise_scale`)."""

    def __init__(self, max_steps: int = 200, backend: str = "mjx", **env_kwargs: Any):
        env_kwargs.setdefault("ctrl_cost_weight", CHEETAH_CTRL_COST)
        super().__init__("halfcheetah", max_steps, backend, **env_kwargs)

    @property
    def default_params(self) -> CheetahVelocityParams:
        """v* = 1.5, the middle of [0, 3]: a placeholder; draw targets with `sample_velocity`."""
        return CheetahVelocityParams()

    def validate_params(self, params: CheetahVelocityParams) -> None:
        check_leaf_shape(params, "target_velocity", (), self.name)
        for field in ("target_velocity", "velocity_low"):
            check_field(params, field, np.isfinite, "a finite velocity (m/s)", self.name)
        if not isinstance(params.velocity_low, jax.core.Tracer):
            low = np.asarray(params.velocity_low)  # NumPy: a jnp comparison in a trace is traced
            allowed = f"a finite velocity >= velocity_low ({low.tolist()})"
            check_field(
                params, "velocity_high", lambda v: np.isfinite(v) & (v >= low), allowed, self.name
            )

    def _task_reward(self, info: dict, params: CheetahVelocityParams) -> tuple[jax.Array, dict]:
        velocity = info["x_velocity"]  # Brax's (x_torso' - x_torso) / dt
        target = self._task_leaf(params, "target_velocity", ())
        error = jnp.abs(velocity - target)
        info = {
            **info,
            "reward_run": -error,
            "velocity": velocity,
            "target_velocity": target,
            "velocity_error": error,
        }
        return -error + info["reward_ctrl"], info


class AntDirection(_BraxTask):
    """Brax's ant rewarded for its torso velocity along `params.direction` (module table).

    `env_kwargs` go to Brax's `Ant` (e.g. `healthy_z_range`, `ctrl_cost_weight`)."""

    def __init__(self, max_steps: int = 200, backend: str = "mjx", **env_kwargs: Any):
        super().__init__("ant", max_steps, backend, **env_kwargs)

    @property
    def default_params(self) -> AntDirectionParams:
        """Forward, +x: a placeholder; draw directions with `sample_direction`."""
        return AntDirectionParams()

    def validate_params(self, params: AntDirectionParams) -> None:
        check_leaf_shape(params, "direction", (2,), self.name)
        unit = lambda v: np.abs(np.linalg.norm(v, axis=-1) - 1.0) < 1e-4  # noqa: E731
        check_field(params, "direction", unit, "a unit vector [2] (cos t, sin t)", self.name)

    def _task_reward(self, info: dict, params: AntDirectionParams) -> tuple[jax.Array, dict]:
        direction = self._task_leaf(params, "direction", (2,))
        velocity = direction[0] * info["x_velocity"] + direction[1] * info["y_velocity"]
        # Brax's ant reward with its forward term (x velocity) replaced by the projected one.
        rest = info["reward_survive"] + info["reward_ctrl"] + info["reward_contact"]
        forward = {key: velocity for key in ("reward_forward", "forward_reward", "velocity")}
        return velocity + rest, {**info, **forward}


def sample_velocity(key: jax.Array, params: CheetahVelocityParams) -> CheetahVelocityParams:
    """`params` with v* ~ U[velocity_low, velocity_high]."""
    target = jax.random.uniform(key, (), jnp.float32, params.velocity_low, params.velocity_high)
    return params.replace(target_velocity=target)


def sample_direction(key: jax.Array, params: AntDirectionParams) -> AntDirectionParams:
    """`params` with d = (+-1, 0), each with probability 1/2, where `params.forward_backward`,
    else d = (cos t, sin t), t ~ U[0, 2 pi)."""
    key_sign, key_angle = jax.random.split(key)
    sign = jnp.where(jax.random.bernoulli(key_sign), 1.0, -1.0)
    angle = jax.random.uniform(key_angle, (), jnp.float32, 0.0, 2.0 * jnp.pi)
    planar = jnp.stack([jnp.cos(angle), jnp.sin(angle)])
    axial = jnp.stack([sign, 0.0]).astype(jnp.float32)
    return params.replace(direction=jnp.where(params.forward_backward, axial, planar))


def sample_task(key: jax.Array, params: Any) -> Any:
    """`sample_velocity` or `sample_direction`, by the type of `params`."""
    if isinstance(params, CheetahVelocityParams):
        return sample_velocity(key, params)
    if isinstance(params, AntDirectionParams):
        return sample_direction(key, params)
    raise TypeError(
        "mjx_tasks.sample_task: params must be CheetahVelocityParams or AntDirectionParams, got "
        f"{type(params).__name__}"
    )
