"""The reduced system, closed forms, loss, speed and crossovers of a derivation in LaTeX
(:mod:`derive.latex`): the equations written out, one per symmetric group and class where the
group reduction is exact, otherwise one vector equation per pathway with the coupling matrix
``C`` in block form."""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from .. import formulas, implicit
from ..algebraic import CouplingNumber, as_text
from ..exported_flow import flow_blocks, flow_pathways, integrates_reduced_flow
from ..modes import tidy
from ..symbols import TAU, TIME
from ..words import join, plural
from .document import Document, heading
from .matrices import (
    MAX_ENTRY_LENGTH,
    block_matrix,
    coefficient,
    describe,
    math,
    simple,
    simplified,
    values_text,
)
from .text import escape_text, name
from .width import MAX_LINE, width

#: symbols of coupling terms on one line of an equation before it breaks
TERMS_PER_LINE = 6
MAX_LISTED_ENTRIES = 24
MAX_WRITTEN_LOSS = 6


def _growth(variable: str, depth: int) -> str:
    if depth == 2:
        return f"2\\, {variable}"
    return f"{depth}\\, {variable}^{{{math(formulas.depth_exponent(depth, sympy))}}}"


def _minus(c, term: str, names: dict, fraction: str = "\\tfrac") -> str:
    text = coefficient(c, names, fraction)
    return f" + {text[1:].lstrip()}{term}" if text.startswith("-") else f" - {text}{term}"


def _equation(lhs: str, growth: str, drive: str, terms: list[str], product: str = "") -> str:
    """``lhs &= growth (drive - terms)``, broken after every few terms."""
    lines, current = [], f"{lhs} &= {growth}{product}\\Bigl({drive}"
    for position, term in enumerate(terms):
        if position and position % TERMS_PER_LINE == 0:
            lines.append(current)
            current = "&\\qquad"
        current += term
    lines.append(current + "\\Bigr)")
    return " \\\\\n".join(lines)


# --- the reduced system -------------------------------------------------------------------------------
def reduced_system(doc: Document, derivation, level: str) -> str:
    lines = [heading(level, "Reduced dynamics")]
    if integrates_reduced_flow(derivation):
        lines.append(_flow(doc, derivation))
        return "".join(lines)
    lines.append(
        doc.once(
            "race",
            "Each mode strength $a_{p,k}$, the product of its balanced layer strengths, follows the race reduction "
            "(THEORY Eq.~6) with the coupling $C$ ($E_p$ places the outputs of pathway $p$ among all outputs; "
            "$C_{(p,k),(p,k)} = d_{p,k}$):\n"
            + Document.display(
                Document.rows(
                    [
                        "\\tau \\dot a_{p,k} = D\\, a_{p,k}^{2-2/D} \\Bigl(s_{p,k} - \\sum_{q,l} C_{(p,k),(q,l)}\\, a_{q,l}\\Bigr)",
                        "C_{(p,k),(q,l)} = (u_{p,k}^\\top E_p^\\top E_q u_{q,l})(v_{q,l}^\\top \\Sigma^x(q,p)\\, v_{p,k})",
                    ]
                )
            ),
        )
    )
    system = derivation.reduced_system
    lines.append(_groups(doc, derivation) if system.kind == "groups" else _modes(doc, derivation))
    return "".join(lines)


def _chain(p: int, first: int, last: int) -> str:
    """The product ``W_{p,last} ... W_{p,first}`` in LaTeX (``first <= last``)."""
    if first == last:
        return f"W_{{{p},{first}}}"
    if last == first + 1:
        return f"W_{{{p},{last}}} W_{{{p},{first}}}"
    return f"W_{{{p},{last}}} \\cdots W_{{{p},{first}}}"


def _transposed(p: int, first: int, last: int) -> str:
    """The transpose of :func:`_chain`, in parentheses where it is a product."""
    return f"{_chain(p, first, last)}^\\top" if first == last else f"({_chain(p, first, last)})^\\top"


def _flow(doc: Document, derivation) -> str:
    """The reduced flow (:mod:`derive.exported_flow`), where the mode strengths do not reduce
    exactly: the system ``gdln race`` integrates, with its coupling blocks by name."""
    pathways = flow_pathways(derivation)
    numbers = [doc.numbers[p.name] for p in pathways]
    count = len(pathways)
    outputs = derivation.task.num_outputs
    every = [list(p.outputs) == list(range(outputs)) for p in pathways]
    lines = [
        "The mode strengths do not reduce exactly here ("
        + (
            "Assumption 2.1.1 fails"
            if derivation.diagonalisation_failures
            else "the pathways interact and have no closed form: their modes need not keep a shared basis"
        )
        + "), so the system is the reduced flow: the exact gradient flow (THEORY Eq.~3) on each pathway's "
        "chain of weights $W_{p,1}, \\dots, W_{p,D_p}$, written with the effective correlations above. It is the "
        "system \\texttt{gdln race} integrates. With $W_p = W_{p,D_p} \\cdots W_{p,1}$ and $E_p$ the matrix that "
        f"places the outputs of pathway $p$ among all {outputs} outputs ($E_p^\\top E_q = I$ where both write every "
        "output):\n"
        + Document.display(
            [
                "\\tau \\dot W_{p,e} = \\bigl(W_{p,D_p} \\cdots W_{p,e+1}\\bigr)^\\top G_p "
                "\\bigl(W_{p,e-1} \\cdots W_{p,1}\\bigr)^\\top, \\quad e = 1, \\dots, D_p",
                "G_p = \\Sigma^{yx}(p) - \\sum_q E_p^\\top E_q\\, W_q\\, \\Sigma^x(q, p)",
            ]
        )
    ]
    blocks = flow_blocks(derivation)
    gradients, rates = [], []
    for position, pathway in enumerate(pathways):
        p = numbers[position]
        terms = []
        for block in blocks:
            if block.column != position:
                continue
            q = numbers[block.row]
            overlap = "" if every[block.row] and every[position] else f"E_{{{p}}}^\\top E_{{{q}}} "
            sigma = f"\\Sigma^x({p})" if block.row == position else f"\\Sigma^x({q}, {p})"
            terms.append(f" - {overlap}W_{{{q}}} {sigma}")
        gradients.append(f"G_{{{p}}} &= \\Sigma^{{yx}}({p})" + "".join(terms))
        depth = pathway.depth
        for e in range(1, depth + 1):
            after = f"{_transposed(p, e + 1, depth)} " if e < depth else ""
            before = f" {_transposed(p, 1, e - 1)}" if e > 1 else ""
            rates.append(f"\\tau \\dot W_{{{p},{e}}} = {after}G_{{{p}}}{before}")
    lines.append(
        f"Written out {'pathway by pathway' if count > 1 else 'for the one pathway'}, with the coupling blocks $\\Sigma^x(p)$ and "
        "$\\Sigma^x(q, p) = \\Sigma^x(p, q)^\\top$ of the effective correlations above (pairs not listed "
        "share no datapoint or output, and add nothing):\n"
        + "\\begin{align*}\n"
        + " \\\\\n".join(gradients)
        + "\n\\end{align*}\n"
        + Document.display(Document.rows(rates))
    )
    shapes = []
    for position, pathway in enumerate(pathways):
        p = numbers[position]
        shapes.append(
            ", ".join(
                f"$W_{{{p},{e + 1}}}$ (${rows} \\times {cols}$)"
                for e, (rows, cols) in enumerate(pathway.layer_shapes())
            )
        )
    lines.append(
        "Each chain has one hidden unit per mode of its pathway: "
        + join(shapes)
        + ". Each starts balanced on its pathway's modes, the state silent alignment leaves: with "
        "$U_p = [u_{p,1}, u_{p,2}, \\dots]$ and $V_p = [v_{p,1}, v_{p,2}, \\dots]$ the singular vectors of "
        "$\\Sigma^{yx}(p)$ and $r_p = a_p(0)^{1/D_p}$,\n"
        + Document.display(
            "W_{p,1}(0) = r_p V_p^\\top, \\quad W_{p,e}(0) = r_p I \\;(1 < e < D_p), \\quad "
            "W_{p,D_p}(0) = r_p U_p, \\quad \\text{so } W_p(0) = a_p(0)\\, U_p V_p^\\top"
        )
        + "where \\texttt{gdln race} takes $a_p(0) = H_p \\sigma^2 / 2$ for a pathway of $H_p$ units at initial "
        "scale $\\sigma$.\n\n"
    )
    return "".join(lines)


def _groups(doc: Document, derivation) -> str:
    system, reduction = derivation.reduced_system, derivation.group_reduction
    names = doc.names
    rows = []
    for i, (g, j) in enumerate(reduction.variables):
        members = [doc.numbers[derivation.pathways[p].name] for p in reduction.groups[g]]
        rows.append(
            f"{names[system.variables[i]]} & \\text{{{join([str(m) for m in members])}}} & {j + 1} & "
            f"{doc.value(system.singular_values[i])} & {system.multiplicities[i]}"
        )
    shared = any(len(g) > 1 for g in reduction.groups)
    lead = (
        "The modes of one class in the pathways of one symmetric group share a trajectory, "
        if shared
        else "The modes of one class share a trajectory, "
    )
    lines = [
        lead
        + "$a_{p,k} = b_i$ for $m_i$ modes; $C_{ij}$ sums the couplings of a mode of $i$ to the modes of $j$"
        + ("" if system.nonzero_couplings else " (here $C$ is diagonal: no trajectory drives another)")
        + f". {plural(len(rows), 'equation').capitalize()}, one per group and class:\n",
        Document.display(Document.array("ccccc", " & \\text{pathways} & \\text{class} & s_i & m_i", rows)),
    ]
    equations = []
    coupling = system.coupling
    symbolic = False  # an entry in roots with no radical form: the equation names it C_{ij}
    for i, x in enumerate(system.variables):
        terms = []
        for j, y in enumerate(system.variables):
            if coupling[i, j] == 0:
                continue
            if coupling[i, j].has(sympy.CRootOf):
                symbolic = True
                terms.append(f" - C_{{{i + 1},{j + 1}}}\\,{names[y]}")
            else:
                terms.append(_minus(coupling[i, j], names[y], names, "\\frac"))
        drive = doc.exact(system.singular_values[i]) or f"s_{{{i + 1}}}"
        equations.append(_equation(f"\\tau \\dot {names[x]}", _growth(names[x], system.depths[i]), drive, terms))
    lines.append("\\begin{align*}\n" + " \\\\\n".join(equations) + "\n\\end{align*}\n")
    if symbolic:
        values = [
            f"C_{{{i + 1},{j + 1}}} {doc.value(coupling[i, j])}"
            for i in range(coupling.rows)
            for j in range(coupling.cols)
            if coupling[i, j].has(sympy.CRootOf)
        ]
        lines.append(
            "with the couplings in roots of the polynomials below:\n" + Document.display(Document.rows(values))
        )
    if system.nonzero_couplings:
        lines.append(_coupling_values(system.coupling, names))
    return "".join(lines)


def _offsets(derivation) -> list[int]:
    offsets = [0]
    for pathway_derivation in derivation.pathways:
        offsets.append(offsets[-1] + len(pathway_derivation.modes))
    return offsets


def _modes(doc: Document, derivation) -> str:
    coupling = derivation.coupling
    names = doc.names
    offsets = _offsets(derivation)
    count = len(derivation.pathways)
    numbers = [doc.numbers[pd.name] for pd in derivation.pathways]

    def block(p: int, q: int):
        return coupling[offsets[p] : offsets[p + 1], offsets[q] : offsets[q + 1]]

    symmetric = all(coupling[k, l] == coupling[l, k] for k in range(coupling.rows) for l in range(k))
    texts: list[list[str]] = []
    named: list[tuple[int, int]] = []
    scalars: dict[tuple[int, int], sympy.Expr] = {}
    for p in range(count):
        line = []
        for q in range(count):
            b = block(p, q)
            found = simple(b, names) if b.rows * b.cols else "0"
            if p == q and found is not None and found.startswith("\\operatorname{diag}") or (p == q and found is None):
                found = f"\\operatorname{{diag}}(\\mathbf{{d}}_{{{numbers[p]}}})"
            if found is not None and found.endswith(f"I_{{{b.rows}}}"):
                scalars[(p, q)] = b[0, 0]
            if found is None:
                if symmetric and q < p:
                    found = f"C^{{({numbers[q]},{numbers[p]})\\top}}"
                else:
                    found = f"C^{{({numbers[p]},{numbers[q]})}}"
                    named.append((p, q))
            line.append(found)
        texts.append(line)
    lines = [
        ("As Assumption 2.1.1 fails" if derivation.diagonalisation_failures else "As the group reduction does not hold")
        + ", the system keeps one equation per mode: "
        f"{plural(coupling.rows, 'equation')} in all. Per pathway, with "
        "$\\mathbf{a}_p = (a_{p,1}, a_{p,2}, \\dots)^\\top$, the vectors $\\mathbf{s}_p$ and $\\mathbf{d}_p$ of its "
        "$s_{p,k}$ and $d_{p,k}$ (the tables above), $\\circ$ the entrywise product and $C^{(p,q)}$ the block of "
        "$C$ from the modes of pathway $q$ to those of $p$:\n"
    ]
    equations = []
    for p in range(count):
        depth = derivation.pathways[p].pathway.depth
        vector = f"\\mathbf{{a}}_{{{numbers[p]}}}"
        # own pathway first, then the others in order; equal multiples of the identity share a term
        order = [p] + [q for q in range(count) if q != p]
        grouped: dict[sympy.Expr, list[int]] = {}
        for q in order:
            if (p, q) in scalars:
                grouped.setdefault(scalars[(p, q)], []).append(q)
        terms: list[str] = []
        for q in order:
            b = block(p, q)
            if all(e == 0 for e in b):
                continue
            if (p, q) in scalars:
                qs = grouped[scalars[(p, q)]]
                if qs[0] == q:
                    targets = " + ".join(f"\\mathbf{{a}}_{{{numbers[r]}}}" for r in qs)
                    terms.append(_minus(scalars[(p, q)], targets if len(qs) == 1 else f"({targets})", names))
            elif p == q:
                terms.append(f" - \\mathbf{{d}}_{{{numbers[p]}}} \\circ {vector}")
            else:
                terms.append(f" - {texts[p][q]} \\mathbf{{a}}_{{{numbers[q]}}}")
        growth = (
            "2\\, " + vector if depth == 2 else f"{depth}\\, {vector}^{{{math(formulas.depth_exponent(depth, sympy))}}}"
        )
        equations.append(
            _equation(
                f"\\tau \\dot{{\\mathbf{{a}}}}_{{{numbers[p]}}}",
                growth,
                f"\\mathbf{{s}}_{{{numbers[p]}}}",
                terms,
                " \\circ ",
            )
        )
    lines.append("\\begin{align*}\n" + " \\\\\n".join(equations) + "\n\\end{align*}\n")
    lines.append(
        ("In blocks ($C$ is symmetric):\n" if symmetric else "In blocks:\n")
        + Document.display(f"C = {block_matrix(texts)}")
    )
    if named:
        lines.append("Entry $(k, l)$ of $C^{(p,q)}$ couples mode $k$ of pathway $p$ to mode $l$ of pathway $q$.\n")
    for p, q in named:
        lines.append(_pattern(f"C^{{({numbers[p]},{numbers[q]})}}", block(p, q), names) + ".\n\n")
    lines.append(_coupling_values(coupling, names))
    return "".join(lines)


def _short(value, names: dict) -> str | None:
    if value.has(CouplingNumber) or len(as_text(value)) > 2 * MAX_ENTRY_LENGTH:
        return None
    text = math(value, names)
    return text if len(text) <= MAX_ENTRY_LENGTH else None


def _pattern(symbol: str, matrix, names: dict) -> str:
    """The non-zero entries of a block of ``C`` by value, or a description."""
    nonzero = [(k, l, matrix[k, l]) for k in range(matrix.rows) for l in range(matrix.cols) if matrix[k, l] != 0]
    by_value: dict = {}
    for k, l, value in nonzero:
        by_value.setdefault(value, []).append((k, l))
    shown = {value: _short(value, names) for value in by_value} if len(nonzero) <= MAX_LISTED_ENTRIES else {}
    if not nonzero or len(nonzero) > MAX_LISTED_ENTRIES or any(t is None for t in shown.values()):
        named = sum(1 for _, _, value in nonzero if value.has(CouplingNumber))
        note = (
            ""
            if not named
            else f" ({named} of them named exact numbers)"
            if named < len(nonzero)
            else " (named exact numbers)"
        )
        return describe(symbol, matrix, names=names, note=note)
    parts = [
        f"${shown[value]}$ at " + join([f"$({k + 1},{l + 1})$" for k, l in places])
        for value, places in by_value.items()
    ]
    return (
        f"${symbol}$ (${matrix.rows} \\times {matrix.cols}$) has "
        f"{plural(len(nonzero), 'non-zero entry', 'non-zero entries')}: " + "; ".join(parts)
    )


def _coupling_values(coupling, names: dict) -> str:
    off = [coupling[i, j] for i in range(coupling.rows) for j in range(coupling.cols) if i != j and coupling[i, j] != 0]
    if not off:
        return ""
    return (
        f"The {plural(len(off), 'non-zero off-diagonal entry', 'non-zero off-diagonal entries')} of $C$ "
        f"{values_text(off, names, verb='is' if len(off) == 1 else 'take')}.\n\n"
    )


# --- closed forms -------------------------------------------------------------------------------------
def closed_forms(doc: Document, derivation, level: str) -> str:
    system = derivation.reduced_system
    lines = [heading(level, "Closed forms")]
    if system.closed_forms is None:
        lines.append(
            "None: the system above is integrated numerically (\\texttt{gdln race}, \\texttt{gdln verify}).\n\n"
        )
        return "".join(lines)
    names = doc.names
    lines.append(
        "Each $\\tau \\dot x = 2 x (s - d x)$ is a logistic (THEORY Eq.~7), from $x(0)$ to $x^* = s/d$ on the time "
        "scale $\\tau/s$, half-way at $t = \\tfrac{\\tau}{2s} \\ln\\bigl(\\tfrac{x^*}{x(0)} - 1\\bigr)$:\n"
    )
    equations = []
    for i, (x, x0) in enumerate(zip(system.variables, system.initial)):
        s, d = system.singular_values[i], system.coupling[i, i]
        fixed = tidy(s / d)
        if fixed.free_symbols:
            fixed = sympy.simplify(fixed)
        star = f"{names[x]}^{{*}}"
        rate = f"-2 s_{{{i + 1}}} t/\\tau" if s.has(sympy.CRootOf) else math(-2 * s * TIME / TAU, names)
        equations.append(
            f"{names[x]}(t) &= \\frac{{{star}}}{{1 + \\left(\\frac{{{star}}}{{{names[x0]}}} - 1\\right) "
            f"\\exp\\Bigl({rate}\\Bigr)}}, & {star} &= {doc.value(fixed)}"
        )
    lines.append("\\begin{align*}\n" + " \\\\\n".join(equations) + "\n\\end{align*}\n")
    return "".join(lines)


def polynomial(expr, variables: Sequence[sympy.Symbol], names: dict) -> str:
    """A polynomial in the state variables, constant first, then by variable and degree, with each
    coefficient :func:`simplified`."""
    poly = sympy.Poly(sympy.expand(expr), *variables)
    terms = sorted(
        poly.terms(),
        key=lambda term: (sum(term[0]) > 0, next((i for i, e in enumerate(term[0]) if e), 0), sum(term[0]), term[0]),
    )
    text = ""
    for powers, c in terms:
        monomial = " ".join(math(v, names) + ("" if e == 1 else f"^{{{e}}}") for v, e in zip(variables, powers) if e)
        piece = coefficient(simplified(c), names, "\\frac") + monomial if monomial else math(simplified(c), names)
        if not text:
            text = piece
        elif piece.startswith("-"):
            text += " - " + piece[1:].lstrip()
        else:
            text += " + " + piece
    return text or "0"


# --- loss ----------------------------------------------------------------------------------------------
def loss(doc: Document, derivation, level: str) -> str:
    system = derivation.reduced_system
    names = doc.names
    lines = [heading(level, "Loss")]
    initial = math(simplified(derivation.initial_loss), names)
    if integrates_reduced_flow(derivation):
        lines.append(
            "Along the flow, $L = L_0 - \\sum_p \\operatorname{tr}\\bigl(W_p^\\top \\Sigma^{yx}(p)\\bigr) + \\tfrac12 "
            "\\sum_{p,q} \\operatorname{tr}\\bigl(W_p^\\top E_p^\\top E_q\\, W_q\\, \\Sigma^x(q, p)\\bigr)$, where "
            f"$L_0 = \\tfrac12 \\operatorname{{tr}} \\langle y y^\\top \\rangle = {initial}$ is the loss at zero weights.\n\n"
        )
        return "".join(lines)
    if system.kind == "groups":
        lines.append(
            "With aligned weights, $L(b) = L_0 - \\sum_i m_i s_i b_i + \\tfrac12 \\sum_{i,j} m_i C_{ij}\\, b_i b_j$, "
            f"where $L_0 = \\tfrac12 \\operatorname{{tr}} \\langle y y^\\top \\rangle = {initial}$ at zero weights"
        )
    else:
        lines.append(
            "With aligned weights, $L(a) = L_0 - \\sum_p \\mathbf{s}_p^\\top \\mathbf{a}_p + \\tfrac12 \\sum_{p,q} "
            "\\mathbf{a}_p^\\top C^{(p,q)} \\mathbf{a}_q$, "
            f"where $L_0 = \\tfrac12 \\operatorname{{tr}} \\langle y y^\\top \\rangle = {initial}$ is the loss at zero weights"
        )
    shown = []
    # a loss in algebraic or implicit roots is shown by its final value alone: its coefficients
    # have no readable closed form, and expanding it as a polynomial over them takes minutes
    written = not system.loss.has(sympy.CRootOf) and not implicit.has_roots(system.loss)
    if len(system.variables) <= MAX_WRITTEN_LOSS and written:
        shown.append(f"L = {polynomial(system.loss, system.variables, names)}")
    if system.closed_forms is not None:
        fixed = {x: system.singular_values[i] / system.coupling[i, i] for i, x in enumerate(system.variables)}
        final = simplified(system.loss.xreplace(fixed))
        shown.append(f"L(\\infty) = {doc.value(final)}")
    if not shown:
        lines.append(".\n")
    else:
        ending = (
            ", and at the end of learning (substituting the closed forms gives $L(t)$)"
            if system.closed_forms is not None
            else ""
        )
        lines.append(
            f"; written out{ending}:\n"
            if len(shown) == 2 or system.closed_forms is None
            else ". At the end of learning:\n"
        )
        if len(shown) == 2 and width(shown[0]) + width(shown[1]) + 4 <= MAX_LINE:
            lines.append(Document.display(", \\qquad ".join(shown)))
        else:
            lines.extend(Document.display(formula) for formula in shown)
    return "".join(lines) + "\n"


# --- speed and crossovers ---------------------------------------------------------------------------
def speed(doc: Document, derivation, crossovers: Sequence, level: str) -> str:
    lines = [heading(level, "Speed")]
    candidates = derivation.speed_candidates
    items: list[str] = []  # the candidates of a maximum that depends on the parameters
    if not candidates:
        value = "0"
    elif any(c.free_symbols for c in candidates):
        items = [doc.value(c) for c in candidates]
        value = items[0] if len(items) == 1 else "\\max\\left(" + ", ".join(items) + "\\right)"
    else:
        value = doc.value(max(candidates, key=lambda c: sympy.N(c, 30)))
    formula = f"s_{{\\max}} = {value}"
    if width(formula) <= MAX_LINE // 3:
        shown = f", ${formula}$.\n"
    elif width(formula) <= MAX_LINE or len(items) < 2:
        shown = ":\n" + Document.display(formula)
    else:  # a few candidates to a row: a left-right pair of delimiters cannot span rows
        rows = ", \\\\\n".join(Document.rows(items, ", "))
        shown = f":\n\\begin{{multline*}}\ns_{{\\max}} = \\max\\bigl({rows}\\bigr)\n\\end{{multline*}}\n"
    lines.append("The network learns on the time scale $\\tau/s_{\\max}$ of its leading singular value" + shown)
    lines.append(doc.polynomials())
    if crossovers:
        lines.append(heading(level, "Crossovers"))
        for c in crossovers:
            first, second = (name(n) for n in c.networks)
            lines.append(f"Networks {first} and {second} learn equally fast at\n")
            approx = f" \\approx {sympy.N(c.expr, 6)}" if not c.expr.free_symbols else ""
            lines.append(Document.display(f"{math(c.parameter)}^{{*}} = {math(c.expr)}{approx}"))
            if c.faster_below:
                lines.append(f"Below it {name(c.faster_below)} is faster; above it, {name(c.faster_above or '')}.\n")
    return "".join(lines)


__all__ = ["closed_forms", "escape_text", "loss", "reduced_system", "speed"]
