"""Gated graphs (THEORY.md section 3): nodes and edges gated per datapoint, layers shared by paths.

A network in a spec is either a set of modules (``[[network.pathway]]``, private chains) or a
graph (``[[network.node]]`` and ``[[network.edge]]``). Both are read into :class:`Graph`-aware
:class:`~derive.spec.Network` objects: a graph whose every edge lies on exactly one path is a set
of private chains and becomes the same pathways the module form gives, so that both forms give
one derivation. A graph whose paths share edges keeps its :class:`Graph`; the neural race
reduction with shared edges (Eq. 6) and the gradient flow on its weights (Eq. 3) start from it.

Gates are per datapoint and take values in {0, 1}. A node or edge gives at most one of
``active`` (datapoint indices), ``gate`` (one 0 or 1 per datapoint) or ``when`` (a rule on the
data's labels: ``when = {domain = 2}`` is on where label ``domain`` is 2, a list allows several
values, and several labels must all match). Without one, it is always on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from .limits import MAX_EDGES, MAX_GATE_VALUES, MAX_HIDDEN_LAYERS, MAX_NODES, MAX_PATHS, MAX_UNITS

if TYPE_CHECKING:
    from .reader import Pathway

NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+\-.]*")
NODE_KEYS = {"name", "size", "inputs", "outputs", "active", "gate", "when"}
EDGE_KEYS = {"source", "target", "active", "gate", "when"}
GATE_KEYS = ("active", "gate", "when")


#: a gate rule: on where every named label takes one of its values
Rule = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True)
class Node:
    """A layer: ``size`` units, on at the datapoints ``active``.

    Input nodes hold the input features ``features``, output nodes the target features
    ``features``; hidden nodes hold none."""

    name: str
    size: int
    role: str  # "input", "hidden" or "output"
    features: tuple[int, ...]
    active: tuple[int, ...]
    when: Rule | None = None  # the gate as a rule on labels, when the spec gave one


@dataclass(frozen=True)
class Edge:
    """A weight matrix ``W_e`` of shape ``|target| x |source|``, on at the datapoints ``active``."""

    source: str
    target: str
    active: tuple[int, ...]
    when: Rule | None = None

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


def gate_at(active: tuple[int, ...], when: Rule | None, num_datapoints: int, labels: Mapping[str, Any]):
    """0/1 gate values at new datapoints described by ``labels`` (a column per label), for a node
    or edge whose gate was given over ``num_datapoints`` datapoints: its rule, or always on.
    ``None`` when the gate was a table that says nothing about other datapoints."""
    count = len(next(iter(labels.values()))) if labels else 0
    if when is not None:
        # sets: a rule may list many values, and is evaluated at every datapoint
        rule = [(labels[label], frozenset(values)) for label, values in when]
        return tuple(float(all(column[n] in values for column, values in rule)) for n in range(count))
    if len(active) == num_datapoints:
        return (1.0,) * count
    return None


@dataclass(frozen=True)
class Path:
    """A chain of edges from an input node to an output node; on where every gate on it is on."""

    edges: tuple[int, ...]  # positions in Graph.edges, from the input side
    nodes: tuple[str, ...]
    active: tuple[int, ...]

    @property
    def name(self) -> str:
        return "-".join(self.nodes)


@dataclass(frozen=True)
class Graph:
    """Nodes, edges (in a topological order of their sources) and the paths they make."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    paths: tuple[Path, ...]

    def node(self, name: str) -> Node:
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Node]:
        return {node.name: node for node in self.nodes}

    @cached_property
    def paths_through(self) -> tuple[tuple[int, ...], ...]:
        """``P(e)``: for every edge, the positions of the paths through it."""
        return tuple(tuple(p for p, path in enumerate(self.paths) if e in path.edges) for e in range(len(self.edges)))

    @property
    def shared_edges(self) -> tuple[int, ...]:
        """Edges on more than one path."""
        return tuple(e for e, through in enumerate(self.paths_through) if len(through) > 1)

    @property
    def private_chains(self) -> bool:
        """Every edge lies on exactly one path: the graph is a set of modules."""
        return not self.shared_edges

    @property
    def depth(self) -> int:
        return max(len(path.edges) for path in self.paths)


@lru_cache(maxsize=8)
def _everywhere(num_datapoints: int) -> tuple[int, ...]:
    """The gate of a node or edge that is always on: one tuple shared by all of them."""
    return tuple(range(num_datapoints))


def read_rule(raw: Mapping[str, Any]) -> Rule | None:
    """The ``when`` rule of a node or edge that :func:`read_gate` has accepted, as a tuple."""
    if "when" not in raw:
        return None
    return tuple(
        (label, tuple(wanted if isinstance(wanted, list) else [wanted])) for label, wanted in raw["when"].items()
    )


def read_gate(raw: Mapping[str, Any], num_datapoints: int, labels: Mapping[str, tuple[int, ...]], source, prefix):
    """The datapoints where a node or edge is on, from at most one of ``active``, ``gate``, ``when``."""
    given = [key for key in GATE_KEYS if key in raw]
    if len(given) > 1:
        raise SpecError(source, f"{prefix}.{given[1]}", f"give one of active, gate and when, not {' and '.join(given)}")
    if not given:
        return _everywhere(num_datapoints)
    key = f"{prefix}.{given[0]}"
    value = raw[given[0]]
    if given[0] == "active":
        return tuple(sorted(index_list(value, num_datapoints, source, key, "datapoint")))
    if given[0] == "gate":
        if not isinstance(value, list) or len(value) != num_datapoints:
            found = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
            raise SpecError(
                source, key, f"expected one gate value (0 or 1) per datapoint: {num_datapoints}, got {found}"
            )
        for n, entry in enumerate(value):
            if isinstance(entry, bool) or entry not in (0, 1):
                raise SpecError(source, f"{key}[{n}]", f"a gate is 0 or 1, got {entry!r}")
        on = tuple(n for n, entry in enumerate(value) if entry == 1)
    else:
        if not isinstance(value, Mapping) or not value:
            raise SpecError(source, key, "expected a table of label = value (or list of values)")
        for label, wanted in value.items():
            if label not in labels:
                known = ", ".join(sorted(labels)) or "none (give them in data.labels)"
                raise SpecError(source, f"{key}.{label}", f"unknown label (known: {known})")
            for choice in wanted if isinstance(wanted, list) else [wanted]:
                if isinstance(choice, bool) or not isinstance(choice, int):
                    raise SpecError(source, f"{key}.{label}", f"expected an integer label value, got {choice!r}")
        # the rule is evaluated where it is at new datapoints too: gate_at
        gates = gate_at((), read_rule(raw), num_datapoints, labels)
        on = tuple(n for n, g in enumerate(gates or ()) if g)
    if not on:
        raise SpecError(source, key, "off at every datapoint: nothing can flow through it")
    return on


def read_graph(
    entry: Mapping[str, Any],
    name: str,
    num_datapoints: int,
    num_inputs: int,
    num_outputs: int,
    labels: Mapping[str, tuple[int, ...]],
    source: str,
) -> Graph:
    """Validate ``[[network.node]]`` and ``[[network.edge]]`` of network ``name`` and enumerate its paths."""
    raw_nodes: list[Any] = entry.get("node") or []
    raw_edges: list[Any] = entry.get("edge") or []
    for key, raw, limit in (("node", raw_nodes, MAX_NODES), ("edge", raw_edges, MAX_EDGES)):
        if not isinstance(raw, list) or not raw:
            raise SpecError(source, f"network[{name}].{key}", f"a graph needs at least one [[network.{key}]]")
        if len(raw) > limit:
            raise SpecError(source, f"network[{name}].{key}", f"{len(raw)} {key}s; the limit is {limit}")
    check_gate_values(len(raw_nodes) + len(raw_edges), num_datapoints, f"network[{name}].edge", "nodes + edges", source)
    nodes: dict[str, Node] = {}
    for k, raw in enumerate(raw_nodes):
        prefix = f"network[{name}].node[{k}]"
        nodes_entry = _node(raw, prefix, num_datapoints, num_inputs, num_outputs, labels, source)
        if nodes_entry.name in nodes:
            raise SpecError(source, f"{prefix}.name", f"duplicate node name {nodes_entry.name!r}")
        nodes[nodes_entry.name] = nodes_entry
    edges: list[Edge] = []
    ends_seen: set[tuple[str, str]] = set()
    for k, raw in enumerate(raw_edges):
        prefix = f"network[{name}].edge[{k}]"
        if not isinstance(raw, Mapping):
            raise SpecError(source, prefix, f"expected a table, got {type(raw).__name__}")
        unknown = sorted(set(raw) - EDGE_KEYS)
        if unknown:
            raise SpecError(source, f"{prefix}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(EDGE_KEYS))})")
        ends = []
        for end in ("source", "target"):
            node_name = raw.get(end)
            if not isinstance(node_name, str):
                raise SpecError(source, f"{prefix}.{end}", "expected the name of a node")
            if node_name not in nodes:
                raise SpecError(
                    source, f"{prefix}.{end}", f"unknown node {node_name!r} (known: {', '.join(sorted(nodes))})"
                )
            ends.append(nodes[node_name])
        start, end_node = ends
        if start.role == "output":
            raise SpecError(source, f"{prefix}.source", f"{start.name!r} is an output node: it has no outgoing edges")
        if end_node.role == "input":
            raise SpecError(source, f"{prefix}.target", f"{end_node.name!r} is an input node: it has no incoming edges")
        edge = Edge(start.name, end_node.name, read_gate(raw, num_datapoints, labels, source, prefix), read_rule(raw))
        if (edge.source, edge.target) in ends_seen:
            raise SpecError(source, prefix, f"duplicate edge {edge.name}")
        ends_seen.add((edge.source, edge.target))
        edges.append(edge)
    order = _topological_order(nodes, edges, name, source)
    edges.sort(key=lambda e: (order[e.source], order[e.target]))
    paths = _paths(nodes, edges, order, num_datapoints, name, source)
    graph = Graph(nodes=tuple(nodes.values()), edges=tuple(edges), paths=paths)
    if graph.private_chains:
        # a set of modules: its chains in the order the spec lists their first hidden nodes, as the
        # module form lists its pathways (the walk above goes input node by input node)
        position = {node: k for k, node in enumerate(nodes)}
        chains = tuple(sorted(paths, key=lambda path: position[path.nodes[1]]))
        graph = Graph(nodes=graph.nodes, edges=graph.edges, paths=chains)
    return graph


def _node(raw, prefix, num_datapoints, num_inputs, num_outputs, labels, source) -> Node:
    if not isinstance(raw, Mapping):
        raise SpecError(source, prefix, f"expected a table, got {type(raw).__name__}")
    unknown = sorted(set(raw) - NODE_KEYS)
    if unknown:
        raise SpecError(source, f"{prefix}.{unknown[0]}", f"unknown key (allowed: {', '.join(sorted(NODE_KEYS))})")
    node_name = raw.get("name")
    if not isinstance(node_name, str) or not NODE_NAME.fullmatch(node_name):
        raise SpecError(source, f"{prefix}.name", "every node needs a name of letters, digits and _ + - .")
    if "inputs" in raw and "outputs" in raw:
        raise SpecError(source, f"{prefix}.outputs", "a node holds input features or target features, not both")
    role, features = "hidden", ()
    for key, bound, what, kind in (
        ("inputs", num_inputs, "input feature", "input"),
        ("outputs", num_outputs, "target feature", "output"),
    ):
        if key in raw:
            role = kind
            features = index_list(raw[key], bound, source, f"{prefix}.{key}", what)
    size = raw.get("size", len(features) if features else None)
    if size is None:
        raise SpecError(source, f"{prefix}.size", f"hidden node {node_name!r} needs a size (number of units)")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise SpecError(source, f"{prefix}.size", f"expected a positive number of units, got {size!r}")
    if size > MAX_UNITS:  # as a pathway's units
        raise SpecError(source, f"{prefix}.size", f"{size} is above the limit of {MAX_UNITS}")
    if features and size != len(features):
        raise SpecError(source, f"{prefix}.size", f"{size}, but the node holds {len(features)} features")
    return Node(node_name, size, role, features, read_gate(raw, num_datapoints, labels, source, prefix), read_rule(raw))


def index_list(value, bound, source, key, what):
    """A non-empty list of distinct integer indices below ``bound``, in the order given (for the
    module form's and the graph form's datapoint and feature lists alike)."""
    if not isinstance(value, list) or not value:
        raise SpecError(source, key, f"expected a non-empty list of {what} indices")
    indices = []
    seen = set()  # long lists (one entry per datapoint): a set, not a scan of the list
    for i, index in enumerate(value):
        if isinstance(index, bool) or not isinstance(index, int):
            raise SpecError(source, f"{key}[{i}]", f"expected an integer index, got {index!r}")
        if not 0 <= index < bound:
            raise SpecError(
                source, f"{key}[{i}]", f"index {index} out of range: there are {bound} {what}s (0..{bound - 1})"
            )
        if index in seen:
            raise SpecError(source, f"{key}[{i}]", f"index {index} repeated")
        seen.add(index)
        indices.append(index)
    return tuple(indices)


def _topological_order(nodes, edges, name, source) -> dict[str, int]:
    """Kahn's algorithm; a cycle is reported with the nodes on it."""
    successors: dict[str, list[str]] = {n: [] for n in nodes}
    indegree = dict.fromkeys(nodes, 0)
    for edge in edges:
        successors[edge.source].append(edge.target)
        indegree[edge.target] += 1
    ready = [n for n in nodes if indegree[n] == 0]
    order: dict[str, int] = {}
    while ready:
        current = ready.pop(0)
        order[current] = len(order)
        for following in successors[current]:
            indegree[following] -= 1
            if indegree[following] == 0:
                ready.append(following)
    if len(order) < len(nodes):
        cycle = _a_cycle({n: [s for s in successors[n] if s not in order] for n in nodes if n not in order})
        raise SpecError(source, f"network[{name}].edge", f"the edges form a cycle: {' -> '.join(cycle)}")
    return order


def _a_cycle(successors: dict[str, list[str]]) -> list[str]:
    # drop nodes downstream of the cycle (no successor left) until every node left has one
    while any(not following for following in successors.values()):
        done = {n for n, following in successors.items() if not following}
        successors = {
            n: [s for s in following if s not in done] for n, following in successors.items() if n not in done
        }
    start = next(iter(successors))
    walk = [start]
    while True:  # every node left has a successor left, so the walk repeats a node
        following = successors[walk[-1]][0]
        if following in walk:
            return walk[walk.index(following) :] + [following]
        walk.append(following)


def check_gate_values(count: int, num_datapoints: int, key: str, what: str, source: str) -> None:
    """Refuse a network whose ``count`` gates (``what``: pathways, or nodes, edges and paths) hold
    more than MAX_GATE_VALUES values, one per datapoint each."""
    if count * num_datapoints > MAX_GATE_VALUES:
        raise SpecError(
            source,
            key,
            f"({what}) x datapoints = {count} x {num_datapoints} gate values, above the limit of {MAX_GATE_VALUES:g}",
        )


def _paths(
    nodes: dict[str, Node], edges: list[Edge], order: dict[str, int], num_datapoints: int, name: str, source: str
) -> tuple[Path, ...]:
    """Every path from an input node to an output node, after the checks that need no walk: every
    node and edge lies on a path, no path has more than MAX_HIDDEN_LAYERS hidden nodes, and there
    are at most MAX_PATHS paths (counted, not walked: a graph of n diamonds has 2^n paths)."""
    outgoing: dict[str, list[int]] = {n: [] for n in nodes}
    incoming: dict[str, list[int]] = {n: [] for n in nodes}
    for e, edge in enumerate(edges):
        outgoing[edge.source].append(e)
        incoming[edge.target].append(e)
    forward = sorted(nodes, key=order.__getitem__)
    # a node is on a path when an input node reaches it and it reaches an output node
    reached = {n: nodes[n].role == "input" for n in nodes}
    for n in forward:
        reached[n] = reached[n] or any(reached[edges[e].source] for e in incoming[n])
    reaches = {n: nodes[n].role == "output" for n in nodes}
    for n in reversed(forward):
        reaches[n] = reaches[n] or any(reaches[edges[e].target] for e in outgoing[n])
    for node in nodes.values():
        if not (reached[node.name] and reaches[node.name]):
            problem = (
                "no path from an input node reaches it"
                if node.role == "output"
                else "it lies on no path from an input node to an output node"
            )
            raise SpecError(source, f"network[{name}].node[{node.name}]", problem)
    for edge in edges:  # both ends lie on paths, but maybe not through this edge
        if not (reached[edge.source] and reaches[edge.target]):
            raise SpecError(
                source, f"network[{name}].edge[{edge.name}]", "it lies on no path from an input to an output"
            )
    # the most hidden nodes on a path up to each node, in topological order: the first node past
    # the limit is named
    hidden_before: dict[str, int] = {}
    for n in forward:
        deepest = max((hidden_before[edges[e].source] for e in incoming[n]), default=0)
        hidden_before[n] = deepest + (nodes[n].role == "hidden")
        if hidden_before[n] > MAX_HIDDEN_LAYERS:
            raise SpecError(
                source,
                f"network[{name}].node[{n}]",
                f"a path reaches it through {hidden_before[n]} hidden nodes; the limit is {MAX_HIDDEN_LAYERS} "
                "hidden nodes on a path (as hidden_layers of a pathway)",
            )
    # paths from each node to the output nodes, counted up to one past the limit
    count: dict[str, int] = {}
    for n in reversed(forward):
        count[n] = min(MAX_PATHS + 1, int(nodes[n].role == "output") + sum(count[edges[e].target] for e in outgoing[n]))
    total = sum(count[n] for n in nodes if nodes[n].role == "input")
    if total > MAX_PATHS:
        raise SpecError(source, f"network[{name}].edge", f"more than {MAX_PATHS} paths; the limit is {MAX_PATHS}")
    check_gate_values(
        len(nodes) + len(edges) + total, num_datapoints, f"network[{name}].edge", "nodes + edges + paths", source
    )

    node_on = {n: frozenset(node.active) for n, node in nodes.items()}
    edge_on = [frozenset(edge.active) for edge in edges]
    found: list[Path] = []

    def walk(node: str, taken: tuple[int, ...], on: frozenset[int]):
        if nodes[node].role == "output":
            found.append(Path(taken, (*(edges[e].source for e in taken), node), tuple(sorted(on))))
            return
        for e in outgoing[node]:  # every edge leads on to an output node (checked above)
            target = edges[e].target
            walk(target, (*taken, e), on & edge_on[e] & node_on[target])

    for node in nodes.values():
        if node.role == "input":
            walk(node.name, (), node_on[node.name])
    return tuple(found)


def module_graph(pathways: tuple[Pathway, ...]) -> Graph:
    """The graph of private chains that a module form describes: one input node per distinct
    set of input features, one output node per distinct set of target features, one gated
    hidden node per layer of each pathway."""
    inputs: dict[tuple[int, ...], str] = {}
    outputs: dict[tuple[int, ...], str] = {}
    nodes: list[Node] = []
    everywhere = tuple(sorted({n for p in pathways for n in p.active}))
    for pathway in pathways:
        for features, table, role, stem in (
            (pathway.inputs, inputs, "input", "x"),
            (pathway.outputs, outputs, "output", "y"),
        ):
            if features not in table:
                table[features] = f"{stem}{len(table)}"
                nodes.append(Node(table[features], len(features), role, features, everywhere))
    edges: list[Edge] = []
    paths: list[Path] = []
    for pathway in pathways:
        # the first layer carries the pathway's name: chain_pathways names a chain after it
        layers = [pathway.name] + [f"{pathway.name}.{k}" for k in range(1, pathway.hidden_layers)]
        nodes.extend(Node(layer, pathway.units, "hidden", (), pathway.active) for layer in layers)
        chain = [inputs[pathway.inputs], *layers, outputs[pathway.outputs]]
        first = len(edges)
        edges.extend(Edge(a, b, everywhere) for a, b in zip(chain, chain[1:]))
        paths.append(Path(tuple(range(first, len(edges))), tuple(chain), pathway.active))
    return Graph(nodes=tuple(nodes), edges=tuple(edges), paths=tuple(paths))
