"""Checkpoints of the whole learner state, written and read with orbax.

The training driver saves one pytree (params, optimizer state, normaliser statistics, env state,
PRNG keys, step counters; every leaf with a leading seed axis when seeds are vmapped) between
chunks, and a resumed run restores it whole, so that it continues bitwise where the interrupted
one stopped::

    save(ckpt_dir, step, state, {"algo": "ppo", "env": "cartpole", "env_steps": n})
    state, meta = restore(ckpt_dir, jax.eval_shape(agent.init, key, hparams),
                          expect={"algo": "ppo", "env": "cartpole"})

Layout: ``directory/<step>/`` is one orbax checkpoint with three items: ``state`` (the leaves as
a flat dict ``{"0": leaf_0, ...}`` in ``jax.tree.leaves`` order), ``metadata`` (the caller's
JSON dict) and ``manifest`` (JSON: per leaf its path, shape, dtype, PRNG key implementation and a
SHA-256 of its bytes). The tree structure itself comes from the restore target, so empty nodes
(``optax.EmptyState()``), ``None`` and custom pytree classes need no support from orbax. A
target whose every leaf has a saved leaf of the same path, shape and dtype, but which lacks some
of the saved ones (a state class that has since dropped fields), restores from those leaves.

Guarantees:

  * A checkpoint is complete or invisible. ``save`` writes every item into ``.staging-<step>``
    (orbax's own temporary directory inside), marks it complete (``COMPLETE``), and only then
    renames it to ``<step>`` in one atomic step (``os.replace``, then an ``fsync`` of the
    directory); ``save`` returns after the rename. Old steps beyond ``max_to_keep`` are deleted
    after that, each first renamed to ``.deleting-<step>``, so a process killed while deleting
    leaves no half-deleted step. A process killed at any point leaves the steps complete before
    it and, at most, leftovers under names that are no step (``.staging-*``, ``.deleting-*``);
    the next ``save`` removes them. A step directory without the marker (written by an earlier
    version through orbax's ``CheckpointManager``) counts as complete when all three items are
    there; one without (a save or a delete cut short) is ignored by ``latest_step`` and listed by
    ``incomplete_steps``.
  * Typed PRNG keys (``jax.random.key``) are stored as ``jax.random.key_data`` and rebuilt with
    ``jax.random.wrap_key_data`` using the recorded implementation. Zero-size leaves (which orbax
    refuses) live in the manifest only. A Python scalar leaf is saved as JAX types it
    (``jnp.asarray``: float32 and int32 without x64) and restored as that array: a state made by
    a jitted function, as the driver's is, has only arrays.
  * ``restore``, ``latest_step`` and ``read_metadata`` never write to the directory. Every
    failure (missing directory, no complete step, unreadable or corrupt files, a leaf whose bytes
    do not match their hash, a target of another structure, shape or dtype, metadata that does
    not match ``expect``) raises ``CheckpointError`` naming the directory, chained to the orbax
    error where there is one.
  * ``save`` refuses (before writing anything) a step that is not newer than the latest one, and
    a directory whose checkpoints disagree with the new metadata on ``guard_keys`` (by default
    ``algo`` and ``env``): ``max_to_keep`` would otherwise delete another run's checkpoints.

The step folders (which are complete, found, deleted) are ``checkpoint_dirs``'s job and the
leaves with their manifest records ``checkpoint_leaves``'s; this module re-exports the public
names of both (``CheckpointError``, ``all_steps``, ``latest_step``, ...).
"""

import contextlib
import json
import logging
import os
import pathlib
from collections.abc import Sequence

import jax

from rlsuite.loop.checkpoint_dirs import (
    _COMPLETE,
    _MANIFEST,
    _METADATA,
    _STAGING,
    _STATE,
    CheckpointError,
    _brief,
    _closed_loop_reports_dropped,
    _delete_step,
    _find_step,
    _ocp,
    _read_json_items,
    _remove_leftovers,
    _step_dirs,
    latest_step,
)
from rlsuite.loop.checkpoint_dirs import all_steps as all_steps
from rlsuite.loop.checkpoint_dirs import incomplete_steps as incomplete_steps
from rlsuite.loop.checkpoint_dirs import read_metadata as read_metadata
from rlsuite.loop.checkpoint_leaves import (
    _FORMAT,
    _check_manifest,
    _digest,
    _host_leaves,
    _read_leaves,
    _rebuild_leaf,
    _saved_leaves_of,
    _target_records,
)
from rlsuite.loop.distributed import barrier
from rlsuite.loop.files import WriteError, os_error_in, sync_dir

# ----------------------------------------------------------------------------- save


def _check_guard(directory: pathlib.Path, metadata: dict, guard_keys: Sequence[str]) -> None:
    keys = [k for k in guard_keys if k in metadata]
    if not keys:
        return
    for step, step_dir in sorted(_step_dirs(directory).items()):
        saved = _read_json_items(step_dir, [_METADATA])[_METADATA]
        for key in keys:
            if saved.get(key) != metadata[key]:
                raise CheckpointError(
                    f"checkpoint directory {directory} holds step {step} with {key}="
                    f"{saved.get(key)!r}, not {key}={metadata[key]!r}; refusing to save into it "
                    "(use another directory)."
                )


def save(
    directory,
    step: int,
    state,
    metadata: dict,
    max_to_keep: int | None = 3,
    guard_keys: Sequence[str] = ("algo", "env"),
) -> pathlib.Path:
    """Saves ``state`` and ``metadata`` as ``directory/<step>/`` and returns that path.

    Args:
      directory: checkpoint directory (created if missing).
      step: integer step name, newer than every step already in ``directory``.
      state: pytree of jax/NumPy arrays, typed PRNG key arrays and scalars.
      metadata: JSON-serialisable dict (tuples come back as lists), e.g.
        ``{"algo": "ppo", "env": "cartpole", "config": {...}, "env_steps": 4096}``.
      max_to_keep: keep this many newest steps (``None``: all); older ones are deleted only
        after the new step is complete.
      guard_keys: entries of ``metadata`` that every existing checkpoint must share.

    Returns:
      the path of the complete step directory.

    Raises:
      CheckpointError: the step exists or is older than the latest one, the directory holds
        another run's (or unreadable) checkpoints, or orbax failed to write.
      rlsuite.loop.files.WriteError: the write failed for a reason of the file system (a full
        disk, a folder that cannot be written), found in orbax's chained errors and said in one
        line; the earlier checkpoints are complete (the new one stays in its staging folder).
      TypeError: ``metadata`` is not JSON-serialisable.
    """
    directory, step = pathlib.Path(directory).absolute(), int(step)
    metadata = _checked_save(directory, step, metadata, max_to_keep)
    latest = latest_step(directory)
    if latest is not None and step <= latest:
        what = "already exists" if step in _step_dirs(directory) else "is older than"
        raise CheckpointError(
            f"checkpoint step {step} {what} the latest step {latest} in {directory}; "
            "refusing to overwrite or interleave checkpoints."
        )
    _check_guard(directory, metadata, guard_keys)

    arrays, records = _host_leaves(state)
    leaves = {str(i): a for i, a in enumerate(arrays) if a.size > 0}
    manifest = {"format": _FORMAT, "jax_version": jax.__version__, "leaves": records}

    # Several processes (rlsuite.loop.distributed) save together: every one holds the whole
    # state (gathered above), orbax writes it once (from process 0) with its own
    # synchronisation, and process 0 alone manages the directory around it.
    main = jax.process_index() == 0
    step_dir = directory / str(step)
    staged = directory / f"{_STAGING}{step}"
    held: list[logging.LogRecord] = []
    try:
        if main:
            directory.mkdir(parents=True, exist_ok=True)
            _remove_leftovers(directory)
        barrier(f"rlsuite checkpoint {step}: directory ready")
        with _holding_orbax_logs(held), _closed_loop_reports_dropped():
            _write_items(staged, leaves, metadata, manifest)
        if main:
            _sync_file(staged / _COMPLETE, f"step {step}\n")
            os.replace(staged, step_dir)  # the commit: <step> appears whole, or not at all
            sync_dir(directory)
    except Exception as e:
        raise _save_failed(e, step, directory, held) from e
    _pass_on(held)
    if max_to_keep is not None and main:
        for old in sorted(_step_dirs(directory))[:-max_to_keep]:
            _delete_step(directory, old)
    barrier(f"rlsuite checkpoint {step}: committed")
    return step_dir


def _write_items(path: pathlib.Path, leaves: dict, metadata: dict, manifest: dict) -> None:
    """The three items of one checkpoint, written by orbax into ``path`` (which it finalises)."""
    ocp = _ocp()
    args = ocp.args.Composite(
        **{
            _STATE: ocp.args.StandardSave(leaves),
            _METADATA: ocp.args.JsonSave(metadata),
            _MANIFEST: ocp.args.JsonSave(manifest),
        }
    )
    with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
        checkpointer.save(path, args=args)


def _checked_save(directory: pathlib.Path, step: int, metadata, max_to_keep) -> dict:
    """`metadata` as JSON reads it back, after the checks of `save`'s arguments."""
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}.")
    if max_to_keep is not None and max_to_keep < 1:
        raise ValueError(f"max_to_keep must be >= 1 or None, got {max_to_keep}.")
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}.")
    try:
        metadata = json.loads(json.dumps(metadata))
    except (TypeError, ValueError) as e:
        raise TypeError(f"checkpoint metadata must be JSON-serialisable: {e}") from e
    if directory.exists() and not directory.is_dir():
        raise CheckpointError(f"checkpoint directory {directory} is not a directory.")
    return metadata


def _save_failed(error: Exception, step: int, directory: pathlib.Path, held: list) -> Exception:
    """What a failed save raises: a `WriteError` for a fault of the file system (a full disk:
    orbax's threads logged the same, with their tracebacks, which are dropped), else a
    `CheckpointError`, after what orbax's threads logged (it may explain the fault)."""
    cause = os_error_in(error)
    if cause is not None:
        return WriteError(directory / str(step), cause, f"checkpoint {step} in {directory}")
    _pass_on(held)
    return CheckpointError(f"saving step {step} to {directory} failed: {_brief(error)}")


def _pass_on(held: list) -> None:
    for record in held:
        logging.getLogger(record.name).handle(record)


@contextlib.contextmanager
def _holding_orbax_logs(held: list):
    """Hold what orbax's threads log (through absl) while a save runs, in `held`, for `save` to
    pass on or drop: a full disk is said once, in one line, not as a traceback per thread."""
    logger = logging.getLogger("absl")

    def hold(record: logging.LogRecord) -> bool:
        held.append(record)
        return False

    logger.addFilter(hold)
    try:
        yield
    finally:
        logger.removeFilter(hold)


def _sync_file(path: pathlib.Path, text: str) -> None:
    """Write the marker of a complete save inside its staging folder (whose rename is the atomic
    step), flushed to disk."""
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


# ----------------------------------------------------------------------------- restore


def _check_expect(directory: pathlib.Path, step: int, metadata: dict, expect: dict) -> None:
    expect = json.loads(json.dumps(expect))  # compare as saved (tuples -> lists)
    for key, value in expect.items():
        if key not in metadata:
            raise CheckpointError(
                f"checkpoint {directory} (step {step}) has no metadata entry {key!r}; "
                f"expected {key}={value!r}."
            )
        if metadata[key] != value:
            raise CheckpointError(
                f"checkpoint {directory} (step {step}) was saved with {key}={metadata[key]!r}, "
                f"expected {key}={value!r}."
            )


def restore(directory, target, expect: dict | None = None, step: int | None = None):
    """Restores a checkpoint into the structure, shapes and dtypes of ``target``.

    Args:
      directory: checkpoint directory written by ``save``.
      target: pytree like the saved state: concrete arrays or ``jax.ShapeDtypeStruct``s (e.g.
        ``jax.eval_shape(agent.init, key, hparams)``). Leaves come back as jax arrays (on the
        target leaf's sharding if it has one), NumPy arrays for NumPy leaves, Python scalars for
        Python scalars.
      expect: metadata entries that must equal the saved ones, e.g.
        ``{"algo": "ppo", "env": "cartpole"}``.
      step: step to restore; the latest complete one by default.

    Returns:
      ``(state, metadata)``.

    Raises:
      CheckpointError: see the module docstring. The directory is never written.
    """
    directory = pathlib.Path(directory).absolute()
    step, step_dir = _find_step(directory, step)
    items = _read_json_items(step_dir, [_METADATA, _MANIFEST])
    metadata, manifest = items[_METADATA], items[_MANIFEST]
    _check_manifest(step_dir, manifest)
    if expect:
        _check_expect(directory, step, metadata, expect)
    records = manifest["leaves"]
    target_leaves, treedef = jax.tree.flatten(target)
    chosen = _saved_leaves_of(directory, step, records, _target_records(target))

    arrays = _read_leaves(step_dir, records)
    leaves = []
    for i, target_leaf in zip(chosen, target_leaves, strict=True):
        record, array = records[i], arrays[i]
        if _digest(array) != record["sha256"]:
            raise CheckpointError(
                f"checkpoint {step_dir} is corrupt: leaf {record['path']} does not match the "
                "hash recorded when it was saved."
            )
        leaves.append(_rebuild_leaf(array, record, target_leaf))
    return jax.tree.unflatten(treedef, leaves), metadata
