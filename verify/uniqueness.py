"""Uniqueness of the race winner up to the symmetries of the data (issue: Proposition 4.2 as a
machine check, parts 1 and 3). The candidates are grouped into orbits under the dataset's
automorphisms (:mod:`derive.automorphisms`); members of an orbit learn identically, so the race
ranks orbits. The winner is unique when the fastest orbit is alone: the next orbit's ``t_90``
is more than :data:`UNIQUENESS_TOLERANCE` later (or, if none reaches 10%, its final loss is that
much higher). The union network (:mod:`verify.union`) says which pathways grow when all are
trained together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gdln.derive.automorphisms import automorphisms, datapoint_orbits, network_orbits
from gdln.derive.errors import SpecError
from gdln.derive.spec import Task
from gdln.derive.words import plural
from gdln.numeric.prediction import REDUCED_FLOW, TaskPredictions

from .progress import Stages
from .race import flow_race, race_report
from .reports import UniqueReport
from .rules import race_order
from .search import searched_task
from .union import union_report

#: relative margin by which the fastest orbit must lead for the winner to be unique
UNIQUENESS_TOLERANCE = 0.01


def _margin(first: dict[str, Any], second: dict[str, Any]) -> float | None:
    """How far the second orbit trails the first: relative ``t_90``, or relative final loss when
    neither reaches 10%; ``inf`` when only the first does; ``None`` when nothing is finite."""
    if first["final_loss"] is None:
        return None
    if first["t_90"] is not None:
        return float("inf") if second["t_90"] is None else (second["t_90"] - first["t_90"]) / first["t_90"]
    if second["final_loss"] is None or first["final_loss"] <= 0:
        return None
    return (second["final_loss"] - first["final_loss"]) / first["final_loss"]


def _orbit_entry(members: list[str], by_name: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One orbit's entry: its networks, its fastest time to 10% and the spread of its members'
    (relative: zero where the symmetry is exact), and its least loss at the horizon."""
    times = [by_name[m]["t_90"] for m in members]
    finite = [t for t in times if t is not None]
    return {
        "networks": members,
        "t_90": min(finite) if finite else None,
        "t_90_spread": (max(finite) - min(finite)) / min(finite) if len(finite) > 1 else 0.0,
        "final_loss": min(
            (by_name[m]["final_loss"] for m in members if by_name[m]["final_loss"] is not None), default=None
        ),
    }


def unique_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    *,
    max_pathways: int | None = None,
    patterns: str = "all",
) -> UniqueReport:
    """Orbits of the spec's candidate networks, their race, whether the fastest orbit is alone,
    and the union network's growth.

    Args:
        task: the task and its candidate networks.
        overrides: parameter values that replace the spec's (name -> value).
        max_pathways: replace the spec's candidates by the exhaustive search's
            (`verify.search`): every network of at most that many realizable patterns, one
            per orbit already.
        patterns: the search's patterns: ``"all"``, ``"contexts"`` or ``"self-consistent"``.

    Returns:
        The orbits and the verdict (`UniqueReport`; ``to_json()`` is ``gdln unique --json``).

    Raises:
        SpecError: for a task without networks, or a search the task is too large for."""
    search = None
    if max_pathways is not None:
        task, search = searched_task(task, overrides, max_pathways, patterns)
    if not task.networks:
        raise SpecError(task.source, "network", "uniqueness needs at least one [[network]]")
    models = TaskPredictions(task)
    step = Stages("unique", 3)
    step("automorphisms of the data")
    group = automorphisms(task)
    step(f"race of {plural(len(task.networks), 'candidate')}")
    if search is None:
        race = race_report(task, overrides, models=models)
        parameters, by_name = race["parameters"], {n["name"]: n for n in race["networks"]}
        grouped = network_orbits(task.networks, group)
    else:  # hundreds of candidates, all on the exact reduced flow, already one per orbit
        parameters, by_name = flow_race(task, overrides, models)
        grouped = [[n.name] for n in task.networks]
    orbits = [_orbit_entry(members, by_name) for members in grouped]
    orbits.sort(key=race_order)  # orbits rank as the race ranks networks
    margin = _margin(orbits[0], orbits[1]) if len(orbits) > 1 else None
    unique = len(orbits) == 1 or (margin is not None and margin > UNIQUENESS_TOLERANCE)
    step("growth of the union network")
    # the search races every candidate on its exact reduced flow (`flow_race`), and its union
    # too: no modes derived for a union of up to a hundred pathways (Section 4's took 29 s)
    union = union_report(task, overrides, kind=None if search is None else REDUCED_FLOW)
    step.close()
    names = {n.name: n for n in task.networks}
    for orbit in orbits:
        orbit["pathways"] = [[list(p.active) for p in names[m].pathways] for m in orbit["networks"]]
    report: dict[str, Any] = {
        "parameters": parameters,
        "candidates": "the spec's networks"
        if search is None
        else f"every network of at most {max_pathways} realizable patterns ({patterns}), one per orbit (search)",
        "automorphisms": len(group),
        "datapoint_orbits": datapoint_orbits(group, task.num_datapoints),
        "orbits": orbits,
        "unique": bool(unique),
        "margin": margin,
        "tolerance": UNIQUENESS_TOLERANCE,
        "union": {
            "pathways": [
                {"name": p["name"], "active": p["active"], "growth": p["log10_growth"], "grows": p["grows"]}
                for p in union["pathways"]
            ]
        },
    }
    if search is not None:
        report["search"] = search
    return UniqueReport.from_json(report)
