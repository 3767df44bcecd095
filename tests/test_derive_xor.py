"""Derived quantities of the XoR task against independent numpy computations."""

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from gdln.derive.correlations import sigma_x, sigma_yx
from gdln.derive.crossover import crossovers
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.modes import vanishes

from .references import eigen_residual


def xor_arrays(delta):
    inputs = np.array([[1, 1, delta / 2], [1, -1, -delta / 2], [-1, 1, -delta / 2], [-1, -1, delta / 2]], float)
    targets = np.array([[1], [-1], [-1], [1]], float)
    return inputs, targets


def numpy_speed(inputs, targets, groups):
    """Largest singular value over pathways of <g y x^T>, from numpy's SVD."""
    n = inputs.shape[0]
    return max(np.linalg.svd(targets[g].T @ inputs[g] / n, compute_uv=False)[0] for g in groups)


@pytest.mark.parametrize("delta", [0.3, 1.0, 2.7])
def test_effective_correlations_and_modes_match_numpy(xor_task, delta):
    values = {xor_task.parameter("Delta"): sympy.Rational(delta).limit_denominator(1000)}
    inputs, targets = xor_arrays(float(values[xor_task.parameter("Delta")]))
    for network in xor_task.networks:
        derivation = NetworkDerivation(xor_task, network)
        for pathway_derivation in derivation.pathways:
            g = list(pathway_derivation.pathway.active)
            expected_syx = targets[g].T @ inputs[g] / 4
            expected_sx = inputs[g].T @ inputs[g] / 4
            np.testing.assert_allclose(
                np.array(pathway_derivation.sigma_yx.subs(values), float), expected_syx, atol=1e-14
            )
            np.testing.assert_allclose(
                np.array(pathway_derivation.sigma_x.subs(values), float), expected_sx, atol=1e-14
            )
            u, s, vt = np.linalg.svd(expected_syx)
            (mode,) = pathway_derivation.modes
            assert float(mode.s.subs(values)) == pytest.approx(s[0], rel=1e-12)
            v = np.array(mode.v.subs(values), float).ravel()
            assert abs(abs(v @ vt[0]) - 1) < 1e-12
            assert float(mode.d.subs(values)) == pytest.approx(vt[0] @ expected_sx @ vt[0], rel=1e-12)


def test_paper_values_and_assumptions(xor_task):
    delta = xor_task.parameter("Delta")
    linear = NetworkDerivation(xor_task, "linear")
    xor = NetworkDerivation(xor_task, "xor")
    # Appendix C: s = Delta/4, d = Delta^2/8 (linear); s = sqrt(2 + Delta^2/4)/4, d = (2 + Delta^2/4)/4 (xor)
    assert vanishes(linear.speed - delta / 4)
    assert vanishes(linear.pathways[0].modes[0].d - delta**2 / 8)
    assert vanishes(xor.speed - sympy.sqrt(2 + delta**2 / 4) / 4)
    assert vanishes(xor.pathways[0].modes[0].d - (2 + delta**2 / 4) / 4)
    for derivation in (linear, xor):
        assert derivation.assumptions["mutually_diagonalisable"]
        assert not derivation.assumptions["pathways_interact"]
        assert derivation.has_closed_form


def test_crossover_is_derived_and_matches_numeric_root(xor_task):
    delta = xor_task.parameter("Delta")
    (found,) = crossovers(
        NetworkDerivation(xor_task, "linear"), NetworkDerivation(xor_task, "xor"), delta, xor_task.values()
    )
    # independent: Delta/4 = sqrt(2 + Delta^2/4)/4  <=>  Delta^2 = 8/3
    assert float(found.expr) == pytest.approx(math.sqrt(8 / 3), rel=1e-14)
    root = brentq(
        lambda d: numpy_speed(*xor_arrays(d), [[0, 3], [1, 2]]) - numpy_speed(*xor_arrays(d), [[0], [1], [2], [3]]),
        0.1,
        5,
    )
    assert float(found.expr) == pytest.approx(root, rel=1e-9)
    assert (found.faster_below, found.faster_above) == ("xor", "linear")


def test_mutual_diagonalisability_failure_is_detected():
    from gdln.derive.spec import task_from_dict

    task = task_from_dict(
        {
            "data": {"inputs": [[1, 0], [1, 1]], "targets": [[1], [0]]},
            "network": [{"name": "one", "pathway": [{"name": "all"}]}],
        }
    )
    derivation = NetworkDerivation(task, "one")
    assert not derivation.assumptions["mutually_diagonalisable"]
    assert "Assumption 2.1.1" in derivation.assumptions["failures"][0]
    assert derivation.closed_forms is None
    pathway_derivation = derivation.pathways[0]
    assert not all(vanishes(e) for e in eigen_residual(pathway_derivation.sigma_x, pathway_derivation.modes[0]))


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(min_value=-9, max_value=9).filter(lambda v: v != 0), min_size=3, max_size=3),
    st.lists(st.integers(min_value=-9, max_value=9), min_size=4, max_size=4),
)
def test_modes_of_random_pathways_match_numpy_svd(row_scales, extra):
    """Random effective datasets with one target: exact modes agree with numpy's SVD."""
    from gdln.derive.spec import task_from_dict

    inputs = [[row_scales[0], 1, 2, extra[0]], [extra[1], row_scales[1], 0, 1], [3, extra[2], row_scales[2], extra[3]]]
    targets = [[1], [2], [-1]]
    task = task_from_dict(
        {"data": {"inputs": inputs, "targets": targets}, "network": [{"name": "n", "pathway": [{"active": [0, 2]}]}]}
    )
    pathway_derivation = NetworkDerivation(task, "n").pathways[0]
    x, y = np.array(inputs, float), np.array(targets, float)
    expected = np.linalg.svd(y[[0, 2]].T @ x[[0, 2]] / 3, compute_uv=False)[0]
    assert float(pathway_derivation.modes[0].s) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(
        np.array(sigma_x(task, pathway_derivation.pathway, pathway_derivation.pathway), float),
        x[[0, 2]].T @ x[[0, 2]] / 3,
        atol=1e-14,
    )
    np.testing.assert_allclose(
        np.array(sigma_yx(task, pathway_derivation.pathway), float), y[[0, 2]].T @ x[[0, 2]] / 3, atol=1e-14
    )


def test_parameter_free_block_diagonalised_numerically():
    from gdln.derive.spec import task_from_dict

    inputs = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    targets = [[1, 0], [1, 1], [0, 2]]
    task = task_from_dict({"data": {"inputs": inputs, "targets": targets}, "network": [{"name": "n", "pathway": [{}]}]})
    pathway_derivation = NetworkDerivation(task, "n").pathways[0]
    expected = np.linalg.svd(np.array(targets, float).T @ np.array(inputs, float) / 3, compute_uv=False)
    got = sorted((float(m.s) for m in pathway_derivation.modes), reverse=True)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
