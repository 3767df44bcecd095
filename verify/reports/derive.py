"""The derivations' reports: `DeriveReport` (one network's exact derivation) and
`SharedDeriveReport` (the shared-edge reduction of a graph network)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gdln.derive.words import plural

from .base import Report, crossover_line, exact_cell, markdown_table, optional, table_cell


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
            ``odes`` (``None`` where the system is the reduced flow) and ``closed_form``
            (``None`` without closed forms).
        system: the reduced system: ``kind`` (``groups`` where the group reduction is exact,
            else ``modes``), ``equation``, ``variables`` (``name``, ``label``, ``multiplicity``,
            ``depth``, ``s``, ``d``; ``ode`` and ``closed_form`` where written), ``coupling`` (the
            non-zero entries of ``C``: ``row``, ``column``, and ``expr``/``value`` outside the
            summary) and, outside the summary, ``loss``. Where the race integrates the reduced
            flow, ``kind`` is ``reduced flow`` and the system is that flow: ``variables`` its
            layers, ``coupling`` its named blocks ``Sigma_x(q, p)``, with ``reason``,
            ``pathways``, ``initial``, ``outputs`` and, outside the summary, ``target_power``
            (docs/json.md).
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
        exceptional_set: for a parametric derivation, where it does not hold, each condition
            ``{"expr", "text"}`` (``expr = 0`` on the set; ``text`` as ``a = b``): eigenvalues
            that meet, a rank that changes, an eigenvector formula that vanishes
            (`derive.exceptional`); the derivation is also for positive values only. Every
            command derives at such a point instead. ``None`` without parameters.
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
    exceptional_set: list[dict[str, str]] | None = optional()

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
            else f"the reduced flow on each pathway's weight chain ({len(system['variables'])} layers)"
            if system["kind"] == "reduced flow"
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
            {"path": p["path"], "s": ", ".join(f"{table_cell(v)} = `{e}`" for e, v in zip(p["exprs"], p["values"]))}
            for p in self.singular_values
        ]
        if not rows:
            return head
        table = markdown_table(rows, [("path", "path"), ("s", "singular values s")])
        return f"{head}\n\n{table}\n\n{len(self.odes)} ODEs (Eq. 6), one per edge and mode"
