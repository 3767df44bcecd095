"""Parametric Gram blocks of any size (issue 36): the three-context spec keeps ``g`` exact, with
linear, quadratic and cubic factors of the characteristic polynomials (the cubics as implicit roots,
:mod:`derive.implicit`), and its numbers at a point equal the derivation of the same spec with ``g``
written as a number, and numpy's SVD of the data."""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy

from gdln.derive import implicit
from gdln.derive.spec import load_spec, task_from_dict
from gdln.numeric.prediction import TaskPredictions
from gdln.verify.race import race_report

SPEC = Path(__file__).resolve().parent.parent / "examples" / "three_contexts.toml"
VALUES = [Fraction(1, 2), Fraction(3, 2), Fraction(3)]
RELATIVE = 1e-10
#: loss curves and t_half, t_90 are integrated (reduced flow, diffrax at rtol 1e-10 per step): two runs whose inputs
#: differ by float64 rounding take different steps and agree to the solver's global error
CURVE_RELATIVE = 1e-8


def substituted(value: Fraction):
    """The same spec with ``g`` written as the number ``value``."""
    document = tomllib.loads(SPEC.read_text())
    del document["parameters"]
    text = f"{value.numerator}/{value.denominator}"
    document["data"]["targets"] = [[text if e == "g" else e for e in row] for row in document["data"]["targets"]]
    return task_from_dict(document, source=f"three_contexts g={text}")


@pytest.fixture(scope="module")
def symbolic():
    return TaskPredictions(load_spec(SPEC))


def _numpy_singular_values(task, pathway, value):
    """Singular values of ``Sigma_yx = (1/N) sum over active datapoints of y x^T`` from the data."""
    inputs = np.array([[float(sympy.sympify(e)) for e in row] for row in task.inputs.tolist()])
    targets = np.array(
        [
            [float(sympy.sympify(e).subs(sympy.Symbol("g", positive=True), value)) for e in row]
            for row in task.targets.tolist()
        ]
    )
    active = list(pathway.active)
    sigma = targets[active][:, list(pathway.outputs)].T @ inputs[active][:, list(pathway.inputs)] / len(inputs)
    return np.linalg.svd(sigma, compute_uv=False)


def test_routes(symbolic):
    """dense: a 7x7 block with two irreducible cubic factors in g (implicit roots); ctx-only's
    first context: linear and quadratic factors (rational functions, one square root)."""
    dense = symbolic.derivation("dense").pathways[0].modes
    assert sorted({(m.kind, m.degree) for m in dense}) == [("implicit", 3)]
    assert len({r.polynomial for m in dense for r in implicit.roots_in(m.s)}) == 2
    context = symbolic.derivation("ctx-only").pathways[0].modes
    assert {(m.kind, m.degree) for m in context} == {("parametric", 1), ("parametric", 2)}
    assert all(sympy.Symbol("g", positive=True) in m.s.free_symbols for m in dense)


@pytest.mark.slow
@pytest.mark.parametrize("value", VALUES)
def test_singular_values_and_race_match_substituted_spec(symbolic, value):
    numeric = TaskPredictions(substituted(value))
    g = float(value)
    race = race_report(symbolic.task, {"g": g}, symbolic)
    race_number = race_report(numeric.task, None, numeric)
    for name in ("dense", "common+ctx", "ctx-only"):
        ours = symbolic.mode_scales(name, [g])
        theirs = numeric.mode_scales(name, [])
        pathways = symbolic.derivation(name).network.pathways
        for (s, d), (s_ref, d_ref), pathway in zip(ours, theirs, pathways):
            s, s_ref = np.sort(s)[::-1], np.sort(s_ref)[::-1]
            np.testing.assert_allclose(s, s_ref, rtol=RELATIVE, atol=0)
            np.testing.assert_allclose(np.sort(d), np.sort(d_ref), rtol=RELATIVE, atol=1e-14)
            svd = _numpy_singular_values(symbolic.task, pathway, g)
            np.testing.assert_allclose(s, svd[: len(s)], rtol=1e-12, atol=0)
            assert np.all(svd[len(s) :] < 1e-12)
    by_name = {n["name"]: n for n in race["networks"]}
    for entry in race_number["networks"]:
        mine = by_name[entry["name"]]
        for key in ("t_half", "t_90"):
            if entry[key] is None:
                assert mine[key] is None
            else:
                assert mine[key] == pytest.approx(entry[key], rel=CURVE_RELATIVE)
    ts = np.linspace(0.0, symbolic.task.training.epochs, 41)
    training = symbolic.task.training
    for name in ("dense", "ctx-only"):
        curve = symbolic.prediction(name).loss_curve(ts, training.init_scale, training.tau, [g])
        reference = numeric.prediction(name).loss_curve(ts, training.init_scale, training.tau, [])
        np.testing.assert_allclose(curve, reference, rtol=CURVE_RELATIVE, atol=0)


def test_root_values_from_their_polynomial():
    """A root evaluates from its polynomial at a point: the exact (CRootOf) value, numpy's roots and
    the compiled JAX value agree."""
    g = sympy.Symbol("g", positive=True)
    z = implicit.VARIABLE
    polynomial = z**3 - (3 + g) * z**2 + g * z + g / 7
    values = [float(v) for v in VALUES]
    for index in range(3):
        root = implicit.ParametricRoot(polynomial, index)
        evaluate = implicit.jax_root_values([root], [g])
        for v in values:
            exact = float(sympy.N(root.subs(g, sympy.nsimplify(v)), 30))
            reference = sorted(np.roots([1, -(3 + v), v, v / 7]).real, reverse=True)[index]
            assert exact == pytest.approx(reference, rel=1e-12)
            assert float(evaluate(v)[0]) == pytest.approx(exact, rel=1e-13)
            assert float(implicit.numpy_evaluator(root, [g])(v)) == pytest.approx(exact, rel=1e-13)


def test_implicit_roots_pickle_and_reduce():
    import pickle

    g = sympy.Symbol("g", positive=True)
    root = implicit.ParametricRoot(
        implicit.VARIABLE**3 - (3 + g) * implicit.VARIABLE**2 + g * implicit.VARIABLE + g / 7, 0
    )
    expr = (root**4 + g * root) / (root**3 + 1)
    assert pickle.loads(pickle.dumps(expr)) == expr
    reduced = implicit.reduce_roots(expr)
    assert sympy.Poly(sympy.fraction(reduced)[0].xreplace({root: sympy.Symbol("r")}), sympy.Symbol("r")).degree() < 3
    assert float(sympy.N((reduced - expr).subs(g, 2), 30)) == pytest.approx(0, abs=1e-25)
    assert implicit.vanishes_exactly(root**3 - (3 + g) * root**2 + g * root + g / 7)
    assert not implicit.vanishes_exactly(root**2 - g)


def test_latex_names_each_implicit_polynomial_once_and_values_its_roots(symbolic):
    """The LaTeX writes each implicit root's polynomial once, in z with coefficients in g, and each
    singular value as its numbered root with its value at the spec's g (issue 36, point 6)."""
    from gdln.derive.latex import to_latex

    derivation = symbolic.derivation("dense")
    tex = to_latex(derivation)
    roots = {r for p in derivation.pathways for m in p.modes for r in implicit.roots_in(m.s)}
    assert roots
    for name in {r.name for r in roots}:
        symbol = f"P_{{\\mathrm{{{name[1:]}}}}}"
        assert tex.count(f"is the $k$-th largest root of ${symbol}(z)$") == 1
    g = symbolic.task.parameter("g")
    for mode in (m for p in derivation.pathways for m in p.modes):
        assert f"\\approx {sympy.N(mode.s.xreplace({g: 1}), 6)}" in tex


def test_text_gives_an_expression_in_roots_by_its_value(symbolic):
    """The terminal text (issue 36, point 4): an implicit mode's d, a long expression in its root,
    is printed as its value and the polynomial it holds; its singular value, the root itself, as
    written; ``--full`` (``whole``) writes the expression."""
    from gdln.commands.output import value_text
    from gdln.verify.entries import value_entry

    values = symbolic.task.values({})
    mode = symbolic.derivation("dense").pathways[0].modes[0]
    (root,) = implicit.roots_in(mode.s)
    d, s = value_entry(mode.d, values), value_entry(mode.s, values)
    assert d["implicit"] == s["implicit"] == [root.name]
    text = value_text(d)
    assert d["expr"] not in text and root.name in text
    assert float(text.split()[0]) == pytest.approx(float(sympy.N(mode.d.subs(values), 30)), rel=1e-5)  # 6 digits
    assert value_text(d, whole=True).startswith(d["expr"])
    assert value_text(s, "s").startswith(f"sqrt(root1({root.name})) = ")


def test_mode_values_of_implicit_modes_at_many_points_are_numpy_s_svd(symbolic):
    """Every mode of the 7x7 block at three values of g in one call (numeric.mode_values: the
    Gram-side adjugate column at each root, normalised in float64): s, d and the map u v^T equal
    numpy's SVD of Sigma_yx from the data at each point, and the same points one at a time."""
    from gdln.numeric.mode_values import pathway_mode_values

    derivation = symbolic.derivation("dense")
    (pathway,) = derivation.pathways
    values = np.array([[float(v)] for v in VALUES])
    modes = pathway_mode_values(pathway, derivation.parameters, "dense.all")
    together = modes(values)
    inputs, targets = symbolic.dataset.batch(values)
    for row in range(len(values)):
        x, y = inputs[row], targets[row]
        u, s, vt = np.linalg.svd(y.T @ x / len(x))
        alone = modes(values[row : row + 1])
        for k in range(together.s.shape[1]):
            j = int(np.argmin(np.abs(s - together.s[row, k])))
            assert together.s[row, k] == pytest.approx(s[j], rel=1e-12)
            # distinct singular values (gaps above 0.01 here): u v^T is unique, whatever the signs
            outer = np.outer(together.u[row, :, k], together.v[row, :, k])
            np.testing.assert_allclose(outer, np.outer(u[:, j], vt[j]), rtol=0, atol=1e-10)
            assert together.d[row, k] == pytest.approx(vt[j] @ (x.T @ x / len(x)) @ vt[j], rel=1e-10)
            for name in ("s", "d", "u", "v"):
                np.testing.assert_allclose(
                    getattr(alone, name)[0, ..., k], getattr(together, name)[row, ..., k], rtol=1e-13, atol=1e-15
                )


def test_closed_form_modes_with_a_square_root_keep_their_digits(symbolic):
    """ctx-only's modes in closed form (a rational function and square roots of g) at four values of
    g: u v^T equals numpy's SVD of Sigma_yx from the data to 1e-10. context-1's smallest mode has a
    squared norm p + q sqrt(R) whose two terms cancel (near 1e9 each at g = 1/2, their sum near 1),
    which lost 1e-7 in float64 until written as (p^2 - q^2 R) / (p - q sqrt(R))."""
    from gdln.numeric.mode_values import pathway_mode_values

    derivation = symbolic.derivation("ctx-only")
    values = np.array([[0.25], [0.5], [1.5], [3.0]])
    inputs, targets = symbolic.dataset.batch(values)
    for pathway, network_pathway in zip(derivation.pathways, derivation.network.pathways):
        assert {m.kind for m in pathway.modes} == {"parametric"}
        modes = pathway_mode_values(pathway, derivation.parameters, f"ctx-only.{pathway.name}")(values)
        active, rows, columns = (
            list(network_pathway.active),
            list(network_pathway.outputs),
            list(network_pathway.inputs),
        )
        for point in range(len(values)):
            x, y = inputs[point][active][:, columns], targets[point][active][:, rows]
            u, s, vt = np.linalg.svd(y.T @ x / len(inputs[point]))
            for k in range(modes.s.shape[1]):
                j = int(np.argmin(np.abs(s - modes.s[point, k])))
                assert modes.s[point, k] == pytest.approx(s[j], rel=1e-12)
                outer = np.outer(modes.u[point, :, k], modes.v[point, :, k])
                np.testing.assert_allclose(outer, np.outer(u[:, j], vt[j]), rtol=0, atol=1e-10)


def test_overlap_norms_without_vectors_are_the_sums_over_modes(symbolic):
    """The symmetric groups' overlaps of pathways with implicit roots, computed from projectors as
    rational functions of g (Symmetry._span_norms), equal at g = 3/2 the sums over modes they stand
    for, from numpy's SVD of each pathway's correlations: sum_kl (alpha u_k^T E u_l)^2 on the
    outputs and sum_kl (beta v_k^T Sigma_x(q, p)^T v_l)^2 on the inputs, alpha = 1 or s, beta = 1
    or 1/s as the Gram side is the outputs' or the inputs'."""
    derivation = symbolic.derivation("common+ctx")
    symmetry = derivation.symmetry
    g = symbolic.task.parameter("g")
    value = sympy.Rational(3, 2)

    def numbers(matrix):
        return np.array(sympy.Matrix(matrix).subs(g, value).evalf(30).tolist(), dtype=float)

    def scaled(p):
        """``(alpha u, beta v)`` of every mode of pathway ``p``, as columns."""
        a = numbers(derivation.pathways[p].sigma_yx)
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        keep = s > 1e-12 * s[0]
        u, s, v = u[:, keep], s[keep], vt[keep].T
        left = a.shape[0] <= a.shape[1]
        return (u, v) if left else (u * s, v / s)

    pathways = derivation.network.pathways
    for p in range(len(pathways)):
        up, vp = scaled(p)
        for q in range(len(pathways)):
            if q == p:
                continue
            uq, vq = scaled(q)
            overlap = np.equal.outer(np.asarray(pathways[p].outputs), np.asarray(pathways[q].outputs)).astype(float)
            correlation = numbers(derivation.correlation_between(q, p))
            expected = (np.sum((up.T @ overlap @ uq) ** 2), np.sum((vp.T @ correlation.T @ vq) ** 2))
            found = [float(norm.subs(g, value)) for norm in symmetry._span_norms(p, q)]
            np.testing.assert_allclose(found, expected, rtol=1e-10, atol=1e-14)


#: the sweep's crossings (batched Tsit5 at rtol 1e-8, read off each step's interpolant) against
#: race's (diffrax at rtol 1e-10, brentq on fresh solves): the sweep's own tolerance
#: (tests/test_sweep.py's CROSSING_RTOL); measured within 5e-9 over 64 values of g
SWEEP_RELATIVE = 1e-6


@pytest.mark.slow
def test_sweep_s_batched_flows_are_the_race_at_each_g(symbolic):
    """Every candidate here is a reduced flow: the sweep solves all points' flows in one batched
    loop (:mod:`numeric.batched_race`); at ``g = 1/2, 3/2, 3`` its crossings and final losses
    are those of ``race`` (diffrax) at that ``g``."""
    from gdln.verify.sweep import finite_points, parse_axis, sweep_grid, width_race

    task = symbolic.task
    grid = sweep_grid(task, [parse_axis("g=0.5:3:6", task)], {})
    assert finite_points(symbolic, grid)[0].all()
    rows = np.flatnonzero(np.isin(grid.values[:, 0], [float(v) for v in VALUES]))
    assert len(rows) == len(VALUES)
    batched = width_race(symbolic, grid, rows)
    compared = 0
    for position, row in enumerate(rows):
        race = race_report(task, {"g": float(grid.values[row, 0])}, symbolic)
        for entry in race["networks"]:
            mine = batched[entry["name"]]
            for column, key in enumerate(("t_half", "t_90")):
                if entry[key] is None:
                    assert np.isnan(mine.crossings[position, column]), (entry["name"], key)
                else:
                    assert mine.crossings[position, column] == pytest.approx(entry[key], rel=SWEEP_RELATIVE)
                    compared += 1
            assert mine.final_loss[position] == pytest.approx(entry["final_loss"], rel=SWEEP_RELATIVE, abs=1e-12)
    assert compared >= 2 * len(rows) * 2  # crossings of every network at every g, all but a few t_90


@pytest.mark.slow
def test_sweep_s_reduced_flows_are_each_point_s_whole_flow(symbolic):
    """The sweep's race of the reduced flows (numeric.sweep.ode_race_points: every point in one
    batched solve, each flow written in its pathways' input spans, output span and derived modes:
    ctx-only 88 variables, not 441) equals, point by point, the race of the whole flow solved alone
    (ReducedFlow.race_ode(compress=False).race, diffrax), both at rtol 1e-10 per step: to
    CURVE_RELATIVE, the solvers' global error."""
    from gdln.numeric.sweep import ode_race_points

    training = symbolic.task.training
    values = np.array([[0.5], [1.5], [3.0]])
    for name in ("dense", "ctx-only"):
        prediction = symbolic.prediction(name)
        flow = prediction.engine
        logs = np.tile(np.asarray(prediction.log_initial_strengths(training.init_scale)), (len(values), 1))
        tau = np.full(len(values), training.tau)
        batch = ode_race_points(flow, values, logs, tau, training.epochs, rtol=1e-10)
        for k, row in enumerate(values):
            reduced, whole = (flow.race_ode(logs[k], training.tau, row, 1e-10, compress=c) for c in (True, False))
            assert reduced.y0.size < whole.y0.size
            alone = whole.race((0.5, 0.1), training.epochs)
            assert batch.initial_loss[k] == pytest.approx(alone.initial_loss, rel=1e-12)
            assert batch.final_loss[k] == pytest.approx(alone.final_loss, rel=CURVE_RELATIVE)
            for j, fraction in enumerate((0.5, 0.1)):
                if alone.crossings[fraction] is None:
                    assert np.isnan(batch.crossings[k, j])
                else:
                    assert batch.crossings[k, j] == pytest.approx(alone.crossings[fraction], rel=CURVE_RELATIVE)
