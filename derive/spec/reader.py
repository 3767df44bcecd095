"""The declarative model of a task: data, parameters, training defaults, candidate networks.

A task is read from a TOML spec (``load_spec``) or built from the same nested
dictionary in Python (``task_from_dict``); both go through one validator, so a
Python-built task obeys the same rules as a file. Nothing in a spec is executed:
expressions go through :mod:`derive.spec.expressions`.
"""

from __future__ import annotations

import keyword
import math
import os
import re
import stat
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from numbers import Real
from pathlib import Path
from typing import Any

import sympy

from ..errors import SpecError
from .data_files import read_data_file
from .expressions import (
    ALLOWED_CONSTANTS,
    ALLOWED_FUNCTIONS,
    EvaluationError,
    evaluate,
    exact_number,
    parse_expression,
    parse_value,
    plain_number,
)
from .graph import Graph, check_gate_values, index_list, read_graph
from .limits import (
    DATA_MAGNITUDE,
    MAX_DATA_ENTRIES,
    MAX_EPOCHS,
    MAX_HIDDEN_LAYERS,
    MAX_INIT_SCALE,
    MAX_INTEGER_DIGITS,
    MAX_LABELS,
    MAX_LEARNING_RATE,
    MAX_NESTING,
    MAX_NETWORKS,
    MAX_PARAMETERS,
    MAX_PATHWAYS,
    MAX_SEEDS,
    MAX_SPEC_BYTES,
    MAX_UNITS,
)

TOP_LEVEL_KEYS = {"title", "parameters", "data", "training", "network"}
TRAINING_DEFAULTS = {
    "learning_rate": 0.01,
    "init_scale": 1e-4,
    "epochs": 10000,
    "hidden_units": 128,
    "seeds": 3,
}
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+\-.]*")
PATHWAY_KEYS = {"name", "active", "inputs", "outputs", "hidden_layers", "units"}

# the limits, checked before any work, are in derive.spec.limits (README, "Limits and checks")
INTEGER_LIMITS = {"epochs": MAX_EPOCHS, "hidden_units": MAX_UNITS, "seeds": MAX_SEEDS}
NUMBER_LIMITS = {"learning_rate": MAX_LEARNING_RATE, "init_scale": MAX_INIT_SCALE}
RESERVED_NAMES = {"t", "tau", "I", "nan", "inf", "oo", "zoo"}
GENERATED_PREFIXES = ("a_", "a0_", "b_", "b0_")  # the derivation's own state names


@dataclass(frozen=True)
class Pathway:
    """One gated module: a chain of ``hidden_layers`` hidden layers, on only at ``active``."""

    name: str
    active: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    hidden_layers: int
    units: int
    #: the units are the network's share of ``training.hidden_units`` (the spec states none), so
    #: a task trained at another width splits them again (:meth:`Task.with_training`)
    units_from_share: bool = field(default=False, compare=False, repr=False)

    @property
    def depth(self) -> int:
        """Number of weight matrices (edges) along the pathway."""
        return self.hidden_layers + 1


@dataclass(frozen=True)
class Network:
    """A candidate GDLN (ReLN): pathways whose outputs add up.

    A network given as a graph keeps it in ``graph``. When its paths share no edge, ``pathways``
    is its module form (one pathway per path) and everything downstream treats both forms alike;
    when they share edges, ``pathways`` lists the paths and only graph-aware code may use it
    (``shared`` says so)."""

    name: str
    pathways: tuple[Pathway, ...]
    graph: Graph | None = None

    @property
    def shared(self) -> bool:
        """Some edge lies on more than one path: the module reduction does not apply."""
        return self.graph is not None and not self.graph.private_chains

    def pathway(self, name: str) -> Pathway:
        for pathway in self.pathways:
            if pathway.name == name:
                return pathway
        raise KeyError(name)


@dataclass(frozen=True)
class Training:
    """Defaults for simulation and verification (full-batch GD on L = 1/2 <||y - yhat||^2>)."""

    learning_rate: float
    init_scale: float
    epochs: int
    hidden_units: int
    seeds: int

    @property
    def tau(self) -> float:
        """Time constant of the continuous-time limit; t counts epochs."""
        return 1.0 / self.learning_rate


@dataclass(frozen=True)
class Task:
    """A dataset (rows are datapoints), its parameters, and the candidate networks."""

    title: str
    parameters: Mapping[sympy.Symbol, float]
    inputs: sympy.ImmutableMatrix
    targets: sympy.ImmutableMatrix
    training: Training
    networks: tuple[Network, ...]
    source: str = "<python>"
    contexts: tuple[int, ...] | None = None
    labels: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: parameters fixed to exact values before deriving (:meth:`with_values`), by name
    fixed: Mapping[str, sympy.Expr] = field(default_factory=dict)
    #: parameters whose spec declares a domain other than ``real`` (``positive``), by name
    domains: Mapping[str, str] = field(default_factory=dict)

    @property
    def num_datapoints(self) -> int:
        return self.inputs.rows

    @property
    def num_inputs(self) -> int:
        return self.inputs.cols

    @property
    def num_outputs(self) -> int:
        return self.targets.cols

    def network(self, name: str) -> Network:
        for network in self.networks:
            if network.name == name:
                return network
        known = ", ".join(n.name for n in self.networks) or "none"
        raise SpecError(self.source, "network", f"no network named {name!r} (known: {known})")

    def parameter(self, name: str) -> sympy.Symbol:
        name = unicodedata.normalize("NFKC", name)
        for symbol in self.parameters:
            if symbol.name == name:
                return symbol
        known = ", ".join(s.name for s in self.parameters) or "none"
        raise SpecError(self.source, "parameters", f"unknown parameter {name!r} (known: {known})")

    def values(self, overrides: Mapping[str, float] | None = None) -> dict[sympy.Symbol, float]:
        """Parameter values: the spec's defaults with ``overrides`` (by name) applied."""
        values = dict(self.parameters)
        for name, value in (overrides or {}).items():
            if isinstance(value, (complex, bool)) or not isinstance(value, Real) or not math.isfinite(value):
                raise SpecError(self.source, f"parameters.{name}", f"value {value!r} is not a finite real number")
            symbol = self.parameter(name)
            self.check_domain(symbol.name, float(value), f"parameters.{name}")
            values[symbol] = float(value)
        if overrides:
            check_data(self.inputs, self.targets, values, self.source, parametric_only=True)
        return values

    def with_values(self, values: Mapping[str, Any], source: str | None = None) -> Task:
        """The task with some parameters fixed to exact values before anything is derived.

        Parameters:
            values: by parameter name, an exact value: a SymPy number (``Rational(3, 2)``,
                ``sqrt(2)``), an int or a ``Fraction``, a float (read through its decimal text, so
                ``1.5`` is ``3/2``) or an expression string (``"3/2"``, ``"sqrt(2)"``).
            source: what to name in errors (default: the spec's file).

        Returns:
            A task without those parameters: its data hold the values exactly, so every
            derivation of it is the parameter-free one. ``fixed`` lists what was fixed.
        """
        source = source or self.source
        bindings: dict[sympy.Symbol, sympy.Expr] = {}
        for name, value in values.items():
            try:
                symbol = self.parameter(name)
            except SpecError as error:
                raise SpecError(source, name, error.problem) from None
            exact = _exact_value(value, source, name)
            self.check_domain(symbol.name, _finite_real(exact, value, source, name), name, source)
            bindings[symbol] = exact
        inputs, targets = self.inputs.xreplace(bindings), self.targets.xreplace(bindings)
        parameters = {s: v for s, v in self.parameters.items() if s not in bindings}
        check_data(inputs, targets, parameters, source)
        fixed = {**self.fixed, **{s.name: v for s, v in bindings.items()}}
        return replace(self, parameters=parameters, inputs=inputs, targets=targets, fixed=fixed)

    def check_domain(self, name: str, value: float, key: str, source: str | None = None) -> None:
        """Refuse ``value`` for the parameter ``name`` outside the domain its spec declares."""
        if self.domains.get(name) == "positive" and not value > 0:
            raise SpecError(
                source or self.source,
                key,
                f"value {value:g} is outside the declared domain of {name}: positive (to allow it, write"
                f' {name} = <default> in the spec\'s [parameters] table, without domain = "positive")',
            )

    def with_training(self, **changes) -> Task:
        """The same task with some training settings replaced (e.g. from CLI flags or a sweep axis);
        ``None`` keeps a setting. The one way to change width, seeds or training: pathways whose
        units the spec does not state take their share of a new ``hidden_units`` again, as
        :func:`load_spec` splits them, and no file is read."""
        changes = {k: v for k, v in changes.items() if v is not None}
        training = replace(self.training, **changes)
        networks = self.networks
        if training.hidden_units != self.training.hidden_units:
            networks = tuple(_split_units(network, training.hidden_units) for network in networks)
        return replace(self, training=training, networks=networks)


def _exact_value(value, source: str, name: str) -> sympy.Expr:
    """A parameter value as an exact SymPy number (see :meth:`Task.with_values`)."""
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, str):
        return parse_expression(value, {}, source, name)
    return exact_number(value, source, name)


def _shared_units(hidden_units: int, pathways: int) -> int:
    """A pathway's share of ``training.hidden_units`` when the spec states no ``units``."""
    return max(1, hidden_units // pathways)


def _split_units(network: Network, hidden_units: int) -> Network:
    share = _shared_units(hidden_units, len(network.pathways))
    pathways = tuple(replace(p, units=share) if p.units_from_share else p for p in network.pathways)
    return replace(network, pathways=pathways)


def load_spec(path: str | Path) -> Task:
    """Read and validate a TOML spec file.

    Args:
        path: the spec file (TOML; the layout is on the Specs page).

    Returns:
        The task: its data, parameters, training settings and candidate networks.

    Raises:
        SpecError: one line naming the file and the key, for anything the spec gets wrong.
    """
    path = Path(path)
    source = str(path)
    try:
        # without blocking: opening a pipe (FIFO) to read waits for a writer, which may never come
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as error:  # ValueError: a NUL character in the name
        raise SpecError(source, "file", f"cannot read: {getattr(error, 'strerror', None) or error}") from None
    # the status of what was opened, not of the name (which may have changed since): a folder,
    # a device (/dev/zero never ends) or a pipe is refused before a byte is read
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise SpecError(source, "file", "not a regular file (a folder, a device or a pipe)")
    with os.fdopen(descriptor, "rb") as handle:
        try:
            text = handle.read(MAX_SPEC_BYTES + 1)
        except OSError as error:
            raise SpecError(source, "file", f"cannot read: {error.strerror or error}") from None
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(source, "file", f"larger than the limit of {MAX_SPEC_BYTES // 2**20} MiB")
    try:
        decoded = text.decode("utf-8-sig")  # without a leading byte-order mark, which TOML refuses
    except UnicodeDecodeError:
        raise SpecError(source, "file", "not UTF-8 text") from None
    try:
        document = tomllib.loads(decoded)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(source, "toml", f"malformed TOML: {error}") from None
    except RecursionError:
        raise SpecError(
            source, "toml", f"arrays or tables nested too deeply (the limit is {MAX_NESTING} levels)"
        ) from None
    except ValueError:  # not a TOMLDecodeError (caught above): Python's int() stops at 4300 digits
        _check_integer_literals(decoded, source)
        raise SpecError(source, "toml", "a number the TOML reader cannot convert") from None
    return task_from_dict(document, source=source, default_title=path.stem)


# a run of digits (TOML allows underscores between them) that is not part of a name, and is long
# enough to break the integer limit; the first match decides
_LONG_DIGITS = re.compile(r"(?<![\w.])\d(?:_?\d){" + str(MAX_INTEGER_DIGITS) + ",}")
# what may hold digits that are no number: strings (basic, literal, multi-line) and comments
_NOT_NUMBERS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')


def _check_integer_literals(text: str, source: str) -> None:
    """Refuse an integer literal of more than MAX_INTEGER_DIGITS digits, naming its line: for a
    literal the TOML reader cannot convert (one it converts is refused naming its key, as a
    number beyond the float range, :func:`derive.spec.expressions.exact_number`). Strings and comments are blanked first (their digits are text),
    keeping their newlines so that the line counts hold. A decimal or exponent float is left to
    the reader (Python converts it to a float in linear time; the spec's checks then refuse inf)."""
    if not _LONG_DIGITS.search(text):  # the common case: no long digit run anywhere
        return
    bare = _NOT_NUMBERS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    for match in _LONG_DIGITS.finditer(bare):
        end = match.end()
        if end < len(bare) and bare[end] in ".eE":  # a float's digits: not an integer
            continue
        line = bare.count("\n", 0, match.start()) + 1
        raise SpecError(source, f"line {line}", f"integer literal longer than the limit of {MAX_INTEGER_DIGITS} digits")


def task_from_dict(document: Mapping[str, Any], source: str = "<python>", default_title: str = "task") -> Task:
    """Validate a nested dictionary with the spec layout and build a `Task`.

    Args:
        document: the spec as `tomllib.loads` gives it (the layout is on the Specs page).
        source: the name errors give for the spec (a file's path, or ``<python>``).
        default_title: the task's title where the spec states none.

    Returns:
        The task, as `load_spec` builds it from a file.

    Raises:
        SpecError: one line naming ``source`` and the key, for anything the spec gets wrong.
    """
    _require_table(document, source, "spec")
    _check_nesting(document, source)
    document = _plain_numbers(document)  # NumPy scalars and arrays, as the Python numbers and lists they hold
    _check_nesting(document, source)  # an array's rows are nested lists now
    _reject_unknown(document, TOP_LEVEL_KEYS, source, "")
    title = document.get("title", default_title)
    if not isinstance(title, str):
        raise SpecError(source, "title", "expected a string")

    defaults, symbols, domains = _read_parameters(document.get("parameters", {}), source)
    inputs, targets, contexts, labels = _read_data(document.get("data"), symbols, source)
    check_data(inputs, targets, defaults, source)
    training = _read_training(document.get("training", {}), source)
    networks = _read_networks(
        document.get("network", []), inputs.rows, inputs.cols, targets.cols, training, labels, source
    )
    _check_networks_learn(inputs, targets, networks, defaults, source)
    return Task(
        title=title,
        parameters=defaults,
        inputs=inputs,
        targets=targets,
        training=training,
        networks=networks,
        source=source,
        contexts=contexts,
        labels=labels,
        domains=domains,
    )


def _plain_numbers(value):
    """``value`` (within the nesting limit) with every NumPy scalar and array replaced by the
    Python number or list it holds (`derive.spec.expressions.plain_number`), so that a spec built
    with NumPy reads as the same spec written in TOML."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: _plain_numbers(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_plain_numbers(v) for v in value)
    return value


def _check_nesting(document, source):
    stack = [(document, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_NESTING:
            raise SpecError(source, where or "spec", f"arrays or tables nested deeper than {MAX_NESTING} levels")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend(
                (v, depth + 1, f"{where}[{n}]") for n, v in enumerate(value) if isinstance(v, (Mapping, list, tuple))
            )


def _where(values: Mapping[sympy.Symbol, float], symbols) -> str:
    used = [s for s in values if s in symbols]
    return (" at " + ", ".join(f"{s.name} = {values[s]:g}" for s in used)) if used else ""


def check_data(
    inputs, targets, values: Mapping[sympy.Symbol, float], source: str, parametric_only: bool = False
) -> None:
    """Every data entry is real, finite and of a sane size at ``values``, and some target is not zero."""
    low, high = DATA_MAGNITUDE
    for key, matrix in (("data.inputs", inputs), ("data.targets", targets)):
        for r in range(matrix.rows):
            for c in range(matrix.cols):
                entry = matrix[r, c]
                symbols = entry.free_symbols
                if parametric_only and not symbols:
                    continue
                where = f"{key}[{r}][{c}]"
                try:
                    value = evaluate(entry, values)
                except EvaluationError as error:
                    raise SpecError(
                        source, where, f"{entry} has no finite value{_where(values, symbols)}: {error}"
                    ) from None
                if abs(value.imag) > 1e-12 * abs(value):
                    raise SpecError(source, where, f"{entry} is not real{_where(values, symbols)}: {value:.6g}")
                size = abs(value.real)
                if size > high or 0 < size < low:
                    raise SpecError(
                        source,
                        where,
                        f"{entry} = {value.real:.6g}{_where(values, symbols)} is outside the range {low:g} to {high:g} in size",
                    )
    if all(evaluate(entry, values) == 0 for entry in targets):
        raise SpecError(
            source,
            "data.targets",
            f"every target is zero{_where(values, targets.free_symbols)}: there is nothing to learn",
        )
    if all(evaluate(entry, values) == 0 for entry in inputs):
        raise SpecError(
            source,
            "data.inputs",
            f"every input is zero{_where(values, inputs.free_symbols)}: there is nothing to learn from",
        )


def _check_networks_learn(inputs, targets, networks, values, source):
    """Refuse a network none of whose pathways sees a correlation between its inputs and its
    outputs (every Sigma_yx(p) is zero for all parameter values): it has no modes to learn."""
    x = [[evaluate(inputs[r, c], values).real for c in range(inputs.cols)] for r in range(inputs.rows)]
    y = [[evaluate(targets[r, c], values).real for c in range(targets.cols)] for r in range(targets.rows)]

    def correlated(pathway):
        numeric = any(
            sum(y[n][o] * x[n][i] for n in pathway.active) != 0 for o in pathway.outputs for i in pathway.inputs
        )
        if numeric:
            return True
        rows = list(pathway.active)
        product = targets.extract(rows, list(pathway.outputs)).T * inputs.extract(rows, list(pathway.inputs))
        return any(sympy.expand(entry) != 0 for entry in product)

    for network in networks:
        if not any(correlated(p) for p in network.pathways):
            raise SpecError(
                source,
                f"network[{network.name}].pathway",
                "no pathway sees a correlation between its inputs and its outputs (every Sigma_yx is zero): nothing to learn",
            )


def _require_table(value, source, key):
    if not isinstance(value, Mapping):
        raise SpecError(source, key, f"expected a table, got {type(value).__name__}")


def _reject_unknown(table, allowed, source, prefix):
    for key in table:
        if key not in allowed:
            where = f"{prefix}{key}" if prefix else key
            raise SpecError(source, where, f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _read_parameters(table, source):
    _require_table(table, source, "parameters")
    if len(table) > MAX_PARAMETERS:  # every command works parameter by parameter (crossovers)
        raise SpecError(source, "parameters", f"{len(table)} parameters; the limit is {MAX_PARAMETERS}")
    defaults: dict[sympy.Symbol, float] = {}
    symbols: dict[str, sympy.Symbol] = {}
    domains: dict[str, str] = {}
    reserved = set(ALLOWED_FUNCTIONS) | set(ALLOWED_CONSTANTS) | RESERVED_NAMES
    given: dict[str, str] = {}
    for name, value in table.items():
        key = f"parameters.{name}"
        # expressions are read by Python's parser, which folds identifiers to NFKC: so do names
        normal = unicodedata.normalize("NFKC", str(name))
        folded = "" if normal == name else f" ({name!r} is {normal!r} after Unicode NFKC normalisation)"
        if (
            not normal.isidentifier()
            or keyword.iskeyword(normal)
            or normal in reserved
            or normal.startswith(GENERATED_PREFIXES)
        ):
            raise SpecError(
                source,
                key,
                "parameter names must be identifiers other than function names, constants, t, tau and the "
                f"derivation's state names (a_, a0_, b_, b0_ ...){folded}",
            )
        if normal in given:
            raise SpecError(source, key, f"collides with parameter {given[normal]!r}{folded}")
        value, domain = _parameter_entry(value, source, key)
        number = _default_number(value, source, key)
        if domain == "positive" and number <= 0:
            raise SpecError(
                source, key, f"default {value} is outside the declared domain: positive (give a positive default)"
            )
        # the generic derivation is for positive values (sqrt(a**2) = a); a value at or below zero
        # is derived at the point (derive.exceptional), unless the domain is declared positive
        symbol = sympy.Symbol(normal, positive=True)
        defaults[symbol] = number
        symbols[normal] = symbol
        given[normal] = name
        if domain != "real":
            domains[normal] = domain
    return defaults, symbols, domains


def _default_number(value, source, key) -> float:
    """A parameter's default: a number, or an expression string in no parameter (``"sqrt(2)"``),
    read by :func:`parse_expression` (never evaluated as code) and rounded to float."""
    return _finite_real(_exact_value(value, source, key), value, source, key, "default")


def _finite_real(exact: sympy.Expr, given, source: str, key: str, what: str = "value") -> float:
    """``exact``'s value, refused in one line unless it is finite and real (``given`` as written)."""
    try:
        number = evaluate(exact)
    except EvaluationError as error:
        raise SpecError(source, key, f"{what} {given!r} has no finite value: {error}") from None
    if number.imag != 0 or not math.isfinite(number.real):
        raise SpecError(source, key, f"{what} {given!r} is not a finite real number")
    return number.real


#: the domains a parameter may declare: ``real`` (the default: any finite value) or ``positive``
DOMAINS = ("real", "positive")


def _parameter_entry(value, source, key):
    """``(default, domain)`` of ``a = 1.5`` or ``a = {value = 1.5, domain = "positive"}``."""
    if not isinstance(value, Mapping):
        return value, "real"
    _reject_unknown(value, ("value", "domain"), source, f"{key}.")
    if "value" not in value:
        raise SpecError(source, f"{key}.value", "missing: a parameter table needs its default value")
    domain = value.get("domain", "real")
    if domain not in DOMAINS:
        raise SpecError(source, f"{key}.domain", f"expected one of {', '.join(DOMAINS)}, got {domain!r}")
    return value["value"], domain


def _read_matrix(rows, symbols, source, key):
    if not isinstance(rows, list) or not rows:
        raise SpecError(source, key, "expected a non-empty list of rows")
    width = None
    matrix = []
    entries = 0
    for r, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise SpecError(source, f"{key}[{r}]", "expected a non-empty list of numbers or expressions")
        entries += len(row)
        if entries > MAX_DATA_ENTRIES:
            raise SpecError(source, key, f"more than {MAX_DATA_ENTRIES} entries")
        if width is None:
            width = len(row)
        elif len(row) != width:
            raise SpecError(source, f"{key}[{r}]", f"row has {len(row)} entries, row 0 has {width}")
        matrix.append([parse_value(v, symbols, source, f"{key}[{r}][{c}]") for c, v in enumerate(row)])
    return sympy.ImmutableMatrix(matrix)


def _read_data(table, symbols, source):
    if table is None:
        raise SpecError(source, "data", "missing table [data] with inputs and targets")
    _require_table(table, source, "data")
    _reject_unknown(table, {"inputs", "targets", "contexts", "labels", "file"}, source, "data.")
    if "file" in table:
        if "inputs" in table or "targets" in table:
            raise SpecError(source, "data.file", "give inputs and targets inline or in data.file, not both")
        raw_inputs, raw_targets, file_source = read_data_file(table["file"], source)
        inputs = _read_matrix(raw_inputs, symbols, file_source, "inputs")
        targets = _read_matrix(raw_targets, symbols, file_source, "targets")
        where = (file_source, "targets", "inputs")
    else:
        for key in ("inputs", "targets"):
            if key not in table:
                raise SpecError(source, f"data.{key}", "missing")
        inputs = _read_matrix(table["inputs"], symbols, source, "data.inputs")
        targets = _read_matrix(table["targets"], symbols, source, "data.targets")
        where = (source, "data.targets", "data.inputs")
    if inputs.rows != targets.rows:
        raise SpecError(
            where[0], where[1], f"{targets.rows} rows but {where[2]} has {inputs.rows} (one row per datapoint)"
        )
    contexts = None
    if "contexts" in table:
        labels = table["contexts"]
        if not isinstance(labels, list) or len(labels) != inputs.rows:
            raise SpecError(
                source, "data.contexts", f"expected a list of {inputs.rows} context labels (one per datapoint)"
            )
        for n, label in enumerate(labels):
            if isinstance(label, bool) or not isinstance(label, int) or label < 1:
                raise SpecError(source, f"data.contexts[{n}]", f"expected a context number >= 1, got {label!r}")
        contexts = tuple(labels)
    labels = {} if contexts is None else {"context": contexts}
    raw_labels = table.get("labels", {})
    _require_table(raw_labels, source, "data.labels")
    count = len(raw_labels) + len(labels)  # data.contexts is the label 'context'
    if count > MAX_LABELS:
        raise SpecError(source, "data.labels", f"{count} labels per datapoint; the limit is {MAX_LABELS}")
    for name, column in raw_labels.items():
        key = f"data.labels.{name}"
        if name in labels:
            raise SpecError(source, key, "the label 'context' is data.contexts; give it there")
        if not isinstance(column, list) or len(column) != inputs.rows:
            raise SpecError(source, key, f"expected a list of {inputs.rows} integer labels (one per datapoint)")
        for n, label in enumerate(column):
            if isinstance(label, bool) or not isinstance(label, int):
                raise SpecError(source, f"{key}[{n}]", f"expected an integer label, got {label!r}")
        labels[name] = tuple(column)
    return inputs, targets, contexts, labels


def _positive_int(value, source, key, limit=None):
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(source, key, f"expected a positive integer, got {value!r}")
    if limit is not None and value > limit:
        raise SpecError(source, key, f"{value} is above the limit of {limit}")
    return value


def _read_training(table, source):
    _require_table(table, source, "training")
    _reject_unknown(table, set(TRAINING_DEFAULTS), source, "training.")
    settings = dict(TRAINING_DEFAULTS)
    for key, value in table.items():
        settings[key] = training_value(key, value, source, f"training.{key}")
    return Training(**settings)


def training_value(key: str, value, source: str, where: str):
    """The training setting ``key`` (``learning_rate``, ``init_scale``: positive numbers; the
    others positive integers) checked against its limit (:mod:`derive.spec.limits`): the spec's
    ``[training]`` table and every other place that sets one (``gdln sweep --grid``)."""
    if key in NUMBER_LIMITS:
        number = float(exact_number(value, source, where))
        if number <= 0:
            raise SpecError(source, where, f"must be positive, got {value}")
        if number > NUMBER_LIMITS[key]:
            raise SpecError(source, where, f"{value} is above the limit of {NUMBER_LIMITS[key]:g}")
        return number
    return _positive_int(value, source, where, INTEGER_LIMITS[key])


def _read_networks(entries, num_datapoints, num_inputs, num_outputs, training, labels, source):
    if not isinstance(entries, list):
        raise SpecError(source, "network", "expected an array of tables [[network]]")
    if len(entries) > MAX_NETWORKS:
        raise SpecError(source, "network", f"{len(entries)} networks; the limit is {MAX_NETWORKS}")
    networks = []
    for k, entry in enumerate(entries):
        _require_table(entry, source, f"network[{k}]")
        _reject_unknown(entry, {"name", "pathway", "node", "edge"}, source, f"network[{k}].")
        name = entry.get("name")
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise SpecError(source, f"network[{k}].name", "every network needs a name of letters, digits and _ + - .")
        if any(n.name == name for n in networks):
            raise SpecError(source, f"network[{k}].name", f"duplicate network name {name!r}")
        if "node" in entry or "edge" in entry:
            if "pathway" in entry:
                raise SpecError(
                    source,
                    f"network[{name}].pathway",
                    "give a network as pathways or as a graph (node, edge), not both",
                )
            graph = read_graph(entry, name, num_datapoints, num_inputs, num_outputs, labels, source)
            pathways = chain_pathways(graph, name, source) if graph.private_chains else path_pathways(graph)
            networks.append(Network(name=name, pathways=pathways, graph=graph))
            continue
        raw_pathways = entry.get("pathway", [])
        if not isinstance(raw_pathways, list) or not raw_pathways:
            raise SpecError(source, f"network[{name}].pathway", "a network needs at least one [[network.pathway]]")
        if len(raw_pathways) > MAX_PATHWAYS:
            raise SpecError(
                source, f"network[{name}].pathway", f"{len(raw_pathways)} pathways; the limit is {MAX_PATHWAYS}"
            )
        check_gate_values(len(raw_pathways), num_datapoints, f"network[{name}].pathway", "pathways", source)
        default_units = _shared_units(training.hidden_units, len(raw_pathways))
        pathways = []
        for j, raw in enumerate(raw_pathways):
            prefix = f"network[{name}].pathway[{j}]"
            _require_table(raw, source, prefix)
            _reject_unknown(raw, PATHWAY_KEYS, source, prefix + ".")
            pname = raw.get("name", f"p{j}")
            if not isinstance(pname, str) or not NAME_PATTERN.fullmatch(pname):
                raise SpecError(source, f"{prefix}.name", "expected a name of letters, digits and _ + - .")
            if any(p.name == pname for p in pathways):
                raise SpecError(source, f"{prefix}.name", f"duplicate pathway name {pname!r}")
            pathways.append(
                Pathway(
                    name=pname,
                    # a set of datapoints, in order as a graph node's gate is: both forms agree
                    active=tuple(
                        sorted(
                            index_list(
                                raw.get("active", list(range(num_datapoints))),
                                num_datapoints,
                                source,
                                f"{prefix}.active",
                                "datapoint",
                            )
                        )
                    ),
                    inputs=index_list(
                        raw.get("inputs", list(range(num_inputs))),
                        num_inputs,
                        source,
                        f"{prefix}.inputs",
                        "input feature",
                    ),
                    outputs=index_list(
                        raw.get("outputs", list(range(num_outputs))),
                        num_outputs,
                        source,
                        f"{prefix}.outputs",
                        "target feature",
                    ),
                    hidden_layers=_positive_int(
                        raw.get("hidden_layers", 1), source, f"{prefix}.hidden_layers", MAX_HIDDEN_LAYERS
                    ),
                    units=_positive_int(raw.get("units", default_units), source, f"{prefix}.units", MAX_UNITS),
                    units_from_share="units" not in raw,
                )
            )
        networks.append(Network(name=name, pathways=tuple(pathways)))
    return tuple(networks)


def chain_pathways(graph: Graph, name: str, source: str) -> tuple[Pathway, ...]:
    """The module form of a graph of private chains: one pathway per path, named after its
    first hidden node, active where the path's gates are all on."""
    pathways = []
    for path in graph.paths:
        hidden = [graph.node(n) for n in path.nodes[1:-1]]
        if not path.active:
            raise SpecError(
                source,
                f"network[{name}].node[{path.nodes[1] if hidden else path.nodes[0]}]",
                f"the chain {path.name} is off at every datapoint (its gates never agree): a module needs data",
            )
        if not hidden:
            raise SpecError(
                source,
                f"network[{name}].edge[{graph.edges[path.edges[0]].name}]",
                "a path needs at least one hidden node (an input-to-output edge is a linear layer, not a module)",
            )
        sizes = {node.size for node in hidden}
        if len(sizes) > 1:
            raise SpecError(
                source,
                f"network[{name}].node[{hidden[0].name}]",
                f"the hidden nodes of the chain {path.name} have sizes {sorted(sizes)}; a module has one size",
            )
        pathways.append(
            Pathway(
                name=hidden[0].name,
                active=path.active,
                inputs=graph.node(path.nodes[0]).features,
                outputs=graph.node(path.nodes[-1]).features,
                hidden_layers=len(hidden),
                units=hidden[0].size,
            )
        )
    return tuple(pathways)


def path_pathways(graph: Graph) -> tuple[Pathway, ...]:
    """The paths of a graph with shared edges, listed as pathways for naming and reporting only
    (named by their nodes joined with "-", numbered where that repeats a name)."""
    names = [path.name for path in graph.paths]
    names = [name if names.count(name) == 1 else f"{name}.{k}" for k, name in enumerate(names)]
    return tuple(
        Pathway(
            name=name,
            active=path.active,
            inputs=graph.node(path.nodes[0]).features,
            outputs=graph.node(path.nodes[-1]).features,
            hidden_layers=len(path.nodes) - 2,
            units=min((graph.node(n).size for n in path.nodes[1:-1]), default=1),
        )
        for name, path in zip(names, graph.paths)
    )
