"""Figures 3, 4 and 5 of "Make Haste Slowly": the context task.

Figure 3: the Section 4 dataset and the gates of the winning ReLN's pathways.
Figure 4: (a) loss of the ReLU network, the ReLN trained with explicit gates, the theory
(exact reduced flow from the widths) and the aligned GDLN (the runs' own settled gate
patterns, from their alignment phase, followed by gradient descent); (b) singular values of each pathway's map along the flow; (c) MDS of
the ReLU and ReLN hidden representations.
Figure 5: K = 3, 4, 5 with a hierarchy in every block: the staged closed-form singular values
(common pathway, then one shared trajectory per class of the symmetric context pathways),
and losses of theory and ReLU runs. Every theory curve starts from the pathway widths and
the init scale, or from the ReLU runs' initial weights; nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Figures are built on matplotlib's object API (Figure, no pyplot): no global backend is
# chosen or needed here, and nothing is left open in pyplot's figure manager.
from matplotlib.figure import Figure

from gdln.derive.spec import Task, task_from_dict
from gdln.derive.tasks import context_task
from gdln.numeric.prediction import TaskPredictions, loss_of_staged_maps, staged_maps
from gdln.verify.files import save_figure
from gdln.verify.reports import (
    aligned_candidate,
    candidate_predictions,
    epoch_grid,
    predicted_relu_curves,
    race_report,
    relu_alignment,
    theory_stride,
    train_network,
)
from gdln.verify.representations import classical_mds, hidden_layers


def section4_task() -> Task:
    """The Section 4 task (``examples/section4_context.toml``), built through the Python API."""
    return task_from_dict(context_task(8, 3, ["hierarchy", "ring", "cross"], "context-subsets"), "section 4 task")


def section5_task(contexts: int) -> Task:
    """The Section 5 task with ``contexts`` contexts and a hierarchy in every block."""
    return task_from_dict(
        context_task(8, contexts, ["hierarchy"] * contexts, "context-subsets"), f"section 5 task, K = {contexts}"
    )


def _save(fig, out: Path, name: str) -> Path:
    fig.tight_layout()
    path = save_figure(fig, out / name)
    return path


def figure3(out: Path, quick: bool = False) -> Path:
    task = section4_task()
    winner = race_report(task)["winner"]
    network = task.network(winner)
    fig = Figure(figsize=(13, 4.5))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 3, 1.2]})
    axes[0].imshow(np.array(task.inputs, dtype=float), aspect="auto", cmap="Greys")
    axes[0].set_title("inputs (item | context)")
    axes[0].set_ylabel("datapoint (context-major)")
    axes[1].imshow(np.array(task.targets, dtype=float), aspect="auto", cmap="Greys")
    axes[1].set_title("targets (common | context blocks)")
    gates = np.array([[n in p.active for p in network.pathways] for n in range(task.num_datapoints)], dtype=float)
    axes[2].imshow(gates, aspect="auto", cmap="Blues")
    axes[2].set_xticks(range(len(network.pathways)), [p.name for p in network.pathways], rotation=60, fontsize=7)
    axes[2].set_title(f"gates of {winner} (race winner)")
    fig.suptitle(task.title)
    return _save(fig, out, "figure3.png")


def figure4(out: Path, quick: bool = False) -> Path:
    task = section4_task()
    models = TaskPredictions(task)
    winner = race_report(task, models=models)["winner"]
    seeds = 1 if quick else task.training.seeds
    relu, values, training = train_network(task, "relu", seeds=seeds, models=models)
    reln, _, _ = train_network(task, winner, seeds=seeds, models=models)
    stride = theory_stride(training.epochs)
    ts = np.asarray(epoch_grid(training.epochs, stride))
    prediction = models.prediction(winner)  # the reduced flow here: its pathways interact
    theory = prediction.loss_curve(ts, training.init_scale, training.tau, [])
    # the GDLN of the ReLU runs' own settled gate patterns, from their alignment phase (no fit)
    alignment = relu_alignment(models, relu.initial, values, training)
    aligned = aligned_candidate(models, alignment)
    predictors = candidate_predictions(models, (aligned,))
    aligned_curves = predicted_relu_curves(
        models, {aligned.name: predictors[aligned.name]}, relu.initial, values, training, ts, alignment=alignment
    )
    strengths = prediction.strength_curves(ts, training.init_scale, training.tau, [])

    fig = Figure(figsize=(15, 4.5))
    ax_a, ax_b, ax_c = fig.subplots(1, 3)
    ax_a.plot(ts, np.asarray(relu.losses).mean(axis=0)[::stride], color="tab:red", label="ReLU network")
    ax_a.plot(ts, np.asarray(reln.losses).mean(axis=0)[::stride], color="tab:blue", label=f"ReLN {winner} (trained)")
    ax_a.plot(ts, theory, color="black", linestyle="--", label=f"theory ({prediction.kind}, from widths)")
    ax_a.plot(
        ts,
        aligned_curves[aligned.name],
        color="tab:green",
        linestyle=":",
        label=f"aligned GDLN ({len(aligned.pathways)} settled patterns; alignment phase, descent)",
    )
    ax_a.set_xlabel("epoch")
    ax_a.set_ylabel("loss")
    ax_a.set_title("(a) loss")
    ax_a.legend(fontsize=8)
    for name, values_t in strengths.items():
        lines = ax_b.plot(ts, np.asarray(values_t)[:, :4], alpha=0.8)
        lines[0].set_label(name)
        for line in lines[1:]:
            line.set_color(lines[0].get_color())
    ax_b.set_xlabel("epoch")
    ax_b.set_ylabel("singular value of $W_p$")
    ax_b.set_title("(b) singular values per pathway (4 largest)")
    ax_b.legend(fontsize=7)
    inputs, _ = models.dataset([])
    relu_hidden_layer, reln_hidden_layer = hidden_layers(task, relu, reln, winner, inputs)
    coordinates = {"ReLU": classical_mds(relu_hidden_layer), f"ReLN {winner}": classical_mds(reln_hidden_layer)}
    markers = {"ReLU": "o", f"ReLN {winner}": "x"}
    contexts = np.asarray(task.contexts)
    for label, xy in coordinates.items():
        xy = xy / np.abs(xy).max()
        ax_c.scatter(xy[:, 0], xy[:, 1], c=contexts, cmap="viridis", marker=markers[label], label=label)
    ax_c.set_title("(c) MDS of hidden representations (colour: context)")
    ax_c.legend(fontsize=8)
    fig.suptitle(task.title)
    return _save(fig, out, "figure4.png")


def figure5(out: Path, quick: bool = False) -> Path:
    contexts = [3] if quick else [3, 4, 5]
    fig = Figure(figsize=(5 * len(contexts), 8))
    axes = fig.subplots(2, len(contexts), squeeze=False)
    for column, k in enumerate(contexts):
        task = section5_task(k)
        models = TaskPredictions(task)
        name = f"common+{k - 1}"
        training = task.training
        stride = theory_stride(training.epochs)
        ts = np.asarray(epoch_grid(training.epochs, stride))
        stages = models.stages(name)
        ax_s = axes[0, column]
        # the staged approximation: one definition (numeric.prediction), shared with race --staged
        maps = staged_maps(stages, ts, training.init_scale, training.tau, [])
        first = stages[0].derivation.network.pathways[0].name
        for pathway, m in maps.items():
            values_t = np.asarray(np.linalg.svd(np.asarray(m), compute_uv=False))
            ax_s.plot(ts, values_t[:, :4], color="tab:blue" if pathway == first else "tab:green", alpha=0.8)
        ax_s.set_title(
            f"K = {k}: staged mode strengths ({stages[0].kind}, then {stages[1].kind})\nblue: common; green: context pathways",
            fontsize=10,
        )
        ax_s.set_xlabel("epoch")
        exact = models.prediction(name).loss_curve(ts, training.init_scale, training.tau, [])
        staged_loss = loss_of_staged_maps(models.prediction(name), maps, [])  # the maps drawn above
        relu, _, _ = train_network(task, "relu", seeds=1 if quick else training.seeds, models=models)
        ax_l = axes[1, column]
        ax_l.plot(ts, np.asarray(relu.losses).mean(axis=0)[::stride], color="tab:red", label="ReLU network")
        ax_l.plot(ts, exact, color="black", linestyle="--", label=f"{name}: {models.prediction(name).kind}")
        ax_l.plot(ts, staged_loss, color="tab:green", linestyle=":", label=f"{name}: staged approximation")
        ax_l.set_xlabel("epoch")
        ax_l.set_ylabel("loss")
        ax_l.legend(fontsize=7)
    fig.suptitle("Section 5: hierarchy in every context block")
    return _save(fig, out, "figure5.png")
