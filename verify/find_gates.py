"""From a trained ReLU network to its ReLN: Algorithm 1 of the paper's Appendix B, and the elbow.

For each number of clusters ``k`` the rows of sampled hidden activity are clustered
(:mod:`numeric.gate_finding`); the rounded centroids are the gates of a GDLN with one pathway
per distinct non-empty pattern, its hidden units split in proportion to the clusters' shares
of the rows that are on somewhere.
That GDLN is predicted by the theory from the very ReLU runs whose gates were sampled: its exact
reduced flow, each pathway started at the end of the runs' alignment phase from the units
nearest its gate, stepped as gradient descent (as ``gdln verify``); the mean squared difference
between the mean ReLU loss curve and the mean prediction is the clustering's error. Nothing is
trained for it and nothing is fitted. The elbow of error against ``k`` is found by the kneedle
rule on the error's logarithm (``kneed``, convex and decreasing, sensitivity
:data:`KNEE_SENSITIVITY`), capped at the first ``k`` within :data:`FLAT_FACTOR` of the
smallest error.

The found network's gates are checked for realizability by one bias-free ReLU unit (the LP of
:mod:`verify.realizability`); the network is written as a ``[[network]]`` table that ``race``,
``derive`` and ``verify`` read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import SpecError
from gdln.derive.spec import Network, Pathway, Task
from gdln.derive.words import plural
from gdln.numeric.gate_finding import ROUNDING, Clustering, cluster_rows, relu_gate_snapshots
from gdln.numeric.prediction import GRADIENT_DESCENT, REDUCED_FLOW, Prediction, TaskPredictions

from .checks import check_training_size, check_values
from .entries import epoch_grid, theory_stride
from .following import found_network_comment, network_toml, relu_alignment, relu_initial_weights
from .progress import Stages
from .realizability import realizable
from .reports import FindGatesReport

#: the paper samples every 100 epochs
SNAPSHOT_INTERVAL = 100
#: at most this many samples per training (the rows grow with seeds x snapshots x units)
MAX_SNAPSHOTS = 200
#: kneedle's sensitivity ``S`` (its default)
KNEE_SENSITIVITY = 1.0
DEFAULT_CLUSTERS = tuple(range(2, 9))
#: errors below this count as this (a GDLN that matches to rounding)
ERROR_FLOOR = 1e-30
#: an error within this factor of the smallest is as good as it: no reason for more clusters
FLAT_FACTOR = 2.0


def found_network(clustering: Clustering, hidden_units: int, num_inputs: int, num_outputs: int, name: str) -> Network:
    """The GDLN of the rounded centroids: one pathway per distinct non-empty gate (clusters that
    round to the same gate are one pathway), with ``hidden_units`` split by the clusters' shares."""
    units: dict[tuple[int, ...], float] = {}
    for gates, share in zip(clustering.gates, clustering.share):
        active = tuple(int(n) for n in np.flatnonzero(gates))
        if active:
            units[active] = units.get(active, 0.0) + float(share)
    pathways = tuple(
        Pathway(
            name=f"p{k}",
            active=active,
            inputs=tuple(range(num_inputs)),
            outputs=tuple(range(num_outputs)),
            hidden_layers=1,
            units=max(1, round(share * hidden_units)),
        )
        for k, (active, share) in enumerate(units.items())
    )
    return Network(name, pathways)


def elbow(ks: Sequence[int], errors: Sequence[float]) -> int | None:
    """The kneedle elbow of ``log10(errors)`` against ``ks`` (convex, decreasing), but never past
    the smallest ``k`` whose error is within :data:`FLAT_FACTOR` of the smallest error: more
    clusters that gain nothing are no elbow (kneedle on a flat curve picks an arbitrary point).
    ``None`` if kneedle finds none. On the logarithm because the error falls by orders of
    magnitude once the right patterns are found (XoR: 0.1, 0.01, 1e-4, 1e-4, ...), and on a
    linear scale kneedle sees only the first drop."""
    from kneed import KneeLocator

    # a k whose prediction diverged (non-finite error) is no candidate for the elbow
    finite = [(int(k), max(float(e), ERROR_FLOOR)) for k, e in sorted(zip(ks, errors)) if np.isfinite(e)]
    if len(finite) < 3:
        return None
    ks, floored = [k for k, _ in finite], np.array([e for _, e in finite])
    first_flat = next(k for k, e in zip(ks, floored) if e <= FLAT_FACTOR * floored.min())
    knee = KneeLocator(ks, list(np.log10(floored)), curve="convex", direction="decreasing", S=KNEE_SENSITIVITY).knee
    if knee is None:
        return None if first_flat == ks[-1] else first_flat
    return min(int(knee), first_flat)


def _found_error(task: Task, network: Network, alignment, learning_rate: float, vector, ts, relu_mean) -> float:
    """The mean squared error between the trained ReLU network's loss and the found GDLN's: the
    exact reduced flow, every pathway started from the units nearest its gate at the end of the
    alignment phase, stepped as gradient descent (no training); a network of no pathway keeps
    its initial loss."""
    if not network.pathways:
        return float(np.mean((relu_mean - relu_mean[0]) ** 2))
    prediction = Prediction(NetworkDerivation(task, network), kind=REDUCED_FLOW)
    curve = prediction.aligned_loss_curve(ts, alignment, learning_rate, vector, time=GRADIENT_DESCENT)
    return float(np.mean((relu_mean - np.asarray(curve)) ** 2))


def _cluster_entry(k: int, clustering, network: Network, error: float, inputs: np.ndarray, units: int) -> dict:
    """The report's entry of one ``k``: each found pattern's gates, centroid, units and whether
    it is realizable; the found GDLN's pathways, its error and the clustering's inertia."""
    return {
        "k": k,
        "patterns": [
            {
                "gates": [int(g) for g in gates],
                "centroid": [float(c) for c in centroid],
                "units": float(share * units),
                "realizable": bool(realizable(inputs, np.flatnonzero(gates))[0]) if gates.any() else None,
            }
            for gates, centroid, share in zip(clustering.gates, clustering.centroids, clustering.share)
        ],
        "pathways": len(network.pathways),
        "mse": error,
        "inertia": clustering.inertia,
    }


def _checked_snapshots(task: Task, training, snapshots: int | None, clusters: Sequence[int]) -> int:
    """How many snapshots to sample (default: one every :data:`SNAPSHOT_INTERVAL` epochs, at
    most :data:`MAX_SNAPSHOTS`), or a one-line error for settings the search cannot use."""
    check_training_size(task, training, "relu")
    if snapshots is None:
        snapshots = min(max(training.epochs // SNAPSHOT_INTERVAL, 1), MAX_SNAPSHOTS)
    if not 1 <= snapshots <= training.epochs:
        raise SpecError(task.source, "--snapshots", f"must be between 1 and the {training.epochs} epochs")
    if any(k < 1 for k in clusters):
        raise SpecError(task.source, "--clusters", "cluster counts must be positive")
    return snapshots


def _found_entries(
    values: Mapping, training, sampled, sampled_rows, epochs: int, clusters: list, chosen: int | None
) -> dict:
    """The report's keys: the settings, the sampled rows (``sampled_rows``: ``sampled.rows()``,
    the distinct rows and their counts), each ``k``'s entry and the elbow."""
    rows, counts = sampled_rows
    return {
        "parameters": {s.name: float(v) for s, v in values.items()},
        "seeds": training.seeds,
        "epochs": epochs,
        "snapshots": [int(e) for e in sampled.epochs],
        "rows": int(counts.sum()),
        "distinct_rows": len(rows),
        "silent_rows": sampled.silent_rows,
        "rounding": ROUNDING,
        "clusters": clusters,
        "elbow": chosen,
        "elbow_rule": (
            f"kneedle (kneed) on log10(mse), convex decreasing, S = {KNEE_SENSITIVITY}; at most the first k "
            f"within {FLAT_FACTOR:g}x of the smallest mse"
        ),
        "error_model": "theory: exact reduced flow from the runs' alignment phase, gradient descent",
    }


def find_gates_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    clusters: Sequence[int] = DEFAULT_CLUSTERS,
    seeds: int | None = None,
    snapshots: int | None = None,
    *,
    epochs: int | None = None,
) -> tuple[FindGatesReport, str]:
    """Algorithm 1 for every ``k`` in ``clusters``, the elbow, and the elbow's network as TOML;
    ``seeds`` and ``epochs`` default to the spec's."""
    check_values(task, overrides, derivations=False)
    values = task.values(overrides)
    training = task.with_training(seeds=seeds, epochs=epochs).training
    snapshots = _checked_snapshots(task, training, snapshots, clusters)
    models = TaskPredictions(task)
    vector = [float(values[p]) for p in task.parameters]
    inputs, targets = models.dataset(vector)
    # one draw of initial weights: the runs whose gates are sampled, and the alignment phase the
    # theory starts from, are the same runs
    initial = relu_initial_weights(task, training)
    cluster_counts = sorted(set(clusters))
    step = Stages("find-gates", 2 + len(cluster_counts))
    step(f"training the ReLU network ({plural(training.seeds, 'seed')}, {plural(snapshots, 'snapshot')})")
    sampled = relu_gate_snapshots(inputs, targets, initial, training.learning_rate, training.epochs, snapshots)
    epochs = sampled.losses.shape[1] - 1
    stride = theory_stride(epochs)
    ts = epoch_grid(epochs, stride)
    relu_mean = sampled.losses.mean(axis=0)[::stride]
    step("alignment phase of the same runs")
    alignment = relu_alignment(models, initial, values, training)
    rows, counts = sampled.rows()
    entries: list[dict[str, Any]] = []
    networks: dict[int, Network] = {}
    for k in cluster_counts:
        step(f"k-means with k = {k}, and the found GDLN's loss")
        clustering = cluster_rows(rows, counts, k)
        networks[k] = found_network(clustering, training.hidden_units, task.num_inputs, task.num_outputs, f"found-{k}")
        error = _found_error(task, networks[k], alignment, training.learning_rate, vector, ts, relu_mean)
        entries.append(_cluster_entry(k, clustering, networks[k], error, np.asarray(inputs), training.hidden_units))
    step.close()
    ks = [e["k"] for e in entries]
    chosen = elbow(ks, [e["mse"] for e in entries])
    report = _found_entries(values, training, sampled, (rows, counts), epochs, entries, chosen)
    if chosen is None:
        report["notes"] = ["kneedle found no elbow in the error curve; no network is chosen"]
        return FindGatesReport.from_json(report), ""
    network = networks[chosen]
    report["network"] = network.name
    comment = found_network_comment(f"gates found by k-means with k = {chosen}", values, training.seeds, "find-gates")
    return FindGatesReport.from_json(report), network_toml(network, comment)
