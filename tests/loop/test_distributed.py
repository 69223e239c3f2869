"""Several processes (rlsuite.loop.distributed): values checked before connecting, an unreachable
coordinator refused in bounded time, counts that differ refused on each process, and two real
processes on 127.0.0.1 with 2 CPU devices each computing over all 4."""

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from rlsuite.loop import distributed

CLUSTER_VARS = (
    "JAX_COORDINATOR_ADDRESS",
    "JAX_COORDINATOR_PORT",
    "SLURM_JOB_ID",
    "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST",
    "SLURM_NTASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
)

PROCESS = textwrap.dedent(
    """
    import sys, time
    import jax
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.config.update("jax_num_cpu_devices", 2)
    from rlsuite.loop import distributed

    address, count, index, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    start = time.monotonic()
    try:
        distributed.initialize(address, count, index, timeout_seconds=float(timeout))
    except Exception as error:
        print(f"ERROR {type(error).__name__}: {error}", flush=True)
        print(f"ELAPSED {time.monotonic() - start:.1f}", flush=True)
        sys.exit(3)
    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.asarray(jax.devices()), ("x",))
    local = np.arange(2, dtype=np.float32) + 2 * jax.process_index() + 1
    array = jax.make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec("x")), local)
    total = jax.jit(lambda x: (x * x).sum())(array)
    gathered = multihost_utils.process_allgather(array, tiled=True)
    print("RESULT", jax.process_index(), jax.process_count(), jax.device_count(),
          len(jax.local_devices()), array.shape, float(total), gathered.tolist(),
          distributed.is_main(), flush=True)
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CLUSTER_VARS}
    env.pop("XLA_FLAGS", None)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    env["JAX_PLATFORMS"] = "cpu"
    return env


def launch(
    address: str, counts: list[int], timeout: float, first: int = 0
) -> list[subprocess.Popen]:
    """A process per entry of `counts` (its num_processes), with ids from `first` on."""
    return [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS, address, str(count), str(index), str(timeout)],
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index, count in enumerate(counts, first)
    ]


def finish(processes: list[subprocess.Popen], limit: float) -> list[tuple[int, str]]:
    results = []
    try:
        for process in processes:
            out, _ = process.communicate(timeout=limit)
            results.append((process.returncode, out))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return results


@pytest.fixture
def no_cluster(monkeypatch):
    for name in CLUSTER_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_processes": 2, "process_id": 2}, r"process_id=2 is outside \[0, 2\)"),
        ({"num_processes": 2, "process_id": -1}, r"process_id=-1 is outside"),
        ({"num_processes": 0, "process_id": 0}, r"num_processes must be >= 1, got 0"),
        ({"num_processes": 2.0, "process_id": 0}, r"num_processes must be an int, got 2.0"),
        ({"num_processes": 2, "process_id": "1"}, r"process_id must be an int, got '1'"),
        ({"coordinator_address": "127.0.0.1"}, r"coordinator_address='127.0.0.1' is not host"),
        ({"coordinator_address": "host:0"}, r"coordinator_address='host:0'"),
        ({"coordinator_address": "host:99999"}, r"coordinator_address='host:99999'"),
        ({"coordinator_address": ":1234"}, r"coordinator_address=':1234'"),
        ({"coordinator_address": "host:12ab"}, r"coordinator_address='host:12ab'"),
        ({"timeout_seconds": 0}, r"timeout_seconds must be > 0, got 0"),
    ],
)
def test_values_refused_before_connecting(no_cluster, kwargs, match):
    args = {"coordinator_address": "127.0.0.1:1234", "num_processes": 2, "process_id": 1}
    with pytest.raises(ValueError, match=match):
        distributed.initialize(**{**args, **kwargs})


def test_address_forms():
    assert distributed.split_address("10.0.0.1:1234") == ("10.0.0.1", 1234)
    assert distributed.split_address("node-a.cluster:80") == ("node-a.cluster", 80)
    assert distributed.split_address("[::1]:1234") == ("::1", 1234)


@pytest.mark.parametrize(
    ("nodelist", "host"),
    [
        ("node001", "node001"),
        ("node001,host2", "node001"),
        ("node[001-015],host2", "node001"),
        ("node[007,009-015]", "node007"),
        ("gpu-a[12]", "gpu-a12"),
    ],
)
def test_first_slurm_host(nodelist, host):
    assert distributed.first_host(nodelist) == host


def test_slurm_variables(no_cluster, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4097")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "cn[04-07]")  # sbatch without a job step
    monkeypatch.setenv("SLURM_NTASKS", "4")
    monkeypatch.setenv("SLURM_PROCID", "3")
    assert distributed.cluster_values(None, None, None) == ("cn04:61441", 4, 3)
    monkeypatch.setenv("SLURM_STEP_NODELIST", "gpu[2-3]")  # the step's nodes come first
    monkeypatch.setenv("JAX_COORDINATOR_PORT", "2345")
    assert distributed.cluster_values(None, None, None) == ("gpu2:2345", 4, 3)
    assert distributed.cluster_values("h:1", 2, 0) == ("h:1", 2, 0)  # given values win
    monkeypatch.setenv("SLURM_PROCID", "4")
    with pytest.raises(ValueError, match=r"process_id=4 is outside \[0, 4\)"):
        distributed.initialize()
    monkeypatch.setenv("SLURM_NTASKS", "four")
    with pytest.raises(ValueError, match=r"num_processes from SLURM_NTASKS='four'"):
        distributed.initialize()


def test_unreachable_coordinator_is_an_error_in_bounded_time():
    address = f"127.0.0.1:{free_port()}"  # nobody listens there
    start = time.monotonic()
    [(code, out)] = finish(launch(address, [2], 3, first=1), limit=60)  # process 1 of 2
    elapsed = time.monotonic() - start
    assert code == 3, out
    message = f"distributed: no coordinator answered at {address} within 3 s"
    assert f"ERROR TimeoutError: {message}" in out
    assert elapsed < 30, elapsed


def test_two_processes_compute_over_four_devices():
    address = f"127.0.0.1:{free_port()}"
    results = finish(launch(address, [2, 2], 30), limit=90)
    for index, (code, out) in enumerate(results):
        assert code == 0, out
        line = next(line for line in out.splitlines() if line.startswith("RESULT"))
        # local data [1, 2] and [3, 4]: the sum of squares 30 over the 4 devices of 2 processes
        expected = f"RESULT {index} 2 4 2 (4,) 30.0 [1.0, 2.0, 3.0, 4.0] {index == 0}"
        assert line == expected, out


def test_counts_that_differ_are_refused_on_every_process():
    address = f"127.0.0.1:{free_port()}"
    results = finish(launch(address, [2, 3], 30), limit=90)
    (code0, out0), (code1, out1) = results
    assert code0 == 3 and code1 == 3, (out0, out1)
    assert "process 0 was given num_processes=2 but process 1 num_processes=3" in out0
    assert "process 1 was given num_processes=3 but process 0 num_processes=2" in out1
