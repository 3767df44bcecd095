"""The reports behind ``gdln derive|race|simulate|verify``, as JSON-ready dictionaries.

Expressions are SymPy ``str()`` text; values are floats at the current parameter values.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import sympy

from gdln.derive import cache
from gdln.derive.algebraic import as_text, describe
from gdln.derive.crossover import Crossover
from gdln.derive.derivation import TIME, NetworkDerivation
from gdln.derive.errors import SpecError
from gdln.derive.spec import Network, Task
from gdln.numeric.alignment import OUTPUT_FRACTION, Alignment, align, aligned_network
from gdln.numeric.initial_conditions import ALIGNMENT, MODELS, WEIGHTS, unmatched_units
from gdln.numeric.prediction import (
    GRADIENT_DESCENT,
    GRADIENT_FLOW,
    REDUCED_FLOW,
    TIME_MODELS,
    Prediction,
    TaskPredictions,
)
from gdln.numeric.race import first_crossings
from gdln.numeric.sharding import device_count
from gdln.numeric.training import gdln_layout, initial_relu_weights, train_gdln, train_relu

from .checks import check_training_size, check_values
from .display import RaceReport, VerifyReport
from .files import write_atomic
from .progress import Stages, plural, progress
from .representations import gate_census, hidden_layers, mds_comparison


def _number(expr: sympy.Expr, values: Mapping) -> float:
    return float(sympy.N(sympy.sympify(expr).subs(values), 17))


def _entry(expr: sympy.Expr, values: Mapping) -> dict:
    """An expression's exact text and value; with ``algebraic`` (:func:`derive.algebraic.describe`)
    when it holds ``CRootOf`` numbers, so that text output can give the value and its kind."""
    entry = {"expr": as_text(expr), "value": _number(expr, values)}
    described = describe(expr)
    if described is not None:
        entry["algebraic"] = described
    return entry


def _finite_or_none(value: float):
    return None if value is None or not math.isfinite(value) else float(value)


def _vector(task: Task, values: Mapping) -> list[float]:
    return [float(values[symbol]) for symbol in task.parameters]


THEORY_POINTS = 1000


def epoch_grid(epochs: int, stride: int = 1) -> jnp.ndarray:
    """Epochs ``0, stride, 2 stride, ... <= epochs``; counted in integers, so exact for any ``epochs``."""
    return jnp.asarray(np.arange(int(epochs) // int(stride) + 1, dtype=np.float64) * float(stride))


def theory_stride(epochs: int) -> int:
    """Epochs between samples of predicted curves: about ``THEORY_POINTS`` samples per run."""
    return max(1, epochs // THEORY_POINTS)


def gate_description(task: Task, active: tuple[int, ...]) -> str:
    """Where a pathway's gate is on, in the task's own terms where it has them ("contexts 1, 2")."""
    if len(active) == task.num_datapoints:
        return "all datapoints"
    if task.contexts is not None:
        chosen = sorted({task.contexts[n] for n in active})
        if sorted(active) == [n for n, c in enumerate(task.contexts) if c in chosen]:
            return ("context " if len(chosen) == 1 else "contexts ") + ", ".join(str(c) for c in chosen)
    return "datapoints " + ", ".join(str(n) for n in active)


def _class_entries(derivation, p: int, values: Mapping) -> list[dict]:
    pathway_derivation = derivation.pathways[p]
    out = []
    for c in derivation.symmetry.classes[p]:
        mode = pathway_derivation.modes[c.modes[0]]
        out.append(
            {
                "s": _entry(c.s, values),
                "multiplicity": c.multiplicity,
                "d": _entry(c.input_variance, values),
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
            "s": _entry(s, values),
            "d": _entry(system.coupling[i, i], values),
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
            {"row": i, "column": j} if summary else {"row": i, "column": j, **_entry(c, values)}
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
                "s": _entry(mode.s, values),
            }
            for k in involved
            for mode in [derivation.mode(refs[k])]
        ],
    }


def network_crossovers(models: TaskPredictions, name: str, values: Mapping) -> list[Crossover]:
    """Crossovers of network ``name`` with each other network of the task, in every parameter;
    a graph whose paths share edges has no module race (it races by Eq. 6) and no crossover."""
    return [
        c
        for other in models.task.networks
        if other.name != name and not other.shared
        for c in models.crossovers(name, other.name, values)
    ]


def _crossover_entries(found: list[Crossover], values: Mapping) -> list[dict]:
    """Crossovers as JSON entries, each valued with the other parameters at ``values``."""
    return [
        {
            "networks": list(c.networks),
            "parameter": c.parameter.name,
            "expr": as_text(c.expr),
            "value": _number(c.expr, {s: v for s, v in values.items() if s != c.parameter}),
            "faster_below": c.faster_below,
            "faster_above": c.faster_above,
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
                "singular_values": [_entry(m.s, values) for m in pathway_derivation.modes],
                "input_variances": [_entry(m.d, values) for m in pathway_derivation.modes],
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
    found = _crossover_entries(network_crossovers(models, derivation.network.name, values), values)
    named = coupling_number_entries(derivation, values, summary)
    loss = {"closed_form": derivation.loss is not None, "initial": _entry(derivation.initial_loss, values)}
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
        "speed": _entry(derivation.speed, values),
        "crossovers": found,
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


#: a digest of this module: reports made by other code are not read back (:func:`derive_summary`)
_SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def staged_report(models: TaskPredictions, name: str, ts, values: Mapping, exact_curve: np.ndarray) -> dict:
    """The staged approximation of a network with interacting pathways, and its error
    against the exact dynamics (max |L_staged - L_exact| / L(0))."""
    task = models.task
    staged = models.staged(name)
    curve = models.staged_loss_curve(name, ts, task.training.init_scale, task.training.tau, _vector(task, values))
    second = staged.second_stage
    return {
        "first": staged.first.name,
        "first_closed_form": staged.first_stage.has_closed_form,
        "rest_closed_form": second.has_closed_form,
        "rest_symmetric_groups": [[second.network.pathways[p].name for p in g] for g in second.symmetric_groups],
        "max_deviation": float(np.max(np.abs(curve - exact_curve)) / exact_curve[0]),
    }


def race_order(entry: Mapping[str, Any]) -> tuple:
    """Rank of a race entry (a network, or an orbit of networks): the first to reach 10% of the
    initial loss wins; among those that never do, the lowest final loss; an entry whose
    prediction is not finite ranks last and never wins."""
    finite = entry["final_loss"] is not None
    return (not finite, entry["t_90"] is None, entry["t_90"] or 0.0, entry["final_loss"] if finite else 0.0)


def flow_race(
    task: Task, overrides: Mapping[str, float] | None = None, models: TaskPredictions | None = None
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """``(parameters, {name: {"t_90", "final_loss"}})``: every network raced on its exact reduced
    flow, as :func:`race_report` races it (crossings solved on the flow, no grid), without the
    closed forms, speeds and crossovers that report derives. The exhaustive search races
    hundreds of networks for these two numbers alone."""
    models = models or TaskPredictions(task)
    values = check_values(task, overrides, models)
    vector, training = _vector(task, values), task.training
    entries = {}
    for network in progress(task.networks, "race", label=lambda network: network.name):
        prediction = Prediction(models.derivation(network.name), kind=REDUCED_FLOW)
        result = prediction.race(training.init_scale, training.tau, vector, training.epochs)
        entries[network.name] = {
            "t_90": _finite_or_none(result.crossings[0.1]),
            "final_loss": _finite_or_none(result.final_loss),
        }
    return {s.name: v for s, v in values.items()}, entries


def race_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
    staged: bool = False,
) -> dict:
    """Rank the candidate networks by their predicted time to learn, and find crossovers.

    ``t_half``/``t_90`` are solved on the predicted dynamics, not read off a grid: inverted
    closed forms (brentq on the sum of logistics), or crossings located within one solver step
    of the race ODE / reduced flow and solved there (:func:`numeric.race.ode_race`). ``epochs``
    only sets the horizon: a crossing after it is ``null``, and ``horizon`` says where that is;
    ``final_loss`` is the loss at the horizon over the initial loss. Seeds enter as ``log a0``,
    so init scales whose ``a0`` underflows give the right crossings. ``stopped_at``/``notes``
    appear only when an ODE could not be followed to the horizon. ``winner`` is ``null`` when no
    prediction is finite, or when none reaches 10% within the horizon and the best losses at the
    horizon are equal."""
    models = models or TaskPredictions(task)
    check_values(task, overrides, models)
    if not task.networks:
        raise SpecError(task.source, "network", "the race needs at least one [[network]]")
    values = task.values(overrides)
    vector = _vector(task, values)
    training = task.training
    horizon = training.epochs
    derivations = {n.name: models.derivation(n.name) for n in task.networks}
    networks = []
    for name, derivation in progress(derivations.items(), "race", label=lambda item: item[0]):
        # crossings solved on the dynamics themselves, no sampling grid (numeric.race.RaceResult)
        prediction = models.prediction(name)
        result = prediction.race(training.init_scale, training.tau, vector, horizon)
        entry = {
            "name": name,
            "speed": _entry(derivation.speed, values),
            "t_half": _finite_or_none(result.crossings[0.5]),
            "t_90": _finite_or_none(result.crossings[0.1]),
            "final_loss": _finite_or_none(result.final_loss),
            "dynamics": prediction.kind,
            "closed_form": derivation.closed_forms is not None,
            "pathways": [
                {
                    "name": pathway_derivation.name,
                    "singular_values": [_entry(m.s, values) for m in pathway_derivation.modes],
                }
                for pathway_derivation in derivation.pathways
            ],
        }
        if result.stopped_at is not None:
            entry["stopped_at"] = result.stopped_at
        if result.notes:
            entry["notes"] = list(result.notes)
        if staged and derivation.cross_correlations and len(derivation.pathways) > 1:
            ts = epoch_grid(horizon, theory_stride(horizon))
            entry["staged"] = staged_report(
                models, name, ts, values, prediction.loss_curve(ts, training.init_scale, training.tau, vector)
            )
        networks.append(entry)

    ranked = sorted(networks, key=race_order)
    ranking = [n["name"] for n in ranked]
    winner = ranked[0]["name"] if ranked[0]["final_loss"] is not None else None
    if len(ranked) > 1 and ranked[0]["t_90"] is None and race_order(ranked[0]) == race_order(ranked[1]):
        winner = None  # none reaches 10% within the horizon and the best losses there are equal (e.g. both still 1.0)
    pairs = combinations(derivations, 2)
    found = _crossover_entries([c for a, b in pairs for c in models.crossovers(a, b, values)], values)
    return RaceReport(
        {
            "parameters": {s.name: v for s, v in values.items()},
            "horizon": horizon,
            "networks": networks,
            "ranking": ranking,
            "winner": winner,
            "crossovers": found,
        }
    )


def _settings(task: Task, seeds: int | None, epochs: int | None):
    return task.with_training(seeds=seeds, epochs=epochs).training


def train_network(
    task: Task,
    model: str,
    overrides=None,
    seeds: int | None = None,
    epochs: int | None = None,
    models: TaskPredictions | None = None,
    *,
    dtype: str = "float64",
):
    """Train the ReLU network (``model='relu'``) or a listed GDLN with its explicit gates; the
    ReLU network may train in float32 (``dtype``), a GDLN trains in float64."""
    models = models or TaskPredictions(task)
    values = task.values(overrides)
    training = _settings(task, seeds, epochs)
    check_training_size(task, training, model)
    inputs, targets = models.dataset(_vector(task, values))
    common = dict(
        init_scale=training.init_scale,
        learning_rate=training.learning_rate,
        epochs=training.epochs,
        seeds=range(training.seeds),
    )
    if model == "relu":
        return train_relu(inputs, targets, training.hidden_units, **common, dtype=dtype), values, training
    if dtype != "float64":
        raise SpecError(task.source, "--dtype", f"{dtype} training is for the ReLU network; {model} trains in float64")
    layout = gdln_layout(task.network(model), task.num_datapoints)
    return train_gdln(inputs, targets, layout, **common), values, training


def deviations(curve, relu) -> dict[str, float]:
    """How far a predicted loss curve lies from the ReLU network's mean curve (same samples):
    the largest and the mean absolute gap, as fractions of the network's initial loss."""
    gap = np.abs(np.asarray(curve) - relu)
    return {"max_deviation": float(np.max(gap) / relu[0]), "mean_deviation": float(np.mean(gap) / relu[0])}


def finite_crossings(ts, curves, fraction: float) -> np.ndarray:
    """``crossing_time`` row by row on the finite part of sampled curves ``(rows, samples)``: NaN
    where a row is not finite and positive at the start, or not finite before it reaches
    ``fraction`` of its initial value."""
    curves = np.atleast_2d(np.asarray(curves, dtype=float))
    # samples from a row's first non-finite one on are cut off: a curve that diverged has ended
    finite_so_far = np.logical_and.accumulate(np.isfinite(curves), axis=1)
    starts = curves[:, 0]
    usable = finite_so_far[:, 0] & (starts > 0)
    times = first_crossings(ts, np.where(finite_so_far, curves, np.nan), fraction * np.where(usable, starts, 0.0))
    return np.where(usable, times, np.nan)


def finite_crossing(ts, curve, fraction: float) -> float | None:
    """:func:`finite_crossings` of one curve, None where it has none."""
    return _finite_or_none(float(finite_crossings(ts, np.asarray(curve, dtype=float)[None], fraction)[0]))


def divergence_note(name: str, ts, curve, why: str = "") -> str | None:
    """Where a sampled loss curve stops being finite, as a note for the report."""
    finite = np.isfinite(np.asarray(curve, dtype=float))
    if finite.all():
        return None
    return f"{name}: loss not finite from epoch {float(np.asarray(ts)[int(np.argmin(finite))]):g}{why}"


def simulate_report(
    task: Task,
    model: str,
    overrides=None,
    seeds=None,
    epochs=None,
    out: str | None = None,
    *,
    dtype: str = "float64",
) -> dict:
    check_values(task, overrides, derivations=False)
    run, values, training = train_network(task, model, overrides, seeds, epochs, dtype=dtype)
    ts = epoch_grid(training.epochs)
    losses = np.asarray(run.losses)
    if out is not None:
        buffer = io.BytesIO()  # np.savez to a file object: no ".npz" appended, and one atomic write
        np.savez(
            buffer,
            epochs=np.asarray(ts),
            losses=losses,
            seeds=np.arange(training.seeds),
            model=np.array(model),
            parameters=np.array([s.name for s in values]),
            parameter_values=np.array(list(values.values()), dtype=float),
        )
        write_atomic(out, buffer.getvalue(), "--out")
    diverged = " (gradient descent diverged or overflowed)"
    notes = [note for k, row in enumerate(losses) if (note := divergence_note(f"seed {k}", ts, row, diverged))]
    report = {
        "model": model,
        "parameters": {s.name: v for s, v in values.items()},
        "seeds": training.seeds,
        "epochs": training.epochs,
        "dtype": dtype,
        "devices": device_count(),
        "t_half": [finite_crossing(ts, row, 0.5) for row in losses],
        "t_90": [finite_crossing(ts, row, 0.1) for row in losses],
        "loss_final": [float(row[-1]) for row in losses],
    }
    if notes:
        report["notes"] = notes
    return report


def relu_initial_weights(task: Task, training):
    """The initial weights of the task's ReLU runs, one per seed: those ``train_network`` starts from."""
    return initial_relu_weights(
        training.hidden_units, task.num_inputs, task.num_outputs, training.init_scale, range(training.seeds)
    )


def relu_alignment(models: TaskPredictions, initial_weights, values: Mapping, training) -> Alignment:
    """The alignment phase of ReLU runs from their initial weights ``(W1s, W2s)`` alone, at the
    training step and cut at the training horizon."""
    inputs, targets = models.dataset(_vector(models.task, values))
    w1s, w2s = initial_weights
    return align(inputs, targets, w1s, w2s, training.learning_rate, horizon=training.epochs)


def aligned_candidate(models: TaskPredictions, alignment: Alignment) -> Network:
    """The GDLN of the settled patterns, named ``aligned`` (or ``aligned-2``... if the spec has one)."""
    taken = {n.name for n in models.task.networks}
    name = next(f for f in ("aligned", *(f"aligned-{k}" for k in range(2, len(taken) + 3))) if f not in taken)
    return aligned_network(alignment, models.task.num_inputs, models.task.num_outputs, name)


def alignment_entry(alignment: Alignment, networks: list[Network]) -> dict:
    """The alignment phase as JSON: its end per seed, the settled patterns with their units per
    seed, and per candidate the units (per seed) that match none of its pathways."""
    seeds = len(alignment.epochs)
    per_seed = [alignment.patterns(k) for k in range(seeds)]
    patterns = sorted({p for found in per_seed for p in found}, key=lambda p: (-sum(f[p] for f in per_seed), p))
    return {
        "time": [int(e) for e in alignment.epochs],
        "ended": [bool(e) for e in alignment.ended],
        "output_fraction": OUTPUT_FRACTION,
        "patterns": [{"active": list(p), "units": [int(f[p]) for f in per_seed]} for p in patterns],
        "unmatched_units": {n.name: unmatched_units(n, alignment) for n in networks},
    }


def candidate_predictions(models: TaskPredictions, extra: tuple[Network, ...] = ()) -> dict[str, Prediction]:
    """The prediction of every candidate of the task, and of ``extra`` networks (the aligned GDLN)."""
    found = {network.name: models.prediction(network.name) for network in models.task.networks}
    # the aligned GDLN is predicted by the exact reduced flow from its units' maps: no modes derived
    found.update(
        {network.name: Prediction(NetworkDerivation(models.task, network), kind=REDUCED_FLOW) for network in extra}
    )
    return found


def predicted_relu_curves(
    models: TaskPredictions,
    predictions: Mapping[str, Prediction],
    initial_weights,
    values,
    training,
    ts,
    *,
    initial_conditions: str = ALIGNMENT,
    time_model: str = GRADIENT_DESCENT,
    alignment: Alignment | None = None,
) -> dict[str, np.ndarray]:
    """Each of ``predictions``' loss curve for ReLU runs with ``initial_weights = (W1s, W2s)``
    at epochs ``ts``, from the initial conditions named by ``initial_conditions``
    (:data:`numeric.initial_conditions.MODELS`). Only the initial weights enter: nothing is
    fitted to the ReLU losses."""
    vector = _vector(models.task, values)
    inputs, _ = models.dataset(vector)
    curves = {}
    for name, prediction in predictions.items():
        if initial_conditions == ALIGNMENT:
            assert alignment is not None
            curves[name] = prediction.aligned_loss_curve(ts, alignment, training.learning_rate, vector, time=time_model)
        elif initial_conditions == WEIGHTS:
            curves[name] = prediction.relu_loss_curve(
                ts, initial_weights, inputs, training.init_scale, training.tau, vector
            )
        else:
            curves[name] = prediction.loss_curve(ts, training.init_scale, training.tau, vector)
    return curves


def network_toml(network: Network, comment: str) -> str:
    """A ``[[network]]`` table for a spec file (pathways on every input and output)."""
    lines = [f"# {comment}", "[[network]]", f'name = "{network.name}"']
    for pathway in network.pathways:
        lines += [
            "[[network.pathway]]",
            f'name = "{pathway.name}"',
            f"active = [{', '.join(str(n) for n in pathway.active)}]",
            f"units = {pathway.units}",
        ]
    return "\n".join(lines) + "\n"


def align_report(task: Task, overrides=None, seeds: int | None = None) -> tuple[dict, str]:
    """The alignment phase of the ReLU network from its initial weights (no training): the
    settled patterns and, per candidate, the units that match none of its pathways; and the
    patterns' GDLN as a ``[[network]]`` table."""
    models = TaskPredictions(task)
    check_values(task, overrides, derivations=False)
    values = task.values(overrides)
    training = _settings(task, seeds, None)
    check_training_size(task, training, "relu")
    initial = relu_initial_weights(task, training)
    alignment = relu_alignment(models, initial, values, training)
    network = aligned_candidate(models, alignment)
    report = {"parameters": {s.name: v for s, v in values.items()}, "seeds": training.seeds}
    report.update(alignment_entry(alignment, [*task.networks, network]))
    report["network"] = network.name
    where = ", ".join(f"{s.name} = {v:g}" for s, v in values.items()) or "no parameters"
    comment = f"settled gate patterns of the alignment phase ({where}; {training.seeds} seed{'' if training.seeds == 1 else 's'}), from gdln align"
    return report, network_toml(network, comment)


def check_prediction_models(task: Task, initial_conditions: str, time_model: str | None) -> str:
    """The time model to use; one line naming the flag when the pair is not offered."""
    if initial_conditions not in MODELS:
        raise SpecError(task.source, "--initial-conditions", f"must be one of {', '.join(MODELS)}")
    if time_model is None:
        return GRADIENT_DESCENT if initial_conditions == ALIGNMENT else GRADIENT_FLOW
    if time_model not in TIME_MODELS:
        raise SpecError(task.source, "--time", f"must be one of {', '.join(TIME_MODELS)}")
    if time_model == GRADIENT_DESCENT and initial_conditions != ALIGNMENT:
        raise SpecError(
            task.source,
            "--time",
            "gradient descent is followed from the alignment phase only (--initial-conditions alignment)",
        )
    return time_model


#: training decides which candidate it follows when the followed one's largest deviation beats
#: the runner-up's by at least this many standard errors of the seeds' mean loss (about 95%
#: confidence for a normal spread); closer than that, other seeds could reverse the order
DECIDED_STANDARD_ERRORS = 2.0


def seed_standard_error(losses) -> float | None:
    """The largest standard error of the seeds' mean loss over the samples, ``(seeds, samples)``,
    as a fraction of the mean initial loss; ``None`` with fewer than two seeds."""
    losses = np.asarray(losses, dtype=float)
    if losses.shape[0] < 2:
        return None
    error = np.std(losses, axis=0, ddof=1) / np.sqrt(losses.shape[0])
    return float(np.max(error) / np.mean(losses[:, 0]))


def follow_resolution(networks: list[dict], follows: str | None, losses) -> dict[str, Any]:
    """Whether the seeds decide the followed candidate (:func:`followed_candidate`): its lead in
    largest deviation over the runner-up (``lead``, a fraction of the initial loss), the seeds'
    standard error (:func:`seed_standard_error`), the lead needed (:data:`DECIDED_STANDARD_ERRORS`
    of them), and ``decided``, whether the lead reaches it (``None`` where either is unknown)."""
    error = seed_standard_error(losses)
    others = sorted(
        n["max_deviation"]
        for n in networks
        if n["name"] != follows and not n["from_alignment"] and math.isfinite(n["max_deviation"])
    )
    ours = next((n["max_deviation"] for n in networks if n["name"] == follows), None)
    lead = others[0] - ours if follows is not None and ours is not None and others else None
    needed = None if error is None else DECIDED_STANDARD_ERRORS * error
    decided = None if lead is None or needed is None else bool(lead >= needed)
    return {"lead": lead, "seed_error": error, "lead_needed": needed, "decided": decided}


def followed_candidate(networks: list[dict]) -> tuple[str | None, list[str]]:
    """Verify's rule: the candidate the ReLU network follows is the one with the smallest largest
    deviation (to 4 decimals of the initial loss), then the smallest mean deviation; candidates
    from the alignment phase itself and non-finite deviations never count. ``None``, with a
    note, when none is finite or the two best are the same curve."""
    notes: list[str] = []
    # a candidate whose deviation is not finite can never be the one followed (min() would let a NaN win)
    candidates = [
        n
        for n in networks
        if math.isfinite(n["max_deviation"]) and math.isfinite(n["mean_deviation"]) and not n["from_alignment"]
    ]
    ranked = sorted(candidates, key=lambda n: (round(n["max_deviation"], 4), n["mean_deviation"]))
    follows = ranked[0]["name"] if ranked else None
    if follows is None:
        notes.append("no candidate's deviation from the ReLU network is finite: none is followed")
    elif len(ranked) > 1 and all(
        abs(ranked[0][k] - ranked[1][k]) <= 1e-12 * max(1.0, abs(ranked[0][k]))
        for k in ("max_deviation", "mean_deviation")
    ):
        # e.g. every alignment phase still running at the horizon: the predictions are the same curve
        notes.append(
            f"{ranked[0]['name']} and {ranked[1]['name']} are predicted the same curve within the horizon: none is followed"
        )
        follows = None
    return follows, notes


def verify_report(
    task: Task,
    overrides=None,
    seeds=None,
    epochs=None,
    models: TaskPredictions | None = None,
    representations: bool = True,
    initial_conditions: str = ALIGNMENT,
    time_model: str | None = None,
) -> dict:
    """Train the ReLU network and say which candidate network it follows, and how closely;
    with ``data.contexts``, add the census of its hidden units and the MDS comparison with
    the followed candidate trained as a GDLN with explicit gates.

    Every prediction is computed from the runs' initial weights before the losses are read
    (``initial_conditions``: ``alignment``, ``weights`` or ``width``; ``time_model``: gradient
    descent at the training step or gradient flow). With ``alignment`` the report adds the
    phase (``"alignment"``) and the GDLN of its settled patterns as the candidate ``aligned``
    (``"from_alignment": true``); ``follows`` is chosen among the spec's candidates."""
    models = models or TaskPredictions(task)
    if not task.networks:
        raise SpecError(task.source, "network", "verification needs at least one [[network]]")
    time_model = check_prediction_models(task, initial_conditions, time_model)
    check_values(task, overrides, models)
    values = task.values(overrides)
    training = _settings(task, seeds, epochs)
    check_training_size(task, training, "relu")
    initial = relu_initial_weights(task, training)
    stride = theory_stride(training.epochs)
    ts = epoch_grid(training.epochs, stride)
    alignment: Alignment | None = None
    extra: tuple[Network, ...] = ()
    step = Stages("verify", 2 + (initial_conditions == ALIGNMENT) + (task.contexts is not None))
    if initial_conditions == ALIGNMENT:
        step("alignment phase of the ReLU runs")
        alignment = relu_alignment(models, initial, values, training)
        extra = (aligned_candidate(models, alignment),)
    # the predictions are made from the initial weights alone, before the network is trained
    step("predictions from the initial weights")
    predictors = candidate_predictions(models, extra)
    predictions = predicted_relu_curves(
        models,
        predictors,
        initial,
        values,
        training,
        ts,
        initial_conditions=initial_conditions,
        time_model=time_model,
        alignment=alignment,
    )
    step(f"training the ReLU network ({plural(training.seeds, 'seed')})")
    run, _, _ = train_network(task, "relu", overrides, seeds, epochs, models)
    relu = np.mean(np.asarray(run.losses), axis=0)[::stride]
    from_alignment = {n.name for n in extra}
    networks: list[dict[str, Any]] = [
        {
            "name": name,
            **deviations(curve, relu),
            "t_half_predicted": finite_crossing(ts, curve, 0.5),
            "t_half_relu": finite_crossing(ts, relu, 0.5),
            "dynamics": predictors[name].kind,
            "from_alignment": name in from_alignment,
        }
        for name, curve in predictions.items()
    ]
    notes = [
        note
        for note in [divergence_note("ReLU network", ts, relu, " (gradient descent diverged or overflowed)")]
        if note
    ]
    notes += [
        note for name, curve in predictions.items() if (note := divergence_note(f"prediction of {name}", ts, curve))
    ]
    follows, follow_notes = followed_candidate(networks)
    notes += follow_notes
    report: dict[str, Any] = VerifyReport(
        {
            "parameters": {s.name: v for s, v in values.items()},
            "seeds": training.seeds,
            "epochs": training.epochs,
            "initial_conditions": initial_conditions,
            "time_model": time_model,
            "follows": follows,
            "resolution": follow_resolution(networks, follows, np.asarray(run.losses)[:, ::stride]),
            "networks": networks,
        }
    )
    if alignment is not None:
        report["alignment"] = alignment_entry(alignment, [*task.networks, *extra])
    if notes:
        report["notes"] = notes
    if task.contexts is not None:
        step("census of the hidden units, and the followed candidate's representations")
        inputs, _ = models.dataset(_vector(task, values))
        report["census"] = gate_census(task, inputs, *run.final)
        if representations and follows is not None:
            reln, _, _ = train_network(task, follows, overrides, 1, epochs, models)
            report["mds"] = {"network": follows, **mds_comparison(*hidden_layers(task, run, reln, follows, inputs))}
    step.close()
    return report
