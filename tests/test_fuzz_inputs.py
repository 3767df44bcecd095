"""Fuzzing the inputs added since tests/test_fuzz.py: graph-form networks and data files.

Generated cases, valid and broken, go through the command line in-process (``gdln.cli.main``),
with run_cli's rule: exit 0 with finite JSON, or exit 2 with one line on stderr; a traceback
fails the test, and each run has a time limit (SIGALRM), so a hang fails it too. Cases whose
outcome is known say so (refused, with a fragment of the message, or accepted) and are held to it.
Data files may hold pickled objects that write a marker file when unpickled: the marker must
never appear. A module network and its graph-form twin are refused or accepted alike.

The strategies are derandomized. The default tier runs a modest number of cases per strategy;
the slow tier (``-m slow``) runs more, and the cases at the size limits that take seconds.
"""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from gdln.derive.errors import SpecError
from gdln.derive.spec import limits, load_spec, task_from_dict

from .helpers import FUZZ, run_cli
from .spec_strategies import to_toml, valid_spec

#: cases per strategy (hypothesis's max_examples; per change where a strategy is run change by
#: change): the default tier, and the slow tier
DEFAULT_EXAMPLES = {"valid graphs": 20, "graph change": 4, "twins": 40, "data change": 4, "valid data": 20}
SLOW_EXAMPLES = {"valid graphs": 60, "graph change": 20, "twins": 150, "data change": 20}
#: refusals of valid-looking generated data that are about the numbers, not the form: random data
#: may give a pathway no correlation to learn
DATA_DEPENDENT = ("nothing to learn",)
#: the race of a graph whose paths share edges needs the Eq. 6 reduction, which holds for some
#: data only (derive reports where it fails; race cannot run without it)
SHARED_RACE_REFUSALS = ("the shared-edge reduction does not hold",)
#: a command run in a subprocess: its time limit, and its address space (the JAX runtime needs
#: about 2 GiB; a file read without end exceeds the rest at once)
SUBPROCESS_SECONDS = 120
MEMORY_LIMIT = 6 * 2**30


# --- running a case --------------------------------------------------------------------------


def write_spec(folder: Path, document: dict, name: str = "spec.toml") -> Path:
    path = folder / name
    path.write_text(to_toml(document), encoding="utf-8")
    return path


def derive_argv(path: Path, network: str = "g") -> list[str]:
    return ["derive", str(path), "--network", network, "--json"]


def load_argv(path: Path) -> list[str]:
    """A command that reads and checks the whole spec and then does almost nothing: for networks
    too large to derive in a test (a graph of 1000 paths), whose checks are what is tested."""
    return ["realizable", str(path), "--pattern", "0", "--json"]


def check_outcome(
    capsys, argv: list[str], expect: str, fragment: str = "", also: tuple[str, ...] = ()
) -> tuple[int, str]:
    """Run ``gdln argv`` (run_cli: one line and exit 2, or exit 0 and finite JSON, in time) and hold
    it to ``expect``: "refused" (with ``fragment`` in the line), "accepted" (but for the refusals
    DATA_DEPENDENT and ``also``), or "either"."""
    code, _, err = run_cli(capsys, argv)
    if expect == "refused":
        assert code == 2 and fragment in err, (fragment, err)
    elif expect == "accepted":
        assert code == 0 or any(reason in err for reason in DATA_DEPENDENT + also), err
    return code, err


# --- graph networks -----------------------------------------------------------------------------

NODE_SIZES = [1, 2, 3, 8]
BAD_NAMES = ["", "bad name", "\u00e9t\u00e9", "\u8282\u70b9", "a\nb", "-x", "x/y", "\u0394"]


def subset(draw, count: int) -> list[int]:
    """A non-empty list of distinct indices below ``count``, in drawn order."""
    return draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True))


@st.composite
def graph_task(draw) -> dict:
    """A small task (valid_spec's data and training) with a label per datapoint, ``domain``."""
    document = draw(valid_spec())
    data = document["data"]
    data["inputs"][0][0] = data["targets"][0][0] = 1  # neither every input nor every target is zero
    rows = len(data["inputs"])
    document["data"]["labels"] = {"domain": [draw(st.integers(0, 2)) for _ in range(rows)]}
    document["network"] = []
    return document


@st.composite
def graph_network(draw, document: dict, name: str = "g") -> dict:
    """A layered graph over ``document``'s data: one or two input and output nodes, one to three
    layers of one or two hidden nodes of one size, every node on a path by construction (each
    node has an edge from the layer before and one to the layer after), and extra forward edges
    that make paths share edges. Gates sit on first-layer nodes only, so no path is off at every
    datapoint; a gate is an ``active`` list, a ``gate`` table or a ``when`` rule on ``domain``."""
    data = document["data"]
    rows, width, outputs = len(data["inputs"]), len(data["inputs"][0]), len(data["targets"][0])
    domains = sorted(set(data["labels"]["domain"]))
    inputs = [{"name": f"x{k}", "inputs": subset(draw, width)} for k in range(draw(st.integers(1, 2)))]
    # output nodes hold disjoint target features: the shared-edge reduction needs them so
    features = draw(st.permutations(range(outputs)))
    cut = draw(st.integers(1, outputs))
    outs = [{"name": f"y{k}", "outputs": list(part)} for k, part in enumerate([features[:cut], features[cut:]]) if part]
    size = draw(st.sampled_from(NODE_SIZES))  # one size: a graph of private chains is a set of modules
    layers = [[f"h{l}_{k}" for k in range(draw(st.integers(1, 2)))] for l in range(draw(st.integers(1, 3)))]
    hidden = []
    for l, layer in enumerate(layers):
        for node in layer:
            entry: dict = {"name": node, "size": size}
            gate = draw(st.sampled_from(["none", "none", "active", "gate", "when"])) if l == 0 else "none"
            on = sorted(subset(draw, rows))
            if gate == "active":
                entry["active"] = on
            elif gate == "gate":
                entry["gate"] = [int(n in on) for n in range(rows)]
            elif gate == "when":
                entry["when"] = {"domain": draw(st.lists(st.sampled_from(domains), min_size=1, unique=True))}
            hidden.append(entry)
    levels = [[n["name"] for n in inputs], *layers, [n["name"] for n in outs]]
    edges: list[tuple[str, str]] = []

    def add(source: str, target: str) -> None:
        if (source, target) not in edges:
            edges.append((source, target))

    for l in range(1, len(levels)):
        for node in levels[l]:  # reached from the level before
            add(draw(st.sampled_from(levels[l - 1])), node)
        for node in levels[l - 1]:  # reaches the level after
            add(node, draw(st.sampled_from(levels[l])))
    for _ in range(draw(st.integers(0, 3))):  # forward edges, skipping levels or not
        low = draw(st.integers(0, len(levels) - 2))
        high = draw(st.integers(low + 1, len(levels) - 1))
        if not (low == 0 and high == len(levels) - 1):  # an input-to-output edge is no module
            add(draw(st.sampled_from(levels[low])), draw(st.sampled_from(levels[high])))
    return {
        "name": name,
        "node": inputs + hidden + outs,
        "edge": [{"source": s, "target": t} for s, t in edges],
    }


@st.composite
def valid_graph_spec(draw) -> dict:
    document = draw(graph_task())
    document["network"] = [draw(graph_network(document))]
    return document


def chain(name: str, hidden_layers: int, size: int = 2, width: int = 3) -> dict:
    """A private chain x -> h0 -> ... -> y with ``hidden_layers`` hidden nodes."""
    nodes = [{"name": "x", "inputs": list(range(width))}, {"name": "y", "outputs": [0]}]
    nodes += [{"name": f"h{k}", "size": size} for k in range(hidden_layers)]
    names = ["x"] + [f"h{k}" for k in range(hidden_layers)] + ["y"]
    return {"name": name, "node": nodes, "edge": [{"source": a, "target": b} for a, b in zip(names, names[1:])]}


def fan(name: str, hidden_nodes: int, width: int = 3) -> dict:
    """x -> h_k -> y for ``hidden_nodes`` parallel hidden nodes: that many private chains."""
    nodes = [{"name": "x", "inputs": list(range(width))}, {"name": "y", "outputs": [0]}]
    nodes += [{"name": f"h{k}", "size": 1} for k in range(hidden_nodes)]
    edges = [{"source": "x", "target": f"h{k}"} for k in range(hidden_nodes)]
    edges += [{"source": f"h{k}", "target": "y"} for k in range(hidden_nodes)]
    return {"name": name, "node": nodes, "edge": edges}


def layered(name: str, widths: list[int], width: int = 3) -> dict:
    """x -> layer 0 -> ... -> y with every node of a layer joined to every node of the next:
    the product of ``widths`` paths, sharing edges."""
    levels = [["x"]] + [[f"h{l}_{k}" for k in range(w)] for l, w in enumerate(widths)] + [["y"]]
    nodes = [{"name": "x", "inputs": list(range(width))}, {"name": "y", "outputs": [0]}]
    nodes += [{"name": n, "size": 1} for level in levels[1:-1] for n in level]
    edges = [{"source": a, "target": b} for low, high in zip(levels, levels[1:]) for a in low for b in high]
    return {"name": name, "node": nodes, "edge": edges}


def diamonds(name: str, count: int, reach_output: bool, width: int = 3) -> dict:
    """``count`` diamonds in a row (2^count routes): ending at the output node, or nowhere (beside
    one chain that makes the graph's input and output nodes valid)."""
    nodes = [{"name": "x", "inputs": list(range(width))}, {"name": "y", "outputs": [0]}, {"name": "h", "size": 1}]
    edges = [{"source": "x", "target": "h"}, {"source": "h", "target": "y"}]
    previous = "x"
    for k in range(count):
        for part in ("b", "c", "a"):
            nodes.append({"name": f"{part}{k}", "size": 1})
        edges += [{"source": previous, "target": f"b{k}"}, {"source": previous, "target": f"c{k}"}]
        edges += [{"source": f"b{k}", "target": f"a{k}"}, {"source": f"c{k}", "target": f"a{k}"}]
        previous = f"a{k}"
    if reach_output:
        edges.append({"source": previous, "target": "y"})
    return {"name": name, "node": nodes, "edge": edges}


MAX_UNITS, MAX_DEPTH = limits.MAX_UNITS, limits.MAX_HIDDEN_LAYERS

#: (size, expected outcome, fragment) for a hidden node's size, at and beyond the limit
SIZES = [
    (MAX_UNITS, "accepted", ""),
    (MAX_UNITS + 1, "refused", f"size: {MAX_UNITS + 1} is above the limit of {MAX_UNITS}"),
    (10**12, "refused", f"is above the limit of {MAX_UNITS}"),
    (2**63, "refused", f"is above the limit of {MAX_UNITS}"),
    (0, "refused", "expected a positive number of units"),
    (-3, "refused", "expected a positive number of units"),
    (True, "refused", "expected a positive number of units"),
    (1.5, "refused", "expected a positive number of units"),
    ("8", "refused", "expected a positive number of units"),
]


#: what broken_graph_spec changes; each is run as its own test, with its own examples (derandomized
#: draws from one list of changes would favour a few of them)
GRAPH_CHANGES = [
    "cycle",
    "unknown node",
    "duplicate node",
    "duplicate edge",
    "dangling edge",
    "size",
    "depth",
    "nodes",
    "edges",
    "paths",
    "labels",
    "gate",
    "name",
    "roles",
    "off path",
    "diamonds",
    "unknown key",
    "structure",
]
#: changes with more variants than the default number of examples covers
MORE_EXAMPLES = {"size": 12, "gate": 16, "name": 8, "roles": 8, "depth": 8}


@st.composite
def broken_graph_spec(draw, how: str) -> tuple[dict, Callable, str, str]:
    """A valid graph task with one thing changed: ``(document, the command's argv for a spec
    path, expected outcome, fragment of the error)``. Changes at a limit are expected to be
    accepted, one past it refused; a large graph is only read and checked (load_argv)."""
    document = draw(valid_graph_spec())
    graph = document["network"][0]
    nodes, edges = graph["node"], graph["edge"]
    hidden = [n for n in nodes if "size" in n]
    if how == "cycle":
        node = draw(st.sampled_from(hidden))["name"]
        following = [e["target"] for e in edges if e["source"] == node and e["target"].startswith("h")]
        back = draw(st.sampled_from(following)) if following else node  # a self-loop where no hidden follows
        edges.append({"source": back, "target": node})
        return document, derive_argv, "refused", "the edges form a cycle"
    if how == "unknown node":
        end = draw(st.sampled_from(["source", "target"]))
        draw(st.sampled_from(edges))[end] = draw(st.sampled_from(["nowhere", "X", "h9_9", ""]))
        return document, derive_argv, "refused", "unknown node"
    if how == "duplicate node":
        nodes.append(dict(draw(st.sampled_from(nodes))))
        return document, derive_argv, "refused", "duplicate node name"
    if how == "duplicate edge":
        edges.append(dict(draw(st.sampled_from(edges))))
        return document, derive_argv, "refused", "duplicate edge"
    if how == "dangling edge":
        edge = draw(st.sampled_from(edges))
        end = draw(st.sampled_from(["source", "target"]))
        if draw(st.booleans()):
            del edge[end]
        else:
            edge[end] = draw(st.sampled_from([3, True, ["x0"], {"name": "x0"}]))
        return document, derive_argv, "refused", f".{end}: expected the name of a node"
    if how == "size":
        size, expect, fragment = draw(st.sampled_from(SIZES))
        for node in hidden:  # every hidden node: a graph of private chains needs one size per chain
            node["size"] = size
        return document, load_argv, expect, fragment
    if how == "depth":
        depth = draw(st.sampled_from([1, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 150]))
        document["network"][0] = chain("g", depth, width=len(document["data"]["inputs"][0]))
        if depth <= MAX_DEPTH:
            return document, load_argv, "accepted", ""
        return document, load_argv, "refused", f"node[h{MAX_DEPTH}]: a path reaches it through"
    width = len(document["data"]["inputs"][0])
    if how == "nodes":
        count = draw(st.sampled_from([limits.MAX_NODES, limits.MAX_NODES + 1]))
        document["network"][0] = fan("g", count - 2, width)
        if count <= limits.MAX_NODES:
            return document, load_argv, "accepted", ""
        return document, load_argv, "refused", f"{count} nodes; the limit is {limits.MAX_NODES}"
    if how == "edges":
        # past the limit: refused by the count before anything else; at it, by what the edges are
        count = draw(st.sampled_from([limits.MAX_EDGES, limits.MAX_EDGES + 1]))
        edges[:] = [edges[k % len(edges)] for k in range(count)]
        if count <= limits.MAX_EDGES:
            return document, load_argv, "refused", "duplicate edge"
        return document, load_argv, "refused", f"{count} edges; the limit is {limits.MAX_EDGES}"
    if how == "paths":
        widths = draw(st.sampled_from([[10, 10, 10], [7, 11, 13], [2] * 40]))  # 1000, 1001, 2^40 paths
        document["network"][0] = layered("g", widths, width)
        if int(np.prod(widths)) <= limits.MAX_PATHS:
            return document, load_argv, "accepted", ""
        return document, load_argv, "refused", f"more than {limits.MAX_PATHS} paths"
    if how == "labels":
        count = draw(st.sampled_from([limits.MAX_LABELS, limits.MAX_LABELS + 1]))
        rows = len(document["data"]["inputs"])
        for k in range(count - 1):
            document["data"]["labels"][f"l{k}"] = [k % 3] * rows
        if count <= limits.MAX_LABELS:
            return document, load_argv, "accepted", ""
        return document, load_argv, "refused", f"data.labels: {count} labels per datapoint"
    if how == "gate":
        node = draw(st.sampled_from(hidden))
        for key in ("active", "gate", "when"):
            node.pop(key, None)
        rows = len(document["data"]["inputs"])
        key, value, fragment = draw(
            st.sampled_from(
                [
                    ("when", {"colour": 1}, "when.colour: unknown label"),
                    ("when", {"domain": 7}, "off at every datapoint"),
                    ("when", {"domain": "a"}, "expected an integer label value"),
                    ("when", {"domain": 1.5}, "expected an integer label value"),
                    ("when", {}, "expected a table of label = value"),
                    ("when", "domain", "expected a table of label = value"),
                    ("gate", [1] * (rows + 1), "expected one gate value"),
                    ("gate", [2] * rows, "a gate is 0 or 1"),
                    ("gate", [0] * rows, "off at every datapoint"),
                    ("active", [], "expected a non-empty list"),
                    ("active", [rows], "out of range"),
                    ("active", [0, 0], "repeated"),
                ]
            )
        )
        node[key] = value
        if draw(st.booleans()):  # the same gate on an edge instead of a node
            node.pop(key)
            target = draw(st.sampled_from(edges))
            target[key] = value
        return document, derive_argv, "refused", fragment
    if how == "name":
        node = draw(st.sampled_from(nodes))
        old, new = node["name"], draw(st.sampled_from(BAD_NAMES))
        node["name"] = new
        for edge in edges:
            for end in ("source", "target"):
                if edge[end] == old:
                    edge[end] = new
        return document, derive_argv, "refused", "every node needs a name of letters"
    if how == "roles":
        change = draw(st.sampled_from(["both", "into input", "out of output", "features", "input size"]))
        if change == "both":
            nodes[0]["outputs"] = [0]
            return document, derive_argv, "refused", "not both"
        if change == "into input":
            edges.append({"source": hidden[0]["name"], "target": nodes[0]["name"]})
            return document, derive_argv, "refused", "is an input node"
        if change == "out of output":
            edges.append({"source": nodes[-1]["name"], "target": hidden[0]["name"]})
            return document, derive_argv, "refused", "is an output node"
        if change == "features":
            nodes[0]["inputs"] = draw(st.sampled_from([[width], [-1], [0, 0], []]))
            return document, derive_argv, "refused", ".inputs"
        nodes[0]["size"] = len(nodes[0]["inputs"]) + 1
        return document, derive_argv, "refused", "features"
    if how == "off path":
        change = draw(st.sampled_from(["lonely", "dead end", "unreached output"]))
        if change == "lonely":
            nodes.append({"name": "lonely", "size": 2})
        elif change == "dead end":
            nodes.append({"name": "end", "size": 2})
            edges.append({"source": hidden[0]["name"], "target": "end"})
        else:
            nodes.append({"name": "z", "outputs": [0]})
        return document, derive_argv, "refused", "no path"
    if how == "diamonds":
        reach = draw(st.booleans())
        document["network"][0] = diamonds("g", draw(st.sampled_from([3, 40])), reach, width)
        if reach:
            return document, load_argv, "either", ""  # 8 paths: fine; 2^40: refused
        return document, load_argv, "refused", "no path from an input node"
    if how == "unknown key":
        draw(st.sampled_from([nodes, edges])).append({"name": "q", "source": "x0", "weight": 1})
        return document, derive_argv, "refused", "unknown key"
    change = draw(st.sampled_from(["no nodes", "no edges", "not a table", "pathway too"]))
    if change == "no nodes":
        graph["node"] = []
    elif change == "no edges":
        graph["edge"] = []
    elif change == "not a table":
        nodes.append(3)
    else:
        graph["pathway"] = [{}]
    return document, derive_argv, "refused", ""


@settings(max_examples=DEFAULT_EXAMPLES["valid graphs"], **FUZZ)
@given(document=valid_graph_spec())
def test_valid_graphs_derive(capsys, tmp_path_factory, document):
    path = write_spec(tmp_path_factory.mktemp("graph"), document)
    check_outcome(capsys, derive_argv(path), "accepted")


def run_broken_graphs(capsys, tmp_path_factory, how: str, examples: int) -> None:
    @settings(max_examples=examples, **FUZZ)
    @given(case=broken_graph_spec(how))
    def run(case):
        document, command, expect, fragment = case
        path = write_spec(tmp_path_factory.mktemp("graph"), document)
        check_outcome(capsys, command(path), expect, fragment)

    run()


@pytest.mark.parametrize("how", GRAPH_CHANGES)
def test_broken_graphs_end_in_their_one_line_error(capsys, tmp_path_factory, how):
    run_broken_graphs(capsys, tmp_path_factory, how, MORE_EXAMPLES.get(how, DEFAULT_EXAMPLES["graph change"]))


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES["valid graphs"], **FUZZ)
@given(document=valid_graph_spec(), command=st.sampled_from(["derive", "race"]))
def test_valid_graphs_derive_and_race_slow(capsys, tmp_path_factory, document, command):
    document["training"]["epochs"] = 200  # the shared-edge race steps through every epoch
    path = write_spec(tmp_path_factory.mktemp("graph"), document)
    argv = derive_argv(path) if command == "derive" else ["race", str(path), "--json"]
    check_outcome(capsys, argv, "accepted", also=SHARED_RACE_REFUSALS)


@pytest.mark.slow
@pytest.mark.parametrize("how", GRAPH_CHANGES)
def test_broken_graphs_end_in_their_one_line_error_slow(capsys, tmp_path_factory, how):
    run_broken_graphs(capsys, tmp_path_factory, how, SLOW_EXAMPLES["graph change"])


# --- the limits, one case each (the cases above draw around them) -------------------------------


def xor_graph_document(network: dict, rows: int = 4) -> dict:
    """XoR's data (``rows`` datapoints, repeated) with the graph network ``network``."""
    inputs = [[1, 1, 1], [1, -1, 0], [-1, 1, 0], [-1, -1, 1]]
    targets = [[1], [-1], [-1], [1]]
    return {
        "data": {"inputs": [inputs[n % 4] for n in range(rows)], "targets": [targets[n % 4] for n in range(rows)]},
        "network": [network],
    }


def one_line_error(capsys, argv: list[str]) -> str:
    """The error line of a refused command (run_cli has checked it is one line, exit status 2)."""
    code, _, err = run_cli(capsys, argv)
    assert code == 2, err
    return err.strip()


@pytest.mark.parametrize("command", ["derive", "race"])
def test_a_graph_node_above_the_units_limit_is_refused_in_one_line(capsys, tmp_path, command):
    """The issue's case: a hidden node of 10^12 units raced to t_half 0.004 epochs."""
    argv = {"derive": lambda p: derive_argv(p), "race": lambda p: ["race", str(p), "--json"]}[command]
    for size in (MAX_UNITS + 1, 10**12):
        network = chain("g", 1)
        network["node"][2]["size"] = size  # nodes x, y, then h0
        path = write_spec(tmp_path, xor_graph_document(network), f"size{size}.toml")
        err = one_line_error(capsys, argv(path))
        assert err == f"gdln: error: {path}: network[g].node[2].size: {size} is above the limit of {MAX_UNITS}"
    network = chain("g", 1, size=MAX_UNITS)
    path = write_spec(tmp_path, xor_graph_document(network), "at_limit.toml")
    assert run_cli(capsys, argv(path))[0] == 0


def test_a_path_deeper_than_the_depth_limit_is_refused_in_one_line(capsys, tmp_path):
    """The issue's case (a 150-layer chain of width 2), and a long path beside short ones: the
    limit is on every path, named at the first hidden node past it."""
    path = write_spec(tmp_path, xor_graph_document(chain("g", 150)), "deep.toml")
    err = one_line_error(capsys, load_argv(path))
    assert err.startswith(f"gdln: error: {path}: network[g].node[h{MAX_DEPTH}]: a path reaches it through")
    assert f"{MAX_DEPTH + 1} hidden nodes; the limit is {MAX_DEPTH}" in err
    network = chain("g", MAX_DEPTH + 1)
    network["edge"].append({"source": "x", "target": "h50"})  # a short cut: the long path is still there
    path = write_spec(tmp_path, xor_graph_document(network), "deep_and_short.toml")
    assert f"node[h{MAX_DEPTH}]: a path reaches it through {MAX_DEPTH + 1} hidden nodes" in one_line_error(
        capsys, load_argv(path)
    )
    path = write_spec(tmp_path, xor_graph_document(chain("g", MAX_DEPTH)), "at_limit.toml")
    assert run_cli(capsys, derive_argv(path))[0] == 0


def test_graph_counts_at_and_past_their_limits(capsys, tmp_path):
    cases = [  # (network, refused with, or None: accepted)
        (fan("g", limits.MAX_NODES - 2), None),
        (fan("g", limits.MAX_NODES - 1), f"network[g].node: {limits.MAX_NODES + 1} nodes; the limit is"),
        (layered("g", [10, 10, 10]), None),  # 1000 paths
        (layered("g", [7, 11, 13]), f"network[g].edge: more than {limits.MAX_PATHS} paths"),
        (layered("g", [2] * 60), f"network[g].edge: more than {limits.MAX_PATHS} paths"),  # 2^60: counted
        (diamonds("g", 60, reach_output=False), "network[g].node[b0]: it lies on no path"),  # was a hang
    ]
    many_edges = fan("g", 2)
    many_edges["edge"] = many_edges["edge"] * (limits.MAX_EDGES // 4 + 1)
    cases.append((many_edges, f"network[g].edge: {len(many_edges['edge'])} edges; the limit is {limits.MAX_EDGES}"))
    for k, (network, refused) in enumerate(cases):
        path = write_spec(tmp_path, xor_graph_document(network), f"case{k}.toml")
        if refused is None:
            assert run_cli(capsys, load_argv(path))[0] == 0
        else:
            assert refused in one_line_error(capsys, load_argv(path))


def test_a_graph_of_100_shared_paths_races_and_derives(capsys, tmp_path):
    """Two fully connected layers of ten one-unit nodes (100 paths sharing edges) ended after
    283 s in a RecursionError (issue 49): the race lambdified a loss of every pair of paths. It
    reads the reduction as arrays now; derive writes the system out, and refuses past its limit."""
    path = write_spec(tmp_path, xor_graph_document(layered("g", [10, 10])), "hundred.toml")
    code, out, err = run_cli(capsys, ["race", str(path), "--json"])  # within CPU_SECONDS_PER_RUN
    assert code == 0, err
    assert json.loads(out)["networks"][0]["paths"] == 100
    assert run_cli(capsys, derive_argv(path))[0] == 0
    path = write_spec(tmp_path, xor_graph_document(layered("g", [11, 10])), "past.toml")
    assert (
        f"network[g].edge: 110 paths; derive writes the shared-edge system of at most {limits.MAX_DERIVED_PATHS}"
        in (one_line_error(capsys, derive_argv(path)))
    )


@pytest.mark.slow
def test_a_graph_at_the_path_limit_races(capsys, tmp_path):
    """1000 paths (three layers of ten) hung (issue 49); measured 13 s on 2 busy cores."""
    path = write_spec(tmp_path, xor_graph_document(layered("g", [10, 10, 10])), "thousand.toml")
    code, out, err = run_cli(capsys, ["race", str(path), "--json"])
    assert code == 0, err
    assert json.loads(out)["networks"][0]["paths"] == limits.MAX_PATHS


def test_labels_per_datapoint_at_and_past_the_limit(capsys, tmp_path):
    for count in (limits.MAX_LABELS, limits.MAX_LABELS + 1):
        document = xor_graph_document(chain("g", 1))
        document["data"]["labels"] = {f"l{k}": [k, 0, 1, 0] for k in range(count - 1)}
        document["data"]["contexts"] = [1, 1, 2, 2]  # the label 'context': counted too
        path = write_spec(tmp_path, document, f"labels{count}.toml")
        if count <= limits.MAX_LABELS:
            assert run_cli(capsys, load_argv(path))[0] == 0
        else:
            assert f"data.labels: {count} labels per datapoint; the limit is" in one_line_error(capsys, load_argv(path))


def test_parameters_at_and_past_the_limit(capsys, tmp_path):
    """5000 unused parameters took a race 38 s, crossovers being solved in each."""
    for count in (limits.MAX_PARAMETERS, limits.MAX_PARAMETERS + 1):
        document = xor_graph_document(chain("g", 1))
        document["parameters"] = {f"p{k}": 1.0 for k in range(count)}
        path = write_spec(tmp_path, document, f"parameters{count}.toml")
        if count <= limits.MAX_PARAMETERS:
            assert run_cli(capsys, load_argv(path))[0] == 0
        else:
            assert f"parameters: {count} parameters; the limit is" in one_line_error(capsys, load_argv(path))


def test_gate_values_past_the_limit_are_refused_before_the_gates_are_read(capsys, tmp_path):
    """Module form: pathways x datapoints; graph form: (nodes + edges + paths) x datapoints."""
    rows = limits.MAX_GATE_VALUES // 1000 + 1  # with 1000 pathways, or 1000 edges and a few nodes
    module = {"name": "m", "pathway": [{}] * 1000}
    path = write_spec(tmp_path, xor_graph_document(module, rows), "module.toml")
    assert "network[m].pathway: (pathways) x datapoints = 1000 x" in one_line_error(capsys, load_argv(path))
    graph = fan("g", 2)
    graph["edge"] = graph["edge"] * 250  # 1000 edges: refused before they are read (or found duplicates)
    path = write_spec(tmp_path, xor_graph_document(graph, rows), "graph.toml")
    assert "network[g].edge: (nodes + edges) x datapoints = 1004 x" in one_line_error(capsys, load_argv(path))


def test_training_a_graph_is_held_to_the_product_limits_of_a_module_network(capsys, tmp_path):
    """seeds x weights: a module network and its graph twin are refused alike by simulate; a graph
    whose paths share edges is counted by its edges and refused by verify and simulate, before
    anything is derived or trained."""
    units = 4000  # two hidden layers: 4000 x 4000 weights between them, above 10^7 with 1 seed
    module = {"name": "m", "pathway": [{"name": "p", "hidden_layers": 2, "units": units}]}
    twin = graph_twin(module, 3, 1, 128)
    refused = f"training: seeds x weights = {units * units + 4 * units:.3g}, above the limit of"
    for k, network in enumerate([module, twin]):
        path = write_spec(tmp_path, xor_graph_document(network), f"chain{k}.toml")
        argv = ["simulate", str(path), "--model", "m", "--seeds", "1", "--epochs", "10", "--json"]
        assert refused in one_line_error(capsys, argv)
    shared = layered("g", [2, 2])  # x -> 2 -> 2 -> y, four paths sharing edges
    for node in shared["node"]:
        if "size" in node:
            node["size"] = units
    weights = 2 * 3 * units + 4 * units * units + 2 * units  # one matrix per edge
    path = write_spec(tmp_path, xor_graph_document(shared), "shared.toml")
    for command in (["verify", str(path)], ["simulate", str(path), "--model", "g"]):
        err = one_line_error(capsys, [*command, "--seeds", "1", "--epochs", "10", "--json"])
        assert f"training: seeds x weights = {weights:.3g}, above the limit of" in err


# --- a module network and its graph-form twin -------------------------------------------------


def graph_twin(module: dict, width: int, outputs: int, hidden_units: int) -> dict:
    """The graph form of the module network ``module`` as a spec writes it, built from the raw
    entries (so a broken module gives a broken twin): one input node per distinct input list, one
    output node per distinct output list, a chain of hidden nodes per pathway named as
    :func:`derive.spec.graph.module_graph` names them, gated where the pathway is."""
    pathways = module["pathway"]
    default_units = max(1, hidden_units // len(pathways))
    inputs: dict[tuple, str] = {}
    outs: dict[tuple, str] = {}
    nodes: list[dict] = []
    edges: list[dict] = []
    for pathway in pathways:
        ends = []
        for key, table, stem, count in (("inputs", inputs, "x", width), ("outputs", outs, "y", outputs)):
            features = tuple(pathway.get(key, range(count)))
            if features not in table:
                table[features] = f"{stem}{len(table)}"
                nodes.append({"name": table[features], key: list(features)})
            ends.append(table[features])
        layers = max(0, pathway.get("hidden_layers", 1))
        names = [pathway["name"]] + [f"{pathway['name']}.{k}" for k in range(1, layers)]
        for name in names[:layers]:
            node = {"name": name, "size": pathway.get("units", default_units)}
            if "active" in pathway:
                node["active"] = pathway["active"]
            nodes.append(node)
        chain_names = [ends[0], *names[:layers], ends[1]]
        edges += [{"source": a, "target": b} for a, b in zip(chain_names, chain_names[1:])]
    return {"name": module["name"], "node": nodes, "edge": edges}


#: one change that makes a pathway invalid: (key, value, or a function of (rows, width, outputs))
PATHWAY_BREAKS = [
    ("active", lambda rows, width, outputs: []),
    ("active", lambda rows, width, outputs: [rows]),
    ("active", lambda rows, width, outputs: [0, 0]),
    ("inputs", lambda rows, width, outputs: []),
    ("inputs", lambda rows, width, outputs: [width]),
    ("outputs", lambda rows, width, outputs: [outputs]),
    ("hidden_layers", lambda rows, width, outputs: 0),
    ("hidden_layers", lambda rows, width, outputs: MAX_DEPTH + 1),
    ("units", lambda rows, width, outputs: 0),
    ("units", lambda rows, width, outputs: MAX_UNITS + 1),
]


@st.composite
def module_and_twin(draw) -> tuple[dict, dict]:
    """A task with one module network of one to three pathways, at times at a limit (hidden
    layers, units), and in half the cases with one pathway broken (past a limit, or a bad gate or
    feature list); and the same task with the network's twin in graph form."""
    document = draw(valid_spec())
    data = document["data"]
    data["inputs"][0][0] = data["targets"][0][0] = 1
    rows, width, outputs = len(data["inputs"]), len(data["inputs"][0]), len(data["targets"][0])
    pathways = []
    for j in range(draw(st.integers(1, 3))):
        pathway: dict = {"name": f"p{j}"}
        if draw(st.booleans()):
            active = sorted(subset(draw, rows))
            pathway["active"] = active[::-1] if draw(st.booleans()) else active  # the order given is kept
        for key, count in (("inputs", width), ("outputs", outputs)):
            if draw(st.booleans()):
                pathway[key] = subset(draw, count)
        pathway["hidden_layers"] = draw(st.sampled_from([1, 1, 2, 3, MAX_DEPTH]))
        if draw(st.booleans()):
            pathway["units"] = draw(st.sampled_from([1, 4, 8, MAX_UNITS]))
        pathways.append(pathway)
    if draw(st.booleans()):
        key, value = draw(st.sampled_from(PATHWAY_BREAKS))
        draw(st.sampled_from(pathways))[key] = value(rows, width, outputs)
    module = {"name": "m", "pathway": pathways}
    twin = graph_twin(module, width, outputs, document["training"]["hidden_units"])
    graph_document = copy.deepcopy(document)
    document["network"], graph_document["network"] = [module], [twin]
    return document, graph_document


def read(document: dict):
    """The task, or the SpecError that refuses it."""
    try:
        return task_from_dict(document, source="spec.toml")
    except SpecError as error:
        return error


def check_twins(capsys, tmp_path_factory, case) -> None:
    module_document, graph_document = case
    module_task, graph_task = read(module_document), read(graph_document)
    if isinstance(module_task, SpecError):
        event("both refused")  # how the cases fall, in --hypothesis-show-statistics
        assert isinstance(graph_task, SpecError), (str(module_task), "the graph form is accepted")
        return
    if isinstance(graph_task, SpecError):
        # the one way a module network within its limits may be refused as a graph: its twin
        # has more nodes or edges than a graph may have (1000 pathways make 1002 nodes)
        twin = graph_document["network"][0]
        assert len(twin["node"]) > limits.MAX_NODES or len(twin["edge"]) > limits.MAX_EDGES, str(graph_task)
        return
    event("both accepted")
    assert module_task.networks[0].pathways == graph_task.networks[0].pathways
    if all(p.hidden_layers <= 3 for p in module_task.networks[0].pathways):
        # and the command line gives the same derivation, word for word
        folder = tmp_path_factory.mktemp("twins")
        module_path, graph_path = write_spec(folder, module_document, "m.toml"), write_spec(folder, graph_document)
        module_run, graph_run = (
            run_cli(capsys, derive_argv(module_path, "m")),
            run_cli(capsys, derive_argv(graph_path, "m")),
        )
        assert module_run[0] == graph_run[0] == 0
        assert json.loads(module_run[1]) == json.loads(graph_run[1])
        event("both derived alike")


@settings(max_examples=DEFAULT_EXAMPLES["twins"], **FUZZ)
@given(case=module_and_twin())
def test_a_module_network_and_its_graph_twin_are_refused_or_accepted_alike(capsys, tmp_path_factory, case):
    check_twins(capsys, tmp_path_factory, case)


@pytest.mark.slow
@settings(max_examples=SLOW_EXAMPLES["twins"], **FUZZ)
@given(case=module_and_twin())
def test_a_module_network_and_its_graph_twin_are_refused_or_accepted_alike_slow(capsys, tmp_path_factory, case):
    check_twins(capsys, tmp_path_factory, case)


@pytest.mark.parametrize("count", [limits.MAX_PATHWAYS, limits.MAX_PATHWAYS + 1])
def test_twins_at_the_pathway_limit(count):
    """1000 pathways are accepted, and their twin refused by the graph's node count (1002 nodes);
    1001 pathways are refused in both forms."""
    document = xor_graph_document({"name": "m", "pathway": [{"name": f"p{j}", "units": 1} for j in range(count)]})
    twin = copy.deepcopy(document)
    twin["network"] = [graph_twin(document["network"][0], 3, 1, 128)]
    module_task, graph_task = read(document), read(twin)
    assert isinstance(graph_task, SpecError)
    assert f"{count + 2} nodes; the limit is {limits.MAX_NODES}" in str(graph_task)
    if count <= limits.MAX_PATHWAYS:
        assert not isinstance(module_task, SpecError)
    else:
        assert f"{count} pathways; the limit is {limits.MAX_PATHWAYS}" in str(module_task)


# --- data files ----------------------------------------------------------------------------------


class Unpickled:
    """An object whose unpickling creates the file ``marker`` (pickle calls ``open(marker, "w")``):
    a data file holding it must be refused, or read around it, without unpickling it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def data_spec(folder: Path, file_name: str) -> Path:
    """A spec whose data is ``file_name`` (beside it) and whose network is one pathway on all data."""
    return write_spec(folder, {"data": {"file": file_name}, "network": [{"name": "n0", "pathway": [{}]}]})


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)  # object arrays too: the cases that must be refused
    return buffer.getvalue()


def zip_bytes(members: dict[str, bytes], compressed: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def npy_header_only(shape: tuple[int, ...], dtype: str = "<f8", data: bytes = b"") -> bytes:
    """A .npy member that claims ``shape`` and holds ``data``: a small compressed member can claim
    a huge array (a zip bomb), refused from its header before anything expands."""
    buffer = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + data


#: entries of data files: small integers and halves (exact derivations stay quick), decimals
DATA_VALUES = st.sampled_from([0, 1, -1, 2, -2, 0.5, -0.5, 1.5, 0.25, 3, 0.1, 2.75])
NPZ_DTYPES = ["float64", "float32", "float16", "int64", "int32", "int8", "uint8"]


@st.composite
def data_arrays(draw) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets: 2 to 5 datapoints, 1 to 3 input and 1 to 2 target features, the first
    entries 1 (neither all inputs nor all targets zero)."""
    rows, width, outputs = draw(st.integers(2, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    inputs = np.array([[draw(DATA_VALUES) for _ in range(width)] for _ in range(rows)], dtype=float)
    targets = np.array([[draw(DATA_VALUES) for _ in range(outputs)] for _ in range(rows)], dtype=float)
    inputs[0, 0] = targets[0, 0] = 1
    return inputs, targets


def as_dtype(array: np.ndarray, dtype: str) -> np.ndarray:
    """``array`` in ``dtype``, integer types taking the values' integer parts."""
    return (array if dtype.startswith("float") else np.trunc(array)).astype(dtype)


NPZ_CHANGES = [
    "valid",
    "pickled extra member",
    "object array",
    "shape",
    "rows",
    "non-finite",
    "magnitude",
    "dtype",
    "missing",
    "member without .npy",
    "corrupted",
    "not an archive",
    "claims a huge array",
    "past the entry limit",
    "npy version",
]


@st.composite
def npz_case(draw, how: str) -> tuple[Callable[[Path], bytes], str, str]:
    """``(the file's bytes as a function of the marker path, expected outcome, fragment)``."""
    inputs, targets = draw(data_arrays())
    dtype = draw(st.sampled_from(NPZ_DTYPES))
    compressed = draw(st.booleans())
    members = {"inputs.npy": npy_bytes(as_dtype(inputs, dtype)), "targets.npy": npy_bytes(as_dtype(targets, dtype))}
    key = draw(st.sampled_from(["inputs", "targets"]))
    member = f"{key}.npy"
    array = inputs if key == "inputs" else targets

    def archive(changed: dict[str, bytes]) -> Callable[[Path], bytes]:
        return lambda marker: zip_bytes({**members, **changed}, compressed)

    if how == "valid":
        if dtype.startswith("int") or dtype == "uint8":  # integer parts of 0.5 are 0: keep the first entries 1
            inputs, targets = np.trunc(inputs), np.trunc(targets)
        return archive({}), "accepted", ""
    if how == "pickled extra member":  # never read: only inputs and targets are
        return (
            lambda marker: zip_bytes(
                {**members, "payload.npy": npy_bytes(np.array([Unpickled(marker)], dtype=object))}, compressed
            ),
            "accepted",
            "",
        )
    if how == "object array":
        shape = draw(st.sampled_from([(1, 1), array.shape, (3,)]))
        return (
            lambda marker: zip_bytes(
                {**members, member: npy_bytes(np.full(shape, Unpickled(marker), dtype=object))}, compressed
            ),
            "refused",
            f"{key}: cannot be read without unpickling",
        )
    if how == "shape":
        changed = draw(st.sampled_from([array[0], array[None], np.float64(1.0), array[:0], array[:, :0]]))
        return archive({member: npy_bytes(np.asarray(changed))}), "refused", "expected a non-empty 2-d array"
    if how == "rows":
        return archive({"targets.npy": npy_bytes(np.vstack([targets, targets[:1]]))}), "refused", "rows"
    if how == "non-finite":
        bad = array.astype(draw(st.sampled_from(["float64", "float32", "float16"])))
        r, c = draw(st.integers(0, bad.shape[0] - 1)), draw(st.integers(0, bad.shape[1] - 1))
        bad[r, c] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return archive({member: npy_bytes(bad)}), "refused", f"{key}[{r}][{c}]: non-finite number"
    if how == "magnitude":
        bad = array.copy()
        bad[0, 0] = draw(st.sampled_from([1e-40, -1e40, 1e300]))
        return archive({member: npy_bytes(bad)}), "refused", "outside the range"
    if how == "dtype":
        changed = draw(
            st.sampled_from(
                [
                    array.astype(complex),
                    array.astype(str),
                    array.astype(np.longdouble),
                    array.astype("datetime64[s]"),
                    np.zeros(array.shape, dtype=[("a", "<f8")]),
                ]
            )
        )
        return archive({member: npy_bytes(changed)}), "refused", key
    if how == "missing":
        gone = {name: data for name, data in members.items() if name != member}
        return lambda marker: zip_bytes(gone, compressed), "refused", f"{key}: missing array"
    if how == "member without .npy":
        renamed = {(key if name == member else name): data for name, data in members.items()}
        return lambda marker: zip_bytes(renamed, compressed), "refused", f"member {key!r} is not a .npy array"
    if how == "corrupted":
        whole = zip_bytes(members, compressed)
        if draw(st.booleans()):
            cut = draw(st.integers(0, len(whole) - 1))
            return lambda marker: whole[:cut], "refused", ""
        position = draw(st.integers(0, len(whole) - 1))
        flipped = whole[:position] + bytes([whole[position] ^ draw(st.integers(1, 255))]) + whole[position + 1 :]
        return lambda marker: flipped, "either", ""  # a flipped data byte may still be a number
    if how == "not an archive":
        kind = draw(st.sampled_from(["npy", "pickle", "empty", "text"]))
        if kind == "npy":
            return lambda marker: npy_bytes(inputs), "refused", "not an .npz archive (a single .npy array?)"
        if kind == "pickle":
            return lambda marker: pickle.dumps(Unpickled(marker)), "refused", "not a readable .npz archive"
        return lambda marker: b"" if kind == "empty" else b"inputs,targets\n1,2\n", "refused", "not a readable"
    if how == "claims a huge array":
        shape = draw(st.sampled_from([(10**9, 1), (2**40, 2**20), (limits.MAX_DATA_ENTRIES + 1, 1)]))
        entries = shape[0] * shape[1]
        return (
            archive({member: npy_header_only(shape, data=b"\0" * 4096)}),
            "refused",
            f"{key}: {shape[0]} x {shape[1]} = {entries} entries; the limit is {limits.MAX_DATA_ENTRIES}",
        )
    if how == "past the entry limit":  # real data, one entry too many: refused from the header
        big = np.ones((limits.MAX_DATA_ENTRIES + 1, 1))
        return archive({member: npy_bytes(big)}), "refused", f"entries; the limit is {limits.MAX_DATA_ENTRIES}"
    assert how == "npy version"
    data = bytearray(npy_bytes(array))
    data[6:8] = bytes(draw(st.sampled_from([(9, 9), (0, 1), (255, 0)])))  # the version after the magic
    return archive({member: bytes(data)}), "refused", "version"


def check_data_file(capsys, folder: Path, file_name: str, contents: bytes, expect: str, fragment: str) -> int:
    (folder / file_name).write_bytes(contents)
    code, _ = check_outcome(capsys, derive_argv(data_spec(folder, file_name), "n0"), expect, fragment)
    return code


def run_npz_cases(capsys, tmp_path_factory, how: str, examples: int) -> None:
    @settings(max_examples=examples, **FUZZ)
    @given(case=npz_case(how))
    def run(case):
        contents, expect, fragment = case
        folder = tmp_path_factory.mktemp("npz")
        marker = folder / "unpickled"
        check_data_file(capsys, folder, "data.npz", contents(marker), expect, fragment)
        assert not marker.exists(), "a pickled object in the data file was unpickled"

    run()


@pytest.mark.parametrize("how", NPZ_CHANGES)
def test_npz_files_end_in_one_line_or_a_clean_result(capsys, tmp_path_factory, how):
    run_npz_cases(capsys, tmp_path_factory, how, DEFAULT_EXAMPLES["data change"])


@pytest.mark.slow
@pytest.mark.parametrize("how", NPZ_CHANGES)
def test_npz_files_end_in_one_line_or_a_clean_result_slow(capsys, tmp_path_factory, how):
    run_npz_cases(capsys, tmp_path_factory, how, SLOW_EXAMPLES["data change"])


def test_the_marker_appears_when_the_payload_is_unpickled(tmp_path):
    """The control for the cases above: loading the object array with pickles allowed does write
    the marker, so its absence there means gdln did not unpickle it."""
    marker = tmp_path / "unpickled"
    (tmp_path / "data.npz").write_bytes(zip_bytes({"inputs.npy": npy_bytes(np.array([Unpickled(marker)]))}))
    with np.load(tmp_path / "data.npz", allow_pickle=True) as archive:
        archive["inputs"]
    assert marker.exists()


@settings(max_examples=DEFAULT_EXAMPLES["valid data"], **FUZZ)
@given(arrays=data_arrays(), dtype=st.sampled_from(NPZ_DTYPES), compressed=st.booleans())
def test_valid_npz_files_give_their_numbers(tmp_path_factory, arrays, dtype, compressed):
    inputs, targets = (as_dtype(a, dtype) for a in arrays)
    folder = tmp_path_factory.mktemp("npz")
    members = {"inputs.npy": npy_bytes(inputs), "targets.npy": npy_bytes(targets)}
    (folder / "data.npz").write_bytes(zip_bytes(members, compressed))
    task = load_spec(data_spec(folder, "data.npz"))
    for matrix, array in ((task.inputs, inputs), (task.targets, targets)):
        assert matrix.shape == array.shape
        assert [float(v) for v in matrix] == array.astype(float).ravel().tolist()


# CSV


def cell_text(draw, value) -> str:
    """A number as a CSV cell: as an integer, a decimal or in exponent form, padded or quoted."""
    text = draw(st.sampled_from([repr(value), f"{value:.6e}", f"{value:g}"]))
    if float(value).is_integer() and draw(st.booleans()):
        text = str(int(value))
    text = draw(st.sampled_from(["", " ", "  "])) + text + draw(st.sampled_from(["", " "]))
    return f'"{text}"' if draw(st.booleans()) else text


@st.composite
def csv_table(draw) -> tuple[list[str], list[list[str]], np.ndarray, np.ndarray]:
    """A header (x and y columns in a drawn order) and rows of cell text, with the numbers meant."""
    inputs, targets = draw(data_arrays())
    columns = [f"x{k}" for k in range(inputs.shape[1])] + [f"y{k}" for k in range(targets.shape[1])]
    order = draw(st.permutations(range(len(columns))))
    values = np.hstack([inputs, targets])
    header = [columns[k] for k in order]
    rows = [[cell_text(draw, float(values[r, k])) for k in order] for r in range(values.shape[0])]
    # the file lists x columns in its own order: the task's columns follow the file
    x_order = [k for k in order if columns[k].startswith("x")]
    y_order = [k - inputs.shape[1] for k in order if columns[k].startswith("y")]
    return header, rows, inputs[:, x_order], targets[:, y_order]


def csv_bytes(draw, header: list[str], rows: list[list[str]]) -> bytes:
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [",".join(header)] + [",".join(row) for row in rows]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(1, len(lines))), "")  # a blank line is skipped
    text = newline.join(lines) + draw(st.sampled_from([newline, ""]))
    bom = "\ufeff" if draw(st.booleans()) else ""  # as spreadsheets write
    return (bom + text).encode("utf-8")


CSV_CHANGES = [
    "valid",
    "short row",
    "long row",
    "not a number",
    "non-finite",
    "huge number",
    "not UTF-8",
    "unclosed quote",
    "huge field",
    "NUL",
    "header",
    "empty",
    "past the entry limit",
]


@st.composite
def csv_case(draw, how: str) -> tuple[bytes, str, str]:
    header, rows, _, _ = draw(csv_table())
    r = draw(st.integers(0, len(rows) - 1))
    c = draw(st.integers(0, len(header) - 1))
    if how == "valid":
        return csv_bytes(draw, header, rows), "accepted", ""
    if how == "short row":
        rows[r] = rows[r][:-1] or ["1", "2"][: len(header) - 1]
        return csv_bytes(draw, header, rows), "refused", f"row {r + 1}: "
    if how == "long row":
        rows[r] = rows[r] + ["1"]
        return csv_bytes(draw, header, rows), "refused", f"row {r + 1}: {len(header) + 1} entries"
    if how == "not a number":
        rows[r][c] = draw(st.sampled_from(["abc", "", "  ", '"1,2"', "0x10", "--1", "1 2", "1e", "\u0661"]))
        if rows[r][c] == "\u0661":  # Arabic-Indic one: float() reads it, int() too; a number after all
            return csv_bytes(draw, header, rows), "accepted", ""
        return csv_bytes(draw, header, rows), "refused", f"row {r + 1}, column {header[c]}: not a number"
    if how == "non-finite":
        rows[r][c] = draw(st.sampled_from(["nan", "inf", "-Infinity", " NaN "]))
        return csv_bytes(draw, header, rows), "refused", "non-finite number"
    if how == "huge number":
        rows[r][c] = draw(st.sampled_from(["1e400", "-1e400", "9" * 400, "1" * 5000, "1e-400", "1e-35"]))
        return csv_bytes(draw, header, rows), "refused", ""
    if how == "not UTF-8":
        data = csv_bytes(draw, header, rows)
        position = draw(st.integers(0, len(data)))
        return (
            data[:position] + draw(st.sampled_from([b"\xff", b"\xe9", b"\xc3("])) + data[position:],
            "refused",
            "not UTF-8",
        )
    if how == "unclosed quote":
        rows[r][c] = '"' + rows[r][c].strip('"')
        return csv_bytes(draw, header, rows), "refused", ""
    if how == "huge field":
        rows[r][c] = '"' + "1" * draw(st.sampled_from([131_073, 300_000])) + '"'
        return csv_bytes(draw, header, rows), "refused", "malformed CSV: field larger than field limit"
    if how == "NUL":
        rows[r][c] = rows[r][c] + "\0"
        return csv_bytes(draw, header, rows), "refused", "not a number"
    if how == "header":
        change = draw(st.sampled_from(["no x", "no y", "other", "empty name"]))
        if change in ("no x", "no y"):
            header = [name for name in header if not name.startswith(change[-1])]
            rows = [row[: len(header)] for row in rows]
            return csv_bytes(draw, header, rows), "refused", "name input columns x... and target columns y..."
        header[c] = "z" if change == "other" else ""  # maybe the only x or y column: either message
        return csv_bytes(draw, header, rows), "refused", ": header: "
    if how == "empty":
        data = draw(st.sampled_from([b"", b"\n\n", b"\xef\xbb\xbf", ",".join(header).encode() + b"\n"]))
        return data, "refused", "expected a header row and at least one datapoint"
    assert how == "past the entry limit"  # stopped while the rows are read, before the numbers are
    body = "\n".join(["1"] * (limits.MAX_DATA_ENTRIES + 1))
    return f"x0\n{body}\n".replace("\n", ",1\n").replace("x0,1\n", "x0,y0\n", 1).encode(), "refused", "more than"


def run_csv_cases(capsys, tmp_path_factory, how: str, examples: int) -> None:
    @settings(max_examples=examples, **FUZZ)
    @given(case=csv_case(how))
    def run(case):
        contents, expect, fragment = case
        check_data_file(capsys, tmp_path_factory.mktemp("csv"), "data.csv", contents, expect, fragment)

    run()


@pytest.mark.parametrize("how", CSV_CHANGES)
def test_csv_files_end_in_one_line_or_a_clean_result(capsys, tmp_path_factory, how):
    run_csv_cases(capsys, tmp_path_factory, how, DEFAULT_EXAMPLES["data change"])


@pytest.mark.slow
@pytest.mark.parametrize("how", CSV_CHANGES)
def test_csv_files_end_in_one_line_or_a_clean_result_slow(capsys, tmp_path_factory, how):
    run_csv_cases(capsys, tmp_path_factory, how, SLOW_EXAMPLES["data change"])


@settings(max_examples=DEFAULT_EXAMPLES["valid data"], **FUZZ)
@given(data=st.data())
def test_valid_csv_files_give_their_numbers(tmp_path_factory, data):
    header, rows, inputs, targets = data.draw(csv_table())
    folder = tmp_path_factory.mktemp("csv")
    (folder / "data.csv").write_bytes(csv_bytes(data.draw, header, rows))
    task = load_spec(data_spec(folder, "data.csv"))
    for matrix, array in ((task.inputs, inputs), (task.targets, targets)):
        assert matrix.shape == array.shape
        assert [float(v) for v in matrix] == pytest.approx(array.ravel().tolist(), rel=1e-6)


# files that are not plain files


def test_data_files_that_are_not_regular_files_are_refused(capsys, tmp_path):
    """A folder, a device and a pipe are refused before they are opened: reading /dev/zero never
    ends, and opening a pipe waits for a writer (run_cli's time limit would fail the test)."""
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "null.csv").symlink_to(os.devnull)
    os.mkfifo(tmp_path / "pipe.csv")
    for name in ("folder.csv", "null.csv", "pipe.csv"):
        spec = write_spec(tmp_path, {"data": {"file": name}, "network": [{"name": "n0", "pathway": [{}]}]}, "s.toml")
        assert f"{name}: file: not a regular file" in one_line_error(capsys, derive_argv(spec, "n0"))
    missing = write_spec(tmp_path, {"data": {"file": "missing.npz"}}, "missing.toml")
    assert "missing.npz: file: cannot read: No such file or directory" in one_line_error(capsys, load_argv(missing))
    nul = write_spec(tmp_path, {"data": {"file": "a\0.csv"}}, "nul.toml")
    assert "file: cannot read" in one_line_error(capsys, load_argv(nul))


def test_a_symlink_to_a_data_file_elsewhere_is_read(capsys, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "xor.csv").write_text("x0,x1,x2,y0\n1,1,1,1\n1,-1,0,-1\n-1,1,0,-1\n-1,-1,1,1\n")
    (tmp_path / "data.CSV").symlink_to(elsewhere / "xor.csv")  # the suffix in capitals too
    assert run_cli(capsys, derive_argv(data_spec(tmp_path, "data.CSV"), "n0"))[0] == 0


def test_a_symlink_to_an_endless_device_is_refused_in_a_subprocess(tmp_path):
    """/dev/zero behind a .csv name, in a subprocess with a memory limit and a time limit: before
    the check, reading it filled memory until the process died."""
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    spec = data_spec(tmp_path, "zero.csv")

    # the child limits its own address space before it imports gdln (a preexec_fn would run
    # Python between fork and exec in this process, which JAX's threads make unsafe)
    child = (
        "import resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT})); "
        "from gdln.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", child, "derive", str(spec), "--network", "n0", "--json"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"gdln: error: {tmp_path / 'zero.csv'}: file: not a regular file (a folder, a device or a pipe)"
    ]


# at the entry limit: every entry goes through the exact reader (seconds), so the slow tier


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["npz", "csv"])
def test_data_files_at_the_entry_limit_are_read(capsys, tmp_path, kind):
    rows = limits.MAX_DATA_ENTRIES // 2
    inputs = np.tile([[1.0, -1.0], [0.5, 2.0]], (rows // 2, 1))
    targets = np.tile([[1.0, 0.0], [-1.0, 1.0]], (rows // 2, 1))
    if kind == "npz":
        np.savez(tmp_path / "data.npz", inputs=inputs, targets=targets)
    else:
        lines = ["x0,x1,y0,y1"] + [",".join(f"{v:g}" for v in row) for row in np.hstack([inputs, targets])]
        (tmp_path / "data.csv").write_text("\n".join(lines) + "\n")
    assert inputs.size == targets.size == limits.MAX_DATA_ENTRIES
    assert run_cli(capsys, load_argv(data_spec(tmp_path, f"data.{kind}")))[0] == 0
