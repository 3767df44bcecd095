"""The Neural Race Reduction's routing task (Saxe, Sodhani & Lewallen 2022, Figures 4e, 5b-c, 6a-b).

(a) Loss of the three gating schemes at M = 4, K = 2: the shared-edge race (lines), gated networks
trained from decoupled initial weights (open circles, on the theory) and from small random weights
(faint). (b) Error on trained and untrained routes of share-all against K/M, and the similarity of one
item's first-layer representations across input domains (green, Figures 4g and 6c). (c) The same
against the init scale (race regime on the left, lazy regime on the right). (d) Loss curves of share-all
from random weights at each init scale. Nothing is fitted.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from gdln.derive.spec import routing_task, task_from_dict
from gdln.verify.files import save_figure
from gdln.verify.graphs import ZERO_SHOT_INIT_SCALES, graph_verify_report, zero_shot_report

from .style import blank, figure, integer_ticks, key, line, panels_with_keys

COLOURS = {"share-1": "tab:blue", "share-4": "tab:orange", "share-all": "tab:green"}
ROUTES = {"trained": "tab:blue", "untrained": "tab:red"}
SIMILARITY = "tab:purple"
#: errors below it (fits exact to rounding) are drawn at it on the log axes
FLOOR = 1e-12


def routing_data(quick: bool = False) -> dict:
    domains, trained = 4, 2
    seeds = 1 if quick else 3
    task = task_from_dict(routing_task(domains, trained), source="routing task")
    scales = ZERO_SHOT_INIT_SCALES[::2] if quick else ZERO_SHOT_INIT_SCALES
    return {
        "domains": domains,
        "trained": trained,
        "seeds": seeds,
        "race": graph_verify_report(task, seeds=seeds, curves=True),
        "scales": list(scales),
        "sweep": zero_shot_report(domains, init_scales=scales, seeds=seeds, curves=True),
    }


def draw_routing(data: dict) -> Figure:
    report, sweep, scales, domains = data["race"], data["sweep"], data["scales"], data["domains"]
    fig = figure(19, 5.6)
    (ax_race, ax_k, ax_scale, ax_curves), (key_race, key_k, key_scale, key_curves) = panels_with_keys(fig, 4)
    epochs = np.arange(report["epochs"] + 1)
    shown = report["epochs"] // 2
    every = max(shown // 25, 1)
    schemes: list[Line2D] = []
    for entry in report["networks"]:
        colour = COLOURS.get(entry["name"], "black")
        curves = entry["curves"]
        for run in curves["random"]:
            ax_race.plot(epochs, run, color=colour, alpha=0.35, linewidth=0.8)
        ax_race.plot(epochs, curves["theory"], color=colour, linewidth=1.6)
        ax_race.plot(
            epochs, curves["decoupled"], linestyle="", marker="o", markersize=4.5, markerfacecolor="white",
            markeredgecolor=colour, markevery=(len(schemes) * every // 3, every), zorder=3,
        )  # fmt: skip
        schemes.append(line(colour, entry["name"], linewidth=1.6))
    ax_race.set_xlim(0, shown)
    ax_race.set_xlabel("epoch")
    ax_race.set_ylabel("loss (half the mean squared error)")
    ax_race.set_title(f"(a) the routing race, M = {domains} domains, K = {data['trained']} trained")
    runs = "one run" if data["seeds"] == 1 else f"{data['seeds']} runs"
    key(
        key_race,
        [
            schemes,
            [
                line("black", "theory: the shared-edge race (Eq. 6)", linewidth=1.6),
                line("black", "trained from decoupled weights", linestyle="", marker="o", markerfacecolor="white"),
                line("black", f"trained from small random weights ({runs})", alpha=0.35, linewidth=0.8),
            ],
        ],
    )

    fractions = [e["fraction"] for e in sweep["by_trained"]]
    for key_name, colour in ROUTES.items():
        by_k = [max(float(np.mean(e[key_name])), FLOOR) for e in sweep["by_trained"]]
        by_scale = [max(float(np.mean(e[key_name])), FLOOR) for e in sweep["by_init_scale"]]
        ax_k.plot(fractions, by_k, "o-", color=colour)
        ax_scale.plot(scales, by_scale, "o-", color=colour)
    for ax, entries, xs in ((ax_k, sweep["by_trained"], fractions), (ax_scale, sweep["by_init_scale"], scales)):
        twin = ax.twinx()
        twin.plot(xs, [np.mean(e["similarity"]) for e in entries], "s--", color=SIMILARITY)
        twin.set_ylim(-0.05, 1.05)
        twin.set_ylabel("similarity of one item's first-layer\nrepresentations across domains", color=SIMILARITY)
        twin.tick_params(axis="y", colors=SIMILARITY)
        ax.set_yscale("log")
        ax.set_ylabel("loss on the routes / loss of a zero output")
    integer_ticks(ax_k.xaxis, fractions, [str(Fraction(k, domains)) for k in (round(f * domains) for f in fractions)])
    ax_k.set_title("(b) share-all: route error against K / M")
    ax_k.set_xlabel(f"K / M (output domains trained with each input domain, M = {domains})")
    ax_scale.set_title(f"(c) share-all, K = {sweep['scale_trained_domains']}: route error against the init scale")
    ax_scale.set_xlabel("init scale (std of each initial weight)")
    ax_scale.set_xscale("log")
    errors = [
        line(ROUTES["trained"], "trained routes", marker="o"),
        line(ROUTES["untrained"], "untrained routes (zero-shot)", marker="o"),
        line(SIMILARITY, "similarity across domains (right axis)", marker="s", linestyle="--"),
    ]
    note = blank()
    exponent = round(np.log10(FLOOR))
    note.set_label(f"values below $10^{{{exponent}}}$ drawn at $10^{{{exponent}}}$")
    for strip in (key_k, key_scale):
        key(strip, [[*errors, note]])

    for k, entry in enumerate(sweep["by_init_scale"]):
        mean = np.mean(entry["curves"], axis=0)
        ax_curves.plot(np.maximum(mean / mean[0], FLOOR), color=f"C{k}")
    ax_curves.set_title("(d) share-all from random weights:\nrace regime (small init) to lazy (large)")
    ax_curves.set_xlabel("epoch")
    ax_curves.set_ylabel("loss / initial loss")
    ax_curves.set_yscale("log")
    key(key_curves, [[line(f"C{k}", f"init scale {s:g}") for k, s in enumerate(scales)] + [note]])
    fig.suptitle(
        "The routing task of the Neural Race Reduction: the race of three gating schemes, and what the "
        "share-all network does on routes it never saw"
    )
    return fig


def routing_figure(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_routing(routing_data(quick)), out / "routing.png")
