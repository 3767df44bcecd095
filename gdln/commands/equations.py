"""Equations as ``gdln derive`` prints them on a terminal: one line of plain text, or SymPy's
pretty printer, with algebraic numbers that have no radical form named by their value.

The report (``verify.derivation_report``) holds data only; the text of its equations is written
here, from the derivation's expressions. Pretty-printing a large system takes longer than reading
the rest of a warm summary, so the summary's equations are kept in the derivation cache too
(`summary_equations`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import sympy

from gdln.derive import cache
from gdln.derive.algebraic import as_text
from gdln.derive.derivation import TIME, NetworkDerivation
from gdln.verify.derivation_report import loss_expression

if TYPE_CHECKING:
    from gdln.derive.spec import Task
    from gdln.numeric.prediction import TaskPredictions


def equation_style(args) -> str:
    """SymPy's pretty printer on a terminal (unicode where it can be written), else one line of
    plain text, as with ``--plain``."""
    if getattr(args, "plain", False) or not sys.stdout.isatty():
        return "plain"
    try:
        "\u239b\u2500".encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "ascii"
    return "pretty"


def equation_text(lhs: sympy.Expr, rhs: sympy.Expr, style: str) -> str:
    """``lhs = rhs`` for a terminal: ``"plain"`` one line of SymPy's text (a derivative written
    ``dx/dt``), ``"pretty"`` SymPy's pretty printer in unicode, ``"ascii"`` the same in ASCII
    (several lines). Algebraic numbers with no radical form appear as their value with its kind
    (`root_names`), never as their ``CRootOf`` polynomial."""
    names = root_names(rhs)
    rhs = rhs.xreplace({root: symbol for root, (symbol, _) in names.items()}) if names else rhs
    if style == "plain":
        if isinstance(lhs, sympy.Derivative):
            (variable, _), *_ = lhs.variable_count
            lhs_text = f"d{lhs.expr.func}/d{variable}"
        else:
            lhs_text = as_text(lhs)
        text = f"{lhs_text} = {as_text(rhs)}"
    else:
        text = sympy.pretty(sympy.Eq(lhs, rhs, evaluate=False), use_unicode=style == "pretty", wrap_line=False)
    legend = [f"{symbol} = {note}" for symbol, note in names.values()]
    return text + ("\n  where " + "; ".join(legend) if legend else "")


def root_names(expr: sympy.Expr) -> dict:
    """Each ``CRootOf`` number of ``expr`` with a symbol ``r1, r2, ...`` that stands for it in
    text, and what to say of it: its value, that it is algebraic, its degree."""
    roots = sorted(sympy.sympify(expr).atoms(sympy.CRootOf), key=lambda r: float(r))
    return {
        root: (sympy.Symbol(f"r{k + 1}"), f"{float(root):.10g} (algebraic of degree {root.poly.degree()})")
        for k, root in enumerate(roots)
    }


def rate_and_closed_form(variable: sympy.Symbol, rate: sympy.Expr, closed: sympy.Expr | None, style: str) -> dict:
    """``{"ode", "closed_form"}``: the text of ``d variable/dt = rate`` and of
    ``variable(t) = closed`` (``None`` without a closed form)."""
    function = sympy.Function(variable.name)(TIME)
    return {
        "ode": equation_text(sympy.Derivative(function, TIME), rate, style),
        "closed_form": None if closed is None else equation_text(function, closed, style),
    }


def system_equations(derivation: NetworkDerivation, style: str) -> list[dict]:
    """Per variable of the reduced system, its ODE and closed form as text (`rate_and_closed_form`)."""
    system = derivation.reduced_system
    closed = system.closed_forms
    return [
        rate_and_closed_form(x, system.rates[i], None if closed is None else closed[i], style)
        for i, x in enumerate(system.variables)
    ]


def pathway_equations(derivation: NetworkDerivation, style: str) -> list[list[dict]]:
    """Per pathway, per mode, its strength's ODE and closed form as text (`rate_and_closed_form`)."""
    closed = derivation.closed_forms
    found, position = [], 0
    for pathway_derivation in derivation.pathways:
        count = len(pathway_derivation.modes)
        rates = derivation.rates[position : position + count]
        closed_forms = [None] * count if closed is None else closed[position : position + count]
        found.append(
            [
                rate_and_closed_form(a, rate, form, style)
                for a, rate, form in zip(pathway_derivation.strengths, rates, closed_forms)
            ]
        )
        position += count
    return found


def loss_equation(derivation: NetworkDerivation, style: str) -> str:
    """The loss as text: ``L(t)`` from the closed forms, else ``L`` in the strengths."""
    return equation_text(sympy.Function("L")(TIME), loss_expression(derivation), style)


def summary_equations(task: Task, network: str, models: TaskPredictions, style: str) -> list[dict]:
    """`system_equations` of ``network``, kept in the derivation cache beside the summary
    (``equations-*.json``): a warm ``gdln derive`` prints them without deriving or pretty-printing
    again. They depend on the derivation (its key), the style, SymPy's version and this module's
    source, not on the parameter values: the equations are written in the parameters."""
    depends = "\n".join([_SOURCE_DIGEST, sympy.__version__, style])
    return cache.document(
        cache.derivation_key(task, task.network(network)),
        "equations",
        depends,
        lambda: system_equations(models.derivation(network), style),
    )


#: a digest of this module: equations written by other code are not read back (`summary_equations`)
_SOURCE_DIGEST = cache.source_digest(__file__)
