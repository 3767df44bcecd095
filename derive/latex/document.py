"""What one LaTeX document of a derivation keeps across its sections (:mod:`derive.latex`): the
blocks of rows and columns of the data, the data blocks named so far, the document's names of
the state variables, and the polynomials whose roots name algebraic numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy

from .. import implicit
from .matrices import MAX_NAMED_SIDE, Registry, column_blocks, describe, full, math, runs, short_entries
from .width import MAX_LINE, split_sum, width

_ROOT = sympy.Symbol("z")
#: displays of up to this many lines are not broken across pages
KEPT_TOGETHER = 3


def heading(level: str, title: str) -> str:
    return f"\\{level}*{{{title}}}\n"


def _stretched(display: str) -> str:
    """A display whose block matrices and tables get a little more room between rows (the full
    matrices keep their own: their fractions already set the height of a row)."""
    if "\\begin{array}" not in display or not ("\\tfrac" in display or "\\text{class}" in display):
        return display
    return "{\\renewcommand{\\arraystretch}{1.2}\n" + display.rstrip("\n") + "}%\n"


@dataclass
class Layout:
    """Datapoints in blocks by context; inputs and outputs in runs non-zero in the same contexts."""

    rows: list[list[int]]
    inputs: list[list[int]]
    outputs: list[list[int]]

    @staticmethod
    def of(task) -> Layout:
        rows = runs(task.contexts) if task.contexts is not None else [list(range(task.num_datapoints))]
        return Layout(rows, column_blocks(task.inputs, rows), column_blocks(task.targets, rows))


@dataclass
class Document:
    layout: Layout
    numbers: dict[str, int]
    registry: Registry = field(default_factory=Registry)
    names: dict = field(default_factory=dict)
    shown_blocks: int = 0
    roots: list[tuple[sympy.Poly, str]] = field(default_factory=list)
    shown_roots: int = 0
    said: set[str] = field(default_factory=set)
    #: the spec's parameter values: an expression in implicit roots is shown by its value there
    defaults: dict = field(default_factory=dict)
    #: implicit roots' polynomials by name (``derive.implicit``), in order of first use
    implicit: dict[str, sympy.Expr] = field(default_factory=dict)
    shown_implicit: int = 0

    def once(self, key: str, text: str) -> str:
        """``text`` the first time ``key`` is asked for in the document, then nothing."""
        if key in self.said:
            return ""
        self.said.add(key)
        return text

    @staticmethod
    def of(task, pathways) -> Document:
        defaults = {symbol: sympy.nsimplify(value) for symbol, value in task.parameters.items()}
        return Document(Layout.of(task), {p.name: i + 1 for i, p in enumerate(pathways)}, defaults=defaults)

    # --- displays ------------------------------------------------------------------------------------
    @staticmethod
    def display(body: str | Sequence[str]) -> str:
        """One formula (a long sum broken over lines), or several, one per line."""
        if isinstance(body, str):
            if width(body) > MAX_LINE:
                lines = split_sum(body)
                if len(lines) > 1:
                    return "\\begin{multline*}\n" + " \\\\\n".join(lines) + "\n\\end{multline*}\n"
            return _stretched("\\begin{equation*}\n" + body + "\n\\end{equation*}\n")
        if len(body) == 1:
            return Document.display(body[0])
        if len(body) <= KEPT_TOGETHER:  # a few lines stay on one page
            return _stretched(
                "\\begin{equation*}\n\\begin{gathered}\n"
                + " \\\\\n".join(body)
                + "\n\\end{gathered}\n\\end{equation*}\n"
            )
        return _stretched("\\begin{gather*}\n" + " \\\\\n".join(body) + "\n\\end{gather*}\n")

    @staticmethod
    def array(columns: str, header: str, rows: Sequence[str]) -> str:
        """A table in math mode: ``columns`` its alignment (``"cccc"``), ``header`` its first row,
        ruled off from ``rows``."""
        return f"\\begin{{array}}{{{columns}}}\n{header} \\\\ \\hline\n" + " \\\\\n".join(rows) + "\n\\end{array}"

    @staticmethod
    def rows(items: Sequence[str], separator: str = ", \\qquad ") -> list[str]:
        """Formulas side by side, as many on a line as fit."""
        lines: list[str] = []
        for item in items:
            if lines and width(lines[-1]) + width(item) + 4 <= MAX_LINE:
                lines[-1] += separator + item
            else:
                lines.append(item)
        return lines

    @staticmethod
    def equations_by_unit(units: Sequence[Sequence[tuple[str, str]]]) -> str:
        """Groups of ``lhs = rhs`` (one group per pathway): a group on one line where it fits, and
        several groups on a line where they fit; a group too wide, one equation a line."""
        items = []
        for unit in units:
            formulas = [f"{lhs} = {rhs}" for lhs, rhs in unit]
            joined = ", \\quad ".join(formulas)
            items.extend([joined] if width(joined) <= MAX_LINE else formulas)
        if not items:
            return ""
        return Document.display(Document.rows(items))

    @staticmethod
    def equations(pairs: Sequence[tuple[str, str]]) -> str:
        """``lhs = rhs`` lines, aligned; two short ones share a line."""
        if not pairs:
            return ""
        joined = ", \\qquad ".join(f"{lhs} = {rhs}" for lhs, rhs in pairs)
        if len(pairs) == 2 and width(joined) <= MAX_LINE:
            return Document.display(joined)
        return _stretched(
            "\\begin{align*}\n" + " \\\\\n".join(f"{lhs} &= {rhs}" for lhs, rhs in pairs) + "\n\\end{align*}\n"
        )

    def named_blocks(self) -> str:
        """The data blocks named since the last call, each shown once."""
        lines = []
        for symbol, block in self.registry.blocks[self.shown_blocks :]:
            if max(block.shape) <= MAX_NAMED_SIDE and short_entries(block, self.names):
                lines.append(
                    "\\noindent where\n{\\small\n"
                    + self.display(f"{symbol} = {full(block, self.names)}").rstrip("\n")
                    + "}%\n"
                )
            else:
                lines.append("\\noindent where " + describe(symbol, block, names=self.names) + ".\n\n")
        self.shown_blocks = len(self.registry.blocks)
        return "".join(lines)

    # --- values ----------------------------------------------------------------------------------------
    def value(self, expr) -> str:
        """An exact value; an algebraic number with no radical form as a root of a polynomial
        (shown by :meth:`polynomials`), with its numerical value; any other expression in such
        roots by its numerical value."""
        expr = sympy.sympify(expr)
        found = implicit.roots_in(expr)
        if found:
            return self._implicit_value(expr, found)
        if not expr.has(sympy.CRootOf):
            return math(expr, self.names)
        number = f"\\approx {sympy.N(expr, 6)}"
        exact = self.exact(expr)
        return f"{exact} {number}" if exact is not None else number

    def _implicit_value(self, expr, found) -> str:
        """A value in implicit roots: a root, or its square root, by its name (its polynomial shown
        by :meth:`polynomials`); any other expression in them by its value at the spec's
        parameters, as it is too long to read (the JSON gives it exactly)."""
        for root in sorted(found, key=sympy.default_sort_key):
            self.implicit.setdefault(root.name, root.polynomial)
        at = sympy.N(expr.xreplace(self.defaults), 6)
        values = ", ".join(f"{s.name} = {v}" for s, v in self.defaults.items() if s in expr.free_symbols)
        if len(found) == 1:
            (root,) = found
            if expr == root or expr == sympy.sqrt(root):
                return f"{math(expr, self.names)} \\approx {at}"
        return f"\\approx {at} \\text{{ at {values}}}" if values else f"\\approx {at}"

    def exact(self, expr) -> str | None:
        """An exact value, a root of a polynomial as ``z_{j,i}`` or its square root; ``None`` for
        any other expression in roots with no radical form."""
        expr = sympy.sympify(expr)
        roots = expr.atoms(sympy.CRootOf)
        if not roots:
            return math(expr, self.names)
        if len(roots) == 1:
            (root,) = roots
            if expr == root:
                return self._root_symbol(root)
            if sympy.expand(expr**2 - root) == 0:
                return f"\\sqrt{{{self._root_symbol(root)}}}"
        return None

    def _root_symbol(self, root: sympy.CRootOf) -> str:
        poly = sympy.Poly(root.poly.as_expr().xreplace({root.poly.gen: _ROOT}), _ROOT).primitive()[1]
        for j, (known, _) in enumerate(self.roots):
            if known == poly:
                return f"z_{{{j + 1},{root.index + 1}}}"
        self.roots.append((poly, f"P_{{{len(self.roots) + 1}}}"))
        return f"z_{{{len(self.roots)},{root.index + 1}}}"

    def polynomials(self) -> str:
        """The polynomials named since the last call: ``z_{j,i}`` is the ``i``-th smallest real root of
        ``P_j``; ``rho_k(P_h)`` the ``k``-th largest root of ``P_h(z)``, whose coefficients are
        polynomials in the parameters."""
        lines = [self._implicit_polynomials()]
        for j, (poly, symbol) in enumerate(self.roots[self.shown_roots :], start=self.shown_roots + 1):
            terms = []
            for (power,), c in poly.terms():
                magnitude = "" if abs(c) == 1 and power else str(abs(c))
                variable = "" if power == 0 else ("z" if power == 1 else f"z^{{{power}}}")
                sign = "-" if c < 0 else "+"
                terms.append((sign, magnitude + (" " if magnitude and variable else "") + variable))
            lines.append(
                f"\\noindent $z_{{{j},i}}$ is the $i$-th smallest real root of the irreducible polynomial "
                f"${symbol}(z)$ of degree {poly.degree()}:\n" + _multline(symbol, terms, 70)
            )
        self.shown_roots = len(self.roots)
        return "".join(lines)

    def _implicit_polynomials(self) -> str:
        lines = []
        names = list(self.implicit)[self.shown_implicit :]
        for name in names:
            polynomial = self.implicit[name].xreplace({implicit.VARIABLE: _ROOT})
            poly = sympy.Poly(polynomial, _ROOT)
            terms = []  # by descending power of z, each coefficient (a polynomial in the parameters) whole
            for (power,), coefficient in poly.terms():
                z = "" if power == 0 else ("z" if power == 1 else f"z^{{{power}}}")
                if coefficient == 1 and z:
                    terms.append(("+", z))
                    continue
                text = sympy.latex(coefficient)
                text = f"\\left({text}\\right) {z}" if z and isinstance(coefficient, sympy.Add) else f"{text} {z}"
                terms.append(("-", text[1:]) if text.startswith("-") else ("+", text))
            symbol = f"P_{{\\mathrm{{{name[1:]}}}}}"
            lines.append(
                f"\\noindent $\\rho_k({symbol})$ is the $k$-th largest root of ${symbol}(z)$, irreducible over "
                f"the polynomials in the parameters, of degree {poly.degree()} in $z$:\n"
                + "{\\small\n"
                + _multline(symbol, terms, 150)
                + "}\n"
            )
        self.shown_implicit = len(self.implicit)
        return "".join(lines)

    # --- names -----------------------------------------------------------------------------------------
    def name_variables(self, derivation, first: int = 1) -> None:
        """``a_{p,k}`` for the strength of mode ``k`` of pathway ``p``, ``b_i`` for the shared
        trajectories of the group reduction (counted from ``first``), ``(0)`` for their initial values."""
        self.names = {}
        for pathway_derivation in derivation.pathways:
            p = self.numbers[pathway_derivation.name]
            for k, (a, a0) in enumerate(zip(pathway_derivation.strengths, pathway_derivation.initial_strengths)):
                self.names[a] = f"a_{{{p},{k + 1}}}"
                self.names[a0] = f"a_{{{p},{k + 1}}}(0)"
        system = derivation.reduced_system
        if system.kind == "groups":
            for i, (x, x0) in enumerate(zip(system.variables, system.initial)):
                self.names[x] = f"b_{{{first + i}}}"
                self.names[x0] = f"b_{{{first + i}}}(0)"


def _multline(symbol: str, terms: Sequence[tuple[str, str]], limit: int) -> str:
    """``symbol(z) = `` the signed ``terms`` (``("+", text)``), wrapped into rows of about ``limit``
    characters of LaTeX, as a ``multline*``."""
    rows, current = [], ""
    for position, (sign, text) in enumerate(terms):
        lead = ("-" if sign == "-" else "") if position == 0 else f"{sign} "
        if current and len(current) + len(text) > limit:
            rows.append(current)
            current = lead + text
        else:
            current += (" " if current else "") + lead + text
    rows.append(current)
    return "\\begin{multline*}\n" + f"{symbol}(z) = " + " \\\\\n".join(rows) + "\n\\end{multline*}\n"
