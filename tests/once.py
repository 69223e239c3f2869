"""A module fixture's files built once for the whole test run, however pytest-xdist deals the
module's tests to its workers: its default scheduling may give two workers tests of one module,
and each would build the module's fixtures again (the two-process runs of
tests/loop/test_multiprocess.py took 48 s more that way)."""

import fcntl
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]):
    """`build(root)` run by the first worker to ask, in a folder `name` that the workers share
    (the run's base temporary folder's parent under xdist), its JSON result kept beside it; the
    other workers wait for it and read the result. Without xdist: `build` in a fresh folder."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(tmp_path_factory.mktemp(name))
    result = base.parent / f"{name}.json"
    with open(base.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not result.exists():
            # A folder of its own per attempt: a worker that failed to build left its files.
            root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base.parent))
            result.write_text(json.dumps(build(root)))
        return json.loads(result.read_text())
