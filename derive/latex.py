"""LaTeX export of a derivation: a fragment to ``\\input`` into an ``article`` with ``amsmath``."""

from __future__ import annotations

from typing import Sequence

import sympy

from .crossover import Crossover
from .derivation import NetworkDerivation

_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "{": r"\{", "}": r"\}", "~": r"\~{}", "^": r"\^{}"}


def escape_text(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _math(expr) -> str:
    return sympy.latex(expr)


def _display(body: str) -> str:
    return "\\begin{equation*}\n" + body + "\n\\end{equation*}\n"


def derivation_latex(derivation: NetworkDerivation, crossovers: Sequence[Crossover] = ()) -> str:
    task = derivation.task
    lines = [f"% gdln derivation of network {derivation.network.name}\n"]
    lines.append(f"\\section*{{{escape_text(task.title)}: network {escape_text(derivation.network.name)}}}\n")
    lines.append("\\subsection*{Data}\nRows are datapoints; $N = %d$.\n" % task.num_datapoints)
    lines.append(_display(f"X = {_math(task.inputs)}, \\qquad Y = {_math(task.targets)}"))
    lines.append(
        "Loss $L = \\tfrac12 \\langle \\lVert y - \\hat y\\rVert^2 \\rangle$, "
        "$\\tau = 1/\\eta$ (so $t$ counts epochs).\n"
    )
    position = 0
    closed = derivation.closed_forms
    for pd in derivation.pathways:
        name = escape_text(pd.name)
        lines.append(f"\\subsection*{{Pathway {name}}}\n")
        lines.append(
            f"Active on datapoints {escape_text(str(list(pd.pathway.active)))}, inputs "
            f"{escape_text(str(list(pd.pathway.inputs)))}, outputs {escape_text(str(list(pd.pathway.outputs)))}, "
            f"depth {pd.pathway.depth}.\n"
        )
        lines.append(_display(f"\\Sigma^{{yx}} = {_math(pd.sigma_yx)}, \\qquad \\Sigma^{{x}} = {_math(pd.sigma_x)}"))
        for k, mode in enumerate(pd.modes):
            a, rate = derivation.strengths[position], derivation.rates[position]
            lines.append(f"Mode {k}:\n")
            lines.append(_display(f"s = {_math(mode.s)}, \\quad d = {_math(mode.d)}, \\quad u = {_math(mode.u)}, \\quad v = {_math(mode.v)}"))
            lines.append(_display(f"\\frac{{d {_math(a)}}}{{dt}} = {_math(rate)}"))
            if closed is not None:
                lines.append(_display(f"{_math(a)}(t) = {_math(closed[position])}"))
            position += 1
    lines.append("\\subsection*{Assumptions}\n")
    assumptions = derivation.assumptions
    lines.append(
        f"Mutually diagonalisable: {'yes' if assumptions['mutually_diagonalisable'] else 'no'}. "
        f"Pathways interact: {'yes' if assumptions['pathways_interact'] else 'no'}.\n"
    )
    for failure in assumptions["failures"]:
        lines.append(escape_text(failure) + "\n\n")
    lines.append("\\subsection*{Loss}\n")
    if derivation.loss is not None:
        lines.append(_display(f"L(t) = {_math(derivation.loss)}"))
    else:
        lines.append(_display(f"L = {_math(derivation.loss_in_strengths)}"))
    lines.append(_display(f"\\text{{speed}} = {_math(derivation.speed)}"))
    if crossovers:
        lines.append("\\subsection*{Crossovers}\n")
        for c in crossovers:
            first, second = (escape_text(n) for n in c.networks)
            lines.append(f"Networks {first} and {second} learn equally fast at\n")
            lines.append(_display(f"{_math(c.parameter)}^{{*}} = {_math(c.expr)} \\approx {sympy.N(c.expr, 6) if not c.expr.free_symbols else ''}"))
            if c.faster_below:
                lines.append(f"Below it {escape_text(c.faster_below)} is faster; above it {escape_text(c.faster_above or '')}.\n")
    return "".join(lines)
