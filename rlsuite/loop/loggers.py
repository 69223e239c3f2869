"""Metrics files (JSON lines and CSV), with TensorBoard and Weights & Biases on request.

The training driver calls ``MetricsLogger.log`` on the host between jitted chunks, never inside
jit. Every row is one seed at one point of training::

    {"env_steps": 4096, "seed": 0, "charts/episodic_return": 21.5, "losses/policy_loss": -0.01}

Metric names follow CleanRL (``charts/...``, ``losses/...``). ``metrics.jsonl`` is the record;
``metrics.csv`` holds the same rows. CSV columns are the keys in order of first appearance: a
row without some column leaves it empty, and a row with a new key (e.g. evaluation metrics
logged every few chunks) rewrites ``metrics.csv`` once with the wider header. A value that is
not a finite number (NaN: no episode ended, no gradient step yet; an infinite loss) has no JSON
literal: it is written as ``null`` in the JSONL and as an empty cell in the CSV, and
``read_metrics`` reads it back as NaN (it also reads files with the ``NaN`` literals that
earlier versions wrote).

One row per ``log_interval`` env steps (default ``DEFAULT_LOG_INTERVAL``, 100, as CleanRL logs
its losses): the updates of one ``log`` call whose ``env_steps`` fall in the same interval
``((k - 1) * log_interval, k * log_interval]`` become one row at the last of them, and the last
update of a call always ends a row, so a row never spans two calls (two chunks of the driver).
A run and its resume have the same chunks, so they write the same rows. The updates of a row
are combined, not sampled, so no finished episode is lost:

=================================  ==================================================
``charts/episodes``                the sum (episodes that ended in the row's updates)
``charts/episodic_*``              the mean over those episodes (each update's mean
                                   weighted by its ``charts/episodes``); NaN when none
other ``charts/*`` (buffer size,   the value at the row's last update
learning rate)
everything else (``losses/*``)     the mean over the updates that have a value
=================================  ==================================================

With ``log_interval`` at most the env steps of one update, every update is a row of its own.

TensorBoard (tensorboardX, under ``out_dir/tensorboard``) gets one scalar per metric per seed,
tag ``f"{name}/seed_{i}"``, x-axis ``env_steps``. Weights & Biases gets the same keys in one
``run.log`` per ``env_steps`` value, with ``env_steps`` as the x-axis; the W&B run's id is kept
in ``out_dir/wandb_run_id``, so that a resumed run continues the same W&B run. Both get the rows
the files get. Both are imported only when asked; if missing, the constructor raises
``ImportError`` before it writes anything.

Resuming a run from the checkpoint at ``env_steps == S`` (``resume_from_step=S``): rows with
``env_steps > S`` were logged after that checkpoint and are about to be recomputed, so they are
appended to ``metrics.jsonl.stale`` / ``metrics.csv.stale`` (nothing is lost; a line cut short
by a kill also goes there; the CSV header is repeated there when it changed) and removed from
the main files; new rows are appended. TensorBoard purges its events after ``S``; W&B cannot
drop rows, so the resumed run sends it only the rows past those it was sent before the kill
(a resume recomputes them bitwise). Without ``resume_from_step`` an ``out_dir`` that already
holds metrics is refused (``FileExistsError``).

The lines of each file and their reading are ``metrics_files``'s job; this module re-exports
``JSONL``, ``CSV`` and ``read_metrics``.
"""

import pathlib
from collections.abc import Mapping

import numpy as np

from rlsuite.loop.files import WriteError, append_text, write_text
from rlsuite.loop.metrics_files import (
    _RESERVED,
    CSV,
    JSONL,
    _csv_text,
    _env_steps,
    _fields_of,
    _json_line,
    _last_header,
    _nonempty,
    _split_jsonl,
    _stale_csv_lines,
    read_metrics,
)

STALE = ".stale"
WANDB_ID = "wandb_run_id"
_INSTALL = "pip install 'rlsuite[logging]'"
DEFAULT_LOG_INTERVAL = 100  # env steps per row
EPISODES = "charts/episodes"


def _import_backend(module: str, flag: str):
    try:
        return __import__(module)
    except ImportError as e:
        raise ImportError(
            f"MetricsLogger({flag}=True) needs the {module!r} package: {_INSTALL}"
        ) from e


def check_log_interval(log_interval) -> int:
    """``log_interval`` as an int; a ``ValueError`` naming it when it is not an int >= 1."""
    value = log_interval
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(
            f"log_interval must be an int >= 1 (env steps per metrics row), got {value!r}"
        )
    return int(value)


def check_backends(
    tensorboard: bool = False, wandb: bool = False, log_interval=DEFAULT_LOG_INTERVAL, **_
) -> None:
    """Raise the error a ``MetricsLogger`` with these options would (``ValueError`` for a bad
    ``log_interval``, ``ImportError`` for a missing backend), without writing anything, so that
    a run can refuse them before it starts."""
    check_log_interval(log_interval)
    if tensorboard:
        _import_backend("tensorboardX", "tensorboard")
    if wandb:
        _import_backend("wandb", "wandb")


def _combine_intervals(
    steps: np.ndarray, values: dict[str, np.ndarray], interval: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(steps [R], values [num_seeds, R])``: one entry per run of consecutive updates whose
    env_steps lie in the same ``interval`` (``((k - 1) * interval, k * interval]``), at the run's
    last update, each metric combined by its rule (module docstring)."""
    bins = -(-steps.astype(np.int64) // interval)
    ends = np.flatnonzero(np.append(bins[1:] != bins[:-1], True))
    if len(ends) == len(steps):
        return steps, values  # every update a row of its own
    starts = np.concatenate([[0], ends[:-1] + 1])
    episodes = values.get(EPISODES)

    def total(x):
        with np.errstate(invalid="ignore"):  # inf + -inf (a diverged loss) is NaN, quietly
            return np.add.reduceat(x, starts, axis=1)

    def mean(num, den):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    out = {}
    for name, v in values.items():
        present = ~np.isnan(v)
        if name == EPISODES:
            out[name] = total(v)
        elif name.startswith("charts/episodic_") and episodes is not None:
            weight = np.where(present, episodes, 0.0)
            out[name] = mean(total(np.where(weight > 0, v * weight, 0.0)), total(weight))
        elif name.startswith("charts/"):
            out[name] = v[:, ends]
        else:
            out[name] = mean(total(np.where(present, v, 0.0)), total(present.astype(np.float64)))
    return steps[ends], out


class MetricsLogger:
    """Writes per-seed metric rows to ``out_dir`` (see the module docstring).

    Args:
      out_dir: directory for ``metrics.jsonl``, ``metrics.csv`` and ``tensorboard/``.
      tensorboard: also write TensorBoard event files (needs tensorboardX).
      wandb: also log to Weights & Biases (needs wandb).
      wandb_project: W&B project name.
      config: run configuration (JSON-able dict) passed to ``wandb.init``.
      resume_from_step: ``env_steps`` of the checkpoint a resumed run starts from.
      log_interval: env steps per row (the updates between are combined, see the module
        docstring); a resumed run must be given the interval it was started with.
    """

    def __init__(
        self,
        out_dir,
        *,
        tensorboard: bool = False,
        wandb: bool = False,
        wandb_project: str | None = None,
        config: dict | None = None,
        resume_from_step: int | None = None,
        log_interval: int = DEFAULT_LOG_INTERVAL,
    ):
        self.log_interval = check_log_interval(log_interval)
        tbx = _import_backend("tensorboardX", "tensorboard") if tensorboard else None
        wandb_module = _import_backend("wandb", "wandb") if wandb else None
        self.out_dir = pathlib.Path(out_dir)
        self._jsonl_path, self._csv_path = self.out_dir / JSONL, self.out_dir / CSV
        if resume_from_step is None:
            for path in (self._jsonl_path, self._csv_path):
                if _nonempty(path):
                    raise FileExistsError(
                        f"{path} already holds metrics; pass resume_from_step=<env_steps of the "
                        "checkpoint> to continue that run, or use another out_dir."
                    )
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._fields: list[str] = []
        self._logged_before = -1  # env_steps through which a resumed W&B run has its rows
        if resume_from_step is not None:
            self._resume(int(resume_from_step))
        self._jsonl = open(self._jsonl_path, "a")
        self._csv = open(self._csv_path, "a", newline="")
        self._tb = None
        if tbx is not None:
            purge = None if resume_from_step is None else int(resume_from_step) + 1
            # tensorboardX names its file by the second it opens it and truncates a file of that
            # name: a resume gets a suffix of its own, so the earlier events stay.
            suffix = "" if purge is None else f".resumed_from_{purge - 1}"
            self._tb = tbx.SummaryWriter(
                str(self.out_dir / "tensorboard"), purge_step=purge, filename_suffix=suffix
            )
        self._wandb = None
        if wandb_module is not None:
            id_path = self.out_dir / WANDB_ID
            options = {"project": wandb_project, "config": config, "dir": str(self.out_dir)}
            run_id = None
            if resume_from_step is not None and id_path.is_file():
                run_id = id_path.read_text().strip()
                options.update(id=run_id, resume="allow")
            else:
                self._logged_before = -1  # a new W&B run has none of the rows
            self._wandb = wandb_module.init(**options)
            if run_id is None:
                write_text(id_path, f"{self._wandb.id}\n")
            self._wandb.define_metric("env_steps")
            self._wandb.define_metric("*", step_metric="env_steps")

    def _resume(self, step: int) -> None:
        kept_rows, stale = _split_jsonl(self._jsonl_path, step)
        header, stale_csv = _stale_csv_lines(self._csv_path, step)
        # Copy what is about to be dropped first, then shrink the main files.
        if stale:
            append_text(self.out_dir / (JSONL + STALE), "".join(stale))
            self._logged_before = max(_env_steps(line) for line in stale)
        if stale_csv:
            stale_path = self.out_dir / (CSV + STALE)
            with_header = not _nonempty(stale_path) or _last_header(stale_path) != header
            append_text(stale_path, (header if with_header else "") + "".join(stale_csv))
        if self._jsonl_path.exists():
            # Written again as strict JSON: the same bytes, but for NaN literals of old files.
            write_text(self._jsonl_path, "".join(_json_line(row) for row in kept_rows))
        if self._csv_path.exists() or kept_rows:
            self._fields = _fields_of(kept_rows) if kept_rows else []
            write_text(self._csv_path, _csv_text(self._fields, kept_rows) if kept_rows else "")

    def log(self, env_steps, metrics: Mapping[str, object]) -> None:
        """Writes one row per seed (and per ``log_interval`` env steps, for a chunk) and flushes.

        Two forms, told apart by ``env_steps``:

          * one point: ``env_steps`` an int; each metric ``[num_seeds]``, or a scalar for a single
            run (seed 0).
          * a whole chunk: ``env_steps`` a 1-D array ``[T]`` (one entry per update in the chunk);
            each metric ``[num_seeds, T]``, or ``[T]`` for a single run. The updates in one
            ``log_interval`` are combined into one row (see the module docstring), and the
            chunk's last update ends a row. Rows are written in time order, seeds in index
            order within each time.

        Values are converted to Python floats on the host (NaN is written as ``null``).
        """
        steps = np.asarray(env_steps)
        if steps.ndim > 1:
            raise ValueError(f"env_steps must be an int or 1-D, got shape {steps.shape}.")
        chunk = steps.ndim == 1
        values = self._seed_time_values(steps, metrics, chunk)
        if not values:
            return
        num_seeds = next(iter(values.values())).shape[0]
        steps, values = _combine_intervals(steps.reshape(-1), values, self.log_interval)
        rows = []
        for t, step in enumerate(steps):
            for seed in range(num_seeds):
                row = {"env_steps": int(step), "seed": seed}
                row.update({name: float(v[seed, t]) for name, v in values.items()})
                rows.append(row)
        self._write(rows)

    def _seed_time_values(self, steps: np.ndarray, metrics, chunk: bool) -> dict[str, np.ndarray]:
        """Metrics as host arrays ``[num_seeds, T]`` (T = 1 for one point)."""
        length = steps.shape[0] if chunk else 1
        out = {}
        for name, value in metrics.items():
            if name in _RESERVED:
                raise ValueError(f"metric name {name!r} is reserved for the row index.")
            array = np.asarray(value, dtype=np.float64)  # pulls jax arrays to the host
            if chunk:
                if array.ndim == 1:
                    array = array[None]
                if array.ndim != 2 or array.shape[1] != length:
                    raise ValueError(
                        f"metric {name!r} has shape {np.shape(value)}; with env_steps of length "
                        f"{length} it must be [num_seeds, {length}] or [{length}]."
                    )
            else:
                if array.ndim > 1:
                    raise ValueError(
                        f"metric {name!r} has shape {np.shape(value)}; with an int env_steps it "
                        "must be [num_seeds] or a scalar."
                    )
                array = array.reshape(-1, 1)
            out[name] = array
        seeds = {a.shape[0] for a in out.values()}
        if len(seeds) > 1:
            shapes = {n: np.shape(v) for n, v in metrics.items()}
            raise ValueError(f"metrics disagree on the number of seeds: {shapes}.")
        return out

    def _write(self, rows: list[dict]) -> None:
        if not rows:
            return
        try:
            self._jsonl.write("".join(_json_line(row) for row in rows))
            self._jsonl.flush()
        except OSError as error:  # a full disk: what and where, in one line
            raise WriteError(self._jsonl_path, error) from None
        try:
            self._write_csv(rows)
        except OSError as error:
            raise WriteError(self._csv_path, error) from None
        if self._tb is not None:
            for row in rows:
                for name, value in row.items():
                    if name not in _RESERVED:
                        tag = f"{name}/seed_{row['seed']}"
                        self._tb.add_scalar(tag, value, global_step=row["env_steps"])
            self._tb.flush()
        if self._wandb is not None:
            self._log_wandb(rows)

    def _write_csv(self, rows: list[dict]) -> None:
        new_fields = [k for k in _fields_of(rows) if k not in self._fields]
        if new_fields and self._fields:
            # A wider header: rewrite the CSV from the JSONL record (which has these rows).
            self._fields += new_fields
            self._csv.close()
            write_text(self._csv_path, _csv_text(self._fields, read_metrics(self.out_dir)))
            self._csv = open(self._csv_path, "a", newline="")
        else:
            header = not self._fields
            self._fields += new_fields
            self._csv.write(_csv_text(self._fields, rows, header=header))
        self._csv.flush()

    def _log_wandb(self, rows: list[dict]) -> None:
        by_step: dict[int, dict] = {}
        for row in rows:
            if row["env_steps"] <= self._logged_before:
                continue  # sent before the kill, with the same values
            entry = by_step.setdefault(row["env_steps"], {"env_steps": row["env_steps"]})
            for name, value in row.items():
                if name not in _RESERVED:
                    entry[f"{name}/seed_{row['seed']}"] = value
        for entry in by_step.values():
            self._wandb.log(entry)

    def close(self) -> None:
        """Flushes and closes the files and backends (safe to call twice)."""
        for f in (getattr(self, "_jsonl", None), getattr(self, "_csv", None)):
            if f is not None and not f.closed:
                f.close()
        if getattr(self, "_tb", None) is not None:
            self._tb.close()
            self._tb = None
        if getattr(self, "_wandb", None) is not None:
            self._wandb.finish()
            self._wandb = None

    def __enter__(self) -> "MetricsLogger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
