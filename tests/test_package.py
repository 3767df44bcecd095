"""gdln as a package: one import name, its version, the shipped examples, help on every option."""

import argparse
import tomllib

import pytest

from gdln.cli import build_parser, main

from .helpers import ROOT


def _options(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        else:
            yield path, action


def test_every_option_has_help():
    missing = [
        f"{' '.join(path)} {action.option_strings or action.dest}"
        for path, action in _options(build_parser())
        if not action.help
    ]
    assert missing == []


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    name, version = capsys.readouterr().out.split()
    assert name == "gdln" and version[0].isdigit()


def test_examples_are_the_repository_specs(capsys, tmp_path):
    assert main(["examples"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()[:-1]}
    assert listed == {path.stem for path in (ROOT / "examples").glob("*.toml")}
    target = tmp_path / "xor.toml"
    assert main(["examples", "xor", "--out", str(target)]) == 0
    assert tomllib.loads(target.read_text()) == tomllib.loads((ROOT / "examples" / "xor.toml").read_text())
    assert main(["derive", str(target), "--network", "xor", "--json"]) == 0


def test_unknown_example_is_one_line(capsys):
    assert main(["examples", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "xor" in err[0]


def test_public_api_names_resolve_lazily():
    """``import gdln`` loads no layer; each public name is the object its module defines."""
    import importlib
    import subprocess
    import sys

    probe = "import gdln, sys; print(any(m.startswith(('gdln.derive', 'jax', 'sympy')) for m in sys.modules))"
    assert (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )
    import gdln

    assert sorted(gdln.__all__) == sorted(gdln._EXPORTS)
    for name in gdln.__all__:
        module = importlib.import_module(gdln._EXPORTS[name])
        assert getattr(gdln, name) is getattr(module, name)


def test_reports_show_as_tables_and_stay_dicts():
    import json

    from gdln.derive.spec import load_spec
    from gdln.verify.race import race_report

    task = load_spec(ROOT / "examples" / "xor.toml")
    report = race_report(task, {"Delta": 2.0})
    table = report._repr_markdown_().splitlines()
    assert table[0] == "**winner: linear** at Delta = 2"
    rows = [line for line in table if line.startswith("| linear") or line.startswith("| xor")]
    assert len(rows) == 2
    crossover = [line for line in table if line.startswith("crossover linear / xor")]
    assert crossover and "Delta* = 1.633" in crossover[0]
    # read as a mapping, the report's keys are its JSON's; its crossovers are typed records now,
    # each equal to its JSON dictionary (to_json() is what json.dumps takes)
    assert dict(report) == report.to_json() == json.loads(json.dumps(report.to_json()))
    assert report.crossovers[0].faster_below == report["crossovers"][0]["faster_below"]


def test_derivation_latex_display_compiles(tmp_path):
    """A derivation's Jupyter display is the body of --latex-fragment; it compiles with pdflatex."""
    from gdln.derive.derivation import NetworkDerivation
    from gdln.derive.latex import to_latex
    from gdln.derive.spec import load_spec

    from .test_latex import pdflatex

    derivation = NetworkDerivation(load_spec(ROOT / "examples" / "xor.toml"), "xor")
    body = derivation._repr_latex_()
    assert body == to_latex(derivation)
    path = tmp_path / "main.tex"
    path.write_text(
        "\\documentclass{article}\n\\usepackage{amsmath,amssymb}\n\\begin{document}\n" + body + "\\end{document}\n"
    )
    pages, _ = pdflatex(path)
    assert pages >= 1
