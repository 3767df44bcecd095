"""What ``derive``, ``race``, ``verify`` and ``unique`` print on a terminal: algebraic numbers by
their value, kind and degree (never a ``CRootOf`` polynomial: JSON keeps the exact form),
equations pretty-printed on a terminal and plain otherwise, units and counts labelled.

The printed numbers are read back and compared with the JSON report's, not with fixed text."""

import argparse
import json
import re

import pytest
import sympy

from gdln.cli import main
from gdln.commands.equations import equation_style, equation_text
from gdln.derive.modes import vanishes
from gdln.derive.spec import context_task, load_spec, parse_expression, to_toml
from gdln.numeric.prediction import TaskPredictions

from .helpers import ROOT, XOR_SPEC

SECTION4 = ROOT / "examples" / "section4_context.toml"
NUMBER = r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?"


@pytest.fixture(scope="module")
def algebraic_spec(tmp_path_factory):
    """A small context task whose common pathway has singular values with no radical form
    (``s^2`` roots of an irreducible cubic), interacting pathways and no parameters."""
    path = tmp_path_factory.mktemp("spec") / "small.toml"
    path.write_text(to_toml(context_task(4, 3, ["clusters", "clusters", "chain"], "context-subsets")))
    return path


def text_and_json(capsys, *argv):
    assert main([*argv]) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def printed_value(text: str) -> float:
    """The value a printed entry gives: the number after its last ``=``, else its first number."""
    tail = text.rsplit("=", 1)[-1]
    return float(re.search(NUMBER, tail).group())


def check_value(text: str, entry: dict) -> None:
    """A printed entry gives the JSON entry's value (10 digits for algebraic numbers, 6 else)
    and, for an algebraic number, its kind and degree."""
    digits = 10 if "algebraic" in entry else 6
    assert printed_value(text) == pytest.approx(entry["value"], rel=2 * 10.0 ** (1 - digits))
    if "algebraic" in entry:
        assert "algebraic" in text and f"degree {entry['algebraic']['degrees'][0]}" in text


def test_derive_gives_algebraic_numbers_by_value_kind_and_degree(capsys, algebraic_spec):
    text, report = text_and_json(capsys, "derive", str(algebraic_spec), "--network", "common+2")
    assert "CRootOf" in json.dumps(report) and "CRootOf" not in text
    lines = text.splitlines()
    classes = [c for p in report["pathways"] for c in p["classes"]]
    rows = [re.match(r"\s+(\d+) modes?:\s+s = (.*), d = (.*)$", line) for line in lines]
    rows = [row for row in rows if row]
    assert len(rows) == len(classes)
    assert any("algebraic" in c["s"] for c in classes)
    for row, c in zip(rows, classes):
        count, s, d = row.groups()
        assert int(count) == c["multiplicity"] and row.group(0).split(":")[0].strip().endswith(
            "mode" if c["multiplicity"] == 1 else "modes"
        )
        check_value(s, c["s"])
        assert printed_value(d) == pytest.approx(c["d"]["value"], rel=1e-5)
    (speed,) = [line for line in lines if line.startswith("speed")]
    check_value(speed, report["speed"])
    assert "s^2 of degree 3" in speed  # the speed is a singular value: its square is the root
    # the pathways interact with no closed form: the system is the reduced flow the race integrates
    assert report["system"]["kind"] == "reduced flow"
    blocks = re.search(r"coupling blocks: (.*) \(--full or --json lists them\)", text).group(1).split("; ")
    assert [b.rsplit(" ", 1)[0] for b in blocks] == [c["name"] for c in report["system"]["coupling"]]


def test_derive_full_names_no_root_by_its_polynomial(capsys, algebraic_spec):
    """``--full`` of a network whose system is the reduced flow prints its loss and blocks, and
    never an algebraic number's CRootOf polynomial: the modes ``U(p)``, ``V(p)`` in such numbers
    are left to the JSON, which holds them exactly."""
    text, report = text_and_json(capsys, "derive", str(algebraic_spec), "--network", "common+2", "--full")
    system = report["system"]
    assert system["kind"] == "reduced flow" and report["loss"]["expr"] == system["loss"]
    assert "CRootOf" in json.dumps(system["pathways"]) and "CRootOf" not in text
    loss = text.split("\n  loss\n", 1)[1].splitlines()
    assert loss[0].strip() == system["loss"]
    for block in system["coupling"]:
        assert f"{block['name']} = {block['expr']}" in text


@pytest.mark.slow
def test_race_and_unique_on_algebraic_speeds(capsys, algebraic_spec):
    text, report = text_and_json(capsys, "race", str(algebraic_spec))
    assert "CRootOf" in json.dumps(report["networks"][0]["speed"]) and "CRootOf" not in text
    assert not report["parameters"] and "parameters" not in text  # no empty "parameters:" line
    # the networks share their speed: said once, with its value and kind, not as a column
    (shared,) = [line for line in text.splitlines() if "same speed" in line]
    check_value(shared, report["networks"][0]["speed"])
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith("  common")}
    for network in report["networks"]:
        row = rows[network["name"]]
        assert float(row[1]) == pytest.approx(network["t_half"], rel=1e-5)
        assert float(row[2]) == pytest.approx(network["t_90"], rel=1e-5)
        assert float(row[3].rstrip("%")) == pytest.approx(100 * network["final_loss"], rel=1e-2)
    assert "% of the initial loss" in text
    unique, found = text_and_json(capsys, "unique", str(algebraic_spec))
    assert "CRootOf" not in unique
    assert f"{found['automorphisms']} automorphism{'s' if found['automorphisms'] != 1 else ''} of" in unique
    lead = re.search(rf"lead over the next orbit: ({NUMBER})% of its t_90", unique)
    assert float(lead.group(1)) == pytest.approx(100 * found["margin"], rel=1e-2)


def test_verify_labels_its_deviation_as_a_share_of_the_initial_loss(capsys):
    text, report = text_and_json(capsys, "verify", str(XOR_SPEC), "--seeds", "1", "--epochs", "100")
    assert "in % of the initial loss" in text and "parameters: Delta = 1" in text
    names = tuple(f"  {n['name']} " for n in report["networks"])
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith(names)}
    for network in report["networks"]:
        assert float(rows[network["name"]][1].rstrip("%")) == pytest.approx(100 * network["max_deviation"], abs=0.01)


def test_derive_counts_and_equations_plain(capsys):
    """One shared trajectory is "1 shared trajectory"; the plain ODE is ``db/dt = rhs`` and its
    right-hand side, read back, is the derivation's."""
    text, report = text_and_json(capsys, "derive", str(XOR_SPEC), "--network", "linear", "--plain")
    (variable,) = report["system"]["variables"]
    assert "1 shared trajectory (" in text and f"{variable['multiplicity']} modes follow it" in text
    (ode,) = [line.strip() for line in text.splitlines() if line.strip().startswith(f"d{variable['name']}/dt = ")]
    task = load_spec(XOR_SPEC)
    system = TaskPredictions(task).derivation("linear").reduced_system
    b, tau = sympy.Symbol("b", positive=True), sympy.Symbol("tau", positive=True)
    rhs = parse_expression(
        ode.split(" = ", 1)[1].replace(variable["name"], "b"),
        {"b": b, "tau": tau, "Delta": task.parameter("Delta")},
        "text",
        "ode",
    )
    assert vanishes(rhs - system.rates[0].xreplace({system.variables[0]: b}))
    assert "groups of symmetric pathways: positive = negative" in text


def test_derive_pretty_prints_equations_on_a_terminal(capsys, monkeypatch):
    """On a terminal the ODE and closed form are SymPy's pretty printing of the derivation's own
    equations; ``--plain``, or output that is not a terminal, gives one line."""

    class Terminal:
        def __init__(self, encoding):
            self.encoding = encoding

        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdout", Terminal("utf-8"))
    assert equation_style(argparse.Namespace(plain=False)) == "pretty"
    assert equation_style(argparse.Namespace(plain=True)) == "plain"
    monkeypatch.setattr("sys.stdout", Terminal("ascii"))
    assert equation_style(argparse.Namespace(plain=False)) == "ascii"
    monkeypatch.undo()
    assert equation_style(argparse.Namespace(plain=False)) == "plain"  # captured: not a terminal
    monkeypatch.setattr("gdln.commands.equations.equation_style", lambda args: "pretty")
    assert main(["derive", str(XOR_SPEC), "--network", "xor"]) == 0
    text = capsys.readouterr().out
    system = TaskPredictions(load_spec(XOR_SPEC)).derivation("xor").reduced_system
    (x,) = system.variables
    function = sympy.Function(x.name)(sympy.Symbol("t", nonnegative=True))
    for lhs, rhs in (
        (sympy.Derivative(function, function.args[0]), system.rates[0]),
        (function, system.closed_forms[0]),
    ):
        expected = sympy.pretty(sympy.Eq(lhs, rhs, evaluate=False), use_unicode=True, wrap_line=False)
        assert len(expected.splitlines()) > 3
        assert "\n".join("    " + line for line in expected.splitlines()) in text


def test_equations_name_algebraic_numbers_by_value():
    """An equation with a root that has no radical form names it ``r1`` and gives its value and
    degree: in every style, never the ``CRootOf`` polynomial."""
    x, t = sympy.symbols("x t")
    root = sympy.CRootOf(x**3 - 3 * x + 1, 2)
    b = sympy.Function("b")(t)
    for style in ("plain", "pretty", "ascii"):
        text = equation_text(sympy.Derivative(b, t), sympy.sqrt(root) * b - root * b**2, style)
        assert "CRootOf" not in text and "r1" in text
        legend = re.search(rf"r1 = ({NUMBER}) \(algebraic of degree 3\)", text)
        assert float(legend.group(1)) == pytest.approx(float(root), rel=1e-9)


@pytest.mark.slow
def test_section4_default_text_has_no_crootof(capsys):
    """Section 4's speeds and most singular values have no radical form (degrees 8 and 7): the
    default text of derive, race and verify gives them by value, never as CRootOf. (``unique``'s
    text prints counts, t_90 and margins, no derived number: its Section 4 run is left out.)"""
    outputs = {}
    for argv in (
        ["derive", str(SECTION4), "--network", "common+1"],
        ["race", str(SECTION4)],
        ["verify", str(SECTION4), "--seeds", "1", "--epochs", "200"],
    ):
        assert main(argv) == 0
        outputs[argv[0]] = capsys.readouterr().out
    assert not [command for command, text in outputs.items() if "CRootOf" in text]
    assert "1.142708599 (algebraic, s^2 of degree 8)" in outputs["derive"]  # Section 4's speed
    assert "same speed (largest singular value s): 1.142708599" in outputs["race"]
    assert not [command for command, text in outputs.items() if "parameters:" in text]


def test_race_gives_a_parametric_maximum_speed_by_its_value(capsys, tmp_path):
    """A network whose speed is the largest of singular values in a parameter (``Max(1/2, g/2)``
    here; the three-context example's run a line long) is given by its value in race's table,
    marked and explained once; a single expression stays as it is."""
    document = {
        "title": "two items, g scales the first target",
        "parameters": {"g": 3.0},
        "data": {"inputs": [[1, 0], [0, 1]], "targets": [["g", 0], [0, 1]]},
        "training": {"learning_rate": 0.05, "init_scale": 0.001, "epochs": 400, "hidden_units": 8, "seeds": 1},
        "network": [
            {"name": "split", "pathway": [{"name": "first", "active": [0]}, {"name": "second", "active": [1]}]},
            {"name": "one", "pathway": [{"name": "first", "active": [0]}]},
        ],
    }
    spec = tmp_path / "two.toml"
    spec.write_text(to_toml(document))
    text, report = text_and_json(capsys, "race", str(spec))
    split, one = report["networks"]
    assert split["speed"]["expr"].startswith("Max(") and not one["speed"]["expr"].startswith("Max(")
    row = next(line for line in text.splitlines() if line.strip().startswith("split"))
    assert f"{split['speed']['value']:.6g} (a maximum)" in row and "Max(" not in text
    assert text.count("a maximum: the largest of the network's singular values") == 1
    assert f"{one['speed']['expr']} = " in next(line for line in text.splitlines() if line.strip().startswith("one "))


def test_a_sweep_whose_seeds_decide_nowhere_says_so_without_counting_zero(capsys):
    """A sweep whose checked points are none of them decided says so in words, not 'of the 0
    checked points ...: followed at 0'."""
    from gdln.commands.sweep import render_agreement

    counts = {"checked": 0, "agree": 0, "aligned_agree": 0}
    report = {
        "validity": 0.05,
        "agreement": {
            "checked": 2,
            "agree": 1,
            "aligned_agree": 1,
            "within_assumptions": {"checked": 2, "agree": 1, "aligned_agree": 1},
            "decided": counts,
        },
    }
    points = [{"checked": {"max_deviation": 0.01}}, {"checked": {"max_deviation": 0.2}}]
    render_agreement(report, points)
    out = capsys.readouterr().out
    assert "of the 0 " not in out
    assert "none of the checked points is one where the seeds decide" in out
    assert "stays within 5% of the initial loss at 1 of them" in out
