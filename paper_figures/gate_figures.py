"""Figures 8 and 9 of "Make Haste Slowly" (Appendix B): gates found by k-means on the
Section 4 ReLU network's hidden activity, and the elbow of the found GDLN's error.

Figure 8: the centroids for k = 3, 4, 5, one row per cluster, one column per datapoint
(context-major, 8 items per context), shaded by the fraction of the cluster's rows that are on.
Figure 9: the mean squared difference between the mean ReLU loss and the found GDLN's predicted
loss (its reduced flow from the runs' alignment phase) against k, with the elbow marked. One run of ``find-gates`` serves both.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from gdln.verify.files import save_figure
from gdln.verify.find_gates import find_gates_report

from .context_figures import section4_task
from .style import figure, integer_ticks, key, line, panels_with_keys

SHOWN_CLUSTERS = (3, 4, 5)


@lru_cache(maxsize=2)
def _section4_gates(quick: bool) -> dict:
    task = section4_task()
    clusters = (2, 3, 4, 5, 6) if quick else tuple(range(2, 9))
    report, _ = find_gates_report(task, clusters=clusters, seeds=1 if quick else 3, snapshots=40 if quick else None)
    return {**report, "contexts": list(task.contexts or ())}


def gates_data(quick: bool = False) -> dict:
    """The ``find-gates`` report both figures draw (one run serves both), with the datapoints'
    contexts."""
    return _section4_gates(quick)


def _trainings(report: dict) -> str:
    seeds, snapshots = report["seeds"], len(report["snapshots"])
    return f"{'one training run' if seeds == 1 else f'{seeds} training runs'}, {snapshots} snapshots each"


def draw_figure8(report: dict) -> Figure:
    by_k = {entry["k"]: entry for entry in report["clusters"]}
    shown = [k for k in SHOWN_CLUSTERS if k in by_k]
    contexts = np.asarray(report["contexts"])
    labels = sorted(set(contexts.tolist()))
    fig = figure(9, 1.2 + 1.9 * len(shown))
    axes = fig.subplots(len(shown), 1, squeeze=False, height_ratios=[len(by_k[k]["patterns"]) + 1.5 for k in shown])
    for ax, k in zip(axes[:, 0], shown):
        patterns = by_k[k]["patterns"]
        drawn = ax.imshow(
            np.array([p["centroid"] for p in patterns]),
            cmap="Greys",
            vmin=0,
            vmax=1,
            aspect="auto",
            interpolation="nearest",
        )
        ax.set_yticks(range(len(patterns)), labels=[f"{p['units']:.0f} units" for p in patterns], fontsize=7)
        ends = [int(np.flatnonzero(contexts == c)[-1]) for c in labels]
        starts = [int(np.flatnonzero(contexts == c)[0]) for c in labels]
        for end in ends[:-1]:  # context boundaries
            ax.axvline(end + 0.5, color="tab:red", linewidth=1)
        ax.set_xticks([(a + b) / 2 for a, b in zip(starts, ends)], labels=[f"context {c}" for c in labels], fontsize=8)
        ax.tick_params(axis="x", length=0)
        ax.set_ylabel(f"k = {k}:\ncluster (size)", fontsize=8)
    axes[-1, 0].set_xlabel(f"datapoint ({ends[0] - starts[0] + 1} items in each context)")
    bar = fig.colorbar(drawn, ax=axes[:, 0], location="right", fraction=0.04, pad=0.02)
    label = "fraction of the cluster's units that are on\nat the datapoint (the centroid)"
    rounding = report.get("rounding")
    if rounding is not None:
        bar.ax.axhline(rounding, color="tab:red", linewidth=2)
        label += f";\nred: {rounding:g}, at and above which the gate is on"
    bar.set_label(label)
    fig.suptitle(
        f"Figure 8: gates found by k-means on the ReLU network's hidden units, k = {', '.join(map(str, shown))}\n"
        f"({_trainings(report)}; a row per cluster, its size in hidden units)",
        fontsize=10,
    )
    return fig


def draw_figure9(report: dict) -> Figure:
    ks = [entry["k"] for entry in report["clusters"]]
    errors = [entry["mse"] for entry in report["clusters"]]
    elbow = report["elbow"]
    fig = figure(6, 4.8)
    (ax,), (strip,) = panels_with_keys(fig, 1)
    ax.semilogy(ks, errors, "o-", color="tab:blue")
    entries = [line("tab:blue", "error of the GDLN found with k clusters", marker="o")]
    if elbow is not None:
        ax.semilogy([elbow], [errors[ks.index(elbow)]], "s", color="tab:red", markersize=10)
        entries.append(
            line("tab:red", "the elbow (kneedle rule on the error's logarithm)", marker="s", linestyle="", markersize=8)
        )
    integer_ticks(ax.xaxis, ks)
    ax.set_xlabel("number of clusters k")
    ax.set_ylabel("mean squared difference between the ReLU\nloss and the found GDLN's predicted loss")
    found = f"the elbow at k = {elbow}" if elbow is not None else "no elbow found"
    ax.set_title(f"Figure 9: error of the found GDLN against k;\n{found} ({_trainings(report)})", fontsize=10)
    key(strip, [entries])
    return fig


def figure8(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure8(gates_data(quick)), out / "figure8.png")


def figure9(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure9(gates_data(quick)), out / "figure9.png")
