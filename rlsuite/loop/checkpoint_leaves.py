"""The leaves of a checkpointed state (``rlsuite.loop.checkpoint``): each leaf as a host array
(typed PRNG keys as their key data) with its manifest record (path, shape, dtype, key
implementation, SHA-256 of its bytes) for ``save``; for ``restore``, the manifest checked, the
saved leaf of each target leaf chosen, the leaves read back and rebuilt as the target's.
"""

import hashlib
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.loop.checkpoint_dirs import (
    _STATE,
    CheckpointError,
    _brief,
    _closed_loop_reports_dropped,
    _ocp,
)
from rlsuite.loop.distributed import place, to_host

_FORMAT = 1


def _is_key(x) -> bool:
    return jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _as_array(x):
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else jnp.asarray(x)


def _spec(x) -> tuple[tuple[int, ...], str]:
    """(shape, dtype name) of a concrete or abstract leaf (Python scalars as JAX types them)."""
    x = _as_array(x)
    return tuple(int(d) for d in x.shape), str(x.dtype)


def _target_records(target) -> list[dict]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(target)
    records = []
    for path, leaf in leaves:
        shape, dtype = _spec(leaf)
        records.append({"path": jax.tree_util.keystr(path), "shape": list(shape), "dtype": dtype})
    return records


def _host_leaves(state) -> tuple[list[np.ndarray], list[dict]]:
    """The leaves as NumPy arrays (keys as key data) and their manifest records."""
    paths_leaves, _ = jax.tree_util.tree_flatten_with_path(state)
    arrays, records = [], []
    for path, leaf in paths_leaves:
        leaf = _as_array(leaf)
        shape, dtype = _spec(leaf)
        impl = None
        if _is_key(leaf):
            impl = str(jax.random.key_impl(leaf))
            leaf = jax.random.key_data(leaf)
        array = to_host(leaf)  # gathered from every process where it is spread over several
        arrays.append(array)
        records.append(
            {
                "path": jax.tree_util.keystr(path),
                "shape": list(shape),
                "dtype": dtype,
                "key_impl": impl,
                "stored_shape": list(array.shape),
                "stored_dtype": str(array.dtype),
                "sha256": _digest(array),
            }
        )
    return arrays, records


def _digest(array: np.ndarray) -> str:
    """SHA-256 of the array's bytes in C order (those of ``tobytes``), hashed in place where the
    array is contiguous, so that a large state is not copied once more to be hashed."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return hashlib.sha256(flat.view(np.uint8)).hexdigest()


def _check_structure(directory: pathlib.Path, step: int, saved: list, target: list) -> None:
    problems = []
    if len(saved) != len(target):
        problems.append(f"{len(saved)} leaves saved, {len(target)} in the target")
    for s, t in zip(saved, target, strict=False):
        if (s["path"], s["shape"], s["dtype"]) != (t["path"], t["shape"], t["dtype"]):
            problems.append(
                f"saved {s['path']} {s['dtype']}{tuple(s['shape'])} vs "
                f"target {t['path']} {t['dtype']}{tuple(t['shape'])}"
            )
        if len(problems) >= 5:
            break
    if problems:
        raise CheckpointError(
            f"checkpoint {directory} (step {step}) does not match the restore target: "
            + "; ".join(problems)
        )


def _saved_leaves_of(directory: pathlib.Path, step: int, saved: list, target: list) -> list[int]:
    """The saved leaf of each target leaf (indices into `saved`): all of them, in order, where the
    structures match; else, where every target leaf has a saved one of the same path, shape and
    dtype, those (a state that has since dropped fields: the others are read but left out);
    else the mismatch is a `CheckpointError` (`_check_structure`)."""
    key = lambda r: (r["path"], r["shape"], r["dtype"])  # noqa: E731
    if [key(r) for r in saved] == [key(r) for r in target]:
        return list(range(len(saved)))
    by_path = {r["path"]: i for i, r in enumerate(saved)}
    chosen = [by_path.get(r["path"]) for r in target]
    if None in chosen or any(key(saved[i]) != key(r) for i, r in zip(chosen, target, strict=True)):
        _check_structure(directory, step, saved, target)
    return chosen


def _rebuild_leaf(array: np.ndarray, record: dict, target_leaf):
    sharding = getattr(target_leaf, "sharding", None)
    if record["key_impl"] is not None:
        # The key data placed as the key (on a mesh over several processes, each its part).
        data = jnp.asarray(array) if sharding is None else place(array, sharding)
        return jax.random.wrap_key_data(data, impl=record["key_impl"])
    if isinstance(target_leaf, bool | int | float | complex):
        return type(target_leaf)(np.asarray(array).item())
    if isinstance(target_leaf, np.ndarray | np.generic):
        return np.asarray(array)
    return place(array, sharding)


_RECORD_KEYS = ("path", "shape", "dtype", "key_impl", "stored_shape", "stored_dtype", "sha256")


def _check_manifest(step_dir: pathlib.Path, manifest: dict) -> None:
    if manifest.get("format") != _FORMAT:
        raise CheckpointError(
            f"checkpoint {step_dir} has an unknown or corrupt manifest "
            f"(format {manifest.get('format')!r}, expected {_FORMAT})."
        )
    records = manifest.get("leaves")
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and all(k in r for k in _RECORD_KEYS) for r in records
    ):
        raise CheckpointError(f"checkpoint {step_dir} has a corrupt manifest (leaf records).")


def _read_leaves(step_dir: pathlib.Path, records: list[dict]) -> list[np.ndarray]:
    ocp = _ocp()
    specs = [(tuple(r["stored_shape"]), jnp.dtype(r["stored_dtype"])) for r in records]
    restore_args = {
        str(i): ocp.RestoreArgs(restore_type=np.ndarray, dtype=dtype)
        for i, (shape, dtype) in enumerate(specs)
        if int(np.prod(shape)) > 0
    }
    stored = {}
    if restore_args:
        try:
            handler = ocp.CompositeCheckpointHandler()
            with _closed_loop_reports_dropped(), ocp.Checkpointer(handler) as checkpointer:
                restored = checkpointer.restore(
                    step_dir,
                    args=ocp.args.Composite(
                        **{_STATE: ocp.args.PyTreeRestore(restore_args=restore_args)}
                    ),
                )
            stored = dict(restored[_STATE])
        except Exception as e:
            raise CheckpointError(
                f"checkpoint {step_dir} is unreadable or corrupt (state): {_brief(e)}"
            ) from e
    arrays = []
    for i, (shape, dtype) in enumerate(specs):
        if str(i) not in restore_args:
            arrays.append(np.zeros(shape, dtype))
            continue
        array = np.asarray(stored.get(str(i)))
        if array.shape != shape or array.dtype != dtype:
            raise CheckpointError(
                f"checkpoint {step_dir} is corrupt: leaf {records[i]['path']} was read as "
                f"{array.dtype}{array.shape}, the manifest says {dtype}{shape}."
            )
        arrays.append(array)
    return arrays
