"""CartPole: balance a pole on a cart pushed left or right by a fixed force.

Reference: gymnasium's `CartPole-v1` (`gymnasium/envs/classic_control/cartpole.py`), after Barto,
Sutton and Anderson, "Neuronlike adaptive elements that can solve difficult learning control
problems" (1983). Same dynamics (explicit Euler), reward (+1 on every step, the terminating one
included), termination and start distribution; the 500-step limit is applied by `TimeLimit`.
`render` draws a state as gymnasium's picture does (a cart on a track, the pole leaning by its
angle), in NumPy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from rlsuite.envs.rendering import Canvas

from rlsuite.environment import Environment, param_fields
from rlsuite.environment.spaces import Box, Discrete
from rlsuite.ops.validators import check_positive


@struct.dataclass
class CartPoleParams:
    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length
    force_mag: float = 10.0
    tau: float = 0.02  # seconds between state updates
    theta_threshold_radians: float = 12 * 2 * math.pi / 360
    x_threshold: float = 2.4


@struct.dataclass
class CartPoleState:
    x: jax.Array
    x_dot: jax.Array
    theta: jax.Array
    theta_dot: jax.Array


class CartPole(Environment):
    """Observation `[x, x_dot, theta, theta_dot]`; action 0 pushes left, 1 pushes right."""

    max_episode_steps = 500

    @property
    def default_params(self) -> CartPoleParams:
        return CartPoleParams()

    def reset_env(self, key: jax.Array, params: CartPoleParams):
        x, x_dot, theta, theta_dot = jax.random.uniform(key, (4,), jnp.float32, -0.05, 0.05)
        state = CartPoleState(x=x, x_dot=x_dot, theta=theta, theta_dot=theta_dot)
        return self._obs(state), state

    def step_env(self, key: jax.Array, state: CartPoleState, action: jax.Array, params):
        total_mass = params.masspole + params.masscart
        polemass_length = params.masspole * params.length
        force = jnp.where(action == 1, params.force_mag, -params.force_mag)
        costheta, sintheta = jnp.cos(state.theta), jnp.sin(state.theta)
        temp = (force + polemass_length * state.theta_dot**2 * sintheta) / total_mass
        thetaacc = (params.gravity * sintheta - costheta * temp) / (
            params.length * (4.0 / 3.0 - params.masspole * costheta**2 / total_mass)
        )
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        state = CartPoleState(
            x=state.x + params.tau * state.x_dot,
            x_dot=state.x_dot + params.tau * xacc,
            theta=state.theta + params.tau * state.theta_dot,
            theta_dot=state.theta_dot + params.tau * thetaacc,
        )
        terminated = (jnp.abs(state.x) > params.x_threshold) | (
            jnp.abs(state.theta) > params.theta_threshold_radians
        )
        reward = jnp.float32(1.0)
        return self._obs(state), state, reward, terminated, jnp.bool_(False), {}

    def _obs(self, state: CartPoleState) -> jax.Array:
        return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)

    def observation_space(self, params: CartPoleParams) -> Box:
        inf = float("inf")
        high = [2 * params.x_threshold, inf, 2 * params.theta_threshold_radians, inf]
        return Box([-h for h in high], high, (4,))

    def action_space(self, params: CartPoleParams) -> Discrete:
        return Discrete(2)

    def validate_params(self, params: CartPoleParams) -> None:
        check_positive(params, *param_fields(params), owner=self.name)

    def render(self, state: CartPoleState, params: CartPoleParams, width: int, height: int):
        """uint8 RGB `[height, width, 3]`: the track (black) at a quarter of the height from
        the bottom, the cart (dark grey, 0.4 x 0.24 m) centred at `x` on it, the pole (brown,
        `2 * length` long) from the cart's axle (blue) leaning right for `theta > 0`, on white.
        The track spans `+-1.25 x_threshold` metres across the width."""
        scale = width / (2.5 * float(params.x_threshold))  # pixels per metre
        x, theta = float(np.asarray(state.x)), float(np.asarray(state.theta))
        canvas = Canvas(width, height, (255, 255, 255))
        track = 0.75 * height
        canvas.rectangle(0, track - 0.5, width, track + 0.5, (0, 0, 0))
        cart_x, cart_w, cart_h = width / 2 + x * scale, 0.4 * scale, 0.24 * scale
        canvas.rectangle(cart_x - cart_w / 2, track - cart_h, cart_x + cart_w / 2, track, (40,) * 3)
        axle_y, pole = track - 0.75 * cart_h, 2 * float(params.length) * scale
        tip = (cart_x + pole * math.sin(theta), axle_y - pole * math.cos(theta))
        canvas.segment(cart_x, axle_y, *tip, 0.04 * scale, (202, 152, 101))
        canvas.disk(cart_x, axle_y, 0.03 * scale, (129, 132, 203))
        return canvas.image
