"""Theory against trained gated networks on graphs with shared edges (the routing task).

:func:`shared_race_report` ranks candidates by the Eq. 6 race (:mod:`derive.shared`), from
:meth:`numeric.shared_flow.SharedFlow.balanced_state`. :func:`graph_verify_report` trains every
candidate as a gated graph network twice: from decoupled initial weights
(``W_e = R_t diag(b_e(0)) R_s^T``, where gradient descent stays decoupled and the reduced
system in discrete time is exact: ``max_deviation_decoupled``) and from small random weights
(``max_deviation``, seeds vmapped). Deviations are ``max_t |L_theory - L_trained| / L(0)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from derive.errors import SpecError
from derive.shared import TAU, SharedReduction
from derive.spec import Task
from numeric.data import NumericDataset
from numeric.graph_network import graph_layout, train_graph
from numeric.shared_flow import SharedFlow

#: a crossing of 10% / 50% of the initial loss, read off per-epoch curves
LEVELS = {"t_90": 0.1, "t_half": 0.5}


def _crossing(losses: np.ndarray, level: float) -> int | None:
    below = np.nonzero(losses <= level * losses[0])[0]
    return int(below[0]) if below.size else None


def _flows(task: Task, values: Mapping) -> dict[str, SharedFlow]:
    return {n.name: SharedFlow(SharedReduction(task, n.name), values) for n in task.networks}


def shared_race_report(task: Task, overrides: Mapping[str, float] | None = None) -> dict:
    """Rank every candidate by the Eq. 6 race in discrete time (one gradient step per epoch)."""
    if not task.networks:
        raise SpecError(task.source, "network", "the race needs at least one [[network]]")
    values = task.values(overrides)
    training = task.training
    entries = []
    for name, flow in _flows(task, values).items():
        b0 = flow.balanced_state(training.init_scale)
        losses = flow.descent_losses(b0, training.learning_rate, training.epochs)
        entry: dict[str, Any] = {"name": name, "paths": len(flow.graph.paths), "modes": flow.modes}
        entry.update({key: _crossing(losses, level) for key, level in LEVELS.items()})
        entry["final_loss"] = float(losses[-1] / losses[0])
        entry["dynamics"] = "shared-edge reduction (Eq. 6), gradient descent"
        entries.append(entry)
    ranked = sorted(entries, key=lambda e: (e["t_90"] is None, e["t_90"] or 0, e["final_loss"]))
    return {
        "parameters": {s.name: v for s, v in values.items()},
        "horizon": training.epochs,
        "networks": entries,
        "ranking": [e["name"] for e in ranked],
        "winner": ranked[0]["name"],
        "crossovers": [],
    }


def _top_singular_values(matrix: np.ndarray, count: int) -> np.ndarray:
    return np.linalg.svd(matrix, compute_uv=False)[:count]


def graph_verify_report(
    task: Task, overrides: Mapping[str, float] | None = None, seeds: int | None = None, epochs: int | None = None
) -> dict:
    """Theory against gated graph networks trained from decoupled and from small random weights."""
    training = task.with_training(seeds=seeds, epochs=epochs).training
    values = task.values(overrides)
    inputs, targets = NumericDataset(task)([values[s] for s in task.parameters])
    entries = []
    for name, flow in _flows(task, values).items():
        network = task.network(name)
        assert network.graph is not None or not network.shared
        layout = graph_layout(flow.graph, task.num_datapoints)
        b0 = flow.balanced_state(training.init_scale)
        theory = flow.descent_losses(b0, training.learning_rate, training.epochs)
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
        entry["layer_singular_values"] = _layer_singular_values(
            flow, [np.asarray(w) for w in cast(list, random.final)], b0, training
        )
        entries.append(entry)

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
    return {
        "parameters": {s.name: v for s, v in values.items()},
        "epochs": training.epochs,
        "seeds": training.seeds,
        "learning_rate": training.learning_rate,
        "init_scale": training.init_scale,
        "networks": entries,
        "ranking": {"theory": [e["name"] for e in theory_ranking], "trained": [e["name"] for e in trained_ranking]},
    }


def _layer_singular_values(flow: SharedFlow, finals: list[np.ndarray], b0, training) -> dict[str, Any]:
    """Mean over seeds of the top singular values of each edge's trained weights, by the edge's
    place (from an input node, between hidden nodes, into an output node), and the theory's
    ``b_e`` at the end of the run."""
    graph = flow.graph
    places: dict[str, list[np.ndarray]] = {"input": [], "hidden": [], "output": []}
    theory: dict[str, list[np.ndarray]] = {"input": [], "hidden": [], "output": []}
    state = flow.descent_states(b0, training.learning_rate, training.epochs).reshape(len(graph.edges), flow.modes)
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


def shared_derive_report(task: Task, network: str) -> tuple[dict, SharedReduction]:
    """The shared-edge reduction of one network as JSON-ready text: assumptions, each path's
    mode strengths (exact), and the Eq. 6 ODEs."""
    reduction = SharedReduction(task, network)
    assumptions = reduction.assumptions
    report: dict[str, Any] = {
        "network": network,
        "paths": len(reduction.graph.paths),
        "paths_with_data": len(reduction._with_data),
        "modes": reduction.num_modes,
        "shared_edges": [reduction.graph.edges[e].name for e in reduction.graph.shared_edges],
        "assumptions": {"holds": assumptions.holds, "failures": list(assumptions.failures)},
        "singular_values": [],
        "odes": [],
    }
    if assumptions.holds:
        names = [p.name for p in reduction.network.pathways]
        report["singular_values"] = [
            {"path": names[p], "exprs": [str(v) for v in s], "values": [float(v) for v in s]}
            for p, s in reduction.singular_values.items()
        ]
        report["odes"] = [
            f"tau d{reduction.strengths[e][k]}/dt = {reduction.rates[e][k] * TAU}"
            for e in range(len(reduction.graph.edges))
            for k in range(reduction.num_modes)
        ]
        report["loss"] = str(reduction.loss)
    return report, reduction
