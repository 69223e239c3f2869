"""Acrobot: swing the tip of a two-link pendulum, actuated at the middle joint, above a line.

Reference: gymnasium's `Acrobot-v1` (`gymnasium/envs/classic_control/acrobot.py`), after Sutton,
"Generalization in reinforcement learning: successful examples using sparse coarse coding" (1996)
and Sutton & Barto, "Reinforcement Learning: An Introduction" (the "book" dynamics). Same RK4 step,
angle wrapping, velocity bounds, reward (-1 per step, 0 on the terminating one), termination and
start distribution; the 500-step limit is applied by `TimeLimit`. The second link's length does not
enter the dynamics or the termination test (as in gymnasium), so it is not a parameter.
`render` draws a state as gymnasium's picture does (both links from the pivot, the target line
above it), in NumPy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas

from rlsuite.environment import Environment
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_field, check_positive


@struct.dataclass
class AcrobotParams:
    dt: float = 0.2
    link_length_1: float = 1.0
    link_mass_1: float = 1.0
    link_mass_2: float = 1.0
    link_com_pos_1: float = 0.5  # position of the centre of mass of link 1
    link_com_pos_2: float = 0.5
    link_moi: float = 1.0  # moment of inertia of both links
    max_vel_1: float = 4 * math.pi
    max_vel_2: float = 9 * math.pi
    gravity: float = 9.8
    torque_noise_max: float = 0.0  # the torque gets U(-max, max) noise


@struct.dataclass
class AcrobotState:
    theta1: jax.Array
    theta2: jax.Array
    dtheta1: jax.Array
    dtheta2: jax.Array


class Acrobot(Environment):
    """Observation `[cos t1, sin t1, cos t2, sin t2, dt1, dt2]`; action `a` is torque `a - 1`."""

    max_episode_steps = 500

    @property
    def default_params(self) -> AcrobotParams:
        return AcrobotParams()

    def reset_env(self, key: jax.Array, params: AcrobotParams):
        theta1, theta2, dtheta1, dtheta2 = jax.random.uniform(key, (4,), jnp.float32, -0.1, 0.1)
        state = AcrobotState(theta1=theta1, theta2=theta2, dtheta1=dtheta1, dtheta2=dtheta2)
        return self._obs(state), state

    def step_env(self, key: jax.Array, state: AcrobotState, action: jax.Array, params):
        dtype = state.theta1.dtype
        noise = jax.random.uniform(
            key, (), dtype, -params.torque_noise_max, params.torque_noise_max
        )
        torque = (action - 1).astype(dtype) + noise
        s = jnp.stack([state.theta1, state.theta2, state.dtheta1, state.dtheta2])
        s = _rk4(lambda y: _dsdt(y, torque, params), s, params.dt)
        state = AcrobotState(
            theta1=_wrap(s[0], -math.pi, math.pi),
            theta2=_wrap(s[1], -math.pi, math.pi),
            dtheta1=jnp.clip(s[2], -params.max_vel_1, params.max_vel_1),
            dtheta2=jnp.clip(s[3], -params.max_vel_2, params.max_vel_2),
        )
        terminated = -jnp.cos(state.theta1) - jnp.cos(state.theta2 + state.theta1) > 1.0
        reward = jnp.where(terminated, 0.0, -1.0).astype(jnp.float32)
        return self._obs(state), state, reward, terminated, jnp.bool_(False), {}

    def _obs(self, state: AcrobotState) -> jax.Array:
        t1, t2 = state.theta1, state.theta2
        obs = [jnp.cos(t1), jnp.sin(t1), jnp.cos(t2), jnp.sin(t2), state.dtheta1, state.dtheta2]
        return jnp.stack(obs).astype(jnp.float32)

    def observation_space(self, params: AcrobotParams) -> Box:
        high = [1.0, 1.0, 1.0, 1.0, params.max_vel_1, params.max_vel_2]
        return Box([-h for h in high], high, (6,))

    def action_space(self, params: AcrobotParams) -> Discrete:
        return Discrete(3)

    def validate_params(self, params: AcrobotParams) -> None:
        check_positive(
            params,
            "dt",
            "link_length_1",
            "link_mass_1",
            "link_mass_2",
            "link_com_pos_1",
            "link_com_pos_2",
            "link_moi",
            "max_vel_1",
            "max_vel_2",
            "gravity",
            owner=self.name,
        )
        check_field(params, "torque_noise_max", lambda v: v >= 0, "a value >= 0", self.name)

    def render(self, state: AcrobotState, params: AcrobotParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`, x right and y up from the fixed pivot at the image's
        centre, `min(width, height) / (2 (link_length_1 + 1.2))` pixels per metre, on white:
        the target line (black, 2 px, across the width) 1 m above the pivot, the height the
        termination test `-cos t1 - cos(t1 + t2) > 1` asks of the tip; the first link
        (`link_length_1` long) from the pivot to `l1 (sin t1, -cos t1)` and the second (1 m,
        gymnasium's) on to `+ (sin(t1 + t2), -cos(t1 + t2))`, both teal (0, 204, 204) and
        0.2 m thick: hanging straight down at `t1 = t2 = 0`, a growing `t1` swinging the first
        to the right; a yellow (204, 204, 0) disk of radius 0.1 m on each joint."""
        t1, t2 = float(np.asarray(state.theta1)), float(np.asarray(state.theta2))
        l1 = float(params.link_length_1)
        scale = min(width, height) / (2 * (l1 + 1.2))  # pixels per metre
        canvas = Canvas(width, height, (255, 255, 255))
        x0, y0 = width / 2, height / 2
        canvas.rectangle(0, y0 - scale - 1, width, y0 - scale + 1, (0, 0, 0))
        x1, y1 = x0 + l1 * scale * math.sin(t1), y0 + l1 * scale * math.cos(t1)
        x2, y2 = x1 + scale * math.sin(t1 + t2), y1 + scale * math.cos(t1 + t2)
        for a, b, c, d in ((x0, y0, x1, y1), (x1, y1, x2, y2)):
            canvas.segment(a, b, c, d, 0.1 * scale, (0, 204, 204))
        for x, y in ((x0, y0), (x1, y1)):
            canvas.disk(x, y, 0.1 * scale, (204, 204, 0))
        return canvas.image


def _dsdt(s: jax.Array, torque: jax.Array, p: AcrobotParams) -> jax.Array:
    """Time derivative of `[theta1, theta2, dtheta1, dtheta2]` (the "book" equations)."""
    theta1, theta2, dtheta1, dtheta2 = s
    m1, m2, l1, g = p.link_mass_1, p.link_mass_2, p.link_length_1, p.gravity
    lc1, lc2, i1, i2 = p.link_com_pos_1, p.link_com_pos_2, p.link_moi, p.link_moi
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(theta2)) + i1 + i2
    d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(theta2)) + i2
    phi2 = m2 * lc2 * g * jnp.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (
        -m2 * l1 * lc2 * dtheta2**2 * jnp.sin(theta2)
        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * jnp.sin(theta2)
        + (m1 * lc1 + m2 * l1) * g * jnp.cos(theta1 - math.pi / 2)
        + phi2
    )
    ddtheta2 = (torque + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * jnp.sin(theta2) - phi2) / (
        m2 * lc2**2 + i2 - d2**2 / d1
    )
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return jnp.stack([dtheta1, dtheta2, ddtheta1, ddtheta2])


def _rk4(derivs, y0: jax.Array, dt) -> jax.Array:
    """One classical fourth-order Runge-Kutta step of length `dt`."""
    k1 = derivs(y0)
    k2 = derivs(y0 + dt / 2.0 * k1)
    k3 = derivs(y0 + dt / 2.0 * k2)
    k4 = derivs(y0 + dt * k3)
    return y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def _wrap(x: jax.Array, low: float, high: float) -> jax.Array:
    """Shift `x` by whole periods `high - low` into `[low, high]` (gymnasium's `wrap`)."""
    period = high - low
    x = jnp.where(x > high, x - period * jnp.ceil((x - high) / period), x)
    return jnp.where(x < low, x + period * jnp.ceil((low - x) / period), x)
