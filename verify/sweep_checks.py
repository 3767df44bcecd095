"""What ``gdln sweep`` checks and where: the grid points trained (:func:`check_points`), the
theory's assumptions judged at every point before any training (:func:`point_assumptions`,
:func:`stable_descent`), and how the trained networks agree with each race
(:func:`agreement`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gdln.derive.spec import Task
from gdln.numeric.alignment import Alignment
from gdln.numeric.gate_hold import GateHold

from .checks import data_curvature, descent_is_stable
from .rules import frozen_gates_hold, predicted_validity, within_validity

#: runs of the frozen-gate continuation per batch (:func:`points_predicted_validity`): its memory
#: is about this many copies of one run's weights, whatever the grid
VALIDITY_BATCH = 768


def stable_descent(
    task: Task, values: np.ndarray, learning_rates: np.ndarray, ok: np.ndarray, inputs, targets
) -> np.ndarray:
    """Per point (``values``: its parameters, ``(points, parameters)``), whether its learning rate
    keeps gradient descent stable on the theory's largest curvature
    (:func:`verify.checks.descent_is_stable`, verify's warning): ``True``, ``False``, or ``None``
    where it cannot be judged (data not finite, or a curvature that is not finite). The curvature
    depends on the data alone, so it is found once per distinct parameter values."""
    stable = np.full(len(learning_rates), None, dtype=object)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return stable
    _, first, which = np.unique(values[rows], axis=0, return_index=True, return_inverse=True)
    curvatures = np.array([data_curvature(task, inputs[rows[i]], targets[rows[i]])[0] for i in first])
    for k, row in enumerate(rows):
        curvature = float(curvatures[which.ravel()[k]])
        if math.isfinite(curvature):
            stable[row] = descent_is_stable(float(learning_rates[row]), curvature)
    return stable


def point_assumptions(phase_epochs: np.ndarray, stable: bool | None) -> dict[str, Any]:
    """What the theory assumes at a point, judged before any training (THEORY section 9):
    ``small_init``, the alignment phase runs at every seed (it ends at epoch 0 when the initial
    output already reaches :data:`numeric.alignment.OUTPUT_FRACTION` of the targets, so the gates
    never settle); ``stable_learning_rate``, as verify's warning judges it (``None`` where it
    cannot be judged); ``hold``, both known to hold: an assumption that is unknown does not hold."""
    small_init = bool(np.all(phase_epochs > 0))
    return {
        "phase_epochs": [int(e) for e in phase_epochs],
        "small_init": small_init,
        "stable_learning_rate": stable,
        "hold": small_init and stable is True,
    }


def points_predicted_validity(
    phase: Alignment, inputs: np.ndarray, targets: np.ndarray, learning_rates: np.ndarray, horizon: int, seeds: int
) -> list[dict[str, Any]]:
    """The theory's own verdict (:func:`verify.rules.predicted_validity`) at every point of an
    alignment-seeded race: ``phase`` holds its runs point by point, seed by seed, with their
    data ``inputs``, ``targets`` and steps ``learning_rates`` (one per run); each run's settled
    units continue with frozen gates from the phase's end, :data:`VALIDITY_BATCH` runs at a time."""
    runs = len(phase.epochs)
    starts = np.asarray(phase.epochs, dtype=np.int64)
    initial = np.asarray(phase.losses)[:, 0]
    pieces = []
    for first in range(0, runs, VALIDITY_BATCH):
        rows = slice(first, min(runs, first + VALIDITY_BATCH))
        pieces.append(
            frozen_gates_hold(
                inputs[rows],
                targets[rows],
                phase.w1[rows],
                phase.w2[rows],
                phase.gates[rows],
                learning_rates[rows],
                horizon - starts[rows],
                initial[rows],
            )
        )
    hold = GateHold.concatenate(pieces)
    found = []
    for point in range(runs // seeds):
        rows = slice(point * seeds, (point + 1) * seeds)
        found.append(predicted_validity(hold.take(rows), starts[rows], initial[rows]))
    return found


def predicted_agreement(points: list[dict]) -> dict[str, Any] | None:
    """How often the predicted validity (``points[i].predicted_validity``) is the measured one
    (the followed candidate's deviation against :data:`verify.rules.VALIDITY`) at the checked
    points, and where it is not; ``None`` where no checked point has both."""
    both = [
        i
        for i, p in enumerate(points)
        if p.get("predicted_validity") is not None
        and p["checked"] is not None
        and within_validity(p["checked"]["max_deviation"]) is not None
    ]
    if not both:
        return None

    def measured(i: int) -> bool | None:
        return within_validity(points[i]["checked"]["max_deviation"])

    disagree = [i for i in both if points[i]["predicted_validity"]["within_validity"] != measured(i)]
    return {
        "checked": len(both),
        "agree": len(both) - len(disagree),
        "disagree_points": [
            {
                "index": i,
                "values": points[i]["values"],
                "predicted_within": points[i]["predicted_validity"]["within_validity"],
                "measured_within": measured(i),
            }
            for i in disagree
        ],
    }


def agreement(points: list[dict], near_boundary: set[int]) -> dict[str, Any]:
    """How often the trained networks follow each race's winner: over all checked points, over
    those where the theory's assumptions hold, and over those where the seeds decide which
    candidate is followed (:func:`verify.rules.follow_resolution`); and each disagreement,
    placed against the aligned boundary (``near_boundary``: flat indices), the validity contour,
    the assumptions and the seeds' resolution."""
    indices = [i for i, p in enumerate(points) if p["checked"] is not None and p["checked"]["follows"] is not None]
    checked = [points[i] for i in indices]
    within = [p for p in checked if p["assumptions"]["hold"]]
    decided = [p for p in checked if p["checked"].get("decided")]

    def counts(group: list[dict]) -> dict[str, int]:
        return {
            "checked": len(group),
            "agree": sum(p["winner"] == p["checked"]["follows"] for p in group),
            "aligned_agree": sum(p["aligned_winner"] == p["checked"]["follows"] for p in group),
            # the prediction of the followed network counts where it decides (undecided: no claim)
            "predicted_decided": sum(_predicted(p) is not None for p in group),
            "predicted_agree": sum(_predicted(p) == p["checked"]["follows"] for p in group),
        }

    disagree = [i for i in indices if points[i]["aligned_winner"] != points[i]["checked"]["follows"]]
    return {
        **counts(checked),
        "disagree_points": [
            {
                "index": i,
                "values": points[i]["values"],
                "next_to_aligned_boundary": i in near_boundary,
                "outside_validity": within_validity(points[i]["checked"]["max_deviation"]) is False,
                "outside_assumptions": not points[i]["assumptions"]["hold"],
                "decided": points[i]["checked"].get("decided"),
            }
            for i in disagree
        ],
        "within_assumptions": counts(within),
        "decided": counts(decided),
    }


def _predicted(point: dict) -> str | None:
    """The network ``point`` is predicted to follow (`verify.rules.predicted_follows`), ``None``
    where undecided or not predicted."""
    return (point.get("predicted_follows") or {}).get("network")


def boundary_points(labels: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Flat indices of grid points with a neighbour (along an axis) of another label."""
    grid = labels.reshape(shape)
    near = np.zeros(shape, dtype=bool)
    for axis in range(len(shape)):
        differs = np.diff(grid, axis=axis) != 0
        lower = [slice(None)] * len(shape)
        upper = [slice(None)] * len(shape)
        lower[axis], upper[axis] = slice(0, -1), slice(1, None)
        near[tuple(lower)] |= differs
        near[tuple(upper)] |= differs
    return np.flatnonzero(near.ravel())


def check_points(
    labels: np.ndarray, shape: tuple[int, ...], count: int, usable: np.ndarray, *, claimed: np.ndarray | None = None
) -> np.ndarray:
    """``count`` grid points to train at: half next to the boundary of ``labels`` where the theory
    claims it (``claimed``; evenly along it; the whole boundary where it claims none of it), the
    rest spread over every ``usable`` point away from them (:func:`spread_points`); deterministic.

    ``gdln sweep`` claims the boundary where the theory's assumptions hold: where they fail the
    map hatches the region, and a check on the boundary there would test a prediction the theory
    does not make. The spread half still reaches the hatched region, for the validity map."""
    if count <= 0:
        return np.zeros(0, dtype=int)
    boundary = np.array([i for i in boundary_points(labels, shape) if usable[i]], dtype=int)
    if claimed is not None and np.any(claimed[boundary]):
        boundary = boundary[claimed[boundary]]
    near = (
        boundary[np.unique(np.linspace(0, len(boundary) - 1, min(len(boundary), count // 2)).round().astype(int))]
        if len(boundary)
        else np.zeros(0, dtype=int)
    )
    free = usable.copy()
    free[near] = False
    spread = spread_points(shape, count - len(near), free, near)
    return np.sort(np.concatenate([near, spread]).astype(int))


def spread_points(shape: tuple[int, ...], count: int, free: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """``count`` of the ``free`` grid points spread over the grid by farthest-point sampling: each
    next point is the free one farthest from every point already ``taken`` or chosen (distances
    in index units scaled to the axes' lengths; ties to the lowest index). Points evenly spaced
    in flat index would lie on a few diagonals for some counts; these leave no large region of
    the grid without a point."""
    candidates = np.flatnonzero(free)
    count = min(count, len(candidates))
    if count <= 0:
        return np.zeros(0, dtype=int)
    spans = np.maximum(np.array(shape, dtype=float) - 1, 1.0)

    def place(indices):
        return np.stack(np.unravel_index(np.asarray(indices, dtype=int), shape), axis=1) / spans

    where = place(candidates)
    # squared distance of each candidate to the nearest point kept so far; with nothing taken yet
    # all are infinitely far and the first free point comes first
    nearest = (
        np.min(np.sum((where[:, None, :] - place(taken)[None]) ** 2, axis=2), axis=1)
        if len(taken)
        else np.full(len(candidates), np.inf)
    )
    chosen = []
    for _ in range(count):
        best = int(np.argmax(nearest))
        chosen.append(candidates[best])
        nearest = np.minimum(nearest, np.sum((where - where[best]) ** 2, axis=1))
        nearest[best] = -1.0
    return np.array(chosen, dtype=int)
