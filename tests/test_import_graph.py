"""Imports run one way: gdln (the CLI) -> gdln.figures -> gdln.verify -> gdln.numeric -> gdln.derive.

Walks every module's syntax tree (imports inside functions included) and checks that no
package imports one above it, and that nothing imports the CLI. Each layer keeps its folder
in the repository (paper_figures/ installs as gdln.figures)."""

import ast

import pytest

from .helpers import ROOT

# (folder, import name), lowest layer first; the CLI is the rest of gdln
LAYERS = [
    ("derive", "gdln.derive"),
    ("numeric", "gdln.numeric"),
    ("verify", "gdln.verify"),
    ("paper_figures", "gdln.figures"),
    ("gdln", "gdln"),
]
FOLDERS = [folder for folder, _ in LAYERS]


def _layer(module):
    """The folder of the layer that an absolute import of `module` reaches, or None outside gdln."""
    for folder, name in LAYERS:
        if module == name or module.startswith(name + "."):
            return folder
    return None


def _imported_packages(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _layer(alias.name), node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "gdln":  # `from gdln import figures` reaches the named subpackage
                for alias in node.names:
                    yield _layer(f"gdln.{alias.name}"), node.lineno
            else:
                yield _layer(node.module), node.lineno


@pytest.mark.parametrize("package", FOLDERS)
def test_no_upward_import(package):
    level = FOLDERS.index(package)
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, package
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in files
        for name, line in _imported_packages(path)
        if name is not None and FOLDERS.index(name) > level
    ]
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from gdln.figures import regenerate\n    from gdln import cli\n    import numpy\n")
    assert list(_imported_packages(module)) == [("paper_figures", 2), ("gdln", 3), (None, 4)]


def test_importing_gdln_has_no_side_effects():
    """Importing the packages leaves JAX at 32-bit and matplotlib's backend unchosen; the CLI
    switches 64-bit on when it runs."""
    import subprocess
    import sys

    probe = (
        "import gdln.derive, gdln.numeric, gdln.verify, gdln.figures, gdln.cli; import jax, matplotlib, sys; "
        "print(jax.config.jax_enable_x64, 'matplotlib.pyplot' in sys.modules, matplotlib.rcParams._get_backend_or_none()); "
        "gdln.cli.main(['derive', 'examples/xor.toml', '--network', 'xor', '--json']); "
        "print(jax.config.jax_enable_x64, file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert result.stdout.splitlines()[0] == "False False None"
    assert result.stderr.strip().splitlines()[-1] == "True"


def _runtime_imports(path, package):
    """Modules of the same layer that ``path`` imports when it runs (imports inside functions
    included); imports under ``if TYPE_CHECKING:`` only name types and are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    siblings = {p.stem for p in path.parent.glob("*.py")}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 1:
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif node.level == 0 and node.module and node.module.startswith(package + "."):
            found.add(node.module[len(package) + 1 :].split(".")[0])
    return found & siblings


def _cycles(graph):
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == "open":
                found.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


@pytest.mark.parametrize(("folder", "package"), LAYERS)
def test_no_import_cycle_inside_a_layer(folder, package):
    graph = {path.stem: _runtime_imports(path, package) for path in sorted((ROOT / folder).glob("*.py"))}
    assert _cycles(graph) == []


def test_the_cycle_check_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_every_package_folder_is_installed():
    """A plain install ships exactly the packages listed in pyproject.toml: a subpackage missing
    from the list (gdln.commands once was) imports in the repository and fails once installed."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folder_of = setuptools["package-dir"]
    listed = set(setuptools["packages"])
    on_disk = set()
    for top in ("gdln", "gdln.derive", "gdln.numeric", "gdln.verify", "gdln.figures", "gdln.examples"):
        base = ROOT / folder_of[top]
        for init in base.rglob("__init__.py"):
            parts = init.parent.relative_to(base).parts
            on_disk.add(".".join((top, *parts)))
    assert on_disk - listed == set()
    assert listed - on_disk == set()


# --- rooms: private names stay in their module; derive/latex and derive/spec are entered whole ----

#: the folders whose modules must keep private names private (the tests included)
PRIVATE_CHECKED = [*FOLDERS, "bench", "examples", "tests"]
#: the subpackages that the rest of gdln enters through their package only
ENTERED_WHOLE = {"gdln.derive.latex": ROOT / "derive" / "latex", "gdln.derive.spec": ROOT / "derive" / "spec"}


def _absolute(path, node) -> str | None:
    """The absolute module an ``ImportFrom`` names, resolving relative imports by the file's place
    (``derive/latex/writer.py`` is ``gdln.derive.latex.writer``)."""
    if node.level == 0:
        return node.module
    parts = path.relative_to(ROOT).with_suffix("").parts
    top = {"derive": "gdln.derive", "numeric": "gdln.numeric", "verify": "gdln.verify"}
    top |= {"paper_figures": "gdln.figures", "gdln": "gdln", "tests": "tests", "bench": "bench"}
    if parts[0] not in top:
        return None
    package = [top[parts[0]], *parts[1:-1]]
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join([*base, node.module] if node.module else base)


def _private_imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {node.module}"


def test_no_private_name_is_imported_across_modules():
    """A helper two modules use is public, in a module named for what it does: ``from m import
    _helper`` anywhere in the repository is a seam to mend."""
    found = [
        hit
        for folder in PRIVATE_CHECKED
        for path in sorted((ROOT / folder).rglob("*.py"))
        for hit in _private_imports(path)
    ]
    assert found == []


def test_the_private_check_sees_a_private_import(tmp_path):
    module = ROOT / "tests" / "_probe_private.py"
    try:
        module.write_text("from gdln.verify.sweep import _hidden\nfrom .helpers import ROOT\n")
        assert [hit.split(" imports ")[1] for hit in _private_imports(module)] == ["_hidden from gdln.verify.sweep"]
    finally:
        module.unlink()


@pytest.mark.parametrize("package", sorted(ENTERED_WHOLE))
def test_subpackage_exists_and_is_entered_through_its_package(package):
    """``derive/latex/`` and ``derive/spec/`` are rooms of their own: the rest of the library (the
    tests may reach inside to patch a limit) imports their package, never a module inside."""
    folder = ENTERED_WHOLE[package]
    assert (folder / "__init__.py").is_file()
    reached_inside = []
    for library in FOLDERS:
        for path in sorted((ROOT / library).rglob("*.py")):
            if folder in path.parents:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (module := _absolute(path, node)):
                    if module.startswith(package + "."):
                        reached_inside.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {module}")
                elif isinstance(node, ast.Import):
                    reached_inside += [
                        f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}"
                        for a in node.names
                        if a.name.startswith(package + ".")
                    ]
    assert reached_inside == []
