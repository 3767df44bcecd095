"""Matrices in structured form for the LaTeX export (:mod:`derive.latex`).

A matrix is written as the simplest of: a scalar multiple of the identity (``\\tfrac{1}{12} I_8``),
of a vector or matrix of ones, a diagonal or ``a I + b 1 1^T``; a block matrix of such blocks and
of blocks of the data named once (``M_1``, shown beside the data), with their multiples,
transposes and row sums; the full matrix when it is small; or, when it is large and none of
these, a description (shape, rank, entries). Rows and columns are split into blocks by the
data: datapoints by context, inputs and outputs by the contexts in which they are non-zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sympy

from ..algebraic import CouplingNumber, as_text
from ..modes import has_parametric_radicals, tidy, vanishes
from ..words import join, plural
from .width import MAX_LINE, width

MAX_FULL_COLUMNS = 8
MAX_FULL_ROWS = 12
#: a named data block is printed in full up to this size (in a smaller font), else described
MAX_NAMED_SIDE = 16
MAX_DIAGONAL = 10
MAX_LISTED_VALUES = 8
MAX_ENTRY_LENGTH = 60
MAX_SIMPLIFIED_OPS = 200


def math(expr, names: dict | None = None) -> str:
    """``sympy.latex`` with the document's symbol names; expressions with ``CRootOf`` numbers keep
    their order (SymPy's default order evaluates them to sort terms: slow on long expressions)."""
    if not isinstance(expr, sympy.Basic):
        expr = sympy.sympify(expr)
    if expr.has(sympy.CRootOf) and not expr.free_symbols:
        # the document names such numbers as roots of printed polynomials where it can
        # (Document.value); elsewhere their value, never SymPy's CRootOf(...)
        return f"{{\\approx}}\\,{sympy.N(expr, 6)}"
    order = "none" if expr.has(sympy.CRootOf) else None
    return sympy.latex(expr, order=order, symbol_names=names or {})


def simplified(expr) -> sympy.Expr:
    """An exact expression in its shortest usual form: a rational function in the parameters
    factored, one with radicals of the parameters simplified (when small)."""
    expr = tidy(sympy.sympify(expr))
    if not expr.free_symbols or expr.has(sympy.CRootOf):
        return expr
    if has_parametric_radicals(expr):
        return sympy.simplify(expr) if sympy.count_ops(expr) <= MAX_SIMPLIFIED_OPS else expr
    return sympy.factor(sympy.cancel(expr))


def same(a, b) -> bool:
    if a == b:
        return True
    if getattr(a, "is_Rational", False) and getattr(b, "is_Rational", False):
        return False
    return vanishes(a - b)


def coefficient(c, names: dict | None = None, fraction: str = "\\tfrac") -> str:
    """``c`` as the factor in front of a matrix or a variable: empty for 1, ``-`` for -1,
    ``\\tfrac{p}{q}`` (or ``fraction``) for a rational, parentheses around a sum."""
    c = sympy.sympify(c)
    if c == 1:
        return ""
    if c == -1:
        return "-"
    if c.is_Rational:
        sign = "-" if c < 0 else ""
        p, q = abs(c.p), c.q
        return f"{sign}{p}" if q == 1 else f"{sign}{fraction}{{{p}}}{{{q}}}"
    text = math(c, names)
    return f"\\left({text}\\right)" if isinstance(c, sympy.Add) else text + "\\,"


def _all_equal(entries: Sequence) -> bool:
    return all(same(e, entries[0]) for e in entries[1:])


def ones(rows: int, cols: int) -> str:
    if rows == 1 and cols == 1:
        return "1"
    if cols == 1:
        return f"\\mathbf{{1}}_{{{rows}}}"
    if rows == 1:
        return f"\\mathbf{{1}}_{{{cols}}}^\\top"
    return f"\\mathbf{{1}}_{{{rows}}}\\mathbf{{1}}_{{{cols}}}^\\top"


def simple(matrix: sympy.MatrixBase, names: dict | None = None) -> str | None:
    """Zero, ``c I_n``, ``c 1 1^T``, ``diag(...)`` or ``a I_n + b 1 1^T``; ``None`` otherwise."""
    rows, cols = matrix.shape
    entries = list(matrix)
    if all(e == 0 for e in entries):
        return "0"
    if _all_equal(entries):
        if rows == cols == 1:
            return math(entries[0], names)
        return coefficient(entries[0], names) + ones(rows, cols)
    if rows != cols or rows == 1:
        return None
    diagonal = [matrix[i, i] for i in range(rows)]
    off = [matrix[i, j] for i in range(rows) for j in range(cols) if i != j]
    if all(e == 0 for e in off):
        if _all_equal(diagonal):
            return coefficient(diagonal[0], names) + f"I_{{{rows}}}"
        if rows <= MAX_DIAGONAL:
            return "\\operatorname{diag}\\left(" + ", ".join(math(e, names) for e in diagonal) + "\\right)"
        return None
    if _all_equal(off) and _all_equal(diagonal):
        first = coefficient(diagonal[0] - off[0], names) + f"I_{{{rows}}}"
        second = coefficient(off[0], names) + ones(rows, cols)
        return first + (" " if second.startswith("-") else " + ") + second
    return None


def full(matrix: sympy.MatrixBase, names: dict | None = None) -> str:
    """The matrix entry by entry, as an ``array`` (no column limit)."""
    rows = [" & ".join(math(e, names) for e in matrix.row(i)) for i in range(matrix.rows)]
    return f"\\left[\\begin{{array}}{{{'c' * matrix.cols}}}" + " \\\\ ".join(rows) + "\\end{array}\\right]"


def short_entries(matrix: sympy.MatrixBase, names: dict | None = None) -> bool:
    return all(len(math(e, names)) <= MAX_ENTRY_LENGTH for e in set(matrix))


@dataclass
class Registry:
    """Blocks of the data named once in a document (``M_1``, ``M_2``, ...); other matrices are
    written with their multiples, transposes and row sums."""

    letter: str = "M"
    blocks: list[tuple[str, sympy.ImmutableMatrix]] = field(default_factory=list)

    def add(self, block: sympy.MatrixBase) -> str:
        symbol = f"{self.letter}_{{{len(self.blocks) + 1}}}"
        self.blocks.append((symbol, sympy.ImmutableMatrix(block)))
        return symbol

    def find(self, block: sympy.MatrixBase, names: dict | None = None) -> str | None:
        for symbol, named in self.blocks:
            for candidate, text in ((named, symbol), (named.T, symbol + "^\\top")):
                if candidate.shape == block.shape:
                    scale = _scale(block, candidate)
                    if scale is not None:
                        return coefficient(scale, names) + text
                # a vector of row sums, repeated in every column: c M 1_k 1_n^T
                if candidate.rows == block.rows and block.cols >= 1:
                    column = block[:, 0]
                    if all(same(block[i, j], column[i]) for i in range(block.rows) for j in range(block.cols)):
                        sums = candidate * sympy.ones(candidate.cols, 1)
                        scale = _scale(column, sums)
                        if scale is not None:
                            tail = "" if block.cols == 1 else f"\\mathbf{{1}}_{{{block.cols}}}^\\top"
                            return coefficient(scale, names) + text + f"\\mathbf{{1}}_{{{candidate.cols}}}" + tail
        return None


def _scale(block: sympy.MatrixBase, reference: sympy.MatrixBase):
    """``c`` with ``block = c * reference``, or ``None``."""
    pivot = next(((i, j) for i in range(reference.rows) for j in range(reference.cols) if reference[i, j] != 0), None)
    if pivot is None:
        return None
    c = block[pivot] / reference[pivot]
    if c == 0:
        return None
    for i in range(block.rows):
        for j in range(block.cols):
            if not same(block[i, j], c * reference[i, j]):
                return None
    return c


def runs(labels: Sequence) -> list[list[int]]:
    """Positions of consecutive equal labels."""
    found: list[list[int]] = []
    for position, label in enumerate(labels):
        if found and labels[found[-1][-1]] == label:
            found[-1].append(position)
        else:
            found.append([position])
    return found


def column_blocks(matrix: sympy.MatrixBase, row_blocks: list[list[int]]) -> list[list[int]]:
    """Runs of columns that are non-zero in the same row blocks."""
    signatures = [
        frozenset(b for b, rows in enumerate(row_blocks) if any(matrix[r, c] != 0 for r in rows))
        for c in range(matrix.cols)
    ]
    return runs(signatures)


def restrict(blocks: list[list[int]], indices: Sequence[int]) -> list[list[int]]:
    """The blocks of a global partition, read on a subset of indices (positions in ``indices``)."""
    owner = {i: b for b, block in enumerate(blocks) for i in block}
    return runs([owner[i] for i in indices])


Cell = Callable[[sympy.MatrixBase], str | None]


def _cells(matrix, row_blocks, col_blocks, cell: Cell) -> list[list[str]] | None:
    texts = []
    for rows in row_blocks:
        line = []
        for cols in col_blocks:
            text = cell(matrix.extract(rows, cols))
            if text is None:
                return None
            line.append(text)
        texts.append(line)
    return texts


def _merged(blocks: list[list[int]], i: int) -> list[list[int]]:
    return blocks[:i] + [blocks[i] + blocks[i + 1]] + blocks[i + 2 :]


def coarsest(matrix, row_blocks, col_blocks, cell: Cell) -> tuple[list[list[int]], list[list[int]]]:
    """Merge neighbouring blocks while every block still has a structured form."""
    changed = True
    while changed:
        changed = False
        for axis in (0, 1):
            blocks = row_blocks if axis == 0 else col_blocks
            for i in range(len(blocks) - 1):
                trial = _merged(blocks, i)
                trial_rows, trial_cols = (trial, col_blocks) if axis == 0 else (row_blocks, trial)
                if _cells(matrix, trial_rows, trial_cols, cell) is not None:
                    row_blocks, col_blocks = trial_rows, trial_cols
                    changed = True
                    break
            if changed:
                break
    return row_blocks, col_blocks


def block_matrix(texts: list[list[str]]) -> str:
    if len(texts) == 1 and len(texts[0]) == 1:
        return texts[0][0]
    body = " \\\\ ".join(" & ".join(line) for line in texts)
    return f"\\left[\\begin{{array}}{{{'c' * len(texts[0])}}}{body}\\end{{array}}\\right]"


def structured(
    matrix: sympy.MatrixBase,
    row_blocks: list[list[int]],
    col_blocks: list[list[int]],
    registry: Registry,
    names: dict | None = None,
    register: bool = False,
) -> str | None:
    """The matrix in its simplest structured form, or ``None`` when only a description will do.
    With ``register``, blocks that are neither simple nor known are named in ``registry``."""
    whole = simple(matrix, names) or registry.find(matrix, names)
    if whole is not None:
        if whole == "0":
            return f"0_{{{matrix.rows} \\times {matrix.cols}}}"
        return whole

    def known(block):
        return simple(block, names) or registry.find(block, names)

    if len(row_blocks) * len(col_blocks) > 1:
        rows, cols = coarsest(matrix, row_blocks, col_blocks, known)
        if len(rows) * len(cols) > 1:

            def cell(block):
                found = known(block)
                if found is None and register:
                    found = registry.add(block)
                return found

            texts = _cells(matrix, rows, cols, cell)
            if texts is not None and width(block_matrix(texts)) <= MAX_LINE:
                return block_matrix(texts)
    if matrix.rows <= MAX_FULL_ROWS and matrix.cols <= MAX_FULL_COLUMNS:
        text = full(matrix.applyfunc(simplified), names)
        if width(text) <= MAX_LINE:
            return text
    return None


def values_text(entries: list, names: dict | None = None, limit: int = MAX_LISTED_VALUES, verb: str = "") -> str:
    """``"each equal to 1"``, ``"taking the values a, b and c"``, or the first few; with ``verb``
    (``"take"``, ``"is"``) a predicate instead: ``"take the values a and b"``, ``"is equal to 1"``."""
    distinct: list = []
    for e in entries:
        if not any(e == other for other in distinct):
            distinct.append(e)
    distinct.sort(key=lambda e: (len(as_text(e)), as_text(e)))
    taking = verb or "taking"
    if len(distinct) == 1:
        return f"{'are all' if verb == 'take' else verb or 'each'} equal to ${math(distinct[0], names)}$"
    shown = []
    # a named exact number (a coupling between algebraic modes) is not a value to show
    for e in [e for e in distinct if not e.has(CouplingNumber)][:limit]:
        if len(as_text(e)) <= 2 * MAX_ENTRY_LENGTH:
            text = math(e, names)
            if len(text) <= MAX_ENTRY_LENGTH:
                shown.append(f"${text}$")
    if len(shown) == len(distinct):
        return f"{taking} the values " + join(shown)
    if not shown:
        return f"{taking} {len(distinct)} distinct values"
    return f"{taking} {len(distinct)} distinct values, among them " + ", ".join(shown)


def describe(
    symbol: str, matrix: sympy.MatrixBase, rank: int | None = None, names: dict | None = None, note: str = ""
) -> str:
    """A sentence on a matrix too large to print: shape, rank, non-zero entries (``note`` on them)."""
    nonzero = [e for e in matrix if e != 0]
    rank_text = f" of rank {rank}" if rank is not None else ""
    if not nonzero:
        return f"${symbol}$ is the ${matrix.rows} \\times {matrix.cols}$ zero matrix"
    return (
        f"${symbol}$ is ${matrix.rows} \\times {matrix.cols}${rank_text}, with "
        f"{plural(len(nonzero), 'non-zero entry', 'non-zero entries')}{note} {values_text(nonzero, names)}"
    )
