"""The command line: JSON contracts, the race on XoR and its variants, and bad input."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gdln.cli import main
from gdln.derive.modes import vanishes
from gdln.derive.spec import load_spec, parse_expression

from .helpers import XOR_SPEC

DELTA_STAR = math.sqrt(8 / 3)  # Appendix C, solved by hand: Delta^2 = 2 + Delta^2/4


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_race_json_contract_and_derived_crossover(capsys):
    report = run_json(capsys, "race", str(XOR_SPEC))
    assert set(report) >= {"parameters", "networks", "winner", "crossovers"}
    (crossover,) = report["crossovers"]
    assert crossover["networks"] == ["linear", "xor"] and crossover["parameter"] == "Delta"
    assert crossover["value"] == pytest.approx(DELTA_STAR, rel=1e-12)
    for network in report["networks"]:
        assert set(network) >= {"name", "speed", "t_half", "t_90", "pathways"}
        assert network["t_half"] < network["t_90"]
        assert {"expr", "value"} <= set(network["pathways"][0]["singular_values"][0])


@pytest.mark.parametrize("delta, winner", [(0.5, "xor"), (1.2, "xor"), (2.2, "linear"), (4.0, "linear")])
def test_winner_switches_at_the_crossover(capsys, delta, winner):
    assert run_json(capsys, "race", str(XOR_SPEC), "--set", f"Delta={delta}")["winner"] == winner


VARIANT = """
title = "XoR variant"
[parameters]
Delta = 1.0
[data]
inputs = {inputs}
targets = {targets}
[training]
learning_rate = 0.01
init_scale = 1e-4
epochs = {epochs}
hidden_units = 128
[[network]]
name = "xor"
{xor}
[[network]]
name = "linear"
{linear}
"""


def variant(tmp_path, scale=1, target_scale=1, order=(0, 1, 2, 3), extra_feature=None):
    base = [
        [scale, scale, f"{scale}*Delta/2"],
        [scale, -scale, f"-{scale}*Delta/2"],
        [-scale, scale, f"-{scale}*Delta/2"],
        [-scale, -scale, f"{scale}*Delta/2"],
    ]
    labels = [1, -1, -1, 1]
    if extra_feature is not None:
        base = [row + [extra_feature[n]] for n, row in enumerate(base)]
    inputs = [base[n] for n in order]
    targets = [[target_scale * labels[n]] for n in order]
    position = {n: k for k, n in enumerate(order)}
    xor = "\n".join(f'[[network.pathway]]\nname = "p{n}"\nactive = [{position[n]}]' for n in range(4))
    linear = "\n".join(
        f'[[network.pathway]]\nname = "{c}"\nactive = [{position[a]}, {position[b]}]'
        for c, (a, b) in (("pos", (0, 3)), ("neg", (1, 2)))
    )
    path = tmp_path / "variant.toml"
    path.write_text(
        VARIANT.format(inputs=json.dumps(inputs), targets=json.dumps(targets), epochs=40000, xor=xor, linear=linear)
    )
    return path


def numeric_crossover(scale, extra):
    """Root of the two networks' largest singular values, from numpy's SVD of the same data."""
    from scipy.optimize import brentq

    def speeds(delta):
        x = np.array([[1, 1, delta / 2], [1, -1, -delta / 2], [-1, 1, -delta / 2], [-1, -1, delta / 2]]) * scale
        if extra is not None:
            x = np.hstack([x, np.array(extra, float)[:, None]])
        y = np.array([[1.0], [-1.0], [-1.0], [1.0]])
        svd = lambda g: np.linalg.svd(y[g].T @ x[g] / 4, compute_uv=False)[0]  # noqa: E731
        return max(svd([0, 3]), svd([1, 2])) - max(svd([n]) for n in range(4))

    return brentq(speeds, 1e-3, 50)


@pytest.mark.slow
@pytest.mark.parametrize(
    "scale, target_scale, order, extra",
    [
        (3, 1, (0, 1, 2, 3), None),
        (1, 5, (2, 0, 3, 1), None),
        (2, 1, (3, 2, 1, 0), [1, 1, 1, 1]),
        (1, 1, (1, 3, 0, 2), [1, 1, -1, -1]),
    ],
)
def test_variants_derive_their_own_crossover_and_winner(capsys, tmp_path, scale, target_scale, order, extra):
    path = variant(tmp_path, scale, target_scale, order, extra)
    report = run_json(capsys, "race", str(path))
    (crossover,) = report["crossovers"]
    star = numeric_crossover(scale, extra)
    assert crossover["value"] == pytest.approx(star, rel=1e-9)
    below = run_json(capsys, "race", str(path), "--set", f"Delta={0.5 * star}")
    above = run_json(capsys, "race", str(path), "--set", f"Delta={1.6 * star}")
    assert (below["winner"], above["winner"]) == ("xor", "linear")


def test_derive_json_contract(capsys):
    report = run_json(capsys, "derive", str(XOR_SPEC), "--network", "linear")
    assert report["network"] == "linear"
    assert [p["name"] for p in report["pathways"]] == ["positive", "negative"]
    positive = report["pathways"][0]
    delta = load_spec(XOR_SPEC).parameter("Delta")
    # compared by meaning: the emitted text parsed back (without evaluating code) minus the expected value vanishes
    value = parse_expression(positive["singular_values"][0]["expr"], {"Delta": delta}, "report", "expr")
    assert vanishes(value - delta / 4) and positive["singular_values"][0]["value"] == pytest.approx(0.25)
    assert positive["shape"] == [1, 3] and positive["rank"] == 1
    assert report["assumptions"]["mutually_diagonalisable"] is True
    assert "exp" in report["loss"]["expr"]


@pytest.mark.slow
def test_simulate_writes_curves(capsys, tmp_path):
    out = tmp_path / "curves.npz"
    report = run_json(
        capsys, "simulate", str(XOR_SPEC), "--model", "xor", "--seeds", "2", "--epochs", "3000", "--out", str(out)
    )
    assert report["model"] == "xor" and report["seeds"] == 2 and len(report["t_half"]) == 2
    data = np.load(out)
    assert data["losses"].shape == (2, 3001)
    assert data["losses"][0, 0] == pytest.approx(0.5, rel=1e-3)
    assert all(final < 1e-3 for final in report["loss_final"])


GOOD = XOR_SPEC.read_text()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("title = [", "toml: malformed TOML"),
        (GOOD.replace('[-1, -1, "Delta/2"]]', "[-1, -1]]"), "data.inputs[3]: row has 2 entries"),
        (
            GOOD.replace("targets = [[1], [-1], [-1], [1]]", "targets = [[1], [-1], [-1]]"),
            "data.targets: 3 rows but data.inputs has 4",
        ),
        (GOOD.replace('"Delta/2"], [1, -1', '"Gamma/2"], [1, -1'), "data.inputs[0][2]: unknown parameter 'Gamma'"),
        (GOOD.replace('"Delta/2"], [1, -1', '"Delta.real"], [1, -1'), "data.inputs[0][2]: attribute access"),
        (GOOD.replace('"Delta/2"], [1, -1', '"system(1)"], [1, -1'), "data.inputs[0][2]: unknown function 'system'"),
        (
            GOOD.replace("active = [0, 3]", "active = [0, 7]"),
            "network[linear].pathway[0].active[1]: index 7 out of range",
        ),
        (
            GOOD.replace('name = "xor"\n', 'name = "xor"\npathway = []\n', 1).split(
                '[[network.pathway]]\nname = "point0"'
            )[0],
            "network[xor].pathway: a network needs at least one",
        ),
        (
            GOOD.replace("targets = [[1], [-1], [-1], [1]]", "targets = [[1], [-1], [-1], [inf]]"),
            "data.targets[3][0]: non-finite number inf",
        ),
        (GOOD.replace("init_scale = 1e-4", "init_scale = nan"), "training.init_scale: non-finite number nan"),
        (GOOD.replace("Delta = 1.0", "Delta = inf"), "parameters.Delta: non-finite number inf"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_key(capsys, tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert main(["race", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"gdln: error: {path}: ")
    assert fragment in err
    assert "\n" not in err


def test_bad_set_and_unknown_network(capsys):
    assert main(["race", str(XOR_SPEC), "--set", "Gamma=1"]) == 2
    assert "unknown parameter 'Gamma'" in capsys.readouterr().err
    assert main(["race", str(XOR_SPEC), "--set", "Delta=__import__('os')"]) == 2
    assert "Delta" in capsys.readouterr().err
    assert main(["derive", str(XOR_SPEC), "--network", "nope"]) == 2
    assert "no network named 'nope'" in capsys.readouterr().err


def test_real_process_exits_2_without_traceback(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[data]\ninputs = [[1, \"__import__('os').system('touch PWNED')\"]]\ntargets = [[1]]\n")
    gdln = shutil.which("gdln") or str(Path(sys.executable).parent / "gdln")
    result = subprocess.run([gdln, "race", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "PWNED").exists()


def test_latex_fragment_compiles_with_pdflatex(capsys, tmp_path):
    fragment = tmp_path / "xor.tex"
    assert main(["derive", str(XOR_SPEC), "--network", "xor", "--latex-fragment", str(fragment)]) == 0
    text = fragment.read_text()
    assert "\\Sigma^{yx}" in text and "Crossovers" in text and "\\frac{2 \\sqrt{6}}{3}" in text
    if shutil.which("pdflatex") is None:
        if os.environ.get("GDLN_REQUIRE_PDFLATEX"):
            pytest.fail("pdflatex is required here but not installed")
        pytest.skip("pdflatex not installed")
    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n\\input{xor.tex}\n\\end{document}\n"
    )
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tmp_path / "main.pdf").stat().st_size > 1000


def test_align_reports_patterns_and_writes_a_spec_that_race_accepts(capsys, tmp_path):
    written = tmp_path / "aligned.toml"
    report = run_json(capsys, "align", str(XOR_SPEC), "--set", "Delta=3", "--seeds", "2", "--write-spec", str(written))
    assert report["network"] == "aligned" and len(report["time"]) == 2 and report["ended"] == [True, True]
    assert report["written"] == str(written)
    assert report["unmatched_units"]["aligned"] == [0, 0]
    # most units settle on one class each: the linear ReLN's gates (Delta = 3 is above Delta*)
    top = {tuple(p["active"]) for p in report["patterns"][:2]}
    assert top == {(0, 3), (1, 2)}
    task = load_spec(written)
    network = task.network("aligned")
    assert {p.active for p in network.pathways} == {tuple(p["active"]) for p in report["patterns"]}
    assert [p.units for p in network.pathways] == [max(p["units"]) for p in report["patterns"]]
    race = run_json(capsys, "race", str(written), "--set", "Delta=3")
    assert "aligned" in race["ranking"]


def test_verify_refuses_descent_without_the_alignment_phase(capsys):
    code = main(["verify", str(XOR_SPEC), "--initial-conditions", "width", "--time", "descent", "--epochs", "10"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--time" in err and "xor.toml" in err


def test_zero_shot_help_states_the_report_defaults(capsys):
    """``gdln zero-shot --help`` once said ``--seeds`` defaulted to "the task's"; it names the
    defaults the report itself takes."""
    import inspect

    from gdln.verify.graphs import zero_shot_report

    with pytest.raises(SystemExit):
        main(["zero-shot", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = inspect.signature(zero_shot_report).parameters
    assert f"seeds per point (default {defaults['seeds'].default})" in text
    assert f"training epochs (default {defaults['epochs'].default})" in text


# --- startup (issue 37): --help and --version load neither SymPy nor JAX -------------------------


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_help_and_version_import_neither_jax_nor_sympy(flag):
    """`gdln --help` and `gdln --version` answer in a fraction of a second: the packages'
    re-exports (derive.lazy) and the commands' heavy imports wait until a command runs."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gdln", flag], capture_output=True, text=True, check=True
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "gdln.cli" in imported
    heavy = {module for module in imported if module.split(".")[0] in {"jax", "jaxlib", "sympy", "numpy", "scipy"}}
    assert heavy == set()
