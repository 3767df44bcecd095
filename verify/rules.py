"""The rules every report and the sweep decide by, each written once: the race order and its
winner, finite crossings of loss curves, and which candidate a trained network follows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gdln.numeric.gate_hold import GateHold, gate_hold
from gdln.numeric.race import first_crossings

from .entries import finite_or_none

#: the theory holds where the followed candidate's largest deviation from the mean ReLU loss stays
#: at or below this fraction of the initial loss: the one threshold of every verdict (``gdln
#: verify``, its Markdown, and the sweep's checked points and maps)
VALIDITY = 0.05


def within_validity(max_deviation: float | None) -> bool | None:
    """Whether a largest deviation (of the initial loss) lies where the theory holds
    (:data:`VALIDITY`); ``None`` where it is not finite."""
    if max_deviation is None or not math.isfinite(max_deviation):
        return None
    return bool(max_deviation <= VALIDITY)


#: the theory's frozen gates count as moved once this share of its units' strength-weighted
#: unit-datapoint pairs disagree with them (:mod:`numeric.gate_hold`): reported as when the gates
#: begin to move, the validity threshold itself, a choice made once and not fitted to any trained loss
GATE_MOTION = VALIDITY

#: the frozen-gate continuation stops once its loss is within this share of the initial loss of
#: the least loss its gates allow: what is left to learn is then a fiftieth of the validity
#: threshold, and the weights, which move with the loss still to fall, all but stop
SETTLED_SHARE = VALIDITY / 50


def frozen_gates_hold(inputs, targets, w1, w2, gates, learning_rates, epochs, initial_losses) -> GateHold:
    """:func:`numeric.gate_hold.gate_hold` of every run (arguments as there) at this rule's levels:
    the gates count as moved at :data:`GATE_MOTION`, a run stops once its ReLU gap passes
    :data:`VALIDITY` (the verdict is then known) or its loss has settled (:data:`SETTLED_SHARE`).
    What :func:`predicted_validity` judges."""
    return gate_hold(
        inputs,
        targets,
        w1,
        w2,
        gates,
        learning_rates,
        epochs,
        initial_losses,
        level=GATE_MOTION,
        gap_limit=VALIDITY,
        margin=SETTLED_SHARE,
    )


def predicted_validity(hold: GateHold, start_epochs, initial_losses) -> dict[str, Any]:
    """The theory's own verdict on where it holds, from the frozen-gate continuation of each seed
    (``hold``, :func:`frozen_gates_hold`; ``start_epochs``, where each seed's continuation began,
    the end of its alignment phase; ``initial_losses``, each seed's loss at epoch 0). No network is
    trained.

    The theory's weights, held by a ReLU network, give a loss that parts from the theory's by the
    ReLU gap (:mod:`numeric.gate_hold`). Predicted within validity where the gates settled in an
    alignment phase at every seed (``small_init``: where the phase ends at epoch 0 the network is
    not in the regime the theory describes) and every seed's largest ReLU gap, of its initial
    loss, is at most :data:`VALIDITY`. Returns ``gates_move_at`` (the first epoch at which a
    seed's share of moved gates reached :data:`GATE_MOTION`, ``None`` where none did),
    ``relu_gap`` (the largest over the seeds; a continuation stops once its gap passes the
    threshold, so a gap above it is where the verdict was known, not how far it would grow),
    ``small_init``, ``within_validity`` and the threshold it is judged by (``validity``)."""
    initial = np.asarray(initial_losses, dtype=float)
    starts = np.asarray(start_epochs)
    moved = np.asarray(hold.moved_at) >= 0
    gap = float(np.max(np.asarray(hold.gaps) / initial))
    small_init = bool(np.all(starts > 0))
    return {
        "gates_move_at": int((starts + np.asarray(hold.moved_at))[moved].min()) if moved.any() else None,
        "relu_gap": gap,
        "small_init": small_init,
        "within_validity": bool(small_init and gap <= VALIDITY),
        "validity": VALIDITY,
    }


def race_order(entry: Mapping[str, Any]) -> tuple:
    """Rank of a race entry (a network, or an orbit of networks): the first to reach 10% of the
    initial loss wins; among those that never do, the lowest final loss; an entry whose
    prediction is not finite ranks last and never wins."""
    finite = entry["final_loss"] is not None
    return (not finite, entry["t_90"] is None, entry["t_90"] or 0.0, entry["final_loss"] if finite else 0.0)


def race_winner(entries: list[dict]) -> tuple[str | None, float | None]:
    """The winner of race entries by :func:`race_order`, and its margin (the relative ``t_90`` gap to
    the runner-up, None where either never reaches 10%). No winner where no prediction is finite, or
    where none reaches 10% within the horizon and the best losses there are equal."""
    ranked = sorted(entries, key=race_order)
    if not ranked or ranked[0]["final_loss"] is None:
        return None, None
    if len(ranked) > 1 and ranked[0]["t_90"] is None and race_order(ranked[0]) == race_order(ranked[1]):
        return None, None
    winner = ranked[0]
    if len(ranked) == 1 or winner["t_90"] is None or ranked[1]["t_90"] is None:
        return winner["name"], None
    return winner["name"], (ranked[1]["t_90"] - winner["t_90"]) / winner["t_90"]


def aligned_winner(t_halves: dict[str, float]) -> tuple[str | None, float | None]:
    """The alignment-seeded race's winner, the first to reach half its initial loss, and its margin
    (the relative ``t_half`` gap to the runner-up); a tie has no winner and margin 0."""
    finite = sorted((t, name) for name, t in t_halves.items() if t is not None)
    if not finite:
        return None, None
    if len(finite) == 1:
        return finite[0][1], None
    if finite[0][0] == finite[1][0]:
        return None, 0.0
    return finite[0][1], (finite[1][0] - finite[0][0]) / finite[0][0]


def _why_undecided(aligned: bool, nearest: str | None, networks: list[dict[str, Any]]) -> str:
    """Why `predicted_follows` names no network, the first reason that applies."""
    if not aligned:
        return UNDECIDED_NO_ALIGNMENT
    if nearest is None:  # followed_candidate finds none: no finite curve, or the two best are one
        return UNDECIDED_TIE if any(math.isfinite(n["max_deviation"]) for n in networks) else UNDECIDED_NOT_FINITE
    return UNDECIDED_MARGIN


def finite_crossings(ts, curves, fraction: float) -> np.ndarray:
    """``crossing_time`` row by row on the finite part of sampled curves ``(rows, samples)``: NaN
    where a row is not finite and positive at the start, or not finite before it reaches
    ``fraction`` of its initial value."""
    curves = np.atleast_2d(np.asarray(curves, dtype=float))
    # samples from a row's first non-finite one on are cut off: a curve that diverged has ended
    finite_so_far = np.logical_and.accumulate(np.isfinite(curves), axis=1)
    starts = curves[:, 0]
    usable = finite_so_far[:, 0] & (starts > 0)
    times = first_crossings(ts, np.where(finite_so_far, curves, np.nan), fraction * np.where(usable, starts, 0.0))
    return np.where(usable, times, np.nan)


def finite_crossing(ts, curve, fraction: float) -> float | None:
    """:func:`finite_crossings` of one curve, None where it has none."""
    return finite_or_none(float(finite_crossings(ts, np.asarray(curve, dtype=float)[None], fraction)[0]))


DECIDED_STANDARD_ERRORS = 2.0


def seed_standard_error(losses) -> float | None:
    """The largest standard error of the seeds' mean loss over the samples, ``(seeds, samples)``,
    as a fraction of the mean initial loss; ``None`` with fewer than two seeds."""
    losses = np.asarray(losses, dtype=float)
    if losses.shape[0] < 2:
        return None
    error = np.std(losses, axis=0, ddof=1) / np.sqrt(losses.shape[0])
    return float(np.max(error) / np.mean(losses[:, 0]))


def follow_resolution(networks: list[dict], follows: str | None, losses) -> dict[str, Any]:
    """Whether the seeds decide the followed candidate (:func:`followed_candidate`): its lead in
    largest deviation over the runner-up (``lead``, a fraction of the initial loss), the seeds'
    standard error (:func:`seed_standard_error`), the lead needed (:data:`DECIDED_STANDARD_ERRORS`
    of them), and ``decided``, whether the lead reaches it (``None`` where either is unknown)."""
    error = seed_standard_error(losses)
    others = sorted(
        n["max_deviation"]
        for n in networks
        if n["name"] != follows and not n["from_alignment"] and math.isfinite(n["max_deviation"])
    )
    ours = next((n["max_deviation"] for n in networks if n["name"] == follows), None)
    lead = others[0] - ours if follows is not None and ours is not None and others else None
    needed = None if error is None else DECIDED_STANDARD_ERRORS * error
    decided = None if lead is None or needed is None else bool(lead >= needed)
    return {"lead": lead, "seed_error": error, "lead_needed": needed, "decided": decided}


def followed_candidate(networks: list[dict]) -> tuple[str | None, list[str]]:
    """Verify's rule: the candidate the ReLU network follows is the one with the smallest largest
    deviation (to 4 decimals of the initial loss), then the smallest mean deviation; candidates
    from the alignment phase itself and non-finite deviations never count. ``None``, with a
    note, when none is finite or the two best are the same curve."""
    notes: list[str] = []
    # a candidate whose deviation is not finite can never be the one followed (min() would let a NaN win)
    candidates = [
        n
        for n in networks
        if math.isfinite(n["max_deviation"]) and math.isfinite(n["mean_deviation"]) and not n["from_alignment"]
    ]
    ranked = sorted(candidates, key=lambda n: (round(n["max_deviation"], 4), n["mean_deviation"]))
    follows = ranked[0]["name"] if ranked else None
    if follows is None:
        notes.append("no candidate's deviation from the ReLU network is finite: none is followed")
    elif len(ranked) > 1 and all(
        abs(ranked[0][k] - ranked[1][k]) <= 1e-12 * max(1.0, abs(ranked[0][k]))
        for k in ("max_deviation", "mean_deviation")
    ):
        # e.g. every alignment phase still running at the horizon: the predictions are the same curve
        notes.append(
            f"{ranked[0]['name']} and {ranked[1]['name']} are predicted the same curve within the horizon: none is followed"
        )
        follows = None
    return follows, notes


#: the error of the theory's best model of a trained ReLU network, the aligned GDLN (the GDLN of
#: the settled gate patterns): its largest measured deviation from the trained networks, in
#: fractions of the initial loss, where the alignment phase holds (init scale at most 1e-4:
#: 0.003 on XoR, 0.017-0.034 on Section 4 and Section 5 K = 3; docs/accuracy.md). A candidate
#: nearer that model than the next by less than this is not told apart from it.
FOLLOWS_ERROR = 0.034

#: the rule of `predicted_follows`, as the reports state it
FOLLOWS_RULE = (
    "the candidate whose alignment-seeded curve is nearest the aligned GDLN's over the whole run"
    " (verify's rule, the aligned GDLN in the trained network's place); undecided where the next is"
    f" nearer than that by less than {FOLLOWS_ERROR:g} of the initial loss, the aligned GDLN's own measured error"
)


#: why `predicted_follows` decides nothing at a point
UNDECIDED_MARGIN = "the nearest candidate is nearer than the next by less than the rule's error"
UNDECIDED_NOT_FINITE = "no candidate's curve is finite"
UNDECIDED_TIE = "the nearest candidates' curves are the same (a tie: the data do not tell them apart)"
UNDECIDED_NO_ALIGNMENT = (
    "no alignment phase at some seed (its initial output is already near the targets): the"
    " prediction stands on the units the phase settles, and none settle"
)


def predicted_follows(
    curves: Mapping[str, np.ndarray], model: np.ndarray, phase_epochs: Sequence[int] | np.ndarray
) -> dict[str, Any]:
    """The candidate the ReLU network is predicted to follow, without training: of the
    candidates' ``curves`` (alignment-seeded, at the same epochs), the one :func:`followed_candidate`
    picks against ``model``, the aligned GDLN's curve, in the trained network's place; undecided
    where the margin is under 1, and where some seed's alignment phase ends at epoch 0
    (``phase_epochs``, one per seed: at large init the network is lazy, THEORY section 9, and
    the candidates' curves and the model are then only their descents from the initial weights).

    Returns:
        ``network`` (``None`` where undecided), ``nearest`` (the nearest candidate whatever the
        margin), ``margin`` (how much nearer it is than the next, in units of
        :data:`FOLLOWS_ERROR`; ``None`` with one candidate), ``decided``, ``why_undecided``
        (:data:`UNDECIDED_NO_ALIGNMENT`, :data:`UNDECIDED_TIE`, :data:`UNDECIDED_NOT_FINITE` or
        :data:`UNDECIDED_MARGIN`, ``None`` where decided) and
        ``deviations`` (each candidate's largest deviation from the model, in fractions of its
        initial loss)."""
    model = np.asarray(model, dtype=np.float64)
    networks: list[dict[str, Any]] = []
    for name, curve in curves.items():
        gap = np.abs(np.asarray(curve, dtype=np.float64) - model)
        networks.append(
            {
                "name": name,
                "max_deviation": float(np.max(gap) / model[0]),
                "mean_deviation": float(np.mean(gap) / model[0]),
                "from_alignment": False,
            }
        )
    nearest, _ = followed_candidate(networks)
    ranked = sorted(
        (n["max_deviation"] for n in networks if math.isfinite(n["max_deviation"])),
    )
    margin = (ranked[1] - ranked[0]) / FOLLOWS_ERROR if nearest is not None and len(ranked) > 1 else None
    aligned = bool(np.all(np.asarray(phase_epochs) > 0))
    wide = nearest is not None and (margin is None or margin >= 1.0)
    decided = aligned and wide
    return {
        "network": nearest if decided else None,
        "nearest": nearest,
        "margin": margin,
        "decided": decided,
        "why_undecided": None if decided else _why_undecided(aligned, nearest, networks),
        "deviations": {n["name"]: finite_or_none(n["max_deviation"]) for n in networks},
    }
