"""Parameters fixed before deriving (``--set``, ``Task.with_values``), and networks that derive
whatever the task's other networks do (issue 36, points 1 and 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy

from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import SpecError

from .helpers import XOR_SPEC, run_cli

#: a radical of a parameter in a 3x3 block of the effective correlations of network ``dense`` (no
#: exact route keeps it: the block is not polynomial in g); ``per-item``
#: has rank-one pathways only, so it derives with ``g`` kept
BLOCK_SPEC = """
title = "a 3x3 parametric block"
[parameters]
g = 2
[data]
inputs = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
targets = [["1", "sqrt(g)", 0], ["sqrt(g)", 1, 1], [0, 1, "g + 1"]]
[[network]]
name = "dense"
[[network.pathway]]
name = "all"
[[network]]
name = "per-item"
[[network.pathway]]
name = "first"
active = [0]
[[network.pathway]]
name = "second"
active = [1]
[[network.pathway]]
name = "third"
active = [2]
"""


@pytest.fixture
def block_spec(tmp_path):
    path = tmp_path / "block.toml"
    path.write_text(BLOCK_SPEC, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("given", "exact"),
    [("3/2", sympy.Rational(3, 2)), (1.5, sympy.Rational(3, 2)), ("sqrt(2)", sympy.sqrt(2)), (2, sympy.Integer(2))],
)
def test_with_values_writes_the_exact_value_into_the_data(xor_task, given, exact):
    """XoR with Delta fixed is the parameter-free task whose data hold the value exactly, and its
    derivation is the parametric one at that value, exactly."""
    fixed = xor_task.with_values({"Delta": given})
    delta = xor_task.parameter("Delta")
    assert fixed.parameters == {} and fixed.fixed == {"Delta": exact}
    assert fixed.inputs == xor_task.inputs.xreplace({delta: exact})
    for network in ("linear", "xor"):
        parametric = NetworkDerivation(xor_task, network)
        bound = NetworkDerivation(fixed, network)
        for p, q in zip(parametric.pathways, bound.pathways):
            for m, n in zip(p.modes, q.modes):
                assert sympy.simplify(m.s.subs(delta, exact) - n.s) == 0
    # and against numpy's SVD of each pathway's Sigma_yx, computed from the data directly
    x, y = np.array(fixed.inputs, dtype=float), np.array(fixed.targets, dtype=float)
    for pathway, derived in zip(fixed.network("xor").pathways, NetworkDerivation(fixed, "xor").pathways):
        rows = list(pathway.active)
        sigma = y[np.ix_(rows, pathway.outputs)].T @ x[np.ix_(rows, pathway.inputs)] / len(x)
        expected = np.linalg.svd(sigma, compute_uv=False)
        found = sorted((float(m.s) for m in derived.modes), reverse=True)
        assert found == pytest.approx(expected[: len(found)], rel=1e-12)
        assert np.all(expected[len(found) :] < 1e-12)


@pytest.mark.parametrize("value", ["nan", "sqrt(-1)", "1e40"])
def test_with_values_refuses_what_the_spec_would(xor_task, value):
    with pytest.raises(SpecError) as error:
        xor_task.with_values({"Delta": value}, source="--set")
    assert str(error.value).startswith("--set: ")


@pytest.mark.parametrize("value", ["-1", "-3/2"])
def test_with_values_takes_any_real_value_by_default(xor_task, value):
    """Parameters are real unless the spec declares a domain (issue 47)."""
    fixed = xor_task.with_values({"Delta": value}, source="--set")
    assert fixed.parameters == {}


def test_with_values_names_an_unknown_parameter_by_the_option(xor_task):
    with pytest.raises(SpecError, match=r"^--set: Nope: unknown parameter 'Nope' \(known: Delta\)$"):
        xor_task.with_values({"Nope": 1}, source="--set")


def test_set_fixes_before_deriving_and_says_so(capsys):
    code, out, _ = run_cli(capsys, ["race", str(XOR_SPEC), "--set", "Delta=1.5", "--json"])
    report = json.loads(out)
    assert code == 0 and report["fixed"] == {"Delta": "3/2"} and report["parameters"] == {}
    assert report["crossovers"] == []  # a fixed parameter has no crossover
    code, out, _ = run_cli(capsys, ["race", str(XOR_SPEC), "--set", "Delta=1.5"])
    assert out.splitlines()[0] == "fixed before deriving: Delta = 3/2"


def test_the_error_s_remedy_works(capsys, block_spec):
    """A block the derivation cannot keep parametric says to fix the parameter with --set; doing
    so derives it exactly."""
    code, _, err = run_cli(capsys, ["derive", str(block_spec), "--network", "dense", "--json"])
    assert code == 2 and "network 'dense' pathway 'all'" in err and "--set NAME=VALUE" in err and "(g)" in err
    code, out, _ = run_cli(capsys, ["derive", str(block_spec), "--network", "dense", "--set", "g=3/2", "--json"])
    assert code == 0
    report = json.loads(out)
    assert report["fixed"] == {"g": "3/2"}
    x = np.eye(3)
    y = np.array([[1, np.sqrt(1.5), 0], [np.sqrt(1.5), 1, 1], [0, 1, 2.5]])
    expected = np.linalg.svd(y.T @ x / 3, compute_uv=False)
    found = sorted((s["value"] for s in report["pathways"][0]["singular_values"]), reverse=True)
    assert found == pytest.approx(expected, rel=1e-12)


def test_one_network_s_trouble_never_stops_another(capsys, block_spec):
    """``derive --network per-item`` derives although ``dense`` cannot be derived with g kept, and
    says that it has no crossover with it, and why."""
    code, out, _ = run_cli(capsys, ["derive", str(block_spec), "--network", "per-item", "--json"])
    assert code == 0
    report = json.loads(out)
    (other,) = report["crossovers_not_derived"]
    assert other["network"] == "dense" and "pathway 'all'" in other["reason"]
    code, out, _ = run_cli(capsys, ["derive", str(block_spec), "--network", "per-item"])
    assert "no crossover with dense: it cannot be derived" in out


@pytest.mark.parametrize("value", [0.27216552697590868, 1.3063945294843617, 2.5])
def test_a_fixed_value_races_as_the_parametric_task_at_that_value(xor_task, value):
    """A float fixed exactly is a ratio of 16-digit integers; its closed forms hold integers past
    int64 (they once reached compiled code as Python ints and overflowed). Its race equals the
    parametric race valued there, to 1e-10."""
    from gdln.verify.race import race_report

    fixed = race_report(xor_task.with_values({"Delta": value}))
    parametric = race_report(xor_task, {"Delta": value})
    for a, b in zip(fixed["networks"], parametric["networks"]):
        for key in ("t_half", "t_90", "final_loss"):  # None (never within the horizon) on both or neither
            assert (a[key] is None) == (b[key] is None)
            if b[key] is not None:
                assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-12)
    assert fixed["winner"] == parametric["winner"]
