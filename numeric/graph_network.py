"""Gated networks on graphs (THEORY.md section 3): any depth, layers shared by many paths.

Node ``v`` holds ``h_v = g_v * sum_{e: t(e) = v} g_e W_e h_{s(e)}`` (Eq. 1); input nodes hold
their input features gated by ``g_v``, and the prediction of a target feature is the sum of the
output nodes that hold it. Training is full-batch gradient descent on
``L = 1/2 mean_n ||y_n - yhat_n||^2`` (``lax.scan`` over epochs, ``vmap`` over seeds), from
i.i.d. normal weights of standard deviation ``init_scale`` or from given weights.

:func:`path_flow` writes the gradient flow of Eq. 3 path by path, from the effective
correlations ``Sigma_yx(p)`` and ``Sigma_x(j, p)``; the tests hold it against automatic
differentiation and finite differences of the loss. :func:`graph_flow_losses` integrates the
exact gradient flow on the weights with diffrax, for any graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.errors import GdlnError
from gdln.derive.spec import Graph, gate_at

from .training import TrainingRun, descend, mean_squared_loss, seed_keys
from .types import ArrayLike, Float


@dataclass(frozen=True)
class GraphLayout:
    """Static structure of a gated graph, hashable for ``jax.jit``: nodes in a topological
    order, their sizes, roles, features and gates over datapoints; edges as (source, target)
    positions in that order, with their gates; paths as tuples of edge positions."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    roles: tuple[str, ...]
    features: tuple[tuple[int, ...], ...]
    node_gates: tuple[tuple[float, ...], ...]
    edges: tuple[tuple[int, int], ...]
    edge_gates: tuple[tuple[float, ...], ...]
    paths: tuple[tuple[int, ...], ...]
    path_gates: tuple[tuple[float, ...], ...]

    @property
    def shapes(self) -> tuple[tuple[int, int], ...]:
        """``(|t(e)|, |s(e)|)`` of every edge's weight matrix."""
        return tuple((self.sizes[t], self.sizes[s]) for s, t in self.edges)


def graph_layout(graph: Graph, num_datapoints: int, labels: Mapping[str, Sequence[int]] | None = None) -> GraphLayout:
    """The layout of ``graph`` over its task's ``num_datapoints`` datapoints, or over new
    datapoints described by ``labels`` (one column per label), gated by the spec's rules."""
    if labels is not None:
        return _layout_at(graph, num_datapoints, labels)
    names = [node.name for node in graph.nodes]
    incoming = {name: [e.source for e in graph.edges if e.target == name] for name in names}
    order: list[str] = []
    while len(order) < len(names):  # the spec reader has refused cycles
        order.extend(n for n in names if n not in order and all(s in order for s in incoming[n]))
    position = {name: k for k, name in enumerate(order)}
    nodes = [graph.node(name) for name in order]

    def gate(active):
        on = set(active)
        return tuple(float(n in on) for n in range(num_datapoints))

    return GraphLayout(
        names=tuple(order),
        sizes=tuple(node.size for node in nodes),
        roles=tuple(node.role for node in nodes),
        features=tuple(node.features for node in nodes),
        node_gates=tuple(gate(node.active) for node in nodes),
        edges=tuple((position[e.source], position[e.target]) for e in graph.edges),
        edge_gates=tuple(gate(e.active) for e in graph.edges),
        paths=tuple(path.edges for path in graph.paths),
        path_gates=tuple(gate(path.active) for path in graph.paths),
    )


def _layout_at(graph: Graph, num_datapoints: int, labels: Mapping[str, Sequence[int]]) -> GraphLayout:
    base = graph_layout(graph, num_datapoints)
    by_name = {node.name: node for node in graph.nodes}

    def at(item, what):
        gate = gate_at(item.active, item.when, num_datapoints, labels)
        if gate is None:
            raise GdlnError(
                f"{what}: its gate is a table over the spec's datapoints; give a rule (when) to use new ones"
            )
        return gate

    node_gates = tuple(at(by_name[name], f"node {name}") for name in base.names)
    edge_gates = tuple(at(edge, f"edge {edge.name}") for edge in graph.edges)
    count = len(next(iter(labels.values())))
    path_gates = []
    for path in graph.paths:
        gate = np.ones(count)
        for name in path.nodes:
            gate = gate * np.array(node_gates[base.names.index(name)])
        for e in path.edges:
            gate = gate * np.array(edge_gates[e])
        path_gates.append(tuple(float(g) for g in gate))
    return replace(base, node_gates=node_gates, edge_gates=edge_gates, path_gates=tuple(path_gates))


def graph_forward(weights: Sequence[jax.Array], inputs, layout: GraphLayout, num_outputs: int):
    """``yhat`` (datapoints x target features) of Eq. 1; ``weights`` in ``layout.edges`` order."""
    dtype = inputs.dtype
    hidden: list[jax.Array | None] = [None] * len(layout.names)
    for v, role in enumerate(layout.roles):
        gate = jnp.array(layout.node_gates[v], dtype=dtype)[:, None]
        if role == "input":
            hidden[v] = gate * inputs[:, jnp.array(layout.features[v])]
            continue
        total = jnp.zeros((inputs.shape[0], layout.sizes[v]), dtype=dtype)
        for e, (s, t) in enumerate(layout.edges):
            if t == v:
                source = hidden[s]
                assert source is not None  # nodes are in topological order
                total = total + jnp.array(layout.edge_gates[e], dtype=dtype)[:, None] * (source @ weights[e].T)
        hidden[v] = gate * total
    output = jnp.zeros((inputs.shape[0], num_outputs), dtype=dtype)
    for v, role in enumerate(layout.roles):
        if role == "output":
            output = output.at[:, jnp.array(layout.features[v])].add(hidden[v])
    return output


def graph_loss(weights, inputs, targets, layout: GraphLayout):
    """``L = 1/2 mean_n ||y_n - yhat_n||^2``."""
    return mean_squared_loss(graph_forward(weights, inputs, layout, targets.shape[1]), targets)


def _product(weights, edges: Sequence[int], size: int, dtype):
    """``W_{e_k} ... W_{e_1}`` for the edges in input-to-output order; the identity if none."""
    result = jnp.eye(size, dtype=dtype)
    for e in edges:
        result = weights[e] @ result
    return result


def path_flow(weights, inputs, targets, layout: GraphLayout) -> list[jax.Array]:
    """``tau dW_e/dt`` of Eq. 3, summed over the paths through each edge:

    ``sum_{p in P(e)} W_{tbar(p,e)}^T [Sigma_yx(p) - sum_j E_{t(p)}^T E_{t(j)} W_j Sigma_x(j, p)] W_{sbar(p,e)}^T``

    with ``Sigma_yx(p) = <g_p y_{t(p)} x_{s(p)}^T>`` and ``Sigma_x(j, p) = <g_j g_p x_{s(j)} x_{s(p)}^T>``;
    ``E_v`` selects the target features of output node ``v`` (``E_v^T E_v = I``)."""
    inputs = jnp.asarray(inputs)
    targets = jnp.asarray(targets)
    dtype = inputs.dtype
    count = inputs.shape[0]
    ends = []
    for path in layout.paths:
        first, last = layout.edges[path[0]][0], layout.edges[path[-1]][1]
        ends.append((first, last))
    gates = [jnp.array(g, dtype=dtype) for g in layout.path_gates]
    sources = [inputs[:, jnp.array(layout.features[s])] for s, _ in ends]
    maps = [_product(weights, path, layout.sizes[s], dtype) for path, (s, _) in zip(layout.paths, ends)]
    updates = [jnp.zeros_like(w) for w in weights]
    for p, path in enumerate(layout.paths):
        out_p = layout.features[ends[p][1]]
        sigma_yx = (gates[p][:, None] * targets[:, jnp.array(out_p)]).T @ sources[p] / count
        error = sigma_yx
        for j in range(len(layout.paths)):
            out_j = layout.features[ends[j][1]]
            overlap = np.array([[float(a == b) for b in out_j] for a in out_p])
            if not overlap.any():
                continue
            sigma_x = (gates[j] * gates[p])[:, None].T * sources[j].T @ sources[p] / count
            error = error - jnp.asarray(overlap, dtype=dtype) @ maps[j] @ sigma_x
        for k, e in enumerate(path):
            after = _product(weights, path[k + 1 :], layout.sizes[layout.edges[e][1]], dtype)
            before = _product(weights, path[:k], layout.sizes[ends[p][0]], dtype)
            updates[e] = updates[e] + after.T @ error @ before.T
    return updates


def init_graph_weights(key, layout: GraphLayout, init_scale: float) -> list[jax.Array]:
    """I.i.d. normal weights of standard deviation ``init_scale``, one key per edge."""
    keys = jax.random.split(key, len(layout.edges))
    return [init_scale * jax.random.normal(k, shape, dtype=jnp.float64) for k, shape in zip(keys, layout.shapes)]


@partial(jax.jit, static_argnames=("layout",))
def _initial_graph_weights(keys, layout, init_scale):
    return jax.vmap(lambda key: init_graph_weights(key, layout, init_scale))(keys)


def initial_graph_weights(layout: GraphLayout, init_scale: float, seeds: Sequence[int]) -> list[jax.Array]:
    """Initial weights per edge, stacked over seeds: what :func:`train_graph` starts from."""
    return _initial_graph_weights(seed_keys(seeds), layout, float(init_scale))


@partial(jax.jit, static_argnames=("layout", "epochs"))
def _descend_graph(initial, inputs, targets, layout, learning_rate, epochs):
    def one(weights):
        final, losses = descend(lambda w: graph_loss(w, inputs, targets, layout), weights, learning_rate, epochs)
        return losses, final

    return jax.vmap(one)(initial)


def train_graph(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    layout: GraphLayout,
    learning_rate: float,
    epochs: int,
    *,
    init_scale: float | None = None,
    seeds: Sequence[int] = (0,),
    initial: Sequence[ArrayLike] | None = None,
) -> TrainingRun:
    """Train the gated graph network once per seed (or per leading index of ``initial``)."""
    if initial is None:
        if init_scale is None:
            raise ValueError("give init_scale (random initial weights) or initial (weights per edge)")
        initial = initial_graph_weights(layout, init_scale, seeds)
    start = [jnp.asarray(w, jnp.float64) for w in initial]
    losses, final = _descend_graph(
        start,
        jnp.asarray(inputs, jnp.float64),
        jnp.asarray(targets, jnp.float64),
        layout,
        float(learning_rate),
        epochs,
    )
    return TrainingRun(losses, start, final)


def graph_flow_losses(
    weights: Sequence[jax.Array],
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    layout: GraphLayout,
    ts: Float[ArrayLike, " T"],
    learning_rate: float,
    *,
    rtol: float = 1e-8,
    atol: float = 1e-12,
) -> jax.Array:
    """The loss at epochs ``ts`` under the exact gradient flow ``tau dW_e/dt = -dL/dW_e`` on the
    graph's weights (``tau = 1/learning_rate``), from ``weights`` at ``ts[0]`` (Tsit5, x64)."""
    inputs = jnp.asarray(inputs, jnp.float64)
    targets = jnp.asarray(targets, jnp.float64)
    gradient = jax.grad(lambda w: graph_loss(w, inputs, targets, layout))

    def rhs(t, w, args):
        return [-learning_rate * g for g in gradient(w)]

    ts = jnp.asarray(ts, jnp.float64)
    import diffrax  # imported where it is used: a warm race never needs it

    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(rhs),
        diffrax.Tsit5(),
        t0=ts[0],
        t1=ts[-1],
        dt0=None,
        y0=[jnp.asarray(w, jnp.float64) for w in weights],
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=1_000_000,
    )
    return jax.vmap(lambda w: graph_loss(w, inputs, targets, layout))(solution.ys)
