"""Figure 6 of "Make Haste Slowly": two hidden ReLU layers on the context task (Section 6).

Loss of the ReLU network with two hidden layers and of the GDLN with a shared, always-on first
layer under a gated second layer (common pathway and one pathway per pair of contexts), over
seeds: the run nearest each model's mean curve in bold, the other runs faint. Nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from gdln.derive.spec import task_from_dict
from gdln.derive.tasks import section6_task
from gdln.verify.files import save_figure
from gdln.verify.graphs import depth_report


def figure6(out: Path, quick: bool = False) -> Path:
    task = task_from_dict(section6_task(seeds=5), source="section 6 task")
    report = depth_report(task, "shared-layer1", epochs=3000 if quick else None)
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for name, colour, label in (
        ("relu", "tab:red", "ReLU, two hidden layers"),
        ("gdln", "tab:blue", "GDLN, shared layer 1"),
    ):
        ax.plot(report["typical"][name], color=colour, linewidth=2, label=f"{label}: run nearest the mean")
        ax.fill_between(
            np.arange(len(report["mean"][name])),
            np.subtract(report["mean"][name], report["spread"][name]),
            np.add(report["mean"][name], report["spread"][name]),
            color=colour,
            alpha=0.2,
        )
    ax.set_title(
        f"Section 6: {report['seeds']} seeds each (band: mean +- sd)\n"
        f"typical runs differ by up to {report['max_deviation_typical']:.2f} L(0)",
        fontsize=10,
    )
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out / "figure6.png")
