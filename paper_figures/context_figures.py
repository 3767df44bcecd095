"""Figures 3, 4 and 5 of "Make Haste Slowly": the context task.

Figure 3: the Section 4 dataset and the gates of the winning ReLN's pathways.
Figure 4: (a) loss of the ReLU network, the ReLN trained with explicit gates, the theory
(exact reduced flow from the widths) and the aligned GDLN (the runs' own settled gate
patterns, from their alignment phase, followed by gradient descent); (b) singular values of each
pathway's map along the flow; (c) MDS of the ReLU and ReLN hidden representations, the ReLN's
laid onto the ReLU's by Procrustes (rotation, reflection and scale), each datapoint's two points
joined.
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
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from scipy.spatial import procrustes

from gdln.derive.spec import Task, context_task, task_from_dict
from gdln.numeric.prediction import TaskPredictions, loss_of_staged_maps, staged_maps
from gdln.verify.entries import epoch_grid, theory_stride
from gdln.verify.files import save_figure
from gdln.verify.following import aligned_candidate, candidate_predictions, predicted_relu_curves, relu_alignment
from gdln.verify.progress import progress
from gdln.verify.race import race_report
from gdln.verify.representations import classical_mds, hidden_layers
from gdln.verify.simulation import train_network

from .style import GATE_COLOURS, figure, integer_ticks, key, line, panels_with_keys, relu_style, runs

#: one colour per context (Figures 3 and 4), colour-blind safe
CONTEXT_COLOURS = ["#0077bb", "#ee7733", "#009988", "#cc3311", "#33bbee", "#ee3377"]
#: one colour per pathway (Figure 4b), none of them a context's
PATHWAY_COLOURS = ["dimgray", "tab:purple", "tab:olive", "tab:brown", "tab:pink", "black"]


def section4_task() -> Task:
    """The Section 4 task (``examples/section4_context.toml``), built through the Python API."""
    return task_from_dict(context_task(8, 3, ["hierarchy", "ring", "cross"], "context-subsets"), "section 4 task")


def section5_task(contexts: int) -> Task:
    """The Section 5 task with ``contexts`` contexts and a hierarchy in every block."""
    return task_from_dict(
        context_task(8, contexts, ["hierarchy"] * contexts, "context-subsets"), f"section 5 task, K = {contexts}"
    )


def _blocks(targets: np.ndarray, contexts: np.ndarray) -> list[tuple[str, int, int]]:
    """The target blocks, ``(name, first column, last column + 1)``: columns on in every context
    are the common block, columns on in one context that context's block (a column that is never
    on belongs to the block before it)."""
    labels = sorted(set(contexts.tolist()))
    names: list[str] = []
    for column in targets.T:
        on = set(contexts[column != 0].tolist())
        if not on and names:
            names.append(names[-1])
        else:
            names.append("common" if on == set(labels) else "context " + ", ".join(str(c) for c in sorted(on)))
    blocks: list[tuple[str, int, int]] = []
    for j, name in enumerate(names):
        if blocks and blocks[-1][0] == name:
            blocks[-1] = (name, blocks[-1][1], j + 1)
        else:
            blocks.append((name, j, j + 1))
    return blocks


def _context_rows(ax, contexts: np.ndarray, label: bool) -> None:
    """Datapoints run down the rows, context after context: a rule between contexts, and the
    contexts named at the left."""
    labels = sorted(set(contexts.tolist()))
    starts = [int(np.flatnonzero(contexts == c)[0]) for c in labels]
    ends = [int(np.flatnonzero(contexts == c)[-1]) for c in labels]
    for end in ends[:-1]:
        ax.axhline(end + 0.5, color="tab:red", linewidth=1)
    if label:
        ax.set_yticks([(a + b) / 2 for a, b in zip(starts, ends)], labels=[f"context {c}" for c in labels])
        ax.tick_params(axis="y", length=0)
        ax.set_ylabel(f"datapoint ({ends[0] - starts[0] + 1} items in each context)")
    else:
        ax.set_yticks([])


def figure3_data(quick: bool = False) -> dict:
    task = section4_task()
    winner = race_report(task)["winner"]
    network = task.network(winner)
    return {
        "title": task.title,
        "inputs": np.array(task.inputs, dtype=float),
        "targets": np.array(task.targets, dtype=float),
        "contexts": np.asarray(task.contexts),
        "winner": winner,
        "pathways": [p.name for p in network.pathways],
        "gates": np.array([[n in p.active for p in network.pathways] for n in range(task.num_datapoints)], dtype=float),
    }


def draw_figure3(data: dict) -> Figure:
    inputs, targets, contexts, gates = data["inputs"], data["targets"], data["contexts"], data["gates"]
    labels = sorted(set(contexts.tolist()))
    items = inputs.shape[1] - len(labels)
    fig = figure(14, 5.4)
    ax_in, ax_out, ax_gates = fig.subplots(1, 3, width_ratios=[inputs.shape[1], targets.shape[1], 3 * gates.shape[1]])
    values = dict(cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    ax_in.imshow(inputs, **values)
    ax_in.axvline(items - 0.5, color="tab:red", linewidth=1)
    integer_ticks(ax_in.xaxis, range(inputs.shape[1]), [str(i + 1) for i in range(items)] + [str(c) for c in labels])
    ax_in.tick_params(axis="x", labelsize=7)
    ax_in.set_xlabel(f"input unit\n(item 1–{items} | context 1–{len(labels)})")
    ax_in.set_title("inputs")
    _context_rows(ax_in, contexts, label=True)

    shown = ax_out.imshow(targets, **values)
    blocks = _blocks(targets, contexts)
    for _, _, end in blocks[:-1]:
        ax_out.axvline(end - 0.5, color="tab:red", linewidth=1)
    starts = [a for _, a, _ in blocks] + [targets.shape[1] - 1]
    integer_ticks(ax_out.xaxis, starts, [str(a + 1) for a in starts])
    top = ax_out.secondary_xaxis("top")
    top.set_xticks([(a + b - 1) / 2 for _, a, b in blocks], labels=[name for name, _, _ in blocks])
    top.tick_params(length=0)
    ax_out.set_xlabel("target unit")
    ax_out.set_title("targets: a common block, and one block per context")
    _context_rows(ax_out, contexts, label=False)
    fig.colorbar(shown, ax=ax_out, location="right", fraction=0.03, pad=0.01, label="value of an input or target unit")

    gate_map = ListedColormap(GATE_COLOURS)
    drawn = ax_gates.imshow(
        gates, cmap=gate_map, norm=BoundaryNorm([-0.5, 0.5, 1.5], 2), aspect="auto", interpolation="nearest"
    )
    ax_gates.set_xticks(range(len(data["pathways"])), labels=data["pathways"], rotation=50, ha="right", fontsize=8)
    ax_gates.set_xticks(np.arange(len(data["pathways"]) + 1) - 0.5, minor=True)
    ax_gates.grid(which="minor", axis="x", color="white", linewidth=2)
    ax_gates.tick_params(which="minor", length=0)
    ax_gates.set_xlabel("pathway")
    ax_gates.set_title(f"gates of {data['winner']},\nthe race winner")
    _context_rows(ax_gates, contexts, label=False)
    bar = fig.colorbar(drawn, ax=ax_gates, location="right", fraction=0.12, pad=0.04, ticks=[0, 1])
    bar.set_ticklabels(["off", "on"])
    bar.set_label("gate of the pathway on the datapoint")
    fig.suptitle(
        f"Figure 3: the context task of Section 4 ({items} items in {len(labels)} contexts), "
        "and the gates of the network predicted to learn fastest"
    )
    return fig


def figure3(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure3(figure3_data(quick)), out / "figure3.png")


def figure4_data(quick: bool = False) -> dict:
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
    inputs, _ = models.dataset([])
    relu_hidden_layer, reln_hidden_layer = hidden_layers(task, relu, reln, winner, inputs)
    return {
        "title": task.title,
        "winner": winner,
        "seeds": seeds,
        "ts": ts,
        "relu": np.asarray(relu.losses).mean(axis=0)[::stride],
        "reln": np.asarray(reln.losses).mean(axis=0)[::stride],
        "theory": np.asarray(theory),
        "dynamics": prediction.kind,
        "aligned": np.asarray(aligned_curves[aligned.name]),
        "aligned_patterns": len(aligned.pathways),
        "strengths": {name: np.asarray(v) for name, v in strengths.items()},
        "contexts": np.asarray(task.contexts),
        "items": task.num_datapoints // len(set(task.contexts or ())),
        "hidden": {"ReLU": np.asarray(relu_hidden_layer), "ReLN": np.asarray(reln_hidden_layer)},
    }


def draw_figure4(data: dict) -> Figure:
    winner, ts = data["winner"], data["ts"]
    fig = figure(16, 6.2)
    (ax_a, ax_b, ax_c), (key_a, key_b, key_c) = panels_with_keys(fig, 3)
    ax_a.plot(ts, data["reln"], color="tab:blue", linewidth=1.6)
    ax_a.plot(ts, data["theory"], color="black", linestyle="--", linewidth=1.4)
    ax_a.plot(ts, data["aligned"], color="tab:green", linestyle=":", linewidth=2)
    relu = relu_style(len(ts))
    ax_a.plot(ts, data["relu"], **relu)
    ax_a.set_xlabel("epoch")
    ax_a.set_ylabel("loss (half the mean squared error)")
    ax_a.set_title("(a) loss during training")
    key(
        key_a,
        [
            [
                line(label=f"ReLU network ({runs(data['seeds'])})", **relu),
                line("tab:blue", f"ReLN {winner}, trained with its gates"),
                line("black", f"ReLN {winner}, theory ({data['dynamics']} from the widths)", linestyle="--"),
                line(
                    "tab:green",
                    f"GDLN of the ReLU runs' {data['aligned_patterns']} settled gate patterns\n"
                    "(theory from their alignment phase, gradient descent)",
                    linestyle=":",
                    linewidth=2,
                ),
            ]
        ],
    )

    handles = []
    for k, (name, values_t) in enumerate(data["strengths"].items()):
        colour = PATHWAY_COLOURS[k % len(PATHWAY_COLOURS)]
        ax_b.plot(ts, np.asarray(values_t)[:, :4], color=colour, linewidth=1.4, alpha=0.85)
        handles.append(line(colour, name))
    ax_b.set_xlabel("epoch")
    ax_b.set_ylabel("singular value of the pathway's map $W_p$")
    ax_b.set_title(f"(b) theory: singular values of each pathway's map\n(ReLN {winner}, the 4 largest per pathway)")
    key(key_b, [handles[: (len(handles) + 1) // 2], handles[(len(handles) + 1) // 2 :]])

    _draw_mds(ax_c, key_c, data)
    fig.suptitle(
        f"Figure 4: the context task of Section 4. How closely the ReLU network follows the race winner {winner}:\n"
        "the loss, the theory, and the hidden representations"
    )
    return fig


def _draw_mds(ax, strip, data: dict) -> None:
    """Both hidden representations in the ReLU network's MDS plane: classical MDS of each in all
    its dimensions, the ReLN's laid onto the ReLU's by Procrustes (rotation, reflection and one
    scale), both drawn on the ReLU's two leading dimensions; each datapoint's two points are
    joined. (The two leading dimensions alone are nearly degenerate in both networks, so a
    Procrustes of those alone would compare two different planes.)"""
    dimensions = len(data["contexts"])
    relu, reln, disparity = procrustes(
        classical_mds(data["hidden"]["ReLU"], dimensions), classical_mds(data["hidden"]["ReLN"], dimensions)
    )
    contexts = data["contexts"]
    labels = sorted(set(contexts.tolist()))
    colours = {c: CONTEXT_COLOURS[k % len(CONTEXT_COLOURS)] for k, c in enumerate(labels)}
    for a, b, c in zip(relu, reln, contexts):
        ax.plot([a[0], b[0]], [a[1], b[1]], color=colours[c], linewidth=0.8, alpha=0.6, zorder=1)
    for c in labels:
        at = contexts == c
        ax.scatter(relu[at, 0], relu[at, 1], s=36, color=colours[c], edgecolor="black", linewidth=0.5, zorder=3)
        ax.scatter(reln[at, 0], reln[at, 1], s=60, marker="x", color=colours[c], linewidth=1.6, zorder=2)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("ReLU network's MDS dimension 1 (scaled)")
    ax.set_ylabel("ReLU network's MDS dimension 2 (scaled)")
    ax.set_title(
        "(c) hidden representations: the ReLN's laid\n"
        f"onto the ReLU's (Procrustes over all dimensions)\ndisparity {disparity:.3f} (0: the same shape, 1: unrelated)"
    )
    key(
        strip,
        [
            [
                line("grey", "ReLU network (one run)", marker="o", linestyle="", markeredgecolor="black"),
                line("grey", f"ReLN {data['winner']}", marker="x", linestyle="", markersize=8, markeredgewidth=1.6),
                line("grey", "the same datapoint in both", linewidth=0.8),
            ],
            [line(colours[c], f"context {c} ({data['items']} items)", marker="s", linestyle="") for c in labels],
        ],
    )


def figure4(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure4(figure4_data(quick)), out / "figure4.png")


def figure5_data(quick: bool = False) -> list[dict]:
    found = []
    for k in progress([3] if quick else [3, 4, 5], "figure 5: contexts", label=lambda k: f"K = {k}"):
        task = section5_task(k)
        models = TaskPredictions(task)
        name = f"common+{k - 1}"
        training = task.training
        stride = theory_stride(training.epochs)
        ts = np.asarray(epoch_grid(training.epochs, stride))
        stages = models.stages(name)
        # the staged approximation: one definition (numeric.prediction), shared with race --staged
        maps = staged_maps(stages, ts, training.init_scale, training.tau, [])
        first = stages[0].derivation.network.pathways[0].name
        relu, _, _ = train_network(task, "relu", seeds=1 if quick else training.seeds, models=models)
        found.append(
            {
                "contexts": k,
                "network": name,
                "ts": ts,
                "stage_dynamics": [stage.kind for stage in stages],
                "first": first,
                "strengths": {p: np.asarray(np.linalg.svd(np.asarray(m), compute_uv=False)) for p, m in maps.items()},
                "exact": np.asarray(models.prediction(name).loss_curve(ts, training.init_scale, training.tau, [])),
                "dynamics": models.prediction(name).kind,
                "staged": np.asarray(loss_of_staged_maps(models.prediction(name), maps, [])),  # the maps drawn
                "relu": np.asarray(relu.losses).mean(axis=0)[::stride],
                "seeds": relu.losses.shape[0],
            }
        )
    return found


def draw_figure5(data: list[dict]) -> Figure:
    fig = figure(max(7.2, 5.6 * len(data)), 10)
    axes = fig.subplots(4, len(data), squeeze=False, height_ratios=[1, 0.001, 1, 0.001])
    for strip in [*axes[1], *axes[3]]:
        strip.axis("off")
    for column, found in enumerate(data):
        k, ts, name = found["contexts"], found["ts"], found["network"]
        ax_s, ax_l = axes[0, column], axes[2, column]
        for pathway, values_t in found["strengths"].items():
            colour = "tab:blue" if pathway == found["first"] else "tab:green"
            ax_s.plot(ts, values_t[:, :4], color=colour, linewidth=1.4, alpha=0.85)
        dynamics = sorted(set(found["stage_dynamics"]))
        ax_s.set_title(
            f"K = {k} contexts: singular values in the staged theory\n(the common pathway alone, then the context "
            f"pathways\non what it leaves; {'both stages ' if len(dynamics) == 1 else ''}{' and '.join(dynamics)})",
            fontsize=9,
        )
        ax_s.set_xlabel("epoch")
        ax_s.set_ylabel("singular value of the pathway's map $W_p$")
        key(
            axes[1, column],
            [[line("tab:blue", "common pathway (first stage)"), line("tab:green", "context pathways (second stage)")]],
        )
        ax_l.plot(ts, found["exact"], color="black", linestyle="--", linewidth=1.4)
        ax_l.plot(ts, found["staged"], color="tab:green", linestyle=":", linewidth=2)
        relu = relu_style(len(ts))
        ax_l.plot(ts, found["relu"], **relu)
        ax_l.set_xlabel("epoch")
        ax_l.set_ylabel("loss (half the mean squared error)")
        ax_l.set_title(f"K = {k} contexts: loss during training", fontsize=9)
        key(
            axes[3, column],
            [
                [
                    line(label=f"ReLU network ({runs(found['seeds'])})", **relu),
                    line("black", f"ReLN {name}, theory ({found['dynamics']})", linestyle="--"),
                    line("tab:green", f"ReLN {name}, staged theory", linestyle=":", linewidth=2),
                ]
            ],
        )
    fig.suptitle(
        "Figure 5: a hierarchy in every context block (Section 5).\nThe common pathway learns first, "
        "the context pathways later:\nthe staged theory against the exact theory and the ReLU network"
    )
    return fig


def figure5(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure5(figure5_data(quick)), out / "figure5.png")
