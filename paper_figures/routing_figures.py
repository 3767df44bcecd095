"""The Neural Race Reduction's routing task (Saxe, Sodhani & Lewallen 2022, Figures 4e, 5b-c, 6a-b).

(a) Loss of the three gating schemes at M = 4, K = 2: the shared-edge race (solid), gated networks
trained from decoupled initial weights (dashed, on top of the theory) and from small random weights
(faint). (b) Error on trained and untrained routes of share-all against K/M, and the similarity of one
item's first-layer representations across input domains (green, Figures 4g and 6c). (c) The same
against the init scale (race regime on the left, lazy regime on the right). (d) Loss curves of share-all
from random weights at each init scale. Nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from gdln.derive.spec import task_from_dict
from gdln.derive.tasks import routing_task
from gdln.verify.files import save_figure
from gdln.verify.graphs import ZERO_SHOT_INIT_SCALES, graph_verify_report, zero_shot_report

COLOURS = {"share-1": "tab:blue", "share-4": "tab:orange", "share-all": "tab:green"}


def routing_figure(out: Path, quick: bool = False) -> Path:
    domains, trained = 4, 2
    seeds = 1 if quick else 3
    task = task_from_dict(routing_task(domains, trained), source="routing task")
    report = graph_verify_report(task, seeds=seeds, curves=True)
    fig = Figure(figsize=(16, 4))
    ax_race, ax_k, ax_scale, ax_curves = fig.subplots(1, 4)
    epochs = np.arange(report["epochs"] + 1)
    for entry in report["networks"]:
        colour = COLOURS.get(entry["name"], "black")
        curves = entry["curves"]
        ax_race.plot(epochs, curves["theory"], color=colour, label=f"{entry['name']}: theory (Eq. 6)")
        ax_race.plot(epochs, curves["decoupled"], color=colour, linestyle="--", linewidth=0.8)
        for run in curves["random"]:
            ax_race.plot(epochs, run, color=colour, alpha=0.35, linewidth=0.8)
    ax_race.set_title(f"(a) routing race, M = {domains}, K = {trained}\n--: decoupled init; faint: random init")
    ax_race.set_xlim(0, report["epochs"] / 2)
    ax_race.set_xlabel("epoch")
    ax_race.set_ylabel("loss")
    ax_race.legend(fontsize=7)

    scales = ZERO_SHOT_INIT_SCALES[::2] if quick else ZERO_SHOT_INIT_SCALES
    sweep = zero_shot_report(domains, init_scales=scales, seeds=seeds, curves=True)
    floor = 1e-12  # errors below it (fits exact to rounding) are drawn at it on the log axes
    for key, colour in (("trained", "tab:blue"), ("untrained", "tab:red")):
        fractions = [e["fraction"] for e in sweep["by_trained"]]
        by_k = [max(float(np.mean(e[key])), floor) for e in sweep["by_trained"]]
        by_scale = [max(float(np.mean(e[key])), floor) for e in sweep["by_init_scale"]]
        ax_k.plot(fractions, by_k, "o-", color=colour, label=f"{key} routes")
        ax_scale.plot(scales, by_scale, "o-", color=colour, label=f"{key} routes")
    for ax, entries, xs in (
        (ax_k, sweep["by_trained"], [e["fraction"] for e in sweep["by_trained"]]),
        (ax_scale, sweep["by_init_scale"], scales),
    ):
        twin = ax.twinx()
        twin.plot(xs, [np.mean(e["similarity"]) for e in entries], "s--", color="tab:green")
        twin.set_ylim(-0.05, 1.05)
        twin.set_ylabel("first hidden layer: similarity across domains (green)", fontsize=8)
    ax_k.set_title("(b) share-all: route error against K / M")
    ax_k.set_xlabel("K / M")
    ax_scale.set_title(f"(c) route error against init scale\n(share-all, K = {sweep['scale_trained_domains']})")
    ax_scale.set_xlabel("init scale")
    ax_scale.set_xscale("log")
    for ax in (ax_k, ax_scale):
        ax.set_yscale("log")
        ax.set_ylabel("loss / loss of a zero output")
        ax.legend(fontsize=7)
    for entry in sweep["by_init_scale"]:
        mean = np.mean(entry["curves"], axis=0)
        ax_curves.plot(np.maximum(mean / mean[0], floor), label=f"init {entry['init_scale']:g}")
    ax_curves.set_title("(d) share-all, random weights:\nrace regime (small) vs lazy (large)")
    ax_curves.set_xlabel("epoch")
    ax_curves.set_ylabel("loss / L(0)")
    ax_curves.set_yscale("log")
    ax_curves.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, out / "routing.png")
