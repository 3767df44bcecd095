"""The documentation cannot drift: the command-line page comes from the parser, every code
block of the README and the docs runs (but those marked long-running), the tutorials execute,
and the README stays short."""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gdln.cli import build_parser
from gdln.cli_reference import reference_markdown

from .helpers import ROOT

LONG_RUNNING = "<!-- long-running"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.py"))
#: seconds a code block or a tutorial may take (CI's 2 cores)
BLOCK_TIMEOUT = 300


def _codes(page: Path, language: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    found = re.finditer(rf"(?P<before>[^\n]*)\n```{language}\n(?P<code>.*?)```", text, re.S)
    return [m.group("code") for m in found if not m.group("before").startswith(LONG_RUNNING)]


def _blocks(language: str):
    """One case per page: its blocks in order, as a reader runs them one after another."""
    for page in PAGES:
        codes = _codes(page, language)
        if codes:
            yield pytest.param("\n".join(codes), id=page.name)


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_command_line_page_lists_every_command_and_flag():
    page = reference_markdown()
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, sub in commands.choices.items():
        assert f"## gdln {name}\n" in page, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page.split(f"## gdln {name}\n", 1)[1], (name, flag)
    assert "<!-- gdln command-line reference -->" in (ROOT / "docs" / "cli.md").read_text()


def test_the_docs_name_pages_that_exist():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in re.findall(r":\s+(\S+\.(?:md|py))\s*$", nav, re.M):
        assert (ROOT / "docs" / page).is_file(), page


@pytest.mark.slow
@pytest.mark.parametrize("code", list(_blocks("python")))
def test_python_blocks_run(code):
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, timeout=BLOCK_TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("code", list(_blocks("(?:bash|sh)")))
def test_shell_blocks_run(code, tmp_path):
    """Shell blocks run in an empty folder, as after a plain install, with this environment's gdln."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        **{name: os.environ[name] for name in ("GDLN_CACHE_DIR", "GDLN_CONFIG_DIR")},
    }
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        env=env,
        timeout=BLOCK_TIMEOUT,
    )


# the site build below executes every cell too, and fails on an error in any: this second run of
# the notebooks is left to the exhaustive tier
@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_tutorials_execute(notebook, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    document = jupytext.read(notebook)
    nbclient.NotebookClient(
        document, timeout=BLOCK_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in document.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)


# --- the site builds on a fresh clone, the first time (issue 37) ---------------------------------


def _fresh_copy(destination: Path) -> Path:
    """The repository's files as a clone has them (tracked and new, not ignored): no build/."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            (destination / name).write_bytes(source.read_bytes())
    assert not (destination / "build").exists()
    return destination


def _build_site(folder: Path, execute: bool) -> subprocess.CompletedProcess:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "GDLN_DOCS_EXECUTE": "true" if execute else "false"}
    return subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(folder / "site")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


# in the fast tier: CI builds the site strict, its tutorials executed, on every run (.ci/run)
def test_the_site_builds_the_first_time_on_a_fresh_clone_with_the_tutorials_outputs(tmp_path):
    """The README's docs command, once, on a copy without build/: the API page's tree
    (build/typecheck) is linked before mkdocstrings reads its paths (the first build once failed
    with "gdln.derive.spec.load_spec could not be found"), and the tutorials are executed and
    rendered with their outputs. One build checks both: each takes a minute on 2 cores."""
    build = _build_site(_fresh_copy(tmp_path), execute=True)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "load_spec" in (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        page = (tmp_path / "site" / "notebooks" / notebook.stem / "index.html").read_text(encoding="utf-8")
        assert page.count("jp-OutputArea-output") >= 3, notebook.stem
        _shows_its_figures_and_equations(page, notebook)


def _outputs(page: str) -> list[str]:
    """The HTML of each output of the tutorial's page, in order."""
    return re.findall(r'<div class="jp-OutputArea-child[^"]*">(.*?)</div>\s*</div>', page, re.S)


def _shows_its_figures_and_equations(page: str, notebook: Path) -> None:
    """Every figure a tutorial makes is an image on its page, not matplotlib's text stand-in
    (`<Figure size 720x600 with 1 Axes>`, issue 49), and its equations are LaTeX that MathJax,
    loaded on the page, renders: no raw document LaTeX (`\\section`, `\\begin{align*}`)."""
    outputs = _outputs(page)
    assert outputs, notebook.stem
    assert not any("&lt;Figure size" in output or "<Figure size" in output for output in outputs), notebook.stem
    source = notebook.read_text(encoding="utf-8")
    figures = source.count("_figure(")  # each figure a tutorial draws, e.g. sweep_figure(report)
    images = [o for o in outputs if re.search(r'<img [^>]*src="(data:image/png;base64,|[^"]+\.png")', o)]
    assert len(images) == figures, (notebook.stem, len(images), figures)
    equations = [o for o in outputs if 'data-mime-type="text/latex"' in o]
    assert len(equations) >= ("Math(" in source), notebook.stem
    for equation in equations:
        assert not re.search(r"\\(?:sub)?section|\\begin\{(?:equation|gather|align)\*\}", equation), notebook.stem
    if equations:
        (mathjax,) = re.findall(r'<script src="([^"]*)">', page[: page.index("x-mathjax-config")])[-1:]
        assert "mathjax" in mathjax.lower(), notebook.stem


# --- the API page: one docstring style, no Sphinx roles (issue 37) ------------------------------

#: a Sphinx role, which mkdocstrings prints literally (write `name` or [name][gdln.x.y])
SPHINX_ROLE = re.compile(r":(?:func|class|mod|data|attr|meth|obj|exc|const):`")


def _api_entries() -> list[tuple[str, object, list[str] | None]]:
    """The objects the API page renders (``::: name``), with the members its options list
    (``None`` where it lists none: mkdocstrings' defaults)."""
    import importlib

    entries, text = [], (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for block in re.split(r"^(?=::: )", text, flags=re.M)[1:]:
        name = block.split()[1]
        members = re.findall(r"^        - (\w+)$", block, flags=re.M)
        if re.search(r"^      members: false$", block, flags=re.M):
            members = []
        module, _, attribute = name.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), attribute) if module else importlib.import_module(name)
        except ModuleNotFoundError:  # the page names a module itself
            found = importlib.import_module(name)
        entries.append((name, found, members or (None if not re.search("members:", block) else [])))
    return entries


def _documented(name, found, members) -> list[tuple[str, object]]:
    """``(name, object)`` for each docstring the page shows for an entry: the object's, and its
    members' (those listed, or a class's public methods where none are listed)."""
    import inspect

    shown = [(name, found)]
    if inspect.isclass(found):
        if members is None:
            members = [m for m, v in vars(found).items() if not m.startswith("_") and inspect.isfunction(v)]
        shown += [(f"{name}.{member}", getattr(found, member)) for member in members]
    return shown


def test_the_api_page_renders_every_entry_it_names():
    assert len(_api_entries()) >= 15


def test_api_docstrings_have_no_sphinx_roles_and_google_sections():
    """mkdocstrings reads Google-style docstrings and prints a Sphinx role (`:func:`) as it is:
    every docstring the API page shows is free of them, and every function it shows has an
    Args section (where it takes arguments) and a Returns section."""
    import inspect

    roles, sections = [], []
    for entry in _api_entries():
        for name, found in _documented(*entry):
            doc = inspect.getdoc(found) or ""
            if SPHINX_ROLE.search(doc):
                roles.append(name)
            if inspect.isroutine(found):
                arguments = [p for p in inspect.signature(found).parameters if p not in ("self", "cls")]
                if arguments and not re.search(r"^(Args|Parameters):$", doc, flags=re.M):
                    sections.append(f"{name}: no Args section")
                if not re.search(r"^Returns:$", doc, flags=re.M):
                    sections.append(f"{name}: no Returns section")
    assert roles == []
    assert sections == []
