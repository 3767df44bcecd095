"""The report behind ``gdln derive``: effective datasets, modes, reduced system, closed forms,
loss, speed and crossovers of one network (`DeriveReport`). It holds data only: the command
prints its equations for a terminal (``gdln.commands.equations``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import sympy

from gdln.derive import cache
from gdln.derive.algebraic import as_text
from gdln.derive.crossover import Crossover
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import DerivationError
from gdln.derive.exceptional import describe
from gdln.derive.exported_flow import EQUATION, INITIAL, LOSS, flow_blocks, flow_pathways, flow_target_power, reason
from gdln.derive.spec import Task
from gdln.numeric.prediction import (
    REDUCED_FLOW,
    TaskPredictions,
)

from .entries import gate_description, number_at, parameter_entry, value_entry
from .reports import DeriveReport


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


def system_report(system, values: Mapping, summary: bool = False) -> dict:
    """The reduced system (:class:`derive.derivation.ReducedSystem`) as JSON. ``summary``: the
    ODEs and closed forms only for shared trajectories (``gdln derive`` prints no others), the
    couplings by position, no loss."""
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


def matrix_entry(matrix: sympy.MatrixBase, values: Mapping) -> dict:
    """A matrix's exact text and its value at ``values``, a list of rows of floats."""
    numbers: dict = {}
    rows = []
    for i in range(matrix.rows):
        row = []
        for j in range(matrix.cols):
            entry = matrix[i, j]
            if entry not in numbers:
                numbers[entry] = number_at(entry, values)
            row.append(numbers[entry])
        rows.append(row)
    return {"expr": as_text(matrix), "value": rows}


def flow_system_report(derivation: NetworkDerivation, values: Mapping, summary: bool = False) -> dict:
    """The reduced flow that ``gdln race`` integrates (:mod:`derive.exported_flow`) as JSON, where
    the mode strengths do not reduce exactly. ``summary``: names and shapes, no matrices."""
    pathways = flow_pathways(derivation)
    names = [p.name for p in pathways]
    variables = [
        {"name": f"W({p.name},{e + 1})", "pathway": p.name, "layer": e + 1, "shape": list(shape)}
        for p in pathways
        for e, shape in enumerate(p.layer_shapes())
    ]
    coupling = []
    for block in flow_blocks(derivation):
        entry: dict[str, Any] = {
            "name": f"Sigma_x({names[block.row]}, {names[block.column]})",
            "row": names[block.row],
            "column": names[block.column],
            "shape": [block.matrix.rows, block.matrix.cols],
        }
        coupling.append(entry if summary else entry | matrix_entry(block.matrix, values))
    flow_pathway_entries = []
    for p in pathways:
        entry = {
            "name": p.name,
            "depth": p.depth,
            "width": p.width,
            "units": p.units,
            "inputs": list(p.inputs),
            "outputs": list(p.outputs),
        }
        if not summary:
            entry |= {
                "sigma_yx": {"name": f"Sigma_yx({p.name})", **matrix_entry(p.sigma_yx, values)},
                "u": {"name": f"U({p.name})", **matrix_entry(p.u, values)},
                "v": {"name": f"V({p.name})", **matrix_entry(p.v, values)},
            }
        flow_pathway_entries.append(entry)
    report = {
        "kind": REDUCED_FLOW,
        "equation": EQUATION,
        "variables": variables,
        "coupling": coupling,
        "reason": reason(derivation),
        "pathways": flow_pathway_entries,
        "initial": INITIAL,
        "outputs": derivation.task.num_outputs,
    }
    if not summary:
        report |= {"target_power": value_entry(flow_target_power(derivation), values), "loss": LOSS}
    return report


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


def loss_expression(derivation: NetworkDerivation) -> sympy.Expr:
    """The loss as the report writes it: over time ``L(t)`` where the closed forms give it, else
    in the strengths ``L(a)``."""
    return derivation.loss if derivation.loss is not None else derivation.loss_in_strengths


def _pathway_entries(
    task: Task, derivation: NetworkDerivation, values: Mapping, summary: bool, flow: bool
) -> list[dict[str, Any]]:
    """Each pathway's entry: its gate, shape, rank, depth and mode classes; unless ``summary``,
    its effective correlations, singular values, input variances, ODEs (none where the reduced
    flow is the system exported) and closed forms."""
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
                "odes": None if flow else [as_text(r) for r in rates],
                "closed_form": None if closed_forms is None else [as_text(c) for c in closed_forms],
            }
        pathways.append(entry)
        position += count
    return pathways


def derive_report(
    task: Task,
    network: str,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
    summary: bool = False,
) -> DeriveReport:
    """The derivation of one network: effective datasets, modes and their classes, the reduced
    system (group variables where the group reduction is exact, modes otherwise), assumptions,
    loss, speed and crossovers with the task's other networks.

    Args:
        task: the task and its candidate networks.
        network: the name of the network to derive (a ``[[network]]`` of the spec).
        overrides: parameter values that replace the spec's (name -> value).
        models: the task's derivations and compiled predictions, to reuse across calls.
        summary: what ``gdln derive`` prints by default: the same keys without the long texts
            (matrices, each mode's ODE and closed form, couplings' expressions, loss, vectors;
            see `derive_summary`).

    Returns:
        The derivation (`DeriveReport`; ``to_json()`` is ``gdln derive --json``).

    Raises:
        SpecError: for a network the spec does not have.
        DerivationError: where the network cannot be derived exactly.
    """
    models = models or TaskPredictions(task)
    values = task.values(overrides)
    derivation = models.derivation(task.network(network).name)
    # where the race integrates the reduced flow, that flow is the system exported
    flow = models.prediction(derivation.network.name).kind == REDUCED_FLOW
    pathways = _pathway_entries(task, derivation, values, summary, flow)
    crossing, not_derived = crossovers_with_others(models, derivation.network.name, values)
    named = coupling_number_entries(derivation, values, summary)
    loss = {"closed_form": derivation.loss is not None, "initial": value_entry(derivation.initial_loss, values)}
    if not summary:
        loss = {"expr": LOSS if flow else as_text(loss_expression(derivation)), **loss}
    return DeriveReport.from_json(
        {
            "network": derivation.network.name,
            "parameters": parameter_entry(values),
            "pathways": pathways,
            "system": flow_system_report(derivation, values, summary)
            if flow
            else system_report(derivation.reduced_system, values, summary),
            "assumptions": derivation.assumptions,
            "loss": loss,
            "speed": value_entry(derivation.speed, values),
            "crossovers": crossover_entries(crossing, values),
            **({"coupling_numbers": named} if named else {}),
            # only where another network could not be derived: no crossover with it is reported
            **({"crossovers_not_derived": not_derived} if not_derived else {}),
            **({"exceptional_set": exceptional_entries(derivation)} if derivation.parameters else {}),
        }
    )


def exceptional_entries(derivation: NetworkDerivation) -> list[dict[str, str]]:
    """The derivation's exceptional set as JSON: each condition's polynomial and its words."""
    return [{"expr": as_text(c), "text": describe(c)} for c in derivation.exceptional_set]


def derive_summary(
    task: Task,
    network: str,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
) -> DeriveReport:
    """`derive_report` with ``summary``, kept in the derivation cache (``summary-*.json`` beside
    the derivation, ``derive.cache.document``): a warm ``gdln derive`` reads it instead of
    deriving and writing the derivation's expressions again.

    Args:
        task: the task and its candidate networks.
        network: the name of the network to derive.
        overrides: parameter values that replace the spec's (name -> value).
        models: the task's derivations and compiled predictions, to reuse across calls.

    Returns:
        The summary (`DeriveReport`). The cached document is keyed by the derivation and
        depends on the parameter values, the task's other networks (crossovers), SymPy's
        version and this module's source.
    """
    models = models or TaskPredictions(task)
    chosen = task.network(network)
    values = task.values(overrides)
    depends = "\n".join(
        [
            _SOURCE_DIGEST,
            sympy.__version__,
            repr(sorted((s.name, float(v).hex()) for s, v in values.items())),
            *(cache.derivation_key(task, other) for other in task.networks if other.name != chosen.name),
        ]
    )
    entries = cache.document(
        cache.derivation_key(task, chosen),
        "summary",
        depends,
        lambda: derive_report(task, chosen.name, overrides, models, summary=True).to_json(),
    )
    return DeriveReport.from_json(entries)


#: a digest of this module and of the entries it writes (`verify.entries`): reports made by
#: other code are not read back (`derive_summary`)
_SOURCE_DIGEST = "".join(cache.source_digest(module) for module in (__file__, inspect.getfile(value_entry)))
