"""Gated graphs: the graph form of a spec against the module form, bad graphs, and the gradient
flow of Eq. 3 on shared edges and deep paths against autodiff and finite differences."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gdln.cli import main
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import DerivationError
from gdln.derive.spec import load_spec, module_graph, task_from_dict
from gdln.numeric.graph_network import (
    graph_flow_losses,
    graph_forward,
    graph_layout,
    graph_loss,
    initial_graph_weights,
    path_flow,
    train_graph,
)
from gdln.numeric.training import gdln_forward, gdln_layout, init_gdln
from gdln.verify.race import race_report

from .helpers import ROOT, XOR_SPEC
from .references import graph_entry
from .spec_strategies import to_toml

#: agreement of the Eq. 3 flow with autodiff (both exact up to rounding in float64)
FLOW_RTOL = 1e-10
#: central finite differences with step FD_STEP: error O(step^2) relative to the gradient
FD_STEP = 1e-5
FD_RTOL = 1e-6


def _same_derivation(a: NetworkDerivation, b: NetworkDerivation) -> None:
    assert [p.pathway for p in a.pathways] == [p.pathway for p in b.pathways]
    for pa, pb in zip(a.pathways, b.pathways):
        assert pa.sigma_yx == pb.sigma_yx and pa.sigma_x == pb.sigma_x
        assert [m.s for m in pa.modes] == [m.s for m in pb.modes]
    assert a.coupling == b.coupling


def test_graph_form_of_xor_gives_the_module_derivation_and_race():
    modules, graphs = load_spec(XOR_SPEC), load_spec(ROOT / "examples" / "xor_graph.toml")
    for network in modules.networks:
        graph_network = graphs.network(network.name)
        assert graph_network.graph is not None and graph_network.graph.private_chains
        _same_derivation(NetworkDerivation(modules, network.name), NetworkDerivation(graphs, network.name))
    race_modules, race_graphs = race_report(modules, {}), race_report(graphs, {})
    assert race_modules["ranking"] == race_graphs["ranking"]
    assert [c["expr"] for c in race_modules["crossovers"]] == [c["expr"] for c in race_graphs["crossovers"]]


def _as_graphs(task_path):
    """The spec of ``task_path`` with every network rewritten as a graph of private chains."""
    import tomllib

    document = tomllib.loads(task_path.read_text())
    task = load_spec(task_path)
    document["network"] = [graph_entry(n.name, module_graph(n.pathways), task.num_datapoints) for n in task.networks]
    return task, task_from_dict(document, source="graph form")


@pytest.mark.slow
def test_graph_form_of_section4_gives_the_module_networks_and_derivation():
    """Every network of the graph form reads back as the module form's pathways over the same data,
    so derive and race (functions of data and pathways) agree; one network's effective datasets
    and modes are derived from both and compared (the couplings take about 100 s for all three;
    test_context_race runs the Section 4 race itself)."""
    modules, graphs = _as_graphs(ROOT / "examples" / "section4_context.toml")
    assert graphs.inputs == modules.inputs and graphs.targets == modules.targets
    for network in modules.networks:
        assert graphs.network(network.name).pathways == network.pathways
    module_form, graph_form = NetworkDerivation(modules, "common+1"), NetworkDerivation(graphs, "common+1")
    for pa, pb in zip(module_form.pathways, graph_form.pathways):
        assert pa.sigma_yx == pb.sigma_yx and pa.sigma_x == pb.sigma_x
        assert [m.s for m in pa.modes] == [m.s for m in pb.modes]


def test_graph_forward_equals_the_module_network():
    task = load_spec(ROOT / "examples" / "section4_context.toml")
    network = task.networks[-1]
    x = jnp.asarray(np.array(task.inputs, dtype=float))
    layout = gdln_layout(network, task.num_datapoints)
    params = init_gdln(jax.random.PRNGKey(3), layout, 0.3)
    graph = module_graph(network.pathways)
    glayout = graph_layout(graph, task.num_datapoints)
    # module_graph lays the edges out pathway by pathway, in chain order: the same matrices
    weights = [w for chain in params for w in chain]
    expected = gdln_forward(params, x, layout, task.num_outputs)
    np.testing.assert_allclose(graph_forward(weights, x, glayout, task.num_outputs), expected, rtol=1e-12)


SHARED = {
    "data": {
        "inputs": [[1, 0, 2], [0, 1, -1], [1, 1, 0], [2, -1, 1], [0, 0, 1]],
        "targets": [[1, 0], [0, 1], [1, 1], [-1, 2], [1, -1]],
        "labels": {"domain": [0, 0, 1, 1, 2]},
    },
    "network": [
        {
            "name": "shared",
            "node": [
                {"name": "x", "inputs": [0, 1, 2]},
                {"name": "z", "inputs": [0, 1]},
                {"name": "h1", "size": 4},
                {"name": "h2", "size": 3, "when": {"domain": [0, 1]}},
                {"name": "h3", "size": 2},
                {"name": "y0", "outputs": [0]},
                {"name": "y", "outputs": [0, 1], "gate": [1, 1, 0, 1, 1]},
            ],
            "edge": [
                {"source": "x", "target": "h1"},
                {"source": "z", "target": "h1", "active": [0, 2, 3]},
                {"source": "h1", "target": "h2"},
                {"source": "h2", "target": "h3"},
                {"source": "h1", "target": "h3"},
                {"source": "h3", "target": "y"},
                {"source": "h2", "target": "y0"},
            ],
        }
    ],
}


@pytest.fixture(scope="module")
def shared_task():
    return task_from_dict(SHARED, source="shared graph")


def test_shared_graph_paths_and_refusal_of_the_module_reduction(shared_task):
    network = shared_task.network("shared")
    graph = network.graph
    assert network.shared and graph.depth == 4  # x -> h1 -> h2 -> h3 -> y
    assert len(graph.paths) == 6
    h1_h2 = next(e for e, edge in enumerate(graph.edges) if edge.name == "h1->h2")
    assert len(graph.paths_through[h1_h2]) == 4
    with pytest.raises(DerivationError, match="x->h1 lies on 3 paths"):
        NetworkDerivation(shared_task, "shared")


@pytest.mark.slow
def test_eq3_flow_on_shared_edges_matches_autodiff_and_finite_differences(shared_task):
    layout = graph_layout(shared_task.network("shared").graph, shared_task.num_datapoints)
    x = jnp.asarray(np.array(shared_task.inputs, dtype=float))
    y = jnp.asarray(np.array(shared_task.targets, dtype=float))
    weights = [w[0] for w in initial_graph_weights(layout, 0.7, [5])]
    flow = path_flow(weights, x, y, layout)
    gradient = jax.grad(graph_loss)(weights, x, y, layout)
    for f, g in zip(flow, gradient):
        np.testing.assert_allclose(f, -g, rtol=FLOW_RTOL, atol=FLOW_RTOL * float(jnp.abs(g).max()))
    loss = jax.jit(graph_loss, static_argnames=("layout",))
    for e, w in enumerate(weights):
        for index in [(0, 0), (w.shape[0] - 1, w.shape[1] - 1)]:
            step = jnp.zeros_like(w).at[index].set(FD_STEP)
            plus = [v + step if k == e else v for k, v in enumerate(weights)]
            minus = [v - step if k == e else v for k, v in enumerate(weights)]
            difference = (loss(plus, x, y, layout=layout) - loss(minus, x, y, layout=layout)) / (2 * FD_STEP)
            assert float(-difference) == pytest.approx(float(flow[e][index]), rel=FD_RTOL, abs=1e-9)


@pytest.mark.slow
def test_training_a_shared_graph_follows_its_gradient_flow(shared_task):
    layout = graph_layout(shared_task.network("shared").graph, shared_task.num_datapoints)
    x = np.array(shared_task.inputs, dtype=float)
    y = np.array(shared_task.targets, dtype=float)
    run = train_graph(x, y, layout, 0.002, 3000, init_scale=0.3, seeds=[0, 1])
    assert run.losses.shape == (2, 3001)
    assert np.all(np.diff(np.asarray(run.losses), axis=1) <= 1e-12)  # small steps: descent
    first = [w[0] for w in run.initial]
    ts = np.array([0.0, 1000.0, 3000.0])
    flow = np.asarray(graph_flow_losses(first, x, y, layout, ts, 0.002))
    # one Euler step per epoch against the flow: O(eta) relative error over the run
    np.testing.assert_allclose(flow, np.asarray(run.losses[0])[ts.astype(int)], rtol=1e-2)


BAD = [
    ({"edge": [{"source": "h", "target": "h2"}, {"source": "h2", "target": "h"}]}, "cycle: h"),
    ({"edge": [{"source": "x", "target": "nowhere"}]}, "unknown node 'nowhere'"),
    ({"node": [{"name": "h", "size": 0}]}, "node[1].size: expected a positive number"),
    ({"node": [{"name": "h", "size": 2, "gate": [1, 0]}]}, "node[1].gate: expected one gate value"),
    ({"node": [{"name": "h", "size": 2, "when": {"colour": 1}}]}, "when.colour: unknown label"),
    ({"node": [{"name": "h", "size": 2, "active": [0], "gate": [1, 1, 1, 1]}]}, "give one of active, gate and when"),
    ({"extra_output": True}, "node[z]: no path from an input node reaches it"),
    ({"edge": [{"source": "y", "target": "h"}]}, "'y' is an output node"),
]


def _bad_graph(change):
    nodes = [{"name": "x", "inputs": [0, 1, 2]}, {"name": "h", "size": 2}, {"name": "y", "outputs": [0]}]
    edges = [{"source": "x", "target": "h"}, {"source": "h", "target": "y"}]
    if "node" in change:
        nodes[1] = change["node"][0]
    if "edge" in change:
        edges = edges + change["edge"]
        if change["edge"][0]["target"] == "h2":
            nodes.append({"name": "h2", "size": 2})
    if "extra_output" in change:
        nodes.append({"name": "z", "outputs": [0]})
    lines = ['title = "bad graph"', "[data]", "inputs = [[1, 1, 1], [1, -1, 0], [-1, 1, 0], [-1, -1, 1]]"]
    lines += ["targets = [[1], [-1], [-1], [1]]", "[[network]]", 'name = "g"']
    for node in nodes:
        lines.append("[[network.node]]")
        lines += [f"{k} = {_toml(v)}" for k, v in node.items()]
    for edge in edges:
        lines.append("[[network.edge]]")
        lines += [f"{k} = {_toml(v)}" for k, v in edge.items()]
    return "\n".join(lines) + "\n"


def _toml(value):
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value).replace("True", "true")


@pytest.mark.parametrize("change, message", BAD)
def test_bad_graphs_are_one_line_errors(tmp_path, capsys, change, message):
    spec = tmp_path / "bad.toml"
    spec.write_text(_bad_graph(change))
    assert main(["race", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(spec) in err and message in err, err


def test_derive_of_a_shared_graph_with_parameters_and_of_a_module_network_beside_it(tmp_path, capsys):
    """A shared graph's singular values are valued at the parameters in use (they are symbols in
    Delta), and a module network beside a shared graph derives without it: the graph has no module
    race, and no crossover with it. Both ended in an error before."""
    document = {
        "parameters": {"Delta": 2.0},
        "data": {"inputs": [[1], ["Delta"]], "targets": [[1], [1]]},
        "network": [
            {
                "name": "shared",  # two input nodes into one hidden node: h->y lies on both paths
                "node": [
                    {"name": "x0", "inputs": [0]},
                    {"name": "x1", "inputs": [0]},
                    {"name": "h", "size": 1},
                    {"name": "y", "outputs": [0]},
                ],
                "edge": [
                    {"source": "x0", "target": "h"},
                    {"source": "x1", "target": "h"},
                    {"source": "h", "target": "y"},
                ],
            },
            {"name": "m", "pathway": [{}]},
        ],
    }
    spec = tmp_path / "shared.toml"
    spec.write_text(to_toml(document))
    assert main(["derive", str(spec), "--network", "shared", "--json", "--set", "Delta=3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"] == {} and report["fixed"] == {"Delta": "3"}
    # each path sees Sigma_yx = (1 + Delta) / 2, at Delta = 3 (fixed by --set), not 2 (the spec)
    assert [path["values"] for path in report["singular_values"]] == [[pytest.approx(2.0)]] * 2
    assert main(["derive", str(spec), "--network", "m", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["crossovers"] == []


def test_derive_of_a_shared_graph_where_a_correlation_vanishes_at_the_parameters(tmp_path, capsys):
    """At Delta = 1 the path to y0 sees Sigma_yx = (1 - Delta)/3 = 0, and its singular value's
    expression is 0/0 there: null in the JSON, listed under non_finite (was a traceback)."""
    document = {
        "parameters": {"Delta": 1.0},
        "data": {"inputs": [[1], ["-Delta"], [0]], "targets": [[1, 0], [1, 0], [0, 0]]},
        "network": [
            {
                "name": "g",
                "node": [
                    {"name": "x", "inputs": [0]},
                    {"name": "h", "size": 1},
                    {"name": "y0", "outputs": [0]},
                    {"name": "y1", "outputs": [1]},
                ],
                "edge": [
                    {"source": "x", "target": "h"},
                    {"source": "h", "target": "y0"},
                    {"source": "h", "target": "y1"},
                ],
            }
        ],
    }
    spec = tmp_path / "vanishing.toml"
    spec.write_text(to_toml(document))
    assert main(["derive", str(spec), "--network", "g", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert None in [v for path in report["singular_values"] for v in path["values"]]
    assert report["non_finite"] and all(place.startswith("singular_values[") for place in report["non_finite"])
