"""Training across several processes (hosts): `initialize` connects this process to the others
with `jax.distributed.initialize`, after which `jax.devices()` lists every process's devices and
the suite's mesh (`rlsuite.loop.mesh.make_mesh`) spans them.

    from rlsuite.loop import distributed
    distributed.initialize()          # under SLURM (srun): everything read from its variables
    distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=0)   # or given
    if distributed.is_main():         # only process 0 writes logs and checkpoints
        ...

Call it first, before anything that starts JAX (a computation, `jax.devices()`). On CPUs the
processes need collectives between them: `jax.config.update("jax_cpu_collectives_implementation",
"gloo")` before `initialize`.

What is not given is read from the environment: the coordinator from `JAX_COORDINATOR_ADDRESS`,
else under SLURM the first host of `SLURM_STEP_NODELIST` (or `SLURM_JOB_NODELIST` outside a job
step) with the port `JAX_COORDINATOR_PORT` or, as JAX chooses it, one derived from
`SLURM_JOB_ID`; the process count from `SLURM_NTASKS` and the process id from `SLURM_PROCID`.
Anything still missing is left to JAX's own detection (Open MPI, mpi4py, Cloud TPU, Kubernetes).

Before connecting, a process id outside `[0, num_processes)`, a count below 1 and an address not
of the form `host:port` are each a `ValueError` naming the value. A process other than 0 waits at
most `timeout_seconds` for the coordinator to accept a connection, then raises `TimeoutError`
naming the address and the wait, so an unreachable coordinator never hangs a job.

What JAX 0.10 does where the processes do not all arrive (measured on CPU with gloo): a process
whose peers never connect (process 0 with `num_processes=3` where only 2 start, or every process
where one died before connecting) is ended by XLA with SIGABRT ("DEADLINE_EXCEEDED ...
RegisterTask") about twice `timeout_seconds` after it began, not with a Python exception; this
module prints a line naming the address, the count and the wait to stderr first. Where process 0
expects fewer processes than another (0 says 2, 1 says 3), JAX connects both without a word and
process 1 keeps a wrong count; `initialize` compares every process's count with process 0's
through the coordinator's key-value store and raises `ValueError` on each, naming both counts.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import threading
import time
from collections.abc import Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils

SLURM_PORT_BASE = 65535 - 2**12 + 1  # JAX's SLURM port: the job id modulo 4096 above this
_COUNT_KEY = "rlsuite/distributed/num_processes/"


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    timeout_seconds: float = 60,
    local_device_ids: int | Sequence[int] | None = None,
) -> None:
    """Connect this process to the others (`jax.distributed.initialize`), reading what is not
    given from the cluster's variables (the module's docstring), and check before connecting
    that the values make sense. `timeout_seconds` bounds the wait for the coordinator and for
    the other processes. `local_device_ids` restricts the devices this process uses (JAX's
    argument; under SLURM on GPUs JAX defaults it to one device per process)."""
    if not isinstance(timeout_seconds, int | float) or timeout_seconds <= 0:
        raise ValueError(f"distributed: timeout_seconds must be > 0, got {timeout_seconds!r}")
    coordinator_address, num_processes, process_id = cluster_values(
        coordinator_address, num_processes, process_id
    )
    check_values(coordinator_address, num_processes, process_id)
    started = time.monotonic()
    if coordinator_address is not None and process_id not in (None, 0):
        wait_for_coordinator(coordinator_address, timeout_seconds)
    # JAX's timeout is whole seconds; what the wait above used is not taken off it, so that a
    # process which waited for the coordinator still gives the others the whole time to arrive.
    timeout = max(1, int(round(timeout_seconds)))
    watch = threading.Timer(
        timeout_seconds,
        _report_late,
        (coordinator_address, num_processes, process_id, timeout_seconds),
    )
    watch.daemon = True
    watch.start()
    try:
        jax.distributed.initialize(
            coordinator_address,
            num_processes,
            process_id,
            local_device_ids=local_device_ids,
            initialization_timeout=timeout,
            shutdown_timeout_seconds=timeout,
        )
    finally:
        watch.cancel()
    if num_processes is not None and process_id is not None:
        remaining = timeout_seconds - (time.monotonic() - started)
        _check_counts(num_processes, process_id, max(remaining, 1.0))


def to_host(tree):
    """Every array leaf of `tree` as a NumPy array of its whole (global) value, on every process.

    An array spread over several processes (a mesh from `initialize`) is gathered from all of
    them (`process_allgather`, a collective: every process must call this at the same point);
    any other leaf is fetched (`jax.device_get`)."""

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(one, tree)


def place(x, sharding) -> jax.Array:
    """`x` placed with `sharding` (`jax.device_put`, also where the mesh spans several processes).

    Over several processes a sharding has devices this process cannot address, where
    `device_put` refuses: an array already spread over the processes is moved by a program; a
    host or one-device value, which every process holds whole (the same keys give the same
    states; every process reads the same checkpoint), is cut into this process's shards. A
    typed PRNG key is placed as its key data.
    """
    if sharding is None or sharding.is_fully_addressable:
        return jax.device_put(x, sharding)
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return jax.jit(lambda a: a, out_shardings=sharding)(x)
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = place(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier `name` (nothing with one process): process 0
    writes a file the others read after it, or the others must not go on before it has."""
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(name)


def is_main() -> bool:
    """Whether this is process 0, the one that writes logs, checkpoints and results (true in a
    job of one process)."""
    return jax.process_index() == 0


def cluster_values(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> tuple[str | None, int | None, int | None]:
    """`(coordinator_address, num_processes, process_id)` with each value not given read from
    `JAX_COORDINATOR_ADDRESS` or SLURM's variables; None where neither has it."""
    env = os.environ
    if coordinator_address is None:
        coordinator_address = env.get("JAX_COORDINATOR_ADDRESS") or None
    if coordinator_address is None:
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
        port = env.get("JAX_COORDINATOR_PORT")
        if port is None and env.get("SLURM_JOB_ID", "").isdigit():
            port = str(SLURM_PORT_BASE + int(env["SLURM_JOB_ID"]) % 2**12)
        if nodes and port:
            coordinator_address = f"{first_host(nodes)}:{port}"
    if num_processes is None and "SLURM_NTASKS" in env:
        num_processes = _env_int("SLURM_NTASKS", "num_processes")
    if process_id is None and "SLURM_PROCID" in env:
        process_id = _env_int("SLURM_PROCID", "process_id")
    return coordinator_address, num_processes, process_id


def first_host(nodelist: str) -> str:
    """The first host of a SLURM node list: `node[003-010,012],gpu1` gives `node003`."""
    nodelist = nodelist.strip()
    match = re.match(r"([^,\[]*)(?:\[([^\]]*)\])?", nodelist)
    prefix, ranges = match.group(1), match.group(2)
    if ranges is None:
        return prefix
    return prefix + re.split(r"[,-]", ranges, maxsplit=1)[0]


def check_values(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Refuse, before connecting, a count below 1, a process id outside `[0, num_processes)` and
    an address not of the form `host:port` (port 1..65535), each a `ValueError` naming it."""
    if num_processes is not None:
        if isinstance(num_processes, bool) or not isinstance(num_processes, int):
            raise ValueError(f"distributed: num_processes must be an int, got {num_processes!r}")
        if num_processes < 1:
            raise ValueError(f"distributed: num_processes must be >= 1, got {num_processes}")
    if process_id is not None:
        if isinstance(process_id, bool) or not isinstance(process_id, int):
            raise ValueError(f"distributed: process_id must be an int, got {process_id!r}")
        if process_id < 0 or (num_processes is not None and process_id >= num_processes):
            bound = "" if num_processes is None else f", {num_processes}"
            raise ValueError(
                f"distributed: process_id={process_id} is outside [0{bound}) "
                f"(num_processes={num_processes})"
            )
    if coordinator_address is not None:
        split_address(coordinator_address)


def split_address(address: str) -> tuple[str, int]:
    """`"host:port"` (or `"[v6]:port"`) as `(host, port)`; anything else is a `ValueError` naming
    the address."""
    if not isinstance(address, str):
        raise ValueError(f"distributed: coordinator_address must be a str, got {address!r}")
    host, colon, port = address.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    valid = bool(colon and host and port.isdigit() and 1 <= int(port) <= 65535)
    if not valid or any(c.isspace() for c in host) or ("[" in host or "]" in host):
        raise ValueError(
            f"distributed: coordinator_address={address!r} is not host:port "
            "(e.g. 10.0.0.1:1234, a port in 1..65535)"
        )
    return host, int(port)


def wait_for_coordinator(address: str, timeout_seconds: float) -> None:
    """Wait until the coordinator at `address` accepts a TCP connection; after `timeout_seconds`
    raise `TimeoutError` naming the address and the wait."""
    host, port = split_address(address)
    deadline = time.monotonic() + timeout_seconds
    error: OSError | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            with socket.create_connection((host, port), timeout=min(left, 2.0)):
                return
        except OSError as caught:  # refused, unreachable, unknown host, timed out
            error = caught
        time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
    raise TimeoutError(
        f"distributed: no coordinator answered at {address} within {timeout_seconds:g} s "
        f"(last error: {error}); start process 0 there, or check the address and port"
    )


def _report_late(address, num_processes, process_id, timeout_seconds) -> None:
    print(
        f"distributed: process {process_id} has waited {timeout_seconds:g} s at the coordinator "
        f"{address} for all {num_processes} processes to connect; JAX ends it if they do not "
        "arrive (a process that did not start or died, or processes given different "
        "num_processes)",
        file=sys.stderr,
        flush=True,
    )


def _check_counts(num_processes: int, process_id: int, timeout_seconds: float) -> None:
    """Compare this process's `num_processes` with process 0's through the coordinator's
    key-value store (process 0 with every other's); a difference is a `ValueError` on each
    process that sees it, naming both counts."""
    from jax._src import distributed as jax_distributed  # the connected client (no public API)

    client = jax_distributed.global_state.client
    if client is None:
        return
    client.key_value_set(f"{_COUNT_KEY}{process_id}", str(num_processes))
    others = range(1, num_processes) if process_id == 0 else (0,)
    wait_ms = int(timeout_seconds * 1000)
    for other in others:
        value = int(client.blocking_key_value_get(f"{_COUNT_KEY}{other}", wait_ms))
        if value != num_processes:
            jax.distributed.shutdown()
            raise ValueError(
                f"distributed: process {process_id} was given num_processes={num_processes} but "
                f"process {other} num_processes={value}; give every process the same count"
            )


def _env_int(name: str, field: str) -> int:
    value = os.environ[name]
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"distributed: {field} from {name}={value!r} is not an int") from None
