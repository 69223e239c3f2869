"""The host loop: chunks, checkpoints, logs, exact resume after a kill, clear errors."""

import dataclasses
import hashlib
import json
import pathlib
import re

import jax
import numpy as np
import pytest

from rlsuite import envs
from rlsuite.agents import ppo
from rlsuite.loop import checkpoint, runner
from rlsuite.loop.checkpoint import CheckpointError
from rlsuite.loop.loggers import read_metrics
from tests import fitting

CONFIG = ppo.PPOConfig(num_envs=4, num_steps=16, num_minibatches=2, total_timesteps=6 * 64)


@pytest.fixture(scope="module")
def agent():
    env, params = envs.make("cartpole")
    return ppo.make(CONFIG, env, params)


def fit(agent, out_dir, **kwargs):
    options = dict(num_seeds=2, chunk_updates=2, env_name="cartpole", eval_episodes=2)
    options["progress"] = False
    return fitting.fit(agent, jax.random.key(0), out_dir=out_dir, **{**options, **kwargs})


def tree_hash(path: pathlib.Path) -> dict:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in path.rglob("*") if p.is_file()
    }


@pytest.fixture(scope="module")
def uninterrupted(agent, tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    return out, fit(agent, out)


def test_files_written_and_summary(uninterrupted):
    out, result = uninterrupted
    summary = json.loads((out / "final.json").read_text())
    for key in ("algo", "env", "num_seeds", "env_steps", "wall_seconds", "env_steps_per_second"):
        assert key in summary
    assert summary["env_steps"] == 6 * 64 and summary["num_seeds"] == 2
    assert "gradient_steps" not in summary  # (offline runs only)
    assert len(summary["eval_return_per_seed"]) == 2
    assert summary["eval_return_mean"] == pytest.approx(np.mean(summary["eval_return_per_seed"]))
    assert checkpoint.all_steps(out / "checkpoints") == [2, 4, 6]
    rows = read_metrics(out)
    # A row per 100 env steps (the default log_interval) within each chunk of 2 updates of 64:
    # 64 | 128, then 192 | 256 (a chunk's end ends a row), then 320 and 384 in one row at 384.
    assert [r["env_steps"] for r in rows] == [64, 64, 128, 128, 192, 192, 256, 256, 384, 384]
    assert result.metrics["losses/value_loss"].shape == (2, 6)
    loss = result.metrics["losses/value_loss"][1]
    np.testing.assert_allclose(
        [r["losses/value_loss"] for r in rows if r["seed"] == 1], [*loss[:4], loss[4:].mean()]
    )


def test_resume_after_kill_equals_uninterrupted_run(agent, uninterrupted, tmp_path, monkeypatch):
    full_dir, full = uninterrupted
    save = checkpoint.save

    def dying_save(directory, step, *args, **kwargs):
        if step == 4:  # killed after the metrics of update 4 were logged, before its checkpoint
            raise KeyboardInterrupt
        return save(directory, step, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        fit(agent, tmp_path)
    monkeypatch.setattr(checkpoint, "save", save)
    assert checkpoint.latest_step(tmp_path / "checkpoints") == 2
    resumed = fit(agent, tmp_path, resume=True)
    for a, b in zip(jax.tree.leaves(full.states), jax.tree.leaves(resumed.states), strict=True):
        a = jax.random.key_data(a) if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key) else a
        b = jax.random.key_data(b) if jax.dtypes.issubdtype(b.dtype, jax.dtypes.prng_key) else b
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert read_metrics(tmp_path) == read_metrics(full_dir)
    stale = (tmp_path / "metrics.jsonl.stale").read_text().splitlines()
    assert len(stale) == 4  # updates 3 and 4 of two seeds, logged before the kill
    np.testing.assert_array_equal(resumed.eval_returns, full.eval_returns)


def test_resume_before_the_first_checkpoint_starts_again(agent, uninterrupted, tmp_path):
    # Killed before its first checkpoint: the run starts again from its key and ends where the
    # uninterrupted one does; what it had logged goes to the stale files.
    full_dir, full = uninterrupted
    (tmp_path / "metrics.jsonl").write_text((full_dir / "metrics.jsonl").read_text()[:300])
    # A save killed half way leaves only orbax's temporary folder: not a checkpoint.
    (tmp_path / "checkpoints" / "2.orbax-checkpoint-tmp").mkdir(parents=True)
    (tmp_path / "checkpoints" / "2.orbax-checkpoint-tmp" / "part").write_bytes(b"\0" * 64)
    resumed = fit(agent, tmp_path, resume=True)
    assert checkpoint.all_steps(tmp_path / "checkpoints") == [2, 4, 6]
    assert read_metrics(tmp_path) == read_metrics(full_dir)
    assert (tmp_path / "metrics.jsonl.stale").read_text() == (
        (full_dir / "metrics.jsonl").read_text()[:300] + "\n"
    )
    np.testing.assert_array_equal(resumed.eval_returns, full.eval_returns)


def test_resume_after_the_last_checkpoint_writes_the_summary(agent, uninterrupted, tmp_path):
    # Killed after the last checkpoint, before final.json: the resume trains nothing, evaluates
    # the saved policy and writes final.json; with final.json there, there is nothing to resume.
    import shutil

    out = tmp_path / "run"
    shutil.copytree(uninterrupted[0], out)
    expected = json.loads((out / "final.json").read_text())
    (out / "final.json").unlink()
    before = tree_hash(out)
    resumed = fit(agent, out, resume=True)
    summary = json.loads((out / "final.json").read_text())
    assert summary["env_steps_this_call"] == 0 and resumed.metrics == {}
    assert summary["eval_return_per_seed"] == expected["eval_return_per_seed"]
    assert {k: v for k, v in tree_hash(out).items() if not k.endswith("final.json")} == before
    with pytest.raises(ValueError, match="already completed 6 of 6 updates; nothing to resume"):
        fit(agent, out, resume=True)


def test_existing_run_is_never_overwritten(agent, uninterrupted):
    out, _ = uninterrupted
    before = tree_hash(out)
    with pytest.raises(FileExistsError, match="already holds checkpoints"):
        fit(agent, out)
    assert tree_hash(out) == before


@pytest.mark.parametrize("field,value", [("algo", "sac"), ("env", "pendulum")])
def test_checkpoint_from_another_run_is_refused_and_untouched(agent, uninterrupted, field, value):
    out, _ = uninterrupted
    before = tree_hash(out)
    if field == "algo":
        other = agent._replace(name=value)
        with pytest.raises(CheckpointError, match="algo"):
            fit(other, out, resume=True)
    else:
        with pytest.raises(CheckpointError, match="env"):
            fit(agent, out, resume=True, env_name=value)
    assert tree_hash(out) == before


def test_corrupt_checkpoint_is_refused_and_untouched(agent, uninterrupted, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(uninterrupted[0], out)
    for path in (out / "checkpoints" / "6").rglob("*"):
        if path.is_file() and path.stat().st_size > 200:
            path.write_bytes(path.read_bytes()[:100])
    before = tree_hash(out)
    with pytest.raises(CheckpointError, match="checkpoints"):
        fit(agent, out, resume=True)
    assert tree_hash(out) == before


@pytest.mark.parametrize(
    "num_updates, chunks, length",
    [
        (976, 10, 122),  # 976 = 2^4 * 61: of the counts 5..20, 8 and 16 divide; 8 is nearer 10
        (1000, 10, 100),
        (16, 10, 2),  # counts 8 and 16 divide
        (15, 10, 1),  # counts 5 and 15 divide, both 5 from 10: the larger count
        (976, 2, 488),
        (97, 10, 9),  # prime: no count divides, so 10 chunks of 9 and one of 7
        (62, 10, 6),  # 2 * 31: none of 5..20 divides
        (3, 10, 1),
    ],
)
def test_chunk_length_divides_the_run_where_a_count_near_the_asked_one_does(
    num_updates, chunks, length
):
    assert runner.chunk_length(num_updates, chunks) == length


def test_the_default_chunks_have_one_length(agent, tmp_path):
    """16 updates by default in 8 chunks of 2 (not 16 of 1, a tenth rounded down)."""
    at_chunk = []
    fit(
        agent,
        tmp_path / "run",
        num_seeds=1,
        num_updates=16,
        chunk_updates=None,
        on_chunk=lambda update, metrics: at_chunk.append(update),
    )
    assert at_chunk == list(range(2, 17, 2))
    assert checkpoint.all_steps(tmp_path / "run" / "checkpoints") == [12, 14, 16]  # (the last 3)


def test_bad_arguments_fail_before_compiling(agent, tmp_path):
    with pytest.raises(ValueError, match="hparams.learning_rate"):
        fit(agent, tmp_path, hparams=ppo.PPOHparams(learning_rate=-1.0))
    with pytest.raises(ValueError, match="num_seeds must be an int >= 1"):
        fit(agent, tmp_path, num_seeds=0)
    with pytest.raises(ValueError, match="resume=True needs the out_dir"):
        runner.fit(agent, jax.random.key(0), output=runner.Output(resume=True, progress=False))
    for name in ("num_updates", "chunk_updates", "eval_episodes"):  # 0 is not "the default"
        with pytest.raises(ValueError, match=f"fit: {name} must be an int >= 1, got 0"):
            fit(agent, tmp_path, **{name: 0})
    with pytest.raises(ValueError, match="hparams_axis must be None .* or 0 .*, got 1"):
        fit(agent, tmp_path, hparams_axis=1)
    # Steps per seed past what 32-bit counters hold: 2^31 / 64 steps per update is the first
    # count of updates over the bound (2^31 - 1), one below it is not refused here.
    with pytest.raises(ValueError, match=r"2,147,483,648 steps per seed; .* at most 2,147,483,647"):
        fit(agent, tmp_path, num_updates=2**31 // 64)
    big = ppo.make(dataclasses.replace(CONFIG, total_timesteps=2**31), *envs.make("cartpole"))
    with pytest.raises(ValueError, match="2,147,483,648 steps per seed"):
        fit(big, tmp_path, num_updates=1)
    runner.check_int32_steps(agent, 2**31 // 64 - 1)
    assert not any(tmp_path.iterdir())


def test_a_resume_must_match_the_saved_length_and_metadata(agent, uninterrupted, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(uninterrupted[0], out)
    (out / "final.json").unlink()
    before = tree_hash(out)
    with pytest.raises(ValueError, match="checkpoint at update 6, beyond num_updates=4"):
        fit(agent, out, resume=True, num_updates=4)
    assert tree_hash(out) == before
    # Metadata saved with a run (an offline run's dataset hash) cannot be dropped on resume.
    tagged = tmp_path / "tagged"
    fit(agent, tagged, num_updates=2, metadata={"dataset_sha256": "abc"})
    (tagged / "final.json").unlink()
    before = tree_hash(tagged)
    with pytest.raises(CheckpointError, match=r"saved with metadata \{'dataset_sha256': 'abc'\}"):
        fit(agent, tagged, resume=True, num_updates=4)
    assert tree_hash(tagged) == before
    assert fit(agent, tagged, resume=True, num_updates=4, metadata={"dataset_sha256": "abc"})


def test_memory_check_counts_the_checkpoint_copy_on_a_cpu(agent, tmp_path, monkeypatch):
    import functools

    from rlsuite.loop import driver
    from rlsuite.ops import footprint

    keys = jax.random.split(jax.random.key(0), 2)
    init = functools.partial(driver.init_batch, agent)
    state = jax.eval_shape(init, keys, agent.default_hparams, None, None)
    need = footprint.tree_bytes(state)
    # Room for 1.5 states (within the 90% margin): a run that keeps no checkpoints fits, one
    # that saves them (from a host copy, in the same memory on a CPU) does not.
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: int(need * 1.5 / 0.9))
    with pytest.raises(MemoryError, match="the learner state of 2 runs with its checkpoint copy"):
        fit(agent, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert runner.fit(
        agent,
        jax.random.key(0),
        schedule=runner.Schedule(num_seeds=2),
        output=runner.Output(progress=False),
        final=runner.Final(eval_episodes=1),
    )


def test_a_rollout_or_an_evaluation_too_large_is_refused_before_compiling(
    agent, tmp_path, monkeypatch
):
    """Each update's rollout (its env steps x the runs, observations included) and the final
    evaluation's episodes are checked with the learner state they sit beside, before anything
    is compiled or written."""
    import functools

    from rlsuite.loop import driver
    from rlsuite.loop.episodes import episode_bytes
    from rlsuite.loop.rollout import transition_bytes
    from rlsuite.ops import footprint

    long = dataclasses.replace(CONFIG, num_steps=4096, total_timesteps=4 * 4096)
    long = ppo.make(long, *envs.make("cartpole"))
    keys = jax.random.split(jax.random.key(0), 2)
    init = functools.partial(driver.init_batch, long)
    state = footprint.tree_bytes(jax.eval_shape(init, keys, long.default_hparams, None, None))
    rollout = 2 * 4 * 4096 * transition_bytes(long.env, long.env_params)
    assert transition_bytes(long.env, long.env_params) == 2 * 4 * 4 + 4 + 4 + 2  # CartPole's
    # Room for the state and its checkpoint copy, not for the state and the rollouts.
    room = (2 * state + min(state, rollout) // 2) / 0.9
    assert 2 * state < 0.9 * room < state + rollout
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: int(room))
    message = "ppo: 2 runs with each update's rollout of 16,384 env steps (observations included)"
    with pytest.raises(MemoryError, match=rf"^{re.escape(message)} beside the learner state needs"):
        fit(long, tmp_path / "long", num_updates=1, chunk_updates=1)
    assert not (tmp_path / "long").exists()
    # The final evaluation's episodes: 2 runs x 10^6 x (state and observation, twice) each.
    room = 10 * state / 0.9
    assert 2 * 10**6 * episode_bytes(agent.env, agent.env_params) > room
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: int(room))
    message = "ppo: an evaluation of 1,000,000 episodes side by side in each of 2 runs, beside"
    with pytest.raises(MemoryError, match=re.escape(message)):
        fit(agent, tmp_path / "eval", eval_episodes=10**6)
    assert not (tmp_path / "eval").exists()


def test_every_chunk_length_compiles_before_the_first_chunk_and_the_rate_leaves_it_out(
    agent, tmp_path
):
    """6 updates in chunks of 4 and 2: both lengths are traced and compiled before the first chunk
    runs, nothing between chunks; `env_steps_per_second` is the rate after `compile_seconds`."""
    events, at_chunk = [], []
    names = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/backend_compile_duration")

    def listener(event, duration, **_):
        if event in names:
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        result = fit(
            agent,
            tmp_path / "run",
            chunk_updates=4,
            on_chunk=lambda update, metrics: at_chunk.append((update, len(events))),
        )
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    (first, n_first), (second, n_second) = at_chunk
    assert (first, second) == (4, 6)
    assert n_first > 0 and n_second == n_first
    summary = result.summary
    assert 0 < summary["compile_seconds"] < summary["wall_seconds"]
    rate = 6 * 64 * 2 / (summary["wall_seconds"] - summary["compile_seconds"])
    assert summary["env_steps_per_second"] == pytest.approx(rate, rel=1e-2)
    assert json.loads((tmp_path / "run" / "final.json").read_text()) == summary


def test_a_run_that_shows_progress_says_when_it_compiles_and_evaluates(agent, tmp_path, capsys):
    fit(agent, tmp_path / "shown", progress=True, num_updates=2, eval_episodes=1)
    err = capsys.readouterr().err
    compiling = err.index("rlsuite: compiling the chunks (1 length of updates)...")
    assert compiling < err.index("rlsuite: evaluating 1 episode of each run...")
    fit(agent, tmp_path / "quiet", progress=False, num_updates=2, eval_episodes=3)
    assert "rlsuite:" not in capsys.readouterr().err
