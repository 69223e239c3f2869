"""CONTRIBUTING.md's walkthroughs run as written: each section's Python blocks, in order, in a
fresh process in an empty directory, must exit 0."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECTIONS = (
    "A research variant through a hook",
    "A new family through the registry",
    "A family from scratch: stages over a Setup",
    "A new kind of environment, with its evaluation",
)


def section_code(title: str) -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    body = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    assert blocks, f"CONTRIBUTING.md's section {title!r} has no Python block"
    return "\n".join(blocks)


@pytest.mark.parametrize("title", SECTIONS)
def test_each_walkthrough_runs_as_written(title, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", section_code(title)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
