"""The figures read like the paper's: drawn here from small made-up data (no training), each is
checked for what a reader needs: no key on a data panel, labelled axes, whole-number ticks where
the axis counts something, a colour bar where colour carries a value, the runs drawn above the
theory, and a mark where a prediction never gets there."""

import matplotlib
import numpy as np
import pytest

from gdln.figures.figure2 import draw_figure2
from gdln.figures.figure6 import draw_figure6
from gdln.figures.gate_figures import draw_figure8, draw_figure9


def _data_panels(fig):
    """Panels that show data: axes that are drawn and are not colour bars."""
    return [ax for ax in fig.axes if ax.axison and not hasattr(ax, "_colorbar")]


def _no_key_on_data(fig):
    assert [ax.get_title() for ax in _data_panels(fig) if ax.get_legend() is not None] == []
    assert any(ax.get_legend() is not None for ax in fig.axes)  # the keys are there, beside the data


def _labelled(fig):
    for ax in _data_panels(fig):
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()


def _gates_report():
    contexts = [c for c in (1, 2, 3) for _ in range(8)]
    rng = np.random.default_rng(0)
    clusters = [
        {
            "k": k,
            "patterns": [{"centroid": rng.uniform(size=24).tolist(), "units": 700 / k} for _ in range(k)],
            "mse": 0.1 / k,
        }
        for k in range(2, 7)
    ]
    return {
        "clusters": clusters,
        "seeds": 1,
        "snapshots": list(range(40)),
        "elbow": 4,
        "rounding": 0.5,
        "contexts": contexts,
    }


def test_figure8_has_a_colour_bar_for_the_centroids():
    fig = draw_figure8(_gates_report())
    bars = [ax for ax in fig.axes if hasattr(ax, "_colorbar")]
    assert len(bars) == 1 and bars[0]._colorbar.vmin == 0 and bars[0]._colorbar.vmax == 1
    assert bars[0].get_ylabel()
    panels = _data_panels(fig)  # stacked: one for each k, the datapoint axis named under the last
    assert len(panels) == 3 and all(ax.get_ylabel() for ax in panels) and panels[-1].get_xlabel()


def test_figure9_counts_clusters_in_whole_numbers_and_keys_the_elbow():
    report = _gates_report()
    fig = draw_figure9(report)
    (ax,) = _data_panels(fig)
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks == [e["k"] for e in report["clusters"]]
    _no_key_on_data(fig)
    _labelled(fig)


def test_figure6_keys_sit_beside_the_data():
    epochs = np.arange(50)
    curve = (4 * np.exp(-epochs / 10)).tolist()
    report = {
        "mean": {"relu": curve, "gdln": curve},
        "spread": {"relu": [0.1] * 50, "gdln": [0.1] * 50},
        "typical": {"relu": curve, "gdln": curve},
        "seeds": 5,
        "max_deviation_typical": 0.1,
    }
    fig = draw_figure6(report)
    _no_key_on_data(fig)
    _labelled(fig)


def test_figure2_draws_the_runs_above_the_theory_and_marks_a_prediction_that_never_gets_there():
    ts = np.arange(0, 1001, 10.0)
    deltas = np.array([0.5, 1.0, 2.0])
    drop = {d: 0.5 / (1 + np.exp((ts - 300 * d) / 30)) for d in (0.5, 1.63, 3.0)}
    data = {
        "title": "XoR",
        "epochs": 1000,
        "seeds": 2,
        "delta_star": 1.63,
        "deltas": deltas,
        "relu_times": [[300.0, 310.0], [400.0, 410.0], [500.0, 520.0]],
        "predicted_times": {"linear": [800.0, 500.0, 300.0], "xor": [300.0, 400.0, 500.0]},
        "present_times": {"linear": [float("nan"), 600.0, 350.0], "xor": [320.0, 420.0, 520.0]},
        "ts": ts,
        "curves": {
            d: {"relu": c, "aligned": {"linear": c, "xor": c}, "present": {"linear": c, "xor": c}}
            for d, c in drop.items()
        },
    }
    fig = draw_figure2(data)
    _no_key_on_data(fig)
    _labelled(fig)
    ax_d, ax_e = _data_panels(fig)
    relu = ax_d.collections[-1].get_facecolor()[0]
    theory = [line for line in ax_d.get_lines() + ax_e.get_lines() if line.get_color() not in ("tab:red", "grey")]
    runs = [line for line in ax_e.get_lines() if line.get_color() == "tab:red"]
    assert len(runs) == 3 and all(line.get_marker() not in (None, "None", "") for line in runs)
    assert min(line.get_zorder() for line in runs) > max(line.get_zorder() for line in theory)
    run_points = [c for c in ax_d.collections if np.allclose(c.get_facecolor()[0], relu)]
    assert min(c.get_zorder() for c in run_points) > max(line.get_zorder() for line in theory)
    # the linear prediction from the initial weights never halves at Delta = 0.5: a mark at the top
    top = ax_d.get_ylim()[1]
    marks = [c for c in ax_d.collections if len(c.get_offsets()) and not np.allclose(c.get_facecolor()[0], relu)]
    assert [tuple(o) for c in marks for o in c.get_offsets()] == [(0.5, marks[0].get_offsets()[0][1])]
    assert marks[0].get_offsets()[0][1] > max(max(t) for t in data["relu_times"]) and marks[0].get_offsets()[0][1] < top


def _phase_report(fails_above: float | None) -> dict:
    """A made-up 4 x 3 sweep report: xor wins below Delta 2, linear above; the theory's assumptions
    fail (no alignment phase) at init scales above ``fails_above``."""
    deltas, scales = [1.0, 1.5, 2.5, 3.0], [1e-4, 1e-2, 1e-1]
    points = []
    for delta in deltas:
        for scale in scales:
            winner = "xor" if delta < 2 else "linear"
            small = fails_above is None or scale <= fails_above
            points.append(
                {
                    "values": {"Delta": delta, "init_scale": scale},
                    "winner": winner,
                    "aligned_winner": winner,
                    "networks": [{"name": "linear"}, {"name": "xor"}],
                    "assumptions": {"small_init": small, "stable_learning_rate": True, "hold": small},
                    "checked": None,
                }
            )
    within = {"checked": 0, "agree": 0, "aligned_agree": 0}
    return {
        "axes": [
            {"name": "Delta", "values": deltas, "log": False},
            {"name": "init_scale", "values": scales, "log": True},
        ],
        "points": points,
        "crossovers": [],
        "validity": 0.05,
        "seeds": {"width": "from the widths", "aligned": "from the alignment phase"},
        "training": {"learning_rate": 0.01, "init_scale": 1e-4, "hidden_units": 128, "epochs": 12000, "seeds": 3},
        "assumptions": {"output_fraction": 0.01},
        "agreement": {
            "checked": 0,
            "agree": 0,
            "aligned_agree": 0,
            "disagree_points": [],
            "within_assumptions": within,
        },
    }


def test_the_phase_diagram_hatches_where_the_theory_s_assumptions_fail_and_keys_it():
    from matplotlib.patches import Patch

    from gdln.figures.sweep_figure import sweep_figure

    def assumption_keys(fig):
        (legend,) = fig.legends
        return [
            text.get_text()
            for handle, text in zip(legend.legend_handles, legend.get_texts())
            if isinstance(handle, Patch) and handle.get_hatch()
        ]

    fig = sweep_figure(_phase_report(fails_above=1e-2))
    (key,) = assumption_keys(fig)
    assert "initial output ≥ 1% of the targets" in key
    (ax,) = fig.axes
    assert any(any(getattr(c, "hatches", None) or []) for c in ax.collections)  # the hatched region itself
    assert assumption_keys(sweep_figure(_phase_report(fails_above=None))) == []
    _labelled(fig)


def test_the_phase_diagram_title_names_only_the_races_that_ran():
    """Where the alignment-seeded race named no winner (it did not run), the title counts the
    checked points against the width-seeded winner alone, not "the alignment-seeded at 0"."""
    from gdln.figures.sweep_figure import sweep_figure

    report = _phase_report(fails_above=None)
    for point in report["points"][:4]:
        point["checked"] = {"follows": point["winner"], "max_deviation": 0.01, "decided": True}
    report["agreement"].update(checked=4, agree=4, aligned_agree=4)
    (ax,) = sweep_figure(report).axes
    assert "follow the alignment-seeded winner at 4, the width-seeded at 4" in ax.get_title()
    for point in report["points"]:
        point["aligned_winner"] = None
    report["agreement"]["aligned_agree"] = 0
    (ax,) = sweep_figure(report).axes
    assert "alignment-seeded winner at" not in ax.get_title()  # and it says why it counts no agreement
    assert "the alignment-seeded race names no winner" in ax.get_title()
    assert "follow the width-seeded winner at 4" in ax.get_title()


def test_the_phase_diagram_half_fills_checked_points_the_seeds_do_not_decide():
    from gdln.figures.sweep_figure import sweep_figure

    report = _phase_report(fails_above=None)
    for k, point in enumerate(report["points"][:4]):
        point["checked"] = {"follows": point["winner"], "max_deviation": 0.01, "decided": k % 2 == 0}
    report["agreement"]["checked"] = 4
    fig = sweep_figure(report)
    (ax,) = fig.axes
    half = [line for line in ax.get_lines() if line.get_fillstyle() == "left"]
    assert sum(len(line.get_xdata()) for line in half) == 2  # the two undecided points
    (legend,) = fig.legends
    assert any("do not decide" in text.get_text() for text in legend.get_texts())


def test_the_phase_diagram_marks_a_check_whose_training_diverged():
    """A checked point whose training diverged (issue 40) is drawn as diverged and keyed so, not
    as a point that follows no candidate."""
    from gdln.figures.sweep_figure import DIVERGED, sweep_figure

    report = _phase_report(fails_above=None)
    report["points"][0]["checked"] = {"follows": "xor", "max_deviation": 0.01, "decided": True, "reason": None}
    report["points"][1]["checked"] = {"follows": None, "max_deviation": None, "reason": "diverged at epoch 7"}
    report["agreement"]["checked"] = 1
    fig = sweep_figure(report)
    (legend,) = fig.legends
    texts = [text.get_text() for text in legend.get_texts()]
    assert "training diverged" in texts and "trained: follows none" not in texts
    (ax,) = fig.axes
    colour = matplotlib.colors.to_rgb(DIVERGED["color"])
    marked = [c for c in ax.collections if any(np.allclose(f[:3], colour) for f in c.get_facecolor())]
    assert [len(c.get_offsets()) for c in marked] == [1]


def _line_report(aligned: bool) -> dict:
    """A made-up one-axis sweep over Delta: linear never halves at the first point, two checked
    points at measured half-times 900 and 1500, one of which never halves (drawn at the top)."""
    deltas = [0.5, 1.0, 2.0, 3.0]
    points = []
    for k, delta in enumerate(deltas):
        winner = "xor" if delta < 1.6 else "linear"
        points.append(
            {
                "values": {"Delta": delta},
                "winner": winner,
                "aligned_winner": winner if aligned else None,
                "networks": [
                    {
                        "name": "linear",
                        "t_half": None if k == 0 else 3000.0 / delta,
                        "t_90": None,
                        "final_loss": 0.6,
                        "aligned_t_half": (2500.0 / delta if k else None) if aligned else None,
                    },
                    {
                        "name": "xor",
                        "t_half": 1000.0 + 100 * k,
                        "t_90": None,
                        "final_loss": 0.0,
                        "aligned_t_half": (900.0 + 100 * k) if aligned else None,
                    },
                ],
                "assumptions": None,
                "checked": None,
            }
        )
    points[1]["checked"] = {"follows": "xor", "max_deviation": 0.01, "decided": True, "reason": None, "t_half": 900.0}
    points[3]["checked"] = {"follows": "linear", "max_deviation": 0.02, "decided": True, "reason": None, "t_half": None}
    report = _phase_report(fails_above=None)
    report["axes"] = [{"name": "Delta", "values": deltas, "log": False}]
    report["points"] = points
    report["seeds"]["aligned"] = report["seeds"]["aligned"] if aligned else None
    report["agreement"] = {**report["agreement"], "checked": 2, "agree": 2, "aligned_agree": 2 if aligned else 0}
    return report


@pytest.mark.parametrize("aligned", [True, False])
def test_a_one_axis_sweep_draws_half_times_and_checked_points_where_they_were_measured(aligned):
    """Issue 39, point 6: one quantity (t_half) on the epochs axis, the checked points at their
    measured t_half (at the top edge where they never halve), a candidate that never halves
    marked at the top, the fixed settings in the title, and a race that did not run named with
    its reason instead of a count of agreements."""
    from gdln.figures.sweep_figure import sweep_figure

    report = _line_report(aligned)
    fig = sweep_figure(report)
    (ax,) = fig.axes
    assert "t_half" in ax.get_ylabel() and "t_90" not in ax.get_ylabel()
    checked = {tuple(o) for c in ax.collections for o in c.get_offsets()}
    assert (1.0, 900.0) in checked and (3.0, 12000.0) in checked
    top = [line for line in ax.get_lines() if line.get_marker() == "^"]
    assert [(list(line.get_xdata()), list(line.get_ydata())) for line in top] == [([0.5], [12000])] * (1 + aligned)
    assert ax.get_ylim()[1] >= 12000
    title = ax.get_title()
    assert "learning rate 0.01" in title and "128 hidden units" in title and "Delta" not in title
    assert ("alignment-seeded winner at 2" in title) == aligned
    assert ("the alignment-seeded race names no winner" in title) == (not aligned)
    (legend,) = fig.legends
    texts = [text.get_text() for text in legend.get_texts()]
    assert "never falls to half within 12000 epochs" in texts
    assert any("alignment-seeded race" in t for t in texts) == aligned


def test_the_phase_diagram_counts_hidden_units_in_integers():
    """A log axis of hidden units has the grid's own values as ticks, written as integers
    (at most COUNT_TICKS of them), where a log scale would write 2x10^1."""
    from gdln.figures.sweep_figure import COUNT_TICKS, sweep_figure

    def over_widths(widths):
        report = _phase_report(fails_above=None)
        deltas = report["axes"][0]["values"]
        report["axes"][1] = {"name": "hidden_units", "values": widths, "log": True}
        template = report["points"][0]
        report["points"] = [
            {**template, "values": {"Delta": d, "hidden_units": w}, "winner": "xor" if d < 2 else "linear"}
            for d in deltas
            for w in widths
        ]
        for point in report["points"]:
            point["aligned_winner"] = point["winner"]
        return sweep_figure(report)

    fig = over_widths([8.0, 16.0, 32.0])
    fig.canvas.draw()
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    assert list(ax.get_yticks()) == [8.0, 16.0, 32.0]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["8", "16", "32"]
    (ax,) = over_widths(list(np.geomspace(8, 512, 13).round())).axes
    assert 4 <= len(ax.get_yticks()) <= COUNT_TICKS


def test_a_map_title_says_where_the_prediction_was_measured():
    """The map's title gives the rule's agreement from the map's own trained points where it
    decides at some; where it decides at none of them it says so, and names the docs' table."""
    from gdln.figures.sweep_figure import PREDICTED_TABLE, predicted_agreement_title

    none_checked = predicted_agreement_title({"checked": 0})
    assert PREDICTED_TABLE in none_checked and "trained points" not in none_checked
    undecided = predicted_agreement_title({"checked": 9, "predicted_decided": 0, "predicted_agree": 0})
    assert "undecided at all 9 trained points" in undecided and PREDICTED_TABLE in undecided
    counted = predicted_agreement_title({"checked": 24, "predicted_decided": 11, "predicted_agree": 11})
    assert "followed at 11 of the 11 checked points where it decides" in counted
