"""gdln as a package: one import name, its version, the shipped examples, help on every option."""

import argparse
import tomllib

import pytest

from gdln.cli import build_parser, main

from .conftest import ROOT


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
