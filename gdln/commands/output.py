"""How the commands print: a report as JSON, Markdown or text, the formatting of numbers and exact
values, and output files written atomically."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

from gdln.derive.errors import SpecError
from gdln.verify.files import SPEC_SUFFIXES, check_writable, finite_json, write_atomic
from gdln.verify.reports import AlignReport, FindGatesReport, Report, is_number


def emit(report: Report | dict, as_json: bool, render, *, markdown: bool = False, fixed=None, training=None) -> None:
    """Print ``report`` as JSON (a typed report's ``to_json()``), as Markdown tables
    (``--markdown``: the report's own Jupyter form, ``verify.reports``) or as text (``render``,
    given the JSON dictionary). ``fixed``: the parameters ``--set``
    fixed before deriving (``Task.fixed``), said in every form: a ``fixed`` entry of the JSON
    (exact SymPy text by name), a first line of the text and of the Markdown. ``training``: the
    training settings ``--set`` gave (``arguments.training_settings``), said the same way: a
    ``training_overrides`` entry of the JSON (numbers by name) and a first line."""
    fixed_text = {name: str(value) for name, value in (fixed or {}).items()}
    said = []
    if fixed_text:
        said.append("fixed before deriving: " + ", ".join(f"{name} = {value}" for name, value in fixed_text.items()))
    if training:
        said.append("training settings from --set: " + ", ".join(f"{k} = {v:g}" for k, v in training.items()))
    if markdown:
        table = getattr(report, "_repr_markdown_", None)
        if table is None:  # a command's own dictionary (not a typed report) has no table form
            raise SpecError("--markdown", "report", "this report has no Markdown form: use --json")
        if said:
            print("\n\n".join(said) + "\n")
        print(table())
        return
    if isinstance(report, Report):
        report = report.to_json()
    if as_json:
        # strict JSON: a non-finite number becomes null, and the report lists where and what it was
        clean, replaced = finite_json(report)
        assert isinstance(clean, dict)  # a dict stays a dict
        if replaced:
            clean["non_finite"] = replaced
        if fixed_text:
            clean["fixed"] = fixed_text
        if training:
            clean["training_overrides"] = dict(training)
        json.dump(clean, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        for line in said:
            print(line)
        render(report)


def number_text(value) -> str:
    if value is None:
        return "never"
    return f"{value:.6g}" if math.isfinite(value) else NOT_FINITE


#: what the text says for a number that is NaN or infinite (a diverged run), never ``nan%``
NOT_FINITE = "not finite"


def finite_text(value, spec: str = ".3g", missing: str = NOT_FINITE) -> str:
    """``value`` formatted by ``spec``; in words where it is missing or not finite (a diverged run)."""
    if value is None:
        return missing
    return format(value, spec) if math.isfinite(value) else NOT_FINITE


def yes_no(flag) -> str:
    return "yes" if flag else "no"


def percent(fraction, spec: str = ".3g", missing: str = "never") -> str:
    """``fraction`` in %; ``missing`` where it is None, ``not finite`` where it is NaN or infinite
    (a diverged run: never ``nan%``)."""
    if fraction is None:
        return missing
    return f"{100 * fraction:{spec}}%" if math.isfinite(fraction) else NOT_FINITE


def parameters_line(parameters: dict, exceptional_point: str | None = None) -> None:
    if parameters:  # nothing to say for a task without parameters
        print("parameters: " + ", ".join(f"{k} = {v:g}" for k, v in parameters.items()))
    if exceptional_point:
        print(
            f"derived at this point, exactly (as --set derives it): the generic derivation does not hold where"
            f" {exceptional_point}"
        )


#: said once under any output that gives an algebraic number by its value
ALGEBRAIC_NOTE = (
    "algebraic: an exact number with no radical form, shown by its value; of degree n: a root of an "
    "irreducible polynomial of degree n over Q (--json gives it exactly)"
)


def has_algebraic(report) -> bool:
    """Whether any value of a report is printed as an algebraic number (``algebraic`` entries)."""
    if isinstance(report, dict):
        return "algebraic" in report or any(has_algebraic(v) for v in report.values())
    if isinstance(report, list):
        return any(has_algebraic(v) for v in report)
    return False


def indented(text: str, indent: str) -> str:
    """Every line of ``text`` (a pretty-printed equation has several) behind ``indent``."""
    return "\n".join(indent + line for line in text.splitlines())


def value_text(entry, name: str = "", *, whole: bool = False) -> str:
    """An exact value as text; an algebraic number with no radical form (``CRootOf``) as its
    value, kind and degree (``name``: what the number is, e.g. ``s`` for "s^2 of degree 8"); an
    expression in implicit roots as its value and the polynomials it holds, unless it is a
    singular value (``name`` ``s``: a root itself, ``sqrt(root1(P753066))``) or ``whole``."""
    algebraic = entry.get("algebraic")
    if algebraic is not None or "CRootOf" in entry["expr"]:
        return f"{entry['value']:.10g} ({algebraic_kind(algebraic, name)})"
    if entry.get("implicit") and name != "s" and not whole:
        polynomials = ", ".join(entry["implicit"])
        return f"{entry['value']:.6g} (an expression in the roots of {polynomials}, see --full or --latex)"
    if is_number(entry["expr"]):
        return entry["expr"]
    return f"{entry['expr']} = {entry['value']:.6g}"


def algebraic_kind(algebraic, name: str = "") -> str:
    if not algebraic:
        return "algebraic"
    degrees = ", ".join(map(str, algebraic["degrees"]))
    if algebraic["form"] == "root":
        return f"algebraic of degree {degrees}"
    if algebraic["form"] == "square root":
        return f"algebraic, {name + '^2' if name else 'its square'} of degree {degrees}"
    if len(algebraic["degrees"]) == 1:
        return f"algebraic, a polynomial in a root of degree {degrees}"
    return f"algebraic, a polynomial in roots of degrees {degrees}"


def check_output(path: str | None, key: str, suffixes: tuple[str, ...] = ()) -> None:
    """Refuse, before any work, an output file given by option ``key`` that cannot be written
    (:func:`verify.files.check_writable`); ``None``: the option was not given (``''`` was, and is refused)."""
    if path is not None:
        check_writable(path, key, suffixes)


def write_output(path: str, text: str, key: str, suffixes: tuple[str, ...] = ()) -> None:
    write_atomic(path, text, key, suffixes)  # a temporary file, then os.replace: never a partial file


def append_network(args, network_toml: str, report: AlignReport | FindGatesReport) -> AlignReport | FindGatesReport:
    """``--write-spec``: the spec's text with ``network_toml`` appended; the report, noting the
    file (``written``) where one was written."""
    if args.write_spec is None or not network_toml:
        return report
    text = Path(args.spec).read_text(encoding="utf-8")
    write_output(args.write_spec, text.rstrip("\n") + "\n\n" + network_toml, "--write-spec", SPEC_SUFFIXES)
    return dataclasses.replace(report, written=args.write_spec)
