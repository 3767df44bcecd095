"""The report behind ``gdln simulate``: training the ReLU network or a GDLN with explicit gates."""

from __future__ import annotations

import io

import numpy as np

from gdln.derive.errors import SpecError
from gdln.derive.spec import Task
from gdln.numeric.prediction import (
    TaskPredictions,
)
from gdln.numeric.sharding import device_count
from gdln.numeric.training import gdln_layout, train_gdln, train_relu

from .checks import check_training_size, check_values
from .entries import epoch_grid, parameter_entry, parameter_vector
from .files import CURVES_SUFFIXES, write_atomic
from .reports import SimulateReport
from .rules import finite_crossing


def training_settings(task: Task, seeds: int | None, epochs: int | None):
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
    training = training_settings(task, seeds, epochs)
    check_training_size(task, training, model)
    inputs, targets = models.dataset(parameter_vector(task, values))
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
) -> SimulateReport:
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
        write_atomic(out, buffer.getvalue(), "--out", CURVES_SUFFIXES)
    diverged = " (gradient descent diverged or overflowed)"
    notes = [note for k, row in enumerate(losses) if (note := divergence_note(f"seed {k}", ts, row, diverged))]
    report = {
        "model": model,
        "parameters": parameter_entry(values),
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
    return SimulateReport.from_json(report)
