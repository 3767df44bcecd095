"""What every command that reads a spec shares: the one-line error parser, the spec argument with
``--set NAME=VALUE`` and ``--json``, and loading the spec."""

from __future__ import annotations

import argparse
import sys

from gdln.derive.errors import SpecError


def printable(text: str) -> str:
    """``text`` with every control or unprintable character but the newline written as an escape
    (``\\x1b``), so that a name echoed in a message (a file named with terminal escape sequences)
    reaches the terminal as text: every error and warning line ``gdln`` prints goes through this."""
    return "".join(char if char == "\n" or char.isprintable() else repr(char)[1:-1] for char in text)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, status 2, like every other input error
        print(f"gdln: error: {printable(' '.join(message.split(chr(10))))}", file=sys.stderr)
        raise SystemExit(2)


def assignment(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` from ``--set``, split; the value is read exactly by :meth:`Task.with_values`."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise SpecError("--set", text, "expected NAME=VALUE")
    return name.strip(), value


def load(args):
    """The spec of ``args.spec`` with the ``--set`` values fixed exactly before anything is derived
    (``--set g=1.5`` derives the task with ``g = 3/2`` written in its data)."""
    from gdln.derive.spec import load_spec

    task = load_spec(args.spec)
    fixed = dict(assignment(text) for text in (getattr(args, "set", None) or []))
    return task.with_values(fixed, source="--set") if fixed else task


def with_spec(sub, name: str, help_text: str, *, markdown: bool = False):
    """A subcommand that reads a spec: ``SPEC``, ``--set NAME=VALUE`` and ``--json`` (and, where
    its report has a table form, ``--markdown``)."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("spec", help="task spec (TOML)")
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="fix a parameter to an exact value before deriving (1.5 is 3/2; sqrt(2) stays exact)",
    )
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
