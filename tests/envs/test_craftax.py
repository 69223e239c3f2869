"""Craftax through `envs/craftax_adapter.py`.

Parity: 1,000 random steps of two environments under `jax.vmap` (the whole scan jitted), with a
time limit of 50 steps and, in Classic, zombies spawning at every step so that players also die,
equal Craftax's own auto-resetting environment (`make_craftax_env_from_name(name,
auto_reset=True)`) step for step: observations, rewards, `done` (ours `terminated | truncated`),
each episode's start and the final states. Both are given the same key at every step: Craftax's
auto-reset splits it as `key_step, key_reset = jax.random.split(key)` and resets with
`key_reset`, as our `Environment.step` does (`split_step_key`), so the same keys draw the same
worlds with no key fed by hand. Our split of `done` is checked against Craftax's own state before
its reset (its non-resetting `step_env` with the same `key_step`): an end is truncated where the
time limit was reached by a living player, terminated otherwise.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("craftax")

from rlsuite.envs import craftax_adapter as ca  # noqa: E402

CLASSIC = "Craftax-Classic-Symbolic-v1"
FULL = "Craftax-Symbolic-v1"
STEPS, NUM_ENVS, LIMIT = 1000, 2, 50
# Classic: a zombie spawns wherever it can at every step, so random play dies within 50 steps.
DEADLY = {"spawn_zombie_base_chance": 1.0, "spawn_zombie_night_chance": 1.0}


@pytest.fixture(scope="module")
def classic():
    """Classic-Symbolic, with its jitted `reset`, `step_env` and `step` (params are an argument,
    so the tests below share the compiled programs)."""
    env = ca.CraftaxEnv(CLASSIC)
    return env, jax.jit(env.reset), jax.jit(env.step_env), jax.jit(env.step)


def _reference(name, params, keys, actions):
    """Craftax's own auto-resetting environment: its first observations, then per step the
    observation, reward and done, its state before the reset (Craftax's non-resetting
    `step_env` given the key its auto-reset steps with) and its observation, and its last
    state."""
    from craftax.craftax_env import make_craftax_env_from_name

    suite = make_craftax_env_from_name(name, auto_reset=True)
    plain = make_craftax_env_from_name(name, auto_reset=False)
    over_envs = (0, 0, 0, None)

    def one(state, xs):
        key, action = xs
        key_step = jax.vmap(lambda k: jax.random.split(k)[0])(key)  # as Craftax's `step` does
        pre = jax.vmap(plain.step_env, over_envs)(key_step, state, action, params)
        pre_obs, pre_state = pre[:2]
        obs, state, reward, done, _ = jax.vmap(suite.step, over_envs)(key, state, action, params)
        return state, (obs, reward, done, pre_state.timestep, pre_state.player_health, pre_obs)

    @jax.jit
    def run(first, keys, actions):
        obs, state = jax.vmap(suite.reset, (0, None))(first, params)
        last, out = jax.lax.scan(one, state, (keys, actions))
        return obs, out, last

    first = jax.random.split(jax.random.key(7), NUM_ENVS)
    return run(first, keys, actions)


def _ours(env, params, keys, actions):
    """Our adapter through `Environment.step` (which auto-resets), given the same keys."""

    def one(state, xs):
        key, action = xs
        obs, state, reward, terminated, truncated, info = jax.vmap(env.step, (0, 0, 0, None))(
            key, state, action, params
        )
        return state, (obs, reward, terminated, truncated, info["final_observation"])

    @jax.jit
    def run(first, keys, actions):
        obs, state = jax.vmap(env.reset, (0, None))(first, params)
        last, out = jax.lax.scan(one, state, (keys, actions))
        return obs, out, last

    first = jax.random.split(jax.random.key(7), NUM_ENVS)
    return run(first, keys, actions)


def _same(ours, theirs):
    """Equal: integers and flags to the bit, floats to 1e-6 (values in [0, 1] here). The light
    level (`cos` of the time of day, and the pixels it darkens) is compiled into our program and
    into Craftax's with different fusions, and differs by one ulp at some steps."""
    if jnp.issubdtype(theirs.dtype, jax.dtypes.prng_key):  # the state's key: its bits
        ours, theirs = jax.random.key_data(ours), jax.random.key_data(theirs)
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if np.issubdtype(theirs.dtype, np.floating):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "name, options",
    [
        # Craftax's world generator compiles for 90 s on 2 cores without a warm compilation
        # cache, twice here (ours and the reference): in the slow run, as every case; the
        # default run steps Classic through a death and the time limit (below).
        pytest.param(CLASSIC, DEADLY, marks=pytest.mark.slow),
        # full Craftax compiles for about 2 minutes on 2 cores without a warm compilation cache
        pytest.param(FULL, {}, marks=pytest.mark.slow),
        pytest.param("Craftax-Classic-Pixels-v1", DEADLY, marks=pytest.mark.slow),
        pytest.param("Craftax-Pixels-v1", {}, marks=pytest.mark.slow),
    ],
)
def test_parity_with_craftaxs_own_auto_reset(name, options):
    env = ca.CraftaxEnv(name, max_timesteps=LIMIT, **options)
    params = env.default_params
    key_steps, key_actions = jax.random.split(jax.random.key(1))
    keys = jax.random.split(key_steps, (STEPS, NUM_ENVS))
    actions = jax.random.randint(key_actions, (STEPS, NUM_ENVS), 0, env.num_actions)

    ref_first, ref, ref_last = _reference(name, params, keys, actions)
    obs, reward, done, pre_time, pre_health, pre_obs = map(np.asarray, ref)
    our_first, ours, our_last = _ours(env, params, keys, actions)
    our_obs, our_reward, terminated, truncated, final = map(np.asarray, ours)

    _same(our_first, ref_first)
    _same(our_obs, obs)  # episode starts included: the same worlds
    _same(our_reward, reward)
    np.testing.assert_array_equal(terminated | truncated, done)
    assert not (terminated & truncated).any()
    jax.tree.map(_same, our_last, ref_last)
    _same(final, pre_obs)  # the pre-reset observation
    space = env.observation_space(params)
    assert our_obs.shape[2:] == space.shape and our_obs.dtype == space.dtype
    assert np.all((our_obs >= space.low) & (our_obs <= space.high))

    # The split, against Craftax's state before its reset.
    time_limit = done & (pre_time >= LIMIT) & (pre_health > 0)
    np.testing.assert_array_equal(truncated, time_limit)
    np.testing.assert_array_equal(terminated, done & ~time_limit)
    assert truncated.sum() >= NUM_ENVS  # time limits reached...
    if options:  # ...and, among the zombies, deaths (ends before the limit) in every env
        assert (terminated & (pre_time < LIMIT)).any(axis=0).all(), terminated.sum(axis=0)
    assert not np.array_equal(final[done], our_obs[done])  # a reset happened at each end


# ----------------------------------------------------------------- ends, by construction


def _with(state, **fields):
    """`state.replace(**fields)`, each value of the field's dtype (the jitted steps see the
    same types as for the suite's own states)."""
    return state.replace(
        **{k: jnp.asarray(v, jnp.asarray(getattr(state, k)).dtype) for k, v in fields.items()}
    )


def _starving(state, health=1):
    """`state` where the player, without food and about to lose a health point (its recovery
    counter at -15), has `health` points."""
    return _with(state, player_health=health, player_food=0, player_recover=-15.0)


def test_a_death_is_terminated_and_the_time_limit_truncated(classic):
    env, reset, step_env, step = classic
    params = env.default_params.replace(max_timesteps=100)
    _, start = reset(jax.random.key(0), params)
    noop, key = jnp.int32(0), jax.random.key(1)

    # Health 1, starving: the step takes the last point.
    _, state, reward, terminated, truncated, _ = step_env(key, _starving(start), noop, params)
    assert int(state.player_health) == 0 and float(reward) == pytest.approx(-0.1)
    assert bool(terminated) and not bool(truncated)

    # The step that reaches the time limit, alive: truncated, not terminated.
    last = _with(start, timestep=99)
    _, state, _, terminated, truncated, _ = step_env(key, last, noop, params)
    assert int(state.timestep) == 100 and int(state.player_health) > 0
    assert bool(truncated) and not bool(terminated)

    # Both at once: the death is the end (no bootstrap).
    _, _, _, terminated, truncated, _ = step_env(key, _starving(last), noop, params)
    assert bool(terminated) and not bool(truncated)

    # One step earlier in time, alive: no end.
    _, _, _, terminated, truncated, _ = step_env(key, _with(start, timestep=98), noop, params)
    assert not bool(terminated) and not bool(truncated)

    # Through `step`: a truncated end resets, the finished episode's last observation kept.
    obs, state, _, _, truncated, info = step(key, last, noop, params)
    assert bool(truncated) and int(state.timestep) == 0
    assert not np.array_equal(np.asarray(obs), np.asarray(info["final_observation"]))


def test_walking_into_lava_is_terminated_in_classic(classic):
    from craftax.craftax_classic.constants import Action, BlockType

    env, reset, step_env, _ = classic
    params = env.default_params
    _, state = reset(jax.random.key(0), params)
    x, y = np.asarray(state.player_position)
    state = state.replace(map=state.map.at[x, y + 1].set(BlockType.LAVA.value))
    right = jnp.int32(Action.RIGHT.value)
    _, state, _, terminated, truncated, _ = step_env(jax.random.key(1), state, right, params)
    assert list(np.asarray(state.player_position)) == [x, y + 1]
    assert bool(terminated) and not bool(truncated) and int(state.player_health) == 0


@pytest.mark.slow
def test_full_craftax_ends_for_real_at_a_death_and_at_the_final_boss():
    env = ca.CraftaxEnv(FULL)
    params = env.default_params
    step_env = jax.jit(env.step_env)
    _, start = jax.jit(env.reset)(jax.random.key(0), params)
    key, noop = jax.random.key(1), jnp.int32(0)
    boss = _with(start, boss_progress=env.craftax_env.static_env_params.num_levels - 1)
    for state in (_starving(start, health=1.0), boss):
        _, _, _, terminated, truncated, _ = step_env(key, state, noop, params)
        assert bool(terminated) and not bool(truncated)
    _, _, _, terminated, truncated, _ = step_env(key, _with(start, timestep=99_999), noop, params)
    assert bool(truncated) and not bool(terminated)
    _, _, _, terminated, truncated, _ = step_env(key, start, noop, params)
    assert not bool(terminated) and not bool(truncated)
    # A strong player's health reads over 1: the box is open above (Craftax declares [0, 1]).
    assert env.observation_space(params).high.max() == np.inf
    strong = _with(start, player_strength=5, player_health=13.0)
    health = 99 * 83 + 16 + 6  # after the map, the inventory and the potions
    assert float(env.craftax_env.get_obs(strong)[health]) == pytest.approx(1.3)


@pytest.mark.slow
def test_the_time_limit_is_a_param_that_vmaps():
    env = ca.CraftaxEnv(CLASSIC)
    assert env.max_episode_steps == 10_000 and env.default_params.max_timesteps == 10_000
    assert ca.CraftaxEnv(CLASSIC, max_timesteps=500).max_episode_steps == 500
    params = env.default_params
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), params)  # two envs' params...
    batch = batch.replace(max_timesteps=jnp.int32([3, 5]))  # ...with their own time limits

    @jax.jit
    def run(keys):
        _, state = jax.vmap(env.reset)(keys, batch)

        def one(state, key):
            _, state, _, terminated, truncated, _ = jax.vmap(env.step, (None, 0, 0, 0))(
                key, state, jnp.zeros(2, jnp.int32), batch
            )
            return state, truncated | terminated

        return jax.lax.scan(one, state, jax.random.split(jax.random.key(2), 6))[1]

    ends = np.asarray(run(jax.random.split(jax.random.key(1), 2)))
    expected = np.zeros((6, 2), bool)
    expected[[2, 5], 0] = True  # every 3 steps (the auto-reset starts a new episode)
    expected[4, 1] = True  # after 5
    np.testing.assert_array_equal(ends, expected)


# ----------------------------------------------------------------- observations, achievements


def test_the_classic_symbolic_observation_reads_as_documented(classic):
    """A state built by hand, its observation's entries derived by hand."""
    from craftax.craftax_classic.constants import BlockType

    env, reset, step_env, _ = classic
    obs, state = reset(jax.random.key(0), env.default_params)
    assert obs.shape == (1345,) and obs.dtype == jnp.float32
    assert env.observation_space(env.default_params).shape == (1345,)
    x, y = np.asarray(state.player_position)
    state = state.replace(
        map=state.map.at[x, y + 1].set(BlockType.TREE.value),  # right of the player
        cows=state.cows.replace(
            position=state.cows.position.at[0].set(jnp.int32([x - 1, y])),  # above
            mask=state.cows.mask.at[0].set(True),
        ),
        inventory=state.inventory.replace(wood=3),
        player_food=7,
    )
    state = state.replace(
        zombies=state.zombies.replace(mask=jnp.zeros_like(state.zombies.mask)),
        skeletons=state.skeletons.replace(mask=jnp.zeros_like(state.skeletons.mask)),
        arrows=state.arrows.replace(mask=jnp.zeros_like(state.arrows.mask)),
        cows=state.cows.replace(mask=state.cows.mask.at[1:].set(False)),
    )
    obs = np.asarray(env.craftax_env.get_obs(state))  # what reset/step return for this state
    cells = obs[: 7 * 9 * 21].reshape(7, 9, 21)  # the player at row 3, column 4
    assert np.all(cells[..., :17].sum(-1) == 1)  # one block type per cell
    assert cells[3, 4, BlockType.GRASS.value] == 1  # the player stands on grass at a reset
    assert cells[3, 5, BlockType.TREE.value] == 1
    mobs = cells[..., 17:]  # zombie, cow, skeleton, arrow
    assert mobs.sum() == 1 and mobs[2, 4, 1] == 1  # the cow, one row up
    rest = obs[7 * 9 * 21 :]
    assert rest.shape == (22,)
    np.testing.assert_allclose(rest[:12], [0.3] + [0] * 11, atol=1e-3)  # wood 3 / 10
    np.testing.assert_allclose(rest[12:16], [0.9, 0.7, 0.9, 0.9], atol=1e-3)  # health, food...
    np.testing.assert_array_equal(rest[16:20], [0, 0, 1, 0])  # facing up at a reset
    assert rest[21] == 0  # awake


@pytest.mark.slow
def test_achievements_in_info_describe_the_finished_episode(classic):
    from craftax.craftax_classic.constants import Achievement, Action, BlockType

    env, reset, step_env, step = classic
    assert env.achievement_names == ca.achievement_names(CLASSIC)
    assert len(env.achievement_names) == 22 and len(ca.achievement_names(FULL)) == 67
    assert env.achievement_names[:3] == ("collect_wood", "place_table", "eat_cow")
    assert env.achievement_names.index("collect_diamond") == Achievement.COLLECT_DIAMOND.value
    params = env.default_params.replace(max_timesteps=100)
    _, state = reset(jax.random.key(0), params)
    x, y = np.asarray(state.player_position)
    facing_a_tree = _with(
        state, map=state.map.at[x - 1, y].set(BlockType.TREE.value), timestep=99
    )  # facing up at a reset; the last step of the episode
    do = jnp.int32(Action.DO.value)
    _, after, reward, _, truncated, info = step_env(jax.random.key(1), facing_a_tree, do, params)
    assert int(after.inventory.wood) == 1 and float(reward) == 1.0 and bool(truncated)
    expected = np.zeros(22, np.float32)
    expected[Achievement.COLLECT_WOOD.value] = 1.0

    def unlocked(info):
        return np.array([info[f"achievement/{n}"] for n in env.achievement_names])

    np.testing.assert_array_equal(unlocked(info), expected)
    assert info["achievement/collect_wood"].dtype == jnp.float32
    assert info["achievement_count"].dtype == jnp.int32 and int(info["achievement_count"]) == 1
    # Unlocked once: a second tree chopped unlocks nothing more, and the count stays 1.
    again = _with(after, map=after.map.at[x - 1, y].set(BlockType.TREE.value), timestep=50)
    _, _, _, _, _, info_again = step_env(jax.random.key(2), again, do, params)
    assert not unlocked(info_again).any() and int(info_again["achievement_count"]) == 1
    # Through `step`: the episode ended, the state is a fresh one; info is the finished episode's.
    _, fresh, _, _, truncated, info = step(jax.random.key(1), facing_a_tree, do, params)
    assert bool(truncated) and not np.asarray(fresh.achievements).any()
    np.testing.assert_array_equal(unlocked(info), expected)
    assert env.action_mask(fresh, params) is None  # every action is always legal


# ----------------------------------------------------------------- names, options, refusals


def test_names_and_refusals():
    assert ca.installed()
    assert ca.craftax_names() == [
        "Craftax-Classic-Symbolic-v1",
        "Craftax-Symbolic-v1",
        "Craftax-Classic-Pixels-v1",
        "Craftax-Pixels-v1",
    ]
    assert set(ca.refused()) == {n.replace("-v1", "-AutoReset-v1") for n in ca.craftax_names()}
    with pytest.raises(ValueError, match="unknown Craftax environment 'Craftax-v1'; allowed: "):
        ca.CraftaxEnv("Craftax-v1")
    with pytest.raises(ValueError, match="Symbolic-AutoReset-v1' is not adapted: .*auto-reset"):
        ca.CraftaxEnv("Craftax-Symbolic-AutoReset-v1")
    with pytest.raises(ValueError, match="unknown Craftax environment"):
        ca.achievement_names("Craftax-v1")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"foo": 1}, r"unknown option\(s\) \['foo'\]; allowed: max_timesteps, day_length, "),
        ({"max_timesteps": 0}, r"params.max_timesteps=0; allowed: an integer >= 1"),
        ({"max_timesteps": 2.5}, r"params.max_timesteps=2.5; allowed: an integer >= 1"),
        ({"day_length": "long"}, r"params.day_length='long'; allowed: a number"),
        ({"always_diamond": 1}, r"params.always_diamond=1; allowed: true or false"),
        ({"spawn_cow_chance": 1.5}, r"params.spawn_cow_chance=1.5; allowed: a probability"),
        ({"mob_despawn_distance": -1}, r"mob_despawn_distance=-1; allowed: an integer >= 0"),
        ({"fractal_noise_angles": 3}, r"fractal_noise_angles=3; allowed: a tuple of 4"),
    ],
)
def test_bad_options_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        ca.CraftaxEnv(CLASSIC, **options)


def test_full_craftax_takes_its_own_params():
    env = ca.CraftaxEnv(FULL, max_timesteps=20, god_mode=True, max_attribute=3)
    assert env.max_episode_steps == 20 and env.default_params.god_mode is True
    assert env.action_space(env.default_params).n == 43
    assert env.observation_space(env.default_params).shape == (8268,)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['zombie_health'\]; allowed: "):
        ca.CraftaxEnv(FULL, zombie_health=3)  # a Classic field
    with pytest.raises(ValueError, match="params.god_mode='yes'; allowed: true or false"):
        ca.CraftaxEnv(FULL, god_mode="yes")


@pytest.mark.slow
def test_a_pixels_environment_observes_an_image():
    env = ca.CraftaxEnv("Craftax-Classic-Pixels-v1")
    space = env.observation_space(env.default_params)
    assert space.shape == (63, 63, 3) and space.dtype == jnp.float32
    obs, _ = jax.jit(env.reset)(jax.random.key(0), env.default_params)
    assert obs.shape == (63, 63, 3) and 0 <= float(obs.min()) and float(obs.max()) <= 1
    assert float(obs.std()) > 0.05  # a picture, not a blank
    assert ca.CraftaxEnv("Craftax-Pixels-v1").observation_shape == (130, 110, 3)
