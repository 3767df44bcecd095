"""The floating-point derivation of large numeric data (derive.float_modes), against the exact
route on the same data: numpy's SVD must give the exact modes' singular values, variances,
rank-one maps and couplings, and the same symmetric groups."""

import numpy as np
import pytest
import sympy

from gdln.derive import float_modes
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.modes import vanishes
from gdln.derive.spec import Network, Pathway, digits_task, load_spec, task_from_dict
from gdln.numeric.initial_conditions import starting_units
from gdln.numeric.prediction import TaskPredictions

from .helpers import ROOT

#: float64 against exact values of O(1) (data scaled to mean squared norm 1); singular vectors
#: are good to 1e-16 / gap, and Section 4 has singular values 3e-6 apart
FLOAT_ATOL = 1e-9


def _both_routes(task, network, monkeypatch):
    # the exact route through the derivation cache the test run shares: other tests derive it too
    exact = TaskPredictions(task).derivation(network)
    assert not exact.in_floats and exact.assumptions["arithmetic"] == "exact"
    _ = exact.coupling  # every product the comparison reads, before the switch
    monkeypatch.setattr(float_modes, "FLOAT_DERIVATION_ENTRIES", 0)
    floats = NetworkDerivation(task, network)
    assert floats.in_floats and floats.assumptions["arithmetic"].startswith("float")
    assert not floats.assumptions["exact_modes"]
    return exact, floats


def _maps(derivation):
    """Per mode ``s u v^T`` as floats: independent of the basis chosen in a degenerate space only
    summed over it, so compared per singular class below."""
    return [
        [(float(m.s), np.array(m.u, dtype=float) @ np.array(m.v, dtype=float).T * float(m.s)) for m in p.modes]
        for p in derivation.pathways
    ]


@pytest.mark.slow
@pytest.mark.parametrize("network", ["linear", "by-class"])
def test_float_modes_are_the_exact_modes_on_digits(network, monkeypatch):
    task = task_from_dict(digits_task((0, 1, 2), per_class=6, epochs=10, seeds=1))
    exact, floats = _both_routes(task, network, monkeypatch)
    assert float(floats.initial_loss) == pytest.approx(float(exact.initial_loss), abs=FLOAT_ATOL)
    for exact_modes, float_modes_ in zip(_maps(exact), _maps(floats)):
        assert len(exact_modes) == len(float_modes_)
        for (s_exact, map_exact), (s_float, map_float) in zip(
            sorted(exact_modes, key=lambda m: -m[0]), sorted(float_modes_, key=lambda m: -m[0])
        ):
            assert s_float == pytest.approx(s_exact, abs=FLOAT_ATOL)
            np.testing.assert_allclose(map_float, map_exact, atol=FLOAT_ATOL)
    for p_exact, p_float in zip(exact.pathways, floats.pathways):
        assert sorted(float(m.d) for m in p_float.modes) == pytest.approx(
            sorted(float(m.d) for m in p_exact.modes), abs=FLOAT_ATOL
        )
    assert bool(floats.diagonalisation_failures) == bool(exact.diagonalisation_failures)


def _unique_modes(derivation):
    """``{(pathway, s rounded): position in mode_refs}`` of the modes whose singular value is
    unique in their pathway: their (u, v) is unique up to a common sign, which every coupling
    entry ``(u_k.O.u_l)(v_l.Sigma.v_k)`` is blind to; in a degenerate space both routes choose
    a basis, and nothing fixes it where Sigma_x is a multiple of the identity there."""
    found = {}
    for index, ref in enumerate(derivation.mode_refs):
        s = float(derivation.mode(ref).s)
        others = [float(m.s) for m in derivation.pathways[ref.pathway].modes]
        if sum(abs(s - o) < 1e-8 for o in others) == 1:
            found[(ref.pathway, round(s, 8))] = index
    return found


@pytest.mark.slow
def test_float_route_keeps_groups_and_couplings_on_section4(monkeypatch):
    """Degenerate singular values and interacting pathways: the same symmetric groups, the same
    reduced system, and the same couplings between the modes a basis does not hide."""
    task = load_spec(ROOT / "examples" / "section4_context.toml")
    exact, floats = _both_routes(task, "common+2", monkeypatch)
    assert floats.symmetric_groups == exact.symmetric_groups
    assert floats.interacting_pairs == exact.interacting_pairs
    assert floats.reduced_system.kind == exact.reduced_system.kind
    assert bool(floats.diagonalisation_failures) == bool(exact.diagonalisation_failures)
    for p_exact, p_float in zip(exact.pathways, floats.pathways):
        for key in (lambda m: float(m.s), lambda m: float(m.d)):
            assert sorted(map(key, p_float.modes)) == pytest.approx(sorted(map(key, p_exact.modes)), abs=FLOAT_ATOL)
    unique_exact, unique_float = _unique_modes(exact), _unique_modes(floats)
    assert unique_exact.keys() == unique_float.keys() and len(unique_exact) > 20
    c_exact, c_float = np.array(exact.coupling, dtype=float), np.array(floats.coupling, dtype=float)
    for k in unique_exact:
        for l in unique_exact:
            assert c_float[unique_float[k], unique_float[l]] == pytest.approx(
                c_exact[unique_exact[k], unique_exact[l]], abs=FLOAT_ATOL
            )


def test_large_numeric_data_switches_to_floats_and_says_so():
    small = task_from_dict(digits_task((0, 1), per_class=5, epochs=10, seeds=1))
    large = task_from_dict(digits_task((0, 1, 2), per_class=40, epochs=10, seeds=1))
    assert small.num_datapoints * small.num_inputs <= float_modes.FLOAT_DERIVATION_ENTRIES
    assert large.num_datapoints * large.num_inputs > float_modes.FLOAT_DERIVATION_ENTRIES
    assert NetworkDerivation(small, "linear").assumptions["arithmetic"] == "exact"
    derivation = NetworkDerivation(large, "by-class")
    assert str(float_modes.FLOAT_DERIVATION_ENTRIES) in derivation.assumptions["arithmetic"]
    # the SVD reconstructs each pathway's effective correlations
    for pathway in derivation.pathways:
        target = float_modes.float_sigma_yx(large, pathway.pathway)
        rebuilt = sum(float(m.s) * np.array(m.u, dtype=float) @ np.array(m.v, dtype=float).T for m in pathway.modes)
        np.testing.assert_allclose(rebuilt, target, atol=FLOAT_ATOL)


def test_double_precision_floats_vanish_below_the_float_zero():
    assert vanishes(sympy.Float(1e-14)) and vanishes(sympy.Float(-3e-13))
    assert not vanishes(sympy.Float(1e-9))
    # high-precision floats (transcendental input, 40 digits) keep their own, tighter test
    assert not vanishes(sympy.Float("1e-14", 40))


def test_units_start_the_pathway_with_the_nearest_gate():
    gates_of = {"a": (0, 1, 2), "b": (2, 3), "c": (2, 3)}
    network = Network(
        name="n",
        pathways=tuple(
            Pathway(name=k, active=v, inputs=(0,), outputs=(0,), hidden_layers=1, units=4) for k, v in gates_of.items()
        ),
    )
    units = np.array(
        [
            [1, 1, 1, 0],  # exactly a
            [1, 1, 0, 0],  # one off a, three off b and c
            [0, 1, 1, 1],  # exactly b and c
            [0, 0, 0, 0],  # silent: starts nothing
            [0, 1, 1, 0],  # one off a, two off b and c
        ],
        dtype=bool,
    ).T
    starts = starting_units(network, units)
    assert [list(np.flatnonzero(s)) for s in starts] == [[0, 1, 4], [2], [2]]
