"""LaTeX export of a derivation, written as a derivation in the notation of THEORY.md and in the
order of the paper's Appendices F and G: data and gates, each pathway's effective correlations,
their singular value decomposition, the assumptions, the reduced system of equations, closed
forms, the loss, the speed and the crossovers.

``derivation_latex(d)`` is the body, to ``\\input`` into an article with ``amsmath``;
``derivation_latex(d, document=True)`` wraps it into a document that plain ``pdflatex``
compiles (amsmath and amssymb only). ``staged_latex(s)`` writes the staged derivation of
:class:`derive.staged.StagedDerivation` (paper Appendix F): the first pathway alone, then the
others on its residual. Every formula is printed from the derivation objects; exact values stay
exact (an algebraic number without radical form is named as a root of its printed polynomial).
Matrices are written in structured form (:mod:`derive.latex.matrices`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import sympy

from .. import implicit
from ..exceptional import as_equation
from ..exported_flow import integrates_reduced_flow
from ..words import join, plural
from . import dynamics
from .document import Document, heading
from .matrices import describe, math, restrict, simplified, structured
from .text import counted, diagonalisation_failures, escape_text, in_words, name, ranges
from .width import MAX_LINE, width

if TYPE_CHECKING:  # annotations only: derivation.py imports this module for its LaTeX display
    from ..crossover import Crossover
    from ..derivation import NetworkDerivation
    from ..staged import StagedDerivation

__all__ = ["derivation_latex", "escape_text", "staged_latex"]

#: singular vectors are printed for pathways this small (inputs and outputs), else only classes
MAX_VECTOR_SIDE = 4
MAX_VECTOR_MODES = 3

_PREAMBLE = (
    "\\documentclass[10pt]{article}\n\\usepackage{amsmath,amssymb}\n"
    "\\setlength{\\textwidth}{16cm}\\setlength{\\oddsidemargin}{0cm}\\setlength{\\textheight}{23cm}"
    "\\setlength{\\topmargin}{-1cm}\n\\allowdisplaybreaks\n\\begin{document}\n"
)


def _wrap(body: str, document: bool) -> str:
    return _PREAMBLE + body + "\\end{document}\n" if document else body


# --- data and gates -------------------------------------------------------------------------------
def _gate_text(task, active: Sequence[int]) -> str:
    if len(active) == task.num_datapoints:
        return "all datapoints"
    if task.contexts is not None:
        chosen = sorted({task.contexts[n] for n in active})
        if sorted(active) == [n for n, c in enumerate(task.contexts) if c in chosen]:
            return ("context " if len(chosen) == 1 else "contexts ") + join([str(c) for c in chosen])
    return counted("datapoint", list(active))


def _indices_text(indices: Sequence[int], total: int) -> str:
    return "all" if sorted(indices) == list(range(total)) else ranges(indices)


def _data(doc: Document, task, level: str, title: str = "Data and gates") -> str:
    lines = [heading(level, title)]
    n, inputs, outputs = task.num_datapoints, task.num_inputs, task.num_outputs
    lines.append(
        f"The {plural(n, 'datapoint')} are the rows of the inputs $X$ (${n} \\times {inputs}$) "
        f"and of the targets $Y$ (${n} \\times {outputs}$).\n"
    )
    if task.contexts is not None:
        contexts = sorted(set(task.contexts))
        groups = [f"{ranges([i for i, c in enumerate(task.contexts) if c == context])}" for context in contexts]
        lines.append(
            f"They fall in {plural(len(contexts), 'context')}: "
            + join([f"context {c} holds rows {g}" for c, g in zip(contexts, groups)])
            + ".\n"
        )
    lines.append(_data_matrices(doc, task))
    lines.append(
        "The loss is $L = \\tfrac12 \\langle \\lVert y - \\hat y\\rVert^2 \\rangle$, the mean over datapoints, "
        "and $\\tau = 1/\\eta$ for learning rate $\\eta$, so that $t$ counts epochs.\n\n"
    )
    return "".join(lines)


def _data_matrices(doc: Document, task, targets_symbol: str = "Y") -> str:
    layout = doc.layout
    x = structured(task.inputs, layout.rows, layout.inputs, doc.registry, doc.names, register=True)
    y = structured(task.targets, layout.rows, layout.outputs, doc.registry, doc.names, register=True)
    lines = []
    blocked = len(layout.rows) > 1 and (len(layout.inputs) > 1 or len(layout.outputs) > 1)
    if blocked:
        lines.append(
            "In blocks of rows by context, and of columns by the contexts in which they are non-zero "
            f"(inputs {join([ranges(b) for b in layout.inputs])}; "
            f"outputs {join([ranges(b) for b in layout.outputs])}):\n"
        )
    shown = [f"X = {x}" if x is not None else None, f"{targets_symbol} = {y}" if y is not None else None]
    displayed = [s for s in shown if s is not None]
    if displayed:
        lines.append(doc.display(doc.rows(displayed)))
    if x is None:
        lines.append(describe("X", task.inputs, names=doc.names) + ".\n\n")
    if y is None:
        lines.append(describe(targets_symbol, task.targets, names=doc.names) + ".\n\n")
    lines.append(doc.named_blocks())
    return "".join(lines)


def _gates(doc: Document, task, network) -> str:
    pathways = network.pathways
    rows = [
        f"{doc.numbers[p.name]} & {name(p.name)} & {_gate_text(task, p.active)} & "
        f"{_indices_text(p.inputs, task.num_inputs)} & {_indices_text(p.outputs, task.num_outputs)} & {p.depth}"
        for p in pathways
    ]
    return (
        f"The network {name(network.name)} has {plural(len(pathways), 'pathway')}; pathway $p$ is gated on "
        "for the datapoints listed, reads the inputs and writes the outputs listed (columns of $X$ and $Y$), "
        "and has $D$ layers of weights.\n"
        "\\begin{center}\n\\begin{tabular}{cllllc}\n"
        "$p$ & pathway & on & inputs & outputs & $D$ \\\\ \\hline\n"
        + " \\\\\n".join(rows)
        + "\n\\end{tabular}\n\\end{center}\n"
    )


# --- effective correlations -------------------------------------------------------------------------
def _correlations(doc: Document, derivation, level: str) -> str:
    lines = [heading(level, "Effective correlations")]
    lines.append(
        doc.once(
            "correlations",
            "Each pathway sees its own dataset, set by the gates (THEORY Eq.~4): "
            "$\\Sigma^{yx}(p) = \\langle g_p\\, y_{t(p)} x_{s(p)}^\\top \\rangle$ and "
            "$\\Sigma^{x}(q, p) = \\langle g_q g_p\\, x_{s(q)} x_{s(p)}^\\top \\rangle$, "
            "with $\\Sigma^x(p) = \\Sigma^x(p, p)$ and averages over all datapoints.\n",
        )
    )
    units, described = [], []
    for pathway_derivation in derivation.pathways:
        pathway = pathway_derivation.pathway
        p = doc.numbers[pathway.name]
        outputs = restrict(doc.layout.outputs, pathway.outputs)
        inputs = restrict(doc.layout.inputs, pathway.inputs)
        unit = []
        for symbol, matrix, rows, rank in (
            (f"\\Sigma^{{yx}}({p})", pathway_derivation.sigma_yx, outputs, len(pathway_derivation.modes)),
            (f"\\Sigma^{{x}}({p})", pathway_derivation.sigma_x, inputs, None),
        ):
            text = structured(matrix, rows, inputs, doc.registry, doc.names)
            if text is None:
                described.append(describe(symbol, matrix, rank, doc.names) + ".\n\n")
            else:
                unit.append((symbol, text))
        units.append(unit)
    lines.append(doc.equations_by_unit(units))
    lines.extend(described)
    pairs = sorted((j, p) for j, p in derivation.cross_correlations if j < p)
    names = [pd.name for pd in derivation.pathways]
    if pairs:
        lines.append(
            "Pathways that share datapoints and outputs are coupled through $\\Sigma^x(q, p) = \\Sigma^x(p, q)^\\top$, "
            "their cross correlations:\n"
        )
        shown_pairs = []
        for j, p in pairs:
            pathway_j, pathway_p = derivation.network.pathways[j], derivation.network.pathways[p]
            rows = restrict(doc.layout.inputs, pathway_j.inputs)
            cols = restrict(doc.layout.inputs, pathway_p.inputs)
            symbol = f"\\Sigma^{{x}}({doc.numbers[names[j]]}, {doc.numbers[names[p]]})"
            matrix = derivation.cross_correlations[(j, p)]
            text = structured(matrix, rows, cols, doc.registry, doc.names)
            shown_pairs.append((symbol, text, matrix))
        lines.append(doc.equations_by_unit([[(s, t)] for s, t, _ in shown_pairs if t is not None]))
        for symbol, text, matrix in shown_pairs:
            if text is None:
                lines.append(describe(symbol, matrix, names=doc.names) + ".\n\n")
    elif len(derivation.pathways) > 1:
        lines.append("No two pathways share both datapoints and outputs: they learn independently.\n\n")
    return "".join(lines)


# --- singular value decomposition ------------------------------------------------------------------
def _vector(vector) -> str:
    """A column as a transposed row, with a common denominator taken out."""
    if len(vector) == 1:
        return math(vector[0])
    entries = [sympy.fraction(sympy.together(e)) for e in vector]
    denominators = {d for _, d in entries}
    if len(denominators) == 1 and next(iter(denominators)) != 1:
        (denominator,) = denominators
        body = ", ".join(math(n) for n, _ in entries)
        tail = math(denominator)
        tail = f"\\left({tail}\\right)" if isinstance(denominator, (sympy.Add, sympy.Mul)) else tail
        return f"\\left[{body}\\right]^\\top / {tail}"
    return "\\left[" + ", ".join(math(e) for e in vector) + "\\right]^\\top"


def _over_one_denominator(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` over one denominator where that reads shorter: a ``d`` with a parametric square root
    comes as a sum of fractions with coefficients of 15 digits that ``together`` clears."""
    if not expr.free_symbols or implicit.has_roots(expr):
        return expr
    joined = sympy.together(expr)
    return joined if len(sympy.latex(joined)) < len(sympy.latex(expr)) else expr


def _class_table(doc: Document, derivation, p: int) -> tuple[str, list[tuple[str, str]]]:
    """Pathway ``p``'s table of classes, and the entries it names instead of writing them: where the
    table is wider than a line, its widest ``s`` or ``d`` entries, one by one until it fits, are
    written as ``s_{p,k}`` or ``d_{p,k}`` (``k`` the class's first mode), each one an equation shown
    below the tables (the pair ``(name, value)``)."""
    number = doc.numbers[derivation.pathways[p].name]
    classes = derivation.symmetry.classes[p]
    cells = [[doc.value(c.s), doc.value(_over_one_denominator(c.input_variance))] for c in classes]
    named: dict[tuple[int, int], str] = {}

    def table() -> str:
        rows = [
            f"{j + 1} & \\text{{{ranges(c.modes)}}} & "
            + " & ".join(named.get((j, column), cells[j][column]) for column in range(2))
            for j, c in enumerate(classes)
        ]
        return Document.array("cccc", "\\text{class} & \\text{modes } k & s & d", rows)

    while width(table()) > MAX_LINE:
        left = [(width(cells[j][column]), j, column) for j in range(len(classes)) for column in range(2)]
        left = [entry for entry in left if entry[1:] not in named]
        if not left:
            break
        _, j, column = max(left)
        named[(j, column)] = f"{'sd'[column]}_{{{number},{classes[j].modes[0] + 1}}}"
    pairs = [(named[key], cells[key[0]][key[1]]) for key in sorted(named)]
    return table(), pairs


def _svd(doc: Document, derivation, level: str) -> str:
    lines = [heading(level, "Singular value decomposition")]
    lines.append(
        doc.once(
            "svd",
            "Each $\\Sigma^{yx}(p) = \\sum_k s_{p,k}\\, u_{p,k} v_{p,k}^\\top$ (modes $k$ counted from 1), with "
            "$d_{p,k} = v_{p,k}^\\top \\Sigma^x(p)\\, v_{p,k}$. Modes of one singular value form a class; "
            "its multiplicity is the number of its modes.\n",
        )
    )
    tables, named = [], []
    for p in range(len(derivation.pathways)):
        table, pairs = _class_table(doc, derivation, p)
        tables.append(table)
        named.extend(pairs)
    labelled, position = [], 0
    while position < len(tables):
        same_table = [position]
        while position + len(same_table) < len(tables) and tables[position + len(same_table)] == tables[position]:
            same_table.append(position + len(same_table))
        numbers = [str(doc.numbers[derivation.pathways[q].name]) for q in same_table]
        label = f"pathway {numbers[0]}" if len(numbers) == 1 else f"pathways {join(numbers)}, each"
        labelled.append(f"\\begin{{array}}{{c}}\\text{{{label}}} \\\\[2pt]\n{tables[position]}\n\\end{{array}}")
        position += len(same_table)
    lines.append(doc.display(doc.rows(labelled, separator=" \\qquad ")))
    if named:  # the entries too wide for the tables
        equations = [f"{lhs} = {rhs}" for lhs, rhs in named]
        if all(width(e) <= MAX_LINE for e in equations):
            lines.append("where\n" + doc.display(doc.rows(equations)))
        else:
            lines.append("where\n" + "".join(doc.display(e) for e in equations))
    vectors = []
    for pathway_derivation in derivation.pathways:
        pathway = pathway_derivation.pathway
        small = max(len(pathway.inputs), len(pathway.outputs)) <= MAX_VECTOR_SIDE
        if not small or len(pathway_derivation.modes) > MAX_VECTOR_MODES:
            continue
        p = doc.numbers[pathway.name]
        for k, mode in enumerate(pathway_derivation.modes):
            if mode.kind in ("algebraic", "numeric", "float"):
                continue
            vectors.append(f"u_{{{p},{k + 1}}} = {_vector(mode.u)}, \\quad v_{{{p},{k + 1}}} = {_vector(mode.v)}")
    if vectors:
        lines.append("The singular vectors:\n" + doc.display(doc.rows(vectors)))
    lines.append(doc.polynomials())
    return "".join(lines)


# --- assumptions -------------------------------------------------------------------------------------
def _assumptions(doc: Document, derivation, level: str) -> str:
    lines = [heading(level, "Assumptions")]
    names = [pd.name for pd in derivation.pathways]
    number = {n: doc.numbers[n] for n in names}
    lines.append(
        doc.once(
            "alignment",
            "The reduction assumes small, balanced initial weights that align with the singular vectors early "
            "(silent alignment, Assumption 2.1.2) and gates that stay fixed.",
        )
    )
    failed, other = diagonalisation_failures(derivation.diagonalisation_failures)
    if not failed and not other:
        lines.append(
            "Assumption 2.1.1 holds for every pathway: $\\Sigma^{yx}(p)$ and $\\Sigma^x(p)$ share right singular "
            "vectors, each $v_{p,k}$ an eigenvector of $\\Sigma^x(p)$ with eigenvalue $d_{p,k}$.\n"
        )
    else:
        parts = [f"{counted('mode', modes)} of pathway {number.get(n, name(n))}" for n, modes in failed.items()]
        lines.append(
            "Assumption 2.1.1 fails for "
            + join(parts)
            + ": there $\\Sigma^{yx}(p)$ and $\\Sigma^x(p)$ do not share right singular vectors, so the reduction "
            "keeps a mixing matrix and $d_{p,k}$ is only the diagonal of $\\Sigma^x(p)$ on the modes.\n"
        )
        lines.extend(in_words(message, number) + ".\n" for message in other)
    if len(names) > 1:
        pairs = derivation.interacting_pairs
        total = len(names) * (len(names) - 1) // 2
        if not pairs:
            lines.append("No two pathways interact.\n")
        elif len(pairs) == total:
            lines.append("Every pair of pathways interacts (they share datapoints and outputs).\n")
        else:
            lines.append(
                "Pathways interact in the pairs "
                + join(
                    [
                        f"({number[a]}, {number[b]})"
                        for a, b in sorted(pairs, key=lambda ab: (number[ab[0]], number[ab[1]]))
                    ]
                )
                + " (they share datapoints and outputs).\n"
            )
        groups = [g for g in derivation.symmetric_groups if len(g) > 1]
        if groups:
            described = [join([str(number[names[p]]) for p in g]) for g in groups]
            lines.append(
                "Pathways "
                + "; ".join(described)
                + f" {'are' if len(groups) == 1 else 'are, group by group,'} symmetric (the same depth, singular classes "
                "and overlaps, compared exactly).\n"
            )
        reduction = derivation.group_reduction
        if not reduction.exact:
            lines.append(
                "The group reduction, one trajectory per symmetric group and class, is not exact: "
                + "; ".join(in_words(f, number) for f in reduction.failures)
                + (
                    ". The system below is therefore the reduced flow of the pathways' weights.\n"
                    if integrates_reduced_flow(derivation)
                    else ". The system below therefore keeps one equation per mode.\n"
                )
            )
        elif derivation.cross_correlations or groups:
            lines.append(
                "The group reduction is exact: the flow keeps one trajectory per symmetric group and class when "
                "the modes it stands for start alike.\n"
            )
    if derivation.parameters and not derivation.in_floats:
        lines.append(_generic_where(derivation))
    lines.append(_closed_form_reason(derivation))
    if derivation.arithmetic != "exact":
        lines.append("Arithmetic: " + escape_text(derivation.arithmetic) + ".\n")
    for value in derivation.assumptions["algebraic_values"]:
        lines.append(
            f"In pathway {number.get(value['pathway'], name(value['pathway']))}, "
            f"{plural(value['modes'], 'singular value')} "
            f"{'has' if value['modes'] == 1 else 'have'} no radical form: $s^2$ is a root of an irreducible "
            f"polynomial of degree {value['degree']}.\n"
        )
    if derivation.assumptions["named_couplings"]:
        lines.append(
            f"{plural(len(derivation.coupling_numbers), 'coupling')} between modes of such values "
            f"{'is an exact number' if len(derivation.coupling_numbers) == 1 else 'are exact numbers'} "
            "defined by the modes' exact vectors, not expanded (\\texttt{gdln derive --json} lists them): in the "
            "roots they have up to $\\deg r_k \\deg r_l$ terms with rationals of hundreds of digits.\n"
        )
    return lines[0] + " ".join(line.strip() for line in lines[1:] if line.strip()) + "\n\n"


def _generic_where(derivation) -> str:
    """Where the parametric derivation holds (:mod:`derive.exceptional`), in a sentence."""
    names = ", ".join(sympy.latex(p) for p in derivation.parameters)
    conditions = [f"${sympy.latex(as_equation(c))}$" for c in derivation.exceptional_set]
    where = f" except where {join(conditions, 'or')}" if conditions else ""
    return (
        f"The expressions are generic: they hold for positive ${names}${where}. There two eigenvalues meet, "
        "a rank changes or an eigenvector's formula vanishes, and \\texttt{gdln} derives at the point instead, "
        "exactly.\n"
    )


def _closed_form_reason(derivation) -> str:
    if derivation.has_closed_form:
        return "Every equation below is a logistic in its own variable: closed forms exist.\n"
    reasons = []
    if derivation.diagonalisation_failures:
        reasons.append("Assumption 2.1.1 fails")
    deep = sorted({pd.pathway.depth for pd in derivation.pathways if pd.pathway.depth != 2})
    if deep:
        reasons.append(f"a pathway has depth {join([str(d) for d in deep], 'or')}")
    if derivation.cross_correlations and not derivation.group_reduction.decoupled:
        reasons.append("the equations are coupled")
    return "There is no closed form: " + join(reasons or ["the reduction is not decoupled"]) + ".\n"


# --- the documents -------------------------------------------------------------------------------
def _body(doc: Document, derivation, level: str, first_variable: int = 1) -> str:
    doc.name_variables(derivation, first_variable)
    return "".join(
        [
            _correlations(doc, derivation, level),
            _svd(doc, derivation, level),
            _assumptions(doc, derivation, level),
            dynamics.reduced_system(doc, derivation, level),
            dynamics.closed_forms(doc, derivation, level),
            dynamics.loss(doc, derivation, level),
        ]
    )


def derivation_latex(
    derivation: NetworkDerivation, crossovers: Sequence[Crossover] = (), document: bool = False
) -> str:
    task = derivation.task
    doc = Document.of(task, derivation.network.pathways)
    lines = [f"% gdln derivation of network {derivation.network.name}\n"]
    lines.append(f"\\section*{{{escape_text(task.title)}: network {name(derivation.network.name)}}}\n")
    lines.append(_data(doc, task, "subsection"))
    lines.append(_gates(doc, task, derivation.network))
    lines.append(_body(doc, derivation, "subsection"))
    lines.append(dynamics.speed(doc, derivation, crossovers, "subsection"))
    return _wrap("".join(lines), document)


def staged_latex(staged: StagedDerivation, document: bool = False) -> str:
    """The staged derivation (paper Appendix F): the first pathway alone, then the others on the
    residual of its converged map, each stage with its reduced system and closed forms."""
    task, network = staged.task, staged.network
    doc = Document.of(task, network.pathways)
    first, second = staged.first_stage, staged.second_stage
    lines = [f"% gdln staged derivation of network {network.name}\n"]
    lines.append(f"\\section*{{{escape_text(task.title)}: network {name(network.name)}, staged}}\n")
    lines.append(
        f"The staged derivation (paper Appendix F): pathway {doc.numbers[staged.first.name]} "
        f"({name(staged.first.name)}) learns alone first; the others then learn on the residual its converged "
        "map leaves. It is an approximation of the network's own flow; \\texttt{gdln race --staged} measures "
        "its error.\n"
    )
    lines.append(_data(doc, task, "subsection"))
    lines.append(_gates(doc, task, network))
    lines.append(heading("subsection", f"Stage 1: pathway {doc.numbers[staged.first.name]} alone"))
    lines.append(_body(doc, first, "subsubsection"))
    stage_one = first.reduced_system
    p = doc.numbers[staged.first.name]
    lines.append(heading("subsubsection", "Residual"))
    lines.append(
        f"From small weights the flow ends at the minimum-norm least-squares map of its dataset, "
        f"$W_{{{p}}}(\\infty) = \\Sigma^{{yx}}({p})\\, \\Sigma^x({p})^{{+}}$. The others learn on the residual "
        f"targets $\\tilde Y = Y - X W_{{{p}}}(\\infty)^\\top$ (on the datapoints of pathway {p}):\n"
    )
    lines.append(_residual(doc, staged))
    lines.append(
        heading(
            "subsection",
            f"Stage 2: {'pathway' if len(staged.rest) == 1 else 'pathways'} "
            + join([str(doc.numbers[q.name]) for q in staged.rest])
            + " on the residual",
        )
    )
    lines.append(_body(doc, second, "subsubsection", first_variable=len(stage_one.variables) + 1))
    return _wrap("".join(lines), document)


def _residual(doc: Document, staged) -> str:
    residual = staged.residual_task
    doc_targets = structured(
        residual.targets.applyfunc(simplified),
        doc.layout.rows,
        doc.layout.outputs,
        doc.registry,
        doc.names,
        register=True,
    )
    lines = []
    if doc_targets is not None:
        lines.append(doc.display(f"\\tilde Y = {doc_targets}"))
    else:
        lines.append(describe("\\tilde Y", residual.targets, names=doc.names) + ".\n\n")
    lines.append(doc.named_blocks())
    return "".join(lines)
