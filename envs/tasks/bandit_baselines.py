"""Reference policies for Bernoulli bandits with `k` arms and `n` pulls (Duan et al. 2016,
arXiv:1611.02779, Table 1), simulated directly from an array of arm probabilities, so that they
stand apart from the bandit environment they check.

| function                | policy                                                              |
|-------------------------|---------------------------------------------------------------------|
| `random_policy`         | a uniformly random arm every pull                                   |
| `ucb1`                  | each arm once, then argmax mean + sqrt(2 ln t / n_i) (Auer et al.)  |
| `thompson`              | argmax of a draw from each arm's Beta(1 + s_i, 1 + f_i) posterior   |
| `oracle`                | always the arm with the highest probability                         |
| `bayes_optimal`         | the Bayes-optimal policy under independent Beta(1, 1) priors        |
| `bayes_optimal_value`   | its exact expected total reward, by dynamic programming (Fraction)  |
| `references`            | what they earn on a sampler's tasks, as `rlsuite eval` lists them    |

A trial function takes `(key, probs, num_pulls)` with `probs` of shape `[k]` and a static Python
`num_pulls`, and returns a `TrialResult`; it jits and vmaps over keys and problems.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.environment.evaluations import Reference
from rlsuite.ops.validators import check_field

# select(key, successes [k] int32, failures [k] int32, probs [k]) -> arm (int32 scalar); only
# the oracle reads `probs`.
Select = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]


class TrialResult(NamedTuple):
    """One trial's outcome (scalars; `[batch]` when vmapped)."""

    total_reward: jax.Array  # float32, number of successes over the n pulls
    regret: jax.Array  # float32, expected regret n * max(p) - sum_t p[a_t]
    arms: jax.Array  # int32 [n], the arm pulled at each step


class BayesOptimalTable(NamedTuple):
    """The Bayes-optimal decision in every non-terminal posterior state (numpy arrays).

    A state is the multiset of the arms' (successes, failures), written as the `k` arm codes
    (`arm_code`) sorted in decreasing order; rows are sorted lexicographically.
    """

    states: np.ndarray  # int32 [S, k]
    arms: np.ndarray  # int32 [S], the code of an arm to pull in that state
    value: Fraction  # expected total reward from the empty state


def _check_count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"bandit baselines: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_probs(probs: jax.Array, owner: str = "bandit baselines") -> None:
    """Raise a `ValueError` unless concrete `probs` (shape `[..., k]`, k >= 1) lie in [0, 1].

    Traced values are skipped: check a batch of problems here before vmapping over it.
    """
    if jnp.ndim(probs) < 1 or jnp.shape(probs)[-1] < 1:
        raise ValueError(
            f"{owner}: probs must have shape [..., k] with k >= 1, got shape {jnp.shape(probs)}"
        )
    check_field(
        SimpleNamespace(probs=probs),
        "probs",
        lambda p: (p >= 0) & (p <= 1),
        "arm probabilities in [0, 1]",
        owner,
        kind="arguments",
    )


def arm_code(successes, failures):
    """Index of an arm's posterior counts (s, f) in the order (0,0), (1,0), (0,1), (2,0), ...:
    t (t + 1) / 2 + f with t = s + f. Works on ints and on integer arrays."""
    pulls = successes + failures
    return pulls * (pulls + 1) // 2 + failures


def run_trial(select: Select, key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """Run `num_pulls` pulls of the policy `select` on the Bernoulli arms `probs` ([k])."""
    num_pulls = _check_count("num_pulls", num_pulls, 1)
    if jnp.ndim(probs) != 1:
        raise ValueError(f"bandit baselines: probs must have shape [k], got {jnp.shape(probs)}")
    check_probs(probs)
    probs = jnp.asarray(probs, jnp.float32)
    zeros = jnp.zeros(probs.shape, jnp.int32)

    def pull(counts, step_key):
        successes, failures = counts
        select_key, reward_key = jax.random.split(step_key)
        arm = select(select_key, successes, failures, probs)
        success = (jax.random.uniform(reward_key) < probs[arm]).astype(jnp.int32)
        hit = jax.nn.one_hot(arm, probs.shape[0], dtype=jnp.int32)
        counts = (successes + hit * success, failures + hit * (1 - success))
        return counts, (success.astype(jnp.float32), probs[arm], arm)

    keys = jax.random.split(key, num_pulls)
    _, (rewards, chosen, arms) = jax.lax.scan(pull, (zeros, zeros), keys)
    return TrialResult(rewards.sum(), num_pulls * probs.max() - chosen.sum(), arms)


def _random_select(key, successes, failures, probs):
    return jax.random.randint(key, (), 0, probs.shape[0])


def _ucb1_select(key, successes, failures, probs):
    pulls = successes + failures
    t = pulls.sum()
    n_i = jnp.maximum(pulls, 1).astype(jnp.float32)
    index = successes / n_i + jnp.sqrt(2.0 * jnp.log(t.astype(jnp.float32)) / n_i)
    # t < k: the first k pulls visit arms 0, 1, ..., k - 1 (then every arm has n_i >= 1).
    return jnp.where(t < probs.shape[0], t, jnp.argmax(index)).astype(jnp.int32)


def _thompson_select(key, successes, failures, probs):
    return jnp.argmax(jax.random.beta(key, 1.0 + successes, 1.0 + failures)).astype(jnp.int32)


def _oracle_select(key, successes, failures, probs):
    return jnp.argmax(probs).astype(jnp.int32)


def random_policy(key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """A uniformly random arm every pull; expected total reward n / 2 under U[0, 1] arms."""
    return run_trial(_random_select, key, probs, num_pulls)


def ucb1(key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """UCB1 (Auer, Cesa-Bianchi and Fischer 2002): each arm once, then the arm maximising
    s_i / n_i + sqrt(2 ln t / n_i), t the pulls so far; ties go to the lowest arm index."""
    return run_trial(_ucb1_select, key, probs, num_pulls)


def thompson(key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """Thompson sampling with independent Beta(1, 1) priors."""
    return run_trial(_thompson_select, key, probs, num_pulls)


def oracle(key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """Always the best arm (zero regret); see `oracle_value` for its expectation."""
    return run_trial(_oracle_select, key, probs, num_pulls)


def oracle_value(num_arms: int, num_pulls: int) -> Fraction:
    """The oracle's expected total reward n E[max p] = n k / (k + 1) (max of k U[0, 1] draws)."""
    num_arms = _check_count("num_arms", num_arms, 1)
    num_pulls = _check_count("num_pulls", num_pulls, 1)
    return Fraction(num_pulls * num_arms, num_arms + 1)


def _solve(num_arms: int, num_pulls: int) -> tuple[Fraction, dict]:
    """Exact DP over canonical posterior states; returns the value and {state: (value, code)}."""
    decode = {arm_code(t - f, f): (t - f, f) for t in range(num_pulls + 1) for f in range(t + 1)}
    memo: dict[tuple[int, ...], tuple[Fraction, int]] = {}

    def value(state: tuple[int, ...], left: int) -> Fraction:
        if left == 0:
            return Fraction(0)
        if state not in memo:
            best = None
            for code in sorted(set(state)):  # arms with equal counts are exchangeable
                s, f = decode[code]
                p = Fraction(s + 1, s + f + 2)  # posterior mean of Beta(1 + s, 1 + f)
                i = state.index(code)
                rest = state[:i] + state[i + 1 :]
                win = tuple(sorted((*rest, arm_code(s + 1, f)), reverse=True))
                lose = tuple(sorted((*rest, arm_code(s, f + 1)), reverse=True))
                q = p * (1 + value(win, left - 1)) + (1 - p) * value(lose, left - 1)
                if best is None or q > best[0]:
                    best = (q, code)
            memo[state] = best
        return memo[state][0]

    return value((0,) * num_arms, num_pulls), memo


def bayes_optimal_table(num_arms: int, num_pulls: int) -> BayesOptimalTable:
    """The Bayes-optimal policy under independent Beta(1, 1) priors, by exact dynamic programming
    over the multiset of per-arm (successes, failures) (arms are exchangeable), in rationals.

    Cost grows quickly with `num_pulls` (k=10, n=10: 2,296 states, about 0.1 s).
    """
    # Checked before the cache, which takes True for 1.
    return _table(_check_count("num_arms", num_arms, 1), _check_count("num_pulls", num_pulls, 1))


@functools.lru_cache(maxsize=16)
def _table(num_arms: int, num_pulls: int) -> BayesOptimalTable:
    value, memo = _solve(num_arms, num_pulls)
    states = np.array(list(memo), np.int32).reshape(-1, num_arms)
    arms = np.array([code for _, code in memo.values()], np.int32)
    order = np.lexsort(states.T[::-1])  # the first column is the primary key
    states, arms = states[order], arms[order]
    states.flags.writeable = arms.flags.writeable = False  # cached: shared by every caller
    return BayesOptimalTable(states, arms, value)


def bayes_optimal_value(num_arms: int, num_pulls: int) -> Fraction:
    """Exact expected total reward of the Bayes-optimal policy for `num_arms` Bernoulli arms with
    U[0, 1] (Beta(1, 1)) probabilities and `num_pulls` pulls: k=5, n=10 gives 6041941/907200."""
    return bayes_optimal_table(num_arms, num_pulls).value


def _lookup(states: jax.Array, key: jax.Array) -> jax.Array:
    """Row index of `key` ([k]) in the lexicographically sorted `states` ([S, k]), by bisection."""

    def less(row, target):  # row < target lexicographically
        diff = row - target
        first = jnp.argmax(diff != 0)
        return diff[first] < 0

    def body(_, bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        go_right = less(states[mid], key)
        return jnp.where(go_right, mid + 1, lo), jnp.where(go_right, hi, mid)

    steps = int(np.ceil(np.log2(states.shape[0] + 1)))
    lo, _ = jax.lax.fori_loop(0, steps, body, (jnp.int32(0), jnp.int32(states.shape[0])))
    return lo


def bayes_optimal(key: jax.Array, probs: jax.Array, num_pulls: int) -> TrialResult:
    """The Bayes-optimal policy of `bayes_optimal_table(k, num_pulls)`: its expected total reward
    over U[0, 1] arms is `bayes_optimal_value(k, num_pulls)`. Among arms with the counts the table
    names, the lowest index is pulled."""
    num_pulls = _check_count("num_pulls", num_pulls, 1)
    if jnp.ndim(probs) != 1:
        raise ValueError(f"bandit baselines: probs must have shape [k], got {jnp.shape(probs)}")
    table = bayes_optimal_table(jnp.shape(probs)[0], num_pulls)
    states, arms = jnp.asarray(table.states), jnp.asarray(table.arms)

    def select(key, successes, failures, probs):
        codes = arm_code(successes, failures)
        best = arms[_lookup(states, jnp.sort(codes)[::-1])]
        return jnp.argmax(codes == best).astype(jnp.int32)

    return run_trial(select, key, probs, num_pulls)


# The largest Bayes-optimal table `references` solves: about 2 s of exact dynamic programming
# (its cost is near 40 us a state; k=5 arms and n=10 pulls hold 1,951 states, k=5 and n=20
# 237,995).
REFERENCE_STATES = 50_000


def state_count(num_arms: int, num_pulls: int) -> int:
    """The number of posterior states `bayes_optimal_table(num_arms, num_pulls)` holds, counted
    without solving it: the multisets of `num_arms` arm counts (s, f) whose pulls sum to less
    than `num_pulls`. Each kind of count with w = s + f pulls (there are w + 1 such kinds) may
    repeat; `ways[j][t]` counts the multisets of j counts with t pulls over the kinds so far."""
    num_arms = _check_count("num_arms", num_arms, 1)
    num_pulls = _check_count("num_pulls", num_pulls, 1)
    ways = [[0] * num_pulls for _ in range(num_arms + 1)]
    ways[0][0] = 1
    for w in range(num_pulls):
        for _ in range(w + 1):  # each kind: multiply by 1 / (1 - x y^w), j ascending
            for j in range(1, num_arms + 1):
                for t in range(w, num_pulls):
                    ways[j][t] += ways[j - 1][t - w]
    return sum(ways[num_arms])


def references(
    sample_task: Callable,
    params,
    num_pulls: int,
    key: jax.Array,
    trials: int = 10_000,
    uniform: bool = False,
) -> list[Reference]:
    """What the reference policies earn per trial of `num_pulls` pulls on tasks drawn by
    `sample_task(key, params)` (a `params` with `probs` [k]): random, UCB1, Thompson sampling and
    the oracle, each simulated on `trials` tasks (mean ± standard error). `uniform` says the
    tasks are U[0, 1]^k (Beta(1, 1) priors): then random (n / 2), the oracle (`oracle_value`)
    and the Bayes-optimal policy (`bayes_optimal_value`, where its table has at most
    `REFERENCE_STATES` states) are exact, with regrets n k / (k + 1) less their totals."""
    num_pulls = _check_count("num_pulls", num_pulls, 1)
    task_key, play_key = jax.random.split(key)
    task_keys = jax.random.split(task_key, trials)
    probs = jax.vmap(sample_task, (0, None))(task_keys, params).probs
    num_arms = int(jnp.shape(probs)[-1])
    play_keys = jax.random.split(play_key, trials)

    def simulated(name, policy):
        play = jax.jit(jax.vmap(functools.partial(policy, num_pulls=num_pulls)))
        result = play(play_keys, probs)
        total, regret = np.asarray(result.total_reward, np.float64), np.asarray(result.regret)
        se = np.sqrt(trials)
        basis = f"simulated, {trials:,} trials"
        return Reference(
            name, total.mean(), total.std() / se, regret.mean(), regret.std() / se, basis
        )

    best = float(oracle_value(num_arms, num_pulls)) if uniform else None
    exact = "exact, U[0, 1] arms"
    out = []
    if uniform:
        out.append(Reference("random", num_pulls / 2, None, best - num_pulls / 2, None, exact))
    else:
        out.append(simulated("random", random_policy))
    out.append(simulated("UCB1", ucb1))
    out.append(simulated("Thompson sampling, Beta(1, 1) priors", thompson))
    if uniform and state_count(num_arms, num_pulls) <= REFERENCE_STATES:
        value = float(bayes_optimal_value(num_arms, num_pulls))
        out.append(Reference("Bayes-optimal", value, None, best - value, None, exact))
    if uniform:
        out.append(Reference("oracle (knows the arms)", best, None, 0.0, None, exact))
    else:
        oracle_result = simulated("oracle (knows the arms)", oracle)
        out.append(oracle_result._replace(regret=0.0, regret_stderr=None))
    return out
