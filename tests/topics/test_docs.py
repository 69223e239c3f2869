"""The project's own notes and its documentation site (`mkdocs.yml`, `docs/`).

The notes: every design note the code cites is in the repository. The site: every registered
algorithm has a family page that renders its config and hparams classes and names the metrics its
agents log, every environment-name prefix has a suite page, every public module of `rlsuite` and
`rlsuite.envs` has an API reference page, every notebook a tutorial page, and every relative link
and navigation entry points to a page. These run without MkDocs (the generated pages come from
`docs/hooks.py`'s functions); building the site itself, `mkdocs build --strict`, skips where
MkDocs is not installed (`pip install -e ".[docs]"`).
"""

import ast
import importlib.util
import json
import pathlib
import re
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
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


def test_the_readme_is_short_opens_with_its_two_commands_and_links_to_files():
    """README.md: at most 150 lines (the site holds the rest), its first block the two commands
    that install and train and install and test (the test command is `.ci/run`'s), and every
    relative link points to a file of the repository."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150, f"README.md has {len(text.splitlines())} lines"
    first = re.match(r"# rlsuite\n\n```bash\n(.*?)\n```\n", text, flags=re.S)
    assert first, "README.md does not open with a bash block under its title"
    commands = [c for c in first.group(1).splitlines() if c and not c.startswith("#")]
    assert len(commands) == 2 and all(c.startswith("python3 -m venv .venv && ") for c in commands)
    train, tests = commands
    assert "pip install -e . && rlsuite train ppo --env cartpole" in train, train
    assert 'pip install -e ".[test' in tests and tests.endswith("&& python -m pytest -n 2"), tests
    assert "\npython -m pytest -n 2\n" in (ROOT / ".ci" / "run").read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    assert len(links) >= 20
    broken = [
        target
        for target in links
        if not re.match(r"[a-z]+:", target)
        and not target.startswith("#")
        and not (ROOT / target.split("#", 1)[0]).is_file()
    ]
    assert not broken, f"README.md links to no file: {broken}"


# ------------------------------------------------------------------------------ the site


def _hooks():
    """docs/hooks.py, imported as a module (it needs no MkDocs until a build calls its events)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hooks():
    return _hooks()


@pytest.fixture(scope="module")
def generated(hooks):
    return hooks.generated_pages()


def _nav_pages() -> list[str]:
    """The pages mkdocs.yml's navigation names (`- Title: page.md` and `- page.md` entries)."""
    text = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?([\w./-]+\.md)\s*$", text, flags=re.M)


def _section(page: pathlib.Path, title: str) -> str:
    assert page.is_file(), f"{page.relative_to(ROOT)} is missing"
    text = page.read_text()
    assert f"\n## {title}\n" in text, f"{page.relative_to(ROOT)} has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_every_registered_algorithm_has_a_family_page():
    from rlsuite.agents import registry

    nav = _nav_pages()
    missing = [
        f"docs/families/{name}.md"
        for name in registry.names()
        if not (DOCS / "families" / f"{name}.md").is_file() or f"families/{name}.md" not in nav
    ]
    assert not missing, f"family pages missing from docs/ or mkdocs.yml's nav: {missing}"


def test_each_family_page_renders_its_config_and_hparams_from_the_dataclasses():
    from rlsuite.agents import registry

    wrong = []
    for name in registry.names():
        algo = registry.get(name)
        page = DOCS / "families" / f"{name}.md"
        config = _section(page, "Configuration")
        for cls in (algo.config_cls, algo.hparams_cls):
            if f"\n::: {cls.__module__}.{cls.__qualname__}\n" not in config:
                wrong.append(f"{name}: ::: {cls.__module__}.{cls.__qualname__}")
        for heading in ("Run it", "Metrics", "Research hooks", "Results"):
            _section(page, heading)
    assert not wrong, f"family pages that do not render their registered classes: {wrong}"


def _suite_prefixes() -> tuple[dict[str, list[str]], list[str]]:
    """Every environment-name prefix with the built-in names under it, and the names without a
    prefix: from the registry's tables, without importing any optional suite."""
    from rlsuite.envs import registry

    built_in = [*registry.OURS, *registry.OURS_MJX, *registry.META, *registry.UED]
    prefixes: dict[str, list[str]] = {p.rstrip("/"): [] for p in registry.BUILT_IN_SUITES}
    for name in built_in:
        if "/" in name:
            prefixes.setdefault(name.split("/", 1)[0], []).append(name)
    return prefixes, [name for name in built_in if "/" not in name]


_ITEM = re.compile(r"\s*([-*]|\d+\.) ")


def lists_run_into_a_paragraph(doc: str) -> list[int]:
    """The lines of `doc` that open a Markdown list straight after a paragraph or a table row,
    with no blank line between: the API reference would render the list as part of that
    paragraph. An item's own continuation lines are not such a line."""
    lines = doc.splitlines()
    found = []
    for i in range(1, len(lines)):
        if not _ITEM.match(lines[i]) or not lines[i - 1].strip():
            continue
        block = []  # the lines above, back to the last blank one
        for line in reversed(lines[:i]):
            if not line.strip():
                break
            block.append(line)
        if not any(_ITEM.match(line) for line in block):
            found.append(i)
    return found


def test_lists_in_docstrings_follow_a_blank_line():
    assert lists_run_into_a_paragraph("Title.\n\nChoices:\n- one;\n- two.") == [3]
    assert lists_run_into_a_paragraph("| a | b |\n* c") == [1]
    assert lists_run_into_a_paragraph("Choices:\n\n- one,\n  still one;\n- two\n1. x") == []
    found = []
    for path in sorted([*(ROOT / "rlsuite").rglob("*.py"), *(ROOT / "envs").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node) or ""
                where = f"{path.relative_to(ROOT)}: {getattr(node, 'name', 'module')}"
                found += [
                    f"{where}, docstring line {i + 1}" for i in lists_run_into_a_paragraph(doc)
                ]
    assert not found, "a list needs a blank line before it:\n" + "\n".join(found)


def test_every_suite_prefix_has_a_page():
    from rlsuite.envs import registry

    prefixes, unprefixed = _suite_prefixes()
    assert {"brax", "gymnax", "goal", "meta", "maze", "probe"} <= set(prefixes)
    nav, wrong = _nav_pages(), []
    for prefix, names in prefixes.items():
        page = DOCS / "suites" / f"{prefix}.md"
        if not page.is_file() or f"suites/{prefix}.md" not in nav:
            wrong.append(f"docs/suites/{prefix}.md missing from docs/ or the nav")
            continue
        text = page.read_text()
        wrong += [f"{prefix}.md does not name {n}" for n in names if f"`{n}`" not in text]
        suite = registry.SUITES.get(f"{prefix}/")
        if suite is not None and suite.extra and f'".[{suite.extra}]"' not in text:
            wrong.append(f"{prefix}.md does not say to install the {suite.extra} extra")
    ours = (DOCS / "suites" / "ours.md").read_text()
    wrong += [f"ours.md does not name {n}" for n in unprefixed if f"`{n}`" not in ours]
    assert not wrong, wrong


def _modules_from_pyproject() -> set[str]:
    """The public modules of the packages pyproject.toml installs, found by walking their
    folders (its `package-dir` maps `rlsuite.envs` to `envs/`)."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = tool.get("package-dir", {})
    modules = set()
    for package in tool["packages"]:
        base = next((p for p in folders if package == p or package.startswith(p + ".")), None)
        if base is None:
            folder = ROOT.joinpath(*package.split("."))
        else:
            rest = package[len(base) :].lstrip(".").split(".") if package != base else []
            folder = ROOT.joinpath(folders[base], *rest)
        assert (folder / "__init__.py").is_file(), f"{package}: no {folder}/__init__.py"
        if not any(part.startswith("_") for part in package.split(".")):
            modules.add(package)
        modules |= {
            f"{package}.{f.stem}" for f in folder.glob("*.py") if not f.stem.startswith("_")
        }
    return modules


def test_every_public_module_is_in_the_api_reference(hooks, generated):
    modules = _modules_from_pyproject()
    assert {"rlsuite.agents.ppo", "rlsuite.envs.cartpole", "rlsuite.envs.maze.level"} <= modules
    assert set(hooks.public_modules()) == modules
    missing = [
        m
        for m in sorted(modules)
        if f"\n::: {m}\n" not in generated.get(hooks.reference_page(m), "")
    ]
    assert not missing, f"modules without an API reference page: {missing}"
    nav = hooks.reference_nav()
    named = set(re.findall(r"'(reference/[^']+\.md)'", repr(nav)))
    assert named == {hooks.reference_page(m) for m in modules}


def test_every_notebook_has_a_tutorial_page(hooks, generated):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 8
    index = (DOCS / "tutorials" / "index.md").read_text()
    for notebook in notebooks:
        page = generated[f"tutorials/{notebook.stem}.md"]
        assert page.startswith("# ") and f"notebooks/{notebook.name}" in page
        assert f"]({notebook.stem}.md)" in index, (
            f"tutorials/index.md does not list {notebook.name}"
        )
    grown = hooks.navigation([{"Tutorials": "tutorials/index.md"}])
    assert grown[0]["Tutorials"][1:] == [f"tutorials/{nb.stem}.md" for nb in notebooks]


def test_every_relative_link_and_nav_entry_points_to_a_page(generated):
    pages = {p.relative_to(DOCS).as_posix(): p.read_text() for p in DOCS.rglob("*.md")}
    assert not set(pages) & set(generated), "a committed page has a generated page's path"
    pages.update(generated)
    files = set(pages) | {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file()}
    broken = [f"mkdocs.yml: {page}" for page in _nav_pages() if page not in pages]
    for path, text in pages.items():
        text = re.sub(r"```.*?```", "", text, flags=re.S)  # links in code blocks are code
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            resolved = pathlib.PurePosixPath(path).parent / target.split("#", 1)[0]
            parts = []
            for part in resolved.parts:
                if part == "..":
                    if not parts:
                        break
                    parts.pop()
                elif part != ".":
                    parts.append(part)
            else:
                if "/".join(parts) in files:
                    continue
            broken.append(f"{path}: {target}")
    assert not broken, f"links to no page: {broken}"


# ------------------------------------------------------------------------------ results tables


def _fixpo_result(fixpo_return: float, kl: float) -> dict:
    """A `benchmarks/fixpo.py` result as its `main` writes it, with made-up numbers."""

    def side(updates_held, kl_max, ret, train_s, fixup=None):
        out = {
            "updates": 100,
            "updates_held": updates_held,
            "trust_region_kl_max": kl_max,
            "eval_return_mean": ret,
            "eval_return_ci": [ret - 10.0, ret + 10.0],
            "train_s": train_s,
            "compile_s": 3.0,
        }
        if fixup is not None:
            out.update(fixup_steps=5, fixup_step_fraction=fixup)
        return out

    row = {
        "env": "pendulum",
        "seeds": 2,
        "env_steps_per_seed": 4096,
        "fixpo": side(100, 0.2, fixpo_return, 12.0, fixup=0.0125),
        "ppo_clip": side(60, kl, -150.0, 10.0),
        "eval_difference": {"mean": fixpo_return + 150.0, "ci": [-5.0, 5.0]},
        "train_time_ratio": 1.2,
    }
    machine = {"cpu": "A CPU", "cpus_usable": 2, "jax_backend": "cpu", "devices": ["cpu", "cpu"]}
    machine["date"] = "2026-12-07T10:00:00+00:00"
    return {
        "machine": machine,
        "command": "python benchmarks/fixpo.py --seeds 2",
        "git": {"commit": "0123456789abcdef"},
        "rows": [row],
    }


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("tables", ROOT / "benchmarks" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_results_table_is_made_from_the_benchmarks_json_and_a_rerun_changes_it(
    tables, tmp_path, monkeypatch
):
    """A page's `<!-- results: fixpo -->` line becomes the table `benchmarks/fixpo.py`'s
    `tables` makes from `results/fixpo.json`, with the command, machine, date and commit; new
    JSON, a new table; no JSON, a note naming the command that writes it."""
    page = "# FixPO\n\n## Results\n\n<!-- results: fixpo -->\n\nText after.\n"
    missing = tables.render(page, tmp_path)
    assert "No published run yet" in missing and "`python benchmarks/fixpo.py` writes" in missing
    (tmp_path / "fixpo.json").write_text(json.dumps(_fixpo_result(-200.0, 94.07)))
    first = tables.render(page, tmp_path)
    assert first.startswith("# FixPO\n\n## Results\n\n**FixPO beside PPO-clip")
    assert first.endswith("\n\nText after.\n") and "<!-- results" not in first
    row = (
        "| pendulum (4,096 steps x 2) | fixpo | 100 / 100 | 0.200 | 1.25% | -200.0 [-210.0, -190.0]"
    )
    assert row + " | -50.0 [-5.0, +5.0] | 12.0 (1.20x) | 3.0 |" in first
    assert "| pendulum (4,096 steps x 2) | ppo_clip | 60 / 100 | 94.070 |  |" in first
    assert (
        "*From `python benchmarks/fixpo.py --seeds 2` on A CPU, 2 cores, JAX on cpu (2 devices), "
        "2026-12-07T10:00:00+00:00, commit `0123456`; the JSON: `benchmarks/results/fixpo.json`.*"
    ) in first
    (tmp_path / "fixpo.json").write_text(json.dumps(_fixpo_result(-160.0, 3.5)))
    second = tables.render(page, tmp_path)
    assert "-160.0 [-170.0, -150.0] | -10.0 [-5.0, +5.0]" in second and "| 3.500 |" in second
    assert "-200.0" not in second and "94.070" not in second
    (tmp_path / "fixpo.json").write_text(json.dumps({"partial": True, "rows": []}))
    assert "Unfinished run" in tables.render(page, tmp_path)
    with pytest.raises(ValueError, match=r"no benchmark script benchmarks/fixpo2.py; allowed: "):
        tables.render("<!-- results: fixpo2 -->\n", tmp_path)
    # A script that does not make its tables from its JSON yet: a note, no error.
    monkeypatch.setattr(tables, "published", lambda: ["rarl"])
    assert "Tables not generated yet" in tables.render("<!-- results: fixpo -->\n", tmp_path)


# Each family page (docs/families/NAME.md) shows the tables of the benchmark that measures it.
RESULTS_OF = {
    "ppo": "ppo",
    "sac": "off_policy",
    "td3": "off_policy",
    "dqn": "value_based",
    "c51": "distributional",
    "qrdqn": "distributional",
    "iqn": "distributional",
    "rainbow": "replay",
    "pqn": "value_based",
    "bc": "offline",
    "td3_bc": "offline",
    "cql": "offline",
    "iql": "offline",
    "csve": "offline",
    "saq": "offline",
    "rl2": "rl2",
    "ued": "ued",
    "task_curricula": "ada",
    "crl": "crl",
    "sac_her": None,
    "fixpo": "fixpo",
    "rarl": "rarl",
    "dpo": "dpo",
    "lpo": "lpo",
}


def test_every_results_line_names_a_benchmark_and_every_benchmark_has_its_page(tables):
    """Every `<!-- results: NAME -->` of the docs names a benchmark script; every script but the
    device halves (`*_device.py`, whose readings are their CPU script's) has its page in
    docs/benchmarks/ showing its tables; each family page's Results show its benchmark's
    (`RESULTS_OF`; None: no benchmark measures it)."""
    from rlsuite.agents import registry

    scripts = tables.scripts()
    measuring = {name for name in scripts if not name.endswith("_device")}
    assert measuring <= set(tables.published()) <= set(scripts)
    wrong = []
    for page in sorted(DOCS.rglob("*.md")):
        for name in tables.MARKER.findall(page.read_text()):
            if name not in scripts:
                wrong.append(f"{page.relative_to(ROOT)}: no benchmark script {name}")
    for name in scripts:
        page = DOCS / "benchmarks" / f"{name}.md"
        if name.endswith("_device"):
            continue
        if not page.is_file() or f"<!-- results: {name} -->" not in page.read_text():
            wrong.append(f"docs/benchmarks/{name}.md does not show {name}'s tables")
    assert set(RESULTS_OF) == {*registry.names(), "task_curricula"}
    for family, name in RESULTS_OF.items():
        results = _section(DOCS / "families" / f"{family}.md", "Results")
        if name is not None and f"<!-- results: {name} -->" not in results:
            wrong.append(f"docs/families/{family}.md's Results do not show {name}'s tables")
    assert not wrong, wrong


def test_every_published_json_renders_as_tables(tables):
    """Each tracked `benchmarks/results/NAME.json` goes through its script's `tables(result)`:
    at least one table with a header row, then where it came from; none is an unfinished run."""
    jsons = sorted(p for p in tables.RESULTS.glob("*.json") if not p.name.endswith(".curves.json"))
    assert {"fixpo", "ppo", "value_based"} <= {path.stem for path in jsons}
    for path in jsons:
        assert '"train_return_curve"' not in path.read_text(), f"{path.name}: curves go beside it"
        text = tables.markdown(path.stem)
        assert "Unfinished run" not in text and "not generated" not in text, path.name
        assert re.search(r"^\*\*.+\*\*\n\n\| .+ \|\n\|(---|:?-+:?\|)", text, re.M), path.name
        assert text.endswith(f"the JSON: `benchmarks/results/{path.name}`.*"), path.name


@pytest.mark.slow
def test_family_pages_name_exactly_the_metrics_their_agents_log():
    """The names in each family page's metrics table are those its agent's `update` returns
    (found by `jax.eval_shape`, nothing compiled or run), no more and no fewer."""
    import jax

    from rlsuite import envs
    from rlsuite.agents import registry
    from tests.agents.offline_probe import PROBE, probe_dataset

    def logged(algo, config, data=None) -> set[str]:
        env, params = (
            envs.make(PROBE, continuous=True) if algo.offline else envs.make(algo.default_env)
        )
        agent = algo.make(config, env, params)
        hp, extra = algo.hparams_cls(), {} if data is None else {"data": data}
        state = jax.eval_shape(lambda key, h: agent.init(key, h, **extra), jax.random.key(0), hp)
        _, metrics = jax.eval_shape(lambda s, h: agent.update(s, h, **extra), state, hp)
        return set(metrics)

    uniform = lambda key, shape: jax.random.uniform(key, shape, minval=-1, maxval=1)  # noqa: E731
    data = probe_dataset(uniform, jax.random.key(0), steps=20)
    wrong = []
    for name in registry.names():
        algo = registry.get(name)
        expected = logged(algo, algo.config_cls(), data if algo.offline else None)
        if name == "ued":  # the curricula's metrics and PAIRED's
            expected |= logged(algo, algo.config_cls(curriculum="paired"))
        table = _section(DOCS / "families" / f"{name}.md", "Metrics")
        rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
        named = set(re.findall(r"`([a-z_]+/[a-z_/]+)`", "".join(rows)))
        if named != expected:
            wrong.append(
                f"{name}: not logged {sorted(named - expected)}, "
                f"not named {sorted(expected - named)}"
            )
    assert not wrong, wrong


@pytest.mark.slow
def test_the_site_builds_with_no_warning(tmp_path):
    """`mkdocs build --strict`, as CI runs it (about 30 s on 2 cores: the API reference)."""
    pytest.importorskip(
        "mkdocs", reason='MkDocs is missing (the docs extra: pip install -e ".[docs]")'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "families" / "ppo" / "index.html").is_file()


@pytest.mark.slow
def test_the_built_site_opens_in_a_browser_without_a_console_error(tmp_path):
    """`docs/check_site.py` on a fresh build: the home page, the PPO page, an API reference page,
    a search and a benchmark page with its generated table load in headless Chromium, show what
    they should, and log no console error (nothing from the network: the site works offline).
    About a minute on 2 cores."""
    import shutil

    pytest.importorskip(
        "mkdocs", reason='MkDocs is missing (the docs extra: pip install -e ".[docs]")'
    )
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("Chromium is missing (Debian: apt-get install chromium)")
    site = tmp_path / "site"
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    proc = subprocess.run(build, cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-4000:]
    check = [sys.executable, str(DOCS / "check_site.py"), "--site", str(site)]
    proc = subprocess.run(
        [*check, "--out", str(tmp_path / "shots")], capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert {p.name for p in (tmp_path / "shots").glob("*.png")} == {
        "home.png",
        "ppo.png",
        "reference.png",
        "search.png",
        "benchmark.png",
    }
