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


@pytest.mark.slow
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
