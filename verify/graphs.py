"""Theory against trained gated networks on graphs with shared edges (the routing task).

:func:`shared_race_report` ranks candidates by the Eq. 6 race (:mod:`derive.shared`), from
:meth:`numeric.shared_flow.SharedFlow.balanced_state`. :func:`graph_verify_report` trains every
candidate as a gated graph network twice: from decoupled initial weights
(``W_e = R_t diag(b_e(0)) R_s^T``, where gradient descent stays decoupled and the reduced
system in discrete time is exact: ``max_deviation_decoupled``) and from small random weights
(``max_deviation``, seeds vmapped). Deviations are ``max_t |L_theory - L_trained| / L(0)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import jax.numpy as jnp
import numpy as np

from gdln.derive import cache
from gdln.derive.errors import SpecError
from gdln.derive.shared import TAU, SharedReduction
from gdln.derive.spec import (
    EvaluationError,
    Task,
    digits_routing_task,
    evaluate,
    limits,
    routing_task,
    task_from_dict,
)
from gdln.numeric.data import NumericDataset
from gdln.numeric.graph_network import graph_forward, graph_layout, train_graph
from gdln.numeric.shared_flow import SharedFlow

from .checks import check_training_size
from .entries import parameter_entry
from .progress import progress
from .reports import DepthReport, GraphVerifyReport, RaceReport, SharedDeriveReport, ZeroShotReport

#: a crossing of 10% / 50% of the initial loss, read off per-epoch curves
LEVELS = {"t_90": 0.1, "t_half": 0.5}


def shared_edges(task: Task, network: str | None = None) -> bool:
    """Whether ``network`` (default: any of the task's candidates) shares edges across paths, so
    that it is derived, raced and verified by the shared-edge reduction (Eq. 6, this module)
    rather than as a network of modules: the one place the commands choose between the two."""
    if network is not None:
        return task.network(network).shared
    return any(candidate.shared for candidate in task.networks)


def _crossing(losses: np.ndarray, level: float) -> int | None:
    below = np.nonzero(losses <= level * losses[0])[0]
    return int(below[0]) if below.size else None


def shared_reduction(task: Task, network: str) -> SharedReduction:
    """The shared-edge reduction of ``network``, derived once (:mod:`derive.cache`)."""
    key = cache.derivation_key(task, task.network(network), "shared")
    return cache.derivation(key, lambda: SharedReduction(task, network))


def _flows(task: Task, values: Mapping) -> dict[str, SharedFlow]:
    return {n.name: SharedFlow(shared_reduction(task, n.name), values) for n in task.networks}


def shared_race_report(task: Task, overrides: Mapping[str, float] | None = None) -> RaceReport:
    """Rank every candidate by the Eq. 6 race in discrete time (one gradient step per epoch): a
    `RaceReport` whose networks give ``paths`` and ``modes`` instead of ``speed``, ``pathways``
    and ``closed_form``, and no crossovers (a graph whose paths share edges has none)."""
    if not task.networks:
        raise SpecError(task.source, "network", "the race needs at least one [[network]]")
    values = task.values(overrides)
    training = task.training
    entries = []
    for name, flow in progress(_flows(task, values).items(), "race", label=lambda item: item[0]):
        b0 = flow.balanced_state(training.init_scale)
        losses, _ = flow.descent(b0, training.learning_rate, training.epochs)
        entry: dict[str, Any] = {"name": name, "paths": len(flow.graph.paths), "modes": flow.modes}
        entry.update({key: _crossing(losses, level) for key, level in LEVELS.items()})
        entry["final_loss"] = float(losses[-1] / losses[0])
        entry["dynamics"] = "shared-edge reduction (Eq. 6), gradient descent"
        entries.append(entry)
    ranked = sorted(entries, key=lambda e: (e["t_90"] is None, e["t_90"] or 0, e["final_loss"]))
    return RaceReport.from_json(
        {
            "parameters": parameter_entry(values),
            "horizon": training.epochs,
            "networks": entries,
            "ranking": [e["name"] for e in ranked],
            "winner": ranked[0]["name"],
            "crossovers": [],
        }
    )


def _top_singular_values(matrix: np.ndarray, count: int) -> np.ndarray:
    return np.linalg.svd(matrix, compute_uv=False)[:count]


def _graph_entry(task: Task, name: str, flow: SharedFlow, data, training, curves: bool) -> dict[str, Any]:
    """One graph network's theory (the shared-edge descent from the balanced state) against the
    network trained from decoupled weights and from small random weights (one run per seed)."""
    inputs, targets = data
    network = task.network(name)
    assert network.graph is not None or not network.shared
    layout = graph_layout(flow.graph, task.num_datapoints)
    b0 = flow.balanced_state(training.init_scale)
    theory, theory_state = flow.descent(b0, training.learning_rate, training.epochs)
    decoupled = train_graph(
        inputs,
        targets,
        layout,
        training.learning_rate,
        training.epochs,
        initial=[w[None] for w in flow.decoupled_weights(b0)],
    )
    random = train_graph(
        inputs,
        targets,
        layout,
        training.learning_rate,
        training.epochs,
        init_scale=training.init_scale,
        seeds=list(range(training.seeds)),
    )
    decoupled_losses = np.asarray(decoupled.losses[0])
    random_losses = np.asarray(random.losses)
    entry: dict[str, Any] = {
        "name": name,
        "theory": {key: _crossing(theory, level) for key, level in LEVELS.items()},
        "trained": {key: [_crossing(run, level) for run in random_losses] for key, level in LEVELS.items()},
        "max_deviation_decoupled": float(np.max(np.abs(theory - decoupled_losses)) / theory[0]),
        "max_deviation": [float(np.max(np.abs(theory - run)) / theory[0]) for run in random_losses],
        "final_loss": {
            "theory": float(theory[-1] / theory[0]),
            "trained": [float(r[-1] / r[0]) for r in random_losses],
        },
    }
    if curves:
        entry["curves"] = {
            "theory": theory.tolist(),
            "decoupled": decoupled_losses.tolist(),
            "random": random_losses.tolist(),
        }
    finals = [np.asarray(w) for w in cast(list, random.final)]
    entry["layer_singular_values"] = _layer_singular_values(flow, finals, theory_state)
    return entry


def graph_verify_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    seeds: int | None = None,
    epochs: int | None = None,
    *,
    curves: bool = False,
) -> GraphVerifyReport:
    """Theory against gated graph networks trained from decoupled and from small random weights
    (with ``curves``, every loss curve per epoch too: theory, decoupled, random per seed)."""
    training = task.with_training(seeds=seeds, epochs=epochs).training
    for network in task.networks:  # before any derivation or training, as for module networks
        check_training_size(task, training, network.name)
    values = task.values(overrides)
    inputs, targets = NumericDataset(task)([values[s] for s in task.parameters])
    entries = [
        _graph_entry(task, name, flow, (inputs, targets), training, curves)
        for name, flow in progress(_flows(task, values).items(), "verify", label=lambda item: item[0])
    ]

    def by_time(time, final):  # first to 10% of the initial loss; among the rest, the lowest final loss
        return (time is None, time or 0.0, final)

    theory_ranking = sorted(entries, key=lambda e: by_time(e["theory"]["t_90"], e["final_loss"]["theory"]))
    trained_ranking = sorted(
        entries,
        key=lambda e: by_time(
            None if None in e["trained"]["t_90"] else float(np.mean(e["trained"]["t_90"])),
            float(np.mean(e["final_loss"]["trained"])),
        ),
    )
    return GraphVerifyReport.from_json(
        {
            "parameters": parameter_entry(values),
            "epochs": training.epochs,
            "seeds": training.seeds,
            "learning_rate": training.learning_rate,
            "init_scale": training.init_scale,
            "networks": entries,
            "ranking": {
                "theory": [e["name"] for e in theory_ranking],
                "trained": [e["name"] for e in trained_ranking],
            },
        }
    )


def _layer_singular_values(flow: SharedFlow, finals: list[np.ndarray], theory_state: np.ndarray) -> dict[str, Any]:
    """Mean over seeds of the top singular values of each edge's trained weights, by the edge's
    place (from an input node, between hidden nodes, into an output node), and the theory's
    ``b_e`` at the end of the run (``theory_state``)."""
    graph = flow.graph
    places: dict[str, list[np.ndarray]] = {"input": [], "hidden": [], "output": []}
    theory: dict[str, list[np.ndarray]] = {"input": [], "hidden": [], "output": []}
    state = theory_state.reshape(len(graph.edges), flow.modes)
    for e, edge in enumerate(graph.edges):
        source, target = graph.node(edge.source), graph.node(edge.target)
        place = "input" if source.role == "input" else "output" if target.role == "output" else "hidden"
        per_seed = [_top_singular_values(weights, flow.modes) for weights in finals[e]]
        places[place].append(np.mean(per_seed, axis=0))
        theory[place].append(np.sort(np.abs(state[e]))[::-1])
    summary: dict[str, Any] = {}
    for place in places:
        if places[place]:
            summary[place] = {
                "trained": np.mean(places[place], axis=0).tolist(),
                "theory": np.mean(theory[place], axis=0).tolist(),
            }
    return summary


def _value(expr, values: Mapping) -> float:
    """``expr`` at ``values``; NaN where it has no value there (0/0 where a path's correlation
    vanishes at these values): the JSON writes it as null and lists it under non_finite."""
    try:
        return evaluate(expr, values).real
    except EvaluationError:
        return math.nan


def shared_derive_report(
    task: Task, network: str, overrides: Mapping[str, float] | None = None
) -> tuple[SharedDeriveReport, SharedReduction]:
    """The shared-edge reduction of one network as JSON-ready text (assumptions, each path's
    mode strengths, exact and at the parameter values in use, and the Eq. 6 ODEs), and the
    reduction itself (its LaTeX)."""
    values = task.values(overrides)
    paths = task.network(network).graph
    if paths is not None and len(paths.paths) > limits.MAX_DERIVED_PATHS:
        raise SpecError(
            task.source,
            f"network[{network}].edge",
            f"{len(paths.paths)} paths; derive writes the shared-edge system of at most {limits.MAX_DERIVED_PATHS} "
            f"(a term for every pair of paths); race and verify take up to {limits.MAX_PATHS}",
        )
    reduction = shared_reduction(task, network)
    assumptions = reduction.assumptions
    report: dict[str, Any] = {
        "network": network,
        "parameters": parameter_entry(values),
        "paths": len(reduction.graph.paths),
        "paths_with_data": len(reduction.paths_with_data),
        "modes": reduction.num_modes,
        "shared_edges": [reduction.graph.edges[e].name for e in reduction.graph.shared_edges],
        "assumptions": {"holds": assumptions.holds, "failures": list(assumptions.failures)},
        "singular_values": [],
        "odes": [],
    }
    if assumptions.holds:
        names = [p.name for p in reduction.network.pathways]
        report["singular_values"] = [
            {"path": names[p], "exprs": [str(v) for v in s], "values": [_value(v, values) for v in s]}
            for p, s in reduction.singular_values.items()
        ]
        report["odes"] = [
            f"tau d{reduction.strengths[e][k]}/dt = {reduction.rates[e][k] * TAU}"
            for e in range(len(reduction.graph.edges))
            for k in range(reduction.num_modes)
        ]
        report["loss"] = str(reduction.loss)
    return SharedDeriveReport.from_json(report), reduction


ROUTE_LABELS = ("input_domain", "output_domain", "item")


def all_routes(task: Task, inputs: np.ndarray, targets: np.ndarray):
    """Every route ``(i, j)`` of a routing task with every item, trained or not: the input row of
    item ``a`` in domain ``i`` and the target row of item ``a`` in domain ``j``, read off the
    training data, with their labels, and a mask of the routes seen in training."""
    missing = [label for label in ROUTE_LABELS if label not in task.labels]
    if missing:
        raise SpecError(
            task.source, f"data.labels.{missing[0]}", "routes need the labels input_domain, output_domain, item"
        )
    source, target, item = (np.asarray(task.labels[label]) for label in ROUTE_LABELS)
    trained = set(zip(source.tolist(), target.tolist()))
    rows_x, rows_y, seen = [], [], []
    labels: dict[str, list[int]] = {label: [] for label in ROUTE_LABELS}
    for i in sorted(set(source.tolist())):
        for j in sorted(set(target.tolist())):
            for a in sorted(set(item.tolist())):
                rows_x.append(inputs[np.nonzero((source == i) & (item == a))[0][0]])
                rows_y.append(targets[np.nonzero((target == j) & (item == a))[0][0]])
                for label, value in zip(ROUTE_LABELS, (i, j, a)):
                    labels[label].append(value)
                seen.append((i, j) in trained)
    return np.array(rows_x), np.array(rows_y), labels, np.array(seen)


def route_errors(
    task: Task, network: str, weights_by_seed: list[np.ndarray], inputs, targets
) -> dict[str, list[float]]:
    """Per seed, the loss on trained and on untrained routes over the loss of a zero output there."""
    graph = task.network(network).graph
    if graph is None:
        raise SpecError(task.source, f"network[{network}]", "route errors need a graph network")
    x, y, labels, seen = all_routes(task, np.asarray(inputs), np.asarray(targets))
    layout = graph_layout(graph, task.num_datapoints, labels)
    errors: dict[str, list[float]] = {"trained": [], "untrained": []}
    for seed in range(weights_by_seed[0].shape[0]):
        prediction = np.asarray(graph_forward([w[seed] for w in weights_by_seed], jnp.asarray(x), layout, y.shape[1]))
        squared = np.sum((y - prediction) ** 2, axis=1)
        baseline = np.sum(y**2, axis=1)
        for key, mask in (("trained", seen), ("untrained", ~seen)):
            errors[key].append(float(squared[mask].sum() / baseline[mask].sum()) if mask.any() else float("nan"))
    return errors


#: step of the zero-shot sweeps: stable at every init scale of ZERO_SHOT_INIT_SCALES (0.3 is not at 0.5)
ZERO_SHOT_LEARNING_RATE = 0.1


def cross_domain_similarity(task: Task, network: str, weights_by_seed, inputs, targets) -> list[float]:
    """Per seed, the mean cosine similarity between the first hidden layer's representations of
    one item presented to two different input domains (slides' Figures 4g and 6c, off-diagonal
    blocks of the similarity matrix): near 1 for one shared representation, near 0 for random
    per-domain ones. The first hidden layer is the target of the edges out of the input nodes."""
    graph = task.network(network).graph
    assert graph is not None  # routing candidates are graphs
    x, _, labels, _ = all_routes(task, np.asarray(inputs), np.asarray(targets))
    first = {e for e, edge in enumerate(graph.edges) if graph.node(edge.source).role == "input"}
    layers = {graph.edges[e].target for e in first}
    source, item = np.asarray(labels["input_domain"]), np.asarray(labels["item"])
    values = []
    for seed in range(weights_by_seed[0].shape[0]):
        # the representation of (domain, item): the layer's activity from its input node alone
        codes: dict[tuple[int, int], np.ndarray] = {}
        for n in range(len(x)):
            key = (int(source[n]), int(item[n]))
            if key in codes:
                continue
            parts = []
            for layer in sorted(layers):
                h = np.zeros(graph.node(layer).size)
                for e in first:
                    edge = graph.edges[e]
                    node = graph.node(edge.source)
                    if (
                        edge.target == layer
                        and node.when is not None
                        and dict(node.when).get("input_domain") == (key[0],)
                    ):
                        h = h + weights_by_seed[e][seed] @ x[n][list(node.features)]
                parts.append(h)
            codes[key] = np.concatenate(parts)
        similarities = []
        for (i, a), h in codes.items():
            for (j, b), g in codes.items():
                if a == b and i < j:
                    norm = np.linalg.norm(h) * np.linalg.norm(g)
                    similarities.append(float(h @ g / norm) if norm > 0 else 0.0)
        values.append(float(np.mean(similarities)) if similarities else float("nan"))
    return values


ZERO_SHOT_INIT_SCALES = (0.01, 0.05, 0.1, 0.2, 0.3)
#: the routing task's data: the slides' hierarchy items, or digits through rotations and permutations
ZERO_SHOT_DATA = ("hierarchy", "digits")


def _route_errors_trained(
    task: Task, network: str, learning_rate: float, epochs: int, scale: float, seeds: int, curves: bool
) -> dict[str, Any]:
    """``network`` of a routing task trained from random weights (seeds 0..seeds-1): its errors
    on trained and untrained routes, the cross-domain similarity, with ``curves`` the losses."""
    inputs, targets = NumericDataset(task)([])
    graph = task.network(network).graph
    assert graph is not None  # routing candidates are graphs
    layout = graph_layout(graph, task.num_datapoints)
    result = train_graph(inputs, targets, layout, learning_rate, epochs, init_scale=scale, seeds=list(range(seeds)))
    finals = [np.asarray(w) for w in cast(list, result.final)]
    found: dict[str, Any] = dict(route_errors(task, network, finals, inputs, targets))
    found["similarity"] = cross_domain_similarity(task, network, finals, inputs, targets)
    if curves:
        found["curves"] = np.asarray(result.losses).tolist()
    return found


def zero_shot_report(
    domains: int,
    trained: Sequence[int] | None = None,
    init_scales: Sequence[float] = ZERO_SHOT_INIT_SCALES,
    *,
    seeds: int = 2,
    network: str = "share-all",
    epochs: int = 3000,
    learning_rate: float = ZERO_SHOT_LEARNING_RATE,
    scale_trained: int | None = None,
    curves: bool = False,
    data: str = "hierarchy",
) -> ZeroShotReport:
    """Error on trained and untrained routes of ``network`` trained from random weights (seeds
    0..seeds-1), over K = ``trained`` (default 1..M-1, at init scale 0.02: slides' Figure 5c) and
    over ``init_scales`` (at K = ``scale_trained``, default M // 2: Figure 6b). Errors are the
    loss over the loss of a zero output on the same routes; ``curves`` adds the training losses.
    ``data`` is ``"hierarchy"`` (:func:`derive.spec.tasks.routing_task`, slides' Figure 5) or
    ``"digits"`` (:func:`derive.spec.tasks.digits_routing_task`, the naturalistic Figure 7)."""
    if data not in ZERO_SHOT_DATA:
        raise SpecError("zero-shot", "--data", f"expected one of {', '.join(ZERO_SHOT_DATA)}, got {data!r}")
    build = routing_task if data == "hierarchy" else digits_routing_task
    trained = list(trained or range(1, domains))
    scale_trained = scale_trained or max(1, domains // 2)
    if not 1 <= scale_trained < domains:
        raise SpecError("zero-shot", "--scale-trained", f"needs 1 <= K < domains ({domains}) to leave untrained routes")
    try:  # the largest K gives the most data: refused here, before any K is trained
        build(domains, max(*trained, scale_trained), epochs=epochs)
    except SpecError as error:
        raise SpecError("zero-shot", "--domains" if error.key == "domains" else error.key, error.problem) from None

    def run(k: int, scale: float) -> dict[str, Any]:
        spec = build(domains, k, init_scale=scale, learning_rate=learning_rate, epochs=epochs)
        task = task_from_dict(spec, source=f"routing ({data}) M={domains} K={k}")
        return _route_errors_trained(task, network, learning_rate, epochs, scale, seeds, curves)

    by_k = [
        {"trained_domains": k, "fraction": k / domains, **run(k, 0.02)}
        for k in progress(trained, "zero-shot: trained domains", label=lambda k: f"K = {k}")
    ]
    by_scale = [
        {"init_scale": scale, **run(scale_trained, scale)}
        for scale in progress(init_scales, "zero-shot: init scale", label=lambda scale: f"{scale:g}")
    ]
    return ZeroShotReport.from_json(
        {
            "data": data,
            "domains": domains,
            "network": network,
            "seeds": seeds,
            "epochs": epochs,
            "learning_rate": learning_rate,
            "scale_trained_domains": scale_trained,
            "by_trained": by_k,
            "by_init_scale": by_scale,
        }
    )


def _nearest_the_mean(curves: np.ndarray) -> int:
    """The run whose loss curve is closest (in the mean squared difference) to the mean curve."""
    return int(np.argmin(np.mean((curves - curves.mean(axis=0)) ** 2, axis=1)))


def _deep_relu_gates(x: np.ndarray, final, seeds: list[int]) -> tuple[list[float], list[int], list[int]]:
    """Per seed, of the two-hidden-layer ReLU network's final weights: the fraction of first-layer
    units on at every datapoint, how many distinct on-patterns the second-layer units that carry
    output have, and how many of those one ReLU unit on the inputs could not make."""
    from .realizability import realizable

    w1, w2, w3 = (np.asarray(w) for w in cast(list, final))
    first_on, patterns, unrealizable = [], [], []
    for seed in seeds:
        layer1 = x @ w1[seed].T
        first_on.append(float(np.mean(np.all(layer1 > 0, axis=0))))
        layer2 = np.maximum(layer1, 0) @ w2[seed].T
        carries = np.linalg.norm(w3[seed], axis=0) > 0.01 * np.linalg.norm(w3[seed], axis=0).max()
        found = {tuple(np.nonzero(layer2[:, u] > 0)[0]) for u in np.nonzero(carries)[0]}
        found.discard(())
        patterns.append(len(found))
        unrealizable.append(sum(1 for pattern in found if not realizable(x, pattern)[0]))
    return first_on, patterns, unrealizable


def depth_report(task: Task, network: str, seeds: int | None = None, epochs: int | None = None) -> DepthReport:
    """Paper Section 6: a ReLU network with two hidden layers of ``training.hidden_units`` units
    against the GDLN ``network`` (a graph), both trained from random weights over seeds 0..seeds-1.

    Reports per-epoch mean and spread of both, the runs nearest their means and the largest
    difference between those runs and between the means (over the initial loss), the ReLU
    network's gates (first layer: fraction of units on at every datapoint; second layer: the
    distinct on-patterns of units that carry output) and how many of those patterns one ReLU
    unit on the inputs could not make (where depth breaks Lemma 4.1)."""
    from gdln.numeric.training import train_deep_relu

    training = task.with_training(seeds=seeds, epochs=epochs).training
    graph = task.network(network).graph
    if graph is None:
        raise SpecError(task.source, f"network[{network}]", "the depth comparison needs a graph network")
    inputs, targets = NumericDataset(task)([float(v) for v in task.parameters.values()])
    hidden = training.hidden_units
    seed_list = list(range(training.seeds))
    relu = train_deep_relu(
        inputs, targets, (hidden, hidden), training.init_scale, training.learning_rate, training.epochs, seed_list
    )
    gdln = train_graph(
        inputs,
        targets,
        graph_layout(graph, task.num_datapoints),
        training.learning_rate,
        training.epochs,
        init_scale=training.init_scale,
        seeds=seed_list,
    )
    curves = {"relu": np.asarray(relu.losses), "gdln": np.asarray(gdln.losses)}
    initial = float(curves["relu"][:, 0].mean())
    nearest = {name: _nearest_the_mean(c) for name, c in curves.items()}
    typical = {name: curves[name][nearest[name]] for name in curves}
    x = np.asarray(inputs)
    first_on, patterns, unrealizable = _deep_relu_gates(x, relu.final, seed_list)
    return DepthReport.from_json(
        {
            "network": network,
            "seeds": training.seeds,
            "epochs": training.epochs,
            "hidden_units": hidden,
            "init_scale": training.init_scale,
            "initial_loss": initial,
            "mean": {name: c.mean(axis=0).tolist() for name, c in curves.items()},
            "spread": {name: c.std(axis=0).tolist() for name, c in curves.items()},
            "nearest_the_mean": nearest,
            "typical": {name: c.tolist() for name, c in typical.items()},
            "max_deviation_typical": float(np.max(np.abs(typical["relu"] - typical["gdln"])) / initial),
            "max_deviation_mean": float(
                np.max(np.abs(curves["relu"].mean(axis=0) - curves["gdln"].mean(axis=0))) / initial
            ),
            "max_spread": {name: float(c.std(axis=0).max() / initial) for name, c in curves.items()},
            "first_layer_always_on": first_on,
            "second_layer_patterns": patterns,
            "second_layer_patterns_one_layer_cannot_make": unrealizable,
        }
    )
