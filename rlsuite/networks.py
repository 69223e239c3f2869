"""Networks shared by the agents: MLP torsos, policy heads (distrax distributions) and critics.

Initialisation follows the PPO implementation details (Huang et al., 2022): orthogonal weights with
gain sqrt(2) in hidden layers, 0.01 on the policy output and 1.0 on the value output, zero biases.
Orthogonal initialisation is a QR decomposition; on CPU a QR batched by `vmap` can deadlock XLA's
thread pool (DESIGN.md section 7), so per-seed parameters are initialised with `jax.lax.map` over
the seed keys (see `rlsuite.driver.init_batch`), never under `vmap`.
"""

from __future__ import annotations

from collections.abc import Sequence

import distrax
import flax.linen as nn
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "elu": nn.elu, "gelu": nn.gelu}


def activation_fn(name: str):
    """The activation called `name`; a `ValueError` lists the allowed names."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; allowed: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


class MLP(nn.Module):
    """Dense layers with an activation between them; the last is linear with gain `out_gain`."""

    hidden_sizes: Sequence[int]
    out_size: int
    activation: str = "tanh"
    out_gain: float = 1.0

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        act = activation_fn(self.activation)
        for size in self.hidden_sizes:
            x = act(nn.Dense(size, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
        return nn.Dense(self.out_size, kernel_init=nn.initializers.orthogonal(self.out_gain))(x)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs. `__call__(obs) -> (distribution, value)`.

    Discrete actions (`num_actions` set): a `distrax.Categorical` over logits. Continuous actions
    (`action_dim` set): a `distrax.MultivariateNormalDiag` with a state-independent log standard
    deviation (initialised to 0), unsquashed; clip actions to the bounds in the environment.
    """

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    num_actions: int | None = None
    action_dim: int | None = None

    @nn.compact
    def __call__(self, obs: jnp.ndarray):
        value = MLP(self.hidden_sizes, 1, self.activation, 1.0)(obs)[..., 0]
        if self.num_actions is not None:
            logits = MLP(self.hidden_sizes, self.num_actions, self.activation, 0.01)(obs)
            return distrax.Categorical(logits=logits), value
        mean = MLP(self.hidden_sizes, self.action_dim, self.activation, 0.01)(obs)
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std) * jnp.ones_like(mean)), value
