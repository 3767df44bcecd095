"""The reports of racing the candidates and of training against them: `RaceReport`,
`VerifyReport` (which candidate a trained ReLU network follows, with its verdicts in words) and
`SimulateReport`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import Report, crossover_line, markdown_table, optional, table_cell
from .records import Crossover, PredictedFollows, VerifiedNetwork


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
        crossovers: the derived crossovers of each pair (`Crossover` records): ``networks``,
            ``parameter``, ``expr``, ``value``, ``faster_below``, ``faster_above``.
        predicted_validity: with ``predict_validity``, the theory's own verdict on where it holds
            (``verify.rules.predicted_validity``), as in `VerifyReport`; else ``None``.
        predicted_follows: with ``predict_validity``, the candidate the ReLU network is predicted
            to follow, without training (`verify.rules.predicted_follows`): ``network`` (``None``
            where undecided), ``nearest``, ``margin``, ``decided``, ``deviations``; else ``None``.
        exceptional_point: where the point lies on the generic derivation's exceptional set or
            outside its domain, the condition it meets (``"a = b"``): everything was derived at
            the point, exactly, as ``--set`` derives it (`derive.exceptional`); else ``None``.
    """

    RECORDS: ClassVar[dict[str, tuple[type[Report], bool]]] = {
        "crossovers": (Crossover, True),
        "predicted_follows": (PredictedFollows, False),
    }

    parameters: dict[str, float]
    horizon: float
    networks: list[dict[str, Any]]
    ranking: list[str]
    winner: str | None
    crossovers: list[Crossover]
    predicted_validity: dict[str, Any] | None = optional()
    predicted_follows: PredictedFollows | None = optional()
    exceptional_point: str | None = optional()

    def _repr_markdown_(self) -> str:
        columns = [
            ("name", "network"),
            ("t_half", "t_half (epochs)"),
            ("t_90", "t_90 (epochs)"),
            ("final_loss", "final loss / initial"),
            ("dynamics", "dynamics"),
        ]
        values = ", ".join(f"{name} = {table_cell(value)}" for name, value in self.parameters.items())
        head = f"**winner: {table_cell(self.winner)}**" + (f" at {values}" if values else "")
        lines = [head, "", markdown_table(self.networks, columns)]
        for crossover in self.crossovers:
            lines += ["", crossover_line(crossover)]
        if self.predicted_validity is not None:
            lines += ["", f"predicted validity: {predicted_validity_text(self.predicted_validity)}"]
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
        predicted_validity: with alignment initial conditions, the theory's own verdict, made
            before training (``verify.rules.predicted_validity``): ``gates_move_at``,
            ``relu_gap``, ``small_init``, ``within_validity``; else ``None``.
        agf: with ``agf``, the Alternating Gradient Flows model of the ReLU network
            (``numeric.agf``): ``dynamics``, ``neglected_fraction``, ``max_deviation``,
            ``mean_deviation``, ``t_half_predicted``, ``t_half_relu``, ``activated_units`` and
            ``first_activation`` per seed, ``within_validity``; else ``None``.
        notes: where a prediction or the training diverged; else ``None``.
        census: on context tasks, the hidden units' gate census; else ``None``.
        mds: on context tasks, the followed candidate's representations against the ReLU
            network's; else ``None``.
        predicted_follows: with the alignment phase, the candidate predicted to be followed before
            training, as in `RaceReport`.
        exceptional_point: as in `RaceReport`: the condition the point meets where the generic
            derivation fails there (everything derived at the point), else ``None``.
    """

    RECORDS: ClassVar[dict[str, tuple[type[Report], bool]]] = {
        "networks": (VerifiedNetwork, True),
        "predicted_follows": (PredictedFollows, False),
    }

    parameters: dict[str, float]
    seeds: int
    epochs: int
    initial_conditions: str
    time_model: str
    follows: str | None
    resolution: dict[str, Any]
    validity: float
    within_validity: bool | None
    networks: list[VerifiedNetwork]
    alignment: dict[str, Any] | None = optional()
    predicted_validity: dict[str, Any] | None = optional()
    predicted_follows: PredictedFollows | None = optional()
    agf: dict[str, Any] | None = optional()
    notes: list[str] | None = optional()
    census: dict[str, Any] | None = optional()
    mds: dict[str, Any] | None = optional()
    exceptional_point: str | None = optional()

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
        if self.agf is not None:
            verdict += f"\n\n{agf_text(self.agf)}"
        return f"**the ReLU network follows: {table_cell(self.follows)}**{said}\n\n{verdict}\n\n" + markdown_table(
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


def validity_text(follows: str | None, networks: Sequence[Mapping], validity: float) -> str:
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


def agf_text(agf: Mapping[str, Any]) -> str:
    """The Alternating Gradient Flows model's entry of ``verify`` in words."""
    where = {True: "within", False: "outside", None: "not judged: no finite deviation,"}[agf["within_validity"]]
    size = "not finite" if agf["max_deviation"] is None else f"{100 * agf['max_deviation']:.3g}% of the initial loss"
    units = ", ".join(str(n) for n in agf["activated_units"])
    return f"{agf['dynamics']} (AGF): max deviation {size}, {where} where the theory holds; units activated per seed: {units}"


def predicted_follows_text(predicted: Mapping[str, Any]) -> str:
    """`verify.rules.predicted_follows`'s verdict in one line."""
    nearest, margin = predicted["nearest"], predicted["margin"]
    if nearest is None:
        return "undecided: no candidate's curve is finite and apart from the others"
    gap = "" if margin is None else f", {margin:.2g}x the aligned GDLN's measured error nearer than the next"
    if predicted["decided"]:
        return f"{nearest} (nearest the aligned GDLN's curve{gap})"
    why = predicted.get("why_undecided")
    if why is not None and (margin is None or margin >= 1.0):  # wide enough: undecided for another reason
        return f"undecided: {why} ({nearest} is nearest the aligned GDLN's curve)"
    return f"undecided: {nearest} is nearest the aligned GDLN's curve, but only by {margin:.2g}x its measured error"


def predicted_validity_text(predicted: Mapping[str, Any]) -> str:
    """The theory's own verdict (``verify.rules.predicted_validity``) in words."""
    where = "within" if predicted["within_validity"] else "outside"
    if not predicted["small_init"]:
        return f"no alignment phase at every seed (init too large for the theory): {where} where the theory holds"
    moved = (
        "its frozen gates hold"
        if predicted["gates_move_at"] is None
        else f"its frozen gates begin to move at epoch {predicted['gates_move_at']}"
    )
    gap = predicted["relu_gap"]
    # one wording at every size, 0 included: the Results page's check compares it number by number
    size = f"more than {100 * predicted['validity']:g}%" if gap > predicted["validity"] else f"{100 * gap:.3g}%"
    parts = f"a ReLU network holding the theory's weights parts from its loss by {size} of the initial loss"
    return f"{moved}; {parts}: {where} where the theory holds ({100 * predicted['validity']:g}%)"


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
