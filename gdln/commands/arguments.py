"""What every command that reads a spec shares: the one-line error parser, the spec argument with
``--set NAME=VALUE`` and ``--json``, and loading the spec."""

from __future__ import annotations

import argparse
import math
import sys

from gdln.derive.errors import SpecError
from gdln.derive.spec import MAX_SEEDS


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


#: the training settings ``--set`` takes beside the spec's parameters: the keys of a spec's
#: ``[training]`` table, checked by the one rule that checks the table and ``gdln sweep --grid``
#: (``derive.spec.training_value``: positive, within the limits of ``derive.spec.limits``). A
#: spec parameter of the same name is not reachable by ``--set``, as with ``--grid``.
TRAINING_SETTINGS = ("init_scale", "learning_rate", "hidden_units", "epochs", "seeds")
_INTEGER_SETTINGS = ("hidden_units", "epochs", "seeds")


def _training_number(key: str, text: str):
    """The text of ``--set KEY=TEXT`` as the number :func:`derive.spec.training_value` checks: a
    whole number as an integer (``1e4`` is 10000, and an error says ``0``, not ``0.0``), any
    other as a float; for the integer settings, a fraction stays text (``2.5``, refused there as
    not an integer)."""
    try:
        number = float(text)
    except ValueError:
        raise SpecError("--set", key, f"expected a number, got {text.strip()!r}") from None
    if math.isfinite(number) and number.is_integer() and abs(number) < 2**53:
        return int(number)
    return text.strip() if key in _INTEGER_SETTINGS else number


def training_settings(args) -> dict[str, int | float]:
    """The training settings given with ``--set`` (``init_scale=1e-6``), by name, checked as the
    spec's ``[training]`` table is; one also given by its own option (``--seeds``) is refused."""
    from gdln.derive.spec import training_value

    settings: dict[str, int | float] = {}
    for name, value in (assignment(text) for text in (getattr(args, "set", None) or [])):
        if name not in TRAINING_SETTINGS:
            continue
        if getattr(args, name, None) is not None:
            raise SpecError("--set", name, f"also given as --{name}: give one of the two")
        settings[name] = training_value(name, _training_number(name, value), "--set", name)
    return settings


def load(args):
    """The spec of ``args.spec`` with the ``--set`` values fixed exactly before anything is derived
    (``--set g=1.5`` derives the task with ``g = 3/2`` written in its data), and the training
    settings ``--set`` gives (``--set init_scale=1e-6``, :func:`training_settings`) in its
    ``training``."""
    from gdln.derive.spec import load_spec

    task = load_spec(args.spec)
    assignments = [assignment(text) for text in (getattr(args, "set", None) or [])]
    fixed = {name: value for name, value in assignments if name not in TRAINING_SETTINGS}
    training = training_settings(args)
    if fixed:
        task = task.with_values(fixed, source="--set")
    return task.with_training(**training) if training else task


def with_spec(sub, name: str, help_text: str, *, markdown: bool = False):
    """A subcommand that reads a spec: ``SPEC``, ``--set NAME=VALUE`` and ``--json`` (and, where
    its report has a table form, ``--markdown``)."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("spec", help="task spec (TOML)")
    p.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="fix a parameter to an exact value before deriving (1.5 is 3/2; sqrt(2) stays exact), or set a"
        " training setting: init_scale, learning_rate, hidden_units, epochs, seeds (the spec's [training];"
        " its limits, as sweep --grid checks them)",
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
    p.add_argument("--seeds", type=int, help=f"number of seeds (1 to {MAX_SEEDS}; default: the spec's training.seeds)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the spec's training.epochs)")
    p.add_argument(
        "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
    )
