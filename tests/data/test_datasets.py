"""Tests for rlsuite.data.datasets: the dataset pytree, its helpers, the D4RL and Minari layouts."""

import dataclasses
import json
import os
import re
import tempfile
import warnings

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.data import datasets
from rlsuite.data.dataset_files import load_d4rl, load_minari, save_d4rl
from rlsuite.data.datasets import Dataset, DatasetInfo
from rlsuite.data.transition import Transition
from rlsuite.environment.wrappers import EpisodeStatistics
from rlsuite.loop.rollout import reset_batch, rollout
from rlsuite.ops import footprint

INFO = DatasetInfo(
    env="pendulum",
    quality="medium",
    algo="sac",
    seed=3,
    env_steps=1000,
    random_return=-1200.0,
    expert_return=-150.0,
    extra={"note": "test", "nested": {"lr": 3e-4, "sizes": [64, 64]}},
)


def _arrays(n=40, obs_dim=3, act_dim=2, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "observations": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "actions": rng.uniform(-1, 1, size=(n, act_dim)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "terminals": rng.random(n) < 0.1,
        "timeouts": rng.random(n) < 0.1,
        "next_observations": rng.normal(size=(n, obs_dim)).astype(np.float32),
    }


def _dataset(info=INFO, **kwargs):
    return Dataset(**{k: jnp.asarray(v) for k, v in _arrays(**kwargs).items()}, info=info)


def _write(path, arrays, infos=False):
    with h5py.File(path, "w") as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value)
        if infos:
            f.create_dataset("infos/qpos", data=np.zeros((len(arrays["rewards"]), 2)))
            f.create_dataset("infos/goal", data=np.ones(len(arrays["rewards"])))
    return path


def _assert_bitwise(dataset, arrays):
    for key in datasets.KEYS:
        got, want = np.asarray(getattr(dataset, key)), np.asarray(arrays[key])
        assert got.dtype == want.dtype and got.shape == want.shape, key
        assert got.tobytes() == want.tobytes(), key


# ----------------------------------------------------------------------------- D4RL layout


def test_d4rl_round_trip_is_bitwise_with_metadata(tmp_path):
    dataset = _dataset()
    path = save_d4rl(tmp_path / "pendulum-medium.hdf5", dataset)
    with h5py.File(path, "r") as f:  # D4RL's keys and dtypes
        assert {k for k in f} == set(datasets.KEYS)
        assert f["observations"].dtype == np.float32 and f["terminals"].dtype == np.bool_
    loaded = load_d4rl(path)
    _assert_bitwise(loaded, {k: getattr(dataset, k) for k in datasets.KEYS})
    assert loaded.info == INFO and hash(loaded.info) == hash(INFO)
    assert loaded.info.extra["nested"]["sizes"] == [64, 64]
    assert len(loaded) == 40 and isinstance(loaded.observations, jax.Array)


def test_save_refuses_to_overwrite_and_overwrite_true_replaces(tmp_path):
    path = save_d4rl(tmp_path / "d.hdf5", _dataset())
    before = path.read_bytes()
    other = _dataset(seed=1)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        save_d4rl(path, other)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["d.hdf5"]  # no temporary file left behind
    save_d4rl(path, other, overwrite=True)
    assert path.read_bytes() != before
    _assert_bitwise(load_d4rl(path), _arrays(seed=1))
    assert os.listdir(tmp_path) == ["d.hdf5"]


def test_interrupted_save_leaves_the_old_file(tmp_path, monkeypatch):
    path = save_d4rl(tmp_path / "d.hdf5", _dataset())
    before = path.read_bytes()

    def fail(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", fail)  # interrupted just before the rename
    with pytest.raises(KeyboardInterrupt):
        save_d4rl(path, _dataset(seed=1), overwrite=True)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["d.hdf5"]


def test_save_never_clobbers_a_file_that_appears_during_the_write(tmp_path, monkeypatch):
    path = tmp_path / "d.hdf5"
    mkstemp = tempfile.mkstemp

    def racing(*args, **kwargs):
        path.write_bytes(b"another writer")  # appears after the first existence check
        return mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", racing)
    with pytest.raises(FileExistsError, match="d.hdf5 exists"):
        save_d4rl(path, _dataset())
    assert path.read_bytes() == b"another writer" and os.listdir(tmp_path) == ["d.hdf5"]


def _corrupt(arrays, case):
    n = len(arrays["rewards"])
    if case == "missing":
        del arrays["rewards"]
    elif case == "rank":
        arrays["rewards"] = arrays["rewards"][:, None]
    elif case == "length":
        arrays["actions"] = arrays["actions"][:-1]
    elif case == "nan":
        arrays["observations"][5, 1] = np.nan
    elif case == "next_shape":
        arrays["next_observations"] = np.zeros((n, 4), np.float32)
    elif case == "dtype":
        arrays["rewards"] = np.array([b"x"] * n)
    elif case == "flags":
        arrays["terminals"] = np.full(n, 2, np.int8)
    elif case == "overflow":  # finite in float64, infinite once converted to float32
        arrays["rewards"] = arrays["rewards"].astype(np.float64)
        arrays["rewards"][7] = 1e39
    return arrays


@pytest.mark.parametrize(
    "case, key, what",
    [
        ("missing", "rewards", "missing key"),
        ("rank", "rewards", r"shape \(40, 1\); expected \[N\]"),
        ("length", "actions", "length mismatch: key 'actions' has 39 rows"),
        ("nan", "observations", r"NaN values \(first at row 5\)"),
        ("next_shape", "next_observations", r"shape \(40, 4\), but observations have"),
        ("dtype", "rewards", "non-numeric dtype"),
        ("flags", "terminals", "values other than 0 and 1"),
        ("overflow", "rewards", r"infinite \(in float32\) values \(first at row 7\)"),
    ],
)
def test_load_d4rl_refuses_corrupt_files_naming_file_and_key(tmp_path, case, key, what):
    path = _write(tmp_path / f"{case}.hdf5", _corrupt(_arrays(), case))
    with pytest.raises(ValueError) as error:
        load_d4rl(path)
    message = str(error.value)
    assert message.startswith(f"D4RL file {path}:") and f"'{key}'" in message
    assert re.search(what, message), message


def test_load_d4rl_refuses_missing_file_and_non_hdf5(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.hdf5"):
        load_d4rl(tmp_path / "nope.hdf5")
    (tmp_path / "text.hdf5").write_text("not hdf5")
    with pytest.raises(ValueError, match="text.hdf5: not a readable HDF5 file"):
        load_d4rl(tmp_path / "text.hdf5")
    path = _write(tmp_path / "meta.hdf5", _arrays())
    with h5py.File(path, "a") as f:
        f.attrs["rlsuite_info"] = "{not json"
    with pytest.raises(ValueError, match="meta.hdf5: attribute 'rlsuite_info' is corrupt"):
        load_d4rl(path)


def test_save_refuses_a_dataset_with_nan_and_writes_nothing(tmp_path):
    dataset = _dataset()
    dataset = dataset.replace(rewards=dataset.rewards.at[3].set(jnp.nan))
    with pytest.raises(ValueError, match=r"bad.hdf5: key 'rewards' contains NaN .* row 3"):
        save_d4rl(tmp_path / "bad.hdf5", dataset)
    assert os.listdir(tmp_path) == []


def test_d4rl_style_file_without_metadata_and_with_infos_loads(tmp_path):
    arrays = _arrays(n=12)
    path = _write(tmp_path / "hopper-medium-v2.hdf5", arrays, infos=True)
    dataset = load_d4rl(path)
    _assert_bitwise(dataset, arrays)
    assert dataset.info.env == "hopper-medium-v2" and dataset.info.quality is None
    # float64 arrays and 0/1 float flags (as some files have) are converted.
    arrays64 = {k: v.astype(np.float64) for k, v in arrays.items()}
    loaded = load_d4rl(_write(tmp_path / "f64.hdf5", arrays64), info=INFO)
    _assert_bitwise(loaded, arrays)
    assert loaded.info == INFO


def test_d4rl_file_without_next_observations_is_refused_or_rebuilt(tmp_path):
    # Rows 0-2: an episode ending in a terminal; rows 3-4: one cut by a timeout at row 4;
    # rows 5-6: the trailing incomplete episode.
    arrays = {
        "observations": np.arange(7, dtype=np.float32)[:, None] * [1, 10],
        "actions": np.zeros((7, 1), np.float32),
        "rewards": np.arange(7, dtype=np.float32),
        "terminals": np.array([0, 0, 1, 0, 0, 0, 0], bool),
        "timeouts": np.array([0, 0, 0, 0, 1, 0, 0], bool),
    }
    path = _write(tmp_path / "d4rl.hdf5", arrays, infos=True)
    with pytest.raises(ValueError, match="'next_observations'.*rebuild_next_observations=True"):
        load_d4rl(path)
    dataset = load_d4rl(path, rebuild_next_observations=True)
    # Row 4 (timeout: its next observation is unknown) and row 6 (last, not terminal) are
    # dropped; row 3 becomes the timeout; the terminal row 2 keeps its own observation.
    np.testing.assert_array_equal(dataset.observations[:, 0], [0, 1, 2, 3, 5])
    np.testing.assert_array_equal(dataset.next_observations[:, 0], [1, 2, 2, 4, 6])
    np.testing.assert_array_equal(dataset.next_observations[:, 1], [10, 20, 20, 40, 60])
    np.testing.assert_array_equal(dataset.terminals, [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(dataset.timeouts, [0, 0, 0, 1, 0])
    np.testing.assert_array_equal(datasets.episode_returns(dataset), [0 + 1 + 2, 3])


def test_load_d4rl_checks_the_environment_spaces(tmp_path):
    env, params = envs.make("pendulum")  # observation (3,), action (1,)
    good = _write(tmp_path / "good.hdf5", _arrays(act_dim=1))
    assert len(load_d4rl(good, env=env, env_params=params)) == 40
    bad = _write(tmp_path / "bad.hdf5", _arrays(act_dim=2))
    with pytest.raises(ValueError, match=r"bad.hdf5: key 'actions' has rows of shape \(2,\)"):
        load_d4rl(bad, env=env, env_params=params)
    # Integer actions for a continuous env would train on int32 actions: refused.
    ints = _write(tmp_path / "ints.hdf5", {**_arrays(act_dim=1), "actions": np.ones((40, 1), int)})
    with pytest.raises(ValueError, match="'actions' is int64, Pendulum has continuous actions"):
        load_d4rl(ints, env=env, env_params=params)
    assert load_d4rl(ints).actions.dtype == jnp.int32  # no env: nothing to check against


def test_discrete_actions_out_of_range_are_refused(tmp_path):
    env, params = envs.make("cartpole")  # Discrete(2); an index of 7 would be clamped silently
    arrays = {**_arrays(obs_dim=4, act_dim=1), "actions": np.zeros(40, np.int64)}
    good = load_d4rl(_write(tmp_path / "good.hdf5", arrays), env=env, env_params=params)
    assert good.actions.dtype == jnp.int32
    arrays["actions"][9] = 7
    path = _write(tmp_path / "bad.hdf5", arrays)
    with pytest.raises(ValueError, match=r"'actions' holds 7 at row 9; the actions of .* 0 to 1"):
        load_d4rl(path, env=env, env_params=params)
    episodes = _episodes()
    for e in episodes.values():
        e["observations"] = np.zeros((len(e["actions"]) + 1, 4))
        e["actions"] = np.zeros(len(e["actions"]), np.int64)
    episodes[2]["actions"][0] = -1
    root = _write_minari(tmp_path / "ds", episodes)
    with pytest.raises(ValueError, match="'actions' holds -1 at row 5"):
        load_minari(root, env=env, env_params=params)


def test_a_file_of_a_newer_format_is_refused(tmp_path):
    path = save_d4rl(tmp_path / "d.hdf5", _dataset())
    with h5py.File(path, "a") as f:
        f.attrs["rlsuite_format"] = 2
    with pytest.raises(ValueError, match="'rlsuite_format' is 2; this rlsuite reads format 1"):
        load_d4rl(path)


def test_loading_refuses_a_dataset_too_large_before_reading_it(tmp_path, monkeypatch):
    if len(jax.devices()) > 1:
        pytest.skip("the available bytes below are for one device")
    # 10 rows: obs + next obs 2 * 3 * 4, actions 2 * 4, reward 4, two flags 1 each = 38 bytes.
    # The file holds a NaN: had the arrays been read first, that error would come first.
    path = _write(tmp_path / "big.hdf5", _corrupt(_arrays(n=10), "nan"))
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: 400)
    with pytest.raises(
        MemoryError, match=r"big.hdf5 needs 380 bytes, more than 90% of the 400 bytes"
    ):
        load_d4rl(path)
    minari_dir = _write_minari(tmp_path / "minari", _episodes())
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: 10)
    with pytest.raises(MemoryError, match="main_data.hdf5 needs"):
        load_minari(minari_dir)


# ----------------------------------------------------------------------------- Minari layout


def _episodes():
    rng = np.random.default_rng(5)
    episodes = {}
    for i, (steps, end) in {
        0: (3, "term"),
        1: (2, "trunc"),
        2: (1, "term"),
        10: (4, "trunc"),
    }.items():
        flags = np.zeros(steps, bool)
        episodes[i] = {
            "observations": rng.normal(size=(steps + 1, 2)),  # float64, as Minari writes them
            "actions": rng.normal(size=(steps, 1)),
            "rewards": rng.normal(size=steps),
            "terminations": flags | (end == "term") & (np.arange(steps) == steps - 1),
            "truncations": flags | (end == "trunc") & (np.arange(steps) == steps - 1),
        }
    return episodes


def _write_minari(root, episodes, metadata=None):
    (root / "data").mkdir(parents=True)
    with h5py.File(root / "data" / "main_data.hdf5", "w") as f:
        for i in (10, 2, 0, 1):  # written out of order: read in increasing id
            group = f.create_group(f"episode_{i}")
            for key, value in episodes[i].items():
                group.create_dataset(key, data=value)
            group.create_dataset("infos/success", data=np.zeros(len(episodes[i]["rewards"]) + 1))
    if metadata is not None:
        (root / "data" / "metadata.json").write_text(json.dumps(metadata))
    return root


def test_minari_layout_loads_episodes_in_id_order(tmp_path):
    episodes = _episodes()
    meta = {"dataset_id": "pointmass/medium-v0", "ref_min_score": -5.0, "ref_max_score": 7.5}
    dataset = load_minari(_write_minari(tmp_path / "ds", episodes, meta))
    order = [episodes[i] for i in (0, 1, 2, 10)]
    want = {
        "observations": np.concatenate([e["observations"][:-1] for e in order]),
        "next_observations": np.concatenate([e["observations"][1:] for e in order]),
        "actions": np.concatenate([e["actions"] for e in order]),
        "rewards": np.concatenate([e["rewards"] for e in order]),
        "terminals": np.concatenate([e["terminations"] for e in order]),
        "timeouts": np.concatenate([e["truncations"] for e in order]),
    }
    want = {k: v.astype(np.float32) if v.dtype == np.float64 else v for k, v in want.items()}
    _assert_bitwise(dataset, want)
    assert len(dataset) == 3 + 2 + 1 + 4
    np.testing.assert_allclose(
        datasets.episode_returns(dataset), [e["rewards"].astype(np.float32).sum() for e in order]
    )
    info = dataset.info
    assert (info.env, info.random_return, info.expert_return) == ("pointmass/medium-v0", -5, 7.5)
    # Without metadata the directory names the dataset.
    plain = load_minari(_write_minari(tmp_path / "plain", episodes))
    assert plain.info.env == "plain" and plain.info.random_return is None


@pytest.mark.parametrize(
    "change, what",
    [
        (lambda e: e.pop("truncations"), "missing key 'truncations'"),
        (lambda e: e.update(observations=e["observations"][:-1]), "'observations' has 2 rows"),
        (lambda e: e.update(rewards=e["rewards"][:1]), "key 'rewards' has 1 rows"),
        (lambda e: e["actions"].__setitem__((0, 0), np.nan), "'actions' contains NaN"),
        (lambda e: e.update(actions=np.zeros((2, 3))), r"'actions' has rows of shape \(3,\)"),
    ],
)
def test_minari_refuses_corrupt_episodes_naming_episode_and_key(tmp_path, change, what):
    episodes = _episodes()
    change(episodes[1])
    root = _write_minari(tmp_path / "ds", episodes)
    with pytest.raises(ValueError, match=f"main_data.hdf5 episode 'episode_1': .*{what}"):
        load_minari(root)


def test_minari_dataset_written_by_minari_itself_loads_as_minari_reads_it(tmp_path, monkeypatch):
    """An independent writer: the minari package's own DataCollector records gymnasium's
    CartPole (episodes that terminate and episodes cut at a 15-step limit) into its HDF5 layout;
    our loader gives minari's episodes back, checked against our CartPole's spaces."""
    import gymnasium
    import minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    env = minari.DataCollector(
        gymnasium.make("CartPole-v1", max_episode_steps=15), data_format="hdf5"
    )
    # Every episode's reset seeded: with the first one seeded only, the later episodes differed
    # from process to process, and in one run none of the six ended before the limit.
    env.action_space.seed(5)
    for episode in range(6):
        env.reset(seed=5 + episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # minari asks for an author and e-mail
        written = env.create_dataset(
            "cartpole/random-v0", algorithm_name="random", ref_min_score=9.0, ref_max_score=500.0
        )
    episodes = list(written.iterate_episodes())
    ends = [(bool(e.terminations[-1]), bool(e.truncations[-1])) for e in episodes]
    assert (True, False) in ends and (False, True) in ends  # both kinds of episode end
    dataset = load_minari(tmp_path / "cartpole" / "random-v0", *envs.make("cartpole"))
    want = {
        "observations": np.concatenate([e.observations[:-1] for e in episodes]),
        "next_observations": np.concatenate([e.observations[1:] for e in episodes]),
        "actions": np.concatenate([e.actions for e in episodes]),
        "rewards": np.concatenate([e.rewards for e in episodes]).astype(np.float32),
        "terminals": np.concatenate([e.terminations for e in episodes]),
        "timeouts": np.concatenate([e.truncations for e in episodes]),
    }
    for key, value in want.items():
        np.testing.assert_array_equal(np.asarray(getattr(dataset, key)), value, err_msg=key)
    info = dataset.info
    assert (info.env, info.algo) == ("cartpole/random-v0", "random")
    assert (info.random_return, info.expert_return) == (9.0, 500.0)


def test_minari_refuses_missing_directory_and_empty_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="main_data.hdf5"):
        load_minari(tmp_path / "none")
    (tmp_path / "empty" / "data").mkdir(parents=True)
    h5py.File(tmp_path / "empty" / "data" / "main_data.hdf5", "w").close()
    with pytest.raises(ValueError, match="no 'episode_<id>' groups"):
        load_minari(tmp_path / "empty")
    (tmp_path / "arrow" / "data" / "episode_0").mkdir(parents=True)
    (tmp_path / "arrow" / "data" / "metadata.json").write_text('{"data_format": "arrow"}')
    with pytest.raises(ValueError, match="minari's Arrow format; only its HDF5 format"):
        load_minari(tmp_path / "arrow")


# ----------------------------------------------------------------------------- from_transitions

T, NUM_ENVS = 48, 3


@pytest.fixture(scope="module")
def cartpole_rollout():
    env, params = envs.make("cartpole", max_episode_steps=12)  # terminations and truncations
    env = EpisodeStatistics(env)

    def policy(key, obs):
        return jax.random.randint(key, (obs.shape[0],), 0, 2), {}

    @jax.jit
    def run(key):
        key_reset, key_run = jax.random.split(key)
        batch = reset_batch(env, params, key_reset, NUM_ENVS)
        return rollout(env, params, policy, key_run, batch, T)[1]

    return env, params, jax.device_get(run(jax.random.key(0)))


def test_from_transitions_keeps_episodes_contiguous_and_returns_match(cartpole_rollout):
    env, params, tr = cartpole_rollout
    assert tr.terminated.any() and tr.truncated.any()
    info = DatasetInfo(env="cartpole", quality="random", algo="uniform", seed=0)
    dataset = datasets.from_transitions(tr, info)
    assert len(dataset) == T * NUM_ENVS and dataset.info.env_steps == T * NUM_ENVS
    assert dataset.actions.dtype == jnp.int32 and dataset.actions.shape == (T * NUM_ENVS,)
    # Env-major: row e * T + t is step t of env e.
    for e in range(NUM_ENVS):
        rows = slice(e * T, (e + 1) * T)
        np.testing.assert_array_equal(dataset.observations[rows], tr.obs[:, e])
        np.testing.assert_array_equal(dataset.next_observations[rows], tr.next_obs[:, e])
        np.testing.assert_array_equal(dataset.terminals[rows], tr.terminated[:, e])
    # Within an episode each row's next observation is the next row's observation.
    done = np.asarray(dataset.terminals | dataset.timeouts)
    np.testing.assert_array_equal(
        dataset.next_observations[:-1][~done[:-1]], dataset.observations[1:][~done[:-1]]
    )
    assert done[T - 1 :: T].all()  # every env's stream ends an episode
    # The reference: EpisodeStatistics' return where an episode ended, and its running return at
    # the end of a stream cut mid-episode (marked as a timeout).
    want = []
    for e in range(NUM_ENVS):
        for t in range(T):
            if tr.info["episode_done"][t, e] or t == T - 1:
                want.append(tr.info["episode_return"][t, e])
    np.testing.assert_array_equal(datasets.episode_returns(dataset), want)
    cut = int((~tr.terminated[-1] & ~tr.truncated[-1]).sum())
    assert int(dataset.timeouts.sum()) == int(tr.truncated.sum()) + cut


def test_cartpole_dataset_round_trip_and_env_check(cartpole_rollout, tmp_path):
    env, params, tr = cartpole_rollout
    dataset = datasets.from_transitions(tr, DatasetInfo(env="cartpole"))
    path = save_d4rl(tmp_path / "cartpole.hdf5", dataset)
    loaded = load_d4rl(path, env=env, env_params=params)
    _assert_bitwise(loaded, {k: getattr(dataset, k) for k in datasets.KEYS})
    pendulum, pendulum_params = envs.make("pendulum")
    with pytest.raises(ValueError, match=r"key 'observations' has rows of shape \(4,\)"):
        load_d4rl(path, env=pendulum, env_params=pendulum_params)


def test_from_transitions_refuses_wrong_shapes():
    tr = Transition(
        obs=jnp.zeros((4, 2, 3)),
        action=jnp.zeros((4, 2, 1)),
        reward=jnp.zeros((4, 2)),
        terminated=jnp.zeros((4, 2), bool),
        truncated=jnp.zeros((4, 2), bool),
        next_obs={"x": jnp.zeros((4, 2, 3))},
    )
    with pytest.raises(ValueError, match="transitions.next_obs must be an array"):
        datasets.from_transitions(tr, INFO)
    with pytest.raises(ValueError, match=r"\[T, num_envs\] rewards"):
        datasets.from_transitions(tr._replace(reward=jnp.zeros(4)), INFO)


# ----------------------------------------------------------------------------- helpers


def test_normalized_score_hand_values():
    # 100 * (-255 + 1200) / (-150 + 1200) = 100 * 945 / 1050 = 90
    assert datasets.normalized_score(-255.0, -1200.0, -150.0) == 90.0
    np.testing.assert_allclose(
        datasets.normalized_score(np.array([-1200.0, -150.0, -675.0]), -1200, -150), [0, 100, 50]
    )
    score = jax.jit(lambda r: datasets.normalized_score(r, 10.0, 20.0))(jnp.array([15.0, 30.0]))
    np.testing.assert_allclose(score, [50.0, 200.0])
    assert datasets.normalized_score(-255, INFO.random_return, INFO.expert_return) == 90.0
    with pytest.raises(ValueError, match="expert_return=None"):
        datasets.normalized_score(1.0, 0.0, None)
    with pytest.raises(ValueError, match="random_return == expert_return"):
        datasets.normalized_score(1.0, 5.0, 5.0)


def test_episode_returns_hand_values():
    # Rewards 1..6; an episode ends at row 1 (terminal) and at row 3 (timeout); rows 4-5 are the
    # trailing incomplete episode: returns 1 + 2 = 3 and 3 + 4 = 7.
    dataset = _dataset(n=6)
    dataset = dataset.replace(
        rewards=jnp.arange(1.0, 7.0),
        terminals=jnp.array([0, 1, 0, 0, 0, 0], bool),
        timeouts=jnp.array([0, 0, 0, 1, 0, 0], bool),
    )
    np.testing.assert_array_equal(datasets.episode_returns(dataset), [3.0, 7.0])
    no_end = dataset.replace(terminals=jnp.zeros(6, bool), timeouts=jnp.zeros(6, bool))
    assert datasets.episode_returns(no_end).shape == (0,)


def test_sample_under_jit_and_vmap_returns_dataset_rows():
    n = 7
    dataset = _dataset(n=n)
    dataset = dataset.replace(observations=dataset.observations.at[:, 0].set(jnp.arange(n)))
    sample = jax.jit(datasets.sample, static_argnums=2)
    batch = sample(dataset, jax.random.key(0), 16)
    assert set(batch) == set(datasets.KEYS) and batch["observations"].shape == (16, 3)
    keys = jax.random.split(jax.random.key(1), 64)
    batches = jax.jit(jax.vmap(lambda d, k: datasets.sample(d, k, 16), (None, 0)))(dataset, keys)
    assert batches["rewards"].shape == (64, 16) and batches["terminals"].dtype == jnp.bool_
    idx = np.asarray(batches["observations"][..., 0]).astype(int)  # row i has observation[0] = i
    assert idx.min() >= 0 and idx.max() < n
    for key in datasets.KEYS:
        np.testing.assert_array_equal(batches[key], np.asarray(getattr(dataset, key))[idx])
    assert set(idx.ravel()) == set(range(n))  # 1,024 draws reach every row
    np.testing.assert_array_equal(
        batches["rewards"][0], datasets.sample(dataset, keys[0], 16)["rewards"]
    )
    assert not np.array_equal(batches["rewards"][0], batches["rewards"][1])


def test_concatenate_lengths_rows_and_metadata():
    medium = _dataset(n=30, seed=1)
    medium = medium.replace(terminals=medium.terminals.at[-1].set(False))
    medium = medium.replace(timeouts=medium.timeouts.at[-1].set(False))
    expert = _dataset(dataclasses.replace(INFO, quality="expert"), n=20, seed=2)
    mixed = datasets.concatenate(medium, expert)
    assert len(mixed) == 50
    for key in datasets.KEYS:
        np.testing.assert_array_equal(getattr(mixed, key)[30:], getattr(expert, key))
        if key != "timeouts":
            np.testing.assert_array_equal(getattr(mixed, key)[:30], getattr(medium, key))
    np.testing.assert_array_equal(mixed.timeouts[:29], medium.timeouts[:29])
    assert mixed.timeouts[29]  # medium's trailing episode is cut, not continued by expert's
    info = mixed.info
    assert (info.env, info.quality, info.algo, info.seed) == ("pendulum", "medium-expert", "sac", 3)
    assert info.env_steps == 2000 and (info.random_return, info.expert_return) == (-1200, -150)
    assert info.extra["parts"] == [medium.info.to_dict(), expert.info.to_dict()]
    with pytest.raises(ValueError, match="different envs"):
        datasets.concatenate(medium, _dataset(DatasetInfo(env="hopper")))
    with pytest.raises(ValueError, match="disagree on expert_return"):
        datasets.concatenate(medium, _dataset(DatasetInfo(env="pendulum", expert_return=1.0)))
    with pytest.raises(ValueError, match=r"key 'observations' is float32\[3\] .* float32\[5\]"):
        datasets.concatenate(medium, _dataset(obs_dim=5))


def test_dataset_info_is_static_hashable_and_json_only():
    dataset = _dataset()
    assert (
        jax.tree.leaves(dataset)[0] is dataset.observations and len(jax.tree.leaves(dataset)) == 6
    )
    total = jax.jit(lambda d: d.rewards.sum())(dataset)  # info travels as static metadata
    np.testing.assert_allclose(total, np.asarray(dataset.rewards).sum(), rtol=1e-6)
    assert DatasetInfo(env="x", extra={"t": (1, 2)}) == DatasetInfo(env="x", extra={"t": [1, 2]})
    with pytest.raises(TypeError, match="JSON-serialisable"):
        DatasetInfo(env="x", extra={"f": np.zeros(2)})
    with pytest.raises(ValueError, match="non-empty string"):
        DatasetInfo(env="")
    # Numbers are not rounded or bent into shape: refused, naming the field.
    assert DatasetInfo(env="x", seed=np.int64(2), env_steps=3.0).seed == 2
    for field, value in [("seed", 1.9), ("env_steps", True), ("random_return", float("nan"))]:
        with pytest.raises(ValueError, match=f"DatasetInfo.{field} must be a"):
            DatasetInfo(env="x", **{field: value})
    with pytest.raises(TypeError, match="DatasetInfo.quality must be a string or None"):
        DatasetInfo(env="x", quality=5)
