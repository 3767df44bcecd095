"""The grid of ``gdln sweep``: its axes (a spec parameter or a training setting, each
checked as ``--grid`` checks its text), the limits on its size, and the values, data and
training settings at every point."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from numbers import Integral, Real

import numpy as np

from gdln.derive.errors import SpecError
from gdln.derive.spec import (
    DATA_MAGNITUDE,
    MAX_SWEEP_RUNS,
    MAX_SWEEP_TRAINING_RUNS,
    Task,
    training_value,
)
from gdln.numeric.prediction import TaskPredictions

#: the training settings an axis may sweep, beside the spec's parameters
TRAINING_AXES = ("init_scale", "learning_rate", "hidden_units")
MAX_AXES = 2
#: points on one axis, and on the whole grid (the alignment-seeded race takes about 40 ms a point on 2 cores)
MAX_AXIS_POINTS = 256
MAX_GRID_POINTS = 16_384


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


def without_parameters(grid: SweepGrid) -> SweepGrid:
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


def models_at_width(task: Task, base: TaskPredictions, hidden_units: int) -> TaskPredictions:
    """The predictions of ``task`` trained with ``hidden_units`` units: ``base`` at the spec's own width."""
    if hidden_units == task.training.hidden_units:
        return base
    return TaskPredictions(task.with_training(hidden_units=int(hidden_units)))
