"""Imports run one way: gdln (the CLI) -> paper_figures -> verify -> numeric -> derive.

Walks every module's syntax tree (imports inside functions included) and checks that no
package imports one above it, and that nothing imports the CLI."""

import ast

import pytest

from .conftest import ROOT

LAYERS = ["derive", "numeric", "verify", "paper_figures", "gdln"]


def _imported_packages(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


@pytest.mark.parametrize("package", LAYERS)
def test_no_upward_import(package):
    level = LAYERS.index(package)
    files = sorted((ROOT / package).glob("*.py"))
    assert files, package
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in files
        for name, line in _imported_packages(path)
        if name in LAYERS and LAYERS.index(name) > level
    ]
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from paper_figures import regenerate\n")
    assert ("paper_figures", 2) in list(_imported_packages(module))


def test_importing_gdln_has_no_side_effects():
    """Importing the packages leaves JAX at 32-bit and matplotlib's backend unchosen; the CLI
    switches 64-bit on when it runs."""
    import subprocess
    import sys

    probe = (
        "import derive, numeric, verify, paper_figures, gdln.cli; import jax, matplotlib, sys; "
        "print(jax.config.jax_enable_x64, 'matplotlib.pyplot' in sys.modules, matplotlib.rcParams._get_backend_or_none()); "
        "gdln.cli.main(['derive', 'examples/xor.toml', '--network', 'xor', '--json']); "
        "print(jax.config.jax_enable_x64, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.splitlines()[0] == "False False None"
    assert result.stderr.strip().splitlines()[-1] == "True"
