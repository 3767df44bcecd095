"""The report behind ``gdln race``: every candidate raced on its predicted dynamics, ranked by
:func:`verify.rules.race_order`, with the derived crossovers.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np

from gdln.derive.errors import SpecError
from gdln.derive.exceptional import outside_domain
from gdln.derive.spec import Task
from gdln.numeric.prediction import (
    REDUCED_FLOW,
    Prediction,
    TaskPredictions,
)

from .checks import check_training_size, check_values
from .derivation_report import crossover_entries
from .entries import epoch_grid, finite_or_none, parameter_entry, parameter_vector, theory_stride, value_entry
from .following import alignment_follows, alignment_validity, relu_alignment, relu_initial_weights
from .progress import progress
from .reports import RaceReport
from .rules import race_order, race_winner


def staged_report(models: TaskPredictions, name: str, ts, values: Mapping, exact_curve: np.ndarray) -> dict:
    """The staged approximation of a network with interacting pathways, and its error
    against the exact dynamics (max |L_staged - L_exact| / L(0))."""
    task = models.task
    staged = models.staged(name)
    curve = models.staged_loss_curve(
        name, ts, task.training.init_scale, task.training.tau, parameter_vector(task, values)
    )
    second = staged.second_stage
    return {
        "first": staged.first.name,
        "first_closed_form": staged.first_stage.has_closed_form,
        "rest_closed_form": second.has_closed_form,
        "rest_symmetric_groups": [[second.network.pathways[p].name for p in g] for g in second.symmetric_groups],
        "max_deviation": float(np.max(np.abs(curve - exact_curve)) / exact_curve[0]),
    }


def flow_race(
    task: Task, overrides: Mapping[str, float] | None = None, models: TaskPredictions | None = None
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """``(parameters, {name: {"t_90", "final_loss"}})``: every network raced on its exact reduced
    flow, as :func:`race_report` races it (crossings solved on the flow, no grid), without the
    closed forms, speeds and crossovers that report derives. The exhaustive search races
    hundreds of networks for these two numbers alone."""
    models = models or TaskPredictions(task)
    values = check_values(task, overrides, models)
    vector, training = parameter_vector(task, values), task.training
    entries = {}
    for network in progress(task.networks, "race", label=lambda network: network.name):
        prediction = Prediction(models.derivation(network.name), kind=REDUCED_FLOW)
        result = prediction.race(training.init_scale, training.tau, vector, training.epochs)
        entries[network.name] = {
            "t_90": finite_or_none(result.crossings[0.1]),
            "final_loss": finite_or_none(result.final_loss),
        }
    return parameter_entry(values), entries


def _network_entry(
    models: TaskPredictions, name: str, derivation, values: Mapping, training, staged: bool
) -> dict[str, Any]:
    """One network's entry of the race: its speed, times to half and to 10% solved on its
    dynamics (no sampling grid, `numeric.race.RaceResult`), its loss at the horizon, its
    pathways' singular values, and with ``staged`` its staged approximation."""
    horizon = training.epochs
    vector = parameter_vector(models.task, values)
    prediction = models.prediction(name)
    result = prediction.race(training.init_scale, training.tau, vector, horizon)
    entry: dict[str, Any] = {
        "name": name,
        "speed": value_entry(derivation.speed, values),
        "t_half": finite_or_none(result.crossings[0.5]),
        "t_90": finite_or_none(result.crossings[0.1]),
        "final_loss": finite_or_none(result.final_loss),
        "dynamics": prediction.kind,
        "closed_form": derivation.closed_forms is not None,
        "pathways": [
            {
                "name": pathway_derivation.name,
                "singular_values": [value_entry(m.s, values) for m in pathway_derivation.modes],
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
        exact = prediction.loss_curve(ts, training.init_scale, training.tau, vector)
        entry["staged"] = staged_report(models, name, ts, values, exact)
    return entry


def race_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    models: TaskPredictions | None = None,
    staged: bool = False,
    *,
    predict_validity: bool = False,
) -> RaceReport:
    """Rank the candidate networks by their predicted time to learn, and find crossovers.

    ``t_half``/``t_90`` are solved on the predicted dynamics, not read off a grid: inverted
    closed forms (brentq on the sum of logistics), or crossings located within one solver step
    of the race ODE / reduced flow and solved there (`numeric.race.ode_race`). ``epochs``
    only sets the horizon: a crossing after it is ``None``, and ``horizon`` says where that is;
    ``final_loss`` is the loss at the horizon over the initial loss. Seeds enter as ``log a0``,
    so init scales whose ``a0`` underflows give the right crossings. ``stopped_at``/``notes``
    appear only when an ODE could not be followed to the horizon. ``winner`` is ``None`` when no
    prediction is finite, or when none reaches 10% within the horizon and the best losses at the
    horizon are equal.

    Args:
        task: the task and its candidate networks.
        overrides: parameter values that replace the spec's (name -> value).
        models: the task's derivations and compiled predictions, to reuse across calls.
        staged: also give each network with interacting pathways its staged approximation
            (first pathway, then the rest on its residual) and that approximation's error.
        predict_validity: also run the alignment phase of the spec's ReLU seeds (no training) and
            give the theory's own verdict on where it holds (``predicted_validity``,
            `verify.rules.predicted_validity`), as ``gdln verify`` does.

    Returns:
        The race (`RaceReport`; ``to_json()`` is ``gdln race --json``).

    Raises:
        SpecError: for a task without networks or parameter values out of range.
    """
    generic = models or TaskPredictions(task)
    if not task.networks:
        raise SpecError(task.source, "network", "the race needs at least one [[network]]")
    point = task.values(overrides)
    # at a point where the generic derivation fails (eigenvalues meet, zero or negative values),
    # everything below is derived at the point, exactly (derive.exceptional)
    models, values, exceptional_point = generic.at(point)
    check_values(models.task, None, models)
    training = task.training
    horizon = training.epochs
    derivations = {n.name: models.derivation(n.name) for n in task.networks}
    networks = [
        _network_entry(models, name, derivation, values, training, staged)
        for name, derivation in progress(derivations.items(), "race", label=lambda item: item[0])
    ]
    ranking = [n["name"] for n in sorted(networks, key=race_order)]
    winner, _ = race_winner(networks)
    pairs = list(combinations(derivations, 2))
    # the crossovers are the generic family's, in each parameter with the others at this point
    # (none where a value lies outside the generic derivation's domain)
    within = not outside_domain(point)
    found = crossover_entries([c for a, b in pairs for c in generic.crossovers(a, b, point)], point) if within else []
    report = {
        "parameters": parameter_entry(point),
        "horizon": horizon,
        "networks": networks,
        "ranking": ranking,
        "winner": winner,
        "crossovers": found,
    }
    if predict_validity:
        check_training_size(task, training, "relu")
        initial = relu_initial_weights(task, training)
        alignment = relu_alignment(models, initial, values, training)
        report["predicted_validity"] = alignment_validity(models, alignment, values, training)
        report["predicted_follows"] = alignment_follows(models, alignment, initial, values, training)
    if exceptional_point is not None:
        report["exceptional_point"] = exceptional_point
    return RaceReport.from_json(report)
