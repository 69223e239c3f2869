"""Checkpoints: bitwise round trips with real orbax files, atomic and guarded saves, clear errors
that leave the directory untouched."""

import hashlib
import os
import pathlib
import shutil
import sys
import threading
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlsuite.loop import checkpoint, checkpoint_dirs
from rlsuite.loop.checkpoint import CheckpointError

NUM_SEEDS = 3
META = {"algo": "ppo", "env": "cartpole", "config": {"lr": 3e-4, "hidden": [64, 64]}}


class Stats(NamedTuple):
    mean: jax.Array
    count: jax.Array


def make_state(seed: int = 0):
    """A learner-state-like pytree with a leading seed axis on every leaf."""
    key = jax.random.key(seed)
    k_w, k_b, k_run = jax.random.split(key, 3)
    return {
        "params": {
            "dense": {
                "kernel": jax.random.normal(k_w, (NUM_SEEDS, 4, 2), jnp.float32),
                "bias": jax.random.uniform(k_b, (NUM_SEEDS, 2), jnp.float32),
            }
        },
        "opt_state": (Stats(jnp.full((NUM_SEEDS, 4), -1.5), jnp.arange(NUM_SEEDS)), ()),
        "done": jnp.array([[True, False], [False, False], [True, True]]),
        "steps": jnp.arange(NUM_SEEDS, dtype=jnp.int32) * 1000 + seed,
        "key": jax.random.split(k_run, NUM_SEEDS),
        "empty": jnp.zeros((NUM_SEEDS, 0), jnp.float32),
        "none": None,
    }


def as_bits(tree):
    """Leaves as NumPy arrays, typed keys as their key data, for bitwise comparison."""

    def leaf(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree.map(leaf, tree)


def assert_bitwise_equal(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(as_bits(a)), jax.tree.leaves(as_bits(b)), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def snapshot(directory) -> dict[str, str]:
    """Relative path -> SHA-256 (or 'dir') of everything under ``directory``."""
    root = pathlib.Path(directory)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[str(pathlib.Path(dirpath, name).relative_to(root))] = "dir"
        for name in filenames:
            path = pathlib.Path(dirpath, name)
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def saved(tmp_path):
    """A directory with one checkpoint at step 10; returns (directory, state)."""
    state = make_state()
    checkpoint.save(tmp_path / "ckpt", 10, state, META)
    return tmp_path / "ckpt", state


def test_round_trip_is_bitwise_and_keys_stay_usable(saved):
    directory, state = saved
    before = snapshot(directory)
    abstract = jax.eval_shape(lambda: state)
    restored, meta = checkpoint.restore(directory, abstract, expect={"algo": "ppo"})
    assert checkpoint.read_metadata(directory) == META
    assert snapshot(directory) == before  # reading never writes
    assert meta == META
    assert_bitwise_equal(restored, state)
    assert restored["key"].dtype == state["key"].dtype
    assert isinstance(restored["params"]["dense"]["kernel"], jax.Array)
    assert isinstance(restored["opt_state"][0], Stats)
    # The restored keys drive jax.random exactly like the originals, per seed and under vmap.
    draw = jax.vmap(lambda k: jax.random.normal(k, (5,)))
    np.testing.assert_array_equal(draw(restored["key"]), draw(state["key"]))
    # A concrete target (another seed's state) works the same.
    restored2, _ = checkpoint.restore(directory, make_state(seed=1))
    assert_bitwise_equal(restored2, state)


def test_scalars_numpy_leaves_and_other_key_impl(tmp_path):
    state = {
        "step": jnp.int32(7),
        "lr": np.float32(0.5),
        "table": np.arange(6, dtype=np.int32).reshape(2, 3),
        "rbg": jax.random.split(jax.random.key(3, impl="rbg"), 2),
    }
    checkpoint.save(tmp_path, 0, state, {})
    restored, meta = checkpoint.restore(tmp_path, state)
    assert meta == {}
    assert_bitwise_equal(restored, state)
    assert restored["step"].shape == ()
    assert isinstance(restored["table"], np.ndarray)
    assert str(jax.random.key_impl(restored["rbg"])) == "rbg"


def test_latest_step_and_max_to_keep(tmp_path):
    directory = tmp_path / "ckpt"
    assert checkpoint.latest_step(directory) is None
    assert not directory.exists()  # asking never creates it
    for step in (1, 2, 3, 4, 5):
        path = checkpoint.save(directory, step, make_state(step), META, max_to_keep=2)
        assert path == directory.absolute() / str(step) and path.is_dir()
    assert checkpoint.all_steps(directory) == [4, 5]
    assert checkpoint.latest_step(directory) == 5
    # An unfinished save (orbax's temporary directory) and stray entries are ignored.
    (directory / "9.orbax-checkpoint-tmp").mkdir()
    (directory / "notes").mkdir()
    assert checkpoint.latest_step(directory) == 5
    restored, _ = checkpoint.restore(directory, make_state())
    assert_bitwise_equal(restored, make_state(5))
    restored, _ = checkpoint.restore(directory, make_state(), step=4)
    assert_bitwise_equal(restored, make_state(4))
    assert checkpoint.read_metadata(directory, step=4) == META
    checkpoint.save(directory, 6, make_state(6), META, max_to_keep=None)
    assert checkpoint.all_steps(directory) == [4, 5, 6]


def test_saving_existing_or_older_step_raises_and_leaves_it_intact(saved):
    directory, state = saved
    before = snapshot(directory)
    with pytest.raises(CheckpointError, match="already exists"):
        checkpoint.save(directory, 10, make_state(seed=1), META)
    with pytest.raises(CheckpointError, match="older than"):
        checkpoint.save(directory, 5, make_state(seed=1), META)
    assert snapshot(directory) == before
    restored, _ = checkpoint.restore(directory, state)
    assert_bitwise_equal(restored, state)


@pytest.mark.parametrize("field", ["algo", "env"])
def test_metadata_mismatch_raises_and_leaves_files_untouched(saved, field):
    directory, state = saved
    before = snapshot(directory)
    expect = {"algo": "ppo", "env": "cartpole", field: "other"}
    with pytest.raises(CheckpointError) as err:
        checkpoint.restore(directory, state, expect=expect)
    message = str(err.value)
    assert field in message and repr(META[field]) in message and "'other'" in message
    assert str(directory) in message
    # Saving another run's checkpoint there is refused too (max_to_keep would delete ours).
    with pytest.raises(CheckpointError, match=field):
        checkpoint.save(directory, 20, state, {**META, field: "other"}, max_to_keep=1)
    assert snapshot(directory) == before


def _data_files(directory: pathlib.Path) -> list[pathlib.Path]:
    """The files holding the array chunks of step 10 (orbax's OCDBT data files)."""
    files = [
        p for p in (directory / "10" / "state").rglob("*") if p.is_file() and p.parent.name == "d"
    ]
    assert files
    return files


def _truncate(path: pathlib.Path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _scramble(path: pathlib.Path):
    path.write_bytes(bytes(b ^ 0x5A for b in path.read_bytes()))


def _swap_in_other_state(directory: pathlib.Path):
    """Replaces step 10's arrays by another, well-formed checkpoint's: only the hashes tell."""
    other = directory.parent / "other"
    checkpoint.save(other, 10, make_state(seed=1), META)
    shutil.rmtree(directory / "10" / "state")
    shutil.copytree(other / "10" / "state", directory / "10" / "state")


CORRUPTIONS = {
    "truncated metadata json": lambda d: _truncate(d / "10" / "metadata" / "metadata"),
    "garbage manifest json": lambda d: (d / "10" / "manifest" / "metadata").write_text("{oops"),
    "truncated orbax tree metadata": lambda d: _truncate(d / "10" / "state" / "_METADATA"),
    "truncated array data": lambda d: [_truncate(p) for p in _data_files(d)],
    "scrambled array data": lambda d: [_scramble(p) for p in _data_files(d)],
    "deleted ocdbt manifests": lambda d: [
        p.unlink() for p in (d / "10" / "state").rglob("*.ocdbt")
    ],
    "arrays of another checkpoint": _swap_in_other_state,
}


# After a tensorstore read error, orbax's closed event loop gets late callbacks: harmless noise.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_corrupt_checkpoint_raises_and_leaves_files_untouched(saved, corruption):
    directory, state = saved
    CORRUPTIONS[corruption](directory)
    before = snapshot(directory)
    with pytest.raises(CheckpointError, match=str(directory)):
        checkpoint.restore(directory, jax.eval_shape(lambda: state))
    assert snapshot(directory) == before


def test_target_structure_mismatch_raises(saved):
    directory, state = saved
    wrong_shape = {**state, "steps": jnp.zeros((NUM_SEEDS + 1,), jnp.int32)}
    wrong_dtype = {**state, "steps": jnp.zeros((NUM_SEEDS,), jnp.float32)}
    missing = {k: v for k, v in state.items() if k != "done"}
    renamed = {**missing, "dones": state["done"]}
    extra = {**state, "more": jnp.zeros((NUM_SEEDS,), jnp.int32)}
    for target, hint in [
        (wrong_shape, "['steps']"),
        (wrong_dtype, "float32"),
        (renamed, "['dones']"),
        (extra, "leaves saved"),
    ]:
        with pytest.raises(CheckpointError, match="does not match the restore target") as err:
            checkpoint.restore(directory, target)
        assert hint in str(err.value)


def test_a_state_that_dropped_fields_restores_the_others_by_path(saved):
    # A target without the saved "done" (its state class has since dropped the field): every
    # other leaf comes back bit for bit from the leaf of its path; "done" is not read.
    directory, state = saved
    missing = {k: v for k, v in state.items() if k != "done"}
    restored, _ = checkpoint.restore(directory, jax.eval_shape(lambda: missing))
    assert set(restored) == set(missing)
    assert_bitwise_equal(restored, missing)


def test_missing_or_empty_directory_raises_without_creating(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(CheckpointError, match="does not exist") as err:
        checkpoint.restore(missing, make_state())
    assert str(missing) in str(err.value)
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoint.read_metadata(missing)
    assert not missing.exists()
    (tmp_path / "empty" / "3.orbax-checkpoint-tmp").mkdir(parents=True)
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        checkpoint.restore(tmp_path / "empty", make_state())


def test_missing_step_raises(saved):
    directory, state = saved
    with pytest.raises(CheckpointError, match="no complete step 11"):
        checkpoint.restore(directory, state, step=11)


def test_non_json_metadata_raises_before_writing(tmp_path):
    with pytest.raises(TypeError, match="JSON"):
        checkpoint.save(tmp_path / "ckpt", 0, make_state(), {"lr": np.float32(1.0)})
    assert not (tmp_path / "ckpt").exists()


def test_failed_save_leaves_no_step_and_a_retry_succeeds(saved):
    directory, state = saved
    # orbax cannot store strings: the save fails inside orbax, after its temporary dir exists.
    with pytest.raises(CheckpointError, match="saving step 11"):
        checkpoint.save(directory, 11, {"name": np.array(["a", "b"])}, META)
    assert checkpoint.all_steps(directory) == [10]
    assert not (directory / "11").exists()
    # A killed or failed save's temporary directory does not block saving that step again.
    checkpoint.save(directory, 11, make_state(seed=1), META, max_to_keep=1)
    assert checkpoint.all_steps(directory) == [11]
    restored, _ = checkpoint.restore(directory, state)
    assert_bitwise_equal(restored, make_state(seed=1))


def _fail_on(monkeypatch, target, name, when=lambda *a, **k: True):
    """Make `target.name` raise (as a kill would stop the save there) when `when(*args)`."""
    real = getattr(target, name)

    def failing(*args, **kwargs):
        if when(*args, **kwargs):
            raise OSError(f"injected fault in {name}")
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, failing)


def _json_item_fault(monkeypatch, item):
    """Fail orbax's JSON handler on one item: the state item is written, that one is not."""
    import orbax.checkpoint as ocp

    handler = ocp.JsonCheckpointHandler
    _fail_on(
        monkeypatch, handler, "async_save", lambda self, directory, *a, **k: item in str(directory)
    )


# Where a save can be cut short, before its step is committed.
FAULTS = {
    "between the state and the metadata items": lambda mp: _json_item_fault(mp, "metadata"),
    "between the metadata and the manifest items": lambda mp: _json_item_fault(mp, "manifest"),
    "after every item, before the marker": lambda mp: _fail_on(mp, checkpoint, "_sync_file"),
    "after the marker, before the rename": lambda mp: _fail_on(mp, checkpoint.os, "replace"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_save_cut_short_leaves_no_step_and_the_next_save_cleans_up(saved, monkeypatch, fault):
    directory, state = saved
    with monkeypatch.context() as mp:
        FAULTS[fault](mp)
        with pytest.raises(CheckpointError, match="saving step 11"):
            checkpoint.save(directory, 11, make_state(seed=1), META)
    # Invisible: the latest complete step is still 10, and a resume is told step 11 was cut.
    assert checkpoint.all_steps(directory) == [10]
    assert checkpoint.incomplete_steps(directory) == [11]
    assert not (directory / "11").exists()
    restored, meta = checkpoint.restore(directory, state)
    assert_bitwise_equal(restored, state) and meta == META
    # Saving step 11 again works and removes what the cut-short save left.
    checkpoint.save(directory, 11, make_state(seed=1), META)
    assert sorted(p.name for p in directory.iterdir()) == ["10", "11"]
    assert checkpoint.incomplete_steps(directory) == []
    restored, _ = checkpoint.restore(directory, state)
    assert_bitwise_equal(restored, make_state(seed=1))


def test_a_delete_cut_short_never_leaves_a_half_deleted_step(saved, monkeypatch):
    directory, state = saved
    with monkeypatch.context() as mp:
        _fail_on(
            mp, checkpoint_dirs.shutil, "rmtree", lambda path, *a, **k: "deleting" in str(path)
        )
        with pytest.raises(OSError, match="injected"):
            checkpoint.save(directory, 11, make_state(seed=1), META, max_to_keep=1)
    # Step 10 was renamed away whole before its files went: only step 11 is a step.
    assert checkpoint.all_steps(directory) == [11] and checkpoint.incomplete_steps(directory) == []
    checkpoint.save(directory, 12, make_state(seed=2), META, max_to_keep=1)
    assert sorted(p.name for p in directory.iterdir()) == ["12"]


def test_an_incomplete_step_directory_from_an_earlier_version_is_skipped(tmp_path):
    """The layout a killed orbax CheckpointManager left: a step directory without its metadata
    item ("Item 'metadata' was not found ... Available items: ['manifest', 'state']")."""
    directory = tmp_path / "ckpt"
    for step in (64, 71):
        checkpoint.save(directory, step, make_state(step), META)
    (directory / "71" / checkpoint._COMPLETE).unlink()  # as saved before the marker existed
    assert checkpoint.all_steps(directory) == [64, 71]  # all three items: complete
    shutil.rmtree(directory / "71" / "metadata")
    assert checkpoint.all_steps(directory) == [64] and checkpoint.incomplete_steps(directory) == [
        71
    ]
    restored, _ = checkpoint.restore(directory, make_state())
    assert_bitwise_equal(restored, make_state(64))
    checkpoint.save(directory, 71, make_state(7), META)
    assert checkpoint.all_steps(directory) == [64, 71]
    assert_bitwise_equal(checkpoint.restore(directory, make_state())[0], make_state(7))


SAVER = """
import sys, jax, jax.numpy as jnp
from rlsuite.loop import checkpoint
directory = sys.argv[1]
def state(step):  # large enough that a save takes a while; every leaf depends on the step
    return {"big": jnp.full((4, 1_000_000), step, jnp.float32), "step": jnp.int32(step),
            "key": jax.random.split(jax.random.key(step), 3)}
step = checkpoint.latest_step(directory) or 0
print("ready", flush=True)
while True:
    step += 1
    checkpoint.save(directory, step, state(step), {"algo": "x", "env": "y", "step": step})
"""


def test_sigkill_at_any_point_of_saving_leaves_only_complete_steps(tmp_path):
    """Real kills at many points of a save loop (writing items, committing, deleting old steps):
    every step left restores bitwise to what was saved, and saving goes on where it stopped."""
    import random
    import subprocess
    import sys
    import time

    def expected(step):
        return {
            "big": jnp.full((4, 1_000_000), step, jnp.float32),
            "step": jnp.int32(step),
            "key": jax.random.split(jax.random.key(step), 3),
        }

    directory = tmp_path / "ckpt"
    rng = random.Random(0)
    seen_steps = []
    for _ in range(8):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(directory)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout.readline().strip() == "ready"
            # Once a step of this process is complete (a loaded machine may take seconds), at
            # a random moment of the saves that follow.
            first = (seen_steps[-1] if seen_steps else 0) + 1
            deadline = time.monotonic() + 120
            while (checkpoint.latest_step(directory) or 0) < first:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            time.sleep(rng.random())
        finally:
            proc.kill()
            proc.wait(timeout=60)
        steps = checkpoint.all_steps(directory)
        # max_to_keep=3, and one more where the kill came between a commit and the pruning
        # after it (the next save prunes it).
        assert steps and len(steps) <= 4
        for step in steps:
            restored, meta = checkpoint.restore(directory, expected(0), step=step)
            assert meta["step"] == step
            assert_bitwise_equal(restored, expected(step))
        assert not seen_steps or steps[-1] >= seen_steps[-1]  # nothing complete was lost
        seen_steps.append(steps[-1])
    assert seen_steps[-1] > seen_steps[0]
    last = seen_steps[-1] + 1
    checkpoint.save(directory, last, expected(last), {"algo": "x", "env": "y", "step": last})
    assert checkpoint.all_steps(directory) == [last - 2, last - 1, last]  # pruned to three


def test_the_closed_loop_tracebacks_of_a_failed_orbax_call_are_dropped_and_nothing_else(capsys):
    # After one of orbax's reads fails, those still running post to its closed event loop from
    # tensorstore's threads, a traceback each (a corrupt checkpoint gave 1 to 40 of them around
    # its one line). Here a thread prints two such, interleaved as they came, and a line of its
    # own, while the call fails.
    from rlsuite.loop.checkpoint_dirs import _closed_loop_reports_dropped

    report = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/asyncio/base_events.py", line 806, in call_soon_threadsafe\n'
    )
    report += "    self._check_closed()"
    report += '  File "/usr/lib/python3.11/asyncio/base_events.py", line 519, in _check_closed\n'
    report += "    raise RuntimeError('Event loop is closed')\nRuntimeError: Event loop is closed\n"

    def stragglers(extra: str):
        time.sleep(0.05)
        cut = report.index("\n") + 1  # as two threads' writes interleave: a line each
        sys.stderr.write(report[:cut] + report + report[cut:] + extra)

    with pytest.raises(OSError, match="disk full"):
        with _closed_loop_reports_dropped(settle=0.1):
            threading.Thread(target=stragglers, args=("orbax: a warning\n",)).start()
            raise OSError("disk full")
    assert capsys.readouterr().err.split() == ["orbax:", "a", "warning"]
    with pytest.raises(OSError):
        with _closed_loop_reports_dropped(settle=0.1):
            threading.Thread(target=stragglers, args=("",)).start()
            raise OSError("disk full")
    assert capsys.readouterr().err == ""
    # A call that succeeds passes on what was printed, untouched.
    with _closed_loop_reports_dropped():
        sys.stderr.write(report)
    assert capsys.readouterr().err == report
