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

SHOWN_CLUSTERS = (3, 4, 5)


@lru_cache(maxsize=2)
def _section4_gates(quick: bool) -> dict:
    task = section4_task()
    clusters = (2, 3, 4, 5, 6) if quick else tuple(range(2, 9))
    report, _ = find_gates_report(task, clusters=clusters, seeds=1 if quick else 3, snapshots=40 if quick else None)
    return report


def figure8(out: Path, quick: bool = False) -> Path:
    report = _section4_gates(quick)
    by_k = {entry["k"]: entry for entry in report["clusters"]}
    fig = Figure(figsize=(8, 5))
    axes = fig.subplots(len(SHOWN_CLUSTERS), 1)
    for ax, k in zip(axes, SHOWN_CLUSTERS):
        centroids = np.array([p["centroid"] for p in by_k[k]["patterns"]])
        ax.imshow(centroids, cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_yticks(range(len(centroids)))
        ax.set_yticklabels([f"{p['units']:.0f} units" for p in by_k[k]["patterns"]], fontsize=7)
        for boundary in (7.5, 15.5):  # context boundaries
            ax.axvline(boundary, color="tab:red", linewidth=1)
        ax.set_title(f"{k} clusters", fontsize=9)
        ax.set_xticks([3.5, 11.5, 19.5])
        ax.set_xticklabels(["context 1", "context 2", "context 3"], fontsize=8)
    fig.suptitle(
        f"Figure 8: k-means centroids of the hidden activity ({report['seeds']} training(s), "
        f"{len(report['snapshots'])} snapshots)",
        fontsize=10,
    )
    fig.tight_layout()
    return save_figure(fig, out / "figure8.png")


def figure9(out: Path, quick: bool = False) -> Path:
    report = _section4_gates(quick)
    ks = [entry["k"] for entry in report["clusters"]]
    errors = [entry["mse"] for entry in report["clusters"]]
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    ax.semilogy(ks, errors, "o-", color="tab:blue")
    if report["elbow"] is not None:
        ax.semilogy([report["elbow"]], [errors[ks.index(report["elbow"])]], "s", color="tab:red", markersize=10)
    ax.set_xlabel("clusters k")
    ax.set_ylabel("MSE, ReLU loss vs found GDLN loss")
    ax.set_title(f"Figure 9: elbow at k = {report['elbow']} ({report['elbow_rule'].split(',')[0]})", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, out / "figure9.png")
