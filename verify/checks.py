"""Checks of a task at the parameter values in use, made before any training or integration.

- every data entry is real, finite and of a sane size (:func:`derive.spec.check_data`, run by
  ``Task.values``);
- no pathway mode has a zero effective input variance ``d`` while its singular value ``s``
  does not vanish (the theory's prediction would be undefined);
- a learning rate at which gradient descent diverges on the theory's own curvature gets a
  :class:`GdlnWarning` (an error where the user asks for strictness, ``--strict``);
- training runs stay within memory: seeds x epochs loss values, seeds x weights, and
  seeds x datapoints x hidden units activations.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np

from gdln.derive.errors import SpecError
from gdln.derive.spec import (
    MAX_ACTIVATIONS,
    MAX_EPOCHS,
    MAX_LOSS_VALUES,
    MAX_SEEDS,
    MAX_WEIGHTS,
    Network,
    Task,
    Training,
    evaluate,
)

_VANISHING = 1e-12


class GdlnWarning(UserWarning):
    """A one-line warning about the user's input; ``gdln --strict`` turns it into an error."""


def parameters_in_words(values: Mapping) -> str:
    """``"Delta = 1, g = 0.5"``: the parameter values where a message or a comment names them."""
    return ", ".join(f"{s.name} = {v:g}" for s, v in values.items())


def check_values(
    task: Task, overrides: Mapping[str, float] | None = None, models=None, derivations: bool = True
) -> dict:
    """The parameter values in use, after every check that can be made on them; ``models``
    (:class:`numeric.prediction.TaskPredictions`) lets the input-variance check reuse derivations."""
    values = task.values(overrides)
    if derivations and models is not None:
        here, values_here, _ = models.at(values)  # at the point where the generic derivation fails there
        check_input_variances(here.task, values_here, here)
    warn_learning_rate(task, values)
    return values


def numeric_data(task: Task, values: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets at ``values`` as float arrays (entries are checked real and finite)."""

    def matrix(m):
        return np.array([[evaluate(m[r, c], values).real for c in range(m.cols)] for r in range(m.rows)], dtype=float)

    return matrix(task.inputs), matrix(task.targets)


def check_input_variances(task: Task, values: Mapping, models) -> None:
    """Refuse a mode whose effective input variance vanishes at ``values`` while its singular
    value does not: its strength would grow without bound (the closed form divides by d)."""
    _, targets = numeric_data(task, values)
    # Cauchy-Schwarz: s = E[(u.y)(v.x)] <= sqrt(E[(u.y)^2] d), so s^2 <= d max_n ||y_n||^2 holds
    # exactly. A mode that breaks it by more than rounding has d = 0 with s != 0 (a pole of the
    # closed form); a tiny d with a tiny s (XoR at Delta = 1e-6) is legitimate.
    target_scale = float(np.max(np.sum(targets**2, axis=1))) if targets.size else 0.0
    for network in task.networks:
        derivation = models.derivation(network.name)
        scales = models.mode_scales(network.name, [values[p] for p in derivation.parameters])
        for pathway_derivation, (singular, variance) in zip(derivation.pathways, scales):
            key = f"network[{network.name}].pathway[{pathway_derivation.name}]"
            for k in range(len(pathway_derivation.modes)):
                s, d = abs(float(singular[k])), float(variance[k])
                if not (math.isfinite(s) and math.isfinite(d)):
                    raise SpecError(task.source, key, f"mode {k} has no finite value at {parameters_in_words(values)}")
                if s > 0 and not s * s <= 2.0 * max(d, 0.0) * target_scale:
                    raise SpecError(
                        task.source,
                        key,
                        f"effective input variance d of mode {k} is zero at {parameters_in_words(values)} while its singular value "
                        f"s = {s:.6g} is not: the theory's prediction is undefined there",
                    )


def _curvatures(inputs, targets, active, columns, rows, depth) -> tuple[float, float]:
    """Largest effective input variance of a pathway, and the largest curvature of its modes at
    their fixed points, ``D (s/d)^(2-2/D) d`` (the race ODE linearised at a = s/d)."""
    count = inputs.shape[0]
    x = inputs[np.ix_(active, columns)]
    y = targets[np.ix_(active, rows)]
    sigma_x = x.T @ x / count
    sigma_yx = y.T @ x / count
    largest_d = float(np.max(np.linalg.eigvalsh(sigma_x))) if sigma_x.size else 0.0
    _, singular, vt = np.linalg.svd(sigma_yx, full_matrices=False)
    largest_mode = 0.0
    for s, v in zip(singular, vt):
        d = float(v @ sigma_x @ v)
        if s > _VANISHING * max(1.0, largest_d) and d > 0:
            largest_mode = max(largest_mode, depth * (s / d) ** (2 - 2 / depth) * d)
    return largest_d, largest_mode


def learning_rate_curvature(task: Task, values: Mapping) -> tuple[float, str]:
    """The largest curvature of the theory's dynamics over the task's networks (and the ReLU
    network, as one pathway of depth 2 on all data), and where it occurs."""
    return data_curvature(task, *numeric_data(task, values))


def data_curvature(task: Task, inputs: np.ndarray, targets: np.ndarray) -> tuple[float, str]:
    """:func:`learning_rate_curvature` on numeric data (``(N, inputs)``, ``(N, outputs)``)."""
    everything = list(range(task.num_datapoints))
    d, mode = _curvatures(inputs, targets, everything, list(range(task.num_inputs)), list(range(task.num_outputs)), 2)
    best = (max(d, mode), "the ReLU network")
    for network in task.networks:
        for pathway in network.pathways:
            d, mode = _curvatures(
                inputs, targets, list(pathway.active), list(pathway.inputs), list(pathway.outputs), pathway.depth
            )
            if max(d, mode) > best[0]:
                best = (max(d, mode), f"network {network.name!r}, pathway {pathway.name!r}")
    return best


def descent_is_stable(learning_rate: float, curvature: float) -> bool:
    """Whether gradient descent at ``learning_rate`` stays on the flow's side of its fixed points:
    ``learning_rate <= 2 / curvature`` (the step at which a direction of that curvature overshoots)."""
    return not (curvature > 0 and learning_rate * curvature > 2)


def warn_learning_rate(task: Task, values: Mapping) -> None:
    """Warn when ``learning_rate > 2 / curvature``: discrete gradient descent then overshoots the
    theory's fixed points (the largest of the effective input variances d and the mode curvatures)."""
    curvature, where = learning_rate_curvature(task, values)
    rate = task.training.learning_rate
    if not descent_is_stable(rate, curvature):
        warnings.warn(
            f"{task.source}: training.learning_rate: {rate:g} is above 2/curvature = {2 / curvature:.4g} "
            f"({where}): gradient descent is expected to diverge and the theory does not describe it",
            GdlnWarning,
            stacklevel=3,
        )


def trained_size(network: Network) -> tuple[int, int]:
    """``(weights, hidden units)`` of ``network`` as it is trained: a graph whose paths share edges
    has one matrix per edge (``numeric.graph_network``); a set of modules, or a graph of private
    chains (the same thing), one chain of matrices per pathway (``numeric.training``)."""
    graph = network.graph
    if graph is not None and network.shared:
        weights = sum(graph.node(e.source).size * graph.node(e.target).size for e in graph.edges)
        return weights, sum(node.size for node in graph.nodes if node.role == "hidden")
    pathways = network.pathways
    weights = sum(
        p.units * len(p.inputs) + p.units * p.units * (p.hidden_layers - 1) + len(p.outputs) * p.units for p in pathways
    )
    return weights, sum(p.units * p.hidden_layers for p in pathways)


def check_training_size(task: Task, training: Training, model: str = "relu") -> None:
    """Refuse training runs whose arrays would not fit in memory (limits in the README)."""
    source = task.source
    if training.seeds > MAX_SEEDS:
        raise SpecError(source, "seeds", f"{training.seeds} is above the limit of {MAX_SEEDS}")
    if training.epochs > MAX_EPOCHS:
        raise SpecError(source, "epochs", f"{training.epochs} is above the limit of {MAX_EPOCHS}")
    if training.seeds * (training.epochs + 1) > MAX_LOSS_VALUES:
        raise SpecError(
            source,
            "training",
            f"seeds x (epochs + 1) = {training.seeds * (training.epochs + 1):.3g} loss values, above the limit of {MAX_LOSS_VALUES:g}",
        )
    if model == "relu":
        weights = training.hidden_units * (task.num_inputs + task.num_outputs)
        hidden = training.hidden_units
    else:
        weights, hidden = trained_size(task.network(model))
    if training.seeds * weights > MAX_WEIGHTS:
        raise SpecError(
            source, "training", f"seeds x weights = {training.seeds * weights:.3g}, above the limit of {MAX_WEIGHTS:g}"
        )
    if training.seeds * task.num_datapoints * hidden > MAX_ACTIVATIONS:
        raise SpecError(
            source,
            "training",
            f"seeds x datapoints x hidden units = {training.seeds * task.num_datapoints * hidden:.3g}, "
            f"above the limit of {MAX_ACTIVATIONS:g}",
        )
