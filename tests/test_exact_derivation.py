"""Exact derivations at the scale of Sections 4-5 (issue: derivations a theorist can publish):
exact modes checked against numpy's SVD, exact zeros, grouping that does not depend on the
order of datapoints, outputs or modes, the reduced group system, readable text and LaTeX."""

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from gdln.cli import main
from gdln.derive.derivation import TAU, TIME, NetworkDerivation
from gdln.derive.spec import context_task, task_from_dict
from gdln.numeric.prediction import Prediction, TaskPredictions
from gdln.verify.derivation_report import derive_report

DECIMAL = re.compile(r"\d\.\d|\d[eE][+-]?\d")
STATE_NAME = re.compile(r"\b[ab]0?_[\w.+-]+")  # state symbols such as a_net.contexts-1-2.0


def _decimal(text):
    return DECIMAL.search(STATE_NAME.sub("x", text))


def _without_roots(text):
    """The text with each ``CRootOf(polynomial, k)`` named by a letter (its polynomial has no
    decimals: it is exact by construction, and this leaves the rest to be checked)."""
    return re.sub(r"CRootOf\([^()]*, \d+\)", "r", text)


SVD_TOLERANCE = 1e-12


def _context(items, contexts, blocks, candidates="context-subsets"):
    return task_from_dict(context_task(items, contexts, blocks, candidates), "<context>")


def _exprs(node):
    """Every ``expr`` string and every ODE, closed form and loss text in a derive report."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "ode", "closed_form", "loss", "odes") and isinstance(value, (str, list)):
                yield from ([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])
            else:
                yield from _exprs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _exprs(item)


def _check_against_numpy(task, network):
    """No decimal in any expression, and every singular value and d within 1e-12 of numpy."""
    models = TaskPredictions(task)
    report = derive_report(task, network, models=models)
    # CRootOf values included: their couplings, ODEs and loss are exact too (derive.algebraic)
    texts = list(_exprs(report.to_json()))
    assert texts  # the check reads the report's texts
    offenders = [e for e in texts if _decimal(_without_roots(e))]
    assert not offenders, offenders[:3]
    x = np.array(task.inputs, dtype=float)
    y = np.array(task.targets, dtype=float)
    n = x.shape[0]
    derivation = models.derivation(network)
    for entry, pathway_derivation in zip(report["pathways"], derivation.pathways):
        gate = np.zeros(n)
        gate[list(pathway_derivation.pathway.active)] = 1
        xs, ys = x[:, list(pathway_derivation.pathway.inputs)], y[:, list(pathway_derivation.pathway.outputs)]
        syx = (ys * gate[:, None]).T @ xs / n
        sx = (xs * gate[:, None]).T @ xs / n
        u, s, vt = np.linalg.svd(syx)
        expected = np.sort(s[s > 1e-10])
        derived = np.sort([v["value"] for v in entry["singular_values"]])
        np.testing.assert_allclose(derived, expected, rtol=0, atol=SVD_TOLERANCE)
        # d of each class: the trace of Sigma_x on numpy's right singular space of that value
        for c in entry["classes"]:
            space = vt[np.abs(s - c["s"]["value"]) < 1e-9][: c["multiplicity"]]
            assert space.shape[0] == c["multiplicity"]
            assert np.trace(space @ sx @ space.T) / c["multiplicity"] == pytest.approx(
                c["d"]["value"], abs=SVD_TOLERANCE
            )
    return derivation, report


@pytest.mark.parametrize(
    "items, contexts, blocks, network",
    [
        (8, 3, ["hierarchy"] * 3, "common+2"),
        (4, 2, ["chain", "clusters"], "common+all"),
        (4, 3, ["clusters", "hierarchy", "chain"], "common+2"),
    ],
)
def test_context_tasks_derive_exactly_and_match_numpy(items, contexts, blocks, network):
    derivation, report = _check_against_numpy(_context(items, contexts, blocks), network)
    if blocks == ["hierarchy"] * contexts:
        assert all(m.kind == "rational" for pathway_derivation in derivation.pathways for m in pathway_derivation.modes)
        assert not report["assumptions"]["algebraic_values"]


@pytest.mark.slow
def test_eight_item_mixed_structures_derive_exactly():
    """Chain and cluster blocks on 8 items give irreducible factors of degree 4 to 6: exact
    couplings (degree products up to 24), no decimal anywhere, values as numpy's."""
    derivation, report = _check_against_numpy(_context(8, 3, ["chain", "clusters", "hierarchy"]), "common+2")
    assert report["assumptions"]["algebraic_values"] and not report["assumptions"]["named_couplings"]


@pytest.mark.exhaustive  # about 4 minutes on 2 cores (modes 35 s, groups 90 s, the JSON 70 s)
def test_sixteen_item_mixed_structures_derive_exactly():
    """Chain and cluster blocks on 16 items give irreducible factors of degree 10 (common) and 8:
    their couplings are named exact numbers, and nothing in the JSON is a decimal."""
    derivation, report = _check_against_numpy(_context(16, 3, ["chain", "clusters", "hierarchy"]), "common+2")
    assert {a["degree"] for a in report["assumptions"]["algebraic_values"]} >= {10, 8}
    assert report["assumptions"]["named_couplings"] and len(report["coupling_numbers"]["couplings"]) > 100


@pytest.mark.slow
@pytest.mark.parametrize("items, contexts", [(8, 4), (8, 5), (16, 3)])
def test_larger_context_tasks_derive_exactly(items, contexts):
    network = f"common+{contexts - 1}"
    _check_against_numpy(_context(items, contexts, ["hierarchy"] * contexts), network)


def _numpy_modes(task, pathway):
    x, y = np.array(task.inputs, dtype=float), np.array(task.targets, dtype=float)
    gate = np.zeros(x.shape[0])
    gate[list(pathway.active)] = 1
    xs, ys = x[:, list(pathway.inputs)], y[:, list(pathway.outputs)]
    u, s, vt = np.linalg.svd((ys * gate[:, None]).T @ xs / x.shape[0])
    return u, s, vt


@pytest.mark.parametrize(
    "items, contexts, blocks, network",
    [(4, 2, ["chain", "clusters"], "common+all"), (4, 3, ["clusters", "hierarchy", "chain"], "common+2")],
)
def test_couplings_with_algebraic_modes_are_exact_and_match_numpy(items, contexts, blocks, network):
    """Tasks whose Gram blocks have irreducible cubics or quartics with three or four real roots
    (no real radical form): every coupling is exact (no Float), and each coupling between modes
    of non-repeated singular values equals ``(u_k . E_k^T E_l u_l)(v_l^T Sigma_x(l, k) v_k)``
    from numpy's SVD to 1e-10 (sign-free: u and v flip together)."""
    _check_couplings_against_numpy(_context(items, contexts, blocks), network)


def _check_couplings_against_numpy(task, network):
    derivation = NetworkDerivation(task, network)
    assert any(m.kind == "algebraic" for pathway_derivation in derivation.pathways for m in pathway_derivation.modes)
    coupling = derivation.coupling
    assert not any(e.has(sympy.Float) for e in coupling)
    x = np.array(task.inputs, dtype=float)
    n = x.shape[0]
    refs, checked = derivation.mode_refs, 0
    for row, ref_k in enumerate(refs):
        for column, ref_l in enumerate(refs):
            p, q = ref_k.pathway, ref_l.pathway
            if p == q:
                continue
            pathway_p, pathway_q = derivation.network.pathways[p], derivation.network.pathways[q]
            u_p, s_p, vt_p = _numpy_modes(task, pathway_p)
            u_q, s_q, vt_q = _numpy_modes(task, pathway_q)
            s_k, s_l = float(derivation.mode(ref_k).s), float(derivation.mode(ref_l).s)
            k, l = int(np.argmin(abs(s_p - s_k))), int(np.argmin(abs(s_q - s_l)))
            if np.sum(abs(s_p - s_k) < 1e-9) > 1 or np.sum(abs(s_q - s_l) < 1e-9) > 1:
                continue  # repeated value: the basis inside it is a choice
            overlap = np.array([[1.0 if a == b else 0.0 for b in pathway_q.outputs] for a in pathway_p.outputs])
            both = np.zeros(n)
            both[sorted(set(pathway_p.active) & set(pathway_q.active))] = 1
            xp, xq = x[:, list(pathway_p.inputs)], x[:, list(pathway_q.inputs)]
            cross = (xq * both[:, None]).T @ xp / n  # Sigma_x(l, k): inputs of q by inputs of p
            expected = (u_p[:, k] @ overlap @ u_q[:, l]) * (vt_q[l] @ cross @ vt_p[k])
            assert float(coupling[row, column]) == pytest.approx(expected, abs=1e-10)
            checked += 1
    assert checked > 20
    return derivation


@pytest.mark.slow
def test_named_couplings_equal_the_expanded_exact_ones(monkeypatch):
    """Above MAX_EXACT_COUPLING_DEGREE a coupling is a named exact number (CouplingNumber). With
    the cap lowered so that every coupling of the 4-item mixed task is named: each equals the
    expanded exact coupling to 100 digits, zeros stay exactly 0, they agree with numpy's SVD,
    survive pickling, print without decimals, and compile into the race."""
    import pickle

    from gdln.derive import derivation as derivation_module
    from gdln.derive.algebraic import CouplingNumber
    from gdln.numeric.compile import exact_constants

    document = context_task(4, 3, ["clusters", "hierarchy", "chain"], "context-subsets")
    for network in document["network"]:  # a name of its own: no derivation cached by another test is reused
        network["name"] = network["name"].replace("common", "named")
    task = task_from_dict(document, "<context>")
    expanded_derivation = NetworkDerivation(task, "named+2")
    expanded = expanded_derivation.coupling
    monkeypatch.setattr(derivation_module, "MAX_EXACT_COUPLING_DEGREE", 1)
    derivation = _check_couplings_against_numpy(task, "named+2")
    named = derivation.coupling_numbers
    assert len(named) > 20 and derivation.assumptions["named_couplings"]
    for a, b in zip(expanded, derivation.coupling):
        assert (a == 0) == (b == 0)
        assert abs(sympy.N(a - b, 100)) < sympy.Float(10) ** -90
    number = named[0]
    assert isinstance(number, CouplingNumber) and not number.free_symbols
    assert pickle.loads(pickle.dumps(number)) == number
    assert str(number) == f"c({number.row}, {number.column})" and not _decimal(str(derivation.rates[0]))
    assert sympy.latex(number) == f"c_{{{number.row},{number.column}}}"
    assert exact_constants([number])[0] == pytest.approx(
        float(sympy.N(expanded[number.row, number.column], 30)), rel=1e-15
    )
    models = TaskPredictions(task)
    report = derive_report(task, "named+2", models=models)
    entries = report["coupling_numbers"]
    assert len(entries["couplings"]) == len(named)
    assert not [e for e in _exprs(report.to_json()) if _decimal(_without_roots(e))]
    assert not [v for m in entries["mode_vectors"] for v in (m["u"], m["v"], m["n"]) if _decimal(_without_roots(v))]
    # the race compiles with the named numbers and gives the expanded derivation's curve
    ts = np.linspace(0.0, 400.0, 9)
    curve = models.prediction("named+2").loss_curve(ts, 1e-3, 1.0, [])
    reference = Prediction(expanded_derivation).loss_curve(ts, 1e-3, 1.0, [])
    assert curve[-1] < 0.9 * curve[0]
    np.testing.assert_allclose(curve, reference, rtol=1e-9, atol=0)


def test_algebraic_arithmetic_agrees_with_evaluation():
    """derive.algebraic's reduction, inverse and product against 50-digit evaluation."""
    from gdln.derive import algebraic

    x = sympy.Symbol("x")
    r, q = sympy.CRootOf(x**3 - 3 * x + 1, 0), sympy.CRootOf(x**4 - 5 * x**2 + x + 1, 1)
    expr = r**5 + 2 * r * q**6 + sympy.sqrt(17) * r**3 * q**4 + 1
    reduced = algebraic.from_generators(algebraic.to_generators(expr))
    assert sympy.degree(algebraic.to_generators(reduced), algebraic.to_generators(r)) < 3
    assert abs(sympy.N(reduced - expr, 50)) < 1e-40
    inverse = algebraic.reciprocal(r**2 + 1)
    assert not inverse.has(sympy.Pow) or all(p.exp > 0 for p in inverse.atoms(sympy.Pow))
    assert abs(sympy.N(inverse * (r**2 + 1) - 1, 50)) < 1e-40
    product = algebraic.exact_product(r**2 + sympy.sqrt(17), q**3 * r, 1 + sympy.sqrt(17) * q)
    assert abs(sympy.N(product - (r**2 + sympy.sqrt(17)) * q**3 * r * (1 + sympy.sqrt(17) * q), 50)) < 1e-40


def test_text_of_algebraic_numbers_prints_each_root_once(monkeypatch):
    """``as_text`` writes what ``sstr(order="none")`` writes, and puts each root's polynomial in
    order once per process, however often the root occurs (23 000 times in Section 4's report)."""
    from sympy.printing.str import StrPrinter

    from gdln.derive import algebraic

    x, a = sympy.symbols("x a")
    r, q = sympy.CRootOf(x**3 - 3 * x + 1, 0), sympy.CRootOf(x**4 - 5 * x**2 + x + 1, 1)
    expr = sum((k * r**k * a - sympy.sqrt(q) * r / (k + 1) for k in range(1, 12)), sympy.Integer(0))
    assert algebraic.as_text(expr) == sympy.sstr(expr, order="none")
    monkeypatch.setattr(algebraic, "_ROOT_TEXT", {}, raising=False)
    printed = []
    original = StrPrinter._print_ComplexRootOf

    def counting(self, root):
        printed.append(root)
        return original(self, root)

    monkeypatch.setattr(StrPrinter, "_print_ComplexRootOf", counting)
    text = algebraic.as_text(expr)
    assert sorted(printed, key=str) == sorted([r, q], key=str)  # once each
    assert text.count("CRootOf") == sum(isinstance(p, sympy.CRootOf) for p in sympy.preorder_traversal(expr)) > 10


def test_vanishing_couplings_are_exactly_zero():
    """Every coupling that numpy finds to be zero is the SymPy integer 0, not a tiny float."""
    derivation = NetworkDerivation(_context(8, 3, ["hierarchy"] * 3), "common+2")
    coupling = derivation.coupling
    numbers = np.array(coupling.evalf(30).tolist(), dtype=float)
    small = np.abs(numbers) < 1e-20
    assert small.any()
    assert all(coupling[i, j] == 0 for i, j in zip(*np.nonzero(small)))
    assert not any(isinstance(e, sympy.Float) for e in coupling)


def test_tied_singular_values_in_different_order_are_grouped():
    """Two pathways with singular values [Delta/4, 1/4] and [1/4, Delta/4] are one symmetric group
    (formerly they were not: their modes were compared in order after a numeric sort with ties)."""
    task = task_from_dict(
        {
            "parameters": {"Delta": 1.0},
            "data": {
                "inputs": [[1, 0], [0, 1], [1, 0], [0, 1]],
                "targets": [["Delta", 0], [0, 1], [1, 0], [0, "Delta"]],
            },
            "network": [
                {"name": "pair", "pathway": [{"name": "first", "active": [0, 1]}, {"name": "second", "active": [2, 3]}]}
            ],
        }
    )
    derivation = NetworkDerivation(task, "pair")
    assert [sympy.simplify(m.s) for m in derivation.pathways[0].modes] != [
        sympy.simplify(m.s) for m in derivation.pathways[1].modes
    ]
    assert derivation.symmetric_groups == ((0, 1),)
    system = derivation.reduced_system
    assert system.kind == "groups" and system.multiplicities == (2, 2)


@pytest.mark.slow
@settings(derandomize=True, deadline=None, max_examples=4)
@given(
    blocks=st.lists(st.sampled_from(["hierarchy", "chain", "clusters"]), min_size=3, max_size=3),
    data=st.data(),
)
def test_groups_and_classes_do_not_depend_on_order(blocks, data):
    """Permuting datapoints and output rows leaves the symmetric groups and singular classes alone."""
    spec = context_task(4, 3, blocks, "context-subsets")
    spec["network"] = [n for n in spec["network"] if n["name"] == "common+2"]
    n = len(spec["data"]["inputs"])
    outputs = len(spec["data"]["targets"][0])
    rows = data.draw(st.permutations(range(n)))
    columns = data.draw(st.permutations(range(outputs)))
    where = {old: new for new, old in enumerate(rows)}
    permuted = {
        "data": {
            "inputs": [spec["data"]["inputs"][r] for r in rows],
            "targets": [[spec["data"]["targets"][r][c] for c in columns] for r in rows],
            "contexts": [spec["data"]["contexts"][r] for r in rows],
        },
        "network": [
            {
                "name": net["name"],
                "pathway": [
                    {**p, "active": sorted(where[a] for a in p["active"])} if "active" in p else p
                    for p in net["pathway"]
                ],
            }
            for net in spec["network"]
        ],
    }

    def summary(task):
        d = NetworkDerivation(task, "common+2")
        names = [p.name for p in d.network.pathways]
        groups = sorted(sorted(names[p] for p in g) for g in d.symmetric_groups)
        classes = {
            names[p]: sorted((str(c.s), c.multiplicity, str(c.input_variance)) for c in d.symmetry.classes[p])
            for p in range(len(names))
        }
        return groups, classes, d.group_reduction.exact

    assert summary(task_from_dict(spec)) == summary(task_from_dict(permuted))


def test_group_system_solves_its_ode_and_matches_the_modes():
    """On the staged second stage of Section 5 (K = 3) the emitted group system has one logistic
    per class; each solves its group ODE, and the group loss equals the per-mode loss."""
    from gdln.derive.staged import StagedDerivation

    second = StagedDerivation(_context(8, 3, ["hierarchy"] * 3), "common+2").second_stage
    system = second.reduced_system
    assert system.kind == "groups" and len(system.variables) == 3 and system.multiplicities == (3, 6, 12)
    assert system.closed_forms is not None and not system.nonzero_couplings
    for x, rate, closed in zip(system.variables, system.rates, system.closed_forms):
        residual = sympy.diff(closed, TIME) - rate.subs(x, closed)
        point = {TIME: sympy.Rational(37, 3), TAU: 100, **{b: sympy.Rational(1, 1000) for b in system.initial}}
        assert abs(sympy.N(residual.subs(point), 30)) < 1e-25
    values = {x: sympy.Rational(k + 2, 7) for k, x in enumerate(system.variables)}
    per_mode = {
        a: values[system.variables[second.group_variable(r)]] for a, r in zip(second.strengths, second.mode_refs)
    }
    assert sympy.simplify(system.loss.subs(values) - second.loss_in_strengths.subs(per_mode)) == 0


def test_default_text_fits_two_screens_and_full_keeps_the_dump(capsys, tmp_path):
    path = tmp_path / "k3.toml"
    from gdln.derive.spec import to_toml

    path.write_text(to_toml(context_task(8, 3, ["hierarchy"] * 3, "context-subsets")))
    assert main(["derive", str(path), "--network", "common+2"]) == 0
    summary = capsys.readouterr().out
    assert len(summary.splitlines()) <= 120
    assert "sqrt(165)/12" in summary and "4 modes:" in summary and "contexts 1, 2" in summary
    assert main(["derive", str(path), "--network", "common+2", "--full"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > len(summary.splitlines())


def _pdflatex(tex, cwd):
    if shutil.which("pdflatex") is None:
        if os.environ.get("GDLN_REQUIRE_PDFLATEX"):
            pytest.fail("pdflatex is required here but not installed")
        pytest.skip("pdflatex not installed")
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", tex],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    log = (cwd / tex.replace(".tex", ".log")).read_text(errors="replace")
    pages = int(re.search(r"Output written on .*\((\d+) pages?", log).group(1))
    overfull = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide", log)]
    return pages, overfull


def test_latex_documents_compile_short_and_within_the_margins(capsys, tmp_path):
    from gdln.derive.spec import to_toml

    k3 = tmp_path / "k3.toml"
    k3.write_text(to_toml(context_task(8, 3, ["hierarchy"] * 3, "context-subsets")))
    assert main(["derive", str(k3), "--network", "common+2", "--latex", str(tmp_path / "k3.tex")]) == 0
    assert main(["derive", "examples/xor.toml", "--network", "xor", "--latex", str(tmp_path / "xor.tex")]) == 0
    capsys.readouterr()
    xor_text = (tmp_path / "xor.tex").read_text()
    assert "\\documentclass" in xor_text and "\\frac{2 \\sqrt{6}}{3}" in xor_text
    pages, overfull = _pdflatex("k3.tex", tmp_path)
    assert pages <= 6 and all(w <= 10 for w in overfull), (pages, overfull)
    pages, overfull = _pdflatex("xor.tex", tmp_path)
    assert pages <= 2 and all(w <= 10 for w in overfull), (pages, overfull)


@pytest.mark.slow
def test_section4_reports_algebraic_numbers_with_their_degree(capsys):
    """The ring and cross blocks of Section 4 give irreducible factors of degree 8 and 7: exact
    CRootOf singular values, reported with their degree and numeric value."""
    assert main(["derive", "examples/section4_context.toml", "--network", "common+2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    algebraic = report["assumptions"]["algebraic_values"]
    assert {(a["pathway"], a["degree"]) for a in algebraic} >= {("common", 8), ("contexts-1-2", 7)}
    common = report["pathways"][0]
    assert any(c["kind"] == "algebraic" and c["degree"] == 8 for c in common["classes"])
    assert all("CRootOf" in v["expr"] or not _decimal(v["expr"]) for v in common["singular_values"])
    # couplings between two roots whose degrees multiply to more than MAX_EXACT_COUPLING_DEGREE
    # (8 x 7 here) are named exact numbers, and assumptions names exactly those pathway pairs
    named = {tuple(sorted(pair)) for pair in report["assumptions"]["named_couplings"]}
    assert named == {("common", "contexts-1-2"), ("common", "contexts-2-3"), ("contexts-1-2", "contexts-2-3")}
    assert report["coupling_numbers"]["couplings"]
    assert not [e for e in _exprs(report) if _decimal(_without_roots(e))]
