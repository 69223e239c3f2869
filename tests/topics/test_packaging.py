"""How the project installs: `envs/` as `rlsuite.envs`, no top-level `envs` package (PyPI has one
of that name), every subpackage of `rlsuite` in the wheel."""

import pathlib
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel `pip wheel` builds from a copy of the checkout's sources (a build writes into
    the tree it builds; no network: the build backend is the one the test extra installs)."""
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("rlsuite", "envs"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    proc = subprocess.run(
        [*pip, "-w", out, src],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob("rlsuite-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_envs_inside_rlsuite_and_no_top_level_envs(wheel):
    names = wheel.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"rlsuite"}
    for module in ("__init__.py", "registry.py", "cartpole.py", "brax_adapter.py"):
        assert f"rlsuite/envs/{module}" in names
    # Every package of the checkout is in the wheel (pyproject lists them by hand).
    packages = {p.parent.relative_to(ROOT).as_posix() for p in ROOT.glob("rlsuite/**/__init__.py")}
    packages |= {
        f"rlsuite/{p.parent.relative_to(ROOT).as_posix()}" for p in ROOT.glob("envs/**/__init__.py")
    }
    assert packages == {
        pathlib.PurePosixPath(n).parent.as_posix() for n in names if n.endswith("/__init__.py")
    }
    top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert [wheel.read(n).decode().split() for n in top_level] in ([], [["rlsuite"]])


def test_a_top_level_envs_package_and_ours_do_not_shadow_each_other(tmp_path):
    """A package named `envs` on the path (as PyPI's, installed beside us) stays importable, and
    `rlsuite.envs` is still ours."""
    theirs = tmp_path / "envs"
    theirs.mkdir()
    (theirs / "__init__.py").write_text("WHOSE = 'theirs'\n")
    code = (
        "import envs; from rlsuite import envs as ours; import rlsuite.envs.cartpole as c\n"
        "print(envs.WHOSE, ours.make('cartpole')[0].name, c.__file__)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    whose, name, path = proc.stdout.split()
    assert (whose, name) == ("theirs", "CartPole")
    assert pathlib.Path(path) == ROOT / "envs" / "cartpole.py"


def test_the_constraints_pin_every_requirement_at_a_version_the_project_allows():
    """`constraints.txt` (CI's `pip freeze --all`, docs/development/testing.md) pins each
    requirement of the base install and of the extras CI installs, at a version inside the
    requirement's own range, and names each package once; the testing page's table of the core
    is what it pins."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            assert canonicalize_name(name) not in pins, name
            pins[canonicalize_name(name)] = Version(version)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    ci_extras = ("test", "stats", "video", "docs")  # what .ci/run installs
    for text in [*project["dependencies"], *(r for extra in ci_extras for r in extras[extra])]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), (text, pins[name])
    page = (ROOT / "docs" / "development" / "testing.md").read_text()
    row = " | ".join(str(pins[n]) for n in ("jax", "flax", "optax", "chex", "distrax"))
    assert f"| {row} | {pins['orbax-checkpoint']} | {pins['brax']} | {pins['mujoco']} |" in page
