"""Typed reports (issue 37): each report is a frozen dataclass whose fields are the top-level keys
of the JSON contract in the docs, and whose ``to_json()`` is exactly the dictionary its builder
assembled; the commands print ``to_json()``."""

import copy
import dataclasses
import json
import re

import pytest

from gdln.cli import main
from gdln.derive.spec import load_spec
from gdln.verify.files import finite_json
from gdln.verify.race import race_report
from gdln.verify.reports import (
    AlignReport,
    CheckedPoint,
    Crossover,
    DepthReport,
    DeriveReport,
    FindGatesReport,
    GraphVerifyReport,
    LemmaReport,
    NetworkAtPoint,
    PointAssumptions,
    PredictedFollows,
    RaceReport,
    Record,
    Report,
    SharedDeriveReport,
    SimulateReport,
    SweepPoint,
    SweepReport,
    UnionReport,
    UniqueReport,
    VerifiedNetwork,
    VerifyReport,
    ZeroShotReport,
)

from .helpers import ROOT, XOR_SPEC

#: where each report's contract is written: (page, the text that opens it)
CONTRACTS = {
    RaceReport: ("json.md", "`race` JSON: `"),
    VerifyReport: ("json.md", "`verify` JSON: `"),
    SimulateReport: ("json.md", "`simulate` JSON: `"),
    UniqueReport: ("cli.md", "JSON:\n  `"),
    SweepReport: ("phase_diagrams.md", "## JSON\n\n```text\n"),
    DeriveReport: ("json.md", "`derive` JSON: `"),
    SharedDeriveReport: ("json.md", "`derive` JSON of a network whose paths share edges ([Routing](routing.md)): `"),
    GraphVerifyReport: ("json.md", "`verify` JSON of a task whose networks share edges ([Routing](routing.md)): `"),
    UnionReport: ("json.md", "`union` JSON: `"),
    AlignReport: ("json.md", "`align` JSON: `"),
    FindGatesReport: ("json.md", "`find-gates` JSON: `"),
    LemmaReport: ("json.md", "`lemma` JSON: `"),
    ZeroShotReport: ("json.md", "`zero-shot` JSON: `"),
    DepthReport: ("json.md", "Section 6 (`verify.graphs.depth_report`, Python only; [Routing](routing.md)): `"),
}


def documented_keys(page: str, opening: str) -> tuple[list[str], list[str]]:
    """The top-level keys of the contract that follows ``opening`` on ``page``: those always
    present, and those marked ``?`` (present where they apply)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    start = text.index(opening) + len(opening)
    assert text[start] == "{", (page, text[start : start + 20])
    depth, keys, optional = 0, [], []
    for match in re.finditer(r'[{}\[\]]|"(\w+)"(\?)?', text[start:]):
        token = match.group(0)
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
            if depth == 0:
                return keys, optional
        elif depth == 1:
            (optional if match.group(2) else keys).append(match.group(1))
    raise AssertionError(f"{page}: the contract after {opening!r} does not close")


@pytest.mark.parametrize("report_type", list(CONTRACTS), ids=lambda t: t.__name__)
def test_fields_are_the_documented_keys(report_type):
    """Every field is a documented top-level key in the documented order, the optional ones
    (absent from the JSON unless they apply) exactly those the contract marks with ``?``; and
    each field is described in the class's Attributes section."""
    assert_fields_documented(report_type, CONTRACTS[report_type])


def assert_fields_documented(kind: type, contract: tuple[str, str]) -> None:
    """``kind``'s fields are the contract's keys in order, its optional fields those marked
    ``?``, each described in its Attributes; it is a frozen dataclass."""
    keys, optional = documented_keys(*contract)
    fields = dataclasses.fields(kind)
    assert [f.name for f in fields if not f.metadata.get("optional")] == keys
    assert [f.name for f in fields if f.metadata.get("optional")] == optional
    attributes = kind.__doc__.split("Attributes:")[1]
    assert [f.name for f in fields if f"\n        {f.name}: " not in attributes] == []
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen


#: where each typed record's contract is written, inside its report's: (page, the text that opens it)
RECORD_CONTRACTS = {
    SweepPoint: ("phase_diagrams.md", '"points": ['),
    NetworkAtPoint: ("phase_diagrams.md", '"networks": ['),
    PointAssumptions: ("phase_diagrams.md", '\n             "assumptions": '),
    PredictedFollows: ("phase_diagrams.md", '"predicted_follows": '),
    CheckedPoint: ("phase_diagrams.md", '"checked": '),
    Crossover: ("json.md", '"crossovers": ['),
    VerifiedNetwork: ("json.md", '"within_validity", "networks": ['),
}


@pytest.mark.parametrize("record_type", list(RECORD_CONTRACTS), ids=lambda t: t.__name__)
def test_records_fields_are_the_documented_keys(record_type):
    """As for the reports: each record's fields are its documented keys in order, the optional
    ones those marked ``?``, each described in its Attributes; it is frozen, and a `Record`."""
    assert_fields_documented(record_type, RECORD_CONTRACTS[record_type])
    assert issubclass(record_type, Record)


def test_a_checked_sweep_s_points_are_records_read_by_attribute_and_by_key():
    """``sweep.points[i].checked.follows`` and ``sweep.points[i]["checked"]["follows"]`` read the
    same; the report read back from its JSON gives the same JSON text, byte for byte."""
    from gdln.verify.sweep import parse_axis, sweep_report

    task = load_spec(XOR_SPEC).with_training(seeds=1, epochs=300)
    report = sweep_report(task, [parse_axis("Delta=0.5:3:2", task)], check=1)
    (point,) = [p for p in report.points if p.checked is not None]
    assert isinstance(point, SweepPoint) and isinstance(point.checked, CheckedPoint)
    assert (
        point.checked.follows
        == point["checked"]["follows"]
        == report.to_json()["points"][report.points.index(point)]["checked"]["follows"]
    )
    assert point.checked.follows in {n.name for n in point.networks}
    assert isinstance(point.predicted_follows, PredictedFollows) and isinstance(point.assumptions, PointAssumptions)
    text = json.dumps(report.to_json(), allow_nan=True)
    matches_schema(json.loads(text), SweepReport.json_schema())  # the records' schemas nested in it
    again = SweepReport.from_json(json.loads(text))
    assert json.dumps(again.to_json(), allow_nan=True) == text
    assert again == report and again.points[0] == report.to_json()["points"][0]  # a record equals its JSON


@pytest.fixture
def built(monkeypatch):
    """The dictionaries the report builders hand to ``from_json``, as they were handed (the
    reports', not those of the records ``from_json`` reads inside them)."""
    handed: list[dict] = []
    original = Report.from_json.__func__

    def recording(cls, entries):
        if not issubclass(cls, Record):  # a report, not the records read inside it
            handed.append(copy.deepcopy(dict(entries)))
        return original(cls, entries)

    monkeypatch.setattr(Report, "from_json", classmethod(recording))
    return handed


def matches_schema(value, schema: dict, where: str = "$") -> None:
    """``value`` (JSON read back, NaN kept) is of ``schema``, the subset of JSON Schema that
    `Report.json_schema` writes: a type, ``anyOf``, array items, object properties, required
    keys, no others, and values of an open object."""
    if "anyOf" in schema:
        failures = []
        for option in schema["anyOf"]:
            try:
                matches_schema(value, option, where)
                return
            except AssertionError as failure:
                failures.append(str(failure))
        raise AssertionError(f"{where}: {value!r} is none of {failures}")
    kinds = {"string": str, "boolean": bool, "integer": int, "number": (int, float), "null": type(None)}
    kind = schema.get("type")
    if kind in kinds:
        assert isinstance(value, kinds[kind]) and (kind in ("boolean",) or not isinstance(value, bool)), (
            f"{where}: {value!r} is not {kind}"
        )
    elif kind == "array":
        assert isinstance(value, list), f"{where}: {value!r} is not an array"
        for k, item in enumerate(value):
            matches_schema(item, schema.get("items", {}), f"{where}[{k}]")
    elif kind == "object":
        assert isinstance(value, dict), f"{where}: {value!r} is not an object"
        properties = schema.get("properties", {})
        assert not set(schema.get("required", ())) - set(value), f"{where}: missing {schema['required']}"
        for key, item in value.items():
            if key in properties:
                matches_schema(item, properties[key], f"{where}.{key}")
            else:
                assert schema.get("additionalProperties", True) is not False, f"{where}: unknown key {key}"
                matches_schema(item, schema.get("additionalProperties") or {}, f"{where}.{key}")


def same_as_built(report: Report, entries: dict) -> None:
    """``to_json()`` is the builder's dictionary, key by key and in its order, and of the JSON
    schema generated from the report's fields."""
    matches_schema(json.loads(json.dumps(report.to_json(), allow_nan=True)), type(report).json_schema())
    produced = report.to_json()
    assert list(produced) == list(entries)
    for key, value in entries.items():
        assert json.dumps(produced[key], sort_keys=True) == json.dumps(value, sort_keys=True), key
        assert report[key] is getattr(report, key)  # the read-only view reads the fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.winner = "changed"  # type: ignore[misc]
    produced.clear()  # a copy: the report keeps its keys
    assert report.to_json().keys() == entries.keys()


def cli_json(capsys, argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def strict(report: Report) -> dict:
    """The report as the command prints it: strict JSON, non-finite numbers listed."""
    clean, replaced = finite_json(report.to_json())
    if replaced:
        clean["non_finite"] = replaced
    return json.loads(json.dumps(clean))


def test_race_and_unique_reports_are_their_builders_dictionaries(built, capsys):
    from gdln.verify.uniqueness import unique_report

    task = load_spec(XOR_SPEC)
    race = race_report(task)
    assert isinstance(race, RaceReport)
    same_as_built(race, built[-1])
    assert cli_json(capsys, ["race", str(XOR_SPEC)]) == strict(race)

    unique = unique_report(task)
    assert isinstance(unique, UniqueReport)
    same_as_built(unique, built[-1])
    assert cli_json(capsys, ["unique", str(XOR_SPEC)]) == strict(unique)


def test_verify_report_is_its_builders_dictionary(built, capsys):
    from gdln.verify.following import verify_report

    task = load_spec(XOR_SPEC)
    report = verify_report(task, seeds=1, epochs=300)
    assert isinstance(report, VerifyReport)
    same_as_built(report, built[-1])
    assert "alignment" in report and "census" not in report  # an optional key only where it applies
    printed = cli_json(capsys, ["verify", str(XOR_SPEC), "--seeds", "1", "--epochs", "300"])
    assert printed.keys() == report.to_json().keys()
    assert [n["name"] for n in printed["networks"]] == [n["name"] for n in report.networks]


def test_sweep_report_is_its_builders_dictionary(built, capsys):
    from gdln.verify.sweep import parse_axis, sweep_report

    task = load_spec(XOR_SPEC)
    report = sweep_report(task, [parse_axis("Delta=0.5:3:3", task)])
    assert isinstance(report, SweepReport)
    # the report's own dictionary: its points' records are built from theirs after it
    same_as_built(report, next(entries for entries in reversed(built) if "points" in entries))
    printed = cli_json(capsys, ["sweep", str(XOR_SPEC), "--grid", "Delta=0.5:3:3"])
    for key in ("axes", "points", "crossovers", "agreement"):
        assert printed[key] == strict(report)[key]


@pytest.mark.parametrize("network", ["linear", "xor"])
def test_derive_report_is_its_builders_dictionary(built, capsys, xor_models, network):
    """``gdln derive --json`` prints the typed report's JSON; the summary (what ``gdln derive``
    prints, read back from the derivation cache) has the report's keys, its texts left out."""
    from gdln.verify.derivation_report import derive_report, derive_summary

    report = derive_report(xor_models.task, network, models=xor_models)
    assert isinstance(report, DeriveReport)
    same_as_built(report, built[-1])
    assert "coupling_numbers" not in report and "crossovers_not_derived" not in report
    assert cli_json(capsys, ["derive", str(XOR_SPEC), "--network", network]) == strict(report)
    summary = derive_summary(xor_models.task, network, models=xor_models)
    assert isinstance(summary, DeriveReport) and summary.keys() == report.keys()
    assert summary.speed == report.speed and summary.crossovers == report.crossovers
    assert "sigma_yx" in report.pathways[0] and "sigma_yx" not in summary.pathways[0]
    table = [line for line in summary._repr_markdown_().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in table[2:]] == [f"| {p['name']}" for p in report.pathways]


def test_shared_derive_report_is_its_builders_dictionary(built, capsys, tmp_path):
    """A network whose paths share edges derives to a `SharedDeriveReport`, printed by
    ``gdln derive --json``; its race is a `RaceReport`."""
    from gdln.derive.spec import routing_task, task_from_dict, to_toml
    from gdln.verify.graphs import shared_derive_report, shared_race_report

    spec = routing_task(2, 1)
    path = tmp_path / "routing.toml"
    path.write_text(to_toml(spec))
    task = task_from_dict(spec, source=str(path))
    report, _ = shared_derive_report(task, "share-all")
    assert isinstance(report, SharedDeriveReport)
    same_as_built(report, built[-1])
    assert report.assumptions["holds"] and report.odes and report.loss is not None
    assert cli_json(capsys, ["derive", str(path), "--network", "share-all"]) == strict(report)
    race = shared_race_report(task)
    assert isinstance(race, RaceReport)
    same_as_built(race, built[-1])
    assert race.winner == race.ranking[0]


def test_the_generated_schema_is_the_fields_typed_and_refuses_what_they_refuse():
    """The schema of a record is its fields (the documented keys, tested above), each typed:
    a checked point's JSON passes, and a wrong type, an unknown key or a missing one fails."""
    schema = CheckedPoint.json_schema()
    assert list(schema["properties"]) == [f.name for f in dataclasses.fields(CheckedPoint)]
    assert schema["properties"]["seeds"] == {"type": "integer"}
    point = {
        "follows": "xor",
        "max_deviation": 0.01,
        "deviations": {"xor": 0.01, "linear": None},
        "seeds": 3,
        "lead": 0.1,
        "seed_error": 0.01,
        "lead_needed": 0.02,
        "decided": True,
        "reason": None,
        "t_half": float("nan"),
    }
    matches_schema(point, schema)
    for broken in ({**point, "seeds": "3"}, {**point, "other": 1}, {k: v for k, v in point.items() if k != "follows"}):
        with pytest.raises(AssertionError):
            matches_schema(broken, schema)
    assert json.loads(json.dumps(SweepReport.json_schema()))  # plain JSON


def test_every_report_type_has_a_contract():
    """Each report and record type of ``verify.reports`` is listed above, so its fields are
    checked against the documentation."""
    import inspect

    from gdln.verify import reports

    defined = {
        value
        for value in vars(reports).values()
        if inspect.isclass(value) and issubclass(value, Report) and value not in (Report, Record)
    }
    assert defined == set(CONTRACTS) | set(RECORD_CONTRACTS)


@pytest.mark.parametrize(
    "command",
    [
        ["lemma", str(XOR_SPEC)],
        ["align", str(XOR_SPEC), "--seeds", "1", "--write-spec", "{tmp}/aligned.toml"],
    ],
    ids=lambda argv: argv[0],
)
def test_other_commands_print_their_typed_report(built, capsys, tmp_path, command):
    """The commands built on the other reports print the report's JSON: what the builder handed
    to its type, and with ``--write-spec`` the file written."""
    argv = [part.replace("{tmp}", str(tmp_path)) for part in command]
    printed = cli_json(capsys, argv)
    entries = built[-1]
    if "--write-spec" in argv:  # the command notes the file in the report it prints
        entries = {**entries, "written": argv[-1]}
        assert (tmp_path / "aligned.toml").is_file()
    assert printed == json.loads(json.dumps(entries))
