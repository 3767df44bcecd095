"""The tests' independent references: formulas written again, apart from the library, so that a
test compares the library's answer with a second computation of it rather than with itself.
None of these is used by gdln; each is the textbook form of what the library computes another
way (in log space, on every pathway at once, through a spec reader)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from gdln.derive.modes import Mode
from gdln.derive.spec import Graph


def mode_half_time(s: float, d: float, a0: float, tau: float) -> float:
    """Epoch at which a lone depth-2 mode reaches half of its final strength ``s/d``: the closed
    form (THEORY Eq. 7) solved for ``a(t) = s/(2d)``, with ``a0`` itself (not its logarithm)."""
    return tau / (2 * s) * math.log(s / (d * a0) - 1)


def mode_crossing_time(s: float, d: float, log_a0: float, tau: float, strength: float) -> float:
    """The epoch at which a lone depth-2 mode reaches ``strength`` (between ``a0`` and ``s/d``):
    the logistic inverted, ``t = tau/(2 s) (log c - log(s/(d strength) - 1))`` with
    ``c = s/(d a0) - 1`` taken in log space, so that ``a0`` may lie below float range. At
    ``strength = s/(2d)`` this is :func:`mode_half_time`."""
    r = math.log(s / d) - log_a0
    log_c = r + math.log(-math.expm1(-r)) if r > 0 else math.log(-math.expm1(r))
    log_target = math.log(s / (d * strength) - 1) if r > 0 else math.log(1 - s / (d * strength))
    return tau / (2 * s) * (log_c - log_target)


def eigen_residual(sigma_x: sympy.Matrix, mode: Mode) -> sympy.Matrix:
    """``Sigma_x v - d v``: zero exactly when ``v`` diagonalises ``Sigma_x`` (Assumption 2.1.1)."""
    return (sigma_x * mode.v - mode.d * mode.v).applyfunc(sympy.expand)


def pattern_matches(active: tuple[int, ...], gates) -> np.ndarray:
    """``(units,)`` whether each unit's gate pattern ``gates`` ``(N, units)`` is exactly ``active``."""
    gates = np.asarray(gates, dtype=bool)
    wanted = np.zeros(gates.shape[0], dtype=bool)
    wanted[list(active)] = True
    return np.all(gates == wanted[:, None], axis=0)


def reduced_flow_gradients(flow, maps, sigma_yx, sigma_x) -> list:
    """Per pathway of a ``numeric.reduced_flow.ReducedFlow``, the gradient of the loss in its map
    ``W_p``, written pathway by pathway: ``G_p = Sigma_yx(p) - sum_j E_p^T E_j W_j Sigma_x(j, p)``
    (the flow computes all of them in one block product)."""
    count = len(flow.pathways)
    return [
        sigma_yx[p] - sum(flow.overlaps[p][j] @ maps[j] @ sigma_x[j][p] for j in range(count)) for p in range(count)
    ]


def graph_entry(name: str, graph: Graph, num_datapoints: int) -> dict[str, Any]:
    """The spec dictionary (``[[network]]`` with ``node`` and ``edge`` tables) of ``graph``;
    gates are written as ``active`` lists, and left out where always on."""

    def gated(table: dict[str, Any], active: tuple[int, ...]) -> dict[str, Any]:
        if len(active) < num_datapoints:
            table["active"] = list(active)
        return table

    nodes = []
    for node in graph.nodes:
        table: dict[str, Any] = {"name": node.name}
        if node.role == "hidden":
            table["size"] = node.size
        else:
            table["inputs" if node.role == "input" else "outputs"] = list(node.features)
        nodes.append(gated(table, node.active))
    edges = [gated({"source": e.source, "target": e.target}, e.active) for e in graph.edges]
    return {"name": name, "node": nodes, "edge": edges}
