"""``gdln sweep``: the race, and where the theory holds, over a grid of one or two parameters.

At every grid point, three answers, each computed for all points at once where the dynamics allow:

- the **width-seeded race** (``winner``): every candidate started from its width and the init
  scale, exactly as :func:`verify.race.race_report` races it (same seeds, crossings solved on
  the dynamics, same ranking :func:`verify.rules.race_order`);
- the **alignment-seeded race** (``aligned_winner``): the alignment phase of the spec's ReLU
  seeds runs from their initial weights, no training, and each candidate continues from the
  units that settled on its gates, as ``gdln verify`` predicts; the candidate with the smallest
  predicted ``t_half`` wins;
- the **derived crossovers**: the exact parameter values where two candidates' speeds tie.

With ``check`` points, ReLU networks are trained there (all points and seeds in one program)
and the candidate each follows is found by verify's own rule; its deviation maps where the
theory holds (:data:`verify.rules.VALIDITY`; the checks, the assumptions and the agreement
are in :mod:`verify.sweep_checks`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import sympy

from gdln.derive.algebraic import as_text
from gdln.derive.errors import SpecError
from gdln.derive.spec import (
    EvaluationError,
    Task,
    evaluate,
)
from gdln.derive.words import plural
from gdln.numeric.aligned_model import pattern_chain_starts, pattern_chain_step, pattern_rows
from gdln.numeric.alignment import OUTPUT_FRACTION
from gdln.numeric.prediction import TaskPredictions
from gdln.numeric.sweep import (
    SWEEP_RTOL,
    BatchedRace,
    align_points,
    aligned_descent,
    aligned_descent_chunks,
    closed_form_race,
    ode_race_points,
)
from gdln.numeric.training import initial_relu_weights

from . import rules
from .checks import check_values
from .entries import finite_or_none, theory_stride
from .progress import Stages
from .reports import SweepReport
from .rules import VALIDITY, finite_crossings, race_winner
from .sweep_checks import (
    agreement,
    boundary_points,
    check_points,
    point_assumptions,
    points_predicted_validity,
    predicted_agreement,
    stable_descent,
)
from .sweep_grid import (
    Axis,
    SweepGrid,
    check_axes,
    check_sweep_size,
    finite_points,
    models_at_width,
    parse_axis,
    sweep_grid,
    without_parameters,
)
from .sweep_store import GridTheory, PointStore, Shard, TheoryStore
from .sweep_training import TrainedPoint, train_checked_points, trained_points

#: the sweep's public names: its report and races here, its grid (`verify.sweep_grid`) and its
#: trained points (`verify.sweep_training`) re-exported, so ``gdln.verify.sweep`` offers them all
__all__ = [
    "FRACTIONS",
    "Axis",
    "SweepGrid",
    "TrainedPoint",
    "aligned_race",
    "finite_points",
    "parse_axis",
    "sweep_grid",
    "sweep_report",
    "trained_points",
    "width_race",
    "width_seeds",
]

#: the fractions of the initial loss whose crossing times the races report
FRACTIONS = (0.5, 0.1)


def width_seeds(prediction, init_scales: np.ndarray) -> np.ndarray:
    """``log a0`` of ``prediction``'s width-seeded race at each init scale (rows), as ``race``
    seeds it: ``log(units init_scale^2 / 2)``, the seeds at init scale 1 shifted by
    ``2 log init_scale``, so that none underflows."""
    return np.asarray(prediction.log_initial_strengths(1.0))[None] + 2 * np.log(init_scales)[:, None]


def width_race(
    models: TaskPredictions, grid: SweepGrid, rows: np.ndarray, *, rtol: float = SWEEP_RTOL, singly: bool = False
) -> dict[str, BatchedRace]:
    """Every candidate's width-seeded race at the points ``rows``: closed forms at all points in
    one program; race ODEs and reduced flows in batched solves (a few points each) to ``rtol``,
    or, with ``singly``, each point solved alone as ``race`` solves it."""
    task, training = models.task, models.task.training
    found = {}
    for network in task.networks:
        prediction = models.prediction(network.name)
        logs = width_seeds(prediction, grid.init_scale[rows])
        tau = 1.0 / grid.learning_rate[rows]
        if prediction.kind == "closed form":
            found[network.name] = closed_form_race(
                prediction.compiled, grid.values[rows], logs, tau, training.epochs, FRACTIONS
            )
            continue
        found[network.name] = ode_race_points(
            prediction.engine, grid.values[rows], logs, tau, training.epochs, FRACTIONS, rtol=rtol, singly=singly
        )
    return found


def _alignment_phases(task: Task, grid: SweepGrid, rows: np.ndarray, data, hidden: int, seeds: int):
    """The alignment phase of the spec's ReLU seeds at the points ``rows``, point by point, seed by seed.

    init_relu draws init_scale * normal, and the phase moves weights of every scale alike
    (numeric.alignment.run_phase): the points that differ only in init scale share one run per
    seed, started from the weights at init scale 1, each a member of factor its init scale. The
    run is the same whatever the other points, so a point's answer does not depend on the grid."""
    training = task.training
    w1, w2 = (np.asarray(w) for w in initial_relu_weights(hidden, task.num_inputs, task.num_outputs, 1.0, range(seeds)))
    keys = np.concatenate([grid.values[rows], grid.learning_rate[rows, None]], axis=1)
    _, group_of = np.unique(keys, axis=0, return_inverse=True)
    group_of = group_of.ravel()
    groups = [rows_in for rows_in in (np.flatnonzero(group_of == g) for g in range(group_of.max() + 1))]
    width = max(len(g) for g in groups)
    members = np.array([np.resize(g, width) for g in groups])  # positions in rows; padding repeats, dropped below
    factors = np.repeat(grid.init_scale[rows][members], seeds, axis=0)
    runs_w1 = np.tile(w1, (len(groups), 1, 1))
    runs_w2 = np.tile(w2, (len(groups), 1, 1))
    firsts = members[:, 0]
    inputs, targets = (np.repeat(x[rows][firsts], seeds, axis=0) for x in data)
    phase = align_points(
        inputs,
        targets,
        runs_w1,
        runs_w2,
        np.repeat(grid.learning_rate[rows][firsts], seeds),
        training.epochs,
        theory_stride(training.epochs),
        factors,
    )
    # runs come out group by group, seed by seed, member by member; put them point by point, seed by seed
    flat = np.arange(len(groups) * seeds * width).reshape(len(groups), seeds, width)
    order = np.empty((len(rows), seeds), dtype=int)
    for g, group in enumerate(groups):
        order[group] = flat[g, :, : len(group)].T
    return phase.take(order.ravel())


def aligned_race(
    models: TaskPredictions, grid: SweepGrid, rows: np.ndarray, data
) -> tuple[dict[str, np.ndarray], np.ndarray, list[dict[str, Any]], list[dict[str, Any]], float]:
    """Every candidate's predicted ``t_half`` from the alignment phase of the spec's ReLU seeds,
    at the points ``rows``, the epoch at which each seed's phase ends there ``(rows, seeds)``,
    the theory's own verdict on its validity at each point from the same phase
    (:func:`verify.sweep_checks.points_predicted_validity`), the candidate predicted to be
    followed there (:func:`verify.rules.predicted_follows`: the candidates' curves against the
    aligned GDLN's, :mod:`numeric.aligned_model`) and the seconds the validity verdict took:
    each candidate followed from the settled units by gradient descent at the point's learning
    rate, as ``gdln verify`` follows it (:func:`numeric.sweep.aligned_descent`: balanced modes,
    or each pathway's weight chain where pathways interact or run deeper), over the whole run."""
    task, training = models.task, models.task.training
    predictions = {n.name: models.prediction(n.name) for n in task.networks}
    seeds, hidden = training.seeds, int(grid.hidden_units[rows[0]])
    phase = _alignment_phases(task, grid, rows, data, hidden, seeds)
    stride = theory_stride(training.epochs)
    rates = np.repeat(grid.learning_rate[rows], seeds)
    values = np.repeat(grid.values[rows], seeds, axis=0)
    ts = np.arange(training.epochs // stride + 1) * stride
    run_inputs, run_targets = (np.repeat(x[rows], seeds, axis=0) for x in data)
    # every candidate's mean curve over the whole run, each point's seeds averaged as verify does
    mean_curves = {
        name: _mean_curves(
            *aligned_descent(prediction, phase, rates, values, run_inputs, run_targets),
            phase,
            training.epochs,
            seeds,
        )
        for name, prediction in predictions.items()
    }
    found = {name: finite_crossings(ts, curves, 0.5) for name, curves in mean_curves.items()}
    rows_of_patterns = pattern_rows(phase)

    def model_start(runs):
        state, gates = pattern_chain_starts(phase, runs, rows_of_patterns)
        return state, (rates[runs], run_inputs[runs], run_targets[runs], gates)

    model = _mean_curves(pattern_chain_step, model_start, phase, training.epochs, seeds)
    phase_epochs = np.asarray(phase.epochs).reshape(len(rows), seeds)
    follows = [
        rules.predicted_follows({name: curves[k] for name, curves in mean_curves.items()}, model[k], phase_epochs[k])
        for k in range(len(rows))
    ]
    started = time.perf_counter()
    predicted = points_predicted_validity(phase, run_inputs, run_targets, rates, training.epochs, seeds)
    return found, phase_epochs, predicted, follows, time.perf_counter() - started


def _mean_curves(step, start, phase, epochs: int, seeds: int) -> np.ndarray:
    """Each point's mean loss curve ``(points, samples)`` over its ``seeds`` runs of ``phase``
    (point by point, seed by seed), descended by ``step`` from ``start``
    (:func:`numeric.sweep.aligned_descent_chunks`)."""
    points = len(phase.epochs) // seeds
    found = np.full((points, epochs // phase.stride + 1), np.nan)
    for runs, curves in aligned_descent_chunks(step, start, phase, epochs, groups=np.repeat(np.arange(points), seeds)):
        rows = runs.reshape(-1, seeds) // seeds  # a point's seeds come together, in order
        assert np.all(rows == rows[:, :1])
        found[rows[:, 0]] = curves.reshape(len(rows), seeds, -1).mean(axis=1)
    return found


def _winner_labels(points: list[dict], names: list[str], key: str) -> np.ndarray:
    """Each point's ``key`` winner as its index in ``names`` (-1 where there is none)."""
    return np.array([names.index(p[key]) if p[key] in names else -1 for p in points])


def _crossover_curves(models: TaskPredictions, axes: Sequence[Axis], overrides) -> list[dict]:
    """The derived crossovers in an axis' parameter, each as text and valued: a ``curve`` over the
    other axis where it depends on that axis' parameter, else one ``value`` (``None`` where it
    has no finite value)."""
    task = models.task
    values = task.values(overrides)
    names = [n.name for n in task.networks]
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            for crossover in models.crossovers(first, second, values):
                axis_names = [a.name for a in axes]
                if crossover.parameter.name not in axis_names:
                    continue
                other = [a for a in axes if a.name != crossover.parameter.name]
                entry: dict[str, Any] = {
                    "networks": [first, second],
                    "parameter": crossover.parameter.name,
                    "expr": as_text(crossover.expr),
                    "latex": f"{sympy.latex(crossover.parameter)} = {sympy.latex(crossover.expr)}",
                    "faster_below": crossover.faster_below,
                    "faster_above": crossover.faster_above,
                }
                try:
                    if other and other[0].name in {s.name for s in crossover.expr.free_symbols}:
                        symbol = task.parameter(other[0].name)
                        entry["curve"] = {
                            "along": other[0].name,
                            "values": [evaluate(crossover.expr, {**values, symbol: v}).real for v in other[0].values],
                        }
                    else:
                        entry["value"] = evaluate(crossover.expr, values).real
                except EvaluationError:
                    entry["value"] = None
                found.append(entry)
    return found


def _checked_sweep(
    task: Task, axes: Sequence[Axis], overrides: Mapping[str, float] | None, check: int, agf: bool
) -> tuple[list[Axis], dict[str, float]]:
    """The axes (checked as ``--grid`` checks its text) and the values off them, or a one-line
    error for a sweep the task cannot run."""
    axes = check_axes(axes, task)  # an Axis built in Python is checked as --grid checks its text
    check_sweep_size(task, axes, check)
    if agf and not check:
        raise SpecError(task.source, "--agf", "compares the AGF model with trained networks: it needs --check")
    if not task.networks:
        raise SpecError(task.source, "network", "the sweep needs at least one [[network]]")
    overrides = dict(overrides or {})
    clash = [a.name for a in axes if a.name in overrides]
    if clash:
        raise SpecError("--grid", clash[0], "is both an axis and a --set value")
    return axes, overrides


def sweep_report(
    task: Task,
    axes: Sequence[Axis],
    overrides: Mapping[str, float] | None = None,
    *,
    check: int = 0,
    models: TaskPredictions | None = None,
    agf: bool = False,
    shard: Shard | None = None,
) -> SweepReport:
    """The race at every grid point (width- and alignment-seeded), the derived crossovers, and
    at ``check`` points the candidate trained ReLU networks follow (see the module docstring).

    Args:
        task: the task and its candidate networks.
        axes: one or two axes (`parse_axis`), the last varying fastest.
        overrides: parameter values that replace the spec's (name -> value) off the axes.
        check: the number of grid points at which ReLU networks are trained, chosen to cover
            the grid and its boundaries.
        models: the task's derivations and compiled predictions, to reuse across calls.
        agf: at the checked points, also predict by the Alternating Gradient Flows model of the
            ReLU network (`numeric.agf`, as ``gdln verify --agf``): ``agf_deviation`` in each
            ``checked`` entry (never the candidate followed).
        shard: train only this slice's share of the checked points (`verify.sweep_store.Shard`),
            written to the disk cache for a later run without a slice; only those are ``checked``.

    Returns:
        The phase diagram (`SweepReport`; ``to_json()`` is ``gdln sweep --json``).

    Raises:
        SpecError: for axes or values the task cannot be raced at."""
    axes, overrides = _checked_sweep(task, axes, overrides, check, agf)
    started = time.perf_counter()
    base = models or TaskPredictions(task)
    check_values(task, overrides, base)
    grid = sweep_grid(task, axes, overrides)
    ok, inputs, targets = finite_points(base, grid)
    widths = [int(w) for w in np.unique(grid.hidden_units) if np.any((grid.hidden_units == w) & ok)]
    theory, groups, step = _theory_stage(task, base, grid, ok, (inputs, targets), widths, check, agf, started)
    # read back, the theory's seconds are those this run spent reading it, before any training
    seconds = theory.seconds or {
        "theory_s": time.perf_counter() - started,
        "aligned_s": 0.0,
        "predicted_validity_s": 0.0,
    }
    points = _points(task, grid, ok, theory)
    training_seconds, per_run, processes, resumed = 0.0, None, 1, 0
    aligned_labels = _winner_labels(points, [n.name for n in task.networks], "aligned_winner")
    if check:
        hold = np.array([bool(p["assumptions"] and p["assumptions"]["hold"]) for p in points])
        chosen = check_points(aligned_labels, grid.shape, check, ok, claimed=hold)
        which = f"slice {shard} of the {len(chosen)} checked points" if shard else plural(len(chosen), "checked point")
        step(f"training at {which}")
        training_seconds, per_run, processes, resumed = train_checked_points(
            groups, task, grid, chosen, points, inputs, targets, agf, shard
        )
    step.close()
    near_boundary = set(boundary_points(aligned_labels, grid.shape).tolist())
    return SweepReport.from_json(
        {
            **_settings(task, axes),
            "points": points,
            "invalid_points": [i for i in range(grid.size) if not ok[i]],
            "crossovers": _crossover_curves(base, axes, overrides),
            "agreement": {**agreement(points, near_boundary), "predicted_validity": predicted_agreement(points)},
            "timing": {
                **seconds,
                "theory_resumed": theory.seconds is None,
                "training_s": training_seconds,
                "training_run_s": per_run,
                "processes": processes,
                "resumed": resumed,
            },
        }
    )


def _theory_stage(
    task: Task,
    base: TaskPredictions,
    grid: SweepGrid,
    ok: np.ndarray,
    data: tuple[np.ndarray, np.ndarray],
    widths: list[int],
    check: int,
    agf: bool,
    started: float,
) -> tuple[GridTheory, dict[int, TaskPredictions], Stages]:
    """The grid's theory, read back from the disk cache where a run kept it (its ``seconds``
    then ``None``), else computed (`_grid_theory`) and kept; the predictions of each width; and
    the sweep's stages, the training's still to come."""
    theories = TheoryStore(PointStore(task, grid, agf))  # off with the disk cache
    waited: list[Stages] = []

    def wait() -> None:
        waited.append(Stages("sweep", 2 + bool(check)))
        waited[0]("waiting for another process on this cache folder computing the grid's theory")

    theory = theories.read()
    if theory is None:
        with theories.computing(wait):  # slices started at once compute it once
            theory = theories.read()  # written by the process this one waited for
            if theory is None:
                step = Stages("sweep", 2 * len(widths) + bool(check))
                groups: dict[int, TaskPredictions] = {}
                theory = _grid_theory(task, base, grid, ok, data, widths, groups, step, started)
                theories.write(replace(theory, seconds=None))  # the seconds are the run's that computes it
                return theory, groups, step
    # kept by a run that was stopped while training, or by a slice of a job array
    step = waited[0] if waited else Stages("sweep", 1 + bool(check))
    step(f"the theory at {plural(grid.size, 'point')} read back from the cache")
    return theory, {width: models_at_width(task, base, width) for width in widths}, step  # its seconds None


def _points(task: Task, grid: SweepGrid, ok: np.ndarray, theory: GridTheory) -> list[dict[str, Any]]:
    """Every grid point's entry (the JSON of a `verify.reports.SweepPoint`) from the grid's
    theory: each race's winner, the assumptions, the predictions; ``checked`` still ``None``."""
    names = [n.name for n in task.networks]
    points: list[dict[str, Any]] = []
    for index in range(grid.size):
        entries = [
            {
                "name": name,
                "t_half": finite_or_none(theory.t_half[index, k]),
                "t_90": finite_or_none(theory.t_90[index, k]),
                "final_loss": finite_or_none(theory.final_loss[index, k]),
                "aligned_t_half": finite_or_none(theory.aligned_t_half[index, k]),
            }
            for k, name in enumerate(names)
        ]
        winner, margin = race_winner(entries) if ok[index] else (None, None)
        aligned_winner, aligned_margin = (
            rules.aligned_winner({e["name"]: e["aligned_t_half"] for e in entries}) if ok[index] else (None, None)
        )
        exceptional = theory.exceptional[index]
        assumptions = point_assumptions(theory.phase_epochs[index], theory.stable[index]) if ok[index] else None
        points.append(
            {
                "values": grid.point_values(index),
                "winner": winner,
                "margin": margin,
                "aligned_winner": aligned_winner,
                "aligned_margin": aligned_margin,
                "networks": entries,
                "assumptions": assumptions,
                "predicted_validity": theory.predicted_validity[index],
                "predicted_follows": theory.predicted_follows[index],
                "checked": None,
                # only where the point is derived where it lies, as in `race`: other outputs unchanged
                **({"exceptional_point": exceptional} if exceptional else {}),
            }
        )
    return points


def _settings(task: Task, axes: Sequence[Axis]) -> dict[str, Any]:
    """The report's keys that describe the sweep rather than its points: the spec, the axes,
    how each race is seeded, the training settings, the validity and the assumptions, in words."""
    return {
        "spec": task.source,
        "axes": [{"name": a.name, "values": list(a.values), "log": a.log} for a in axes],
        "seeds": {
            "width": "each pathway from its width: a0 = units init_scale^2 / 2 (gdln race)",
            "aligned": f"the alignment phase of {task.training.seeds} ReLU seeds from their initial weights (gdln verify)",
        },
        "training": {
            "learning_rate": task.training.learning_rate,
            "init_scale": task.training.init_scale,
            "hidden_units": task.training.hidden_units,
            "epochs": task.training.epochs,
            "seeds": task.training.seeds,
        },
        "validity": VALIDITY,
        "assumptions": {
            "small_init": "the alignment phase runs at every seed: the initial output is below"
            f" {OUTPUT_FRACTION:g} of the targets (THEORY section 9: at large init the network is lazy)",
            "stable_learning_rate": "learning_rate <= 2/curvature, the theory's largest curvature (verify's warning;"
            " null where the curvature is not finite)",
            "hold": "both known to hold: an assumption that is unknown (null) does not hold",
            "output_fraction": OUTPUT_FRACTION,
        },
    }


def _derivation_parts(
    models: TaskPredictions, grid: SweepGrid, rows: np.ndarray, exceptional: list[str | None]
) -> list[tuple[TaskPredictions, SweepGrid, np.ndarray]]:
    """The grid's ``rows`` split by derivation: the generic points batched as one; a point where
    the generic derivation fails on its own, derived there (derive.exceptional), with no
    parameter values left in its grid. Marks each such row's reason in ``exceptional``."""
    parts = []
    for models_here, where, why in models.by_derivation(grid.values[rows]):
        here = rows[where]
        parts.append((models_here, grid if models_here is models else without_parameters(grid), here))
        for row in here:
            exceptional[row] = why  # said as `race` says it
    return parts


def _grid_theory(
    task: Task,
    base: TaskPredictions,
    grid: SweepGrid,
    ok: np.ndarray,
    data: tuple[np.ndarray, np.ndarray],
    widths: list[int],
    groups: dict[int, TaskPredictions],
    step: Stages,
    started: float,
) -> GridTheory:
    """The theory at every point ``ok`` of ``grid``, two stages per width (the width-seeded race,
    then the alignment-seeded race with the predicted validity and followed network); fills
    ``groups`` with the predictions of each width. ``started``: when the sweep began (its
    ``theory_s`` counts from there, less the alignment-seeded stages)."""
    names = [n.name for n in task.networks]
    inputs, targets = data
    t_half, t_90, final, aligned = (np.full((grid.size, len(names)), np.nan) for _ in range(4))
    aligned_seconds = predicted_seconds = 0.0
    phase_epochs = np.full((grid.size, task.training.seeds), -1)
    predicted: list[dict[str, Any] | None] = [None] * grid.size
    predicted_follows: list[dict[str, Any] | None] = [None] * grid.size
    exceptional: list[str | None] = [None] * grid.size
    for width in widths:
        width_rows = np.flatnonzero((grid.hidden_units == width) & ok)
        at = f" ({width} hidden units)" if len(widths) > 1 else ""
        step(f"width-seeded race at {plural(len(width_rows), 'point')}{at}")
        models_width = groups[width] = models_at_width(task, base, width)
        parts = _derivation_parts(models_width, grid, width_rows, exceptional)
        for models_here, grid_here, rows in parts:
            # a point derived where it lies is raced alone, as `race --set` races it (issue 47)
            races = width_race(models_here, grid_here, rows, singly=models_here is not models_width)
            for k, name in enumerate(names):
                t_half[rows, k], t_90[rows, k] = races[name].crossings[:, 0], races[name].crossings[:, 1]
                final[rows, k] = races[name].final_loss
        step(f"alignment-seeded race at {plural(len(width_rows), 'point')}{at}")
        for models_here, grid_here, rows in parts:
            aligned_start = time.perf_counter()
            found, phase_epochs[rows], verdicts, follows, seconds = aligned_race(
                models_here, grid_here, rows, (inputs, targets)
            )
            for row, verdict, follow in zip(rows, verdicts, follows):
                predicted[row], predicted_follows[row] = verdict, follow
            predicted_seconds += seconds
            aligned_seconds += time.perf_counter() - aligned_start - seconds
            aligned[rows] = np.stack([found[name] for name in names], axis=1)
    stable = stable_descent(task, grid.values, grid.learning_rate, ok, inputs, targets)
    return GridTheory(
        t_half=t_half,
        t_90=t_90,
        final_loss=final,
        aligned_t_half=aligned,
        phase_epochs=phase_epochs,
        stable=list(stable),
        predicted_validity=predicted,
        predicted_follows=predicted_follows,
        exceptional=exceptional,
        seconds={
            "theory_s": time.perf_counter() - started - aligned_seconds - predicted_seconds,
            "aligned_s": aligned_seconds,
            "predicted_validity_s": predicted_seconds,
        },
    )
