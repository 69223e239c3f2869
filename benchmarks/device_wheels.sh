#!/usr/bin/env bash
# Fill .whl/ (ignored by git) with the wheels that benchmarks/device.sh installs on the GPU machine:
# every package the benchmarks need there that its image lacks, for CPython 3.12 on manylinux
# x86_64. The set is the dependency closure (Requires-Dist, extras ignored, markers evaluated for
# Python 3.12 on Linux x86_64) of brax, mujoco, mujoco-mjx, distrax, gymnax, tyro, jaxued (the
# UED part's anchor), rejax (the PQN part's), playground (the Playground part's) and evosax (the
# LPO part's), less LEFT_OUT
# and the
# packages the image already has (GPU_HAS below). Versions are pinned to those of the development
# environment (PINS below), so the GPU runs the code that was tested here; one version of each.
#
#     bash benchmarks/device_wheels.sh          # needs the package index; run from anywhere
#
# It empties .whl/ first, downloads with `pip download --no-deps --only-binary=:all:`, and fails if
# the set exceeds 55 MiB (the working tree and the wheels travel together, 64 MiB at most).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
mkdir -p .whl
rm -f .whl/*.whl

"$PYTHON" - <<'EOF'
import re
import subprocess
import sys
import zipfile
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors it
    from pip._vendor.packaging.requirements import Requirement

ROOTS = ["brax", "mujoco", "mujoco-mjx", "distrax", "gymnax", "tyro", "jaxued", "rejax", "playground"]
ROOTS += ["evosax"]  # LPO's evolution strategies (the lpo part)
# Requirements the benchmarks never import, left out of the set: Playground's Warp kernels
# (warp-lang, 392 MB installed; MJX runs impl jax without it) and its notebook helper mediapy.
LEFT_OUT = {"warp-lang", "mediapy"}
PINS = {
    "blinker": "1.9.0",
    "dotmap": "1.3.30",
    "evosax": "0.3.2",
    "brax": "0.14.2",
    "playground": "0.2.0",
    "decorator": "5.3.1",
    "distrax": "0.1.9",
    "dm-tree": "0.1.10",
    "docstring-parser": "0.18.0",
    "farama-notifications": "0.0.6",
    "flask": "3.1.3",
    "flask-cors": "6.0.5",
    "gast": "0.7.0",
    "glfw": "2.11.0",
    "gymnasium": "1.3.0",
    "gymnax": "1.0.1",
    "itsdangerous": "2.2.0",
    "jaxued": "0.0.1",
    "jaxopt": "0.8.5",
    "ml-collections": "1.1.0",
    "mujoco": "4.0.0",
    "mujoco-core": "4.0.0",
    "mujoco-mjx": "3.17.0",
    "mujoco-studio": "4.0.0",
    "pyopengl": "3.1.10",
    "rejax": "0.1.3",
    "tensorboardx": "2.6.5",
    "tfp-nightly": "0.26.0.dev20261027",
    "trimesh": "5.2.0",
    "typeguard": "4.6.1",
    "tyro": "1.0.17",
    "websockets": "17.4",
}
# Python packages of the GPU machine's image (nvidia-h200, read 2026-11-17).
GPU_HAS = set("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch
build certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage
cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops
equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch
grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig
interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown
markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro
nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13
nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker
prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers
setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch
torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton
typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray
xxhash yarl zipp
""".split())
MARKER_ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "extra": "",
}
PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]
PLATFORMS += [f"manylinux_2_{n}_x86_64" for n in range(5, 40)]
DEST = Path(".whl")
LIMIT_MIB = 55


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def download(name: str, spec: str) -> Path:
    before = set(DEST.glob("*.whl"))
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--python-version", "3.12", "--implementation", "cp", "--abi", "cp312"]
    command += ["--abi", "abi3", "--abi", "none", "-q", "-d", str(DEST)]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run([*command, f"{name}{spec}"], check=True)
    new = set(DEST.glob("*.whl")) - before
    if len(new) != 1:
        raise SystemExit(f"{name}{spec}: expected one new wheel, got {sorted(map(str, new))}")
    return new.pop()


def requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    lines = text.split("\n\n", 1)[0].splitlines()  # the headers, before the description
    reqs = [Requirement(x.split(":", 1)[1]) for x in lines if x.startswith("Requires-Dist:")]
    return [r for r in reqs if r.marker is None or r.marker.evaluate(MARKER_ENV)]


todo, done, wanted_by = list(ROOTS), {}, {name: "root" for name in ROOTS}
while todo:
    name = todo.pop(0)
    if name in done or name in GPU_HAS or name in LEFT_OUT:
        continue
    if name not in PINS:
        print(f"note: {name} (needed by {wanted_by[name]}) is not pinned; taking the newest")
    wheel = download(name, f"=={PINS[name]}" if name in PINS else "")
    done[name] = wheel
    for req in requirements(wheel):
        dep = norm(req.name)
        if dep not in GPU_HAS and dep not in done and dep not in todo:
            todo.append(dep)
            wanted_by[dep] = name

total = 0
for name, wheel in sorted(done.items()):
    size = wheel.stat().st_size
    total += size
    print(f"{size / 2**20:7.2f} MiB  {wheel.name}")
print(f"{total / 2**20:7.2f} MiB  in {len(done)} wheels (.whl/)")
unused = sorted(set(PINS) - set(done))
if unused:
    print(f"note: pinned but not needed: {', '.join(unused)}")
if total > LIMIT_MIB * 2**20:
    raise SystemExit(f"the wheels take {total / 2**20:.1f} MiB, over {LIMIT_MIB} MiB")
EOF
