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
    """:func:`verify.reports.race_report`'s result."""

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "network"),
            ("t_half", "t_half (epochs)"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
            ("dynamics", "dynamics"),
        ]
        return f"**winner: {_cell(self.get('winner'))}**\n\n" + markdown_table(self["networks"], columns)


class VerifyReport(dict):
    """:func:`verify.reports.verify_report`'s result."""

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "candidate"),
            ("max_deviation", "max deviation (of the initial loss)"),
            ("mean_deviation", "mean deviation"),
            ("t_half_predicted", "t_half predicted"),
            ("t_half_relu", "t_half ReLU"),
        ]
        return f"**the ReLU network follows: {_cell(self.get('follows'))}**\n\n" + markdown_table(
            self["networks"], columns
        )


class SweepReport(dict):
    """:func:`verify.sweep.sweep_report`'s result: one row per grid point."""

    def _repr_markdown_(self) -> str:
        axes = [axis["name"] for axis in self["axes"]]
        rows = [
            {
                **point["values"],
                "winner": point["winner"],
                "aligned_winner": point["aligned_winner"],
                "follows": (point["checked"] or {}).get("follows"),
            }
            for point in self["points"]
        ]
        columns = [(name, name) for name in axes] + [
            ("winner", "width-seeded winner"),
            ("aligned_winner", "alignment-seeded winner"),
            ("follows", "trained network follows"),
        ]
        return markdown_table(rows, columns)
