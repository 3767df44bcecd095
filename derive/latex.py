"""LaTeX export of a derivation, in the notation of THEORY.md and the paper.

``derivation_latex(d)`` is the body, to ``\\input`` into an article with ``amsmath``;
``derivation_latex(d, document=True)`` wraps it into a document that plain ``pdflatex``
compiles (amsmath and amssymb only). Data and effective correlations wider than
``MAX_INLINE_COLUMNS`` are described by shape, rank and blocks instead of printed; the
dynamics are one equation per singular class (or per shared trajectory of a symmetric group),
and the coupling is written as a matrix, or as its non-zero entries when it is large.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import sympy

from .algebraic import as_text

if TYPE_CHECKING:  # annotations only: derivation.py imports this module for its LaTeX display
    from .crossover import Crossover
    from .derivation import NetworkDerivation

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "{": r"\{",
    "}": r"\}",
    "~": r"\~{}",
    "^": r"\^{}",
}
MAX_INLINE_COLUMNS = 8
MAX_INLINE_ROWS = 12
MAX_LISTED_COUPLINGS = 40
MAX_INLINE_EXPRESSION = 400


def escape_text(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _math(expr) -> str:
    # SymPy's default term order evaluates CRootOf numbers to sort terms: slow on long expressions
    return (
        sympy.latex(expr, order="none")
        if isinstance(expr, sympy.Basic) and expr.has(sympy.CRootOf)
        else sympy.latex(expr)
    )


def _display(body: str) -> str:
    return "\\begin{equation*}\n" + body + "\n\\end{equation*}\n"


def _split(body: str) -> str:
    """A long equation broken over lines (``multline*``) at its top-level sums."""
    return "\\begin{multline*}\n" + body + "\n\\end{multline*}\n"


def _value(expr: sympy.Expr, kind: str = "", degree: int = 1) -> str:
    """An exact value, or for a ``CRootOf`` its number and degree."""
    if kind == "algebraic" or expr.has(sympy.CRootOf):
        return f"{sympy.N(expr, 10)}\\ \\text{{(algebraic, degree {degree})}}"
    return _math(expr)


def _matrix_or_description(name: str, matrix: sympy.Matrix, rank: int | None = None) -> str:
    rows, cols = matrix.shape
    if cols <= MAX_INLINE_COLUMNS and rows <= MAX_INLINE_ROWS:
        return _display(f"{name} = {_math(matrix)}")
    nonzero = sum(1 for e in matrix if e != 0)
    entries = sorted({e for e in matrix if e != 0}, key=as_text)
    listed = ", ".join(f"${_math(e)}$" for e in entries[:8]) + (", \\dots" if len(entries) > 8 else "")
    rank_text = f", rank {rank}" if rank is not None else ""
    return f"${name}$ is ${rows} \\times {cols}${rank_text}, with {nonzero} non-zero entries taking the values {listed}.\n\n"


def _data(task) -> str:
    lines = ["\\subsection*{Data}\n", f"$N = {task.num_datapoints}$ datapoints; rows of $X$ and $Y$ are datapoints.\n"]
    if (
        task.inputs.cols <= MAX_INLINE_COLUMNS
        and task.num_datapoints <= MAX_INLINE_ROWS
        and task.targets.cols <= MAX_INLINE_COLUMNS
    ):
        lines.append(_display(f"X = {_math(task.inputs)}, \\qquad Y = {_math(task.targets)}"))
    else:
        lines.append(_matrix_or_description("X", task.inputs))
        lines.append(_matrix_or_description("Y", task.targets))
        if task.contexts is not None:
            contexts = sorted(set(task.contexts))
            lines.append(f"Datapoints fall in {len(contexts)} contexts ({escape_text(str(contexts))}).\n\n")
    lines.append(
        "Loss $L = \\tfrac12 \\langle \\lVert y - \\hat y\\rVert^2 \\rangle$, "
        "$\\tau = 1/\\eta$ (so $t$ counts epochs).\n"
    )
    return "".join(lines)


def _gate(task, active) -> str:
    if len(active) == task.num_datapoints:
        return "all datapoints"
    if task.contexts is not None:
        chosen = sorted({task.contexts[n] for n in active})
        if sorted(active) == [n for n, c in enumerate(task.contexts) if c in chosen]:
            return ("context " if len(chosen) == 1 else "contexts ") + ", ".join(str(c) for c in chosen)
    return "datapoints " + ", ".join(str(n) for n in active)


def _pathways(derivation: NetworkDerivation) -> str:
    task = derivation.task
    lines = ["\\subsection*{Pathways and their modes}\n"]
    for p, pathway_derivation in enumerate(derivation.pathways):
        pathway = pathway_derivation.pathway
        lines.append(
            f"\\paragraph{{{escape_text(pathway_derivation.name)}}} On {escape_text(_gate(task, pathway.active))}; "
            f"{len(pathway.inputs)} inputs, {len(pathway.outputs)} outputs, depth $D = {pathway.depth}$.\n"
        )
        lines.append(
            _matrix_or_description(
                f"\\Sigma^{{yx}}(\\text{{{escape_text(pathway_derivation.name)}}})",
                pathway_derivation.sigma_yx,
                len(pathway_derivation.modes),
            )
        )
        lines.append(
            _matrix_or_description(
                f"\\Sigma^{{x}}(\\text{{{escape_text(pathway_derivation.name)}}})", pathway_derivation.sigma_x
            )
        )
        classes = derivation.symmetry.classes[p]
        if classes:
            lines.append("\\begin{align*}\n")
            rows = []
            for c in classes:
                mode = pathway_derivation.modes[c.modes[0]]
                rows.append(
                    f"s &= {_value(c.s, mode.kind, mode.degree)} \\ (\\times {c.multiplicity}), & d &= {_value(c.input_variance, mode.kind, mode.degree)}"
                )
            lines.append(" \\\\\n".join(rows) + "\n\\end{align*}\n")
    return "".join(lines)


def _equation(lhs: str, rhs: sympy.Expr) -> str:
    text = _math(rhs)
    body = f"{lhs} = {text}"
    return _split(body) if len(text) > MAX_INLINE_EXPRESSION else _display(body)


def _system(derivation: NetworkDerivation) -> str:
    system = derivation.reduced_system
    lines = ["\\subsection*{Dynamics}\n"]
    if system.kind == "groups":
        lines.append(
            "The group reduction is exact: every symmetric group of pathways shares one trajectory "
            "$b$ per singular class (the modes it stands for start alike), with "
            "$\\tau \\dot b_i = D\\, b_i^{2-2/D} \\bigl(s_i - \\sum_j C_{ij} b_j\\bigr)$.\n"
        )
    else:
        lines.append(
            "The race reduction in mode strengths $a$: "
            "$\\tau \\dot a_k = D\\, a_k^{2-2/D} \\bigl(s_k - \\sum_l C_{kl} a_l\\bigr)$, "
            "with $C_{kk} = d_k$.\n"
        )
    if system.kind == "groups" or len(system.variables) <= MAX_INLINE_COLUMNS:
        for i, x in enumerate(system.variables):
            lines.append(
                f"\\noindent ${_math(x)}$: {escape_text(system.labels[i])} ({system.multiplicities[i]} modes).\n"
            )
            lines.append(_equation(f"\\frac{{d {_math(x)}}}{{dt}}", system.rates[i]))
            if system.closed_forms is not None:
                lines.append(_equation(f"{_math(x)}(t)", system.closed_forms[i]))
    else:
        lines.append(
            f"There are {len(system.variables)} modes; the singular values and $d$ of each class are listed above.\n\n"
        )
    couplings = system.nonzero_couplings
    if couplings:
        if system.coupling.rows <= MAX_INLINE_COLUMNS:
            lines.append(_display(f"C = {_math(system.coupling)}"))
        else:
            lines.append(
                f"$C$ is ${system.coupling.rows} \\times {system.coupling.cols}$ with {len(couplings)} non-zero off-diagonal entries"
            )
            if len(couplings) <= MAX_LISTED_COUPLINGS:
                listed = ",\\ ".join(f"C_{{{i}{j}}} = {_math(c)}" for i, j, c in couplings)
                lines.append(f":\n\\begin{{multline*}}\n{listed}\n\\end{{multline*}}\n")
            else:
                values = sorted({c for _, _, c in couplings}, key=sympy.default_sort_key)
                shown = ", ".join(f"${_math(v)}$" for v in values[:10]) + (", \\dots" if len(values) > 10 else "")
                lines.append(f", taking the values {shown} (\\texttt{{gdln derive --json}} lists them).\n\n")
    else:
        lines.append("No variable is coupled to another: $C$ is diagonal.\n\n")
    return "".join(lines)


def derivation_latex(
    derivation: NetworkDerivation, crossovers: Sequence[Crossover] = (), document: bool = False
) -> str:
    task = derivation.task
    lines = [f"% gdln derivation of network {derivation.network.name}\n"]
    lines.append(f"\\section*{{{escape_text(task.title)}: network {escape_text(derivation.network.name)}}}\n")
    lines.append(_data(task))
    lines.append(_pathways(derivation))
    lines.append(_system(derivation))
    lines.append("\\subsection*{Assumptions}\n")
    assumptions = derivation.assumptions
    lines.append(
        f"Mutually diagonalisable (Assumption 2.1.1): {'yes' if assumptions['mutually_diagonalisable'] else 'no'}. "
        f"Pathways interact: {'yes' if assumptions['pathways_interact'] else 'no'}. "
        f"Closed form: {'yes' if assumptions['closed_form'] else 'no'}.\n\n"
    )
    failures = assumptions["failures"] + assumptions["shared_basis_failures"]
    for failure in failures[:4]:
        lines.append(escape_text(failure) + "\n\n")
    if len(failures) > 4:
        lines.append(f"\\dots and {len(failures) - 4} more.\n\n")
    for value in assumptions["algebraic_values"]:
        lines.append(
            f"Pathway {escape_text(value['pathway'])}: {value['modes']} singular values have no radical form "
            f"($s^2$ is a root of an irreducible polynomial of degree {value['degree']}).\n\n"
        )
    if assumptions["named_couplings"]:
        lines.append(
            f"{len(derivation.coupling_numbers)} couplings between modes of such values are exact numbers named "
            "$c_{k,l} = (u_k^\\top E_p^\\top E_q u_l)(v_l^\\top \\Sigma_x(q,p)\\, v_k) / (n_k s_k n_l s_l)$ "
            "by the modes' exact vectors (\\texttt{gdln derive --json} lists them), not expanded: "
            "in the roots they have up to $\\deg r_k \\deg r_l$ terms with rationals of hundreds of digits.\n\n"
        )
    lines.append("\\subsection*{Loss}\n")
    system = derivation.reduced_system
    lines.append(
        _equation("L", system.loss)
        if len(system.variables) <= 3 * MAX_INLINE_COLUMNS
        else "$L(x) = \\tfrac12 \\operatorname{tr}\\langle yy^\\top\\rangle - \\sum_i m_i s_i x_i + \\tfrac12 \\sum_{ij} m_i C_{ij} x_i x_j$, "
        f"with $\\tfrac12 \\operatorname{{tr}}\\langle yy^\\top\\rangle = {_math(derivation.initial_loss)}$.\n\n"
    )
    lines.append(_display(f"\\text{{speed}} = {_value(derivation.speed)}"))
    if crossovers:
        lines.append("\\subsection*{Crossovers}\n")
        for c in crossovers:
            first, second = (escape_text(n) for n in c.networks)
            lines.append(f"Networks {first} and {second} learn equally fast at\n")
            approx = f" \\approx {sympy.N(c.expr, 6)}" if not c.expr.free_symbols else ""
            lines.append(_display(f"{_math(c.parameter)}^{{*}} = {_math(c.expr)}{approx}"))
            if c.faster_below:
                lines.append(
                    f"Below it {escape_text(c.faster_below)} is faster; above it {escape_text(c.faster_above or '')}.\n"
                )
    body = "".join(lines)
    if not document:
        return body
    return (
        "\\documentclass[10pt]{article}\n\\usepackage{amsmath,amssymb}\n"
        "\\setlength{\\textwidth}{16cm}\\setlength{\\oddsidemargin}{0cm}\\setlength{\\textheight}{23cm}\\setlength{\\topmargin}{-1cm}\n"
        "\\allowdisplaybreaks\n\\begin{document}\n" + body + "\\end{document}\n"
    )
