"""`SweepReport`: the race at every point of a grid, and its Markdown tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Report, markdown_table, table_cell
from .records import SweepPoint


@dataclass(frozen=True)
class SweepReport(Report):
    """`sweep_report`'s result: the race at every point of a grid (the contract is on the Phase
    diagrams page). As Markdown: the agreement with training, where each race's winner changes
    along the first axis, and the checked points (the grid itself is drawn by ``--plot``).

    Attributes:
        spec: the spec's file (or source).
        axes: ``name``, ``values`` and ``log`` of each axis, the last varying fastest.
        seeds: how each race seeds its pathways: ``width`` and ``aligned``, in words.
        training: the spec's training settings (``learning_rate``, ``init_scale``,
            ``hidden_units``, ``epochs``, ``seeds``); an axis of the same name replaces its value.
        validity: the largest deviation of the initial loss at which a prediction holds.
        assumptions: the theory's assumptions checked at each point, in words, and ``output_fraction``.
        points: one `SweepPoint` per grid point, the last axis varying fastest
            (``points[i].checked.follows``: the candidate the trained network follows there).
        invalid_points: the indices of points whose data are not finite.
        crossovers: the derived crossovers along the grid.
        agreement: how often the trained networks followed each race's winner.
        timing: seconds spent: ``theory_s``, ``aligned_s``, ``training_s``, ``training_run_s``; and
            ``processes``, how many processes shared the training.
    """

    RECORDS: ClassVar[dict[str, tuple[type[Report], bool]]] = {"points": (SweepPoint, True)}

    spec: str
    axes: list[dict[str, Any]]
    seeds: dict[str, Any]
    training: dict[str, Any]
    validity: float
    assumptions: dict[str, Any]
    points: list[SweepPoint]
    invalid_points: list[int]
    crossovers: list[dict[str, Any]]
    agreement: dict[str, Any]
    timing: dict[str, Any]

    def _repr_markdown_(self) -> str:
        blocks = [self._agreement(), self._boundaries()]
        checked = [p for p in self.points if p["checked"] is not None]
        if checked:
            blocks.append(self._checked(checked))
        return "\n\n".join(block for block in blocks if block)

    def _agreement(self) -> str:
        """How often the trained networks followed each race's winner, over all checked points
        and the subsets the report counts, and where the disagreements lie; one row per measure."""
        agreement = self.agreement
        if not agreement["checked"]:
            diverged = sum(bool(p["checked"] and p["checked"].get("reason")) for p in self["points"])
            if diverged:
                return f"no checked point followed a candidate: training diverged at {diverged} (see `reason`)"
            return "no point checked by training (--check N)"
        disagree = agreement["disagree_points"]

        def followed(counts: dict) -> str:
            share = counts["checked"] or 1
            return (
                f"{counts['checked']} points: {counts['aligned_agree']} ({counts['aligned_agree'] / share:.0%})"
                f" the alignment-seeded, {counts['agree']} ({counts['agree'] / share:.0%}) the width-seeded"
            )

        def among(key: str, value: Any = True) -> str:
            return f"{sum(d.get(key) is value for d in disagree)} of {len(disagree)}"

        def predicted(counts: dict) -> str:
            decided = counts.get("predicted_decided", 0)
            if not decided:
                return f"decides at none of the {counts['checked']}"
            agree = counts["predicted_agree"]
            return f"decides at {decided} of the {counts['checked']}; followed at {agree} ({agree / decided:.0%})"

        rows = [
            ("followed each race's winner, at all checked points", followed(agreement)),
            ("followed the predicted network (painted on the map), where its rule decides", predicted(agreement)),
            ("disagreements next to the aligned boundary", among("next_to_aligned_boundary")),
            (f"disagreements outside validity (> {table_cell(self.validity)})", among("outside_validity")),
        ]
        if "within_assumptions" in agreement:
            rows += [
                (
                    "followed each race's winner, where the theory's assumptions hold",
                    followed(agreement["within_assumptions"]),
                ),
                (
                    "followed the predicted network, where the theory's assumptions hold",
                    predicted(agreement["within_assumptions"]),
                ),
                ("disagreements where the assumptions fail", among("outside_assumptions")),
            ]
        if "decided" in agreement:
            rows += [
                (
                    "followed each race's winner, where the seeds decide which it follows",
                    followed(agreement["decided"]),
                ),
                ("followed the predicted network, where the seeds decide", predicted(agreement["decided"])),
                ("disagreements the seeds do not decide", among("decided", False)),
            ]
        return markdown_table(
            [{"measure": measure, "value": value} for measure, value in rows],
            [("measure", "checked by training"), ("value", "result")],
        )

    def _boundaries(self) -> str:
        """Along the first axis, between which values the predicted followed network (undecided
        counts as a value of its own) and each race's winner change; one row per run of
        second-axis values where all three change at the same places."""
        axes = self.axes
        first = axes[0]
        size = len(first["values"])
        lines = len(self.points) // size
        rows: list[dict] = []
        for line in range(lines):
            # points run with the last axis fastest: a line of the first axis is a stride of `lines`
            points = [self.points[line + k * lines] for k in range(size)]
            changes = {
                key: "; ".join(
                    f"{table_cell(points[k]['values'][first['name']])} to {table_cell(points[k + 1]['values'][first['name']])}"
                    for k in range(size - 1)
                    if of(points[k]) != of(points[k + 1])
                )
                or "none"
                for key, of in _PAINTED.items()
            }
            other = points[0]["values"].get(axes[1]["name"]) if len(axes) > 1 else None
            if rows and all(rows[-1][key] == changes[key] for key in _PAINTED):
                rows[-1]["to"] = other
                continue
            rows.append({"from": other, "to": other, **changes})
        columns = [
            ("predicted", f"predicted followed network changes between ({first['name']})"),
            ("aligned_winner", f"alignment-seeded winner changes between ({first['name']})"),
            ("winner", f"width-seeded winner changes between ({first['name']})"),
        ]
        if len(axes) > 1:
            for row in rows:
                row["at"] = (
                    table_cell(row["from"])
                    if row["from"] == row["to"]
                    else f"{table_cell(row['from'])} to {table_cell(row['to'])}"
                )
            columns.insert(0, ("at", axes[1]["name"]))
        return markdown_table(rows, columns)

    def _checked(self, checked: list[SweepPoint]) -> str:
        names = list(checked[0]["values"])
        rows = [
            {
                **point["values"],
                "winner": point["winner"],
                "aligned_winner": point["aligned_winner"],
                "aligned_margin": point["aligned_margin"],
                "predicted": _predicted_cell(point.get("predicted_follows")),
                "follows": point["checked"]["follows"],
                "max_deviation": point["checked"]["max_deviation"],
                "assumptions": _assumptions_cell(point.get("assumptions")),
                "decided": _decided_cell(point["checked"]),
            }
            for point in checked
        ]
        columns = [(name, name) for name in names] + [
            ("winner", "width-seeded winner"),
            ("aligned_winner", "alignment-seeded winner"),
            ("aligned_margin", "its margin"),
            ("predicted", "predicted to be followed (margin)"),
            ("follows", "trained network follows"),
            ("max_deviation", "max deviation (of the initial loss)"),
            ("assumptions", "theory's assumptions"),
            ("decided", "seeds decide (lead against the lead needed)"),
        ]
        return markdown_table(rows, columns)


def _predicted_network(point: dict) -> str | None:
    """The network a point is predicted to be followed by, ``None`` where the rule is undecided."""
    predicted = point.get("predicted_follows")
    return None if predicted is None or not predicted["decided"] else predicted["network"]


#: what the boundaries table follows along the first axis: the map's colour, then the two races
_PAINTED = {
    "predicted": _predicted_network,
    "aligned_winner": lambda point: point["aligned_winner"],
    "winner": lambda point: point["winner"],
}


def _predicted_cell(predicted: dict | None) -> str:
    """The network predicted to be followed and its margin, or "undecided" and the nearest."""
    if predicted is None:
        return "not run"
    margin = f"{predicted['margin']:.3g}"
    if predicted["decided"]:
        return f"{predicted['network']} ({margin})"
    return f"undecided ({margin}; nearest {predicted['nearest']})"


def _decided_cell(checked: dict) -> str:
    """Whether the seeds decide the followed candidate, with the lead and the bar it is held to."""
    if checked.get("decided") is None:
        return "unknown"
    relation = "≥" if checked["decided"] else "<"
    return f"{'yes' if checked['decided'] else 'no'}: {checked['lead']:.3g} {relation} {checked['lead_needed']:.3g}"


def _assumptions_cell(assumptions: dict | None) -> str:
    """Whether a point's assumptions hold, and which fails where one does."""
    if assumptions is None or assumptions["hold"]:
        return "hold"
    failing = [
        *(["no alignment phase"] if assumptions["small_init"] is False else []),
        *(["learning rate > 2/curvature"] if assumptions["stable_learning_rate"] is False else []),
        *(["learning rate not judged"] if assumptions["stable_learning_rate"] is None else []),
    ]
    return "fail: " + ", ".join(failing)
