"""What every command that reads a spec shares: the one-line error parser, the spec argument with
``--set NAME=VALUE`` and ``--json``, and loading the spec."""

from __future__ import annotations

import argparse
import math
import sys

from gdln.derive.errors import SpecError


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2, like every other input error
        print(f"gdln: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def assignment(text: str) -> tuple[str, float]:
    from gdln.derive.spec import EvaluationError, evaluate, parse_expression  # SymPy: not for --help

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise SpecError("--set", text, "expected NAME=VALUE")
    try:
        number = evaluate(parse_expression(value, {}, "--set", name.strip()))
    except EvaluationError as error:
        raise SpecError("--set", name.strip(), f"value {value!r} has no finite value: {error}") from None
    if number.imag != 0 or not math.isfinite(number.real) or number.real <= 0:
        raise SpecError("--set", name.strip(), f"value {value!r} is not a positive finite real number")
    return name.strip(), number.real


def parameter_overrides(args) -> dict[str, float]:
    return dict(assignment(text) for text in (args.set or []))


def load(args):
    from gdln.derive.spec import load_spec

    return load_spec(args.spec)


def with_spec(sub, name: str, help_text: str, *, markdown: bool = False):
    """A subcommand that reads a spec: ``SPEC``, ``--set NAME=VALUE`` and ``--json`` (and, where
    its report has a table form, ``--markdown``)."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("spec", help="task spec (TOML)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a parameter value")
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print JSON")
    if markdown:
        output.add_argument(
            "--markdown", action="store_true", help="print the report as Markdown tables (as a notebook shows it)"
        )
    return p


def add_training_arguments(p) -> None:
    """``--seeds``, ``--epochs`` and ``--strict``: the options of every command that trains from a spec."""
    p.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...; default: the spec's training.seeds)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the spec's training.epochs)")
    p.add_argument(
        "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
    )
