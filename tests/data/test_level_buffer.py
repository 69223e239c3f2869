"""The level buffer (rlsuite.data.level_buffer) and the UED level scores (rlsuite.ops.level_scores)
against values derived by hand, under jit and vmap, and bad input refused before compilation.

The reference buffer: capacity 4, scores 0.1, 0.5, 0.3, 0.2 inserted into slots 0-3, each insert
stamping its slot with count + 1, so timestamps [1, 2, 3, 4] and count 4; staleness coefficient
0.3. Ranks (1 = highest score): [4, 1, 2, 3]; staleness count - timestamp: [3, 2, 1, 0].
"""

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring
from scipy import stats

from rlsuite.data import level_buffer as lb
from rlsuite.ops import level_scores as ls

SCORES = (0.1, 0.5, 0.3, 0.2)


def level(i):
    """A small level pytree: a wall map and a goal position, all equal to i."""
    return {"walls": jnp.full((2, 3), i, jnp.int32), "goal": jnp.full((2,), i, jnp.int32)}


def config(**kwargs):
    return lb.LevelBufferConfig(**{"staleness_coeff": 0.3, "temperature": 1.0, **kwargs})


def filled(scores=SCORES, capacity=4, **kwargs):
    state = lb.init(capacity, level(0), extras={"max_return": -jnp.inf})
    for i, score in enumerate(scores):
        state, slot = lb.insert(
            state, level(i + 1), score, {"max_return": i / 10}, config(**kwargs)
        )
        assert int(slot) == (i if np.isfinite(score) else -1)
    return state


@pytest.fixture(scope="module")
def reference():
    state = filled()
    np.testing.assert_array_equal(state.timestamps, [1, 2, 3, 4])
    assert int(state.count) == 4 and int(state.size) == 4
    return state


def test_rank_staleness_and_mixture_at_temperature_one(reference):
    # h = 1/rank = [1/4, 1, 1/2, 1/3], sum 25/12 -> [3/25, 12/25, 6/25, 4/25].
    rank = [0.12, 0.48, 0.24, 0.16]
    # [3, 2, 1, 0] / 6.
    staleness = [0.5, 1 / 3, 1 / 6, 0.0]
    # 0.7 * rank + 0.3 * staleness: 0.084 + 0.15, 0.336 + 0.1, 0.168 + 0.05, 0.112 + 0.
    mixture = [0.234, 0.436, 0.218, 0.112]
    np.testing.assert_allclose(lb.score_weights(reference, config()), rank, rtol=1e-6)
    np.testing.assert_allclose(lb.staleness_weights(reference), staleness, rtol=1e-6)
    np.testing.assert_allclose(lb.weights(reference, config()), mixture, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(lb.weights)(reference, config()), mixture, rtol=1e-6)


@pytest.mark.parametrize(
    "temperature, expected",
    [
        # h = rank^(-10/3) = [4^(-10/3), 1, 2^(-10/3), 3^(-10/3)] = [0.0098431, 1, 0.0992126,
        # 0.0256805], sum 1.1347362 -> [0.0086744, 0.8812625, 0.0874323, 0.0226309];
        # 0.7 * that + 0.3 * [1/2, 1/3, 1/6, 0]:
        (0.3, [0.156072, 0.716884, 0.111203, 0.015842]),
        # h = rank^-2 = [1/16, 1, 1/4, 1/9] = [9, 144, 36, 16] / 144 -> [9, 144, 36, 16] / 205;
        # 0.7 * 9/205 + 0.15 = 0.180732, 0.7 * 144/205 + 0.1 = 0.591707,
        # 0.7 * 36/205 + 0.05 = 0.172927, 0.7 * 16/205 = 0.054634.
        (0.5, [0.180732, 0.591707, 0.172927, 0.054634]),
    ],
)
def test_temperature(reference, temperature, expected):
    np.testing.assert_allclose(
        lb.weights(reference, config(temperature=temperature)), expected, atol=1e-6
    )


def test_half_filled_buffer():
    state = filled(SCORES[:2])
    # Ranks [2, 1]: h = [1/2, 1] -> [1/3, 2/3]; staleness [2 - 1, 2 - 2] = [1, 0] -> [1, 0];
    # 0.7/3 + 0.3 = 0.533333, 1.4/3 = 0.466667; empty slots 0.
    np.testing.assert_allclose(lb.weights(state, config()), [0.533333, 0.466667, 0, 0], atol=1e-6)


def test_sampling_stamps_the_slot_and_advances_the_count(reference):
    # The first key (in order) whose draw is slot 1 (weight 0.436, so within a few keys).
    for seed in range(50):
        state, slots, levels = lb.sample(reference, jax.random.key(seed), 1, config())
        if int(slots[0]) == 1:
            break
    assert int(slots[0]) == 1
    np.testing.assert_array_equal(levels["walls"], level(2)["walls"][None])
    assert int(state.count) == 5
    np.testing.assert_array_equal(state.timestamps, [1, 5, 3, 4])
    # Staleness [4, 0, 2, 1] / 7; rank part unchanged [0.12, 0.48, 0.24, 0.16]:
    # 0.084 + 1.2/7 = 0.255429, 0.336, 0.168 + 0.6/7 = 0.253714, 0.112 + 0.3/7 = 0.154857.
    np.testing.assert_allclose(
        lb.weights(state, config()), [0.255429, 0.336, 0.253714, 0.154857], atol=1e-6
    )
    # Sequential draws: each draw is one event (count 4 + 3) and stamps its own slot.
    state, slots, _ = lb.sample(reference, jax.random.key(1), 3, config())
    assert int(state.count) == 7
    for t, slot in enumerate(np.asarray(slots)):
        if slot not in np.asarray(slots)[t + 1 :]:
            assert int(state.timestamps[slot]) == 5 + t


def test_full_buffer_replaces_the_lowest_weight_slot_only_with_a_higher_score(reference):
    # Weights [0.234, 0.436, 0.218, 0.112]: the lowest is slot 3 (score 0.2), not slot 0 (the
    # lowest score, 0.1, kept by its staleness).
    refused, slot = lb.insert(reference, level(9), 0.15, {"max_return": 0.9}, config())
    assert int(slot) == -1
    np.testing.assert_allclose(refused.scores, SCORES)
    np.testing.assert_array_equal(refused.levels["walls"], reference.levels["walls"])
    np.testing.assert_array_equal(refused.timestamps, [1, 2, 3, 4])
    assert int(refused.count) == 5  # an insert event, as jaxued's episode_count
    replaced, slot = lb.insert(reference, level(9), 0.25, {"max_return": 0.9}, config())
    assert int(slot) == 3
    np.testing.assert_allclose(replaced.scores, [0.1, 0.5, 0.3, 0.25])
    np.testing.assert_array_equal(replaced.levels["goal"][:, 0], [1, 2, 3, 9])
    np.testing.assert_allclose(replaced.extras["max_return"], [0.0, 0.1, 0.2, 0.9])
    np.testing.assert_array_equal(replaced.timestamps, [1, 2, 3, 5])
    assert int(replaced.size) == 4 and int(replaced.count) == 5


def test_no_replay_below_the_minimum_fill_whatever_the_replay_prob():
    keys = jax.random.split(jax.random.key(0), 200)
    decide = jax.jit(jax.vmap(lb.should_replay, in_axes=(None, 0, None)))
    eager = config(replay_prob=1.0, minimum_fill=0.75)
    for size, warm in [(0, False), (1, False), (2, False), (3, True), (4, True)]:
        state = filled(SCORES[:size])
        # 3/4 >= 0.75: warm from the third level on; replay_prob 1 then always replays.
        assert np.all(np.asarray(decide(state, keys, eager)) == warm), size
        assert not np.any(decide(state, keys, config(replay_prob=0.0, minimum_fill=0.75)))
    # An empty buffer never replays, even with no minimum fill.
    assert not np.any(decide(filled(()), keys, config(replay_prob=1.0, minimum_fill=0.0)))
    # Warm, replay_prob 0.5: 200 draws, 100 +- 5 SD (SD sqrt(200 / 4) = 7.07).
    replays = int(np.sum(decide(filled(), keys, config(replay_prob=0.5, minimum_fill=1.0))))
    assert abs(replays - 100) < 5 * 7.08


def test_minimax_7_no_inf_nan_or_integer_truncation():
    # minimax before 0.2 wrote 1/arange(n) (1/0 = inf for the top rank) into an int32 array
    # (1/2, 1/3, ... truncated to 0) and divided by T instead of taking the power 1/T.
    state = filled()
    rank = np.asarray(lb.score_weights(state, config()))
    assert np.all(np.isfinite(rank)) and np.all(rank > 0)
    assert rank[1] == pytest.approx(0.48, abs=1e-6)  # the top level: 1 / (25/12)
    # The power (not a division) of T: T=0.5 sharpens the top weight to 144/205.
    assert float(lb.score_weights(state, config(temperature=0.5))[1]) == pytest.approx(144 / 205)
    # A large buffer, a cold temperature: ranks^(-1/0.05) underflow to 0, never to inf or NaN.
    big = lb.init(1000, jnp.zeros((), jnp.int32))
    big, _ = lb.insert_batch(
        big, jnp.arange(1000, dtype=jnp.int32), jnp.linspace(0, 1, 1000), None, config()
    )
    weights = np.asarray(lb.weights(big, config(temperature=0.05)))
    assert np.all(np.isfinite(weights)) and weights.sum() == pytest.approx(1, abs=1e-5)
    assert weights.argmax() == 999


def test_nan_scores_are_refused_and_never_sampled():
    state = lb.init(4, level(0), extras={"max_return": -jnp.inf})
    for score in (0.1, np.nan, 0.5, np.inf, -np.inf):
        state, _ = lb.insert(
            state,
            level(int(score * 10) if np.isfinite(score) else 7),
            score,
            {"max_return": 0.0},
            config(),
        )
    # Only the finite ones are stored, and a refused non-finite score is no event.
    assert int(state.size) == 2 and int(state.count) == 2
    np.testing.assert_allclose(state.scores[:2], [0.1, 0.5])
    _, slots, levels = jax.vmap(lb.sample, in_axes=(None, 0, None, None))(
        state, jax.random.split(jax.random.key(0), 500), 1, config()
    )
    assert set(np.unique(slots)) == {0, 1}
    assert set(np.unique(levels["goal"])) == {1, 5}
    # update ignores a NaN score; an empty buffer samples nothing and stays unchanged.
    updated = lb.update(state, jnp.array([0]), jnp.array([np.nan]), {"max_return": jnp.ones(1)})
    np.testing.assert_allclose(updated.scores, state.scores)
    empty = lb.init(4, level(0))
    after, slots, _ = lb.sample(empty, jax.random.key(0), 3, config(minimum_fill=0.0))
    np.testing.assert_array_equal(slots, [-1, -1, -1])
    assert int(after.count) == 0 and np.all(np.asarray(after.timestamps) == 0)
    assert not bool(lb.should_replay(empty, jax.random.key(0), config(minimum_fill=0.0)))
    np.testing.assert_array_equal(lb.weights(empty, config()), [0, 0, 0, 0])


def test_sampling_frequencies_match_the_weights(reference):
    n = 40_000
    keys = jax.random.split(jax.random.key(3), n)
    _, slots, _ = jax.jit(jax.vmap(lb.sample, in_axes=(None, 0, None, None)), static_argnums=2)(
        reference, keys, 1, config()
    )
    counts = np.bincount(np.asarray(slots)[:, 0], minlength=4)
    expected = n * np.array([0.234, 0.436, 0.218, 0.112])  # [9360, 17440, 8720, 4480]
    # Each count within 5 binomial SDs (sqrt(n p (1 - p)): 84.7, 99.2, 82.6, 63.1).
    sd = np.sqrt(expected * (1 - expected / n))
    assert np.all(np.abs(counts - expected) < 5 * sd), (counts, expected)
    # And the chi-square statistic below its 99.9% quantile with 3 degrees of freedom (16.27).
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < stats.chi2.ppf(0.999, 3), chi2


def test_vmap_over_configs_and_seeds(reference):
    temperatures = (1.0, 0.3, 0.5)
    batch = jax.tree.map(lambda *x: jnp.stack(x), *(config(temperature=t) for t in temperatures))
    lb.check_config(batch)
    mapped = jax.vmap(lb.weights, in_axes=(None, 0))(reference, batch)
    for row, t in zip(mapped, temperatures, strict=True):
        np.testing.assert_allclose(row, lb.weights(reference, config(temperature=t)), rtol=1e-6)
    key = jax.random.key(7)
    sample = jax.jit(lb.sample, static_argnums=2)
    states, slots, _ = jax.vmap(lb.sample, in_axes=(None, None, None, 0))(reference, key, 6, batch)
    for i, t in enumerate(temperatures):
        one_state, one_slots, _ = sample(reference, key, 6, config(temperature=t))
        np.testing.assert_array_equal(slots[i], one_slots)
        np.testing.assert_array_equal(states.timestamps[i], one_state.timestamps)
    # Over seeds: same key, same sample; different keys, different samples.
    keys = jnp.stack([key, key, jax.random.key(8)])
    _, by_seed, _ = jax.vmap(lb.sample, in_axes=(None, 0, None, None))(reference, keys, 6, config())
    np.testing.assert_array_equal(by_seed[0], by_seed[1])
    np.testing.assert_array_equal(by_seed[0], sample(reference, key, 6, config())[1])
    assert not np.array_equal(by_seed[0], by_seed[2])
    # A batch of buffers (one per seed): the full one replaces its slot 3 (0.25 > 0.2), the
    # half-filled one writes its next free slot 2.
    states = jax.tree.map(lambda *x: jnp.stack(x), reference, filled(SCORES[:2]))
    insert = jax.vmap(lb.insert, in_axes=(0, None, 0, None, None))
    states, slots = insert(states, level(9), jnp.array([0.25, 0.9]), {"max_return": 0.0}, config())
    np.testing.assert_array_equal(slots, [3, 2])
    np.testing.assert_array_equal(states.size, [4, 3])
    np.testing.assert_allclose(states.scores, [[0.1, 0.5, 0.3, 0.25], [0.1, 0.5, 0.9, 0]])


def test_duplicates_update_the_stored_level(reference):
    state, slot = lb.insert(reference, level(3), 0.9, {"max_return": 0.7}, config())
    assert int(slot) == 2 and int(state.size) == 4
    np.testing.assert_allclose(state.scores, [0.1, 0.5, 0.9, 0.2])
    np.testing.assert_allclose(state.extras["max_return"], [0.0, 0.1, 0.7, 0.3])
    np.testing.assert_array_equal(state.timestamps, [1, 2, 5, 4])
    assert int(lb.find(state, level(3))) == 2 and int(lb.find(state, level(8))) == -1
    # Without the check the same level is stored twice.
    copies = lb.init(4, level(0))
    for score in (0.1, 0.2):
        copies, _ = lb.insert(copies, level(1), score, None, config(duplicate_check=False))
    assert int(copies.size) == 2
    once = lb.init(4, level(0))
    for score in (0.1, 0.2):
        once, _ = lb.insert(once, level(1), score, None, config())
    assert int(once.size) == 1 and float(once.scores[0]) == pytest.approx(0.2)


def test_insert_batch_update_and_highest():
    state = lb.init(4, level(0), extras={"max_return": -jnp.inf})
    levels = jax.tree.map(lambda *x: jnp.stack(x), *(level(i) for i in (1, 2, 3)))
    batch = jax.jit(lb.insert_batch)
    state, slots = batch(
        state,
        levels,
        jnp.array([0.4, 0.6, 0.2]),
        {"max_return": jnp.array([1.0, 2.0, 3.0])},
        config(),
        jnp.array([True, False, True]),
    )
    np.testing.assert_array_equal(slots, [0, -1, 1])  # the invalid item is skipped
    np.testing.assert_allclose(state.scores[:2], [0.4, 0.2])
    np.testing.assert_allclose(state.extras["max_return"][:2], [1.0, 3.0])
    assert int(state.count) == 2
    # Slot 1 twice (the last wins), -1 and the empty slot 3 skipped.
    updated = jax.jit(lb.update)(
        state,
        jnp.array([1, -1, 3, 1]),
        jnp.array([0.9, 0.8, 0.7, 0.5]),
        {"max_return": jnp.array([4.0, 5.0, 6.0, 7.0])},
    )
    np.testing.assert_allclose(updated.scores, [0.4, 0.5, 0, 0])
    np.testing.assert_allclose(updated.extras["max_return"][:2], [1.0, 7.0])
    slots, scores, top = lb.highest(updated, 3)
    np.testing.assert_array_equal(slots, [1, 0, -1])
    np.testing.assert_allclose(scores, [0.5, 0.4, -np.inf])
    np.testing.assert_array_equal(top["goal"][:2, 0], [3, 1])


def test_proportional_prioritization(reference):
    # h = score^(1/T) at T=1: [0.1, 0.5, 0.3, 0.2] / 1.1.
    weights = lb.score_weights(reference, config(prioritization="proportional"))
    np.testing.assert_allclose(weights, np.array(SCORES) / 1.1, rtol=1e-6)


@contextlib.contextmanager
def no_compilation():
    """Fails if JAX traces or compiles anything inside the block."""
    events = []

    def listener(name, *args, **kwargs):
        if name.startswith("/jax/core/compile"):
            events.append(name)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield
    finally:
        monitoring.unregister_event_duration_listener(listener)
    assert not events, events


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("replay_prob", 1.5, r"a value in \[0, 1\]"),
        ("replay_prob", -0.1, r"a value in \[0, 1\]"),
        ("staleness_coeff", 2.0, r"a value in \[0, 1\]"),
        ("minimum_fill", -0.5, r"a value in \[0, 1\]"),
        ("minimum_fill", float("nan"), r"a value in \[0, 1\]"),
        ("temperature", 0.0, "a value > 0"),
        ("temperature", -1.0, "a value > 0"),
        ("temperature", jnp.array([1.0, 0.0]), "a value > 0"),
        ("prioritization", "topk", "rank, proportional"),
    ],
)
def test_bad_config_is_refused_before_compiling(reference, field, value, allowed):
    bad = config(**{field: value})
    match = rf"config\.{field}=.*allowed: {allowed}"
    key, new = jax.random.key(0), level(1)  # the arguments made (and compiled) beforehand
    with no_compilation():
        for call in (
            lambda: lb.check_config(bad),
            lambda: lb.weights(reference, bad),
            lambda: lb.sample(reference, key, 2, bad),
            lambda: lb.should_replay(reference, key, bad),
            lambda: lb.insert(reference, new, 0.5, {"max_return": 0.0}, bad),
        ):
            with pytest.raises(ValueError, match=match):
                call()


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True])
def test_bad_capacity_is_refused_before_compiling(capacity):
    first = level(0)
    with no_compilation(), pytest.raises(ValueError, match=r"capacity must be an integer >= 1"):
        lb.init(capacity, first)


def test_mismatched_levels_and_extras_are_named():
    state = lb.init(2, level(0), extras={"max_return": 0.0})
    with pytest.raises(ValueError, match=r"level\['walls'\] has shape \(3, 3\)"):
        lb.insert(
            state,
            {**level(1), "walls": jnp.zeros((3, 3), jnp.int32)},
            0.5,
            {"max_return": 0.0},
            config(),
        )
    with pytest.raises(ValueError, match="stores extras: pass them"):
        lb.insert(state, level(1), 0.5, None, config())


# Scores. One env: episodes are steps 0-2 (return 0.8) and 3-4 (return 0.9); step 5 belongs to
# an episode still running at the end of the rollout and is left out of every score.
DONES = [0, 0, 1, 0, 1, 0]
REWARDS = [0, 0, 0.8, 0, 0.9, 0]
VALUES = [0.2, 0.4, 0.6, 0.5, 0.7, 0.1]
ADVANTAGES = [0.1, -0.2, 0.3, -0.1, 0.5, 1.0]


def rollout():
    """[T=6, num_envs=2]: env 0 the rollout above, env 1 the same arrays with no episode end."""
    column = lambda x: jnp.array(x, jnp.float32)
    dones = jnp.stack([column(DONES), jnp.zeros(6)], axis=1)
    return dones, *(jnp.stack([column(x)] * 2, axis=1) for x in (REWARDS, VALUES, ADVANTAGES))


def test_scores_by_hand():
    dones, rewards, values, advantages = rollout()
    # Max and mean of the returns 0.8 and 0.9.
    np.testing.assert_allclose(ls.max_return(dones, rewards)[0], 0.9, rtol=1e-6)
    np.testing.assert_allclose(ls.mean_return(dones, rewards)[0], 0.85, rtol=1e-6)
    # MaxMC with R_max = 0.9: episode 1 mean(0.7, 0.5, 0.3) = 0.5, episode 2 mean(0.4, 0.2) = 0.3,
    # mean over episodes 0.4 (pooling the five steps would give 2.1 / 5 = 0.42; adding the
    # unfinished step 0.8 would give 2.9 / 6 = 0.483).
    np.testing.assert_allclose(ls.max_mc(dones, rewards, values)[0], 0.4, rtol=1e-6)
    # A higher return seen before (1.0): mean(0.8, 0.6, 0.4) = 0.6 and mean(0.5, 0.3) = 0.4 -> 0.5.
    prior = jnp.array([1.0, 1.0])
    np.testing.assert_allclose(ls.max_mc(dones, rewards, values, prior)[0], 0.5, rtol=1e-6)
    # PVL: positive parts [0.1, 0, 0.3 | 0, 0.5 | 1.0]; episode means 0.4/3 and 0.5/2;
    # (0.133333 + 0.25) / 2 = 0.191667 (the unfinished step's 1.0 is left out).
    np.testing.assert_allclose(ls.positive_value_loss(dones, advantages)[0], 0.191667, atol=1e-6)
    # Both episodes reach the goal (reward > 0 at their last step): p = 1, p (1 - p) = 0.
    assert float(ls.learnability(dones, rewards > 0)[0]) == 0.0


def test_an_env_without_a_finished_episode_is_never_inserted():
    dones, rewards, values, advantages = rollout()
    np.testing.assert_array_equal(ls.finished(dones), [True, False])
    scores = {
        "max_return": ls.max_return(dones, rewards),
        "mean_return": ls.mean_return(dones, rewards),
        "max_mc": ls.max_mc(dones, rewards, values),
        "pvl": ls.positive_value_loss(dones, advantages),
        "learnability": ls.learnability(dones, rewards > 0),
    }
    for name, score in scores.items():
        assert np.isfinite(score[0]) and np.isnan(score[1]), name
        state = lb.init(4, level(0))
        levels = jax.tree.map(lambda *x: jnp.stack(x), level(1), level(2))
        state, slots = lb.insert_batch(state, levels, score, None, config())
        np.testing.assert_array_equal(slots, [0, -1])
        assert int(state.size) == 1
    # An explicit value for unfinished envs, e.g. jaxued's -inf.
    assert float(ls.max_mc(dones, rewards, values, incomplete=-np.inf)[1]) == -np.inf


def test_learnability():
    # Success read at the episode ends only: env 0 [1, 0] -> p 1/2 -> 1/4; env 1, three episodes
    # [1, 0, 0] -> p 1/3 -> 2/9; a success flag on a step that ends no episode is ignored.
    dones = jnp.array([[0, 1], [1, 0], [0, 1], [1, 0], [0, 1], [0, 0]], bool)
    successes = jnp.array([[1, 1], [1, 0], [1, 0], [0, 1], [0, 0], [1, 1]], bool)
    np.testing.assert_allclose(ls.learnability(dones, successes), [0.25, 2 / 9], rtol=1e-6)


def test_paired_regret():
    # Protagonist episodes return 0.5 and 0.0 (mean 0.25), the antagonist's 0.9 and 0.7 (max 0.9):
    # regret 0.9 - 0.25 = 0.65. A better protagonist (1.0, 1.0): 0.9 - 1.0 = -0.1, clipped to 0.
    dones = jnp.array([[0], [1], [0], [1]], jnp.float32)
    antagonist = jnp.array([[0.0], [0.9], [0.0], [0.7]])
    weak = jnp.array([[0.0], [0.5], [0.0], [0.0]])
    strong = jnp.array([[0.5], [0.5], [0.0], [1.0]])
    np.testing.assert_allclose(ls.paired_regret(dones, weak, dones, antagonist), [0.65], rtol=1e-6)
    np.testing.assert_allclose(
        ls.paired_regret(dones, weak, dones, antagonist, True), [0.65], rtol=1e-6
    )
    np.testing.assert_allclose(
        ls.paired_regret(dones, strong, dones, antagonist), [-0.1], rtol=1e-5
    )
    assert float(ls.paired_regret(dones, strong, dones, antagonist, clip=True)[0]) == 0.0
    # No finished protagonist episode: incomplete.
    assert np.isnan(ls.paired_regret(jnp.zeros_like(dones), weak, dones, antagonist)[0])


def test_scores_under_jit_and_vmap():
    dones, rewards, values, advantages = rollout()
    eager = ls.max_mc(dones, rewards, values)
    np.testing.assert_allclose(jax.jit(ls.max_mc)(dones, rewards, values), eager, rtol=1e-6)
    # A batch of two rollouts (the second with rewards doubled), mapped over a leading axis.
    stack = lambda x: jnp.stack([x, x])
    batched = jax.vmap(ls.positive_value_loss)(stack(dones), stack(advantages))
    np.testing.assert_allclose(batched[:, 0], [0.191667, 0.191667], atol=1e-6)
    doubled = jax.vmap(ls.mean_return)(stack(dones), jnp.stack([rewards, 2 * rewards]))
    np.testing.assert_allclose(doubled[:, 0], [0.85, 1.7], rtol=1e-6)
    assert np.all(np.isnan(doubled[:, 1]))
