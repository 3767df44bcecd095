"""Interacting pathways: group reduction and its closed forms, the exact reduced flow,
the staged derivation, checked against independent numpy/diffrax computations and
trained GDLNs."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sympy

from gdln.derive.derivation import TAU, TIME, NetworkDerivation
from gdln.derive.spec import chain, clusters, context_task, load_spec, task_from_dict
from gdln.derive.staged import StagedDerivation
from gdln.numeric.initial_conditions import expected_initial_strengths, pathway_initial_strengths
from gdln.numeric.prediction import TaskPredictions
from gdln.numeric.race import CompiledNetwork
from gdln.numeric.reduced_flow import ReducedFlow
from gdln.numeric.training import gdln_layout, train_gdln

from .references import reduced_flow_gradients

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def section5_k3():
    return task_from_dict(context_task(8, 3, ["hierarchy"] * 3, "context-subsets"), "<section5>")


def test_chain_and_clusters_follow_saxe_2019():
    assert chain(4) == [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    rows = clusters(4)
    assert rows[:2] == [[1, 1, 0, 0], [0, 0, 1, 1]] and rows[2:] == np.eye(4, dtype=int).tolist()


def test_staged_residual_and_group_closed_form_against_numpy(section5_k3):
    """Appendix F derived, not typed: the residual matches numpy least squares, the three
    context pathways form one symmetric group whose reduction is exact and decoupled, and its
    singular values are those of numpy's SVD of the residual correlations."""
    staged = StagedDerivation(section5_k3, "common+2")
    assert staged.first.name == "common"
    x = np.array(section5_k3.inputs, dtype=float)
    y = np.array(section5_k3.targets, dtype=float)
    fit = x @ np.linalg.lstsq(x, y, rcond=None)[0]
    assert np.allclose(np.array(staged.residual_task.targets, dtype=float), y - fit, atol=1e-12)

    second = staged.second_stage
    assert len(second.symmetric_groups) == 1 and len(second.symmetric_groups[0]) == 3
    reduction = second.group_reduction
    assert reduction.exact and reduction.decoupled and second.has_closed_form
    residual = y - fit
    gate = np.zeros(24)
    gate[:16] = 1  # contexts 1 and 2
    numpy_s = np.linalg.svd((residual * gate[:, None]).T @ x[:, :8] / 24, compute_uv=False)
    derived = sorted({round(float(s), 10) for s in reduction.singular_values})
    assert np.allclose(derived, sorted({round(v, 10) for v in numpy_s if v > 1e-9}), atol=1e-10)


def test_group_closed_form_matches_the_exact_flow(section5_k3):
    """The symmetric-group closed form (one logistic per singular class, effective d from the
    coupling) against the exact reduced flow integrated with diffrax on the same residual task."""
    second = StagedDerivation(section5_k3, "common+2").second_stage
    compiled = CompiledNetwork(second)
    ts = jnp.linspace(0.0, 12000.0, 241)
    closed = np.asarray(compiled.loss_curve(ts, expected_initial_strengths(compiled, 1e-4), 100.0, []))
    flow = ReducedFlow(second)
    exact = np.asarray(flow.trajectory(ts, pathway_initial_strengths(second.network, 1e-4), 100.0, []).loss)
    assert np.max(np.abs(closed - exact)) / exact[0] < 1e-6
    # each closed form solves its group ODE tau da/dt = 2 a (s - d_eff a), d_eff from the group coupling
    reduction = second.group_reduction
    for k, ref in enumerate(second.mode_refs):
        form = second.closed_forms[k]
        d_eff = reduction.coupling[second.group_variable(ref), second.group_variable(ref)]
        residual = sympy.diff(form, TIME) - 2 * form * (second.mode(ref).s - d_eff * form) / TAU
        point = {TIME: 650, TAU: 100, second.initial_strengths[k]: sympy.Rational(1, 10**6)}
        assert abs(sympy.N(residual.subs(point), 30)) < 1e-20


@pytest.mark.slow
def test_interacting_context_pathways_share_no_basis_and_say_so():
    task = load_spec(EXAMPLES / "section4_context.toml")
    # through the derivation cache the test run shares: race, verify and sweep tests derive it too
    derivation = TaskPredictions(task).derivation("common+2")
    assumptions = derivation.assumptions
    assert assumptions["pathways_interact"] and assumptions["shared_basis"] is False
    assert "outside its own singular vectors" in assumptions["shared_basis_failures"][0]
    assert not assumptions["mutually_diagonalisable"]  # the common pathway's one-hot items and contexts
    assert derivation.closed_forms is None


@pytest.mark.slow
def test_reduced_flow_matches_a_trained_gdln_with_explicit_gates():
    """Exact reduced flow vs full-batch GD on the explicit-gate GDLN (100 units per module,
    3 seeds): at most 0.02 of the initial loss apart (the gap is mostly discrete steps)."""
    task = task_from_dict(context_task(4, 3, ["hierarchy", "chain", "clusters"], "context-subsets"), "<small>")
    task = task.with_training(learning_rate=0.01, epochs=8000)
    network = task.network("common+2")
    flow = ReducedFlow(NetworkDerivation(task, network))
    ts = jnp.arange(0.0, 8001.0, 20.0)
    predicted = np.asarray(flow.trajectory(ts, pathway_initial_strengths(network, 1e-4), 100.0, []).loss)
    x = np.array(task.inputs, dtype=float)
    y = np.array(task.targets, dtype=float)
    run = train_gdln(x, y, gdln_layout(network, task.num_datapoints), 1e-4, 0.01, 8000, range(3))
    trained = np.asarray(run.losses).mean(axis=0)[::20]
    assert predicted[-1] < 0.05 * predicted[0]  # the run covers the whole descent
    assert np.max(np.abs(trained - predicted)) / predicted[0] < 0.02


def test_one_flow_per_structure_is_the_gradient_of_the_readable_loss():
    """The reduced flow's one-product form (``numeric.reduced_flow.FlowStructure``) against an
    independent computation: autodiff of the term-by-term loss ``ReducedFlow.loss`` on pathways
    with different target features, inputs and depths; and networks of one structure share one
    compiled ``ode``."""
    from jax.flatten_util import ravel_pytree

    document = context_task(4, 3, ["hierarchy", "chain", "clusters"], "context-subsets")
    outputs = len(document["data"]["targets"][0])
    inputs = len(document["data"]["inputs"][0])
    document["network"] = [
        {
            "name": "mixed",
            "pathway": [
                {"name": "all", "active": list(range(12))},
                {"name": "some", "active": [0, 1, 2, 3, 4, 5], "outputs": list(range(2, outputs - 3))},
                {"name": "deep", "active": [4, 5, 6, 7, 8], "inputs": list(range(1, inputs)), "hidden_layers": 2},
                {"name": "tail", "active": [7, 8, 9, 10, 11], "outputs": [outputs - 1, 0, 5]},
            ],
        },
        {
            "name": "mixed-again",
            "pathway": [
                {"name": "all", "active": list(range(6))},
                {"name": "some", "active": [3, 4, 5, 6, 7, 8], "outputs": list(range(2, outputs - 3))},
                {"name": "deep", "active": [0, 5, 11], "inputs": list(range(1, inputs)), "hidden_layers": 2},
                {"name": "tail", "active": [1, 2, 9], "outputs": [outputs - 1, 0, 5]},
            ],
        },
    ]
    task = task_from_dict(document, "<mixed>")
    first, second = (ReducedFlow(NetworkDerivation(task, name)) for name in ("mixed", "mixed-again"))
    assert first.ode is second.ode and first.structure is second.structure
    rng = np.random.default_rng(3)
    for flow in (first, second):
        y = jnp.asarray(rng.standard_normal(flow.structure.size) * 0.3)
        sigma_yx, sigma_x, power = flow.correlations([])

        def readable(flat, sigma_yx=sigma_yx, sigma_x=sigma_x, power=power, flow=flow):
            return flow.loss(flow.maps(flow._unravel(flat)), sigma_yx, sigma_x, power)

        tau = 7.0
        rates = np.asarray(flow.ode(0.0, y, flow.ode_args(tau, [])))
        np.testing.assert_allclose(rates, -np.asarray(jax.grad(readable)(y)) / tau, rtol=1e-12, atol=1e-14)
        assert float(flow.losses_of_states(y[None], [])[0]) == pytest.approx(float(readable(y)), rel=1e-12)
        chains = flow._unravel(y)
        gradients = reduced_flow_gradients(flow, flow.maps(chains), sigma_yx, sigma_x)  # the depth-2 pathways' rates
        for p, weights in enumerate(chains):
            if len(weights) == 2:
                got = flow._unravel(jnp.asarray(rates))[p]
                np.testing.assert_allclose(got[1], gradients[p] @ weights[0].T / tau, rtol=1e-12, atol=1e-14)
        assert ravel_pytree(chains)[0].shape == y.shape


def test_race_in_the_output_span_is_the_race_of_every_feature():
    """The race written in :meth:`ReducedFlow.output_basis` (fewer variables) against the race
    of every target feature: the basis holds every column of ``Sigma_yx^E``, and the crossings and
    final loss agree to the solver's tolerance; a network whose pathways write only some features
    keeps them all."""
    task = task_from_dict(context_task(4, 3, ["hierarchy", "chain", "clusters"], "context-subsets"), "<small>")
    flow = ReducedFlow(NetworkDerivation(task, "common+2"))
    basis = flow.output_basis([])
    written = np.asarray(flow.operands([])[0])
    assert basis.shape[1] < task.num_outputs
    np.testing.assert_allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-12)
    np.testing.assert_allclose(basis @ (basis.T @ written), written, atol=1e-12)
    logs = np.log(pathway_initial_strengths(task.network("common+2"), 1e-4))
    short, full = (flow.race_ode(logs, 100.0, [], compress=c) for c in (True, False))
    assert short.y0.size < full.y0.size
    assert short.initial_loss == pytest.approx(full.initial_loss, rel=1e-12)
    got, expected = short.race((0.5, 0.1), 8000), full.race((0.5, 0.1), 8000)
    for fraction in (0.5, 0.1):
        assert got.crossings[fraction] == pytest.approx(expected.crossings[fraction], rel=1e-8)
    assert got.final_loss == pytest.approx(expected.final_loss, rel=1e-8)

    document = context_task(4, 3, ["hierarchy", "chain", "clusters"], "context-subsets")
    document["network"] = [{"name": "part", "pathway": [{"name": "all"}, {"name": "some", "outputs": [0, 1, 2]}]}]
    assert ReducedFlow(NetworkDerivation(task_from_dict(document, "<part>"), "part")).output_basis([]) is None
