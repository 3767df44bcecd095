"""The typed entries of the reports: a sweep point, its networks, its assumptions, the network
predicted to be followed, and a checked point. Each is a frozen `Record`: fields read as
attributes (``report.points[3].checked.follows``) or, as before they were typed, as keys
(``report.points[3]["checked"]["follows"]``); ``to_json`` gives the JSON contract of the Phase
diagrams page unchanged, key for key and in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .base import Record, Report, optional


@dataclass(frozen=True, eq=False)
class PredictedFollows(Record):
    """The network the ReLU network is predicted to follow, before any training
    (``verify.rules.predicted_follows``).

    Attributes:
        network: the candidate predicted to be followed; ``None`` where the rule is undecided.
        nearest: the candidate whose alignment-seeded curve lies nearest the aligned GDLN's
            (the GDLN of the settled gate patterns), whatever the margin.
        margin: how much nearer it is than the next candidate, in units of the aligned GDLN's
            own measured error (``verify.rules.FOLLOWS_ERROR``); ``None`` with one candidate.
        decided: whether the rule names a network.
        why_undecided: why it does not, in words; ``None`` where it does.
        deviations: each candidate's largest deviation from the aligned GDLN's curve, in
            fractions of the initial loss (``None`` where not finite).
    """

    network: str | None
    nearest: str | None
    margin: float | None
    decided: bool
    why_undecided: str | None
    deviations: dict[str, float | None]


@dataclass(frozen=True, eq=False)
class NetworkAtPoint(Record):
    """One candidate's race at a sweep point, in epochs.

    Attributes:
        name: the candidate (a gated network of the spec).
        t_half: the width-seeded race's time to half the initial loss (``None``: not within
            the horizon).
        t_90: its time to 90% of the way down.
        final_loss: its loss at the horizon over its initial loss.
        aligned_t_half: the alignment-seeded race's time to half the initial loss.
    """

    name: str
    t_half: float | None
    t_90: float | None
    final_loss: float | None
    aligned_t_half: float | None


@dataclass(frozen=True, eq=False)
class PointAssumptions(Record):
    """What the theory assumes at a point, judged before training (THEORY section 9).

    Attributes:
        phase_epochs: where each seed's alignment phase ends.
        small_init: the alignment phase runs at every seed (it ends after epoch 0).
        stable_learning_rate: the learning rate is at most 2 over the theory's largest
            curvature (``None``: not judged).
        hold: both known to hold.
    """

    phase_epochs: list[int]
    small_init: bool
    stable_learning_rate: bool | None
    hold: bool


@dataclass(frozen=True, eq=False)
class CheckedPoint(Record):
    """A sweep point trained with the spec's seeds, judged by verify's rule.

    Attributes:
        follows: the candidate whose predicted loss curve lies nearest the trained networks'
            mean loss over the run (``None``: none is finite).
        max_deviation: its largest deviation, in fractions of the initial loss.
        deviations: every candidate's largest deviation.
        seeds: the seeds trained.
        lead: how much nearer the followed candidate is than the next.
        seed_error: the standard error of the seeds' mean loss, in the same unit.
        lead_needed: the lead at which the seeds decide (``verify.rules.DECIDED_STANDARD_ERRORS``
            standard errors).
        decided: whether the lead reaches it (``None``: unknown).
        reason: why training failed (``"diverged at epoch N"``), ``None`` where it did not.
        t_half: the epoch at which the trained networks' mean loss falls to half its initial
            value (``None``: not within the epochs).
        agf_deviation: with ``--agf``, the Alternating Gradient Flows model's largest deviation.
    """

    follows: str | None
    max_deviation: float | None
    deviations: dict[str, float | None]
    seeds: int
    lead: float | None
    seed_error: float | None
    lead_needed: float | None
    decided: bool | None
    reason: str | None
    t_half: float | None
    agf_deviation: float | None = optional()


@dataclass(frozen=True, eq=False)
class SweepPoint(Record):
    """One point of a sweep's grid.

    Attributes:
        values: the axes' values there, by name.
        winner: the width-seeded race's winner (the paper's race: each pathway from its width).
        margin: its lead over the next, as a fraction of its ``t_half``.
        aligned_winner: the alignment-seeded race's winner (from the seeds' settled units).
        aligned_margin: its lead.
        networks: each candidate's race (`NetworkAtPoint`).
        assumptions: the theory's assumptions there (`PointAssumptions`); ``None`` where the
            point's data are not finite.
        predicted_validity: verify's prediction of where the theory holds, before training.
        predicted_follows: the network predicted to be followed (`PredictedFollows`), what the
            map paints.
        checked: the training there (`CheckedPoint`), ``None`` where the point was not checked.
        exceptional_point: where the point lies on the generic derivation's exceptional set,
            as ``race`` says it; absent elsewhere.
    """

    RECORDS: ClassVar[dict[str, tuple[type[Report], bool]]] = {
        "networks": (NetworkAtPoint, True),
        "assumptions": (PointAssumptions, False),
        "predicted_follows": (PredictedFollows, False),
        "checked": (CheckedPoint, False),
    }

    # the contract's key: it hides the mapping's ``values()``, which records do not use; a
    # field() of its own, or the dataclass would take that method for the field's default
    values: dict[str, float] = field()  # type: ignore[assignment]
    winner: str | None
    margin: float | None
    aligned_winner: str | None
    aligned_margin: float | None
    networks: list[NetworkAtPoint]
    assumptions: PointAssumptions | None
    predicted_validity: dict[str, Any] | None
    predicted_follows: PredictedFollows | None
    checked: CheckedPoint | None
    exceptional_point: str | None = optional()


@dataclass(frozen=True, eq=False)
class Crossover(Record):
    """A derived crossover of two candidates (``derive.crossover``): the parameter value at which
    their speeds (leading singular values) are equal, so the faster one changes there.

    Attributes:
        networks: the two candidates, ``[first, second]``.
        parameter: the parameter it is solved for.
        expr: its exact value as SymPy text, the other parameters kept symbolic.
        value: that value with the other parameters at the point raced.
        faster_below: the candidate that learns faster below it (``None`` where neither).
        faster_above: the candidate that learns faster above it.
        numeric: ``True`` where SymPy could not solve the equation and the root was found
            numerically; absent otherwise.
        note: why it is numeric, with ``numeric``.
        bracket: the sign change it was refined in, with ``numeric``.
    """

    networks: list[str]
    parameter: str
    expr: str
    value: float
    faster_below: str | None
    faster_above: str | None
    numeric: bool | None = optional()
    note: str | None = optional()
    bracket: list[float] | None = optional()


@dataclass(frozen=True, eq=False)
class VerifiedNetwork(Record):
    """One candidate's prediction against the trained ReLU network (``gdln verify``): its
    deviations are verify's measure of how closely the network follows it.

    Attributes:
        name: the candidate (the aligned GDLN too, with ``from_alignment``).
        max_deviation: the largest gap between its predicted loss and the trained network's mean
            loss, over the run, in fractions of the initial loss.
        mean_deviation: the mean gap, likewise.
        t_half_predicted: the epoch its predicted loss falls to half (``None``: not within the run).
        t_half_relu: the epoch the trained network's mean loss falls to half.
        dynamics: the dynamics predicted: ``closed form``, ``race ODE`` or ``reduced flow``.
        from_alignment: whether the theory added it (the GDLN of the settled gate patterns).
        within_validity: whether its ``max_deviation`` is within the validity threshold (``None``
            where not finite).
    """

    name: str
    max_deviation: float
    mean_deviation: float
    t_half_predicted: float | None
    t_half_relu: float | None
    dynamics: str
    from_alignment: bool
    within_validity: bool | None
