"""Figure 6 of "Make Haste Slowly": two hidden ReLU layers on the context task (Section 6).

Loss of the ReLU network with two hidden layers and of the GDLN with a shared, always-on first
layer under a gated second layer (common pathway and one pathway per pair of contexts), over
seeds: the run nearest each model's mean curve in bold, a band of the mean ± one standard
deviation over the seeds. Nothing is fitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from gdln.derive.spec import section6_task, task_from_dict
from gdln.verify.files import save_figure
from gdln.verify.graphs import depth_report
from gdln.verify.reports import DepthReport

from .style import figure, key, line, panels_with_keys, relu_style

MODELS = (
    ("relu", relu_style(1)["color"], "ReLU network"),
    ("gdln", "tab:blue", "GDLN"),
)


def figure6_data(quick: bool = False) -> DepthReport:
    task = task_from_dict(section6_task(seeds=5), source="section 6 task")
    return depth_report(task, "shared-layer1", epochs=3000 if quick else None)


def draw_figure6(report: Mapping[str, Any]) -> Figure:
    fig = figure(7.5, 6)
    (ax,), (strip,) = panels_with_keys(fig, 1)
    entries: list[list[Artist]] = []
    for name, colour, label in MODELS:
        epochs = np.arange(len(report["mean"][name]))
        mean, spread = np.asarray(report["mean"][name]), np.asarray(report["spread"][name])
        ax.fill_between(epochs, mean - spread, mean + spread, color=colour, alpha=0.2, linewidth=0)
        ax.plot(report["typical"][name], color=colour, linewidth=2)
        entries.append([line(colour, f"{label}: the run nearest the mean", linewidth=2)])
        entries[-1].append(Patch(color=colour, alpha=0.2, label=f"{label}: mean ± 1 s.d."))
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss (half the mean squared error)")
    ax.set_title(
        f"{report['seeds']} seeds each; the two runs nearest the means differ\n"
        f"by at most {report['max_deviation_typical']:.2f} of the initial loss",
        fontsize=10,
    )
    key(strip, [[handle for pair in entries for handle in pair]])
    fig.suptitle(
        "Figure 6: a ReLU network with two hidden layers against the GDLN\n"
        "with a shared first layer and a gated second layer (Section 6)"
    )
    return fig


def figure6(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure6(figure6_data(quick)), out / "figure6.png")
