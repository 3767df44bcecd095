"""Reports as Jupyter shows them: each report stays the JSON-ready dict it always was, and a
notebook renders it as a Markdown table (``_repr_markdown_``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]]) -> str:
    """``columns`` are ``(key, heading)`` pairs."""
    lines = ["| " + " | ".join(heading for _, heading in columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(key)) for key, _ in columns) + " |" for row in rows]
    return "\n".join(lines)


class RaceReport(dict):
    """:func:`verify.race.race_report`'s result."""

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "network"),
            ("t_half", "t_half (epochs)"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
            ("dynamics", "dynamics"),
        ]
        values = ", ".join(f"{name} = {_cell(value)}" for name, value in self.get("parameters", {}).items())
        head = f"**winner: {_cell(self.get('winner'))}**" + (f" at {values}" if values else "")
        lines = [head, "", markdown_table(self["networks"], columns)]
        for crossover in self.get("crossovers", []):
            first, second = crossover["networks"]
            exact = "" if "CRootOf" in crossover["expr"] else f" = `{crossover['expr']}`"
            lines += [
                "",
                f"crossover {first} / {second}: {crossover['parameter']}* = {_cell(crossover['value'])}{exact} "
                f"({crossover['faster_below']} faster below, {crossover['faster_above']} above)",
            ]
        return "\n".join(lines)


class VerifyReport(dict):
    """:func:`verify.following.verify_report`'s result."""

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "candidate"),
            ("max_deviation", "max deviation (of the initial loss)"),
            ("mean_deviation", "mean deviation"),
            ("t_half_predicted", "t_half predicted"),
            ("t_half_relu", "t_half ReLU"),
        ]
        said = resolution_text(self.get("resolution"))
        said = f"; {said}" if said else ""
        return f"**the ReLU network follows: {_cell(self.get('follows'))}**{said}\n\n" + markdown_table(
            self["networks"], columns
        )


def resolution_text(resolution: dict | None) -> str:
    """Whether the seeds decide the followed candidate (``verify.rules.follow_resolution``), in
    words; empty where that is unknown (one seed, or no rival)."""
    if not resolution or resolution.get("decided") is None:
        return ""
    lead, needed = 100 * resolution["lead"], 100 * resolution["lead_needed"]
    errors = _bar_in_words(resolution)
    if resolution["decided"]:
        return (
            f"decided by the seeds: it leads the runner-up by {lead:.2f}% of the initial loss ({errors}: {needed:.2f}%)"
        )
    return f"not decided by these seeds: it leads the runner-up by {lead:.2f}% of the initial loss, under {errors} ({needed:.2f}%)"


def _bar_in_words(resolution: dict) -> str:
    """The lead needed, as a number of standard errors read off the report (``lead_needed`` over
    ``seed_error``), so that the bar is stated once, in ``verify.rules``."""
    if not resolution["seed_error"]:  # seeds that agree exactly: any lead decides
        return "the seeds' spread, which is zero"
    return f"{resolution['lead_needed'] / resolution['seed_error']:g} standard errors of their mean"


class UniqueReport(dict):
    """:func:`verify.uniqueness.unique_report`'s result: the orbits, fastest first."""

    def _repr_markdown_(self) -> str:
        rows = [
            {
                "rank": rank,
                "networks": ", ".join(orbit["networks"]),
                "t_90": orbit["t_90"],
                "final_loss": orbit["final_loss"],
            }
            for rank, orbit in enumerate(self["orbits"], start=1)
        ]
        columns = [
            ("rank", "orbit"),
            ("networks", "networks"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
        ]
        verdict = "unique" if self["unique"] else "not unique"
        margin = self["margin"]
        lead = "" if margin is None else f", lead over the next orbit {_cell(100 * margin)}%"
        head = (
            f"**fastest orbit: {verdict}** ({self['automorphisms']} automorphisms of the data{lead}; "
            f"unique above {_cell(100 * self['tolerance'])}%)"
        )
        return head + "\n\n" + markdown_table(rows, columns)


class SweepReport(dict):
    """:func:`verify.sweep.sweep_report`'s result: one entry per grid point. As Markdown: the
    agreement with training, where each race's winner changes along the first axis, and the
    checked points (the grid itself is drawn by ``--plot``)."""

    def _repr_markdown_(self) -> str:
        blocks = [self._agreement(), self._boundaries()]
        checked = [p for p in self["points"] if p["checked"] is not None]
        if checked:
            blocks.append(self._checked(checked))
        return "\n\n".join(block for block in blocks if block)

    def _agreement(self) -> str:
        """How often the trained networks followed each race's winner, over all checked points
        and the subsets the report counts, and where the disagreements lie; one row per measure."""
        agreement = self["agreement"]
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

        rows = [
            ("followed each race's winner, at all checked points", followed(agreement)),
            ("disagreements next to the aligned boundary", among("next_to_aligned_boundary")),
            (f"disagreements outside validity (> {_cell(self['validity'])})", among("outside_validity")),
        ]
        if "within_assumptions" in agreement:
            rows += [
                (
                    "followed each race's winner, where the theory's assumptions hold",
                    followed(agreement["within_assumptions"]),
                ),
                ("disagreements where the assumptions fail", among("outside_assumptions")),
            ]
        if "decided" in agreement:
            rows += [
                (
                    "followed each race's winner, where the seeds decide which it follows",
                    followed(agreement["decided"]),
                ),
                ("disagreements the seeds do not decide", among("decided", False)),
            ]
        return markdown_table(
            [{"measure": measure, "value": value} for measure, value in rows],
            [("measure", "checked by training"), ("value", "result")],
        )

    def _boundaries(self) -> str:
        """Along the first axis, between which values each race's winner changes; one row per
        run of second-axis values where both races change at the same places."""
        axes = self["axes"]
        first = axes[0]
        size = len(first["values"])
        lines = len(self["points"]) // size
        rows: list[dict] = []
        for line in range(lines):
            # points run with the last axis fastest: a line of the first axis is a stride of `lines`
            points = [self["points"][line + k * lines] for k in range(size)]
            changes = {
                key: "; ".join(
                    f"{_cell(points[k]['values'][first['name']])} to {_cell(points[k + 1]['values'][first['name']])}"
                    for k in range(size - 1)
                    if points[k][key] != points[k + 1][key]
                )
                or "none"
                for key in ("aligned_winner", "winner")
            }
            other = points[0]["values"].get(axes[1]["name"]) if len(axes) > 1 else None
            if rows and (rows[-1]["aligned_winner"], rows[-1]["winner"]) == (
                changes["aligned_winner"],
                changes["winner"],
            ):
                rows[-1]["to"] = other
                continue
            rows.append({"from": other, "to": other, **changes})
        columns = [
            ("aligned_winner", f"alignment-seeded winner changes between ({first['name']})"),
            ("winner", f"width-seeded winner changes between ({first['name']})"),
        ]
        if len(axes) > 1:
            for row in rows:
                row["at"] = (
                    _cell(row["from"]) if row["from"] == row["to"] else f"{_cell(row['from'])} to {_cell(row['to'])}"
                )
            columns.insert(0, ("at", axes[1]["name"]))
        return markdown_table(rows, columns)

    def _checked(self, checked: list[dict]) -> str:
        names = list(checked[0]["values"])
        rows = [
            {
                **point["values"],
                "winner": point["winner"],
                "aligned_winner": point["aligned_winner"],
                "aligned_margin": point["aligned_margin"],
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
            ("follows", "trained network follows"),
            ("max_deviation", "max deviation (of the initial loss)"),
            ("assumptions", "theory's assumptions"),
            ("decided", "seeds decide (lead against the lead needed)"),
        ]
        return markdown_table(rows, columns)


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
        *(["learning rate > 2/curvature"] if not assumptions["stable_learning_rate"] else []),
    ]
    return "fail: " + ", ".join(failing)
