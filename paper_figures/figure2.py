"""Figure 2 of "Make Haste Slowly": the XoR task with a linearly separable third dimension.

(d) time to learn (epochs to half the initial loss) against Delta: trained ReLU runs and
the predictions of both ReLNs, with the derived crossover Delta*; (e) loss curves for
several Delta. Solid: the prediction from each ReLU run's alignment phase, followed by
gradient descent at the training step (the default); dotted in (d), faint in (e): the earlier one, each mode
started from the initial weights and followed by gradient flow. Both come from the runs'
initial weights alone; nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Figures are built on matplotlib's object API (Figure, no pyplot): no global backend is
# chosen or needed here, and nothing is left open in pyplot's figure manager.
from matplotlib.figure import Figure

from gdln.derive.spec import task_from_dict
from gdln.derive.tasks import xor_task
from gdln.numeric.initial_conditions import WEIGHTS
from gdln.numeric.prediction import GRADIENT_FLOW, TaskPredictions
from gdln.numeric.race import crossing_time
from gdln.verify.files import save_figure
from gdln.verify.progress import progress
from gdln.verify.reports import candidate_predictions, epoch_grid, predicted_relu_curves, relu_alignment, train_network

COLOURS = {"relu": "tab:red", "linear": "tab:blue", "xor": "tab:orange"}


def crossover_value(models: TaskPredictions) -> float:
    found = models.crossovers("linear", "xor", models.task.values())
    return float(found[0].expr.evalf())


def figure2(out: Path, quick: bool = False) -> Path:
    task = task_from_dict(xor_task(), "xor task")
    models = TaskPredictions(task)
    delta_star = crossover_value(models)
    deltas = np.linspace(0.25, 4.0, 6 if quick else 16)
    curve_deltas = [0.5, round(delta_star, 2), 3.0]
    seeds = 2 if quick else task.training.seeds
    ts = np.asarray(epoch_grid(task.training.epochs))

    relu_times: list[list[float]] = []
    predicted_times: dict[str, list[float]] = {"linear": [], "xor": []}
    present_times: dict[str, list[float]] = {"linear": [], "xor": []}
    curves: dict = {}
    predictors = candidate_predictions(models)
    for delta in progress(sorted(set(deltas) | set(curve_deltas)), "figure 2: Delta", label=lambda d: f"{d:g}"):
        run, values, training = train_network(task, "relu", {"Delta": float(delta)}, seeds=seeds, models=models)
        losses = np.asarray(run.losses)
        alignment = relu_alignment(models, run.initial, values, training)
        predictions = predicted_relu_curves(models, predictors, run.initial, values, training, ts, alignment=alignment)
        present = predicted_relu_curves(
            models, predictors, run.initial, values, training, ts, initial_conditions=WEIGHTS, time_model=GRADIENT_FLOW
        )
        if delta in deltas:
            relu_times.append([crossing_time(ts, row, 0.5) for row in losses])
            for name in predicted_times:
                predicted_times[name].append(crossing_time(ts, predictions[name], 0.5))
                present_times[name].append(crossing_time(ts, present[name], 0.5))
        if delta in curve_deltas:
            curves[delta] = (losses.mean(axis=0), predictions, present)

    fig = Figure(figsize=(11, 4.2))
    ax_d, ax_e = fig.subplots(1, 2)
    for k, delta in enumerate(deltas):
        ax_d.scatter(
            [delta] * len(relu_times[k]),
            relu_times[k],
            color=COLOURS["relu"],
            s=14,
            label="ReLU runs" if k == 0 else None,
        )
    for name, times in predicted_times.items():
        ax_d.plot(deltas, times, color=COLOURS[name], label=f"{name} ReLN (alignment phase, descent)")
        ax_d.plot(
            deltas,
            present_times[name],
            color=COLOURS[name],
            linestyle=":",
            label=f"{name} ReLN (initial weights, flow)",
        )
    ax_d.axvline(delta_star, color="grey", linestyle="--", label=f"$\\Delta^* = {delta_star:.3f}$ (derived)")
    ax_d.set_xlabel("$\\Delta$")
    ax_d.set_ylabel("epochs to half the initial loss")
    ax_d.set_title("(d) time to learn")
    ax_d.legend(fontsize=8)

    styles = ["-", "--", ":"]
    for style, (delta, (relu, predictions, present)) in zip(styles, sorted(curves.items())):
        ax_e.plot(ts, relu, color=COLOURS["relu"], linestyle=style, label=f"ReLU, $\\Delta={delta:g}$")
        for name, curve in predictions.items():
            ax_e.plot(
                ts, curve, color=COLOURS[name], linestyle=style, alpha=0.8, label=f"{name} ReLN, $\\Delta={delta:g}$"
            )
            ax_e.plot(ts, present[name], color=COLOURS[name], linestyle=style, alpha=0.3, linewidth=0.8)
    ax_e.set_xlabel("epoch")
    ax_e.set_ylabel("loss")
    ax_e.set_title("(e) loss curves")
    ax_e.legend(fontsize=6, ncol=2)
    fig.suptitle(task.title)
    fig.tight_layout()
    path = save_figure(fig, out / "figure2.png")
    return path
