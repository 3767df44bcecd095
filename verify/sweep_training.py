"""The checked points of ``gdln sweep``: ReLU networks trained at the chosen grid points (all
points and seeds of a width in one program), each beside verify's predictions for it, judged
by verify's rule; kept in the disk cache as they finish (:mod:`verify.sweep_store`) and, in a
run of several processes, shared among them (:mod:`verify.sweep_shares`)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.errors import GdlnError, SpecError
from gdln.derive.spec import (
    Task,
    Training,
    training_value,
)
from gdln.numeric.agf import agf_points
from gdln.numeric.prediction import TaskPredictions
from gdln.numeric.processes import gather_json, process_share
from gdln.numeric.training import initial_relu_weights, train_relu_points

from . import rules
from .checks import check_training_size
from .entries import theory_stride
from .following import candidate_predictions, predicted_relu_curves, relu_alignment
from .rules import follow_resolution, followed_candidate
from .simulation import deviations
from .sweep_grid import Axis, SweepGrid, check_axes, finite_points, models_at_width, sweep_grid
from .sweep_shares import check_plans, share_entries
from .sweep_store import PointStore, Shard, batches, slice_rows


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
    widths = {int(w): models_at_width(task, models, int(w)) for w in np.unique(grid.hidden_units)}
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


def checked_entry(point: TrainedPoint) -> dict[str, Any]:
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


def train_checked_points(
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
                entries.append([point.index, checked_entry(point)])
                store.write(point.index, entries[-1][1])
    shares = gather_json({"entries": entries, "seconds": seconds})
    names = [network.name for network in task.networks]
    for index, entry in share_entries(shares, chosen, names, task.training.seeds, jax.process_index()):
        points[index]["checked"] = entry
    runs = (len(chosen) - len(resumed)) * task.training.seeds  # this process's resumed: exact for one
    total = sum(share["seconds"] for share in shares)
    return max(share["seconds"] for share in shares), (total / runs if runs else None), len(shares), len(resumed)
