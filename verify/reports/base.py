"""What every report shares: the `Report` base (its JSON and its read-only mapping of top-level
keys), optional fields, and the cells and tables of the reports' Markdown."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import UnionType
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

#: a field's metadata for a key the JSON has only where it applies; ``None`` leaves it out
OPTIONAL = {"optional": True}


def optional() -> Any:
    """A field that is ``None`` (and absent from the JSON) unless the report has it."""
    return field(default=None, metadata=OPTIONAL)


def _json_of(value: Any) -> Any:
    """``value`` as JSON: records (and reports) as their dictionaries, at any depth; a copy."""
    if isinstance(value, Report):
        return value.to_json()
    if isinstance(value, list):
        return [_json_of(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_of(v) for k, v in value.items()}
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Report(Mapping[str, Any]):
    """What every report shares: its JSON, and a read-only view of its top-level keys."""

    #: the fields that hold typed records: name -> (their type, whether a list of them), read
    #: from their JSON by the type's ``from_json``
    RECORDS: ClassVar[dict[str, tuple[type[Report], bool]]] = {}

    def to_json(self) -> dict[str, Any]:
        """The report as the JSON dictionary the command prints.

        Returns:
            The fields in order, an optional one only where the report has it (a copy: changing
            it leaves the report alone). Non-finite numbers stay as they are; the command's
            ``--json`` writes them as ``null`` and lists them under ``non_finite``.
        """
        return {name: _json_of(getattr(self, name)) for name in self._keys()}

    @classmethod
    def from_json(cls, entries: Mapping[str, Any]) -> Self:
        """The report of a JSON dictionary: `to_json`'s inverse.

        Args:
            entries: the report's top-level keys and their values.

        Returns:
            The report.

        Raises:
            TypeError: for a key the report does not have, or a required key missing.
        """
        known = {f.name for f in fields(cls)}
        unknown = set(entries) - known
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        values = dict(entries)
        for name, (kind, many) in cls.RECORDS.items():
            value = values.get(name)
            if value is not None:
                values[name] = [_record(kind, v) for v in value] if many else _record(kind, value)
        return cls(**values)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema (draft 2020-12) of `to_json`'s dictionary, generated from the fields'
        types: each field a property, the required ones those that are not optional, records
        nested as their own schemas, and a field typed ``Any`` left open.

        Returns:
            The schema, as a dictionary (``json.dumps`` writes it)."""
        hints = get_type_hints(cls)
        own = fields(cls)
        return {
            "title": cls.__name__,
            "description": (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
            "type": "object",
            "properties": {f.name: _schema_of(hints[f.name]) for f in own},
            "required": [f.name for f in own if not f.metadata.get("optional")],
            "additionalProperties": False,
        }

    def _keys(self) -> list[str]:
        return [f.name for f in fields(self) if not (f.metadata.get("optional") and getattr(self, f.name) is None)]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


#: the JSON type of each Python type a field may have
_JSON_TYPES: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _schema_of(kind: Any) -> dict[str, Any]:
    """The JSON Schema of a field's type: its JSON type, a union as ``anyOf``, a list as an
    array of its items, a dictionary as an object of its values, a record as its own schema."""
    origin, arguments = get_origin(kind), get_args(kind)
    if kind in _JSON_TYPES:
        return {"type": _JSON_TYPES[kind]}
    if origin in (Union, UnionType):
        return {"anyOf": [_schema_of(argument) for argument in arguments]}
    if origin in (list, tuple, Sequence) or kind in (list, tuple):
        items = [a for a in arguments if a is not Ellipsis]
        return {"type": "array", **({"items": _schema_of(items[0])} if len(set(items)) == 1 else {})}
    if origin in (dict, Mapping) or kind is dict:
        return {"type": "object", **({"additionalProperties": _schema_of(arguments[1])} if arguments else {})}
    if isinstance(kind, type) and issubclass(kind, Report):
        return kind.json_schema()
    return {}  # Any: left open


def _record(kind: type[Report], value: Any) -> Any:
    return value if isinstance(value, kind) else kind.from_json(value)


@dataclass(frozen=True, eq=False)
class Record(Report):
    """An entry of a report (a sweep point, a checked point, ...): typed fields read as
    attributes (``point.checked.follows``), and, as before they were typed, as the keys of a
    read-only mapping (``point["checked"]["follows"]``). Equal to a record or a mapping of the
    same JSON."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self.to_json() == _json_of(dict(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to dictionaries, which have no hash


def table_cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def markdown_table(rows: Sequence[Mapping], columns: Sequence[tuple[str, str]]) -> str:
    """``columns`` are ``(key, heading)`` pairs."""
    lines = ["| " + " | ".join(heading for _, heading in columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(table_cell(row.get(key)) for key, _ in columns) + " |" for row in rows]
    return "\n".join(lines)


def list_cell(values: list) -> str:
    return ", ".join(table_cell(v) for v in values)


def crossover_line(crossover: Mapping) -> str:
    """A crossover entry in words: the parameter's value (and its exact form where it has a
    radical one) and which network is faster on each side."""
    first, second = crossover["networks"]
    return (
        f"crossover {first} / {second}: {crossover['parameter']}* = {exact_cell(crossover)} "
        f"({crossover['faster_below']} faster below, {crossover['faster_above']} above)"
    )


def exact_cell(entry: Mapping) -> str:
    """An exact value (``{"expr", "value"}``) for a table: its value, and its expression where it
    is written with radicals (an algebraic number with no radical form is given by value alone)."""
    if "algebraic" in entry or "CRootOf" in entry["expr"] or is_number(entry["expr"]):
        return table_cell(entry["value"])
    return f"{table_cell(entry['value'])} = `{entry['expr']}`"


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (an exact value written as one needs no expression)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
