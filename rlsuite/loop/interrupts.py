"""What the chunk loop of `rlsuite.loop.runner` shows and hears on the host: a progress bar over
the environment steps (`Progress`), and Ctrl-C as a request to stop once the chunk it came in has
been saved (`StopRequest`), raised as `Interrupted` with how far the run got (`Where`).
"""

from __future__ import annotations

import dataclasses
import pathlib
import signal
import sys
import threading
import time

import numpy as np


@dataclasses.dataclass(frozen=True)
class Where:
    """How far a run that stopped got: `update` of `num_updates` computed, the last complete
    checkpoint (None: none yet, a resume starts again) and the run's directory."""

    update: int
    num_updates: int
    checkpoint: int | None
    out_dir: pathlib.Path | None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) during the chunks, with how far the run got (`where`)."""

    def __init__(self, where: Where):
        super().__init__(where)
        self.where = where


class StopRequest:
    """Ctrl-C (SIGINT) during the chunks, as a request: the first stops the run once the chunk
    it is in has been saved (so an interrupted run keeps its last chunk, and a KeyboardInterrupt
    is never raised, and lost, inside a callback of the interpreter's), a second stops it at
    once. Only the main thread can catch signals; elsewhere Ctrl-C is Python's own."""

    def __init__(self):
        self.requested = False

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(
            "\nrlsuite: stopping once this chunk is saved (Ctrl-C again to stop at once)",
            file=sys.stderr,
            flush=True,
        )

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


class Progress:
    """A rich progress bar over one run's environment steps; the rate counts all runs' steps
    (as `final.json` does), and the return is the last chunk's episodic return, averaged over
    the runs and the updates in which episodes ended (the one before where none did; `-` before
    the first). A no-op when disabled."""

    def __init__(self, enabled: bool, total: int, completed: int, num_runs: int):
        self.enabled, self.total, self.completed = enabled, total, completed
        self.num_runs, self.ret = num_runs, "-"

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("[bold]env steps[/] {task.completed:,.0f}/{task.total:,.0f}"),
                BarColumn(),
                TextColumn("{task.fields[rate]}"),
                TextColumn("return {task.fields[ret]}"),
                TimeElapsedColumn(),
            )
            self.progress.start()
            self.task = self.progress.add_task(
                "", total=self.total, completed=self.completed, rate="", ret="-"
            )
            self.t0, self.s0 = time.perf_counter(), self.completed
        return self

    def advance(self, completed: int, returns: np.ndarray | None) -> None:
        """To `completed` steps, with the chunk's episodic returns `[runs, updates]` (NaN at an
        update where no episode ended: most of them, where an update takes a few steps)."""
        if not self.enabled:
            return
        rate = self.num_runs * (completed - self.s0) / max(time.perf_counter() - self.t0, 1e-9)
        if returns is not None and np.isfinite(returns).any():
            self.ret = f"{np.nanmean(returns):.1f}"
        rate = f"{rate:,.0f} steps/s"
        self.progress.update(self.task, completed=completed, rate=rate, ret=self.ret)

    def __exit__(self, *exc):
        if self.enabled:
            self.progress.stop()
