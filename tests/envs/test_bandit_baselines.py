"""Bandit baselines (Duan et al. 2016, Table 1 setting: k Bernoulli arms ~ U[0, 1], n pulls):
hand-derived trials, exact values by an independent enumeration, and 20,000-trial simulations."""

import functools
from fractions import Fraction
from math import comb, log, sqrt

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rlsuite.envs.tasks import bandit_baselines as bb

NUM_TRIALS = 20_000


# --- independent exact references (plain Python, rationals) ----------------------------------


@functools.cache
def _brute_force_bayes(state: tuple[tuple[int, int], ...], left: int) -> Fraction:
    """Bayes-optimal value over *ordered* per-arm (successes, failures): no exchangeability."""
    if left == 0:
        return Fraction(0)
    best = Fraction(-1)
    for i, (s, f) in enumerate(state):
        p = Fraction(s + 1, s + f + 2)
        win = state[:i] + ((s + 1, f),) + state[i + 1 :]
        lose = state[:i] + ((s, f + 1),) + state[i + 1 :]
        q = p * (1 + _brute_force_bayes(win, left - 1))
        best = max(best, q + (1 - p) * _brute_force_bayes(lose, left - 1))
    return best


def _policy_value(num_arms: int, num_pulls: int, choose) -> Fraction:
    """Exact expected total reward of a policy that depends on the multiset of per-arm counts:
    `choose(state)` maps a sorted tuple of (s, f) to {(s, f): probability of pulling an arm with
    those counts}. Arms are U[0, 1], so an arm with counts (s, f) pays with probability
    (s + 1) / (s + f + 2), its posterior mean."""
    memo = {}

    def value(state, left):
        if left == 0:
            return Fraction(0)
        if state not in memo:
            total = Fraction(0)
            for (s, f), weight in choose(state).items():
                i = state.index((s, f))
                rest = state[:i] + state[i + 1 :]
                p = Fraction(s + 1, s + f + 2)
                win = value(tuple(sorted((*rest, (s + 1, f)))), left - 1)
                lose = value(tuple(sorted((*rest, (s, f + 1)))), left - 1)
                total += weight * (p * (1 + win) + (1 - p) * lose)
            memo[state] = total
        return memo[state]

    return value(((0, 0),) * num_arms, num_pulls)


def _ucb1_choice(state):
    pulls = sum(s + f for s, f in state)
    if (0, 0) in state:  # the first k pulls visit the unpulled arms
        return {(0, 0): Fraction(1)}
    index = {(s, f): s / (s + f) + sqrt(2 * log(pulls) / (s + f)) for s, f in set(state)}
    return {max(index, key=index.get): Fraction(1)}


def _poly_mul(a, b):
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _monomial(i, j):
    """Coefficients (in x) of x^i (1 - x)^j."""
    return [Fraction(0)] * i + [Fraction(comb(j, m) * (-1) ** m) for m in range(j + 1)]


def _thompson_choice(state):
    """P(an arm's Beta(s + 1, f + 1) draw is the largest) = integral of its density times the
    others' CDFs; with integer parameters both are polynomials, so the integral is exact."""
    out = {}
    for s, f in set(state):
        i = state.index((s, f))
        a, b = s + 1, f + 1
        density = [c * comb(a + b - 2, a - 1) * (a + b - 1) for c in _monomial(a - 1, b - 1)]
        for s2, f2 in state[:i] + state[i + 1 :]:
            m = s2 + f2 + 1  # CDF of Beta(s2 + 1, f2 + 1): P(Binomial(m, x) >= s2 + 1)
            cdf = [Fraction(0)] * (m + 1)
            for j in range(s2 + 1, m + 1):
                for d, c in enumerate(_monomial(j, m - j)):
                    cdf[d] += comb(m, j) * c
            density = _poly_mul(density, cdf)
        out[(s, f)] = state.count((s, f)) * sum(c / (d + 1) for d, c in enumerate(density))
    assert sum(out.values()) == 1
    return out


# --- simulation ------------------------------------------------------------------------------


@functools.cache
def _simulate(policy: str, num_arms: int, num_pulls: int):
    """20,000 trials on U[0, 1] arms, the same problems and keys for every policy."""
    probs_key, trial_key = jax.random.split(jax.random.key(0))
    probs = jax.random.uniform(probs_key, (NUM_TRIALS, num_arms))
    run = jax.jit(jax.vmap(functools.partial(getattr(bb, policy), num_pulls=num_pulls)))
    return probs, run(jax.random.split(trial_key, NUM_TRIALS), probs)


def _estimate(policy: str, num_arms: int, num_pulls: int) -> float:
    """Expected total reward as n E[max p] - mean regret, n E[max p] = n k / (k + 1) exactly: the
    regret varies far less across problems than the total reward (a control variate), and the
    sampled rewards are checked against the chosen arms' probabilities within 4 standard errors."""
    probs, result = _simulate(policy, num_arms, num_pulls)
    noise = result.total_reward - (num_pulls * probs.max(axis=1) - result.regret)
    assert abs(float(noise.mean())) <= 4 * float(noise.std()) / NUM_TRIALS**0.5
    return float(bb.oracle_value(num_arms, num_pulls)) - float(result.regret.mean())


# --- hand-checked cases ----------------------------------------------------------------------


def test_bayes_optimal_value_small_cases_by_hand():
    # k=2, n=1: either arm pays E[p] = 1/2.
    assert bb.bayes_optimal_value(2, 1) == Fraction(1, 2)
    # k=2, n=2: pull arm A (1/2). A paid (prob 1/2): its posterior mean is 2/3 > 1/2, pull it
    # again for 2/3. A failed: 1/3 < 1/2, pull B for 1/2. Total 1/2 + 1/2 * 2/3 + 1/2 * 1/2 =
    # 6/12 + 4/12 + 3/12 = 13/12.
    assert bb.bayes_optimal_value(2, 2) == Fraction(13, 12)
    # One arm: nothing to choose, n E[p] = n / 2.
    assert bb.bayes_optimal_value(1, 3) == Fraction(3, 2)


@pytest.mark.parametrize(("num_arms", "num_pulls"), [(2, 5), (3, 4), (4, 3)])
def test_bayes_optimal_value_matches_brute_force_over_ordered_arms(num_arms, num_pulls):
    assert bb.bayes_optimal_value(num_arms, num_pulls) == _brute_force_bayes(
        ((0, 0),) * num_arms, num_pulls
    )


def test_exact_values_reported_for_duan_table_1():
    # k=5, n=10: 6.65999 (the 6.66); k=10, n=10: 6.71395 (6.71).
    assert bb.bayes_optimal_value(5, 10) == Fraction(6041941, 907200)
    assert round(float(bb.bayes_optimal_value(10, 10)), 2) == 6.71
    assert bb.oracle_value(5, 10) == Fraction(25, 3)
    # The references themselves, by hand for k=2, n=2: UCB1 pulls each arm once (1/2 + 1/2);
    # Thompson pulls A (1/2), then A again with P(Beta(2,1) > U) = 2/3 after a success and
    # P(Beta(1,2) > U) = 1/3 after a failure: 1/2 + 1/2 (2/3 * 2/3 + 1/3 * 1/2)
    # + 1/2 (1/3 * 1/3 + 2/3 * 1/2) = 1/2 + 11/36 + 8/36 = 37/36.
    assert _policy_value(2, 2, _ucb1_choice) == 1
    assert _policy_value(2, 2, _thompson_choice) == Fraction(37, 36)
    assert _policy_value(3, 4, lambda s: {c: Fraction(1, 3) * s.count(c) for c in set(s)}) == 2


def test_ucb1_pulls_each_arm_once_then_follows_its_index_by_hand():
    # Arm 1 always pays, the others never. Pulls 0-4 visit arms 0..4. Then with t pulls so far:
    # t=5: arm 1 (1,0): 1 + sqrt(2 ln 5) = 2.794 > others 0 + sqrt(2 ln 5) = 1.794 -> 1
    # t=6: arm 1 (2,0): 1 + sqrt(ln 6) = 2.339 > sqrt(2 ln 6) = 1.893               -> 1
    # t=7: arm 1 (3,0): 1 + sqrt(2 ln 7 / 3) = 2.139 > sqrt(2 ln 7) = 1.973          -> 1
    # t=8: arm 1 (4,0): 1 + sqrt(ln 8 / 2) = 2.020 < sqrt(2 ln 8) = 2.039, a tie of 0, 2, 3, 4
    #      goes to the lowest index                                                -> 0
    # t=9: arm 0 (0,2): sqrt(ln 9) = 1.482; arm 1: 1 + sqrt(ln 9 / 2) = 2.048;
    #      arms 2-4 (0,1): sqrt(2 ln 9) = 2.096                                     -> 2
    probs = jnp.array([0.0, 1.0, 0.0, 0.0, 0.0])
    result = bb.ucb1(jax.random.key(3), probs, 10)
    np.testing.assert_array_equal(result.arms, [0, 1, 2, 3, 4, 1, 1, 1, 0, 2])
    assert float(result.total_reward) == 4.0
    assert float(result.regret) == 6.0
    # Whatever the probabilities, the first k pulls visit every arm once, in order.
    probs = jax.random.uniform(jax.random.key(4), (8, 5))
    keys = jax.random.split(jax.random.key(5), 8)
    arms = jax.vmap(functools.partial(bb.ucb1, num_pulls=7))(keys, probs).arms
    np.testing.assert_array_equal(arms[:, :5], np.tile(np.arange(5), (8, 1)))


def test_bayes_optimal_policy_follows_the_table_by_hand():
    # k=2, n=2 (see the value above): pull arm 0; after a success pull it again, after a failure
    # pull arm 1.
    np.testing.assert_array_equal(
        bb.bayes_optimal(jax.random.key(0), jnp.array([1.0, 0.0]), 2).arms, [0, 0]
    )
    np.testing.assert_array_equal(
        bb.bayes_optimal(jax.random.key(0), jnp.array([0.0, 1.0]), 2).arms, [0, 1]
    )
    # Every state of the table is found where it is stored.
    table = bb.bayes_optimal_table(5, 10)
    states = jnp.asarray(table.states)
    found = jax.jit(jax.vmap(lambda row: bb._lookup(states, row)))(states)
    np.testing.assert_array_equal(found, np.arange(len(table.states)))


def test_oracle_pulls_the_best_arm_and_has_no_regret():
    probs = jnp.array([0.2, 0.7, 0.4])
    result = bb.oracle(jax.random.key(0), probs, 6)
    np.testing.assert_array_equal(result.arms, [1] * 6)
    assert float(result.regret) == 0.0


def test_trials_are_the_same_under_jit_and_vmap():
    probs = jax.random.uniform(jax.random.key(1), (4, 5))
    keys = jax.random.split(jax.random.key(2), 4)
    for policy in (bb.thompson, bb.bayes_optimal):
        batch = jax.jit(jax.vmap(functools.partial(policy, num_pulls=10)))(keys, probs)
        single = jax.jit(policy, static_argnums=2)(keys[2], probs[2], 10)
        np.testing.assert_array_equal(batch.arms[2], single.arms)
        assert float(batch.total_reward[2]) == float(single.total_reward)


# --- 20,000 trials against Duan et al.'s setting ---------------------------------------------


# (policy, the figure to reproduce, its exact value): random n/2; UCB1 88231/15552 = 5.6733 and
# Thompson 5.8333 by `_policy_value`; Bayes-optimal 6.6600 by DP; oracle 10 * 5/6 = 8.3333.
K5_N10 = [
    ("random_policy", 5.00, lambda: Fraction(5)),
    ("ucb1", 5.68, lambda: _policy_value(5, 10, _ucb1_choice)),
    ("thompson", 5.84, lambda: _policy_value(5, 10, _thompson_choice)),
    ("bayes_optimal", 6.66, lambda: bb.bayes_optimal_value(5, 10)),
    ("oracle", 8.32, lambda: Fraction(25, 3)),
]


# Thompson's 20,000 trials take 19 s with a warm compilation cache: in the slow run; its exact
# value is in the default run (`test_k5_n10_exact_ucb1_and_thompson`).
@pytest.mark.parametrize(
    ("policy", "figure", "exact"),
    [pytest.param(*p, marks=[pytest.mark.slow] if p[0] == "thompson" else []) for p in K5_N10],
    ids=[p[0] for p in K5_N10],
)
def test_k5_n10_baselines(policy, figure, exact):
    exact = float(exact())
    assert abs(exact - figure) <= 0.05
    assert abs(_estimate(policy, 5, 10) - exact) <= 0.05


def test_k5_n10_exact_ucb1_and_thompson():
    assert _policy_value(5, 10, _ucb1_choice) == Fraction(88231, 15552)
    assert round(float(_policy_value(5, 10, _thompson_choice)), 4) == 5.8333


def test_k10_n10_bayes_optimal():
    exact = float(bb.bayes_optimal_value(10, 10))
    assert abs(exact - 6.71) <= 0.05
    assert abs(_estimate("bayes_optimal", 10, 10) - exact) <= 0.05


@pytest.mark.slow
def test_k5_n100_thompson():
    # A 200,000-trial numpy reference (numpy's Beta sampler) gave 75.02 +- 0.01.
    assert abs(_estimate("thompson", 5, 100) - 74.97) <= 0.2


# --- references (what `rlsuite eval` lists beside an RL^2 run) ------------------------------


@pytest.mark.parametrize(("num_arms", "num_pulls"), [(1, 3), (2, 1), (2, 20), (3, 15), (5, 10)])
def test_state_count_is_the_size_of_the_solved_table(num_arms, num_pulls):
    expected = len(bb.bayes_optimal_table(num_arms, num_pulls).arms)
    assert bb.state_count(num_arms, num_pulls) == expected
    # One arm: its (s, f) with s + f < n, (n + 1) n / 2 of them.
    assert bb.state_count(1, 7) == 28


def _named(refs):
    return {r.name.split(",")[0].split(" (")[0]: r for r in refs}


def test_references_of_uniform_arms_are_exact_where_known():
    from rlsuite.envs.tasks import bandits

    params = bandits.BernoulliBandit(5).default_params
    refs = _named(bb.references(bandits.sample_uniform, params, 10, jax.random.key(0), 4000, True))
    assert list(refs) == ["random", "UCB1", "Thompson sampling", "Bayes-optimal", "oracle"]
    best = 25 / 3  # n k / (k + 1)
    assert (refs["random"].total, refs["random"].regret, refs["random"].stderr) == (
        5,
        best - 5,
        None,
    )
    value = 6041941 / 907200
    assert refs["Bayes-optimal"].total == pytest.approx(value, abs=1e-12)
    assert refs["Bayes-optimal"].regret == pytest.approx(best - value, abs=1e-12)
    assert (refs["oracle"].total, refs["oracle"].regret) == (pytest.approx(best), 0.0)
    # The simulated ones within 4 standard errors of their exact values (test_k5_n10_exact_*),
    # and a total and its regret sum to the oracle's n E[max p] on each trial's draw.
    for name, exact in (("UCB1", 88231 / 15552), ("Thompson sampling", 5.8333)):
        ref = refs[name]
        assert 0 < ref.stderr < 0.05 and abs(ref.total - exact) <= 4 * ref.stderr, ref
        assert abs(ref.total + ref.regret - best) <= 4 * (ref.stderr + ref.regret_stderr), ref
        assert ref.basis == "simulated, 4,000 trials"


def test_references_of_other_tasks_are_simulated_and_skip_bayes_optimal():
    from rlsuite.envs.tasks import bandits

    # Arms {0.1, 0.9} in either order, 20 pulls: random earns 10 and regrets 0.8 * 20 / 2 = 8;
    # the oracle earns 0.9 * 20 = 18. The Beta(1, 1) Bayes-optimal policy is not this prior's.
    params = bandits.BernoulliBandit(2).default_params
    refs = _named(bb.references(bandits.sample_paired, params, 20, jax.random.key(1), 4000))
    assert list(refs) == ["random", "UCB1", "Thompson sampling", "oracle"]
    for name, total, regret in (("random", 10.0, 8.0), ("oracle", 18.0, 0.0)):
        ref = refs[name]
        assert abs(ref.total - total) <= 4 * ref.stderr, ref
        assert ref.regret == regret if name == "oracle" else abs(ref.regret - regret) < 0.1
    # Uniform arms whose Bayes-optimal table is too large to solve here: listed without it.
    five = bandits.BernoulliBandit(5).default_params
    many = bb.references(bandits.sample_uniform, five, 20, jax.random.key(2), 100, uniform=True)
    assert bb.state_count(5, 20) > bb.REFERENCE_STATES
    assert [r.name for r in many][-2:] == [
        "Thompson sampling, Beta(1, 1) priors",
        "oracle (knows the arms)",
    ]


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("num_pulls", [0, -1, 2.5, True, None])
def test_bad_num_pulls_is_refused(num_pulls):
    with pytest.raises(ValueError, match="num_pulls"):
        bb.ucb1(jax.random.key(0), jnp.array([0.5, 0.5]), num_pulls)
    with pytest.raises(ValueError, match="num_pulls"):
        bb.bayes_optimal_value(2, num_pulls)


def test_bad_num_arms_and_probs_are_refused():
    with pytest.raises(ValueError, match="num_arms"):
        bb.bayes_optimal_value(0, 3)
    with pytest.raises(ValueError, match=r"probs.*\[0, 1\]"):
        bb.thompson(jax.random.key(0), jnp.array([0.5, 1.5]), 3)
    with pytest.raises(ValueError, match=r"probs.*\[0, 1\]"):
        bb.check_probs(jnp.array([[0.5, 0.2], [-0.1, 0.3]]))
    with pytest.raises(ValueError, match="probs"):  # a batch given to one trial, even under jit
        jax.jit(bb.oracle, static_argnums=2)(jax.random.key(0), jnp.zeros((3, 2)), 3)
    with pytest.raises(ValueError, match="probs"):
        bb.bayes_optimal(jax.random.key(0), jnp.array(0.5), 3)
