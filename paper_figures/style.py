"""What every figure shares: panels with their keys below them (a key never covers data),
colour keys for discrete colour scales, and integer ticks on discrete axes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

#: the two states of a gate, in every figure that draws gates
GATE_COLOURS = ("#f2f2f2", "#08519c")


def figure(width: float, height: float) -> Figure:
    """A figure laid out by matplotlib's constrained layout (keys and colour bars get their room)."""
    return Figure(figsize=(width, height), layout="constrained")


def panels_with_keys(fig, count: int, **grid) -> tuple[list[Axes], list[Axes]]:
    """``count`` panels side by side, each over an empty strip that holds its key: the panels stay
    aligned whatever the size of their keys. Returns (panels, key strips)."""
    axes = fig.subplots(2, count, height_ratios=[1, 0.001], squeeze=False, **grid)
    for strip in axes[1]:
        strip.axis("off")
    return list(axes[0]), list(axes[1])


def blank() -> Line2D:
    """An empty key entry: pads a column of a key."""
    return Line2D([], [], linestyle="", marker="", label=" ")


def key(strip: Axes, columns: Sequence[Sequence], fontsize: float = 8) -> None:
    """A key under a panel (in its strip from :func:`panels_with_keys`), one column per group of
    entries: colours in one, line styles in another, and so on."""
    rows = max(len(column) for column in columns)
    handles = [h for column in columns for h in [*column, *[blank()] * (rows - len(column))]]
    strip.legend(
        handles=handles,
        loc="upper center",
        ncols=len(columns),
        fontsize=fontsize,
        borderaxespad=0,
        frameon=False,
        handlelength=2.6,
    )


def integer_ticks(axis, values: Sequence[float] | None = None, labels: Sequence[str] | None = None) -> None:
    """Ticks on whole numbers only: at ``values`` (with ``labels``) when given, else where
    matplotlib would put them."""
    if values is None:
        axis.set_major_locator(MaxNLocator(integer=True))
        return
    axis.set_ticks(list(values), labels=labels)


def line(colour: str | None = None, label: str = "", **style) -> Line2D:
    """A key entry for a line (or markers) without data; ``colour`` may come in ``style``."""
    if colour is not None:
        style["color"] = colour
    return Line2D([], [], label=label, **style)


def count(n: float) -> str:
    """``12000`` as ``12 000`` (thin space): counts of epochs in titles and keys."""
    return f"{int(round(n)):,}".replace(",", "\u2009")


def first_below(ts, curve, fraction: float) -> float:
    """First time ``curve`` is at or below ``fraction`` of its start; the last time if never."""
    curve = np.asarray(curve)
    below = np.flatnonzero(curve <= fraction * curve[0])
    return float(np.asarray(ts)[below[0]] if below.size else np.asarray(ts)[-1])


def runs(n: int) -> str:
    """What a curve of ``n`` training runs is: ``one run``, ``mean of 3 runs``."""
    return "one run" if n == 1 else f"mean of {n} runs"


def relu_style(points: int, offset: int = 0) -> dict[str, Any]:
    """How a trained ReLU network's loss is drawn: red, with a marker every thirtieth of the curve
    (``offset`` shifts the markers, for several curves), above every theory curve."""
    every = max(points // 30, 1)
    return {
        "color": "tab:red",
        "linewidth": 1.4,
        "marker": "o",
        "markersize": 3.5,
        "markevery": ((every // 2 + offset) % every, every),
        "zorder": 4,
    }
