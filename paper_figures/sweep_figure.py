"""The phase diagram of ``gdln sweep --plot``: who wins where, and where the theory holds."""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from gdln.verify.files import save_figure

#: one colour per candidate, in the spec's order
#: the derived crossover is drawn above the race boundaries, which it may coincide with
CROSSOVER: dict[str, Any] = {"color": "#ddaa33", "lw": 2.2, "ls": ":", "zorder": 3}
COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb"]


def _label(name: str) -> str:
    """An axis label: a training setting in words, a spec parameter as its symbol (``Delta`` as Δ)."""
    words = {
        "init_scale": "init scale (std of each initial weight)",
        "learning_rate": "learning rate",
        "hidden_units": "hidden units",
    }
    return words.get(name, f"${sympy.latex(sympy.Symbol(name))}$")


#: the most ticks of counted values (hidden units) on one axis
COUNT_TICKS = 8


def _scale(ax, which: str, swept: dict) -> None:
    """A log scale where the sweep's axis is one. Hidden units are counted: their ticks are the
    grid's own values written as integers (at most :data:`COUNT_TICKS` of them), not ``2x10^1``."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    if swept["log"]:
        getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    if swept["name"] == "hidden_units":
        values = np.asarray(swept["values"], dtype=float)
        step = -(-len(values) // COUNT_TICKS)
        axis.set_major_locator(FixedLocator(values[::step].tolist()))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.0f}"))
        axis.set_minor_locator(NullLocator())


def _indices(report: dict, key: str, names: list[str]) -> np.ndarray:
    return np.array([names.index(p[key]) if p[key] in names else np.nan for p in report["points"]], dtype=float)


def _predicted(report: dict, names: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Each point's predicted followed network (`verify.rules.predicted_follows`) as its index in
    ``names`` (NaN where undecided) and where it is undecided; ``None`` for a report without it."""
    found = [p.get("predicted_follows") for p in report["points"]]
    if not any(found):
        return None
    network = [(f or {}).get("network") for f in found]
    index = np.array([names.index(n) if n in names else np.nan for n in network], dtype=float)
    return index, np.array([f is not None and not f["decided"] for f in found])


def sweep_figure(report: dict) -> Figure:
    names = [n["name"] for n in report["points"][0]["networks"]]
    colours = {name: COLOURS[k % len(COLOURS)] for k, name in enumerate(names)}
    axes = report["axes"]
    fig = Figure(figsize=(7.2, 7.4) if len(axes) == 2 else (7.2, 6.0), layout="constrained")
    ax = fig.add_subplot()
    handles: list = []
    if len(axes) == 2:
        _plane(ax, report, names, colours, handles)
    else:
        _line(ax, report, names, colours, handles)
    ax.set_xlabel(_label(axes[0]["name"]))
    _scale(ax, "x", axes[0])
    ax.set_title(_title(report), fontsize=10)
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return fig


#: how a training setting is written in a title, by its name in the report's ``training``
SETTING_TEXT = {
    "learning_rate": lambda v: f"learning rate {v:g}",
    "init_scale": lambda v: f"init {v:g}",
    "hidden_units": lambda v: f"{v} hidden units",
    "epochs": lambda v: f"{v} epochs",
    "seeds": lambda v: f"{v} seeds",
}


def _title(report: dict) -> str:
    """What the figure shows, the training settings held fixed, and how the trained points
    followed each race that ran (a race that did not run is named with the reason)."""
    swept = {a["name"] for a in report["axes"]}
    fixed = ", ".join(text(report["training"][k]) for k, text in SETTING_TEXT.items() if k not in swept)
    title = f"Which network learns first, predicted without training\n{fixed}"
    # only races that ran are named: where the alignment-seeded race named no winner anywhere
    # (no prediction of it is finite), its agreement count says nothing
    aligned_ran = any(p.get("aligned_winner") is not None for p in report["points"])
    agreement = report["agreement"]
    checked = agreement["checked"]
    if checked:
        if aligned_ran:
            title += (
                f"\n{checked} trained points follow the alignment-seeded winner at {agreement['aligned_agree']},"
                f" the width-seeded at {agreement['agree']}"
            )
        else:
            title += f"\n{checked} trained points follow the width-seeded winner at {agreement['agree']}"
        within = agreement.get("within_assumptions")
        if within and within["checked"] < checked:
            title += f";\nthe {within['checked']} where the theory's assumptions hold, at " + (
                f"{within['aligned_agree']} and {within['agree']}" if aligned_ran else f"{within['agree']}"
            )
    if not aligned_ran:
        title += "\nthe alignment-seeded race names no winner: none of its predictions is finite"
    if any(p.get("predicted_follows") for p in report["points"]):
        title += "\n" + predicted_agreement_title(agreement)
    return title


def predicted_agreement_title(agreement: dict) -> str:
    """The measured agreement of the rule that painted the map: from this report's checked points
    where it has some, else the docs' measured table, named."""
    decided = agreement.get("predicted_decided", 0)
    if not agreement["checked"]:
        return f"colours: the network predicted to be followed;\nits agreement with training: {PREDICTED_TABLE}"
    if not decided:  # trained points, but none where the rule names a network: nothing to count here
        return (
            f"colours: the network predicted to be followed; undecided at all {agreement['checked']} trained points;"
            f"\nits agreement with training elsewhere: {PREDICTED_TABLE}"
        )
    return (
        "colours: the network predicted to be followed;\n"
        f"followed at {agreement['predicted_agree']} of the {decided} checked points where it decides"
    )


def _crossover_key(crossover: dict) -> Line2D:
    """The key of a derived crossover: the line's own style, the crossover in LaTeX."""
    return Line2D([], [], **CROSSOVER, label=f"derived crossover ${crossover['latex']}$")


def _plane(ax, report, names, colours, handles) -> None:
    x_axis, y_axis = report["axes"]
    x, y = np.asarray(x_axis["values"]), np.asarray(y_axis["values"])
    shape = (len(x), len(y))
    winners = _indices(report, "winner", names).reshape(shape)
    aligned = _indices(report, "aligned_winner", names).reshape(shape)
    from matplotlib.colors import BoundaryNorm, ListedColormap

    cmap = ListedColormap([colours[n] for n in names])
    norm = BoundaryNorm(np.arange(len(names) + 1) - 0.5, len(names))
    # the map itself is the network predicted to be followed where there is a prediction (blank
    # and hatched where it is undecided); else the alignment-seeded winner, else the width-seeded
    predicted = _predicted(report, names)
    if predicted is not None:
        shown = predicted[0].reshape(shape)
        label = "predicted to be followed"
    else:
        shown = np.where(np.isnan(aligned), winners, aligned)
        label = "wins (" + ("alignment-seeded" if not np.all(np.isnan(aligned)) else "width-seeded") + " race)"
    ax.pcolormesh(x, y, shown.T, cmap=cmap, norm=norm, shading="nearest", alpha=0.35, rasterized=True)
    handles += [Patch(color=colours[n], alpha=0.35, label=f"{n} {label}") for n in names]
    if predicted is not None and predicted[1].any():
        import matplotlib as mpl

        undecided = predicted[1].reshape(shape).T
        with mpl.rc_context({"hatch.color": "#777777", "hatch.linewidth": 0.6}):
            # whole cells, as the colours are painted (contours would draw diamonds round lone points)
            ax.pcolor(
                x,
                y,
                np.ma.masked_where(~undecided, undecided.astype(float)),
                shading="nearest",
                cmap=ListedColormap(["white"]),
                hatch=UNDECIDED_HATCH,
                linewidth=0,
            )
        handles.append(Patch(facecolor="white", edgecolor="#777777", hatch=UNDECIDED_HATCH, label=UNDECIDED_LABEL))
    levels = np.arange(len(names) - 1) + 0.5
    if len(names) > 1 and np.nanmax(winners) != np.nanmin(winners):
        ax.contour(x, y, winners.T, levels=levels, colors="black", linewidths=1.6, linestyles="solid")
        handles.append(Line2D([], [], color="black", lw=1.6, label="width-seeded race boundary"))
    if len(names) > 1 and not np.all(np.isnan(aligned)) and np.nanmax(aligned) != np.nanmin(aligned):
        ax.contour(x, y, aligned.T, levels=levels, colors="black", linewidths=1.6, linestyles="dashed")
        handles.append(Line2D([], [], color="black", lw=1.6, ls="--", label="alignment-seeded race boundary"))
    _assumptions_fail(ax, report, x, y, shape, handles)
    _predicted_validity(ax, report, x, y, shape, handles)
    for crossover in report["crossovers"]:
        if crossover["parameter"] == x_axis["name"]:
            if "curve" in crossover:
                ax.plot(crossover["curve"]["values"], y, **CROSSOVER)
            elif crossover.get("value") is not None:
                ax.axvline(crossover["value"], **CROSSOVER)
        elif crossover["parameter"] == y_axis["name"]:
            if "curve" in crossover:
                ax.plot(x, crossover["curve"]["values"], **CROSSOVER)
            elif crossover.get("value") is not None:
                ax.axhline(crossover["value"], **CROSSOVER)
        handles.append(_crossover_key(crossover))
    _checked(
        ax,
        report,
        names,
        colours,
        handles,
        lambda p: (p["values"][x_axis["name"]], p["values"][y_axis["name"]]),
        plane=(x_axis, y_axis),
    )
    ax.set_ylabel(_label(y_axis["name"]))
    _scale(ax, "y", y_axis)
    ax.set_xlim(x.min(), x.max())
    ax.set_ylim(y.min(), y.max())


#: where the rule that paints the map is measured against training, for a map without checks
PREDICTED_TABLE = "docs/phase_diagrams.md, predicted follows"
#: where the prediction of the followed network is undecided: unpainted, dotted
UNDECIDED_HATCH = "..."
UNDECIDED_LABEL = "undecided (a lead below the rule's error)"

#: a checked point whose seeds do not decide the followed candidate: half filled in its colour
UNDECIDED: dict[str, Any] = {
    "marker": "o",
    "ls": "",
    "markersize": 7.6,
    "fillstyle": "left",
    "markerfacecoloralt": "white",
    "markeredgecolor": "black",
    "markeredgewidth": 0.8,
}
#: how the region where the theory's assumptions fail is drawn: hatched, so the map shows through
ASSUMPTIONS_FAIL: dict[str, Any] = {"hatch": "////", "edgecolor": "#555555", "facecolor": "none", "linewidth": 0}


def _assumptions_fail(ax, report, x, y, shape, handles) -> None:
    """Hatch the points where the theory's assumptions fail before any training (no alignment
    phase, or a learning rate past verify's stability limit), and say which in the key."""
    assumptions = [p.get("assumptions") for p in report["points"]]
    fails = np.array([a is not None and not a["hold"] for a in assumptions]).reshape(shape)
    if not fails.any():
        return
    import matplotlib as mpl

    with mpl.rc_context({"hatch.color": ASSUMPTIONS_FAIL["edgecolor"], "hatch.linewidth": 0.6}):
        ax.contourf(x, y, fails.T.astype(float), levels=[0.5, 1.5], colors="none", hatches=[ASSUMPTIONS_FAIL["hatch"]])
    reasons = []
    if any(a is not None and a["small_init"] is False for a in assumptions):
        fraction = report["assumptions"]["output_fraction"]
        reasons.append(f"initial output ≥ {fraction:.0%} of the targets")
    if any(a is not None and a["stable_learning_rate"] is False for a in assumptions):
        reasons.append("learning rate > 2/curvature")
    if any(a is not None and a["stable_learning_rate"] is None for a in assumptions):
        reasons.append("learning rate not judged")
    handles.append(Patch(**ASSUMPTIONS_FAIL, label="theory's assumptions fail:\n" + "; ".join(reasons)))


#: the boundary of the validity predicted without training (``points[i].predicted_validity``)
PREDICTED_LINE: dict[str, Any] = {"colors": "#aa3377", "linewidths": 1.4, "linestyles": "dashdot", "zorder": 3}


def _predicted_validity(ax, report, x, y, shape, handles) -> None:
    """The boundary of the validity the theory predicts for itself, before any training, where it
    changes over the plane; the key says which side is which."""
    predicted = [p.get("predicted_validity") for p in report["points"]]
    if any(p is None for p in predicted):
        return
    within = np.array([p["within_validity"] for p in predicted], dtype=float).reshape(shape)
    if within.min() == within.max():
        where = "within" if within.min() else "outside"
        handles.append(Patch(color="none", label=f"predicted without training: {where} validity everywhere"))
        return
    ax.contour(x, y, within.T, levels=[0.5], **PREDICTED_LINE)
    handles.append(
        Line2D(
            [],
            [],
            color=PREDICTED_LINE["colors"],
            lw=PREDICTED_LINE["linewidths"],
            ls=PREDICTED_LINE["linestyles"],
            label="edge of the validity predicted without training",
        )
    )


#: the validity contour: where the interpolated deviation of the trained points passes the limit
VALIDITY_LINE: dict[str, Any] = {"colors": "#aa3377", "linewidths": 1.4, "zorder": 3}


def _validity_contour(ax, plane, positions, deviations, validity) -> bool:
    """The contour of the checked points' deviation at ``validity``, interpolated linearly over a
    triangulation of the points in the plot's own coordinates (a log axis as its logarithm, each
    axis scaled to its range, so that triangles are not stretched by units), evaluated on the
    sweep's grid. Returns whether a contour could be drawn (points on a line cannot be triangulated)."""
    from matplotlib.tri import LinearTriInterpolator, Triangulation

    def scaled(values, axis):
        values = np.log10(values) if axis["log"] else np.asarray(values, dtype=float)
        ends = np.log10(axis["values"]) if axis["log"] else np.asarray(axis["values"], dtype=float)
        span = ends.max() - ends.min()
        return (values - ends.min()) / (span if span > 0 else 1.0)

    x_axis, y_axis = plane
    xs, ys = (np.array(c, dtype=float) for c in zip(*positions))
    try:
        triangles = Triangulation(scaled(xs, x_axis), scaled(ys, y_axis))
        interpolate = LinearTriInterpolator(triangles, np.asarray(deviations, dtype=float))
    except (ValueError, RuntimeError):
        return False
    gx, gy = np.meshgrid(scaled(x_axis["values"], x_axis), scaled(y_axis["values"], y_axis), indexing="ij")
    field = interpolate(gx, gy)
    if np.ma.count(field) == 0 or not (field.min() < validity < field.max()):
        return False
    ax.contour(x_axis["values"], y_axis["values"], field.T, levels=[validity], **VALIDITY_LINE)
    return True


#: a checked point whose training diverged (``checked.reason``: "diverged at epoch N")
DIVERGED: dict[str, Any] = {"marker": "X", "s": 70, "color": "#cc3311", "edgecolor": "black", "linewidth": 0.6}


def _checked(ax, report, names, colours, handles, position, plane=None) -> None:
    checked = [p for p in report["points"] if p["checked"] is not None]
    if not checked:
        return
    validity = report["validity"]
    deviations = [p["checked"]["max_deviation"] for p in checked]
    if (
        plane is not None
        and len(checked) >= 4
        and all(d is not None for d in deviations)
        and min(deviations) < validity < max(deviations)
    ):
        drawn = _validity_contour(ax, plane, [position(p) for p in checked], deviations, validity)
        if drawn:
            handles.append(
                Line2D(
                    [],
                    [],
                    color=VALIDITY_LINE["colors"],
                    lw=VALIDITY_LINE["linewidths"],
                    label=f"deviation {validity:g} of the initial loss (interpolated between trained points)",
                )
            )

    def marked(point: dict) -> str:
        """How a checked point is drawn: open past the validity limit, else half filled where
        its seeds do not decide the followed candidate, else filled."""
        if point["checked"]["max_deviation"] > validity:
            return "outside"
        return "undecided" if point["checked"].get("decided") is False else "inside"

    for name in names:
        followed = [p for p in checked if p["checked"]["follows"] == name]
        inside, undecided, outside = (
            [position(p) for p in followed if marked(p) == kind] for kind in ("inside", "undecided", "outside")
        )
        if inside:
            ax.scatter(
                *zip(*inside), s=46, color=colours[name], edgecolor="black", linewidth=0.8, zorder=4, clip_on=False
            )
        if undecided:
            ax.plot(*zip(*undecided), **UNDECIDED, markerfacecolor=colours[name], zorder=4, clip_on=False)
        if outside:
            ax.scatter(
                *zip(*outside), s=46, facecolor="white", edgecolor=colours[name], linewidth=1.6, zorder=4, clip_on=False
            )
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                ls="",
                color=colours[name],
                markeredgecolor="black",
                label=f"trained: follows {name}",
            )
        )
    handles.append(
        Line2D(
            [],
            [],
            marker="o",
            ls="",
            markerfacecolor="white",
            markeredgecolor="black",
            label=f"deviation > {validity:g} of the initial loss",
        )
    )
    if any(p["checked"].get("decided") is False for p in checked):
        handles.append(
            Line2D(
                [],
                [],
                **UNDECIDED,
                markerfacecolor="#777777",
                label="half filled: the seeds do not decide what it follows",
            )
        )

    def diverged(point: dict) -> bool:
        return str(point["checked"].get("reason") or "").startswith("diverged")

    none = [position(p) for p in checked if p["checked"]["follows"] is None and not diverged(p)]
    if none:
        ax.scatter(*zip(*none), s=46, marker="x", color="black", zorder=4, clip_on=False)
        handles.append(Line2D([], [], marker="x", ls="", color="black", label="trained: follows none"))
    blown = [position(p) for p in checked if diverged(p)]
    if blown:  # the run says nothing of the theory: its loss left the finite numbers
        ax.scatter(*zip(*blown), **DIVERGED, zorder=4, clip_on=False)
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker=DIVERGED["marker"],
                markersize=9,
                color=DIVERGED["color"],
                markeredgecolor=DIVERGED["edgecolor"],
                label="training diverged",
            )
        )


#: a candidate that never falls to half its initial loss within the epochs: drawn at the top edge
NEVER_HALF: dict[str, Any] = {"marker": "^", "ls": "", "markersize": 6, "clip_on": False, "zorder": 4}


def _line(ax, report, names, colours, handles) -> None:
    """One axis: each candidate's predicted ``t_half`` from both races (one quantity on the
    epochs axis), the checked points at their measured ``t_half``, and a strip along the bottom
    coloured by the map's winner (as the plane's shading: the alignment-seeded race where it ran)."""
    axis = report["axes"][0]
    x = np.asarray(axis["values"], dtype=float)
    horizon = report["training"]["epochs"]
    points = report["points"]
    never = False
    for k, name in enumerate(names):
        for key, style, race in (("t_half", "-", "width-seeded"), ("aligned_t_half", "--", "alignment-seeded")):
            if key == "aligned_t_half" and report["seeds"]["aligned"] is None:
                continue
            found = [p["networks"][k][key] for p in points]
            ax.plot(x, [np.nan if t is None else t for t in found], color=colours[name], lw=1.6, ls=style)
            handles.append(Line2D([], [], color=colours[name], lw=1.6, ls=style, label=f"{name}: {race} race"))
            # a finite prediction that does not reach half its initial loss within the epochs
            short = [
                x[i] for i, p in enumerate(points) if found[i] is None and p["networks"][k]["final_loss"] is not None
            ]
            if short:
                never = True
                ax.plot(short, [horizon] * len(short), **NEVER_HALF, color=colours[name], markeredgecolor="black")
    if never:
        handles.append(
            Line2D([], [], **{**NEVER_HALF, "color": "#777777"}, label=f"never falls to half within {horizon} epochs")
        )
    for crossover in report["crossovers"]:
        if crossover.get("value") is not None:
            ax.axvline(crossover["value"], **CROSSOVER)
            handles.append(_crossover_key(crossover))
    _winner_strip(ax, report, names, colours, x)
    _checked(ax, report, names, colours, handles, lambda p: (p["values"][axis["name"]], _measured_half(p, horizon)))
    ax.set_ylabel("t_half: epochs until the loss falls to half its initial value")
    low, high = ax.get_ylim()
    ax.set_ylim(low, max(high, horizon * 1.04) if never else high)


def _measured_half(point: dict, horizon: int) -> float:
    """Where a checked point is drawn: at its trained networks' ``t_half``, at the top edge where
    they do not fall to half within the epochs."""
    found = point["checked"].get("t_half")
    return horizon if found is None else found


#: the strip along the bottom of a one-axis figure that shows the map's winner (axes fraction)
STRIP = 0.035


def _winner_strip(ax, report, names, colours, x) -> None:
    """The winner at each point as a coloured strip along the bottom edge: the alignment-seeded
    race's where it ran, else the width-seeded race's (by ``t_90``, ``verify.rules.race_order``)."""
    from matplotlib.transforms import blended_transform_factory

    key = "aligned_winner" if report["seeds"]["aligned"] is not None else "winner"
    predicted = _predicted(report, names)
    winners = _indices(report, key, names) if predicted is None else predicted[0]
    edges = np.concatenate(
        [[x[0]], (x[1:] + x[:-1]) / 2 if not report["axes"][0]["log"] else np.sqrt(x[1:] * x[:-1]), [x[-1]]]
    )
    where = blended_transform_factory(ax.transData, ax.transAxes)
    for i, winner in enumerate(winners):
        if not np.isnan(winner):
            ax.fill_between(
                [edges[i], edges[i + 1]], 0, STRIP, transform=where, color=colours[names[int(winner)]], alpha=0.6, lw=0
            )
    if predicted is not None:
        for undecided in np.flatnonzero(predicted[1]).tolist():
            ax.fill_between(
                [edges[undecided], edges[undecided + 1]],
                0,
                STRIP,
                transform=where,
                facecolor="none",
                edgecolor="#777777",
                hatch=UNDECIDED_HATCH,
                lw=0,
            )
        what = "predicted to be followed (dotted: undecided)"
    else:
        what = "winner, " + ("alignment-seeded" if key == "aligned_winner" else "width-seeded (first to 10%)") + " race"
    ax.text(0.005, STRIP + 0.005, what, transform=ax.transAxes, fontsize=7, va="bottom")


def write_sweep_figure(report: dict, path, key: str = "--plot") -> None:
    """The phase diagram, in the format its file name's suffix names; ``key``: the option that named it."""
    save_figure(sweep_figure(report), path, key=key)
