"""Figures 3, 4 and 5 of "Make Haste Slowly": the context task.

Figure 3: the Section 4 dataset and the gates of the winning ReLN's pathways.
Figure 4: (a) loss of the ReLU network, the ReLN trained with explicit gates, and the theory
(exact reduced flow); (b) singular values of each pathway's map along the flow; (c) MDS of
the ReLU and ReLN hidden representations.
Figure 5: K = 3, 4, 5 with a hierarchy in every block: the staged closed-form singular values
(common pathway, then one shared trajectory per class of the symmetric context pathways),
and losses of theory and ReLU runs. Every curve starts from the pathway widths and the
init scale; nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from derive.spec import load_spec  # noqa: E402
from numeric.race import CompiledNetwork, closed_form_maps  # noqa: E402
from numeric.reduced_flow import loss_of_maps  # noqa: E402
from verify.initial_conditions import expected_initial_strengths, pathway_initial_strengths  # noqa: E402
from verify.files import save_figure  # noqa: E402
from verify.models import TaskModels  # noqa: E402
from verify.reports import epoch_grid, predicted_curve, race_report, simulate, theory_stride  # noqa: E402
from verify.representations import classical_mds, hidden_layers  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SECTION4 = EXAMPLES / "section4_context.toml"


def _save(fig, out: Path, name: str) -> Path:
    fig.tight_layout()
    path = save_figure(fig, out / name)
    plt.close(fig)
    return path


def figure3(out: Path, quick: bool = False) -> Path:
    task = load_spec(SECTION4)
    winner = race_report(task)["winner"]
    network = task.network(winner)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.5), gridspec_kw={"width_ratios": [1, 3, 1.2]})
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
    task = load_spec(SECTION4)
    models = TaskModels(task)
    winner = race_report(task, models=models)["winner"]
    seeds = 1 if quick else task.training.seeds
    relu, values, training = simulate(task, "relu", seeds=seeds, models=models)
    reln, _, _ = simulate(task, winner, seeds=seeds, models=models)
    stride = theory_stride(training.epochs)
    ts = np.asarray(epoch_grid(training.epochs, stride))
    flow = models.flow(winner)
    trajectory = flow.trajectory(ts, pathway_initial_strengths(flow.derivation.network, training.init_scale), training.tau, [])

    fig, (ax_a, ax_b, ax_c) = plt.subplots(1, 3, figsize=(15, 4.5))
    ax_a.plot(ts, np.asarray(relu.losses).mean(axis=0)[::stride], color="tab:red", label="ReLU network")
    ax_a.plot(ts, np.asarray(reln.losses).mean(axis=0)[::stride], color="tab:blue", label=f"ReLN {winner} (trained)")
    ax_a.plot(ts, np.asarray(trajectory.loss), color="black", linestyle="--", label="theory (reduced flow)")
    ax_a.set_xlabel("epoch")
    ax_a.set_ylabel("loss")
    ax_a.set_title("(a) loss")
    ax_a.legend(fontsize=8)
    for pathway, values_t in zip(flow.pathways, trajectory.singular_values):
        lines = ax_b.plot(ts, np.asarray(values_t)[:, :4], alpha=0.8)
        lines[0].set_label(pathway.name)
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
    fig, axes = plt.subplots(2, len(contexts), figsize=(5 * len(contexts), 8), squeeze=False)
    for column, k in enumerate(contexts):
        task = load_spec(EXAMPLES / f"section5_k{k}.toml")
        models = TaskModels(task)
        name = f"common+{k - 1}"
        staged = models.staged(name)
        training = task.training
        stride = theory_stride(training.epochs)
        ts = np.asarray(epoch_grid(training.epochs, stride))
        maps = {}
        ax_s = axes[0, column]
        for stage in (staged.first_stage, staged.second_stage):
            compiled = CompiledNetwork(stage)
            a0 = expected_initial_strengths(compiled, training.init_scale)
            strengths = np.asarray(compiled.strengths(ts, a0, training.tau, []))
            shown = {}
            for column_index, ref in enumerate(stage.mode_refs):
                key = (stage.network.pathways[ref.pathway].name if len(stage.symmetric_groups) > 1 or stage is staged.first_stage else "context pathways", round(float(stage.mode(ref).s), 9))
                shown.setdefault(key, column_index)
            for index in shown.values():
                ax_s.plot(ts, strengths[:, index], color="tab:blue" if stage is staged.first_stage else "tab:green", alpha=0.8)
            maps.update(closed_form_maps(compiled, ts, a0, training.tau, []))
        ax_s.set_title(f"K = {k}: closed-form mode strengths\nblue: common; green: context group", fontsize=10)
        ax_s.set_xlabel("epoch")
        exact = predicted_curve(models, name, ts, task.values(), training.init_scale)
        staged_loss = np.asarray(loss_of_maps(models.flow(name), maps, []))
        relu, _, _ = simulate(task, "relu", seeds=1 if quick else training.seeds, models=models)
        ax_l = axes[1, column]
        ax_l.plot(ts, np.asarray(relu.losses).mean(axis=0)[::stride], color="tab:red", label="ReLU network")
        ax_l.plot(ts, exact, color="black", linestyle="--", label=f"{name}: exact reduced flow")
        ax_l.plot(ts, staged_loss, color="tab:green", linestyle=":", label=f"{name}: staged closed forms")
        ax_l.set_xlabel("epoch")
        ax_l.set_ylabel("loss")
        ax_l.legend(fontsize=7)
    fig.suptitle("Section 5: hierarchy in every context block")
    return _save(fig, out, "figure5.png")
