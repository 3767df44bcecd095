"""The reports behind ``gdln verify`` and ``gdln align``: the ReLU network trained, the
candidates' predictions beside it, and which one it follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax import Array

from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import SpecError
from gdln.derive.spec import Network, Task
from gdln.derive.words import plural
from gdln.numeric.agf import NEGLECTED_FRACTION, agf_losses
from gdln.numeric.alignment import OUTPUT_FRACTION, Alignment, align, aligned_network
from gdln.numeric.initial_conditions import ALIGNMENT, MODELS, WEIGHTS, InitialConditions, unmatched_units
from gdln.numeric.prediction import (
    GRADIENT_DESCENT,
    GRADIENT_FLOW,
    REDUCED_FLOW,
    TIME_MODELS,
    Prediction,
    TaskPredictions,
    TimeModel,
)
from gdln.numeric.training import initial_relu_weights

from . import rules
from .checks import check_training_size, check_values, parameters_in_words
from .entries import epoch_grid, parameter_entry, parameter_vector, theory_stride
from .progress import Stages
from .reports import AlignReport, VerifyReport
from .representations import gate_census, hidden_layers, mds_comparison
from .rules import (
    VALIDITY,
    finite_crossing,
    follow_resolution,
    followed_candidate,
    frozen_gates_hold,
    predicted_validity,
    within_validity,
)
from .simulation import deviations, divergence_note, train_network, training_settings


def relu_initial_weights(task: Task, training):
    """The initial weights of the task's ReLU runs, one per seed: those ``train_network`` starts from."""
    return initial_relu_weights(
        training.hidden_units, task.num_inputs, task.num_outputs, training.init_scale, range(training.seeds)
    )


def relu_alignment(models: TaskPredictions, initial_weights, values: Mapping, training) -> Alignment:
    """The alignment phase of ReLU runs from their initial weights ``(W1s, W2s)`` alone, at the
    training step and cut at the training horizon."""
    inputs, targets = models.dataset(parameter_vector(models.task, values))
    w1s, w2s = initial_weights
    return align(inputs, targets, w1s, w2s, training.learning_rate, horizon=training.epochs)


def alignment_validity(models: TaskPredictions, alignment: Alignment, values: Mapping, training) -> dict:
    """The theory's own verdict on where it holds, from the alignment phase of the ReLU runs and
    no training (:func:`verify.rules.predicted_validity`): each seed's settled units continued
    with their gates frozen until the gates move, the loss settles or the horizon comes."""
    inputs, targets = models.dataset(parameter_vector(models.task, values))
    seeds = len(alignment.epochs)
    starts = np.asarray(alignment.epochs, dtype=np.int64)
    initial = np.asarray(alignment.losses)[:, 0]
    hold = frozen_gates_hold(
        np.repeat(np.asarray(inputs)[None], seeds, axis=0),
        np.repeat(np.asarray(targets)[None], seeds, axis=0),
        alignment.w1,
        alignment.w2,
        alignment.gates,
        np.full(seeds, training.learning_rate),
        training.epochs - starts,
        initial,
    )
    return predicted_validity(hold, starts, initial)


def alignment_follows(models: TaskPredictions, alignment: Alignment, initial, values: Mapping, training) -> dict:
    """`verify.rules.predicted_follows` from the alignment phase alone, as ``verify`` makes it
    before it trains: each candidate and the aligned GDLN continued from the settled units by
    gradient descent at the training step, over the whole run."""
    ts = epoch_grid(training.epochs, theory_stride(training.epochs))
    aligned = aligned_candidate(models, alignment)
    curves = predicted_relu_curves(
        models, candidate_predictions(models, (aligned,)), initial, values, training, ts, alignment=alignment
    )
    model = curves.pop(aligned.name)
    return rules.predicted_follows(curves, model, alignment.epochs)


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
    initial_conditions: InitialConditions = ALIGNMENT,
    time_model: TimeModel = GRADIENT_DESCENT,
    alignment: Alignment | None = None,
) -> dict[str, np.ndarray]:
    """Each of ``predictions``' loss curve for ReLU runs with ``initial_weights = (W1s, W2s)``
    at epochs ``ts``, from the initial conditions named by ``initial_conditions``
    (:data:`numeric.initial_conditions.MODELS`). Only the initial weights enter: nothing is
    fitted to the ReLU losses."""
    vector = parameter_vector(models.task, values)
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


#: how ``verify``'s JSON names the Alternating Gradient Flows model's dynamics
AGF_DYNAMICS = "alternating gradient flows"


def agf_prediction(models: TaskPredictions, initial_weights, values: Mapping, training, stride: int) -> dict:
    """The Alternating Gradient Flows model (:mod:`numeric.agf`) of ReLU runs with
    ``initial_weights = (W1s, W2s)``, from those weights alone: the seeds' mean loss every
    ``stride`` epochs, the units each seed activated and the epoch of its first activation."""
    inputs, targets = models.dataset(parameter_vector(models.task, values))
    w1s, w2s = initial_weights
    run = agf_losses(w1s, w2s, inputs, targets, training.learning_rate, training.epochs)
    activated = run.activated_at >= 0
    return {
        "curve": np.mean(run.losses, axis=0)[::stride],
        "activated_units": [int(n) for n in np.sum(activated, axis=1)],
        "first_activation": [int(np.min(a[a >= 0])) if np.any(a >= 0) else None for a in run.activated_at],
    }


def agf_entry(model: dict, ts, relu) -> dict:
    """The AGF model against the ReLU network, as ``verify``'s JSON gives it (``"agf"``)."""
    curve = model["curve"]
    entry = {
        "dynamics": AGF_DYNAMICS,
        "neglected_fraction": NEGLECTED_FRACTION,
        **deviations(curve, relu),
        "t_half_predicted": finite_crossing(ts, curve, 0.5),
        "t_half_relu": finite_crossing(ts, relu, 0.5),
        "activated_units": model["activated_units"],
        "first_activation": model["first_activation"],
    }
    entry["within_validity"] = within_validity(entry["max_deviation"])
    return entry


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


def found_network_comment(what: str, values: Mapping, seeds: int, command: str) -> str:
    """The comment above a found network's ``[[network]]`` table: what it is, at which parameter
    values, over how many seeds, and the command that found it."""
    where = parameters_in_words(values) or "no parameters"
    return f"{what} ({where}; {plural(seeds, 'seed')}), from gdln {command}"


def align_report(task: Task, overrides=None, seeds: int | None = None) -> tuple[AlignReport, str]:
    """The alignment phase of the ReLU network from its initial weights (no training): the
    settled patterns and, per candidate, the units that match none of its pathways; and the
    patterns' GDLN as a ``[[network]]`` table."""
    models = TaskPredictions(task)
    check_values(task, overrides, derivations=False)
    values = task.values(overrides)
    training = training_settings(task, seeds, None)
    check_training_size(task, training, "relu")
    initial = relu_initial_weights(task, training)
    alignment = relu_alignment(models, initial, values, training)
    network = aligned_candidate(models, alignment)
    report = {"parameters": parameter_entry(values), "seeds": training.seeds}
    report.update(alignment_entry(alignment, [*task.networks, network]))
    report["network"] = network.name
    comment = found_network_comment("settled gate patterns of the alignment phase", values, training.seeds, "align")
    return AlignReport.from_json(report), network_toml(network, comment)


def check_prediction_models(
    task: Task, initial_conditions: InitialConditions | str, time_model: TimeModel | str | None
) -> tuple[InitialConditions, TimeModel]:
    """The initial conditions and the time model to use, as their types (a text is read as
    the CLI's flag is); one line naming the flag when either is unknown or the pair is not offered."""
    if initial_conditions not in MODELS:
        raise SpecError(task.source, "--initial-conditions", f"must be one of {', '.join(MODELS)}")
    initial_conditions = InitialConditions(initial_conditions)
    if time_model is None:
        return initial_conditions, GRADIENT_DESCENT if initial_conditions == ALIGNMENT else GRADIENT_FLOW
    if time_model not in TIME_MODELS:
        raise SpecError(task.source, "--time", f"must be one of {', '.join(TIME_MODELS)}")
    if time_model == GRADIENT_DESCENT and initial_conditions != ALIGNMENT:
        raise SpecError(
            task.source,
            "--time",
            "gradient descent is followed from the alignment phase only (--initial-conditions alignment)",
        )
    return initial_conditions, TimeModel(time_model)


#: training decides which candidate it follows when the followed one's largest deviation beats
#: the runner-up's by at least this many standard errors of the seeds' mean loss (about 95%
#: confidence for a normal spread); closer than that, other seeds could reverse the order


@dataclass(frozen=True)
class _Theory:
    """What `verify_report` predicts before training, from the runs' initial weights alone.

    Attributes:
        ts: the epochs of the curves (every ``stride``-th of the run's).
        predictors: each candidate's prediction engine, by name (the aligned GDLN's too).
        predictions: each candidate's predicted loss curve at ``ts``, by name.
        extra: the candidates the theory adds (the aligned GDLN, with ``alignment``).
        alignment: the runs' alignment phase, or ``None`` from other initial conditions.
        predicted_validity: the theory's verdict on where it holds (with ``alignment``).
        predicted_follows: the candidate predicted to be followed (with ``alignment``).
        agf: the Alternating Gradient Flows model (with ``agf``), else ``None``."""

    ts: Array
    predictors: dict[str, Prediction]
    predictions: dict[str, np.ndarray]
    extra: tuple[Network, ...]
    alignment: Alignment | None
    predicted_validity: dict | None
    predicted_follows: dict | None
    agf: dict | None


def _predict(
    models: TaskPredictions,
    values: Mapping,
    training,
    stride: int,
    initial_conditions: InitialConditions,
    time_model: TimeModel,
    agf: bool,
    step: Stages,
) -> _Theory:
    """Every prediction of `verify_report`, made from the runs' initial weights before any
    training: the alignment phase (with ``alignment``), each candidate's curve, the predicted
    validity and followed candidate, and the AGF model (with ``agf``)."""
    initial = relu_initial_weights(models.task, training)
    ts = epoch_grid(training.epochs, stride)
    alignment: Alignment | None = None
    extra: tuple[Network, ...] = ()
    if initial_conditions == ALIGNMENT:
        step("alignment phase of the ReLU runs")
        alignment = relu_alignment(models, initial, values, training)
        extra = (aligned_candidate(models, alignment),)
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
    predicted = follows = None
    if alignment is not None:
        predicted = alignment_validity(models, alignment, values, training)
        candidates = {name: curve for name, curve in predictions.items() if name not in {n.name for n in extra}}
        follows = rules.predicted_follows(candidates, predictions[extra[0].name], alignment.epochs)
    agf_model = None
    if agf:
        step("the alternating gradient flows model from the initial weights")
        agf_model = agf_prediction(models, initial, values, training, stride)
    return _Theory(ts, predictors, predictions, extra, alignment, predicted, follows, agf_model)


def _network_entries(theory: _Theory, relu: np.ndarray) -> list[dict[str, Any]]:
    """Each candidate's prediction against the trained curve ``relu``: deviations, times to
    half, its dynamics, whether the theory added it, and whether it is within validity."""
    from_alignment = {n.name for n in theory.extra}
    networks: list[dict[str, Any]] = [
        {
            "name": name,
            **deviations(curve, relu),
            "t_half_predicted": finite_crossing(theory.ts, curve, 0.5),
            "t_half_relu": finite_crossing(theory.ts, relu, 0.5),
            "dynamics": theory.predictors[name].kind,
            "from_alignment": name in from_alignment,
        }
        for name, curve in theory.predictions.items()
    ]
    for network in networks:  # every level of the theory judged by the one threshold
        network["within_validity"] = within_validity(network["max_deviation"])
    return networks


def _report_notes(theory: _Theory, relu: np.ndarray, follow_notes: list[str]) -> list[str]:
    """The report's notes: a diverged training run or prediction, then why none is followed
    (``follow_notes``), then a diverged AGF model."""
    ts = theory.ts
    notes = [divergence_note("ReLU network", ts, relu, " (gradient descent diverged or overflowed)")]
    notes += [divergence_note(f"prediction of {name}", ts, curve) for name, curve in theory.predictions.items()]
    notes += follow_notes
    if theory.agf is not None:
        notes.append(divergence_note("prediction of the AGF model", ts, theory.agf["curve"]))
    return [note for note in notes if note]


def _representations(
    task: Task,
    models: TaskPredictions,
    values: Mapping,
    run,
    follows: str | None,
    at_point,
    epochs,
    representations: bool,
) -> dict[str, Any]:
    """On a context task: the census of the trained ReLU network's hidden units and, with
    ``representations``, the MDS comparison with the followed candidate trained as a GDLN."""
    inputs, _ = models.dataset(parameter_vector(models.task, values))
    entries: dict[str, Any] = {"census": gate_census(task, inputs, *run.final)}
    if representations and follows is not None:
        reln, _, _ = train_network(models.task, follows, at_point, 1, epochs, models)
        entries["mds"] = {"network": follows, **mds_comparison(*hidden_layers(task, run, reln, follows, inputs))}
    return entries


def verify_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    *,
    seeds: int | None = None,
    epochs: int | None = None,
    models: TaskPredictions | None = None,
    representations: bool = True,
    initial_conditions: InitialConditions | str = ALIGNMENT,
    time_model: TimeModel | str | None = None,
    agf: bool = False,
) -> VerifyReport:
    """Train the ReLU network and say which candidate network it follows, and how closely;
    with ``data.contexts``, add the census of its hidden units and the MDS comparison with
    the followed candidate trained as a GDLN with explicit gates.

    Every prediction is computed from the runs' initial weights before the losses are read.
    With ``alignment`` the report adds the phase (``alignment``) and the GDLN of its settled
    patterns as the candidate ``aligned`` (``from_alignment`` true); ``follows`` is chosen
    among the spec's candidates.

    Args:
        task: the task and its candidate networks.
        overrides: parameter values that replace the spec's (name -> value).
        seeds: the ReLU seeds to train (default: the spec's).
        epochs: the epochs to train (default: the spec's).
        models: the task's derivations and compiled predictions, to reuse across calls.
        representations: on context tasks, also train the followed candidate and compare its
            hidden representations with the ReLU network's (MDS).
        initial_conditions: where the predictions start: ``alignment`` (the end of the ReLU
            runs' alignment phase), ``weights`` (their initial weights) or ``width``.
        time_model: ``gradient descent`` at the training step or ``gradient flow`` (default:
            gradient descent with ``alignment``, the only one offered otherwise being gradient flow).
        agf: also predict by the Alternating Gradient Flows model of the ReLU network
            (`numeric.agf`, from the initial weights at the training step, whatever the
            initial conditions of the candidates); reported as ``agf``, never the one followed.

    Returns:
        The comparison (`VerifyReport`; ``to_json()`` is ``gdln verify --json``).

    Raises:
        SpecError: for settings the task cannot train with, or a pair of initial conditions and
            time model that is not offered."""
    if not task.networks:
        raise SpecError(task.source, "network", "verification needs at least one [[network]]")
    initial_conditions, time_model = check_prediction_models(task, initial_conditions, time_model)
    point = task.values(overrides)
    # where the generic derivation fails at this point (derive.exceptional), derived at the point
    models, values, exceptional_point = (models or TaskPredictions(task)).at(point)
    check_values(models.task, None, models)
    training = training_settings(task, seeds, epochs)
    check_training_size(task, training, "relu")
    stride = theory_stride(training.epochs)
    step = Stages("verify", 2 + (initial_conditions == ALIGNMENT) + agf + (task.contexts is not None))
    theory = _predict(models, values, training, stride, initial_conditions, time_model, agf, step)
    step(f"training the ReLU network ({plural(training.seeds, 'seed')})")
    # the point's values on the task in use (none left where it is derived at the point)
    at_point = {symbol.name: value for symbol, value in values.items()}
    run, _, _ = train_network(models.task, "relu", at_point, seeds, epochs, models)
    relu = np.mean(np.asarray(run.losses), axis=0)[::stride]
    networks = _network_entries(theory, relu)
    follows, notes = followed_candidate(networks)
    report: dict[str, Any] = {
        "parameters": parameter_entry(point),
        "seeds": training.seeds,
        "epochs": training.epochs,
        "initial_conditions": initial_conditions,
        "time_model": time_model,
        "follows": follows,
        "resolution": follow_resolution(networks, follows, np.asarray(run.losses)[:, ::stride]),
        "validity": VALIDITY,
        "within_validity": next((n["within_validity"] for n in networks if n["name"] == follows), None),
        "networks": networks,
    }
    if theory.alignment is not None:
        report["alignment"] = alignment_entry(theory.alignment, [*task.networks, *theory.extra])
        report["predicted_validity"] = theory.predicted_validity
        report["predicted_follows"] = theory.predicted_follows
    if theory.agf is not None:
        report["agf"] = agf_entry(theory.agf, theory.ts, relu)
    if notes := _report_notes(theory, relu, notes):
        report["notes"] = notes
    if task.contexts is not None:
        step("census of the hidden units, and the followed candidate's representations")
        report |= _representations(task, models, values, run, follows, at_point, epochs, representations)
    if exceptional_point is not None:
        report["exceptional_point"] = exceptional_point
    step.close()
    return VerifyReport.from_json(report)
