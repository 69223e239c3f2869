"""Offline RL datasets: one on-device pytree, and the D4RL and Minari HDF5 layouts (with h5py).

Nothing is downloaded: datasets are made by the suite's own agents and saved, or read from files
already on disk::

    info = DatasetInfo(env="cartpole", quality="medium", algo="ppo", seed=0)
    dataset = from_transitions(transitions, info)      # time-major [T, num_envs] Transitions
    save_d4rl("cartpole-medium.hdf5", dataset)         # refuses an existing file
    dataset = load_d4rl("cartpole-medium.hdf5", env=env, env_params=params)
    batch = sample(dataset, key, 256)                  # dict of [256, ...] arrays; jit, vmap
    mixed = concatenate(medium, expert)                # quality "medium-expert"
    score = normalized_score(episode_returns(dataset), info.random_return, info.expert_return)

Arrays of a ``Dataset`` with N rows (one transition each, episodes in order, contiguous):
``observations`` and ``next_observations`` ``[N, *obs_shape]`` float32 (``[N, o]`` for vector
observations; ``next_observations`` is the pre-reset observation), ``actions`` ``[N,
*action_shape]`` float32 (int32 for discrete actions, ``[N]``), ``rewards`` ``[N]`` float32,
``terminals`` and ``timeouts`` (truncations) ``[N]`` bool. An episode ends at a row where
``terminals | timeouts``; rows after the last such row are an incomplete episode.

Loaders check keys, ranks, lengths and dtypes from the file's shapes, then refuse (with
``rlsuite.memory.check_fits``) a dataset too large for the device, and only then read the arrays
and refuse NaN or infinite values. Every problem is a ``ValueError`` naming the file and the key.
"""

from __future__ import annotations

import dataclasses
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
from flax import struct

from rlsuite import memory
from rlsuite.spaces import Discrete

KEYS = ("observations", "actions", "rewards", "terminals", "timeouts", "next_observations")
_MIN_RANK = {"observations": 2, "next_observations": 2, "actions": 1}  # the others are [N]
_CASTS = {"seed": int, "env_steps": int, "random_return": float, "expert_return": float}
_INFO_ATTR, _FORMAT_ATTR, _FORMAT = "rlsuite_info", "rlsuite_format", 1
_MINARI_NAMES = {"terminals": "terminations", "timeouts": "truncations"}
_MINARI_NAMES["next_observations"] = "observations"  # rows 1..T of the file's observations
_EPISODE = re.compile(r"episode_\d+")


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """How a dataset was made. Static metadata: hashable, and equal after a save / load.

    env: environment name. quality: e.g. ``"random"``, ``"medium"``, ``"expert"``. algo: the
    behaviour algorithm. seed, env_steps: of the run that collected it. random_return,
    expert_return: D4RL-style reference returns for ``normalized_score``. extra: free-form
    JSON-serialisable dict (stored as JSON: tuples come back as lists).
    """

    env: str
    quality: str | None = None
    algo: str | None = None
    seed: int | None = None
    env_steps: int | None = None
    random_return: float | None = None
    expert_return: float | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.env, str) or not self.env:
            raise ValueError(f"DatasetInfo.env must be a non-empty string, got {self.env!r}.")
        for name in ("quality", "algo"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"DatasetInfo.{name} must be a string or None, got {value!r}.")
        for name, cast in _CASTS.items():  # 1 and 1.0 alike: equal infos hash alike
            value = getattr(self, name)
            if value is None:
                continue
            number = isinstance(value, int | float | np.integer | np.floating)
            if isinstance(value, bool | np.bool_) or not number or not np.isfinite(value):
                raise ValueError(f"DatasetInfo.{name} must be a finite number, got {value!r}.")
            if cast is int and value != int(value):
                raise ValueError(f"DatasetInfo.{name} must be a whole number, got {value!r}.")
            object.__setattr__(self, name, cast(value))
        try:
            object.__setattr__(self, "extra", json.loads(json.dumps(dict(self.extra))))
        except (TypeError, ValueError) as e:
            raise TypeError(f"DatasetInfo.extra must be JSON-serialisable: {e}") from e

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> DatasetInfo:
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown DatasetInfo field(s) {sorted(unknown)}.")
        return cls(**values)


@struct.dataclass
class Dataset:
    """Transitions on device (shapes in the module docstring) and their static ``info``."""

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    terminals: jax.Array
    timeouts: jax.Array
    next_observations: jax.Array
    info: DatasetInfo = struct.field(pytree_node=False)

    def __len__(self) -> int:
        return int(self.rewards.shape[0])


class _Spec(NamedTuple):
    shape: tuple
    dtype: Any


# ----------------------------------------------------------------------------- helpers


def sample(dataset: Dataset, key: jax.Array, batch_size: int) -> dict[str, jax.Array]:
    """``batch_size`` (static) rows drawn uniformly with replacement: a dict keyed like ``KEYS``,
    every leaf ``[batch_size, ...]``. Jittable; vmap over keys for several batches."""
    idx = jax.random.randint(key, (batch_size,), 0, len(dataset))
    return {k: getattr(dataset, k)[idx] for k in KEYS}


def normalized_score(returns: Any, random_return: float | None, expert_return: float | None):
    """D4RL's normalised score ``100 * (returns - random) / (expert - random)``, elementwise:
    0 is the random policy, 100 the expert. ``returns`` is a number or an array of any shape."""
    if random_return is None or expert_return is None:
        raise ValueError(
            "normalized_score needs both reference returns, got random_return="
            f"{random_return!r}, expert_return={expert_return!r}."
        )
    if expert_return == random_return:
        raise ValueError(f"normalized_score: random_return == expert_return == {random_return}.")
    if not hasattr(returns, "shape"):
        returns = np.asarray(returns, np.float64)
    return 100.0 * (returns - random_return) / (expert_return - random_return)


def episode_returns(dataset: Dataset) -> np.ndarray:
    """Undiscounted returns ``[num_episodes]`` (float64, host) of the complete episodes, in row
    order; an episode ends at ``terminals | timeouts``, the trailing incomplete one is left out."""
    rewards = np.asarray(dataset.rewards, np.float64)
    ends = np.flatnonzero(np.asarray(dataset.terminals) | np.asarray(dataset.timeouts))
    if ends.size == 0:
        return np.zeros(0)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return np.add.reduceat(rewards[: ends[-1] + 1], starts)


def _cut_last(terminals: jax.Array, timeouts: jax.Array) -> jax.Array:
    """``timeouts`` (leading axis time) with its last row set wherever that row is not done."""
    return timeouts.at[-1].set(timeouts[-1] | ~terminals[-1])


def from_transitions(transitions: Any, info: DatasetInfo) -> Dataset:
    """A dataset from a time-major ``rlsuite.transition.Transition`` (leaves ``[T, num_envs,
    ...]``, e.g. from ``rlsuite.rollout.rollout``).

    Rows are env-major: row ``e * T + t`` is step ``t`` of env ``e``, so each env's stream (and
    every episode in it) is contiguous. ``terminated`` / ``truncated`` become ``terminals`` /
    ``timeouts``; ``next_obs`` (pre-reset) becomes ``next_observations``. The last step of each
    stream that is not done is marked as a timeout: the collection cut that episode, its
    transitions stay valid (a timeout bootstraps from ``next_observations``) and the next env's
    stream does not continue it, so ``episode_returns`` counts it as a truncated episode.
    ``info.env_steps`` defaults to ``T * num_envs``.
    """
    reward = jnp.asarray(transitions.reward)
    if reward.ndim != 2:
        raise ValueError(f"from_transitions needs [T, num_envs] rewards, got {reward.shape}.")
    steps, envs = reward.shape
    fields = {}
    for name in ("obs", "action", "terminated", "truncated", "next_obs"):
        leaf = getattr(transitions, name)
        if not hasattr(leaf, "shape") or leaf.shape[:2] != (steps, envs):
            what = leaf.shape if hasattr(leaf, "shape") else type(leaf).__name__
            raise ValueError(
                f"from_transitions: transitions.{name} must be an array [T={steps}, "
                f"num_envs={envs}, ...], got {what} (flatten pytree observations first)."
            )
        fields[name] = jnp.asarray(leaf)
    timeouts = _cut_last(fields["terminated"].astype(bool), fields["truncated"].astype(bool))
    action = fields["action"]
    kind = jnp.float32 if jnp.issubdtype(action.dtype, jnp.floating) else jnp.int32

    def flat(x, dtype):
        return jnp.swapaxes(x, 0, 1).reshape(steps * envs, *x.shape[2:]).astype(dtype)

    if info.env_steps is None:
        info = dataclasses.replace(info, env_steps=steps * envs)
    return Dataset(
        observations=flat(fields["obs"], jnp.float32),
        actions=flat(action, kind),
        rewards=flat(reward, jnp.float32),
        terminals=flat(fields["terminated"], bool),
        timeouts=flat(timeouts, bool),
        next_observations=flat(fields["next_obs"], jnp.float32),
        info=info,
    )


def _join(a: str | None, b: str | None, sep: str) -> str | None:
    if a == b:
        return a
    return f"{a}{sep}{b}" if a is not None and b is not None else None


def _merge_info(a: DatasetInfo, b: DatasetInfo) -> DatasetInfo:
    if a.env != b.env:
        raise ValueError(f"concatenate: datasets of different envs, {a.env!r} and {b.env!r}.")
    refs = {}
    for name in ("random_return", "expert_return"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and x != y:
            raise ValueError(f"concatenate: the datasets disagree on {name} ({x} and {y}).")
        refs[name] = x if x is not None else y
    both = a.env_steps is not None and b.env_steps is not None
    return DatasetInfo(
        env=a.env,
        quality=_join(a.quality, b.quality, "-"),
        algo=_join(a.algo, b.algo, "+"),
        seed=a.seed if a.seed == b.seed else None,
        env_steps=a.env_steps + b.env_steps if both else None,
        extra={"parts": [a.to_dict(), b.to_dict()]},
        **refs,
    )


def concatenate(first: Dataset, second: Dataset) -> Dataset:
    """``first``'s rows then ``second``'s (e.g. medium + expert = medium-expert).

    ``first``'s trailing incomplete episode is cut as a timeout (see ``from_transitions``).
    Metadata: same env required; quality joined with ``-`` and algo with ``+`` where they
    differ; seed kept if equal; env_steps summed; reference returns must agree (or one is None);
    ``extra`` is ``{"parts": [first.info, second.info]}`` as dicts.
    """
    for key in KEYS:
        a, b = getattr(first, key), getattr(second, key)
        if a.shape[1:] != b.shape[1:] or a.dtype != b.dtype:
            raise ValueError(
                f"concatenate: key {key!r} is {a.dtype}{list(a.shape[1:])} per row in the first "
                f"dataset and {b.dtype}{list(b.shape[1:])} in the second."
            )
    arrays = {k: getattr(first, k) for k in KEYS}
    arrays["timeouts"] = _cut_last(first.terminals, first.timeouts)
    joined = {k: jnp.concatenate([arrays[k], getattr(second, k)]) for k in KEYS}
    return Dataset(**joined, info=_merge_info(first.info, second.info))


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
    memory.check_fits(need, where, hint="load a smaller dataset or free device memory")


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
