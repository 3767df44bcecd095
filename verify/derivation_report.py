"""The report behind ``gdln derive``: effective datasets, modes, reduced system, closed forms,
loss, speed and crossovers of one network, as a JSON-ready dictionary.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping
from pathlib import Path

import sympy

from gdln.derive import cache
from gdln.derive.algebraic import as_text
from gdln.derive.crossover import Crossover
from gdln.derive.derivation import TIME, NetworkDerivation
from gdln.derive.errors import DerivationError
from gdln.derive.spec import Task
from gdln.numeric.prediction import (
    TaskPredictions,
)

from .entries import gate_description, number_at, value_entry


def _class_entries(derivation, p: int, values: Mapping) -> list[dict]:
    pathway_derivation = derivation.pathways[p]
    out = []
    for c in derivation.symmetry.classes[p]:
        mode = pathway_derivation.modes[c.modes[0]]
        out.append(
            {
                "s": value_entry(c.s, values),
                "multiplicity": c.multiplicity,
                "d": value_entry(c.input_variance, values),
                "kind": mode.kind,
                "degree": mode.degree,
            }
        )
    return out


def system_report(system, values: Mapping, summary: bool = False, equations: str | None = None) -> dict:
    """The reduced system (:class:`derive.derivation.ReducedSystem`) as JSON. ``summary``: the
    ODEs and closed forms only for shared trajectories (``gdln derive`` prints no others), the
    couplings by position, no loss. ``equations``: also their text in that style
    (:func:`equation_text`), as ``display``."""
    closed = system.closed_forms
    written = not summary or system.kind == "groups"
    variables = []
    for i, (x, label, m, depth, s) in enumerate(
        zip(system.variables, system.labels, system.multiplicities, system.depths, system.singular_values)
    ):
        variable = {
            "name": x.name,
            "label": label,
            "multiplicity": m,
            "depth": depth,
            "s": value_entry(s, values),
            "d": value_entry(system.coupling[i, i], values),
        }
        if written:
            variable["ode"] = as_text(system.odes[i])
            variable["closed_form"] = None if closed is None else as_text(closed[i])
        if written and equations is not None:
            function = sympy.Function(x.name)(TIME)
            variable["display"] = {
                "ode": equation_text(sympy.Derivative(function, TIME), system.rates[i], equations),
                "closed_form": None if closed is None else equation_text(function, closed[i], equations),
            }
        variables.append(variable)
    report = {
        "kind": system.kind,
        "equation": "tau dx_i/dt = D x_i^(2-2/D) (s_i - sum_j C_ij x_j)",
        "variables": variables,
        "coupling": [
            {"row": i, "column": j} if summary else {"row": i, "column": j, **value_entry(c, values)}
            for i, j, c in system.nonzero_couplings
        ],
    }
    if not summary:
        report["loss"] = as_text(system.loss)
    return report


#: the styles of :func:`equation_text`


EQUATION_STYLES = ("plain", "pretty", "ascii")


def equation_text(lhs: sympy.Expr, rhs: sympy.Expr, style: str) -> str:
    """``lhs = rhs`` for a terminal: ``"plain"`` one line of SymPy's text (a derivative written
    ``dx/dt``), ``"pretty"`` SymPy's pretty printer in unicode, ``"ascii"`` the same in ASCII
    (several lines). Algebraic numbers with no radical form appear as their value with its kind
    (:func:`root_names`), never as their ``CRootOf`` polynomial."""
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


#: how a named coupling (``derive.algebraic.CouplingNumber``) is defined, in the terms of ``mode_vectors``


COUPLING_NUMBER_DEFINITION = "c(k, l) = (u_k^T E_p^T E_q u_l) (v_l^T Sigma_x(q, p) v_k) / (n_k s_k n_l s_l)"


def coupling_number_entries(derivation: NetworkDerivation, values: Mapping, summary: bool = False) -> dict | None:
    """The named couplings of a derivation with their definition: each coupling's two modes and
    value, and the exact unnormalised vectors ``u, v``, norm factor ``n`` and ``s`` of every
    mode they involve, written once (``None`` when there are none; ``summary``: no vectors)."""
    numbers = derivation.coupling_numbers
    if not numbers:
        return None
    refs, names = derivation.mode_refs, [p.name for p in derivation.network.pathways]
    involved = sorted({k for c in numbers for k in (c.row, c.column)})

    def mode_of(k):
        return [names[refs[k].pathway], refs[k].mode]

    entries = {
        "definition": COUPLING_NUMBER_DEFINITION,
        "couplings": [
            {
                "name": str(c),
                "modes": [mode_of(c.row), mode_of(c.column)],
                "degree_at_most": derivation.mode(refs[c.row]).degree * derivation.mode(refs[c.column]).degree,
                "value": float(c.evalf(30)),
            }
            for c in numbers
        ],
    }
    if summary:
        return entries
    return {
        **entries,
        "mode_vectors": [
            {
                "index": k,
                "mode": mode_of(k),
                "u": as_text(sympy.ImmutableMatrix(mode.u_raw).T),
                "v": as_text(sympy.ImmutableMatrix(mode.v_raw).T),
                "n": as_text(mode.raw_norm2),
                "s": value_entry(mode.s, values),
            }
            for k in involved
            for mode in [derivation.mode(refs[k])]
        ],
    }


def network_crossovers(models: TaskPredictions, name: str, values: Mapping) -> list[Crossover]:
    """Crossovers of network ``name`` with each other network of the task that derives, in every
    parameter (:func:`crossovers_with_others`)."""
    return crossovers_with_others(models, name, values)[0]


def crossovers_with_others(
    models: TaskPredictions, name: str, values: Mapping
) -> tuple[list[Crossover], list[dict[str, str]]]:
    """Crossovers of network ``name`` with each other network of the task, in every parameter, and
    the networks that could not be derived, each ``{"network", "reason"}``: one network's trouble
    never stops the derivation of another. A graph whose paths share edges has no module race (it
    races by Eq. 6) and no crossover."""
    found: list[Crossover] = []
    not_derived = []
    for other in models.task.networks:
        if other.name == name or other.shared:
            continue
        try:
            found += models.crossovers(name, other.name, values)
        except DerivationError as error:
            not_derived.append({"network": other.name, "reason": str(error)})
    return found, not_derived


def crossover_entries(found: list[Crossover], values: Mapping) -> list[dict]:
    """Crossovers as JSON entries, each valued with the other parameters at ``values``."""
    return [
        {
            "networks": list(c.networks),
            "parameter": c.parameter.name,
            "expr": as_text(c.expr),
            "value": number_at(c.expr, {s: v for s, v in values.items() if s != c.parameter}),
            "faster_below": c.faster_below,
            "faster_above": c.faster_above,
            **({"numeric": True, "note": c.note, "bracket": list(c.bracket)} if c.bracket else {}),
        }
        for c in found
    ]


def derive_report(
    task: Task,
    network: str,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
    summary: bool = False,
    equations: str | None = None,
) -> dict:
    """The derivation of one network: effective datasets, modes and their classes, the reduced
    system (group variables where the group reduction is exact, modes otherwise), assumptions,
    loss, speed and crossovers with the task's other networks.

    ``summary``: what ``gdln derive`` prints by default, the same keys without the long texts
    (matrices, each mode's ODE and closed form, couplings' expressions, loss, vectors; see
    :func:`derive_summary`). ``equations`` (one of :data:`EQUATION_STYLES`): the text of the
    equations printed, under ``display`` (not part of the JSON)."""
    models = models or TaskPredictions(task)
    values = task.values(overrides)
    derivation = models.derivation(task.network(network).name)
    closed = derivation.closed_forms
    pathways = []
    position = 0
    for p, pathway_derivation in enumerate(derivation.pathways):
        count = len(pathway_derivation.modes)
        entry = {
            "name": pathway_derivation.name,
            "active": list(pathway_derivation.pathway.active),
            "gate": gate_description(task, pathway_derivation.pathway.active),
            "shape": list(pathway_derivation.sigma_yx.shape),
            "rank": count,
            "depth": pathway_derivation.pathway.depth,
            "classes": _class_entries(derivation, p, values),
        }
        if not summary:
            rates = derivation.rates[position : position + count]
            closed_forms = None if closed is None else closed[position : position + count]
            entry |= {
                "sigma_yx": as_text(pathway_derivation.sigma_yx),
                "sigma_x": as_text(pathway_derivation.sigma_x),
                "singular_values": [value_entry(m.s, values) for m in pathway_derivation.modes],
                "input_variances": [value_entry(m.d, values) for m in pathway_derivation.modes],
                "odes": [as_text(r) for r in rates],
                "closed_form": None if closed_forms is None else [as_text(c) for c in closed_forms],
            }
            if equations is not None:
                strengths = [sympy.Function(a.name)(TIME) for a in pathway_derivation.strengths]
                entry["display"] = {
                    "odes": [equation_text(sympy.Derivative(a, TIME), r, equations) for a, r in zip(strengths, rates)],
                    "closed_form": None
                    if closed_forms is None
                    else [equation_text(a, c, equations) for a, c in zip(strengths, closed_forms)],
                }
        pathways.append(entry)
        position += count
    crossing, not_derived = crossovers_with_others(models, derivation.network.name, values)
    found = crossover_entries(crossing, values)
    named = coupling_number_entries(derivation, values, summary)
    loss = {"closed_form": derivation.loss is not None, "initial": value_entry(derivation.initial_loss, values)}
    if not summary:
        expr = derivation.loss if derivation.loss is not None else derivation.loss_in_strengths
        loss = {"expr": as_text(expr), **loss}
        if equations is not None:
            loss["display"] = equation_text(sympy.Function("L")(TIME), expr, equations)
    return {
        "network": derivation.network.name,
        "parameters": {s.name: v for s, v in values.items()},
        "pathways": pathways,
        "system": system_report(derivation.reduced_system, values, summary, equations),
        "assumptions": derivation.assumptions,
        **({"coupling_numbers": named} if named else {}),
        "loss": loss,
        "speed": value_entry(derivation.speed, values),
        "crossovers": found,
        # only where another network could not be derived: no crossover with it is reported
        **({"crossovers_not_derived": not_derived} if not_derived else {}),
    }


def derive_summary(
    task: Task,
    network: str,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
    equations: str = "plain",
) -> dict:
    """:func:`derive_report` with ``summary``, kept in the derivation cache (``summary-*.json``
    beside the derivation, :func:`derive.cache.document`): a warm ``gdln derive`` reads it
    instead of printing the derivation's expressions again. It is keyed by the derivation and
    depends on the parameter values, the task's other networks (crossovers), the equations'
    style, SymPy's version and this module's source."""
    models = models or TaskPredictions(task)
    chosen = task.network(network)
    values = task.values(overrides)
    depends = "\n".join(
        [
            _SOURCE_DIGEST,
            sympy.__version__,
            equations,
            repr(sorted((s.name, float(v).hex()) for s, v in values.items())),
            *(cache.derivation_key(task, other) for other in task.networks if other.name != chosen.name),
        ]
    )
    return cache.document(
        cache.derivation_key(task, chosen),
        "summary",
        depends,
        lambda: derive_report(task, chosen.name, overrides, models, summary=True, equations=equations),
    )


#: a digest of this module and of the entries it writes (:mod:`verify.entries`): reports made by
#: other code are not read back (:func:`derive_summary`)


_SOURCE_DIGEST = hashlib.sha256(
    b"".join(Path(module).read_bytes() for module in (__file__, inspect.getfile(value_entry)))
).hexdigest()[:16]
