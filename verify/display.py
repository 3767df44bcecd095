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
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Self

from gdln.derive.words import plural

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
        predicted_validity: with ``predict_validity``, the theory's own verdict on where it holds
            (``verify.rules.predicted_validity``), as in `VerifyReport`; else ``None``.
    """

    parameters: dict[str, float]
    horizon: float
    networks: list[dict[str, Any]]
    ranking: list[str]
    winner: str | None
    crossovers: list[dict[str, Any]]
    predicted_validity: dict[str, Any] | None = optional()

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
            lines += ["", crossover_line(crossover)]
        if self.predicted_validity is not None:
            lines += ["", f"predicted validity: {predicted_validity_text(self.predicted_validity)}"]
        return "\n".join(lines)


def crossover_line(crossover: dict) -> str:
    """A crossover entry in words: the parameter's value (and its exact form where it has a
    radical one) and which network is faster on each side."""
    first, second = crossover["networks"]
    return (
        f"crossover {first} / {second}: {crossover['parameter']}* = {exact_cell(crossover)} "
        f"({crossover['faster_below']} faster below, {crossover['faster_above']} above)"
    )


def exact_cell(entry: dict) -> str:
    """An exact value (``{"expr", "value"}``) for a table: its value, and its expression where it
    is written with radicals (an algebraic number with no radical form is given by value alone)."""
    if "algebraic" in entry or "CRootOf" in entry["expr"] or is_number(entry["expr"]):
        return _cell(entry["value"])
    return f"{_cell(entry['value'])} = `{entry['expr']}`"


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (an exact value written as one needs no expression)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


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
        predicted_validity: with alignment initial conditions, the theory's own verdict, made
            before training (``verify.rules.predicted_validity``): ``gates_move_at``,
            ``loss_then``, ``still_to_fall``, ``within_validity``; else ``None``.
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
    predicted_validity: dict[str, Any] | None = optional()
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
        if self.predicted_validity is not None:
            verdict += f"\n\npredicted before training: {predicted_validity_text(self.predicted_validity)}"
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


def predicted_validity_text(predicted: Mapping[str, Any]) -> str:
    """The theory's own verdict (``verify.rules.predicted_validity``) in words."""
    where = "within" if predicted["within_validity"] else "outside"
    if predicted["gates_move_at"] is None:
        held = "the theory's frozen gates hold while it learns"
    else:
        held = (
            f"the theory's frozen gates move at epoch {predicted['gates_move_at']}, with "
            f"{100 * predicted['still_to_fall']:.3g}% of the initial loss still to fall"
        )
    return f"{held}: {where} where the theory holds ({100 * predicted['validity']:g}%)"


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
        training: the spec's training settings (``learning_rate``, ``init_scale``,
            ``hidden_units``, ``epochs``, ``seeds``); an axis of the same name replaces its value.
        validity: the largest deviation of the initial loss at which a prediction holds.
        assumptions: the theory's assumptions checked at each point, in words, and ``output_fraction``.
        points: one per grid point: ``values``, ``winner``, ``margin``, ``aligned_winner``,
            ``aligned_margin``, ``networks``, ``assumptions``, ``checked`` (``None`` unless trained).
        invalid_points: the indices of points whose data are not finite.
        crossovers: the derived crossovers along the grid.
        agreement: how often the trained networks followed each race's winner.
        timing: seconds spent: ``theory_s``, ``aligned_s``, ``training_s``, ``training_run_s``; and
            ``processes``, how many processes shared the training.
    """

    spec: str
    axes: list[dict[str, Any]]
    seeds: dict[str, Any]
    training: dict[str, Any]
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


@dataclass(frozen=True)
class DeriveReport(Report):
    """`derive_report`'s result: the exact derivation of one network.

    Attributes:
        network: the network derived.
        parameters: the spec's parameters at the values used (name -> value).
        pathways: one entry per pathway: ``name``, ``active`` (its datapoints), ``gate`` (in
            words), ``shape`` (of its ``Sigma_yx``), ``rank``, ``depth`` and ``classes`` (its
            singular classes: ``s``, ``multiplicity``, ``d``, ``kind``, ``degree``); outside the
            summary also ``sigma_yx``, ``sigma_x``, ``singular_values``, ``input_variances``,
            ``odes`` and ``closed_form`` (``None`` without closed forms).
        system: the reduced system: ``kind`` (``groups`` where the group reduction is exact,
            else ``modes``), ``equation``, ``variables`` (``name``, ``label``, ``multiplicity``,
            ``depth``, ``s``, ``d``; ``ode`` and ``closed_form`` where written), ``coupling`` (the
            non-zero entries of ``C``: ``row``, ``column``, and ``expr``/``value`` outside the
            summary) and, outside the summary, ``loss``.
        assumptions: the theory's assumptions and where they fail: ``mutually_diagonalisable``,
            ``pathways_interact``, ``closed_form``, ``failures``, ``symmetric_groups`` and more.
        loss: ``closed_form`` (whether the loss has one), ``initial`` (the loss at zero
            weights) and, outside the summary, ``expr`` (``L(t)``, else ``L(a)``).
        speed: the largest singular value, ``{"expr", "value"}``.
        crossovers: with each other network of the task, in every parameter: ``networks``,
            ``parameter``, ``expr``, ``value``, ``faster_below``, ``faster_above`` (and
            ``numeric``, ``note``, ``bracket`` where solved numerically).
        coupling_numbers: where couplings are named exact numbers: their ``definition``,
            ``couplings`` and, outside the summary, ``mode_vectors``; else ``None``.
        crossovers_not_derived: the task's other networks that cannot be derived, each
            ``{"network", "reason"}`` (no crossover with them is reported); else ``None``.
    """

    network: str
    parameters: dict[str, float]
    pathways: list[dict[str, Any]]
    system: dict[str, Any]
    assumptions: dict[str, Any]
    loss: dict[str, Any]
    speed: dict[str, Any]
    crossovers: list[dict[str, Any]]
    coupling_numbers: dict[str, Any] | None = optional()
    crossovers_not_derived: list[dict[str, str]] | None = optional()

    def _repr_markdown_(self) -> str:
        rows = [
            {
                "name": pathway["name"],
                "gate": pathway["gate"],
                "shape": "x".join(map(str, pathway["shape"])),
                "rank": pathway["rank"],
                "depth": pathway["depth"],
                "classes": "; ".join(f"{exact_cell(c['s'])} ({c['multiplicity']})" for c in pathway["classes"]),
            }
            for pathway in self.pathways
        ]
        columns = [
            ("name", "pathway"),
            ("gate", "on"),
            ("shape", "Sigma_yx"),
            ("rank", "rank"),
            ("depth", "depth"),
            ("classes", "singular values s (modes sharing each)"),
        ]
        system = self.system
        reduction = (
            f"{plural(len(system['variables']), 'shared trajectory', 'shared trajectories')} (exact group reduction)"
            if system["kind"] == "groups"
            else f"one strength per mode ({len(system['variables'])} modes)"
        )
        closed = "yes" if self.assumptions.get("closed_form") else "no"
        head = (
            f"**network {self.network}**: speed s = {exact_cell(self.speed)}; reduced system: {reduction}; "
            f"closed form: {closed}; initial loss {exact_cell(self.loss['initial'])}"
        )
        lines = [head, "", markdown_table(rows, columns)]
        failures = self.assumptions.get("failures", [])
        if failures:
            more = [f"- ... and {len(failures) - 3} more"] if len(failures) > 3 else []
            lines += ["", "the assumptions fail:", *(f"- {failure}" for failure in failures[:3]), *more]
        for crossover in self.crossovers:
            lines += ["", crossover_line(crossover)]
        for other in self.crossovers_not_derived or []:
            lines += ["", f"no crossover with {other['network']}: it cannot be derived ({other['reason']})"]
        return "\n".join(lines)


@dataclass(frozen=True)
class SharedDeriveReport(Report):
    """`shared_derive_report`'s result: the shared-edge reduction (Eq. 6) of one graph network
    whose paths share edges.

    Attributes:
        network: the network derived.
        parameters: the spec's parameters at the values used (name -> value).
        paths: the number of the graph's paths.
        paths_with_data: how many of them carry data.
        modes: the number of modes, one strength per edge each.
        shared_edges: the names of the edges that several paths share.
        assumptions: whether the reduction holds (``holds``) and where it fails (``failures``).
        singular_values: where it holds, per path with data: ``path``, ``exprs`` (exact) and
            ``values`` (at the parameter values; ``None`` where one has none); else empty.
        odes: where it holds, ``tau db/dt = ...`` for each edge and mode; else empty.
        loss: where it holds, the loss in the edges' strengths; else ``None``.
    """

    network: str
    parameters: dict[str, float]
    paths: int
    paths_with_data: int
    modes: int
    shared_edges: list[str]
    assumptions: dict[str, Any]
    singular_values: list[dict[str, Any]]
    odes: list[str]
    loss: str | None = optional()

    def _repr_markdown_(self) -> str:
        holds = self.assumptions["holds"]
        said = "holds" if holds else "fails: " + "; ".join(self.assumptions["failures"][:1])
        head = (
            f"**network {self.network}**: {self.paths} paths ({self.paths_with_data} with data), "
            f"{self.modes} modes, {len(self.shared_edges)} shared edges; the shared-edge reduction {said}"
        )
        rows = [
            {"path": p["path"], "s": ", ".join(f"{_cell(v)} = `{e}`" for e, v in zip(p["exprs"], p["values"]))}
            for p in self.singular_values
        ]
        if not rows:
            return head
        table = markdown_table(rows, [("path", "path"), ("s", "singular values s")])
        return f"{head}\n\n{table}\n\n{len(self.odes)} ODEs (Eq. 6), one per edge and mode"


@dataclass(frozen=True)
class GraphVerifyReport(Report):
    """`graph_verify_report`'s result (``gdln verify`` on a task whose networks share edges):
    the Eq. 6 race against gated graph networks trained from decoupled and from random weights.

    Attributes:
        parameters: the spec's parameters at the values used (name -> value).
        epochs: the epochs trained (one gradient step each).
        seeds: the random-weight seeds trained.
        learning_rate: the training's step.
        init_scale: the standard deviation of the random initial weights.
        networks: per candidate: ``name``, ``theory`` (its ``t_90``/``t_half``), ``trained``
            (the same per seed, from random weights), ``max_deviation_decoupled`` (from decoupled
            weights, where the reduction is exact), ``max_deviation`` (per seed), ``final_loss``
            (``theory`` and ``trained`` per seed), ``layer_singular_values`` (by the edges'
            place: ``trained`` and ``theory``), and ``curves`` where asked for.
        ranking: the candidates by the theory's ``t_90`` (``theory``) and by the trained
            networks' mean (``trained``), fastest first.
    """

    parameters: dict[str, float]
    epochs: int
    seeds: int
    learning_rate: float
    init_scale: float
    networks: list[dict[str, Any]]
    ranking: dict[str, list[str]]

    def _repr_markdown_(self) -> str:
        rows = [
            {
                "name": n["name"],
                "theory": n["theory"]["t_90"],
                "trained": ", ".join(_cell(t) for t in n["trained"]["t_90"]),
                "decoupled": n["max_deviation_decoupled"],
                "random": max(n["max_deviation"]),
            }
            for n in self.networks
        ]
        columns = [
            ("name", "network"),
            ("theory", "t_90 theory (epochs)"),
            ("trained", "t_90 trained, per seed"),
            ("decoupled", "max deviation, decoupled weights"),
            ("random", "max deviation, random weights (largest seed)"),
        ]
        ranking = self.ranking
        head = f"**ranking: theory {', '.join(ranking['theory'])}; trained {', '.join(ranking['trained'])}**"
        return head + "\n\n" + markdown_table(rows, columns)


@dataclass(frozen=True)
class ZeroShotReport(Report):
    """`zero_shot_report`'s result (``gdln zero-shot``): the routing task's error on trained and
    untrained routes, over the number of trained domains and over the init scale.

    Attributes:
        data: the items routed: ``hierarchy`` or ``digits``.
        domains: the number of input (and output) domains M.
        network: the candidate trained.
        seeds: the seeds trained per point.
        epochs: the epochs trained.
        learning_rate: the training's step.
        scale_trained_domains: the K of the init-scale sweep.
        by_trained: per K: ``trained_domains``, ``fraction`` (K / M), ``trained`` and
            ``untrained`` (per seed, the loss over a zero output's on those routes),
            ``similarity`` (per seed, of one item's representations across input domains), and
            ``curves`` where asked for.
        by_init_scale: per init scale: ``init_scale`` and the same per-seed entries.
    """

    data: str
    domains: int
    network: str
    seeds: int
    epochs: int
    learning_rate: float
    scale_trained_domains: int
    by_trained: list[dict[str, Any]]
    by_init_scale: list[dict[str, Any]]

    def _repr_markdown_(self) -> str:
        def mean(values: list[float]) -> float | None:
            finite = [v for v in values if math.isfinite(v)]
            return sum(finite) / len(finite) if finite else None

        def rows(entries: list[dict], key: str) -> list[dict]:
            return [{key: e[key], "trained": mean(e["trained"]), "untrained": mean(e["untrained"])} for e in entries]

        errors = [("trained", "trained routes (mean)"), ("untrained", "untrained routes (mean)")]
        head = (
            f"**{self.network} on the routing task ({self.data})**, M = {self.domains}, "
            f"{plural(self.seeds, 'seed')}: loss over the loss of a zero output"
        )
        return "\n\n".join(
            [
                head,
                markdown_table(rows(self.by_trained, "trained_domains"), [("trained_domains", "K"), *errors]),
                markdown_table(
                    rows(self.by_init_scale, "init_scale"),
                    [("init_scale", f"init scale (K = {self.scale_trained_domains})"), *errors],
                ),
            ]
        )


@dataclass(frozen=True)
class DepthReport(Report):
    """`depth_report`'s result (paper Section 6): a ReLU network with two hidden layers against a
    GDLN graph, both trained from random weights over the same seeds.

    Attributes:
        network: the GDLN compared.
        seeds: the seeds trained.
        epochs: the epochs trained.
        hidden_units: the ReLU network's units per hidden layer.
        init_scale: the standard deviation of the random initial weights.
        initial_loss: the ReLU network's mean loss at epoch 0.
        mean: per model (``relu``, ``gdln``), the loss per epoch, mean over seeds.
        spread: per model, its standard deviation over seeds.
        nearest_the_mean: per model, the seed whose curve is nearest the mean.
        typical: per model, that seed's loss per epoch.
        max_deviation_typical: the largest difference of the two typical curves, over the initial loss.
        max_deviation_mean: the same for the means.
        max_spread: per model, the largest spread over the initial loss.
        first_layer_always_on: per seed, the fraction of first-layer units on at every datapoint.
        second_layer_patterns: per seed, the distinct on-patterns of second-layer units that carry output.
        second_layer_patterns_one_layer_cannot_make: per seed, how many of those one ReLU unit on
            the inputs could not make (where depth breaks Lemma 4.1).
    """

    network: str
    seeds: int
    epochs: int
    hidden_units: int
    init_scale: float
    initial_loss: float
    mean: dict[str, list[float]]
    spread: dict[str, list[float]]
    nearest_the_mean: dict[str, int]
    typical: dict[str, list[float]]
    max_deviation_typical: float
    max_deviation_mean: float
    max_spread: dict[str, float]
    first_layer_always_on: list[float]
    second_layer_patterns: list[int]
    second_layer_patterns_one_layer_cannot_make: list[int]

    def _repr_markdown_(self) -> str:
        rows: list[dict[str, Any]] = [
            {"measure": "max deviation of the typical runs (of the initial loss)", "value": self.max_deviation_typical},
            {"measure": "max deviation of the means", "value": self.max_deviation_mean},
            *({"measure": f"max spread over seeds, {m}", "value": v} for m, v in self.max_spread.items()),
            {"measure": "first-layer units on everywhere, per seed", "value": _list_cell(self.first_layer_always_on)},
            {"measure": "second-layer patterns, per seed", "value": _list_cell(self.second_layer_patterns)},
            {
                "measure": "of them, not made by one ReLU unit on the inputs",
                "value": _list_cell(self.second_layer_patterns_one_layer_cannot_make),
            },
        ]
        head = (
            f"**ReLU network with two hidden layers of {self.hidden_units} units against {self.network}** "
            f"({plural(self.seeds, 'seed')}, {self.epochs} epochs)"
        )
        return head + "\n\n" + markdown_table(rows, [("measure", "measure"), ("value", "value")])


def _list_cell(values: list) -> str:
    return ", ".join(_cell(v) for v in values)


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
        rows = [{"active": p["active"], "units": _list_cell(p["units"])} for p in self.patterns]
        head = (
            f"**alignment phase: ends at epochs {_list_cell(self.time)}** "
            f"(output at {_cell(self.output_fraction)} of the targets)"
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
        head = f"**elbow: k = {_cell(self.elbow)}** ({self.elbow_rule})"
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
