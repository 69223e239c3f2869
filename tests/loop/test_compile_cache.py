"""The persistent compilation cache (`rlsuite.loop.compile_cache`): where it goes, turned off,
and a second identical run loading what the first compiled."""

import json
import os

import jax
import pytest

from rlsuite.loop import compile_cache
from tests.app.test_cli import rlsuite

NAMES = ("jax_enable_compilation_cache", "jax_compilation_cache_dir")


@pytest.fixture
def jax_config(monkeypatch):
    """The test process's own cache settings (tests/conftest.py's), put back after the test."""
    before = {name: getattr(jax.config, name) for name in NAMES}
    yield
    for name, value in before.items():
        jax.config.update(name, value)


def test_the_folder_is_the_flags_then_the_variables_then_the_default(
    jax_config, monkeypatch, tmp_path
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.default_dir() == tmp_path / "xdg" / "rlsuite" / "jax"
    monkeypatch.setenv(compile_cache.VARIABLE, str(tmp_path / "var"))
    assert compile_cache.use_compilation_cache(tmp_path / "flag") == tmp_path / "flag"
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "flag")
    assert compile_cache.use_compilation_cache() == tmp_path / "var"
    monkeypatch.delenv(compile_cache.VARIABLE)
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jax"))  # JAX's own variable
    assert compile_cache.use_compilation_cache() == tmp_path / "jax"
    jax.config.update("jax_compilation_cache_dir", None)
    assert compile_cache.use_compilation_cache() == tmp_path / "xdg" / "rlsuite" / "jax"
    assert jax.config.jax_enable_compilation_cache
    assert compile_cache.use_compilation_cache(" OFF ") is None
    assert not jax.config.jax_enable_compilation_cache and compile_cache.said() == ""


@pytest.mark.slow
def test_a_second_identical_run_loads_what_the_first_compiled_and_off_turns_it_off(tmp_path):
    cache = tmp_path / "cache"
    env = {compile_cache.VARIABLE: str(cache)}
    small = ["--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "16"]
    small += ["--hidden-sizes", "8", "--eval-episodes", "2", "--no-progress"]
    said, compiled = [], []
    for name in ("first", "second"):
        proc = rlsuite("train", "ppo", *small, "--out", tmp_path / name, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        said.append(proc.stdout.splitlines()[-1])
        compiled.append(json.loads((tmp_path / name / "final.json").read_text()))
    assert f"the compiled programs are cached in {cache} for the next run" in said[0]
    assert f"programs loaded from {cache}, " in said[1] and "s of compiling saved" in said[1]
    first, second = (c["compile_seconds"] for c in compiled)
    assert second < first / 2, (first, second)
    assert compiled[0]["eval_return_per_seed"] == compiled[1]["eval_return_per_seed"]
    files = sorted(os.listdir(cache))
    off = ["--out", tmp_path / "off", "--compilation-cache", "off"]  # the flag over the variable
    proc = rlsuite("train", "ppo", *small, *off, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "cache" not in proc.stdout.splitlines()[-1] and sorted(os.listdir(cache)) == files
