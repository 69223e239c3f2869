"""Tests for rlsuite.ops.returns: hand-derived cases, rlax as an oracle, Python-loop references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from rlsuite.ops import returns

# Jitted aliases shared by the tests (compile once per shape; eager scans recompile every call).
# test_jit_and_vmap checks the plain, un-jitted functions against the same references.
gae = jax.jit(returns.gae, static_argnames="stop_target_gradients")
td_lambda = jax.jit(returns.td_lambda, static_argnames="stop_target_gradients")
n_step_returns = jax.jit(returns.n_step_returns, static_argnames=("n", "stop_target_gradients"))

# ---------------------------------------------------------------------------------------------
# Hand-derived cases. gamma = 0.5, lambda = 0.5 (so gamma * lambda = 0.25); every number below is
# a dyadic fraction, exact in float32. Shared data for all three cases:
#   r = [1, 2, 3, 4, 5],  v = V(obs_t) = [4, 4, 8, 4, 8]
# next_values nv[t] = v[t+1] inside an episode, V(true last obs) after a truncation, an arbitrary
# 100 after a termination (must be ignored), and 16 at the last step (bootstrap beyond the data).
# ---------------------------------------------------------------------------------------------
R = [1.0, 2.0, 3.0, 4.0, 5.0]
V = [4.0, 4.0, 8.0, 4.0, 8.0]

CASES = {
    # (a) terminated at t=2. nv = [v1, v2, 100 (terminal), v4, 16]
    # gae: delta = r + 0.5 (1 - term) nv - v
    #   d0 = 1 + 0.5*4 - 4 = -1;  d1 = 2 + 0.5*8 - 4 = 2;  d2 = 3 + 0 - 8 = -5
    #   d3 = 4 + 0.5*8 - 4 = 4;   d4 = 5 + 0.5*16 - 8 = 5
    #   A4 = 5;  A3 = 4 + 0.25*5 = 5.25;  A2 = -5 (cut);  A1 = 2 + 0.25*(-5) = 0.75
    #   A0 = -1 + 0.25*0.75 = -0.8125
    # td_lambda: G4 = 5 + 0.5*16 = 13;  G3 = 4 + 0.5*(0.5*8 + 0.5*13) = 9.25;  G2 = 3 + 0 = 3
    #   G1 = 2 + 0.5*(0.5*8 + 0.5*3) = 4.75;  G0 = 1 + 0.5*(0.5*4 + 0.5*4.75) = 3.1875
    # n=2: G0 = 1 + 0.5*2 + 0.25*8 = 4;  G1 = 2 + 0.5*3 + 0 (term at 2) = 3.5;  G2 = 3
    #   G3 = 4 + 0.5*5 + 0.25*16 = 10.5;  G4 = 5 + 0.5*16 = 13 (end of data)
    # n=3: G0 = 1 + 0.5*2 + 0.25*3 + 0 (term at 2) = 2.75;  G1 = 3.5;  G2 = 3
    #   G3 = 10.5 (end of data after 2 steps);  G4 = 13
    "terminated": dict(
        term=[0, 0, 1, 0, 0],
        trunc=[0, 0, 0, 0, 0],
        nv=[4.0, 8.0, 100.0, 8.0, 16.0],
        gae=[-0.8125, 0.75, -5.0, 5.25, 5.0],
        td=[3.1875, 4.75, 3.0, 9.25, 13.0],
        n2=[4.0, 3.5, 3.0, 10.5, 13.0],
        n3=[2.75, 3.5, 3.0, 10.5, 13.0],
    ),
    # (b) truncated at t=1; V(true last obs) = 12 differs from v2 = 8 (the reset obs).
    # nv = [v1, 12, v3, v4, 16]
    # gae: d0 = 1 + 0.5*4 - 4 = -1;  d1 = 2 + 0.5*12 - 4 = 4;  d2 = 3 + 0.5*4 - 8 = -3
    #   d3 = 4 + 0.5*8 - 4 = 4;  d4 = 5 + 0.5*16 - 8 = 5
    #   A4 = 5;  A3 = 4 + 0.25*5 = 5.25;  A2 = -3 + 0.25*5.25 = -1.6875;  A1 = 4 (cut)
    #   A0 = -1 + 0.25*4 = 0
    # td_lambda: G4 = 13;  G3 = 9.25;  G2 = 3 + 0.5*(0.5*4 + 0.5*9.25) = 6.3125
    #   G1 = 2 + 0.5*12 = 8 (bootstraps, trace cut);  G0 = 1 + 0.5*(0.5*4 + 0.5*8) = 4
    # n=2: G0 = 1 + 0.5*2 + 0.25*12 = 5;  G1 = 2 + 0.5*12 = 8;  G2 = 3 + 0.5*4 + 0.25*8 = 7
    #   G3 = 4 + 0.5*5 + 0.25*16 = 10.5;  G4 = 13
    # n=3: G0 = 5 (window stops at the truncation);  G1 = 8
    #   G2 = 3 + 0.5*4 + 0.25*5 + 0.125*16 = 8.25;  G3 = 10.5;  G4 = 13
    "truncated": dict(
        term=[0, 0, 0, 0, 0],
        trunc=[0, 1, 0, 0, 0],
        nv=[4.0, 12.0, 4.0, 8.0, 16.0],
        gae=[0.0, 4.0, -1.6875, 5.25, 5.0],
        td=[4.0, 8.0, 6.3125, 9.25, 13.0],
        n2=[5.0, 8.0, 7.0, 10.5, 13.0],
        n3=[5.0, 8.0, 8.25, 10.5, 13.0],
    ),
    # (c) terminated at t=1 and truncated at t=3 (V(true last obs) = 12).
    # nv = [v1, 100 (terminal), v3, 12, 16]
    # gae: d0 = 1 + 2 - 4 = -1;  d1 = 2 + 0 - 4 = -2;  d2 = 3 + 0.5*4 - 8 = -3
    #   d3 = 4 + 0.5*12 - 4 = 6;  d4 = 5 + 8 - 8 = 5
    #   A4 = 5;  A3 = 6 (cut);  A2 = -3 + 0.25*6 = -1.5;  A1 = -2 (cut);  A0 = -1 + 0.25*(-2) = -1.5
    # td_lambda: G4 = 13;  G3 = 4 + 0.5*12 = 10;  G2 = 3 + 0.5*(0.5*4 + 0.5*10) = 6.5;  G1 = 2
    #   G0 = 1 + 0.5*(0.5*4 + 0.5*2) = 2.5
    # n=2: G0 = 1 + 0.5*2 + 0 = 2;  G1 = 2;  G2 = 3 + 0.5*4 + 0.25*12 = 8;  G3 = 4 + 0.5*12 = 10
    #   G4 = 13.   n=3: identical (every window hits a done or the end within 2 steps)
    "both": dict(
        term=[0, 1, 0, 0, 0],
        trunc=[0, 0, 0, 1, 0],
        nv=[4.0, 100.0, 4.0, 12.0, 16.0],
        gae=[-1.5, -2.0, -1.5, 6.0, 5.0],
        td=[2.5, 2.0, 6.5, 10.0, 13.0],
        n2=[2.0, 2.0, 8.0, 10.0, 13.0],
        n3=[2.0, 2.0, 8.0, 10.0, 13.0],
    ),
}


def _case(name, done_dtype):
    c = CASES[name]
    f = lambda x: jnp.asarray(x, jnp.float32)
    d = lambda x: jnp.asarray(x).astype(done_dtype)
    return f(R), f(V), f(c["nv"]), d(c["term"]), d(c["trunc"]), c


@pytest.mark.parametrize("done_dtype", [jnp.bool_, jnp.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_derived(name, done_dtype):
    r, v, nv, term, trunc, c = _case(name, done_dtype)
    np.testing.assert_allclose(gae(r, v, nv, term, trunc, 0.5, 0.5), c["gae"], atol=1e-6)
    np.testing.assert_allclose(td_lambda(r, nv, term, trunc, 0.5, 0.5), c["td"], atol=1e-6)
    np.testing.assert_allclose(n_step_returns(r, nv, term, trunc, 0.5, 2), c["n2"], atol=1e-6)
    np.testing.assert_allclose(n_step_returns(r, nv, term, trunc, 0.5, 3), c["n3"], atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Plain-Python references, written from the definitions (float64, one trajectory).
# ---------------------------------------------------------------------------------------------
def gae_ref(r, v, nv, term, trunc, gamma, lam):
    adv, acc = np.zeros(len(r)), 0.0
    for t in reversed(range(len(r))):
        delta = r[t] + gamma * (1 - term[t]) * nv[t] - v[t]
        acc = delta + gamma * lam * (1 - max(term[t], trunc[t])) * acc
        adv[t] = acc
    return adv


def td_lambda_ref(r, nv, term, trunc, gamma, lam):
    out, T = np.zeros(len(r)), len(r)
    for t in reversed(range(T)):
        if term[t] or trunc[t] or t == T - 1:
            out[t] = r[t] + gamma * (1 - term[t]) * nv[t]
        else:
            out[t] = r[t] + gamma * ((1 - lam) * nv[t] + lam * out[t + 1])
    return out


def n_step_ref(r, nv, term, trunc, gamma, n):
    out, T = np.zeros(len(r)), len(r)
    for t in range(T):
        g, k = 0.0, t
        while True:  # sum rewards until a done step, n rewards, or the end of the data
            g += gamma ** (k - t) * r[k]
            if term[k] or trunc[k] or k == T - 1 or k - t + 1 == n:
                break
            k += 1
        out[t] = g + gamma ** (k - t + 1) * (1 - term[k]) * nv[k]
    return out


def _random(seed, T=12, batch=(), p_term=0.15, p_trunc=0.15):
    rng = np.random.default_rng(seed)
    shape = (T, *batch)
    r = rng.normal(size=shape).astype(np.float32)
    v = rng.normal(size=shape).astype(np.float32)
    nv = rng.normal(size=shape).astype(np.float32)
    term = rng.random(shape) < p_term
    trunc = rng.random(shape) < p_trunc
    return r, v, nv, term, trunc


@pytest.mark.parametrize("seed", range(4))
def test_against_python_loop(seed):
    r, v, nv, term, trunc = _random(seed, T=15)
    for gamma, lam in [(0.9, 0.8), (0.5, 1.0), (0.99, 0.0)]:
        np.testing.assert_allclose(
            gae(r, v, nv, term, trunc, gamma, lam),
            gae_ref(r, v, nv, term, trunc, gamma, lam),
            rtol=1e-5,
            atol=1e-5,
        )
        np.testing.assert_allclose(
            td_lambda(r, nv, term, trunc, gamma, lam),
            td_lambda_ref(r, nv, term, trunc, gamma, lam),
            rtol=1e-5,
            atol=1e-5,
        )
    for n in [1, 2, 3, 5, 40]:  # 40 > T: windows end at dones or the end of the data
        np.testing.assert_allclose(
            n_step_returns(r, nv, term, trunc, 0.9, n),
            n_step_ref(r, nv, term, trunc, 0.9, n),
            rtol=1e-5,
            atol=1e-5,
        )


# ---------------------------------------------------------------------------------------------
# rlax as an oracle. rlax has one stream of values v[0..T] and discounts; with no truncation and
# consistent values (next_values[t] == values[t+1]) and discount_t = gamma * (1 - term_t) the
# quantities coincide. rlax's end of data: lambda_returns starts its recursion from v_T, and
# n_step_bootstrapped_returns pads rewards with 0, discounts with 1 and values with v_T, so both
# bootstrap from v_T at the end exactly as ours do (we checked: no differing region remains, so we
# compare every step). A truncation cannot be written in rlax's GAE (its delta bootstraps from
# values[t+1], the post-reset obs); in lambda_returns / n_step it can, as lambda_t = 0 at the
# truncated step, which we also compare.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_against_rlax(seed):
    rng = np.random.default_rng(100 + seed)
    T, gamma, lam = 13, 0.9, 0.75
    r = jnp.asarray(rng.normal(size=T), jnp.float32)
    values = jnp.asarray(rng.normal(size=T + 1), jnp.float32)  # V(obs_0), ..., V(obs_T)
    term = jnp.asarray(rng.random(T) < 0.2)
    no_trunc = jnp.zeros(T, bool)
    v, nv = values[:-1], values[1:]
    discount = gamma * (1.0 - term.astype(jnp.float32))

    np.testing.assert_allclose(
        gae(r, v, nv, term, no_trunc, gamma, lam),
        rlax.truncated_generalized_advantage_estimation(r, discount, lam, values),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        td_lambda(r, nv, term, no_trunc, gamma, lam),
        rlax.lambda_returns(r, discount, nv, lam),
        rtol=1e-5,
        atol=1e-5,
    )
    for n in [1, 2, 3, 5, 20]:
        np.testing.assert_allclose(
            n_step_returns(r, nv, term, no_trunc, gamma, n),
            rlax.n_step_bootstrapped_returns(r, discount, nv, n),
            rtol=1e-5,
            atol=1e-5,
        )

    # Truncations expressed in rlax as a per-step lambda of 0 (trace cut, bootstrap kept).
    trunc = jnp.asarray(rng.random(T) < 0.2)
    cut = 1.0 - trunc.astype(jnp.float32)
    np.testing.assert_allclose(
        td_lambda(r, nv, term, trunc, gamma, lam),
        rlax.lambda_returns(r, discount, nv, lam * cut),
        rtol=1e-5,
        atol=1e-5,
    )
    for n in [2, 4]:
        np.testing.assert_allclose(
            n_step_returns(r, nv, term, trunc, gamma, n),
            rlax.n_step_bootstrapped_returns(r, discount, nv, n, lambda_t=cut),
            rtol=1e-5,
            atol=1e-5,
        )


# ---------------------------------------------------------------------------------------------
# Consistency between the estimators.
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_gae_plus_values_is_td_lambda(seed):
    # Consistent values: inside an episode nv[t] = v[t+1]; after a done nv[t] is the value of the
    # (pre-reset) last obs, which both estimators use in the same way, truncations included.
    r, v, nv, term, trunc = _random(seed, T=16, p_term=0.2, p_trunc=0.2)
    done = term | trunc
    nv = np.where(done, nv, np.append(v[1:], nv[-1]))
    for lam in [0.0, 0.6, 1.0]:
        np.testing.assert_allclose(
            gae(r, v, nv, term, trunc, 0.9, lam) + v,
            td_lambda(r, nv, term, trunc, 0.9, lam),
            rtol=1e-5,
            atol=1e-5,
        )


@pytest.mark.parametrize("seed", range(3))
def test_lambda_zero_is_one_step(seed):
    r, _, nv, term, trunc = _random(seed)
    np.testing.assert_allclose(
        td_lambda(r, nv, term, trunc, 0.8, 0.0),
        n_step_returns(r, nv, term, trunc, 0.8, 1),
        rtol=1e-6,
    )


@pytest.mark.parametrize("seed", range(3))
def test_lambda_one_no_dones_is_monte_carlo(seed):
    r, _, nv, _, _ = _random(seed, T=10)
    no = np.zeros(10, bool)
    gamma = 0.9
    # G_t = sum_{k>=t} gamma^(k-t) r_k + gamma^(T-t) nv_{T-1}
    mc = [
        sum(gamma ** (k - t) * r[k] for k in range(t, 10)) + gamma ** (10 - t) * nv[-1]
        for t in range(10)
    ]
    np.testing.assert_allclose(td_lambda(r, nv, no, no, gamma, 1.0), mc, rtol=1e-5)
    np.testing.assert_allclose(n_step_returns(r, nv, no, no, gamma, 10), mc, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# jit, vmap over trajectories and over gammas, time-major batch axes.
# ---------------------------------------------------------------------------------------------
FNS = {
    "gae": lambda r, v, nv, te, tr, g: returns.gae(r, v, nv, te, tr, g, 0.7),
    "td_lambda": lambda r, v, nv, te, tr, g: returns.td_lambda(r, nv, te, tr, g, 0.7),
    "n_step": lambda r, v, nv, te, tr, g: returns.n_step_returns(r, nv, te, tr, g, 3),
}
REFS = {
    "gae": lambda r, v, nv, te, tr, g: gae_ref(r, v, nv, te, tr, g, 0.7),
    "td_lambda": lambda r, v, nv, te, tr, g: td_lambda_ref(r, nv, te, tr, g, 0.7),
    "n_step": lambda r, v, nv, te, tr, g: n_step_ref(r, nv, te, tr, g, 3),
}


@pytest.mark.parametrize("name", sorted(FNS))
def test_jit_and_vmap(name):
    fn, ref = FNS[name], REFS[name]
    B = 5
    data = _random(7, T=9, batch=(B,))  # time-major [T, B]
    col = lambda b: [x[:, b] for x in data]

    expected = np.stack([ref(*col(b), 0.9) for b in range(B)], axis=1)
    np.testing.assert_allclose(fn(*data, 0.9), expected, rtol=1e-5, atol=1e-5)  # [T, B] directly
    np.testing.assert_allclose(jax.jit(fn)(*data, 0.9), expected, rtol=1e-5, atol=1e-5)
    vmapped = jax.jit(jax.vmap(fn, in_axes=(1, 1, 1, 1, 1, None), out_axes=1))
    np.testing.assert_allclose(vmapped(*data, 0.9), expected, rtol=1e-5, atol=1e-5)

    # vmap over a batch of traced gammas (a hyperparameter sweep) on one trajectory.
    gammas = jnp.array([0.0, 0.5, 0.9, 0.99])
    swept = jax.jit(jax.vmap(fn, in_axes=(None,) * 5 + (0,)))(*col(0), gammas)
    expected = np.stack([ref(*col(0), float(g)) for g in gammas])
    np.testing.assert_allclose(swept, expected, rtol=1e-5, atol=1e-5)


def test_vmap_over_lambda():
    r, v, nv, term, trunc = _random(3)
    lams = jnp.array([0.0, 0.5, 1.0])
    out = jax.vmap(lambda lam: returns.gae(r, v, nv, term, trunc, 0.9, lam))(lams)
    expected = np.stack([gae_ref(r, v, nv, term, trunc, 0.9, float(lam)) for lam in lams])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_stop_gradient():
    r, v, nv, term, trunc = (jnp.asarray(x) for x in _random(1, T=6))
    loss = lambda nv, stop: returns.td_lambda(r, nv, term, trunc, 0.9, 0.5, stop).sum()
    assert not np.any(jax.grad(loss)(nv, True))
    assert np.any(jax.grad(loss)(nv, False))
    loss = lambda v, stop: returns.gae(r, v, nv, term, trunc, 0.9, 0.5, stop).sum()
    assert not np.any(jax.grad(loss)(v, True))
    assert np.any(jax.grad(loss)(v, False))


@pytest.mark.parametrize("n", [0, -1, 2.0])
def test_bad_n_raises(n):
    r, _, nv, term, trunc = _random(0, T=4)
    with pytest.raises(ValueError, match="n must be"):
        returns.n_step_returns(r, nv, term, trunc, 0.9, n)


def test_bad_inputs_raise():
    r, v, nv, term, trunc = _random(0, T=4)
    with pytest.raises(AssertionError):  # chex shape mismatch
        returns.gae(r, v[:3], nv, term, trunc, 0.9, 0.9)
    with pytest.raises(TypeError, match="bool or float"):
        returns.td_lambda(r, nv, term.astype(np.int32), trunc, 0.9, 0.9)
    with pytest.raises(AssertionError):  # gamma must be a scalar
        returns.td_lambda(r, nv, term, trunc, jnp.ones(4), 0.9)


# ---------------------------------------------------------------------------------------------
# n_step_transitions: replay items (R, D, l) from a window of T + n - 1 steps.
# Hand-derived cases on one window of 6 steps, gamma = 0.5, r = [1, 2, 3, 4, 5, 6]; for n = 1, 2, 3
# the window yields T = 6, 5, 4 items. For each item t: m = number of steps summed (up to and
# including the first done step in [t, t + n)), R = sum_{k<m} 0.5^k r_{t+k},
# D = 0.5^m (1 - term_l), l = t + m - 1.
# ---------------------------------------------------------------------------------------------
WINDOW_R = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]

TRANSITION_CASES = {
    # (a) no done: every window is full.
    #   n=1: R_t = r_t;  D = 0.5;  l = t
    #   n=2: R_t = r_t + 0.5 r_{t+1} = [2, 3.5, 5, 6.5, 8];  D = 0.25;  l = t + 1
    #   n=3: R_t = r_t + 0.5 r_{t+1} + 0.25 r_{t+2}:
    #        t0: 1 + 1 + 0.75 = 2.75;  t1: 2 + 1.5 + 1 = 4.5;  t2: 3 + 2 + 1.25 = 6.25
    #        t3: 4 + 2.5 + 1.5 = 8;  D = 0.125;  l = t + 2
    "none": dict(
        term=[0, 0, 0, 0, 0, 0],
        trunc=[0, 0, 0, 0, 0, 0],
        n1=([1, 2, 3, 4, 5, 6], [0.5] * 6, [0, 1, 2, 3, 4, 5]),
        n2=([2, 3.5, 5, 6.5, 8], [0.25] * 5, [1, 2, 3, 4, 5]),
        n3=([2.75, 4.5, 6.25, 8], [0.125] * 4, [2, 3, 4, 5]),
    ),
    # (b) terminated at t=2.
    #   n=1: D_2 = 0.5 * 0 = 0, else 0.5.
    #   n=2: t0: m=2, R = 1 + 1 = 2, D = 0.25, l=1;  t1: m=2 (done at 2), R = 2 + 1.5 = 3.5,
    #        D = 0.25 * 0 = 0, l=2;  t2: m=1, R = 3, D = 0, l=2;  t3: 4 + 2.5 = 6.5, 0.25, l=4;
    #        t4: 5 + 3 = 8, 0.25, l=5
    #   n=3: t0: m=3 (done at 2), R = 1 + 1 + 0.75 = 2.75, D = 0, l=2;  t1: m=2, R = 3.5, D = 0,
    #        l=2;  t2: m=1, R = 3, D = 0, l=2;  t3: m=3, R = 4 + 2.5 + 1.5 = 8, D = 0.125, l=5
    "terminated": dict(
        term=[0, 0, 1, 0, 0, 0],
        trunc=[0, 0, 0, 0, 0, 0],
        n1=([1, 2, 3, 4, 5, 6], [0.5, 0.5, 0, 0.5, 0.5, 0.5], [0, 1, 2, 3, 4, 5]),
        n2=([2, 3.5, 3, 6.5, 8], [0.25, 0, 0, 0.25, 0.25], [1, 2, 2, 4, 5]),
        n3=([2.75, 3.5, 3, 8], [0, 0, 0, 0.125], [2, 2, 2, 5]),
    ),
    # (c) truncated at t=1: the window stops there but still bootstraps (from next_obs[1]).
    #   n=1: identical to (a).
    #   n=2: t0: m=2, R = 1 + 1 = 2, D = 0.25, l=1;  t1: m=1, R = 2, D = 0.5, l=1;
    #        t2: 3 + 2 = 5, 0.25, l=3;  t3: 6.5, 0.25, l=4;  t4: 8, 0.25, l=5
    #   n=3: t0: m=2, R = 2, D = 0.25, l=1;  t1: m=1, R = 2, D = 0.5, l=1;
    #        t2: m=3, R = 3 + 2 + 1.25 = 6.25, D = 0.125, l=4;  t3: 8, 0.125, l=5
    "truncated": dict(
        term=[0, 0, 0, 0, 0, 0],
        trunc=[0, 1, 0, 0, 0, 0],
        n1=([1, 2, 3, 4, 5, 6], [0.5] * 6, [0, 1, 2, 3, 4, 5]),
        n2=([2, 2, 5, 6.5, 8], [0.25, 0.5, 0.25, 0.25, 0.25], [1, 1, 3, 4, 5]),
        n3=([2, 2, 6.25, 8], [0.25, 0.5, 0.125, 0.125], [1, 1, 4, 5]),
    ),
    # (d) terminated at t=1 and truncated at t=3.
    #   n=1: D_1 = 0, else 0.5.
    #   n=2: t0: m=2, R = 2, D = 0.25 * 0 = 0, l=1;  t1: m=1, R = 2, D = 0, l=1;
    #        t2: m=2 (trunc at 3), R = 3 + 2 = 5, D = 0.25, l=3;  t3: m=1, R = 4, D = 0.5, l=3;
    #        t4: m=2, R = 5 + 3 = 8, D = 0.25, l=5
    #   n=3: t0: m=2, R = 2, D = 0, l=1;  t1: R = 2, D = 0, l=1;  t2: m=2, R = 5, D = 0.25, l=3;
    #        t3: m=1, R = 4, D = 0.5, l=3
    "both": dict(
        term=[0, 1, 0, 0, 0, 0],
        trunc=[0, 0, 0, 1, 0, 0],
        n1=([1, 2, 3, 4, 5, 6], [0.5, 0, 0.5, 0.5, 0.5, 0.5], [0, 1, 2, 3, 4, 5]),
        n2=([2, 2, 5, 4, 8], [0, 0, 0.25, 0.5, 0.25], [1, 1, 3, 3, 5]),
        n3=([2, 2, 5, 4], [0, 0, 0.25, 0.5], [1, 1, 3, 3]),
    ),
    # (e) terminated and truncated at the same (last) step t=5: termination wins (D = 0), and a done
    # at the last step of a window changes only that item's D.
    #   n=1: D_5 = 0;  n=2: R and l as (a), D_4 = 0.25 * 0 = 0;  n=3: as (a), D_3 = 0
    "terminal_last": dict(
        term=[0, 0, 0, 0, 0, 1],
        trunc=[0, 0, 0, 0, 0, 1],
        n1=([1, 2, 3, 4, 5, 6], [0.5, 0.5, 0.5, 0.5, 0.5, 0], [0, 1, 2, 3, 4, 5]),
        n2=([2, 3.5, 5, 6.5, 8], [0.25, 0.25, 0.25, 0.25, 0], [1, 2, 3, 4, 5]),
        n3=([2.75, 4.5, 6.25, 8], [0.125, 0.125, 0.125, 0], [2, 3, 4, 5]),
    ),
}

n_step_transitions = jax.jit(returns.n_step_transitions, static_argnames="n")


@pytest.mark.parametrize("done_dtype", [jnp.bool_, jnp.float32])
@pytest.mark.parametrize("name", sorted(TRANSITION_CASES))
def test_n_step_transitions_hand_derived(name, done_dtype):
    c = TRANSITION_CASES[name]
    r = jnp.asarray(WINDOW_R, jnp.float32)
    term, trunc = (jnp.asarray(c[k]).astype(done_dtype) for k in ("term", "trunc"))
    for n in (1, 2, 3):
        R, D, last = n_step_transitions(r, term, trunc, 0.5, n=n)
        exp_R, exp_D, exp_l = c[f"n{n}"]
        np.testing.assert_array_equal(R, exp_R, err_msg=f"R, n={n}")
        np.testing.assert_array_equal(D, exp_D, err_msg=f"D, n={n}")
        np.testing.assert_array_equal(last, exp_l, err_msg=f"l, n={n}")
        assert last.dtype == jnp.int32 and R.dtype == D.dtype == jnp.float32


@pytest.mark.parametrize("seed", range(3))
def test_n_step_transitions_match_n_step_returns(seed):
    # On the first T steps of a window of T + n - 1, every n-step window lies inside the data, so
    # R_t + D_t * next_values[l_t] is n_step_returns' G_t (batch axes [T + n - 1, B]).
    for n in (1, 2, 3, 5):
        T, B = 7, 4
        r, _, nv, term, trunc = _random(seed, T=T + n - 1, batch=(B,), p_term=0.2, p_trunc=0.2)
        R, D, last = n_step_transitions(r, term, trunc, 0.9, n=n)
        assert R.shape == D.shape == last.shape == (T, B)
        bootstrap = np.take_along_axis(nv, np.asarray(last), axis=0)
        expected = n_step_returns(r, nv, term, trunc, 0.9, n)[:T]
        np.testing.assert_allclose(R + D * bootstrap, expected, rtol=1e-5, atol=1e-5)
        # l_t lies in [t, t + n) and is the first done step there (or t + n - 1).
        t = np.arange(T)[:, None]
        assert np.all((last >= t) & (last < t + n))


def test_n_step_transitions_jit_and_vmap_over_gamma():
    n, T, B = 3, 5, 2
    r, _, nv, term, trunc = _random(11, T=T + n - 1, batch=(B,), p_term=0.2, p_trunc=0.2)
    gammas = jnp.array([0.0, 0.5, 0.9, 0.99])
    fn = lambda g: returns.n_step_transitions(r, term, trunc, g, n)
    R, D, last = jax.jit(jax.vmap(fn))(gammas)
    assert R.shape == D.shape == last.shape == (4, T, B)
    for i, g in enumerate(gammas):
        exp_R, exp_D, exp_l = returns.n_step_transitions(r, term, trunc, float(g), n)  # eager
        np.testing.assert_allclose(R[i], exp_R, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(D[i], exp_D, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(last[i], exp_l)
        bootstrap = np.take_along_axis(nv, np.asarray(exp_l), axis=0)
        np.testing.assert_allclose(
            exp_R + exp_D * bootstrap,
            n_step_returns(r, nv, term, trunc, g, n)[:T],
            rtol=1e-5,
            atol=1e-5,
        )
    # gamma = 0: R = r_t and D = 0 whatever the window.
    np.testing.assert_array_equal(R[0], r[:T])
    np.testing.assert_array_equal(D[0], np.zeros((T, B)))


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_n_step_transitions_bad_n_raises(n):
    r, _, _, term, trunc = _random(0, T=4)
    with pytest.raises(ValueError, match="n must be"):
        returns.n_step_transitions(r, term, trunc, 0.9, n)


def test_n_step_transitions_short_window_raises():
    r, _, _, term, trunc = _random(0, T=2)  # n = 3 needs at least 3 steps for one item
    with pytest.raises(ValueError, match="window for n=3"):
        returns.n_step_transitions(r, term, trunc, 0.9, 3)
    R, _, _ = returns.n_step_transitions(r, term, trunc, 0.9, 2)  # 2 steps give one 2-step item
    assert R.shape == (1,)
