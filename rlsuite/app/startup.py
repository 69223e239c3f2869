"""What a command needs decided before JAX starts: the processes of a job it joins and the CPU
cores it makes devices (`rlsuite.loop.platform.use_cpu_cores`), read from the command line's one
`rlsuite.app.argv.CommandLine` (and, for `--resume`, from the run's record).

    platform = start(command, line)   # a Platform: processes, CPU devices asked and in effect

JAX fixes its devices at its first computation, so `rlsuite` calls this before anything else.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys

from rlsuite.app import runs
from rlsuite.app.argv import CommandLine, integer
from rlsuite.app.errors import UsageError
from rlsuite.loop.mesh import AXES
from rlsuite.loop.platform import MATMUL_PRECISIONS

PROCESS_FLAGS = ("--coordinator", "--num-processes", "--process-id")
RUN_COMMANDS = ("train", "sweep", "pbt")  # the commands that train: devices, mesh, processes
PLAIN_COMMANDS = ("plot", "stats", "report", "list")  # the commands that compute nothing on devices


@dataclasses.dataclass(frozen=True)
class Platform:
    """`processes`: None where the command runs alone, else the job's count (0: known only to
    JAX's detection, once connected); `cpu_devices`: the CPU devices this process asked for (None:
    every core, or what the environment set); `in_effect`: the CPU devices JAX has."""

    processes: int | None
    cpu_devices: int | None
    in_effect: int | None = None
    deterministic: bool = False  # `rlsuite.loop.platform.use_numerics`'s settings
    matmul_precision: str = "default"


def plan(command: str, line: CommandLine | None) -> Platform:
    """The processes and CPU devices of `command` with the run command's `line` (None for the
    other commands), read before JAX starts: `--cpu-devices`, or the `--mesh` sizes' product,
    or for `--resume` the devices the run recorded (shared among the processes that continue
    it)."""
    if command not in RUN_COMMANDS:
        return Platform(None, None)
    processes = _processes(line)
    share = processes or 1  # the CPU devices are shared among them where the count is known
    count = None
    if line.value("--cpu-devices") not in (None, "None"):
        count = _cpu_devices(line.value("--cpu-devices"))
    elif line.value("--mesh") is not None:
        count = _mesh_devices(line.value("--mesh"))
        count = None if count is None or count % share else count // share
    elif line.given("--resume"):
        devices = runs.recorded_devices(pathlib.Path(line.value("--resume") or ""))
        # Resumed by any number of processes: the run's devices shared among them.
        count = devices.count if devices is not None and devices.platform == "cpu" else None
        if count is not None and count % share == 0:
            count //= share
    return Platform(processes, count, None, *_numerics(line))


def _numerics(line: CommandLine) -> tuple[bool, str]:
    """`--deterministic` and `--matmul-precision`, or for `--resume` what the run recorded."""
    if line.given("--resume"):
        devices = runs.recorded_devices(pathlib.Path(line.value("--resume") or ""))
        return (False, "default") if devices is None else devices.numerics
    precision = line.value("--matmul-precision") or "default"
    if precision not in MATMUL_PRECISIONS:
        raise UsageError(
            f"--matmul-precision {precision!r}; allowed: {', '.join(MATMUL_PRECISIONS)}"
        )
    return line.given("--deterministic"), precision


def start(command: str, line: CommandLine | None) -> Platform:
    """Join the job's processes, make the CPU devices (`plan`) and turn the compilation cache on
    (`rlsuite.loop.compile_cache`) before anything runs."""
    from rlsuite.loop.compile_cache import use_compilation_cache
    from rlsuite.loop.platform import use_cpu_cores, use_numerics

    use_compilation_cache(None if line is None else line.value("--compilation-cache"))
    platform = plan(command, line)
    if platform.processes is not None:
        _initialize(line)  # before JAX starts its devices (use_cpu_cores lists them)
    use_numerics(platform.deterministic, platform.matmul_precision)
    in_effect = use_cpu_cores(platform.cpu_devices)
    asked = platform.deterministic or platform.matmul_precision != "default"
    if asked and line is not None and not line.given("--resume") and _on_cpu():
        print(
            f"rlsuite {command}: note: --deterministic and --matmul-precision change nothing on "
            "the CPU (its operations are deterministic and compute float32 in float32); the "
            "run records them",
            file=sys.stderr,
        )
    count = platform.cpu_devices
    if line is not None and line.given("--resume") and count is not None and in_effect != count:
        print(
            f"rlsuite train: warning: the run trained on {count} CPU devices and continues on "
            f"{in_effect}, so it may end apart from the uninterrupted run (at float tolerance)",
            file=sys.stderr,
        )
    return dataclasses.replace(platform, in_effect=in_effect)


def _on_cpu() -> bool:
    import jax

    return jax.default_backend() == "cpu"


def _cpu_devices(value: str) -> int:
    return _count(value, "--cpu-devices", 1)


def _count(value: str, flag: str, minimum: int) -> int:
    """A count read ahead of the parser (`rlsuite.app.argv.integer`), refused below `minimum`."""
    try:
        count = integer(value)
    except ValueError:
        count = None
    if count is None or count < minimum:
        raise UsageError(f"{flag} must be an integer >= {minimum}, got {value!r}")
    return count


def _mesh_devices(text: str) -> int | None:
    """The CPU devices `--mesh` asks for where it gives both axes (their product), else None."""
    sizes = runs.parse_mesh(text)
    return sizes[AXES[0]] * sizes[AXES[1]] if len(sizes) == len(AXES) else None


def _processes(line: CommandLine) -> int | None:
    """None where the command runs alone; where `--distributed` or one of `PROCESS_FLAGS` is
    given, the number of processes given or read from the cluster (SLURM_NTASKS), or 0 where only
    JAX's own detection will tell (once connected)."""
    if not line.given("--distributed") and all(line.value(f) is None for f in PROCESS_FLAGS):
        return None
    value = line.value("--num-processes") or os.environ.get("SLURM_NTASKS")
    if value is None:
        return 0
    return _count(value, "--num-processes", 1)


def _initialize(line: CommandLine) -> None:
    """Join the job's processes (`rlsuite.loop.distributed.initialize`) before JAX starts, with
    the CPU collectives (gloo) that CPU devices of several processes need."""
    import jax

    from rlsuite.loop import distributed

    values = {}
    names = ("coordinator_address", "num_processes", "process_id")
    for flag, name in zip(PROCESS_FLAGS, names, strict=True):
        value = line.value(flag)
        if value is not None and name != "coordinator_address":
            value = _count(value, flag, 0)
        values[name] = value
    timeout = line.value("--process-timeout") or "60"
    try:
        values["timeout_seconds"] = float(timeout)
    except ValueError:
        raise UsageError(f"--process-timeout must be seconds, got {timeout!r}") from None
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        distributed.initialize(**values)
    except TimeoutError as error:
        raise UsageError(str(error)) from None
