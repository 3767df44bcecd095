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

import hashlib
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from gdln.derive.algebraic import as_text
from gdln.derive.errors import GdlnError, SpecError
from gdln.derive.spec import (
    DATA_MAGNITUDE,
    MAX_SWEEP_RUNS,
    MAX_SWEEP_TRAINING_RUNS,
    EvaluationError,
    Task,
    Training,
    evaluate,
    training_value,
)
from gdln.derive.words import plural
from gdln.numeric.agf import agf_points
from gdln.numeric.aligned_model import pattern_chain_starts, pattern_chain_step, pattern_rows
from gdln.numeric.alignment import OUTPUT_FRACTION
from gdln.numeric.prediction import TaskPredictions
from gdln.numeric.processes import gather_json, process_share
from gdln.numeric.sweep import (
    SWEEP_RTOL,
    BatchedRace,
    align_points,
    aligned_descent,
    aligned_descent_chunks,
    closed_form_race,
    ode_race_points,
)
from gdln.numeric.training import initial_relu_weights, train_relu_points

from . import rules
from .checks import check_training_size, check_values
from .entries import finite_or_none, theory_stride
from .following import candidate_predictions, predicted_relu_curves, relu_alignment
from .progress import Stages
from .reports import SweepReport
from .rules import VALIDITY, finite_crossings, follow_resolution, followed_candidate, race_winner
from .simulation import deviations
from .sweep_checks import (
    agreement,
    boundary_points,
    check_points,
    point_assumptions,
    points_predicted_validity,
    predicted_agreement,
    stable_descent,
)
from .sweep_shares import check_plans, share_entries
from .sweep_store import GridTheory, PointStore, Shard, TheoryStore, batches, slice_rows

#: the training settings an axis may sweep, beside the spec's parameters
TRAINING_AXES = ("init_scale", "learning_rate", "hidden_units")
MAX_AXES = 2
#: points on one axis, and on the whole grid (the alignment-seeded race takes about 40 ms a point on 2 cores)
MAX_AXIS_POINTS = 256
MAX_GRID_POINTS = 16_384
FRACTIONS = (0.5, 0.1)


@dataclass(frozen=True)
class Axis:
    """One axis of the grid: a spec parameter or a training setting, and its values."""

    name: str
    values: tuple[float, ...]
    log: bool


def parse_axis(text: str, task: Task) -> Axis:
    """An axis of a sweep, read from ``NAME=START:STOP:NUM[:log]``.

    Nothing in ``text`` is evaluated: the bounds are plain numbers. The name and the values
    are checked by `check_axis`, as every `Axis` that `sweep_report` is given.

    Args:
        text: the axis, as ``gdln sweep --grid`` takes it; ``NAME`` is a spec parameter or
            ``init_scale``, ``learning_rate``, ``hidden_units``.
        task: the task whose parameters the axis may name.

    Returns:
        The axis: its name, its values and whether they are spaced on a log scale.

    Raises:
        SpecError: one line naming the flag, for text that is not such an axis."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise SpecError("--grid", text, "expected NAME=START:STOP:NUM[:log]")
    check_axis_name(name, task, "--grid")
    parts = spec.split(":")
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != "log"):
        raise SpecError("--grid", name, f"{spec!r} is not START:STOP:NUM or START:STOP:NUM:log")
    try:
        start, stop = float(parts[0]), float(parts[1])
        count = int(parts[2])
    except ValueError:
        raise SpecError("--grid", name, f"{spec!r}: START and STOP must be numbers and NUM an integer") from None
    log = len(parts) == 4
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise SpecError("--grid", name, "START and STOP must be finite")
    if not 1 <= count <= MAX_AXIS_POINTS:
        raise SpecError("--grid", name, f"NUM must be between 1 and {MAX_AXIS_POINTS}, got {count}")
    if start > stop:
        raise SpecError("--grid", name, f"START {start:g} is above STOP {stop:g}")
    if log and start <= 0:  # before geomspace, which refuses a bound at 0; in check_axis's words
        raise SpecError("--grid", name, f"a log axis needs values above 0, got {start:g}")
    values = np.geomspace(start, stop, count) if log else np.linspace(start, stop, count)
    if name == "hidden_units":
        values = np.unique(np.round(values).astype(int)).astype(float)
    return check_axis(Axis(name, tuple(float(v) for v in values), log), task, "--grid")


def check_axis_name(name: str, task: Task, source: str) -> None:
    """Refuse an axis name that is neither one of ``task``'s parameters nor a training setting
    (:data:`TRAINING_AXES`), naming the known ones."""
    known = [s.name for s in task.parameters]
    if not isinstance(name, str) or (name not in known and name not in TRAINING_AXES):
        raise SpecError(
            source,
            str(name),
            f"unknown name (parameters: {', '.join(known) or 'none'}; training: {', '.join(TRAINING_AXES)})",
        )


def check_axis(axis: Axis, task: Task, source: str = "axis") -> Axis:
    """The checks and limits of one axis, the same for ``--grid`` (`parse_axis`) and an `Axis`
    built in Python (`sweep_report`, `trained_points`): a known name; 1 to :data:`MAX_AXIS_POINTS`
    finite real values in increasing order; above 0 on a log axis; a parameter's values in its
    declared domain (:meth:`Task.check_domain`); a training setting's values positive and within
    the spec's limits (:func:`derive.spec.training_value`), ``hidden_units`` whole numbers.

    Returns:
        The axis, its values as Python floats.

    Raises:
        SpecError: one line naming ``source`` (``--grid`` or ``axis``) and the axis."""
    name = axis.name
    check_axis_name(name, task, source)
    raw = axis.values
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (Sequence, np.ndarray)):
        raise SpecError(source, name, f"values must be a sequence of numbers, got {type(raw).__name__}")
    if not 1 <= len(raw) <= MAX_AXIS_POINTS:
        raise SpecError(source, name, f"give between 1 and {MAX_AXIS_POINTS} values, got {len(raw)}")
    values: list[float] = []
    for value in raw:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or not math.isfinite(value):
            raise SpecError(source, name, f"value {value!r} is not a finite real number")
        values.append(float(value))
    if any(b < a for a, b in zip(values, values[1:])):
        raise SpecError(source, name, "values must be in increasing order")
    if not isinstance(axis.log, (bool, np.bool_)):
        raise SpecError(source, name, f"log must be True or False, got {axis.log!r}")
    low, high = values[0], values[-1]
    if low <= 0 and (axis.log or name in ("init_scale", "learning_rate")):  # hidden_units: as [training] says
        what = "a log axis needs values above 0" if axis.log else "values must be positive"
        raise SpecError(source, name, f"{what}, got {low:g}")
    if name not in TRAINING_AXES:  # a parameter takes any real value, within a declared domain
        task.check_domain(name, low, name, source)
    else:  # the spec's own limits, on the axis' smallest and largest values
        if name == "hidden_units":
            fractional = [v for v in values if v != int(v)]
            if fractional:
                raise SpecError(source, name, f"values must be whole numbers, got {fractional[0]:g}")
        for bound in (low, high):
            training_value(name, int(bound) if name == "hidden_units" else bound, source, name)
    return Axis(name, tuple(values), bool(axis.log))


def check_axes(axes: Sequence[Axis], task: Task | None = None) -> list[Axis]:
    """The grid's axes, each checked by `check_axis` (where ``task`` is given), and the grid's
    limits: one or two axes, no name twice, at most :data:`MAX_GRID_POINTS` points."""
    if isinstance(axes, Axis):
        raise SpecError("axis", "axes", "give a list of axes, e.g. [Axis(...)]")
    axes = list(axes)
    if task is not None:
        axes = [check_axis(a, task) if isinstance(a, Axis) else _not_an_axis(a) for a in axes]
    if not axes:
        raise SpecError("--grid", "grid", "give one or two axes: --grid NAME=START:STOP:NUM[:log]")
    if len(axes) > MAX_AXES:
        raise SpecError("--grid", "grid", f"at most {MAX_AXES} axes, got {len(axes)}")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise SpecError("--grid", names[0] if names.count(names[0]) > 1 else names[1], "axis given twice")
    points = math.prod(len(a.values) for a in axes)
    if points > MAX_GRID_POINTS:
        raise SpecError("--grid", "grid", f"{points} points is above the limit of {MAX_GRID_POINTS}")
    return axes


def _not_an_axis(value) -> Axis:
    raise SpecError("axis", type(value).__name__, "expected an Axis (or gdln.parse_axis('NAME=START:STOP:NUM'))")


def check_sweep_size(task: Task, axes: Sequence[Axis], check: int) -> None:
    """Refuse, before any work, a sweep whose seeds times grid points (the alignment phase's runs)
    or checked points times seeds (the checks' training runs) is above its limit
    (:data:`derive.spec.limits.MAX_SWEEP_RUNS`, :data:`derive.spec.limits.MAX_SWEEP_TRAINING_RUNS`),
    and a ``check`` that is not a whole number of points, 0 or more."""
    if isinstance(check, (bool, np.bool_)) or not isinstance(check, Integral) or check < 0:
        raise SpecError("--check", repr(check), "must be 0 or a positive number of points")
    seeds = task.training.seeds
    points = math.prod(len(a.values) for a in axes)
    runs = seeds * points
    if runs > MAX_SWEEP_RUNS:
        raise SpecError(
            "--seeds",
            "seeds x grid points",
            f"{seeds} x {points} = {runs} runs of the alignment phase is above the limit of {MAX_SWEEP_RUNS}",
        )
    trained = min(check, points) * seeds
    if trained > MAX_SWEEP_TRAINING_RUNS:
        raise SpecError(
            "--check",
            "checked points x seeds",
            f"{min(check, points)} x {seeds} = {trained} training runs is above the limit of {MAX_SWEEP_TRAINING_RUNS}",
        )


def _models_at_width(task: Task, base: TaskPredictions, hidden_units: int) -> TaskPredictions:
    """The predictions of ``task`` trained with ``hidden_units`` units: ``base`` at the spec's own width."""
    if hidden_units == task.training.hidden_units:
        return base
    return TaskPredictions(task.with_training(hidden_units=int(hidden_units)))


@dataclass
class SweepGrid:
    axes: tuple[Axis, ...]
    values: np.ndarray  # (points, parameters) in task.parameters order
    init_scale: np.ndarray
    learning_rate: np.ndarray
    hidden_units: np.ndarray
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.init_scale)

    def point_values(self, index: int) -> dict[str, float]:
        flat = np.unravel_index(index, self.shape)
        return {axis.name: axis.values[i] for axis, i in zip(self.axes, flat)}


def _without_parameters(grid: SweepGrid) -> SweepGrid:
    """``grid`` for a task whose parameters are fixed (derived at a point): no parameter values."""
    return replace(grid, values=np.zeros((grid.size, 0)))


def sweep_grid(task: Task, axes: Sequence[Axis], overrides: Mapping[str, float]) -> SweepGrid:
    mesh = np.meshgrid(*[np.asarray(a.values) for a in axes], indexing="ij")
    columns = {a.name: m.ravel() for a, m in zip(axes, mesh)}
    size = mesh[0].size
    defaults = task.values(overrides)
    values = (
        np.stack([columns.get(s.name, np.full(size, defaults[s])) for s in task.parameters], axis=1)
        if task.parameters
        else np.zeros((size, 0))
    )
    training = task.training
    return SweepGrid(
        tuple(axes),
        values.astype(np.float64),
        columns.get("init_scale", np.full(size, training.init_scale)).astype(np.float64),
        columns.get("learning_rate", np.full(size, training.learning_rate)).astype(np.float64),
        columns.get("hidden_units", np.full(size, training.hidden_units)).astype(int),
        tuple(len(a.values) for a in axes),
    )


def finite_points(models: TaskPredictions, grid: SweepGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ok, inputs, targets)``: the data at every point, and where they are finite."""
    inputs, targets = models.dataset.batch(grid.values)
    ok = np.all(np.isfinite(inputs), axis=(1, 2)) & np.all(np.isfinite(targets), axis=(1, 2))
    _check_data_sizes(grid, inputs, targets)
    return ok, inputs, targets


def _check_data_sizes(grid: SweepGrid, inputs: np.ndarray, targets: np.ndarray) -> None:
    """Refuse a grid with a finite data entry outside the spec's range of sizes
    (:data:`derive.spec.limits.DATA_MAGNITUDE`, as :func:`derive.spec.check_data` refuses it at the
    values in use) at some point, naming the first: beyond it the derivation's closed forms
    overflow float64 (XoR at Delta = 1e160)."""
    low, high = DATA_MAGNITUDE
    for key, batch in (("data.inputs", inputs), ("data.targets", targets)):
        size = np.abs(batch)
        outside = np.isfinite(size) & ((size > high) | ((size > 0) & (size < low)))
        if outside.any():
            point, row, column = np.argwhere(outside)[0]
            at = ", ".join(f"{name} = {value:g}" for name, value in grid.point_values(int(point)).items())
            names = [a.name for a in grid.axes if a.name not in TRAINING_AXES] or [grid.axes[0].name]
            raise SpecError(
                "--grid",
                ", ".join(names),
                f"{key}[{row}][{column}] = {batch[point, row, column]:.6g} at {at} is outside the range"
                f" {low:g} to {high:g} in size",
            )


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
        step(f"training at {plural(len(chosen), 'checked point')}")
        training_seconds, per_run, processes, resumed = _check(
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
    return theory, {width: _models_at_width(task, base, width) for width in widths}, step  # its seconds None


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
        parts.append((models_here, grid if models_here is models else _without_parameters(grid), here))
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
        models_width = groups[width] = _models_at_width(task, base, width)
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


@dataclass(frozen=True)
class TrainedPoint:
    """One grid point trained with the spec's seeds, beside verify's predictions for it.

    Attributes:
        index: the point's index in the grid.
        values: the spec's parameter values there.
        training: its training settings (learning rate, init scale, width, seeds).
        initial: the seeds' initial weights (`numeric.training.initial_relu_weights`).
        ts: the epochs of the samples.
        losses: ``(seeds, samples)``, every seed's ReLU loss at ``ts``.
        predictions: each candidate's loss predicted from the seeds' alignment phase, followed
            by gradient descent (verify's default), at ``ts``.
        diverged_at: the first epoch at which some seed's loss is not finite (the training
            diverged), ``None`` where every loss is finite.
        agf: the Alternating Gradient Flows model's loss at ``ts`` (`numeric.agf`), where it was
            asked for; else ``None``."""

    index: int
    values: dict[str, float]
    training: Training
    initial: Any
    ts: np.ndarray
    losses: np.ndarray
    predictions: dict[str, np.ndarray]
    diverged_at: int | None = None
    agf: np.ndarray | None = None


def trained_points(
    task: Task, axes: Sequence[Axis], overrides: Mapping[str, float] | None = None, *, seeds: int | None = None
) -> list[TrainedPoint]:
    """Train the ReLU network at every point of the grid ``axes`` (all points and seeds of a width
    in one program, `numeric.training.train_relu_points`), each beside verify's predictions.

    Args:
        task: the task and its candidate networks.
        axes: one or two axes (`parse_axis`), the last varying fastest.
        overrides: parameter values that replace the spec's (name -> value) off the axes.
        seeds: the number of seeds (default: the spec's).

    Returns:
        One `TrainedPoint` per grid point, in the grid's order."""
    overrides = dict(overrides or {})
    if seeds is not None:
        task = task.with_training(seeds=training_value("seeds", seeds, "trained_points", "seeds"))
    axes = check_axes(axes, task)
    grid = sweep_grid(task, axes, overrides)
    models = TaskPredictions(task)
    ok, inputs, targets = finite_points(models, grid)
    if not ok.all():
        raise SpecError(task.source, axes[0].name, "the data are not finite at some grid points")
    widths = {int(w): _models_at_width(task, models, int(w)) for w in np.unique(grid.hidden_units)}
    return [
        point
        for found, _ in _train_points(widths, task, grid, np.arange(grid.size), inputs, targets)
        for point in found
    ]


#: bytes of training arrays one program of checked training holds (float64: each run's loss at
#: every epoch, its initial weights and its data): the points of a width are trained this many
#: bytes' worth at a time, so a checked sweep's memory does not grow with ``--check``. A point's
#: seeds are never split: a point larger than this alone is one program (its size is bounded
#: by :func:`verify.checks.check_training_size`)
CHECK_CHUNK_BYTES = 64 * 2**20


def points_per_chunk(task: Task, hidden_units: int) -> int:
    """How many checked points of ``hidden_units`` units one program trains: as many as keep its
    arrays within :data:`CHECK_CHUNK_BYTES`, at least one."""
    training = task.training
    features = task.num_inputs + task.num_outputs
    per_run = 8 * (training.epochs + 1 + hidden_units * features + task.num_datapoints * features)
    return max(1, CHECK_CHUNK_BYTES // (per_run * training.seeds))


def _train_points(
    groups, task: Task, grid: SweepGrid, chosen: np.ndarray, inputs, targets, agf: bool = False
) -> Iterator[tuple[list[TrainedPoint], float]]:
    """The ``chosen`` points trained with the spec's seeds and predicted as verify predicts them
    (with ``agf``, by the AGF model too), chunk by chunk (:func:`points_per_chunk` points of a width in one program): yields each
    chunk's points and the seconds its training took. Every run's losses are the same whatever
    the chunks (`numeric.training.train_relu_points`)."""
    training = task.training
    check_training_size(task, training, "relu")
    for width, models in groups.items():
        rows = np.array([i for i in chosen if grid.hidden_units[i] == width], dtype=int)
        if not len(rows):
            continue
        predictors = candidate_predictions(models)
        size = points_per_chunk(task, int(width))
        for start in range(0, len(rows), size):
            yield _train_chunk(models, predictors, task, grid, rows[start : start + size], inputs, targets, agf)


def _trained_point(
    models: TaskPredictions,
    predictors,
    grid: SweepGrid,
    row: int,
    ts: np.ndarray,
    losses: np.ndarray,
    diverged_at: int | None,
    agf: np.ndarray | None,
) -> TrainedPoint:
    """The point ``row`` trained (its ``losses``), beside verify's predictions for it: each
    candidate from the seeds' alignment phase, followed by gradient descent, at ``ts``."""
    task = models.task
    seeds, width = task.training.seeds, int(grid.hidden_units[row])
    point_training = replace(
        task.training,
        learning_rate=float(grid.learning_rate[row]),
        init_scale=float(grid.init_scale[row]),
        epochs=task.training.epochs,
        hidden_units=width,
        seeds=seeds,
    )
    values = dict(zip(task.parameters, (float(v) for v in grid.values[row])))
    initial = initial_relu_weights(width, task.num_inputs, task.num_outputs, point_training.init_scale, range(seeds))
    here, values_here, exceptional_point = models.at(values)  # derived at the point where needed
    alignment = relu_alignment(here, initial, values_here, point_training)
    curves = predicted_relu_curves(
        here,
        predictors if exceptional_point is None else candidate_predictions(here),
        initial,
        values_here,
        point_training,
        jnp.asarray(ts, jnp.float64),
        alignment=alignment,
    )
    predictions = {name: np.asarray(curve) for name, curve in curves.items()}
    return TrainedPoint(row, values, point_training, initial, ts, losses, predictions, diverged_at, agf)


def _train_chunk(models, predictors, task: Task, grid: SweepGrid, rows: np.ndarray, inputs, targets, agf: bool = False):
    """The points ``rows`` (one width) trained in one program, each with its predictions; and
    the seconds the training took."""
    training = task.training
    seeds, width = training.seeds, int(grid.hidden_units[rows[0]])
    stride = theory_stride(training.epochs)
    ts = np.arange(training.epochs // stride + 1) * stride
    w1, w2 = (np.asarray(w) for w in initial_relu_weights(width, task.num_inputs, task.num_outputs, 1.0, range(seeds)))
    scale = grid.init_scale[rows][:, None, None, None]
    started = time.perf_counter()
    losses = train_relu_points(
        np.repeat(inputs[rows], seeds, axis=0),
        np.repeat(targets[rows], seeds, axis=0),
        (scale * w1[None]).reshape(-1, *w1.shape[1:]),
        (scale * w2[None]).reshape(-1, *w2.shape[1:]),
        np.repeat(grid.learning_rate[rows], seeds),
        training.epochs,
    )
    seconds = time.perf_counter() - started
    per_point = losses.reshape(len(rows), seeds, -1)
    sampled = per_point[:, :, ::stride]
    agf_curves = None
    if agf:  # every point and seed of the chunk in one program, from the same initial weights
        run = agf_points(
            (scale * w1[None]).reshape(-1, *w1.shape[1:]),
            (scale * w2[None]).reshape(-1, *w2.shape[1:]),
            np.repeat(inputs[rows], seeds, axis=0),
            np.repeat(targets[rows], seeds, axis=0),
            np.repeat(grid.learning_rate[rows], seeds),
            training.epochs,
        )
        agf_curves = run.losses.reshape(len(rows), seeds, -1).mean(axis=1)[:, ::stride]
    # every epoch's loss, not only the samples: a run may overflow between two of them
    diverged = ~np.all(np.isfinite(per_point), axis=1)
    found = [
        _trained_point(
            models,
            predictors,
            grid,
            int(row),
            ts,
            np.array(sampled[k]),
            int(np.argmax(diverged[k])) if diverged[k].any() else None,
            None if agf_curves is None else agf_curves[k],
        )
        for k, row in enumerate(rows)
    ]
    return found, seconds


def _checked_entry(point: TrainedPoint) -> dict[str, Any]:
    """A trained point's ``checked`` entry: the candidate its mean loss follows by verify's rule,
    the deviations, whether the seeds decide it, why training failed where it did, and the epoch
    at which its mean loss falls to half."""
    relu = point.losses.mean(axis=0)
    networks = [
        {
            "name": name,
            **deviations(curve, relu),
            "from_alignment": False,
        }
        for name, curve in point.predictions.items()
    ]
    follows, _ = followed_candidate(networks)
    deviation = next((n["max_deviation"] for n in networks if n["name"] == follows), None)
    return {
        "follows": follows,
        "max_deviation": deviation,
        "deviations": {n["name"]: n["max_deviation"] for n in networks},
        "seeds": point.training.seeds,
        **follow_resolution(networks, follows, point.losses),
        "reason": None if point.diverged_at is None else f"diverged at epoch {point.diverged_at}",
        "t_half": rules.finite_crossing(point.ts, relu, 0.5),
        **({} if point.agf is None else {"agf_deviation": deviations(point.agf, relu)["max_deviation"]}),
    }


def _sweep_digest(task: Task, grid: SweepGrid, inputs, targets) -> str:
    """What the processes of a run must agree on, in a few characters: the grid, its data, the
    training settings and the candidates."""
    digest = hashlib.sha256(repr((task.training, [n.name for n in task.networks])).encode())
    for array in (grid.values, grid.init_scale, grid.learning_rate, grid.hidden_units, inputs, targets):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _check(
    groups,
    task: Task,
    grid: SweepGrid,
    chosen: np.ndarray,
    points: list[dict],
    inputs,
    targets,
    agf: bool = False,
    shard: Shard | None = None,
):
    """Train ReLU networks at the ``chosen`` points with the spec's seeds, and say which
    candidate each follows by verify's rule (``points[i]["checked"]``).

    In a run of several processes (:mod:`numeric.processes`) each trains its share of process
    0's chosen points; the entries of all are gathered, so every process ends with all of them,
    the same whatever the number of processes. A process holds one chunk's training arrays at a
    time (:data:`CHECK_CHUNK_BYTES`) and a small entry per point it trained.

    Each entry is kept on disk as its batch finishes, where the disk cache is on, and read back
    instead of trained when the same point is checked again (:mod:`verify.sweep_store`). With
    ``shard``, only that slice's share of the chosen points is trained and filled in.

    Returns:
        ``(seconds, per_run, processes, resumed)``: the longest any process spent training, the
        seconds per run (point and seed) trained, summed over the processes, how many processes
        there are, and how many points this process read back from the disk cache."""
    plans = gather_json({"chosen": [int(i) for i in chosen], "sweep": _sweep_digest(task, grid, inputs, targets)})
    check_plans(plans, len(points), jax.process_index())
    other = next((k for k, plan in enumerate(plans) if plan["sweep"] != plans[0]["sweep"]), None)
    if other is not None:  # its shares would be other points than process 0 thinks
        raise GdlnError(
            f"process {other} was given another sweep than process 0 (its spec, grid, seeds or epochs differ):"
            " every process runs the same command"
        )
    chosen = np.asarray(plans[0]["chosen"], dtype=int)  # process 0's choice, for all
    if shard is not None and len(plans) > 1:  # the processes' shares would not be the slice's
        raise GdlnError("--shard: a slice runs as one process; give no --processes")
    if shard is not None:  # every slice chose the same points: it trains its share of them
        chosen = slice_rows(chosen, grid.hidden_units, shard)
    mine = chosen[process_share(len(chosen))]
    store = PointStore(task, grid, agf)  # off with the disk cache
    resumed = store.read(mine)
    entries: list[list] = [[index, entry] for index, entry in resumed.items()]
    seconds = 0.0
    for batch in batches(np.setdiff1d(mine, list(resumed)), grid.hidden_units, task.training.seeds):
        for trained, spent in _train_points(groups, task, grid, batch, inputs, targets, agf):
            seconds += spent
            for point in trained:  # kept as it finishes: a rerun of an interrupted sweep reads it back
                entries.append([point.index, _checked_entry(point)])
                store.write(point.index, entries[-1][1])
    shares = gather_json({"entries": entries, "seconds": seconds})
    names = [network.name for network in task.networks]
    for index, entry in share_entries(shares, chosen, names, task.training.seeds, jax.process_index()):
        points[index]["checked"] = entry
    runs = (len(chosen) - len(resumed)) * task.training.seeds  # this process's resumed: exact for one
    total = sum(share["seconds"] for share in shares)
    return max(share["seconds"] for share in shares), (total / runs if runs else None), len(shares), len(resumed)
