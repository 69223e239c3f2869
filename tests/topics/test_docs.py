"""The project's own notes: every design note the code cites is in the repository."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ("rlsuite", "envs", "experiments", "benchmarks", "notebooks", "tests", "README.md")


def _files():
    for name in SOURCES:
        path = ROOT / name
        if path.is_file():
            yield path
        for file in sorted(path.rglob("*")) if path.is_dir() else ():
            if file.suffix in (".py", ".md", ".sh", ".ipynb") and "__pycache__" not in file.parts:
                yield file


def test_every_cited_design_note_section_exists():
    design = ROOT / "docs" / "design.md"
    sections = set(re.findall(r"^## (\d+)\. ", design.read_text(), flags=re.M))
    assert {"3", "7"} <= sections
    cited, missing = 0, []
    for file in _files():
        text = file.read_text(errors="replace")
        # A bare name of a notes file that is not in the repository (the code once cited one).
        for match in re.finditer(r"(?<![\w/])(DESIGN|design)\.md", text):
            if file != pathlib.Path(__file__).resolve():
                missing.append(f"{file.relative_to(ROOT)}: {match.group(0)} without docs/")
        for section in re.findall(r"docs/design\.md section (\d+)", text):
            cited += 1
            if section not in sections:
                missing.append(f"{file.relative_to(ROOT)}: section {section}")
    assert cited >= 3 and not missing, missing
