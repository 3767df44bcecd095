"""Training settings on the command line (issue 49, item 4): ``--set`` takes ``init_scale``,
``learning_rate``, ``hidden_units``, ``epochs`` and ``seeds`` beside the spec's parameters, with
the limits of a spec's ``[training]`` table and of ``sweep --grid``; the output says what was set.
Also the wording of ``--seeds``, ``--dtype`` and one mode in ``derive``."""

from __future__ import annotations

import json

import pytest

from gdln.cli import build_parser
from gdln.commands.arguments import TRAINING_SETTINGS
from gdln.derive.spec.limits import MAX_SEEDS
from gdln.derive.spec.reader import TRAINING_DEFAULTS

from .helpers import ROOT, XOR_SPEC, run_cli


def _subparser(name: str):
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sub.choices[name]


def test_the_settings_are_the_spec_training_keys():
    assert set(TRAINING_SETTINGS) == set(TRAINING_DEFAULTS)


def test_verify_takes_an_init_scale_and_says_so_first(capsys):
    code, out, _ = run_cli(
        capsys, ["verify", str(XOR_SPEC), "--set", "init_scale=1e-6", "--epochs", "50", "--seeds", "1"]
    )
    assert code == 0
    assert out.splitlines()[0] == "training settings from --set: init_scale = 1e-06"


def test_the_json_carries_the_settings_and_they_are_used(capsys):
    argv = ["simulate", str(XOR_SPEC), "--model", "relu", "--json"]
    code, out, _ = run_cli(capsys, [*argv, "--set", "seeds=1", "--set", "epochs=1e1", "--set", "Delta=3/2"])
    assert code == 0
    report = json.loads(out)
    assert report["training_overrides"] == {"seeds": 1, "epochs": 10}
    assert report["fixed"] == {"Delta": "3/2"}
    assert report["seeds"] == 1 and report["epochs"] == 10


def test_both_fixed_and_training_lines_come_first(capsys):
    code, out, _ = run_cli(
        capsys, ["race", str(XOR_SPEC), "--set", "Delta=3/2", "--set", "learning_rate=0.02", "--set", "hidden_units=64"]
    )
    assert code == 0
    assert out.splitlines()[:2] == [
        "fixed before deriving: Delta = 3/2",
        "training settings from --set: learning_rate = 0.02, hidden_units = 64",
    ]


def test_race_follows_the_init_scale_set(capsys):
    def t_half(*extra):
        code, out, _ = run_cli(capsys, ["race", str(XOR_SPEC), "--json", *extra])
        assert code == 0
        return {n["name"]: n["t_half"] for n in json.loads(out)["networks"]}

    default, smaller = t_half(), t_half("--set", "init_scale=1e-6")
    assert all(smaller[name] > default[name] for name in default)  # a smaller init learns later


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("hidden_units=2.5", "expected a positive integer"),
        ("init_scale=0", "must be positive, got 0"),
        ("learning_rate=1e9", "above the limit"),
        ("hidden_units=-5", "expected a positive integer, got -5"),
        ("seeds=1001", "above the limit of 1000"),
        ("epochs=many", "expected a number"),
    ],
)
def test_a_setting_out_of_its_limits_is_one_line(capsys, value, problem):
    code, _, err = run_cli(capsys, ["verify", str(XOR_SPEC), "--set", value])
    key = value.split("=")[0]
    assert code == 2
    assert err.startswith(f"gdln: error: --set: {key}: ") and problem in err


@pytest.mark.parametrize("flag", ["seeds", "epochs"])
def test_a_setting_given_twice_names_both(capsys, flag):
    code, _, err = run_cli(capsys, ["verify", str(XOR_SPEC), "--set", f"{flag}=2", f"--{flag}", "3"])
    assert code == 2
    assert f"--set: {flag}:" in err and f"--{flag}" in err.split(f"--set: {flag}:")[1]


def test_a_sweep_axis_and_a_set_value_clash(capsys):
    code, _, err = run_cli(
        capsys, ["sweep", str(XOR_SPEC), "--set", "init_scale=1e-3", "--grid", "init_scale=1e-4:1e-2:3:log"]
    )
    assert code == 2
    assert "--grid: init_scale: is both an axis and a --set value" in err


@pytest.mark.parametrize("command", ["verify", "simulate", "align"])
def test_seeds_help_says_the_real_range(command, capsys):
    (seeds,) = [a for a in _subparser(command)._actions if "--seeds" in a.option_strings]
    assert "0, 1" not in seeds.help and f"1 to {MAX_SEEDS}" in seeds.help
    code, _, err = run_cli(
        capsys, [command, str(XOR_SPEC), "--seeds", "0"] + (["--model", "relu"] * (command == "simulate"))
    )
    assert code == 2 and "--seeds" in err


def test_dtype_help_cites_the_page_that_says_it():
    (dtype,) = [a for a in _subparser("simulate")._actions if "--dtype" in a.option_strings]
    assert "README" not in dtype.help and "docs/performance.md" in dtype.help
    assert (
        "float32** follows float64 to within 1e-4 of the initial loss" in (ROOT / "docs" / "performance.md").read_text()
    )


def test_one_mode_follows_it(capsys, tmp_path):
    spec = tmp_path / "one_mode.toml"
    spec.write_text(
        'title = "one mode"\n[data]\ninputs = [[1, 0], [0, 1]]\ntargets = [[1], [2]]\n'
        '[[network]]\nname = "dense"\n[[network.pathway]]\nname = "all"\n'
    )
    code, out, _ = run_cli(capsys, ["derive", str(spec), "--network", "dense", "--plain"])
    assert code == 0
    assert "1 mode follows it" in out and "1 mode follow it" not in out
