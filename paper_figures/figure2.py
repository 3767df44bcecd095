"""Figure 2 of "Make Haste Slowly": the XoR task with a linearly separable third dimension.

(d) time to learn (epochs to half the initial loss) against Delta: trained ReLU runs and
the predictions of both ReLNs, with the derived crossover Delta*; (e) loss curves for
several Delta. Solid: the prediction from each ReLU run's alignment phase, followed by
gradient descent at the training step (the default); dotted in (d), faint in (e): the earlier one, each mode
started from the initial weights and followed by gradient flow. Both come from the runs'
initial weights alone; nothing is fitted.
"""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp
import numpy as np

# Figures are built on matplotlib's object API (Figure, no pyplot): no global backend is
# chosen or needed here, and nothing is left open in pyplot's figure manager.
from matplotlib.figure import Figure

from gdln.derive.spec import task_from_dict, xor_task
from gdln.numeric.initial_conditions import WEIGHTS
from gdln.numeric.prediction import GRADIENT_FLOW, TaskPredictions
from gdln.numeric.race import crossing_time
from gdln.verify.files import save_figure
from gdln.verify.following import candidate_predictions, predicted_relu_curves
from gdln.verify.progress import progress
from gdln.verify.sweep import Axis, trained_points

from .style import count, figure, first_below, key, line, panels_with_keys, relu_style, runs

COLOURS = {"relu": relu_style(1)["color"], "linear": "tab:blue", "xor": "tab:orange"}
#: the mark of a prediction that does not reach half its initial loss within the epochs trained
BEYOND = "$\\uparrow$"


def crossover_value(models: TaskPredictions) -> float:
    found = models.crossovers("linear", "xor", models.task.values())
    return float(found[0].expr.evalf())


def figure2_data(quick: bool = False) -> dict:
    """Everything Figure 2 draws: times to learn against Delta (ReLU runs and both predictions of
    both ReLNs) and loss curves at three Delta, from the runs' initial weights (nothing fitted).
    The runs are a sweep along Delta checked at every point (:func:`verify.sweep.trained_points`:
    every Delta and seed trained in one program, each beside verify's predictions)."""
    task = task_from_dict(xor_task(), "xor task")
    models = TaskPredictions(task)
    delta_star = crossover_value(models)
    deltas = np.linspace(0.25, 4.0, 6 if quick else 16)
    curve_deltas = [0.5, round(delta_star, 2), 3.0]
    seeds = 2 if quick else task.training.seeds
    every = sorted(set(deltas) | set(curve_deltas))
    points = trained_points(task, [Axis("Delta", tuple(float(d) for d in every), False)], seeds=seeds)

    relu_times: list[list[float]] = []
    predicted_times: dict[str, list[float]] = {"linear": [], "xor": []}
    present_times: dict[str, list[float]] = {"linear": [], "xor": []}
    curves: dict = {}
    predictors = candidate_predictions(models)
    for delta, point in progress(list(zip(every, points)), "figure 2: Delta", label=lambda item: f"{item[0]:g}"):
        ts = point.ts
        # the earlier prediction: each mode from the runs' initial weights, followed by gradient flow
        present = predicted_relu_curves(
            models,
            predictors,
            point.initial,
            point.values,
            point.training,
            jnp.asarray(ts, jnp.float64),
            initial_conditions=WEIGHTS,
            time_model=GRADIENT_FLOW,
        )
        if delta in deltas:
            relu_times.append([crossing_time(ts, row, 0.5) for row in point.losses])
            for name in predicted_times:
                predicted_times[name].append(crossing_time(ts, point.predictions[name], 0.5))
                present_times[name].append(crossing_time(ts, present[name], 0.5))
        if delta in curve_deltas:
            curves[float(delta)] = {
                "relu": point.losses.mean(axis=0),
                "aligned": point.predictions,
                "present": {k: np.asarray(v) for k, v in present.items()},
            }
    return {
        "title": task.title,
        "epochs": task.training.epochs,
        "seeds": seeds,
        "delta_star": delta_star,
        "deltas": deltas,
        "relu_times": relu_times,
        "predicted_times": predicted_times,
        "present_times": present_times,
        "ts": points[0].ts,
        "curves": curves,
    }


def figure2(out: Path, quick: bool = False) -> Path:
    return save_figure(draw_figure2(figure2_data(quick)), out / "figure2.png")


def draw_figure2(data: dict) -> Figure:
    epochs, seeds = data["epochs"], data["seeds"]
    fig = figure(11.5, 5.6)
    (ax_d, ax_e), (key_d, key_e) = panels_with_keys(fig, 2)
    deltas = np.asarray(data["deltas"])
    # (d): the predictions as lines, an arrow at the top where one does not reach half its start
    # within the epochs trained, the runs above them all
    top = max(np.nanmax(np.asarray(t, dtype=float)) for t in [data["relu_times"], *data["predicted_times"].values()])
    ceiling = 1.12 * top
    for name in ("linear", "xor"):
        for times, style in ((data["predicted_times"][name], "-"), (data["present_times"][name], ":")):
            times = np.asarray(times, dtype=float)
            ax_d.plot(deltas, times, color=COLOURS[name], linestyle=style, linewidth=1.6, zorder=2)
            never = ~np.isfinite(times)
            ax_d.scatter(
                deltas[never], [ceiling] * int(never.sum()), marker=BEYOND, s=160, color=COLOURS[name], zorder=3
            )
    for delta, times in zip(deltas, data["relu_times"]):
        ax_d.scatter(
            [delta] * len(times), times, color=COLOURS["relu"], edgecolor="black", linewidth=0.5, s=26, zorder=4
        )
    ax_d.axvline(data["delta_star"], color="grey", linestyle="--", zorder=1)
    ax_d.set_ylim(0, ceiling * 1.04)
    ax_d.set_xlabel("$\\Delta$ (separation of the classes along the third input)")
    ax_d.set_ylabel("epochs to half the initial loss")
    ax_d.set_title("(d) time to learn against $\\Delta$")
    key(
        key_d,
        [
            [
                line(COLOURS["relu"], f"ReLU network ({seeds} runs each)", marker="o", linestyle="", markeredgecolor="black"),
                line(COLOURS["linear"], "linear ReLN (prediction)"),
                line(COLOURS["xor"], "XoR ReLN (prediction)"),
                line("grey", f"$\\Delta^* = {data['delta_star']:.3f}$: derived crossover", linestyle="--"),
            ],
            [
                line("black", "from the runs' alignment phase, gradient descent"),
                line("black", "from the initial weights, gradient flow", linestyle=":"),
                line("black", f"not at half within {count(epochs)} epochs", marker=BEYOND, linestyle="", markersize=11),
            ],
        ],
    )  # fmt: skip

    # (e): colour is the network, line style the value of Delta; the runs drawn last, with markers
    ts = np.asarray(data["ts"])
    styles = ["-", "--", ":"]
    curves = sorted(data["curves"].items())
    ends = []
    for style, (_, found) in zip(styles, curves):
        for name in ("linear", "xor"):
            ax_e.plot(ts, found["present"][name], color=COLOURS[name], linestyle=style, alpha=0.3, linewidth=0.9)
            ax_e.plot(ts, found["aligned"][name], color=COLOURS[name], linestyle=style, linewidth=1.5)
            ends += [first_below(ts, found["present"][name], 0.02), first_below(ts, found["aligned"][name], 0.02)]
    for k, (style, (_, found)) in enumerate(zip(styles, curves)):
        ax_e.plot(ts, found["relu"], linestyle=style, **relu_style(len(ts), offset=k * len(ts) // 90))
        ends.append(first_below(ts, found["relu"], 0.02))
    ax_e.set_xlim(0, min(float(ts[-1]), 1.1 * max(ends)))
    ax_e.set_xlabel("epoch")
    ax_e.set_ylabel("loss (half the mean squared error)")
    ax_e.set_title("(e) loss during training at three values of $\\Delta$")
    key(
        key_e,
        [
            [
                line(label=f"ReLU network ({runs(seeds)})", **relu_style(len(ts))),
                line(COLOURS["linear"], "linear ReLN (prediction)"),
                line(COLOURS["xor"], "XoR ReLN (prediction)"),
                line("grey", "faint: from the initial weights, gradient flow", alpha=0.5),
            ],
            [line("black", f"$\\Delta = {delta:g}$", linestyle=style) for style, (delta, _) in zip(styles, curves)],
        ],
    )
    fig.suptitle(
        f"Figure 2: {data['title']}. The ReLU network learns at the pace of the faster ReLN,\n"
        "and which ReLN is faster changes at the derived $\\Delta^*$"
    )
    return fig
