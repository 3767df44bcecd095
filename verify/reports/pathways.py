"""The reports of which pathways and gate patterns there are: `UnionReport` (which pathways of
the union grow), `AlignReport` (the gate patterns the alignment phase settles on),
`FindGatesReport` (those of trained networks, by k-means) and `LemmaReport` (those one ReLU unit
can make)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import Report, list_cell, markdown_table, optional, table_cell


@dataclass(frozen=True)
class UnionReport(Report):
    """`union_report`'s result (``gdln union``): every distinct pathway of the candidates in one
    GDLN, trained together by the exact reduced flow, and which of them grow.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        epochs: the horizon.
        dynamics: the prediction followed (``reduced flow`` where pathways interact).
        growth_rule: when a pathway counts as grown, in words.
        final_loss: the loss at the horizon over the initial loss.
        pathways: per pathway: ``name``, ``active``, ``seed`` (its initial strength), ``final``
            (its map's largest singular value at the horizon), ``relative`` (to the strongest),
            ``log10_growth`` (over its seed) and ``grows``.
        grow: the names of the pathways that grow.
        stay: the names of the others.
    """

    parameters: dict[str, float]
    epochs: int
    dynamics: str
    growth_rule: str
    final_loss: float
    pathways: list[dict[str, Any]]
    grow: list[str]
    stay: list[str]

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "pathway"),
            ("grows", "grows"),
            ("relative", "final strength / strongest"),
            ("log10_growth", "log10 (final / seed)"),
        ]
        head = (
            f"**union of every candidate pathway: {len(self.grow)} of {len(self.pathways)} grow** "
            f"({self.dynamics}, {self.epochs} epochs; {self.growth_rule})"
        )
        return head + "\n\n" + markdown_table(self.pathways, columns)


@dataclass(frozen=True)
class AlignReport(Report):
    """`align_report`'s result (``gdln align``): the ReLU network's alignment phase from its initial
    weights, without training.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        seeds: the seeds whose initial weights are aligned.
        time: per seed, the epoch at which the phase ends.
        ended: per seed, whether it ended within the epochs.
        output_fraction: the output's share of the targets that ends the phase.
        patterns: the settled gate patterns: ``active`` and ``units`` (per seed).
        unmatched_units: per network (the spec's and the patterns' GDLN), the units per seed that
            start none of its pathways.
        network: the name of the patterns' GDLN (its ``[[network]]`` table is the TOML returned beside).
        written: with ``--write-spec``, the spec file written with that network; else ``None``.
    """

    parameters: dict[str, float]
    seeds: int
    time: list[int]
    ended: list[bool]
    output_fraction: float
    patterns: list[dict[str, Any]]
    unmatched_units: dict[str, list[int]]
    network: str
    written: str | None = optional()

    def _repr_markdown_(self) -> str:
        rows = [{"active": p["active"], "units": list_cell(p["units"])} for p in self.patterns]
        head = (
            f"**alignment phase: ends at epochs {list_cell(self.time)}** "
            f"(output at {table_cell(self.output_fraction)} of the targets)"
        )
        table = markdown_table(rows, [("active", "on at datapoints"), ("units", "units per seed")])
        return head + "\n\n" + table


@dataclass(frozen=True)
class FindGatesReport(Report):
    """`find_gates_report`'s result (``gdln find-gates``, Appendix B): the gate patterns of trained
    ReLU networks by k-means for each cluster count, and the elbow.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        seeds: the trainings sampled.
        epochs: the epochs trained.
        snapshots: the epochs at which the gates were sampled.
        rows: the gate rows sampled (one per unit and snapshot).
        distinct_rows: how many of them differ.
        silent_rows: the sampled rows off at every datapoint, left out of the clustering.
        rounding: a centroid's entry at or above this is a datapoint of its rounded gate.
        clusters: per cluster count: ``k``, ``patterns`` (``gates``, ``centroid``, ``units``,
            ``realizable``), ``pathways``, ``mse`` (of the found GDLN's predicted loss against the
            ReLU network's) and ``inertia``.
        elbow: the cluster count chosen; ``None`` where kneedle finds no elbow.
        elbow_rule: how it is chosen, in words.
        error_model: how ``mse`` is predicted, in words.
        notes: where no elbow is found, why; else ``None``.
        network: the name of the elbow's network (its ``[[network]]`` table is the TOML returned
            beside); ``None`` without an elbow.
        written: with ``--write-spec``, the spec file written with that network; else ``None``.
    """

    parameters: dict[str, float]
    seeds: int
    epochs: int
    snapshots: list[int]
    rows: int
    distinct_rows: int
    silent_rows: int
    rounding: float
    clusters: list[dict[str, Any]]
    elbow: int | None
    elbow_rule: str
    error_model: str
    notes: list[str] | None = optional()
    network: str | None = optional()
    written: str | None = optional()

    def _repr_markdown_(self) -> str:
        columns = [("k", "k"), ("pathways", "pathways"), ("mse", "mse"), ("inertia", "inertia")]
        head = f"**elbow: k = {table_cell(self.elbow)}** ({self.elbow_rule})"
        return head + "\n\n" + markdown_table(self.clusters, columns)


@dataclass(frozen=True)
class LemmaReport(Report):
    """`enumerate_patterns`'s result (``gdln lemma``, Lemma 4.1): every gate pattern one ReLU unit
    can make on a small dataset, classified.

    Attributes:
        datapoints: the number of datapoints.
        realizable: how many non-empty patterns one ReLU unit can make.
        by_group: how many of them fall in each group (``other``: in none).
        patterns: each realizable pattern: ``pattern`` (its datapoints) and ``group``.
    """

    datapoints: int
    realizable: int
    by_group: dict[str, int]
    patterns: list[dict[str, Any]]

    def _repr_markdown_(self) -> str:
        rows = [{"group": group, "count": count} for group, count in self.by_group.items()]
        head = f"**{self.realizable} realizable patterns of {self.datapoints} datapoints**"
        return head + "\n\n" + markdown_table(rows, [("group", "group"), ("count", "patterns")])
