"""The D4RL and Minari HDF5 file layouts of an offline dataset (with h5py), read into and written
from the on-device ``rlsuite.data.datasets.Dataset`` (its arrays and dtypes are described there)::

    save_d4rl("cartpole-medium.hdf5", dataset)         # refuses an existing file
    dataset = load_d4rl("cartpole-medium.hdf5", env=env, env_params=params)
    dataset = load_minari("minari/cartpole/random-v0", env=env, env_params=params)

Loaders check keys, ranks, lengths and dtypes from the file's shapes, then refuse (with
``rlsuite.ops.footprint.check_fits``) a dataset too large for the device, and only then read the
arrays and refuse NaN or infinite values. Every problem is a ``ValueError`` naming the file and
the key.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import tempfile
from typing import Any, NamedTuple

import h5py
import jax
import jax.numpy as jnp
import numpy as np

from rlsuite.data.datasets import KEYS, Dataset, DatasetInfo
from rlsuite.environment.spaces import Discrete
from rlsuite.ops import footprint

_MIN_RANK = {"observations": 2, "next_observations": 2, "actions": 1}  # the others are [N]
_INFO_ATTR, _FORMAT_ATTR, _FORMAT = "rlsuite_info", "rlsuite_format", 1
_MINARI_NAMES = {"terminals": "terminations", "timeouts": "truncations"}
_MINARI_NAMES["next_observations"] = "observations"  # rows 1..T of the file's observations
_EPISODE = re.compile(r"episode_\d+")


class _Spec(NamedTuple):
    shape: tuple
    dtype: Any


# ----------------------------------------------------------------------------- checks


def _check_specs(specs: dict, where: str, names: dict | None = None) -> int:
    """Checks dtypes, ranks and lengths of ``specs`` (key -> array, h5py dataset or ``_Spec``)
    without reading them; ``names`` maps our keys to the file's in messages. Returns N."""
    name = lambda key: repr((names or {}).get(key, key))  # noqa: E731
    for key, spec in specs.items():
        if not isinstance(spec, _Spec | np.ndarray | h5py.Dataset):
            raise ValueError(f"{where}: key {name(key)} is a {type(spec).__name__}, not an array.")
        if np.dtype(spec.dtype).kind not in "biuf":  # bool, (unsigned) integer, float
            raise ValueError(f"{where}: key {name(key)} has the non-numeric dtype {spec.dtype}.")
        low = _MIN_RANK.get(key)
        if len(spec.shape) != 1 if low is None else len(spec.shape) < low:
            want = "[N]" if low is None else f"rank >= {low}"
            raise ValueError(f"{where}: key {name(key)} has shape {spec.shape}; expected {want}.")
    n = specs["observations"].shape[0]
    if n == 0:
        raise ValueError(f"{where}: key {name('observations')} has no rows.")
    for key, spec in specs.items():
        if spec.shape[0] != n:
            raise ValueError(
                f"{where}: length mismatch: key {name(key)} has {spec.shape[0]} rows, key "
                f"{name('observations')} has {n}."
            )
    nxt = specs.get("next_observations")
    if nxt is not None and nxt.shape != specs["observations"].shape:
        raise ValueError(
            f"{where}: key {name('next_observations')} has shape {nxt.shape}, but observations "
            f"have shape {specs['observations'].shape}."
        )
    return n


def _check_spaces(specs: dict, env: Any, env_params: Any, where: str) -> None:
    """Row shapes (and the action kind) against ``env``'s spaces."""
    params = env.default_params if env_params is None else env_params
    spaces = {"observations": env.observation_space(params), "actions": env.action_space(params)}
    for key, space in spaces.items():
        if tuple(specs[key].shape[1:]) != tuple(space.shape):
            raise ValueError(
                f"{where}: key {key!r} has rows of shape {tuple(specs[key].shape[1:])}, but "
                f"{env.name}'s space {space!r} has shape {tuple(space.shape)}."
            )
    dtype = np.dtype(specs["actions"].dtype)
    if isinstance(spaces["actions"], Discrete):
        if not np.issubdtype(dtype, np.integer):
            raise ValueError(f"{where}: key 'actions' is {dtype}, {env.name} has discrete actions.")
    elif not np.issubdtype(dtype, np.floating):
        raise ValueError(
            f"{where}: key 'actions' is {dtype}, {env.name} has continuous actions "
            f"({spaces['actions']!r}): store them as floats."
        )
    return spaces["actions"]


def _check_action_values(actions: np.ndarray, space: Any, where: str) -> None:
    """Discrete actions in ``[0, n)`` (an index out of range would be clamped silently later)."""
    if isinstance(space, Discrete) and actions.size:
        bad = (actions < 0) | (actions >= space.n)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise ValueError(
                f"{where}: key 'actions' holds {int(actions[bad][0])} at row {row}; the actions "
                f"of {space!r} are 0 to {space.n - 1}."
            )


def _fits(n: int, specs: dict, where: str) -> None:
    """Refuses (before reading) rows that would not fit on the device once converted."""
    obs, act = (
        int(np.prod(specs[k].shape[1:], dtype=np.int64)) for k in ("observations", "actions")
    )
    need = n * (2 * obs * 4 + act * 4 + 4 + 2)  # float32 obs and next obs, 4-byte actions, ...
    footprint.check_fits(need, where, hint="load a smaller dataset or free device memory")


def _clean(arrays: dict, where: str, names: dict | None = None) -> dict[str, np.ndarray]:
    """Refuses NaN / infinite values and non-0/1 flags; converts to the ``Dataset`` dtypes."""
    out = {}
    for key, x in arrays.items():
        name, x = (names or {}).get(key, key), np.asarray(x)
        if key in ("terminals", "timeouts"):
            if x.dtype != np.bool_ and not np.isin(x, (0, 1)).all():
                raise ValueError(f"{where}: key {name!r} holds values other than 0 and 1.")
            out[key] = x != 0
            continue
        floating = np.issubdtype(x.dtype, np.floating)
        if key == "actions" and not floating:
            info = np.iinfo(np.int32)
            if x.size and (x.min() < info.min or x.max() > info.max):
                raise ValueError(f"{where}: key {name!r} holds values beyond int32.")
            out[key] = x.astype(np.int32)
            continue
        with np.errstate(over="ignore"):
            y = x.astype(np.float32)  # checked after the cast: a finite float64 may overflow
        if not np.isfinite(y).all():
            bad = "NaN" if np.isnan(y).any() else "infinite (in float32)"
            row = int(np.argwhere(~np.isfinite(y))[0][0])
            raise ValueError(f"{where}: key {name!r} contains {bad} values (first at row {row}).")
        out[key] = y
    return out


def _to_device(arrays: dict, info: DatasetInfo) -> Dataset:
    return Dataset(**{k: jnp.asarray(arrays[k]) for k in KEYS}, info=info)


def _open(path: pathlib.Path, where: str) -> h5py.File:
    if not path.is_file():
        raise FileNotFoundError(f"{where}: no such file.")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"{where}: not a readable HDF5 file ({e}).") from e


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as a plain Python value."""
    value = value.decode() if isinstance(value, bytes) else value
    return value.item() if isinstance(value, np.generic) else value


# ----------------------------------------------------------------------------- D4RL layout


def save_d4rl(path, dataset: Dataset, overwrite: bool = False) -> pathlib.Path:
    """Writes ``dataset`` as one HDF5 file in the D4RL layout and returns its path.

    One HDF5 dataset per key of ``KEYS`` (float32; bool ``terminals`` / ``timeouts``; discrete
    actions as int32, D4RL itself has only continuous ones) and the ``DatasetInfo`` as the JSON
    root attribute ``rlsuite_info``. Refuses an existing ``path`` (``FileExistsError``) unless
    ``overwrite``. Atomic: written to a temporary file in the same directory, then renamed, so an
    interrupted write never leaves a partial file at ``path``.
    """
    path = pathlib.Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; refusing to overwrite it (pass overwrite=True).")
    where = f"dataset to save to {path}"
    arrays = {k: np.asarray(jax.device_get(getattr(dataset, k))) for k in KEYS}
    _check_specs(arrays, where)
    arrays = _clean(arrays, where)  # D4RL's dtypes; int32 for discrete actions
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            for key in KEYS:
                f.create_dataset(key, data=arrays[key])
            f.attrs[_FORMAT_ATTR] = _FORMAT
            f.attrs[_INFO_ATTR] = json.dumps(dataset.info.to_dict())
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        _publish(tmp, path, overwrite)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _publish(tmp: str, path: pathlib.Path, overwrite: bool) -> None:
    """Renames ``tmp`` to ``path``. Without ``overwrite``, a hard link (which fails on an existing
    name) refuses a file that appeared since the first check."""
    if overwrite:
        return os.replace(tmp, path)
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise FileExistsError(f"{path} exists; refusing to overwrite it.") from None
    except OSError:  # a file system without hard links
        if path.exists():
            raise FileExistsError(f"{path} exists; refusing to overwrite it.") from None
        os.replace(tmp, path)


def _rebuild_next(arrays: dict) -> dict:
    """``next_observations`` from consecutive rows. Rows whose next observation is unknown are
    dropped: a timeout row (the next row starts another episode; the row before it becomes the
    timeout) and a last row that is not terminal. A terminal row gets its own observation as a
    placeholder (a TD target multiplies it by ``1 - terminal``). As in D4RL's
    ``qlearning_dataset``, a dropped timeout row takes its reward with it, so ``episode_returns``
    of the result leaves out the last reward of every truncated episode."""
    obs, term, tout = arrays["observations"], arrays["terminals"], arrays["timeouts"]
    cut = tout & ~term
    keep = ~cut
    keep[-1] &= term[-1]
    ends_early = np.zeros_like(cut)
    ends_early[:-1] = cut[1:] & ~(term | tout)[:-1]
    nxt = np.empty_like(obs)
    nxt[:-1], nxt[term] = obs[1:], obs[term]
    out = {k: v[keep] for k, v in arrays.items()}
    out["next_observations"], out["timeouts"] = nxt[keep], (tout | ends_early)[keep]
    return out


def _read_info(f: h5py.File, path: pathlib.Path, where: str) -> DatasetInfo:
    if _INFO_ATTR not in f.attrs:
        return DatasetInfo(env=path.stem, extra={"source": str(path)})
    try:
        return DatasetInfo.from_dict(json.loads(_plain(f.attrs[_INFO_ATTR])))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: attribute {_INFO_ATTR!r} is corrupt ({e}).") from e


def load_d4rl(
    path,
    env: Any = None,
    env_params: Any = None,
    rebuild_next_observations: bool = False,
    info: DatasetInfo | None = None,
) -> Dataset:
    """Reads a D4RL-layout HDF5 file (ours, or D4RL's own) into a ``Dataset`` on device.

    Needs ``observations``, ``actions``, ``rewards``, ``terminals``, ``timeouts`` and
    ``next_observations``; other keys (D4RL's ``infos/*``, ``metadata/*``) are ignored. D4RL's own
    files lack ``next_observations``: refused unless ``rebuild_next_observations``, which rebuilds
    it from consecutive rows and drops the rows whose next observation is unknown (a timeout row,
    whose predecessor becomes the timeout, and a non-terminal last row; as in D4RL's
    ``qlearning_dataset``, its reward is lost to ``episode_returns``). Metadata: ``info`` if
    given, else the file's ``rlsuite_info``, else ``DatasetInfo(env=<file stem>)``. With ``env``
    (and ``env_params``, default ``env.default_params``) row shapes and the actions' kind are
    checked against its spaces (floats for a ``Box``, integers in ``[0, n)`` for a ``Discrete``).
    """
    path = pathlib.Path(path)
    where = f"D4RL file {path}"
    with _open(path, where) as f:
        keys = [k for k in KEYS if k in f or k != "next_observations"]
        for key in keys:
            if key not in f:
                raise ValueError(f"{where}: missing key {key!r}.")
        if "next_observations" not in keys and not rebuild_next_observations:
            raise ValueError(
                f"{where}: missing key 'next_observations' (D4RL's own files lack it; pass "
                "rebuild_next_observations=True to rebuild it from consecutive observations)."
            )
        version = _plain(f.attrs.get(_FORMAT_ATTR, _FORMAT))
        if not isinstance(version, int) or version > _FORMAT:
            raise ValueError(
                f"{where}: attribute {_FORMAT_ATTR!r} is {version!r}; this rlsuite reads "
                f"format {_FORMAT} (the file was written by a newer version)."
            )
        specs = {k: f[k] for k in keys}
        n = _check_specs(specs, where)
        space = None if env is None else _check_spaces(specs, env, env_params, where)
        _fits(n, specs, where)
        arrays = _clean({k: v[()] for k, v in specs.items()}, where)
        _check_action_values(arrays["actions"], space, where)
        info = info or _read_info(f, path, where)
    if "next_observations" not in arrays:
        arrays = _rebuild_next(arrays)
        if not len(arrays["observations"]):
            raise ValueError(f"{where}: no rows left after rebuilding 'next_observations'.")
    return _to_device(arrays, info)


# ----------------------------------------------------------------------------- Minari layout


def _minari_specs(group: Any, where: str, like: dict | None) -> dict:
    """Specs of one episode group under our keys, checked without reading (and, with ``like``,
    against the first episode's row shapes)."""
    for name in ("observations", "actions", "rewards", "terminations", "truncations"):
        if not isinstance(group.get(name), h5py.Dataset):
            what = "missing key" if name not in group else "a group (dict spaces unsupported):"
            raise ValueError(f"{where}: {what} {name!r}.")
    obs, actions = group["observations"], group["actions"]
    if obs.shape and actions.shape and obs.shape[0] != actions.shape[0] + 1:
        raise ValueError(
            f"{where}: key 'observations' has {obs.shape[0]} rows; expected len(actions) + 1 = "
            f"{actions.shape[0] + 1}."
        )
    row = _Spec((obs.shape[0] - 1, *obs.shape[1:]) if obs.shape else (), obs.dtype)
    specs = {"observations": row, "next_observations": row, "actions": actions}
    specs.update({k: group[_MINARI_NAMES.get(k, k)] for k in ("rewards", "terminals", "timeouts")})
    _check_specs(specs, where, _MINARI_NAMES)
    for key in ("observations", "actions"):
        if like is not None and specs[key].shape[1:] != like[key].shape[1:]:
            raise ValueError(
                f"{where}: key {key!r} has rows of shape {specs[key].shape[1:]}, the first "
                f"episode has {like[key].shape[1:]}."
            )
    return specs


def _minari_info(root: pathlib.Path, f: h5py.File) -> DatasetInfo:
    """From ``data/metadata.json`` if present, else the HDF5 root attributes."""
    meta_file = root / "data" / "metadata.json"
    try:
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else dict(f.attrs)
        meta = {k: _plain(v) for k, v in meta.items()}
        return DatasetInfo(
            env=str(meta.get("dataset_id") or root.name),
            algo=meta.get("algorithm_name"),
            random_return=meta.get("ref_min_score"),
            expert_return=meta.get("ref_max_score"),
            extra={"source": str(root), "dataset_id": meta.get("dataset_id")},
        )
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"Minari dataset {root}: unreadable metadata ({e}).") from e


def _minari_format(root: pathlib.Path) -> str | None:
    """``data_format`` of ``root/data/metadata.json``, if it has one."""
    try:
        return json.loads((root / "data" / "metadata.json").read_text()).get("data_format")
    except (OSError, ValueError, AttributeError):
        return None


def load_minari(path, env: Any = None, env_params: Any = None) -> Dataset:
    """Reads a Minari dataset directory stored locally (h5py only; minari is not imported).

    Layout: ``path/data/main_data.hdf5`` with one group ``episode_<id>`` per episode (read in
    increasing id) holding ``observations`` ``[T + 1, ...]`` (first to final observation; dict
    observations are refused), ``actions`` ``[T, ...]``, ``rewards``, ``terminations``,
    ``truncations`` ``[T]``; other members (``infos``) are ignored. Metadata from
    ``path/data/metadata.json`` or the file's root attributes: ``dataset_id`` (the env name,
    else the directory name), ``algorithm_name``, ``ref_min_score`` / ``ref_max_score`` (the
    reference returns). An episode whose last step is not done is cut as a timeout. This is the
    layout minari (0.5) writes with ``data_format="hdf5"``, its default; its Arrow format is
    refused with a message that says so.
    """
    root = pathlib.Path(path)
    file = root / "data" / "main_data.hdf5"
    where = f"Minari file {file}"
    if not file.is_file() and _minari_format(root) == "arrow":
        raise ValueError(
            f"Minari dataset {root} is stored in minari's Arrow format; only its HDF5 format "
            '(data_format="hdf5") is read. Convert it with minari, then load it again.'
        )
    with _open(file, where) as f:
        names = [k for k, v in f.items() if isinstance(v, h5py.Group) and _EPISODE.fullmatch(k)]
        names.sort(key=lambda k: int(k[8:]))
        if not names:
            raise ValueError(f"{where}: no 'episode_<id>' groups.")
        specs = [_minari_specs(f[names[0]], f"{where} episode {names[0]!r}", None)]
        specs += [_minari_specs(f[k], f"{where} episode {k!r}", specs[0]) for k in names[1:]]
        space = None if env is None else _check_spaces(specs[0], env, env_params, where)
        _fits(sum(s["rewards"].shape[0] for s in specs), specs[0], where)
        episodes = [_minari_episode(f[k], f"{where} episode {k!r}") for k in names]
        info = _minari_info(root, f)
    arrays = {k: np.concatenate([e[k] for e in episodes]) for k in KEYS}
    _check_action_values(arrays["actions"], space, where)
    return _to_device(arrays, info)


def _minari_episode(group: h5py.Group, where: str) -> dict[str, np.ndarray]:
    obs = group["observations"][()]
    arrays = {"observations": obs[:-1], "next_observations": obs[1:]}
    arrays.update({k: group[_MINARI_NAMES.get(k, k)][()] for k in KEYS if k not in arrays})
    arrays = _clean(arrays, where, _MINARI_NAMES)
    arrays["timeouts"][-1] |= not arrays["terminals"][-1]
    return arrays
