"""The docs site's generated pages, an MkDocs hook (`mkdocs.yml`'s `hooks`).

Pages made at build time from the repository, so that they cannot fall behind it:

- the API reference: one page per public module of `rlsuite` and `rlsuite.envs` (a module or
  package whose name starts with `_` is private), each rendered by mkdocstrings from its
  docstrings, laid out in the navigation by package;
- the tutorials: one page per notebook of `notebooks/`, its cells as they are stored (without
  outputs, never executed here), headed by what `notebooks/README.md` says of it;
- `contributing.md`: `CONTRIBUTING.md` as it is;
- the results tables: each line `<!-- results: NAME -->` of a page replaced by the tables made
  from the JSON of benchmark NAME's last published run (`benchmarks/tables.py`).

Formulas (the notebooks' `$...$`, which `pymdownx.arithmatex` marks) become MathML at build time
(`latex2mathml`, in the docs extra), which browsers draw themselves: the site loads no script
from the network and works offline.

The functions above the MkDocs events need no MkDocs: `tests/topics/test_docs.py` checks what
they generate without it. The `envs/` folder installs as `rlsuite.envs` (setuptools'
`package-dir`), which mkdocstrings cannot see in the source tree, so `on_config` lays out
`rlsuite/` with `envs/` inside it in a scratch folder, as the installed package is, and points
the Python handler there.
"""

from __future__ import annotations

import ast
import functools
import json
import pathlib
import posixpath
import re
import shutil
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Where each documented package's source lives in the repository.
SOURCES = {"rlsuite": ROOT / "rlsuite", "rlsuite.envs": ROOT / "envs"}
NOTEBOOKS = ROOT / "notebooks"
COPIED = {"contributing.md": ROOT / "CONTRIBUTING.md"}


@functools.cache
def results_tables():
    """`benchmarks/tables.py`, which makes the results tables (benchmarks/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tables", ROOT / "benchmarks" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_modules() -> list[str]:
    """Every public module and package of `rlsuite` and `rlsuite.envs`, sorted by name."""
    names = set()
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            folders = [path.parent, *path.parent.parents]
            folders = folders[: folders.index(folder) + 1]
            if not all((f / "__init__.py").is_file() for f in folders):
                continue  # a folder without __init__.py is not part of the package
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if not any(part.startswith("_") for part in parts):
                names.add(".".join((package, *parts)))
    return sorted(names)


def is_package(module: str) -> bool:
    return source_of(module).name == "__init__.py"


def source_of(module: str) -> pathlib.Path:
    """The file that defines `module`."""
    inside_envs = module == "rlsuite.envs" or module.startswith("rlsuite.envs.")
    package = "rlsuite.envs" if inside_envs else "rlsuite"
    parts = module.split(".")[len(package.split(".")) :]
    base = SOURCES[package].joinpath(*parts)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def reference_page(module: str) -> str:
    """The docs path of `module`'s page: `reference/rlsuite/agents/ppo.md`, a package's
    `reference/rlsuite/agents/index.md`."""
    path = "reference/" + module.replace(".", "/")
    return f"{path}/index.md" if is_package(module) else f"{path}.md"


def summary(module: str) -> str:
    """The first sentence of `module`'s docstring, on one line ("" without a docstring)."""
    doc = ast.get_docstring(ast.parse(source_of(module).read_text())) or ""
    first = doc.split("\n\n", 1)[0].replace("\n", " ")
    return re.split(r"\.\s+(?=[A-Z`])", first, maxsplit=1)[0].rstrip(".")


def reference_markdown(module: str) -> str:
    """`module`'s page: its docstring and members through mkdocstrings; a package's also lists
    its public submodules."""
    lines = [f"# `{module}`", "", f"::: {module}", ""]
    children = [m for m in public_modules() if m.rpartition(".")[0] == module]
    if children:
        here = posixpath.dirname(reference_page(module))
        lines += ["## Modules", "", "| module | what |", "|---|---|"]
        for child in children:
            link = posixpath.relpath(reference_page(child), here)
            lines.append(f"| [`{child}`]({link}) | {_cell(summary(child))} |")
        lines.append("")
    return "\n".join(lines)


def reference_nav(module: str = "rlsuite") -> list:
    """The navigation under the package `module`: its page, then its modules and subpackages."""
    children = [m for m in public_modules() if m.rpartition(".")[0] == module]
    entries: list = [reference_page(module)]
    for child in children:
        short = child.rpartition(".")[2]
        entries.append(
            {short: reference_nav(child)} if is_package(child) else {short: reference_page(child)}
        )
    return entries


def notebook_descriptions() -> dict[str, str]:
    """What `notebooks/README.md` says of each notebook, by file name (its bullet's text)."""
    text = (NOTEBOOKS / "README.md").read_text()
    found = re.findall(r"^- `([\w-]+\.ipynb)`: (.*?)(?=^- `|^\S|\Z)", text, flags=re.M | re.S)
    return {name: " ".join(body.split()) for name, body in found}


def tutorial_page(notebook: pathlib.Path) -> str:
    return f"tutorials/{notebook.stem}.md"


def tutorial_markdown(notebook: pathlib.Path) -> str:
    """A notebook as a page: its title, what it shows and how to run it, then its cells as they
    are stored (markdown as it is, code as Python blocks), never executed."""
    descriptions = notebook_descriptions()
    if notebook.name not in descriptions:
        raise ValueError(f"notebooks/README.md says nothing of {notebook.name}: add its bullet")
    cells = json.loads(notebook.read_text())["cells"]
    title, _, first = "".join(cells[0]["source"]).partition("\n")
    if cells[0]["cell_type"] != "markdown" or not title.startswith("# "):
        raise ValueError(f"{notebook.name}: its first cell must be markdown with a '# title'")
    run = f"jupyter execute --output {notebook.stem}_run notebooks/{notebook.name}"
    lines = [
        title,
        "",
        f'!!! info "`notebooks/{notebook.name}`"',
        "",
        f"    {descriptions[notebook.name]}",
        "",
        "    Shown here as stored, without outputs: the site does not run it. Run it in Jupyter,",
        "    or from the command line with the `test` extra installed (the budget variables",
        "    above shorten it):",
        "",
        "    ```bash",
        f"    {run}",
        "    ```",
        "",
        first.strip(),
        "",
    ]
    for cell in cells[1:]:
        source = "".join(cell["source"]).rstrip()
        if cell["cell_type"] == "code":
            lines += ["```python", source, "```", ""]
        elif cell["cell_type"] == "markdown":
            lines += [source, ""]
    return "\n".join(lines)


def generated_pages() -> dict[str, str]:
    """Every generated page: its docs path -> its markdown."""
    pages = {reference_page(m): reference_markdown(m) for m in public_modules()}
    pages.update(
        {tutorial_page(nb): tutorial_markdown(nb) for nb in sorted(NOTEBOOKS.glob("*.ipynb"))}
    )
    pages.update({path: source.read_text() for path, source in COPIED.items()})
    return pages


def navigation(nav: list) -> list:
    """mkdocs.yml's navigation with the sections of generated pages filled in: the entry of
    `reference/index.md` becomes that page and the package tree, the one of `tutorials/index.md`
    that page and a page per notebook."""
    grown = {
        "reference/index.md": ["reference/index.md", {"rlsuite": reference_nav()}],
        "tutorials/index.md": [
            "tutorials/index.md",
            *(tutorial_page(nb) for nb in sorted(NOTEBOOKS.glob("*.ipynb"))),
        ],
    }

    def grow(entry):
        if isinstance(entry, dict):
            return {title: grow(value) for title, value in entry.items()}
        if isinstance(entry, list):
            return [grow(item) for item in entry]
        return grown.get(entry, entry)

    return grow(nav)


_MATH = re.compile(r'<(span|div) class="arithmatex">\s*\\[(\[](.*?)\\[)\]]\s*</\1>', flags=re.S)


def math_to_mathml(html: str) -> str:
    """Every formula `pymdownx.arithmatex` (generic mode) left in a page's HTML, `\\(...\\)`
    inline and `\\[...\\]` displayed, as MathML."""
    from html import unescape

    from latex2mathml.converter import convert

    def mathml(match: re.Match) -> str:
        display = "block" if match.group(1) == "div" else "inline"
        return convert(unescape(match.group(2)).strip(), display=display)

    return _MATH.sub(mathml, html)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


# MkDocs events.

_scratch: tempfile.TemporaryDirectory | None = None


def on_config(config):
    """Lay out the package as it installs (envs/ as rlsuite/envs) for mkdocstrings, and fill in
    the navigation's generated sections."""
    global _scratch
    if _scratch is None:
        _scratch = tempfile.TemporaryDirectory(prefix="rlsuite-docs-")
    package = pathlib.Path(_scratch.name) / "rlsuite"
    shutil.rmtree(package, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(SOURCES["rlsuite"], package, ignore=ignore)
    shutil.copytree(SOURCES["rlsuite.envs"], package / "envs", ignore=ignore)
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers.setdefault("python", {})["paths"] = [_scratch.name]
    config.nav = navigation(config.nav)
    return config


# Before mkdocstrings' own on_config, which may start the Python handler with the paths it has.
on_config.mkdocs_priority = 100  # what mkdocs.plugins.event_priority(100) sets


def on_files(files, config):
    """Add the generated pages to the site."""
    from mkdocs.structure.files import File

    for path, markdown in generated_pages().items():
        files.append(File.generated(config, path, content=markdown))
    return files


def on_page_markdown(markdown, page, config, files):
    """The page's results tables, from the benchmarks' JSON."""
    return results_tables().render(markdown)


def on_page_content(html, page, config, files):
    """The page's formulas as MathML."""
    return math_to_mathml(html)


def on_shutdown():
    global _scratch
    if _scratch is not None:
        _scratch.cleanup()
        _scratch = None
