"""The reports' types: frozen dataclasses whose fields are the top-level keys of the JSON that
the commands print (docs/json.md), `Report.to_json` giving that dictionary, and the Markdown
tables a notebook shows (``_repr_markdown_``, ``gdln ... --markdown``).

Nested entries (a network of the race, a point of the sweep) stay the JSON's dictionaries: the
contract names their keys, and a report is read by them (``report.networks[0]["t_90"]``). A
report is also a read-only mapping of its top-level keys (``report["winner"]``), as code written
when reports were dictionaries reads them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Self

#: a field's metadata for a key the JSON has only where it applies; ``None`` leaves it out
OPTIONAL = {"optional": True}


def optional() -> Any:
    """A field that is ``None`` (and absent from the JSON) unless the report has it."""
    return field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True)
class Report(Mapping[str, Any]):
    """What every report shares: its JSON, and a read-only view of its top-level keys."""

    def to_json(self) -> dict[str, Any]:
        """The report as the JSON dictionary the command prints.

        Returns:
            The fields in order, an optional one only where the report has it (a copy: changing
            it leaves the report alone). Non-finite numbers stay as they are; the command's
            ``--json`` writes them as ``null`` and lists them under ``non_finite``.
        """
        return {name: copy.deepcopy(getattr(self, name)) for name in self._keys()}

    @classmethod
    def from_json(cls, entries: Mapping[str, Any]) -> Self:
        """The report of a JSON dictionary: `to_json`'s inverse.

        Args:
            entries: the report's top-level keys and their values.

        Returns:
            The report.

        Raises:
            TypeError: for a key the report does not have, or a required key missing.
        """
        known = {f.name for f in fields(cls)}
        unknown = set(entries) - known
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        return cls(**entries)

    def _keys(self) -> list[str]:
        return [f.name for f in fields(self) if not (f.metadata.get("optional") and getattr(self, f.name) is None)]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


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


@dataclass(frozen=True)
class RaceReport(Report):
    """`race_report`'s result: the candidates ranked by their predicted time to learn.

    Attributes:
        parameters: the spec's parameters at the values raced (name -> value).
        horizon: the epochs raced; a crossing after them is ``None``.
        networks: one entry per candidate, in the spec's order: ``name``, ``speed`` (its leading
            singular value, ``{"expr", "value"}``), ``t_half``/``t_90`` (epochs until the loss
            falls to 50%/10% of the initial loss), ``final_loss`` (at the horizon, over the
            initial loss), ``dynamics``, ``closed_form``, ``pathways`` (their singular values),
            ``staged`` with ``staged=True``, and ``stopped_at``/``notes`` where an ODE stopped short.
        ranking: the networks' names, fastest first.
        winner: the fastest network's name; ``None`` where the race cannot tell.
        crossovers: the derived crossovers of each pair: ``networks``, ``parameter``, ``expr``,
            ``value``, ``faster_below``, ``faster_above``.
    """

    parameters: dict[str, float]
    horizon: float
    networks: list[dict[str, Any]]
    ranking: list[str]
    winner: str | None
    crossovers: list[dict[str, Any]]

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "network"),
            ("t_half", "t_half (epochs)"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
            ("dynamics", "dynamics"),
        ]
        values = ", ".join(f"{name} = {_cell(value)}" for name, value in self.parameters.items())
        head = f"**winner: {_cell(self.winner)}**" + (f" at {values}" if values else "")
        lines = [head, "", markdown_table(self.networks, columns)]
        for crossover in self.crossovers:
            first, second = crossover["networks"]
            exact = "" if "CRootOf" in crossover["expr"] else f" = `{crossover['expr']}`"
            lines += [
                "",
                f"crossover {first} / {second}: {crossover['parameter']}* = {_cell(crossover['value'])}{exact} "
                f"({crossover['faster_below']} faster below, {crossover['faster_above']} above)",
            ]
        return "\n".join(lines)


@dataclass(frozen=True)
class VerifyReport(Report):
    """`verify_report`'s result: which candidate a trained ReLU network follows.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        seeds: the ReLU seeds trained.
        epochs: the epochs trained.
        initial_conditions: where the predictions start: ``alignment``, ``weights`` or ``width``.
        time_model: ``gradient descent`` or ``gradient flow``.
        follows: the followed candidate's name (smallest ``max_deviation``); ``None`` if none is finite.
        resolution: whether the seeds decide it: ``lead``, ``seed_error``, ``lead_needed``, ``decided``.
        validity: the largest deviation (of the initial loss) within which the theory holds
            (``verify.rules.VALIDITY``, the sweep's too).
        within_validity: whether the followed candidate's ``max_deviation`` is within ``validity``;
            ``None`` where none is followed.
        networks: per candidate: ``name``, ``max_deviation``, ``mean_deviation`` (of the initial
            loss), ``t_half_predicted``, ``t_half_relu``, ``dynamics``, ``from_alignment`` (the GDLN
            of the settled gates, ``aligned``), ``within_validity``.
        alignment: with alignment initial conditions, the alignment phase: ``time``, ``ended``,
            ``output_fraction``, ``patterns``, ``unmatched_units``; else ``None``.
        notes: where a prediction or the training diverged; else ``None``.
        census: on context tasks, the hidden units' gate census; else ``None``.
        mds: on context tasks, the followed candidate's representations against the ReLU
            network's; else ``None``.
    """

    parameters: dict[str, float]
    seeds: int
    epochs: int
    initial_conditions: str
    time_model: str
    follows: str | None
    resolution: dict[str, Any]
    validity: float
    within_validity: bool | None
    networks: list[dict[str, Any]]
    alignment: dict[str, Any] | None = optional()
    notes: list[str] | None = optional()
    census: dict[str, Any] | None = optional()
    mds: dict[str, Any] | None = optional()

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "candidate"),
            ("max_deviation", "max deviation (of the initial loss)"),
            ("mean_deviation", "mean deviation"),
            ("t_half_predicted", "t_half predicted"),
            ("t_half_relu", "t_half ReLU"),
        ]
        said = resolution_text(self.resolution)
        said = f"; {said}" if said else ""
        verdict = validity_text(self.follows, self.networks, self.validity)
        return f"**the ReLU network follows: {_cell(self.follows)}**{said}\n\n{verdict}\n\n" + markdown_table(
            self.networks, columns
        )


@dataclass(frozen=True)
class SimulateReport(Report):
    """`simulate_report`'s result: one model trained from the spec, per seed.

    Attributes:
        model: the network trained (``relu`` or a candidate's name).
        parameters: the spec's parameters at the values used (name -> value).
        seeds: the seeds trained.
        epochs: the epochs trained.
        dtype: the training's float type.
        devices: the devices the seeds were spread over.
        t_half: per seed, the epoch at which the loss falls to 50% of the initial (``None``: never).
        t_90: per seed, the same for 10%.
        loss_final: per seed, the loss after the last epoch.
        notes: the seeds whose gradient descent diverged; else ``None``.
    """

    model: str
    parameters: dict[str, float]
    seeds: int
    epochs: int
    dtype: str
    devices: int
    t_half: list[float | None]
    t_90: list[float | None]
    loss_final: list[float]
    notes: list[str] | None = optional()


def validity_text(follows: str | None, networks: list[dict], validity: float) -> str:
    """The verdict's validity in words: the followed candidate's largest deviation against the
    threshold where the theory holds, and the aligned network's (the GDLN of the settled gates,
    the other level of the theory) where it was predicted."""
    said = []
    for network in networks:
        if network["name"] != follows and not network.get("from_alignment"):
            continue
        deviation = network["max_deviation"]
        where = {True: "within", False: "outside", None: "not judged: no finite deviation,"}[
            network.get("within_validity")
        ]
        role = "followed" if network["name"] == follows else "the GDLN of the settled gates"
        size = "not finite" if deviation is None else f"{100 * deviation:.3g}% of the initial loss"
        said.append(
            f"{network['name']} ({role}): max deviation {size}, {where} where the theory holds ({100 * validity:g}%)"
        )
    return "; ".join(said)


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
        lead = "" if margin is None else f", lead over the next orbit {_cell(100 * margin)}%"
        head = (
            f"**fastest orbit: {verdict}** ({self.automorphisms} automorphisms of the data{lead}; "
            f"unique above {_cell(100 * self.tolerance)}%)"
        )
        return head + "\n\n" + markdown_table(rows, columns)


@dataclass(frozen=True)
class SweepReport(Report):
    """`sweep_report`'s result: the race at every point of a grid (the contract is on the Phase
    diagrams page). As Markdown: the agreement with training, where each race's winner changes
    along the first axis, and the checked points (the grid itself is drawn by ``--plot``).

    Attributes:
        spec: the spec's file (or source).
        axes: ``name``, ``values`` and ``log`` of each axis, the last varying fastest.
        seeds: how each race seeds its pathways: ``width`` and ``aligned``, in words.
        validity: the largest deviation of the initial loss at which a prediction holds.
        assumptions: the theory's assumptions checked at each point, in words, and ``output_fraction``.
        points: one per grid point: ``values``, ``winner``, ``margin``, ``aligned_winner``,
            ``aligned_margin``, ``networks``, ``assumptions``, ``checked`` (``None`` unless trained).
        invalid_points: the indices of points whose data are not finite.
        crossovers: the derived crossovers along the grid.
        agreement: how often the trained networks followed each race's winner.
        timing: seconds spent: ``theory_s``, ``aligned_s``, ``training_s``, ``training_run_s``.
    """

    spec: str
    axes: list[dict[str, Any]]
    seeds: dict[str, Any]
    validity: float
    assumptions: dict[str, Any]
    points: list[dict[str, Any]]
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

        rows = [
            ("followed each race's winner, at all checked points", followed(agreement)),
            ("disagreements next to the aligned boundary", among("next_to_aligned_boundary")),
            (f"disagreements outside validity (> {_cell(self.validity)})", among("outside_validity")),
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
        *(["learning rate > 2/curvature"] if assumptions["stable_learning_rate"] is False else []),
        *(["learning rate not judged"] if assumptions["stable_learning_rate"] is None else []),
    ]
    return "fail: " + ", ".join(failing)
