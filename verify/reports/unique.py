"""`UniqueReport`: the candidates' orbits under the data's symmetries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Report, markdown_table, optional, table_cell


@dataclass(frozen=True)
class UniqueReport(Report):
    """`unique_report`'s result: the candidates' orbits under the data's symmetries, fastest first.

    Attributes:
        parameters: the spec's parameters at the values raced (name -> value).
        candidates: which networks were raced, in words (the spec's, or the search's).
        automorphisms: the number of the data's automorphisms.
        datapoint_orbits: the datapoints' orbits under them.
        orbits: fastest first: ``networks`` (the members), ``t_90``, ``t_90_spread``,
            ``final_loss``, ``pathways`` (each member's active datapoints per pathway).
        unique: whether the fastest orbit leads the next by more than ``tolerance``.
        margin: its relative lead; ``None`` with one orbit or nothing finite.
        tolerance: the lead needed for ``unique``.
        union: the union network's growth: ``pathways`` with ``name``, ``active``, ``growth``, ``grows``.
        search: with ``max_pathways``, what the exhaustive search found; else ``None``.
    """

    parameters: dict[str, float]
    candidates: str
    automorphisms: int
    datapoint_orbits: list[list[int]]
    orbits: list[dict[str, Any]]
    unique: bool
    margin: float | None
    tolerance: float
    union: dict[str, Any]
    search: dict[str, Any] | None = optional()

    def _repr_markdown_(self) -> str:
        rows = [
            {
                "rank": rank,
                "networks": ", ".join(orbit["networks"]),
                "t_90": orbit["t_90"],
                "final_loss": orbit["final_loss"],
            }
            for rank, orbit in enumerate(self.orbits, start=1)
        ]
        columns = [
            ("rank", "orbit"),
            ("networks", "networks"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
        ]
        verdict = "unique" if self.unique else "not unique"
        margin = self.margin
        lead = "" if margin is None else f", lead over the next orbit {table_cell(100 * margin)}%"
        head = (
            f"**fastest orbit: {verdict}** ({self.automorphisms} automorphisms of the data{lead}; "
            f"unique above {table_cell(100 * self.tolerance)}%)"
        )
        return head + "\n\n" + markdown_table(rows, columns)
