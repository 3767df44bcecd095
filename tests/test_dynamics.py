"""Closed forms against their ODEs (finite differences) and against diffrax."""

import jax.numpy as jnp
import numpy as np
import pytest
import sympy

from gdln.derive import formulas
from gdln.derive.derivation import TAU, TIME, NetworkDerivation
from gdln.numeric.integrate import integrate_ode
from gdln.numeric.race import CompiledNetwork, crossing_time

from .references import mode_half_time


@pytest.mark.parametrize("s, d, a0", [(0.25, 0.125, 1e-6), (0.9, 2.0, 1e-3), (0.4, 0.7, 0.3)])
def test_closed_form_solves_its_ode_by_finite_differences(s, d, a0):
    tau, h = 100.0, 1e-3
    for t in np.linspace(0, 3000, 13):
        a = lambda time: formulas.mode_strength(s, d, a0, time, tau, np)  # noqa: E731
        derivative = (a(t + h) - a(t - h)) / (2 * h)
        expected = formulas.mode_rate(a(t), s - d * a(t), 2, tau, np)
        assert derivative == pytest.approx(expected, rel=1e-6, abs=1e-11)


def test_symbolic_closed_form_solves_symbolic_ode(xor_task):
    derivation = NetworkDerivation(xor_task, "xor")
    a = derivation.strengths[0]
    residual = sympy.diff(derivation.closed_forms[0], TIME) - derivation.rates[0].subs(a, derivation.closed_forms[0])
    point = {xor_task.parameter("Delta"): 0.7, TAU: 20.0, derivation.initial_strengths[0]: 1e-3}
    for t in (0.0, 50.0, 200.0, 900.0):
        assert abs(float(residual.subs({**point, TIME: t}))) < 1e-12


@pytest.mark.parametrize("network", ["linear", "xor"])
def test_diffrax_matches_closed_form(xor_models, network):
    compiled = xor_models.prediction(network).compiled
    ts = jnp.linspace(0.0, 8000.0, 401)
    a0 = jnp.array([1e-6 * (k + 1) for k in range(len(compiled.derivation.mode_refs))])
    values = [1.3]
    closed = compiled.strengths(ts, a0, 100.0, values)
    integrated = integrate_ode(compiled.ode, a0, ts, (100.0, *values))
    np.testing.assert_allclose(integrated, closed, rtol=1e-7, atol=1e-12)


def test_lone_pathway_race_equals_deep_linear_network_closed_form():
    """A network of one always-on pathway is a deep linear network: its race ODE, integrated,
    reproduces Saxe et al.'s a(t) for every mode of numpy's SVD."""
    from gdln.derive.spec import task_from_dict

    inputs = np.eye(3)
    targets = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    task = task_from_dict(
        {
            "data": {"inputs": inputs.tolist(), "targets": targets.T.tolist()},
            "network": [{"name": "dln", "pathway": [{}]}],
        }
    )
    compiled = CompiledNetwork(NetworkDerivation(task, "dln"))
    ts = jnp.linspace(0, 4000, 201)
    a0 = jnp.full(len(compiled.derivation.mode_refs), 1e-4)
    integrated = np.asarray(integrate_ode(compiled.ode, a0, ts, (50.0,)))
    s_numpy = np.linalg.svd(targets.T.T @ inputs / 3, compute_uv=False)
    d = 1 / 3
    for s in sorted(s_numpy[s_numpy > 0], reverse=True):
        column = np.argmin([abs(float(compiled.derivation.mode(r).s) - s) for r in compiled.derivation.mode_refs])
        expected = formulas.mode_strength(s, d, 1e-4, np.asarray(ts), 50.0, np)
        np.testing.assert_allclose(integrated[:, column], expected, rtol=1e-7)


def test_generated_ode_function_documents_argument_order(xor_models):
    f = xor_models.prediction("linear").compiled.ode
    assert "y = (a_linear.positive.0, a_linear.negative.0)" in f.__doc__
    assert "args = (tau, Delta)" in f.__doc__


def test_compiled_once_for_many_parameter_values(xor_models):
    compiled = xor_models.prediction("xor").compiled
    ts = jnp.linspace(0, 5000, 101)
    a0 = jnp.full(4, 1e-6)
    compiled.loss_curve(ts, a0, 100.0, [0.5])
    before = compiled._closed_strengths._cache_size()
    for delta in (0.7, 1.1, 2.3):
        compiled.loss_curve(ts, a0, 100.0, [delta])
    assert compiled._closed_strengths._cache_size() == before


def test_half_time_formula_matches_curve():
    s, d, a0, tau = 0.3, 0.2, 1e-6, 100.0
    ts = np.linspace(0, 10000, 100001)
    a = formulas.mode_strength(s, d, a0, ts, tau, np)
    t_half = crossing_time(ts, s / d - a, 0.5)
    assert t_half == pytest.approx(float(mode_half_time(s, d, a0, tau)), rel=1e-4)
