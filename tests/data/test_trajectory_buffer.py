"""Tests for rlsuite.data.trajectory_buffer: the future-offset law (hand-derived), episode
boundaries (termination and truncation alike), wrap-around against a NumPy reference of the
written history, hindsight relabelling, jit / vmap / serialisation, bad input, and SAC with the
buffer and the relabelling on the point mass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization
from rlsuite.envs.point_mass import PointMass

from rlsuite import envs
from rlsuite.agents import sac
from rlsuite.data.trajectory_buffer import (
    episode_last_step,
    for_off_policy,
    gather,
    her_relabel,
    trajectory_buffer,
)
from rlsuite.loop import driver

# ----------------------------------------------------------------------------- histories
# An env's history is written step by step: the state of step t of env e is 1000 e + 10 t; the
# next state is that of step t + 1, except at an episode's last step, where it is the final
# observation 1000 e + 10 t + 5 (never a reset state). Every value is unique, so a state names its
# (env, step). With `goal`, observations are [state, goal] with the goal -(1 + episode index).


def make_history(episodes, num_steps, goal=False):
    """`episodes[e]`: a cycle of (length, end) with end "term" or "trunc". Returns the items,
    every leaf [num_steps, num_envs, ...], and the episode id of every (step, env)."""
    num_envs = len(episodes)
    state = np.zeros((num_steps, num_envs), np.float32)
    next_state = np.zeros_like(state)
    goals = np.zeros_like(state)
    term = np.zeros((num_steps, num_envs), bool)
    trunc = np.zeros_like(term)
    episode_id = np.zeros((num_steps, num_envs), np.int64)
    for e, cycle in enumerate(episodes):
        t, episode = 0, 0
        while t < num_steps:
            length, end = cycle[episode % len(cycle)]
            for p in range(length):
                if t == num_steps:
                    break
                last = p == length - 1
                state[t, e] = 1000 * e + 10 * t
                next_state[t, e] = 1000 * e + 10 * t + (5 if last else 10)
                term[t, e], trunc[t, e] = last and end == "term", last and end == "trunc"
                episode_id[t, e], goals[t, e] = episode, -(1 + episode)
                t += 1
            episode += 1
    if goal:
        obs, next_obs = np.stack([state, goals], -1), np.stack([next_state, goals], -1)
    else:
        obs, next_obs = state[..., None], next_state[..., None]
    items = {
        "obs": obs,
        "action": np.zeros((num_steps, num_envs, 1), np.float32),
        "reward": np.zeros((num_steps, num_envs), np.float32),
        "discount": (1.0 - term).astype(np.float32),
        "next_obs": next_obs,
        "terminated": term,
        "truncated": trunc,
    }
    return items, episode_id


def fill(buffer, items):
    """A fresh buffer state after adding every row of `items` in order (one scan)."""
    example = jax.tree.map(lambda x: x[0, 0], items)

    def run(items):
        state = buffer.init(example)
        return jax.lax.scan(lambda s, row: (buffer.add(s, row), None), state, items)[0]

    return jax.jit(run)(jax.tree.map(jnp.asarray, items))


def reference_last(episode_id, capacity):
    """NumPy reference: {(global step, env): global step of the last stored transition of its
    episode} over the stored steps (the last min(T, capacity) written)."""
    num_steps, num_envs = episode_id.shape
    start = num_steps - min(num_steps, capacity)
    last = {}
    for e in range(num_envs):
        for t in range(start, num_steps):
            end = t
            while end + 1 < num_steps and episode_id[end + 1, e] == episode_id[t, e]:
                end += 1
            last[(t, e)] = end
    return start, last


def locate(state_value):
    """(global step, env) of a stored state value (see the history layout above)."""
    e, rest = divmod(int(state_value), 1000)
    return rest // 10, e


# ------------------------------------------------------------------ 1. the offset law by hand
def test_offsets_follow_the_truncated_geometric_and_pick_next_obs():
    # One episode of 5 transitions (obs t -> t + 1), the last one terminating: next_obs of
    # transition 4 is the final observation (state 45 in the layout). Anchor t = 0, gamma 0.9:
    # P(k) = 0.9^k / sum_{j=1..5} 0.9^j, sum = 0.9 + 0.81 + 0.729 + 0.6561 + 0.59049 = 3.68559:
    # [0.9, 0.81, 0.729, 0.6561, 0.59049] / 3.68559 = [0.24419, 0.21977, 0.19780, 0.17802, 0.16022]
    items, _ = make_history([[(5, "term")]], 5)
    buffer = trajectory_buffer(8, 1, 0.9)
    state = fill(buffer, items)
    n = 200_000
    zeros = jnp.zeros(n, jnp.int32)
    offset, future_step = jax.jit(buffer.sample_future)(state, jax.random.key(0), zeros, zeros)
    freq = np.bincount(np.asarray(offset), minlength=7) / n
    assert freq[0] == 0 and freq[6] == 0  # never the anchor itself, never past the episode
    expected = [0.24419, 0.21977, 0.19780, 0.17802, 0.16022]
    np.testing.assert_allclose(freq[1:6], expected, atol=0.005)
    np.testing.assert_array_equal(future_step, offset - 1)  # k -> transition k - 1
    future = gather(state, future_step[:10], zeros[:10])["next_obs"][:, 0]
    np.testing.assert_array_equal(future, items["next_obs"][np.asarray(offset[:10]) - 1, 0, 0])
    # Offset 5 is the final observation, 45 (not the reset state 50 of a next episode).
    final = gather(state, jnp.array([4]), jnp.array([0]))["next_obs"]
    assert float(final[0, 0]) == 45.0
    # The full sample path: future_obs is the next_obs of transition anchor + k - 1.
    batch = jax.jit(buffer.sample, static_argnums=2)(state, jax.random.key(1), 4096)
    anchor = np.asarray(batch["obs"][:, 0]).astype(int) // 10
    k = np.asarray(batch["future_offset"])
    assert np.all(k >= 1) and np.all(anchor + k <= 5)
    np.testing.assert_array_equal(
        batch["future_obs"][:, 0], items["next_obs"][anchor + k - 1, 0, 0]
    )


# ------------------------------------------------------- 2, 3. episode boundaries in one env
def two_episodes(first_end):
    # Episode 1: states 0, 10, 20, 30 (ends by `first_end`, final 35); episode 2: 40, 50, 60
    # (truncated, final 65).
    return make_history([[(4, first_end), (3, "trunc")]], 7)[0]


def test_futures_never_cross_episodes_and_never_the_anchor():
    items = two_episodes("term")
    buffer = trajectory_buffer(10, 1, 0.8)
    batch = jax.jit(buffer.sample, static_argnums=2)(fill(buffer, items), jax.random.key(2), 20_000)
    anchor = np.asarray(batch["obs"][:, 0])
    future = np.asarray(batch["future_obs"][:, 0])
    allowed = {
        a: set(range(a + 10, end, 10)) | {end - 5}
        for a, end in [(0, 40), (10, 40), (20, 40), (30, 40), (40, 70), (50, 70), (60, 70)]
    }
    pairs = set(zip(anchor.tolist(), future.tolist(), strict=True))
    # Every allowed (anchor, future) pair occurs and no other one: no future of the other
    # episode, no anchor's own observation (offset 0).
    assert pairs == {(a, f) for a, fs in allowed.items() for f in fs}
    assert np.all(future != anchor)
    assert np.all(batch["future_offset"] >= 1)


def test_termination_and_truncation_cut_the_same():
    buffer = trajectory_buffer(10, 1, 0.8)
    sample = jax.jit(buffer.sample, static_argnums=2)
    by_term = sample(fill(buffer, two_episodes("term")), jax.random.key(3), 4096)
    by_trunc = sample(fill(buffer, two_episodes("trunc")), jax.random.key(3), 4096)
    for key in ("obs", "next_obs", "future_obs", "future_offset"):
        np.testing.assert_array_equal(by_term[key], by_trunc[key])
    assert by_term["terminated"].any() and not by_trunc["terminated"].any()


# ------------------------------------------------------------------- 4. wrap-around, several envs
# Env 3's episodes (11 steps) are longer than the capacity: the oldest rows cut its beginning.
WRAP_EPISODES = [
    [(2, "term")],
    [(3, "term"), (3, "trunc")],
    [(5, "trunc")],
    [(11, "term")],
    [(1, "term"), (4, "trunc")],
]


@pytest.mark.parametrize("capacity,num_steps", [(7, 23), (7, 5), (13, 40)])
def test_wrap_around_matches_a_numpy_reference(capacity, num_steps):
    items, episode_id = make_history(WRAP_EPISODES, num_steps)
    num_envs = len(WRAP_EPISODES)
    buffer = trajectory_buffer(capacity, num_envs, 0.9)
    state = fill(buffer, items)
    start, last = reference_last(episode_id, capacity)
    rows = num_steps - start
    assert int(state.rows) == rows and int(state.size) == rows * num_envs
    assert int(state.insert_pos) == num_steps % capacity
    # Every stored anchor: its episode's last stored step, exhaustively.
    step, env = np.meshgrid(np.arange(rows), np.arange(num_envs), indexing="ij")
    step, env = jnp.asarray(step.ravel()), jnp.asarray(env.ravel())
    found = jax.jit(episode_last_step)(state, step, env)
    expected = [last[(start + int(s), int(e))] - start for s, e in zip(step, env, strict=True)]
    np.testing.assert_array_equal(found, expected)
    # 400 draws per anchor: every offset 1..M occurs, none beyond (gamma 0.9, M <= 13: the
    # rarest has probability >= 0.9^13 / sum_{j<=13} 0.9^j > 0.04).
    reps = 400
    offset, future_step = jax.jit(buffer.sample_future)(
        state, jax.random.key(4), jnp.tile(step, reps), jnp.tile(env, reps)
    )
    offset = np.asarray(offset).reshape(reps, -1)
    np.testing.assert_array_equal(offset.min(0), 1)
    np.testing.assert_array_equal(offset.max(0), np.asarray(expected) - np.asarray(step) + 1)
    np.testing.assert_array_equal(np.asarray(future_step).reshape(reps, -1), step + offset - 1)
    # Sampled batches, item by item against the written history.
    batch = jax.jit(buffer.sample, static_argnums=2)(state, jax.random.key(5), 4096)
    batch = jax.tree.map(np.asarray, batch)
    seen = set()
    for i in range(4096):
        t, e = locate(batch["obs"][i, 0])
        k = int(batch["future_offset"][i])
        seen.add((t, e))
        assert (t, e) in last  # a stored anchor, with its own stored fields
        assert batch["next_obs"][i, 0] == items["next_obs"][t, e, 0]
        assert batch["terminated"][i] == items["terminated"][t, e]
        assert 1 <= k and t + k - 1 <= last[(t, e)]
        assert batch["future_obs"][i, 0] == items["next_obs"][t + k - 1, e, 0]
        assert episode_id[t + k - 1, e] == episode_id[t, e]
    assert seen == set(last)  # anchors uniform over every stored (step, env)


def test_binary_search_at_every_small_capacity():
    rng = np.random.default_rng(0)
    for capacity in (1, 2, 3, 5, 8, 13, 16, 17):
        num_steps = 2 * capacity + 3
        items, _ = make_history([[(1, "term")]] * 3, num_steps)
        done = rng.random((num_steps, 3)) < 0.3
        items["terminated"] = done & (rng.random(done.shape) < 0.5)
        items["truncated"] = done & ~items["terminated"]
        episode_id = np.cumsum(done, 0) - done
        state = fill(trajectory_buffer(capacity, 3, 0.5), items)
        start, last = reference_last(episode_id, capacity)
        anchors = np.array(list(last))
        found = jax.jit(episode_last_step)(state, anchors[:, 0] - start, anchors[:, 1])
        np.testing.assert_array_equal(found, np.array(list(last.values())) - start, str(capacity))


# ------------------------------------------------------------------------ 5. hindsight relabelling
def near(achieved, desired):
    """1.0 where the achieved state value is within 0.5 of the desired one (here: equal)."""
    return (jnp.abs(achieved - desired)[..., 0] < 0.5).astype(jnp.float32)


def test_her_goals_stay_in_the_episode_across_early_terminations():
    # Early terminations in every env (episodes of 1 and 2 steps among longer ones), gamma 0.99:
    # most anchors' discount window reaches far beyond their episode. Every relabelled goal is the
    # state of a next_obs of the anchor's own episode, at or after the anchor (never the next
    # episode's final state), and the reward is 1 exactly when that next_obs is the anchor's own.
    episodes = [[(2, "term"), (6, "trunc")], [(1, "term"), (3, "term")], [(4, "trunc")]]
    items, episode_id = make_history(episodes, 30, goal=True)
    buffer = trajectory_buffer(12, 3, 0.99)
    state = fill(buffer, items)
    start, last = reference_last(episode_id, 12)
    relabel = jax.jit(her_relabel(1, (0,), near, relabel_prob=1.0))
    batch = jax.jit(buffer.sample, static_argnums=2)(state, jax.random.key(6), 4096)
    out = jax.tree.map(np.asarray, relabel(jax.random.key(7), batch))
    for i in range(4096):
        t, e = locate(out["obs"][i, 0])
        goal = out["obs"][i, 1]
        assert out["next_obs"][i, 1] == goal
        futures = items["next_obs"][t : last[(t, e)] + 1, e, 0]
        assert goal in futures, (t, e, goal)
        assert goal == items["next_obs"][t + int(out["future_offset"][i]) - 1, e, 0]
        assert out["reward"][i] == float(goal == items["next_obs"][t, e, 0])
    np.testing.assert_array_equal(out["discount"], batch["discount"])


def test_her_reward_is_judged_at_the_next_state():
    # By hand: state_dim 1, goal_indices (0,), obs [state, goal], desired goal 9.
    # Item 0: s_t = 0, s_{t+1} = 1, future state 1 -> goal 1; reward near(s_{t+1}=1, 1) = 1
    #   (near(s_t=0, 1) = 0 would be the reward of the current state).
    # Item 1: s_t = 0, s_{t+1} = 1, future state 2 -> goal 2; reward near(1, 2) = 0.
    # Item 2: s_t = 3, s_{t+1} = 3 (the episode's final state), future 3 -> reward 1.
    batch = {
        "obs": jnp.array([[0.0, 9.0], [0.0, 9.0], [3.0, 9.0]]),
        "next_obs": jnp.array([[1.0, 9.0], [1.0, 9.0], [3.0, 9.0]]),
        "future_obs": jnp.array([[1.0, 9.0], [2.0, 9.0], [3.0, 9.0]]),
        "reward": jnp.array([7.0, 7.0, 7.0]),
        "discount": jnp.array([0.9, 0.9, 0.0]),
    }
    out = her_relabel(1, (0,), near, relabel_prob=1.0)(jax.random.key(0), batch)
    np.testing.assert_array_equal(out["obs"], [[0.0, 1.0], [0.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(out["next_obs"], [[1.0, 1.0], [1.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(out["reward"], [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(out["discount"], batch["discount"])
    np.testing.assert_array_equal(out["future_obs"], batch["future_obs"])


def test_her_relabel_probability():
    # Goals 9, futures' achieved goals in [0, 1): a relabelled item's goal is below 9.
    n = 20_000
    key_state, key_future = jax.random.split(jax.random.key(8))
    states = jax.random.uniform(key_state, (n, 2))
    batch = {
        "obs": jnp.concatenate([states, jnp.full((n, 1), 9.0)], -1),
        "next_obs": jnp.concatenate([states + 1, jnp.full((n, 1), 9.0)], -1),
        "future_obs": jnp.concatenate(
            [jax.random.uniform(key_future, (n, 2)), jnp.zeros((n, 1))], -1
        ),
        "reward": jnp.full((n,), 5.0),
    }

    # state_dim 2 with goal_indices (1,): the goal is the second state entry.
    def relabelled(prob):
        out = jax.jit(her_relabel(2, (1,), near, prob))(jax.random.key(9), batch)
        return out, np.asarray(out["obs"][:, 2] < 9.0)

    out, picked = relabelled(0.0)
    for key in batch:
        np.testing.assert_array_equal(out[key], batch[key])  # the identity
    out, picked = relabelled(1.0)
    assert picked.all()
    np.testing.assert_array_equal(out["obs"][:, 2], batch["future_obs"][:, 1])
    out, picked = relabelled(0.8)
    assert abs(picked.mean() - 0.8) < 0.02  # 7 standard deviations (0.0028)
    np.testing.assert_array_equal(out["reward"][~picked], 5.0)
    np.testing.assert_array_equal(out["obs"][:, :2], batch["obs"][:, :2])  # states untouched


# --------------------------------------------------------- 6. jit, vmap, checkpoints, bad input
def test_vmap_over_two_buffer_states_equals_separate_calls():
    buffer = trajectory_buffer(6, 2, 0.9)
    runs = [
        make_history([[(3, "term")], [(4, "trunc")]], 9)[0],
        make_history([[(2, "trunc")], [(5, "term")]], 4)[0],
    ]
    states = [fill(buffer, items) for items in runs]
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *states)
    keys = jax.random.split(jax.random.key(10))
    sample = jax.jit(lambda s, k: buffer.sample(s, k, 256))
    batched = jax.jit(jax.vmap(lambda s, k: buffer.sample(s, k, 256)))(stacked, keys)
    for i, state in enumerate(states):
        one = sample(state, keys[i])
        for key in one:
            np.testing.assert_array_equal(batched[key][i], one[key])
    row = jax.tree.map(lambda x: jnp.asarray(x[0]), runs[0])
    added = jax.jit(jax.vmap(buffer.add, in_axes=(0, None)))(stacked, row)
    for i, state in enumerate(states):
        np.testing.assert_array_equal(added.episode[i], buffer.add(state, row).episode)
        np.testing.assert_array_equal(added.data["obs"][i], buffer.add(state, row).data["obs"])
    np.testing.assert_array_equal(added.size, [12, 10])  # rows 6 (full), 5; times 2 envs


def test_state_round_trips_through_serialisation():
    buffer = trajectory_buffer(6, 2, 0.9)
    state = fill(buffer, make_history([[(3, "term")], [(4, "trunc")]], 9)[0])
    blank = buffer.init(jax.tree.map(lambda x: x[0, 0], make_history([[(1, "term")]] * 2, 1)[0]))
    restored = serialization.from_bytes(blank, serialization.to_bytes(state))
    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(restored), strict=True):
        np.testing.assert_array_equal(a, b)
    key = jax.random.key(11)
    np.testing.assert_array_equal(
        buffer.sample(state, key, 32)["future_obs"], buffer.sample(restored, key, 32)["future_obs"]
    )
    row = jax.tree.map(lambda x: x[0], restored.data)  # the restored state takes new rows
    np.testing.assert_array_equal(buffer.add(restored, row).rows, 6)


def test_valid_mask_writes_whole_rows_only():
    buffer = trajectory_buffer(4, 2, 0.9)
    items, _ = make_history([[(2, "term")]] * 2, 3)
    state = buffer.init(jax.tree.map(lambda x: x[0, 0], items))
    row = jax.tree.map(lambda x: jnp.asarray(x[0]), items)
    state = buffer.add(state, row, jnp.array([False, False]))  # an n-step window filling
    state = buffer.add(state, row, jnp.array([True, False]))
    assert (int(state.rows), int(state.skipped), int(state.insert_pos)) == (0, 2, 0)
    assert not bool(buffer.can_sample(state, 1))
    state = buffer.add(state, row, jnp.array([True, True]))
    assert (int(state.rows), int(state.skipped)) == (1, 2) and bool(buffer.can_sample(state, 2))
    assert not bool(buffer.can_sample(state, 3))


def test_bad_input_is_refused_naming_the_field():
    cases = [
        (lambda: trajectory_buffer(0, 1, 0.9), "capacity"),
        (lambda: trajectory_buffer(4, 0, 0.9), "num_envs"),
        (lambda: trajectory_buffer(4, 1, 1.0), "gamma"),
        (lambda: trajectory_buffer(4, 1, 0.0), "gamma"),
        (lambda: trajectory_buffer(4, 1, 0.9, max_episode_steps=5), "max_episode_steps"),
        (lambda: her_relabel(2, (0,), near, relabel_prob=1.5), "relabel_prob"),
        (lambda: her_relabel(2, (0,), near, relabel_prob=-0.1), "relabel_prob"),
        (lambda: her_relabel(2, (2,), near), "goal_indices"),
        (lambda: her_relabel(0, (0,), near), "state_dim"),
        (lambda: for_off_policy(sac.SACConfig(n_step=3), 0.9, n_step=3), "SACConfig.n_step=3"),
    ]
    for build, field in cases:
        with pytest.raises(ValueError, match=field):
            build()
    buffer = trajectory_buffer(4, 2, 0.9)
    items, _ = make_history([[(2, "term")]] * 2, 1)
    with pytest.raises(ValueError, match="terminated"):
        buffer.init({"next_obs": jnp.zeros(1), "truncated": jnp.zeros((), bool)})
    state = buffer.init(jax.tree.map(lambda x: x[0, 0], items))
    with pytest.raises(ValueError, match="num_envs=2"):
        buffer.add(state, jax.tree.map(lambda x: jnp.asarray(x[0, :1]), items))
    with pytest.raises(ValueError, match="valid"):
        buffer.add(state, jax.tree.map(lambda x: jnp.asarray(x[0]), items), jnp.ones(3, bool))


# ------------------------------------------------------------------- 7. SAC with HER on PointMass
def test_sac_learns_from_the_trajectory_buffer_with_her_without_nan():
    # Episodes of 3 steps (time limit), 2 envs, 8 updates: learning starts on update 4.
    env, params = envs.make("point_mass", max_episode_steps=3)
    config = sac.SACConfig(
        num_envs=2, buffer_size=64, batch_size=8, learning_starts=8, hidden_sizes=(8,)
    )
    buffer = for_off_policy(config, gamma=0.9, max_episode_steps=3)
    relabel = her_relabel(4, (0, 1), lambda a, d: PointMass.compute_reward(a, d, params))
    agent = sac.make(config, env, params, buffer=buffer, relabel=relabel)
    train = jax.jit(driver.train, static_argnums=(0, 3))
    state, metrics = train(agent, jax.random.key(12), sac.SACHparams(), 8)
    assert int(state.buffer.rows) == 8
    np.testing.assert_array_equal(state.buffer.next_episode, [2, 2])  # ends at steps 2 and 5
    np.testing.assert_array_equal(metrics["charts/buffer_size"], np.arange(2, 17, 2))
    losses = np.asarray(metrics["losses/critic_loss"])
    assert np.all(np.isnan(losses[:3])) and np.all(np.isfinite(losses[3:]))
    assert np.all(np.isfinite(np.asarray(metrics["losses/actor_loss"][3:])))
    batch = relabel(jax.random.key(13), buffer.sample(state.buffer, jax.random.key(14), 64))
    assert all(np.all(np.isfinite(np.asarray(v, np.float32))) for v in batch.values())
