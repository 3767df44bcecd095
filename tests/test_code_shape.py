"""The orchestrators stay short enough to read at once (issue 50): no function in ``verify/`` or
``gdln/commands/`` runs to more than :data:`MAX_LINES` lines beside its docstring. Their
complexity (at most 15) is ruff's C901, in the lint step (pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the most lines a function of the orchestrating layers may have, its docstring left out
MAX_LINES = 60
FOLDERS = ("verify", "gdln/commands")


def _body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` to the function's end, less its docstring's."""
    lines = (function.end_lineno or function.lineno) - function.lineno + 1
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def _functions(folder: str):
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", _body_lines(node)


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_orchestrating_function_is_longer_than_a_screen(folder):
    long = {name: lines for name, lines in _functions(folder) if lines > MAX_LINES}
    assert not long, f"functions over {MAX_LINES} lines beside their docstrings: {long}"


def test_the_line_count_leaves_out_the_docstring_only():
    tree = ast.parse('def f(a):\n    """One.\n\n    Two."""\n    x = a\n    return x\n')
    assert _body_lines(tree.body[0]) == 3  # def, x =, return
