"""Multi-step return and advantage estimators for a single time-major stream.

All inputs are time-major with time on axis 0: shape ``[T]`` or ``[T, *batch]`` (e.g.
``[num_steps, num_envs]``). Step ``t`` is the transition ``(obs_t, a_t, r_t, next_obs_t)`` with
flags ``terminated_t`` and ``truncated_t``; ``next_values[t] = V(next_obs_t)`` where ``next_obs_t``
is the observation *before* any auto-reset (``info["final_observation"]`` at an episode end).

Bootstrapping contract (docs/design.md section 3):

* ``terminated_t`` cuts the bootstrap: the target at ``t`` uses ``gamma * (1 - terminated_t)``.
* ``terminated_t | truncated_t`` cuts the trace: nothing from step ``t + 1`` (a new episode) flows
  back into step ``t``.
* a truncated (time-limit) step still bootstraps, from ``V(next_obs_t)`` of the true last
  observation, which is why ``next_values`` is passed separately from ``values``.
* the end of the data is treated like a truncation: the last step bootstraps from ``next_values``.

``gamma`` and ``lambda_`` are scalars (Python floats or traced rank-0 arrays, so they can be
vmapped as hyperparameters). ``terminated`` / ``truncated`` may be bool or float arrays.

The outputs are regression targets (or policy-gradient weights), so by default they are wrapped in
``jax.lax.stop_gradient``; pass ``stop_target_gradients=False`` to differentiate through them
(e.g. Dreamer-style actor losses through lambda returns).
"""

import chex
import jax
import jax.numpy as jnp

Array = chex.Array
Scalar = float | chex.Array


def _prepare(floats, dones, gamma, lambda_=0.0):
    """Asserts ranks and dtypes; returns jax arrays, with ``dones`` cast to the float dtype."""
    floats = [jnp.asarray(x) for x in floats]
    dones = [jnp.asarray(x) for x in dones]
    if floats[0].ndim < 1:
        raise ValueError(f"rewards must have a leading time axis, got shape {floats[0].shape}.")
    chex.assert_type(floats, float)
    chex.assert_equal_shape([*floats, *dones])
    chex.assert_rank([gamma, lambda_], 0)
    for d in dones:
        if not (jnp.issubdtype(d.dtype, jnp.bool_) or jnp.issubdtype(d.dtype, jnp.floating)):
            raise TypeError(f"terminated/truncated must be bool or float, got {d.dtype}.")
    return floats, [d.astype(floats[0].dtype) for d in dones]


def _maybe_stop(x, stop_target_gradients):
    return jax.lax.stop_gradient(x) if stop_target_gradients else x


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: Scalar,
    lambda_: Scalar,
    stop_target_gradients: bool = True,
) -> Array:
    """Generalised advantage estimation (Schulman et al. 2016, arXiv:1506.02438), truncation-aware.

    ``delta_t = r_t + gamma (1 - terminated_t) next_values_t - values_t`` and
    ``A_t = delta_t + gamma lambda (1 - (terminated_t | truncated_t)) A_{t+1}``, with
    ``A_T = 0`` beyond the last step.

    Args:
      rewards, values, next_values, terminated, truncated: ``[T, *batch]``;
        ``values[t] = V(obs_t)``, ``next_values[t] = V(next_obs_t)`` (pre-reset next observation).
      gamma, lambda_: scalar discount and trace parameter.
      stop_target_gradients: wrap the result in ``stop_gradient`` (default True).

    Returns:
      advantages ``A_t``, shape ``[T, *batch]``.
    """
    (rewards, values, next_values), (term_t, trunc_t) = _prepare(
        [rewards, values, next_values], [terminated, truncated], gamma, lambda_
    )
    continue_t = (1.0 - term_t) * (1.0 - trunc_t)
    delta_t = rewards + gamma * (1.0 - term_t) * next_values - values

    def body(adv_tp1, xs):
        delta, cont = xs
        adv = delta + gamma * lambda_ * cont * adv_tp1
        return adv, adv

    _, adv_t = jax.lax.scan(body, jnp.zeros_like(delta_t[0]), (delta_t, continue_t), reverse=True)
    return _maybe_stop(adv_t, stop_target_gradients)


def td_lambda(
    rewards: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: Scalar,
    lambda_: Scalar,
    stop_target_gradients: bool = True,
) -> Array:
    """TD(lambda) returns (Sutton & Barto 2018, section 12.1), truncation-aware.

    ``G_t = r_t + gamma (1 - term_t) [(1 - lambda) nv_t + lambda G_{t+1}]`` while the episode
    continues; at a done step (``term_t | trunc_t``) and at the last step of the data
    ``G_t = r_t + gamma (1 - term_t) nv_t``.

    Args:
      rewards, next_values, terminated, truncated: ``[T, *batch]``.
      gamma, lambda_: scalar discount and trace parameter.
      stop_target_gradients: wrap the result in ``stop_gradient`` (default True).

    Returns:
      returns ``G_t``, shape ``[T, *batch]``.
    """
    (rewards, next_values), (term_t, trunc_t) = _prepare(
        [rewards, next_values], [terminated, truncated], gamma, lambda_
    )
    discount_t = gamma * (1.0 - term_t)
    # Weight on G_{t+1}: lambda while the episode continues, 0 after a done step.
    mix_t = lambda_ * (1.0 - term_t) * (1.0 - trunc_t)

    def body(g_tp1, xs):
        r, disc, mix, nv = xs
        g = r + disc * ((1.0 - mix) * nv + mix * g_tp1)
        return g, g

    # Starting from nv_{T-1} makes the last step r + gamma (1 - term) nv for any lambda.
    xs = (rewards, discount_t, mix_t, next_values)
    _, g_t = jax.lax.scan(body, next_values[-1], xs, reverse=True)
    return _maybe_stop(g_t, stop_target_gradients)


def n_step_returns(
    rewards: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: Scalar,
    n: int,
    stop_target_gradients: bool = True,
) -> Array:
    """n-step bootstrapped returns, truncation-aware.

    ``G_t = sum_{k<m} gamma^k r_{t+k} + gamma^m (1 - term_{t+m-1}) nv_{t+m-1}`` where ``m <= n`` is
    the number of steps up to and including the first done step in ``[t, t+n)``, or up to the end
    of the data.

    Args:
      rewards, next_values, terminated, truncated: ``[T, *batch]``.
      gamma: scalar discount.
      n: static Python int >= 1, the maximal number of rewards summed.
      stop_target_gradients: wrap the result in ``stop_gradient`` (default True).

    Returns:
      returns ``G_t``, shape ``[T, *batch]``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a Python int >= 1, got {n!r}.")
    (rewards, next_values), (term_t, trunc_t) = _prepare(
        [rewards, next_values], [terminated, truncated], gamma
    )
    discount_t = gamma * (1.0 - term_t)
    # The window continues past t only if step t is not done and t is not the last step.
    cont_t = ((1.0 - term_t) * (1.0 - trunc_t)).at[-1].set(0.0)

    def extend(_, g_k):
        # g_{k+1}[t] = r_t + disc_t (cont_t g_k[t+1] + (1 - cont_t) nv_t)
        g_k_tp1 = jnp.concatenate([g_k[1:], jnp.zeros_like(g_k[:1])])
        return rewards + discount_t * (cont_t * g_k_tp1 + (1.0 - cont_t) * next_values)

    g_1 = rewards + discount_t * next_values
    # Windows never extend beyond the T steps of data, so min(n, T) - 1 extensions suffice
    # (cost O(min(n, T) * T), which is fine for the short n used in practice).
    g_n = jax.lax.fori_loop(0, min(n, rewards.shape[0]) - 1, extend, g_1)
    return _maybe_stop(g_n, stop_target_gradients)


def n_step_transitions(
    rewards: Array,
    terminated: Array,
    truncated: Array,
    gamma: Scalar,
    n: int,
) -> tuple[Array, Array, Array]:
    """n-step replay items from a window of ``T + n - 1`` steps, for its first ``T`` steps.

    For step ``t < T`` let ``m_t <= n`` be the number of steps up to and including the first done
    step (``terminated | truncated``) in ``[t, t + n)``, and ``l_t = t + m_t - 1`` the last of
    them. The item's target is ``R_t + D_t * V(next_obs[l_t])`` with

    ``R_t = sum_{k < m_t} gamma^k r_{t+k}`` and ``D_t = gamma^{m_t} (1 - terminated_{l_t})``,

    so a terminated episode stops bootstrapping and a truncated one bootstraps from its true last
    observation. ``n = 1`` gives ``R_t = r_t``, ``D_t = gamma (1 - terminated_t)``, ``l_t = t``.
    The targets agree with ``n_step_returns`` wherever that has ``n`` steps of data ahead.

    Args:
      rewards, terminated, truncated: ``[T + n - 1, *batch]``, time-major.
      gamma: scalar discount.
      n: static Python int >= 1.

    Returns:
      ``(R, D, last)``: ``[T, *batch]`` summed rewards, discounts, and the int32 time index
      ``l_t`` into the window of the observation to bootstrap from.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a Python int >= 1, got {n!r}.")
    (rewards,), (term, trunc) = _prepare([rewards], [terminated, truncated], gamma)
    num = rewards.shape[0] - (n - 1)
    if num < 1:
        raise ValueError(
            f"a window for n={n} needs more than {n - 1} steps, got {rewards.shape[0]}"
        )
    done = jnp.maximum(term, trunc)
    total = jnp.zeros_like(rewards[:num])
    scale = jnp.ones_like(total)  # gamma^k for the steps still in the window
    alive = jnp.ones_like(total)  # 1 until a done step has been summed
    last = jnp.zeros(total.shape, jnp.int32)
    for k in range(n):
        total = total + alive * scale * rewards[k : k + num]
        last = jnp.where(alive > 0, k, last)
        scale = scale * jnp.where(alive > 0, gamma, 1.0)
        alive = alive * (1.0 - done[k : k + num])
    last = last + jnp.arange(num, dtype=jnp.int32).reshape((num,) + (1,) * (last.ndim - 1))
    discount = scale * (1.0 - jnp.take_along_axis(term, last, axis=0))
    return jax.lax.stop_gradient(total), jax.lax.stop_gradient(discount), last
