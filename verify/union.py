"""The union network (issue: Proposition 4.2 as a machine check, part 1): every distinct pathway of
a task's candidate networks in one GDLN, trained together by the exact reduced flow. Which
pathways grow and which stay at their seed says which modules gradient descent uses when all of
them are available: the paper's "even if all six possible modules are trained simultaneously,
the pathways active for a single context remain inactive" (Appendix E), for any task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gdln.derive.errors import SpecError
from gdln.derive.spec import Network, Task
from gdln.numeric.initial_conditions import log_expected_initial_strength
from gdln.numeric.prediction import Prediction, cached_derivation
from gdln.numeric.reduced_flow import loss_of_maps

from .entries import parameter_entry
from .reports import UnionReport

#: a pathway "grows" when its final strength is at least this fraction of the strongest pathway's
GROWTH_FRACTION = 0.05


def union_network(task: Task) -> Network:
    """One pathway per distinct (datapoints, inputs, outputs, depth) among all candidate
    networks, named as in the first network that lists it; a name another distinct pathway
    already has gets its network's name too (``context-1 (ctx-only)``): two networks may both
    call different pathways ``context-1``."""
    seen: dict[tuple, Any] = {}
    names: set[str] = set()
    for network in task.networks:
        for pathway in network.pathways:
            key = (pathway.active, pathway.inputs, pathway.outputs, pathway.hidden_layers)
            if key in seen:
                continue
            if pathway.name in names:
                pathway = dataclasses.replace(pathway, name=f"{pathway.name} ({network.name})")
            names.add(pathway.name)
            seen[key] = pathway
    return Network(name="union", pathways=tuple(seen.values()))


def union_report(
    task: Task,
    overrides: Mapping[str, float] | None = None,
    epochs: int | None = None,
    *,
    kind: str | None = None,
) -> UnionReport:
    """Train the union network by the exact reduced flow from every pathway's width and the init
    scale, and report each pathway's final strength (largest singular value of its map) over its
    seed ``a0``, and whether it grows (:data:`GROWTH_FRACTION` of the strongest).

    ``kind`` chooses the dynamics as `numeric.prediction.Prediction` does (default: the first
    the derivation allows); ``"reduced flow"`` needs no modes derived."""
    if not task.networks:
        raise SpecError(task.source, "network", "the union needs at least one [[network]]")
    values = task.values(overrides)
    vector: Sequence[float] = [values[s] for s in task.parameters]
    training = task.with_training(epochs=epochs).training
    network = union_network(task)
    # kept in the derivation cache like every candidate's: the union's modes are most of what
    # `gdln unique` and `gdln union` cost (Section 4: 14 of 18 s), and they depend on nothing else
    # at a point where the generic derivation fails, the union derived there (derive.exceptional)
    prediction, vector = Prediction(cached_derivation(task, network), kind=kind).at(vector)
    ts = np.array([0.0, float(training.epochs)])
    maps = prediction.maps(ts, training.init_scale, training.tau, vector)  # one solve: strengths and loss
    final = {
        name: float(np.linalg.norm(np.asarray(m)[-1], 2)) if np.asarray(m).size else 0.0 for name, m in maps.items()
    }
    strongest = max(final.values()) if final else 0.0
    pathways = []
    for pathway in network.pathways:
        log_seed = log_expected_initial_strength(pathway.units, training.init_scale)
        strength = final[pathway.name]
        pathways.append(
            {
                "name": pathway.name,
                "active": list(pathway.active),
                "seed": float(np.exp(log_seed)),
                "final": strength,
                "relative": strength / strongest if strongest > 0 else 0.0,
                "log10_growth": float((np.log(max(strength, 1e-300)) - log_seed) / np.log(10.0)),
                "grows": bool(strongest > 0 and strength >= GROWTH_FRACTION * strongest),
            }
        )
    losses = np.asarray(loss_of_maps(prediction.flow, maps, vector))
    return UnionReport.from_json(
        {
            "parameters": parameter_entry(values),
            "epochs": training.epochs,
            "dynamics": prediction.kind,
            "growth_rule": f"final strength >= {GROWTH_FRACTION} x the strongest pathway's",
            "final_loss": float(losses[-1] / losses[0]),
            "pathways": pathways,
            "grow": [p["name"] for p in pathways if p["grows"]],
            "stay": [p["name"] for p in pathways if not p["grows"]],
        }
    )
