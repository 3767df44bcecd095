"""The theory in docs/ stays in step with the shared copy, and the equation map names real code."""

import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_THEORY = ROOT.parent / "shared" / "THEORY.md"


@pytest.mark.skipif(not SHARED_THEORY.exists(), reason="no shared THEORY.md beside the checkout")
def test_theory_in_docs_is_the_shared_theory():
    assert (ROOT / "docs" / "THEORY.md").read_text() == SHARED_THEORY.read_text()


def test_equation_map_names_existing_code():
    text = (ROOT / "docs" / "equations.md").read_text()
    paths = set(re.findall(r"`((?:derive|numeric|verify|paper_figures|gdln)/[\w/]+\.py)`", text))
    assert len(paths) >= 8
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def _readme_number(value) -> str:
    """A limit as the limits table (docs/specs.md) writes it: 10^k for float limits and for integers of a million
    or more that are powers of ten, MiB for byte counts (named *_BYTES), else the integer."""
    if isinstance(value, float) or (value >= 10**6 and str(value).rstrip("0") == "1"):
        exponent = round(math.log10(value))
        assert 10**exponent == value, value
        return f"10^{exponent}"
    return str(value)


def test_limits_table_gives_the_numbers_of_the_code():
    from gdln.derive.spec import expressions, limits

    text = (ROOT / "docs" / "specs.md").read_text()
    table = text[text.index("## Limits and checks") :]
    rows = {}
    for line in table.splitlines()[1:]:
        if not line.startswith("|"):
            if rows:  # the end of the table
                break
            continue
        what, limit = (cell.strip() for cell in line.strip("|").split("|", 1))
        if what not in ("what", "---"):
            rows[what] = limit
    expected = [  # (row, a constant as the row gives it)
        ("spec file", f"{limits.MAX_SPEC_BYTES // 2**20} MiB"),
        ("spec file", f"nested at most {limits.MAX_NESTING} deep"),
        ("integer literals", f"{limits.MAX_INTEGER_DIGITS} digits"),
        ("parameters", f"{limits.MAX_PARAMETERS} per spec"),
        ("data", f"{limits.MAX_DATA_ENTRIES} entries"),
        ("data file (`data.file`)", f"{limits.MAX_DATA_FILE_BYTES // 2**20} MiB"),
        ("labels", f"{limits.MAX_LABELS} per datapoint"),
        ("networks", f"{limits.MAX_NETWORKS} per spec"),
        ("networks", f"{limits.MAX_PATHWAYS} pathways per network"),
        ("networks", f"{limits.MAX_HIDDEN_LAYERS} hidden layers per pathway"),
        ("graph networks", f"{limits.MAX_NODES} nodes"),
        ("graph networks", f"{limits.MAX_EDGES} edges"),
        ("graph networks", f"{limits.MAX_PATHS} paths"),
        ("graph networks", f"{limits.MAX_HIDDEN_LAYERS} hidden nodes on any path"),
        ("gates", f"{_readme_number(limits.MAX_GATE_VALUES)} gate values"),
        ("an expression", f"{expressions.MAX_EXPRESSION_LENGTH} characters"),
        ("an expression", f"{expressions.MAX_EXPRESSION_NODES} syntax nodes"),
        ("an expression", f"{expressions.MAX_EXPRESSION_DEPTH} levels deep"),
        ("powers", f"at most {expressions.MAX_EXPONENT} in magnitude"),
        ("exact numbers", f"2^{expressions.MAX_NUMBER_BITS}"),
        ("`seeds` / `--seeds`", _readme_number(limits.MAX_SEEDS)),
        ("`epochs` / `--epochs`", _readme_number(limits.MAX_EPOCHS)),
        ("`hidden_units`, a pathway's `units`, a graph node's `size`", _readme_number(limits.MAX_UNITS)),
        (
            "`learning_rate`, `init_scale`",
            f"{_readme_number(limits.MAX_LEARNING_RATE)}, {_readme_number(limits.MAX_INIT_SCALE)}",
        ),
        ("`gdln zero-shot --domains`", f"{limits.MAX_DATA_ENTRIES} entries"),
        ("`gdln sweep`", f"seeds x grid points <= {limits.MAX_SWEEP_RUNS}"),
        ("`gdln sweep`", f"checked points x seeds <= {limits.MAX_SWEEP_TRAINING_RUNS}"),
        ("a training run", f"<= {_readme_number(limits.MAX_LOSS_VALUES)} recorded losses"),
        ("a training run", f"seeds x weights <= {_readme_number(limits.MAX_WEIGHTS)}"),
        ("a training run", f"hidden units <= {_readme_number(limits.MAX_ACTIVATIONS)}"),
    ]
    # whole numbers only: "1000 nodes" must not pass inside "10000 nodes"
    wrong = [
        (row, number)
        for row, number in expected
        if not re.search(r"(?<![\w^])" + re.escape(number) + r"(?![\w^])", rows.get(row, ""))
    ]
    assert not wrong, (wrong, rows)
    # every row is checked above: a limit added to the table names its constant here
    assert set(rows) == {row for row, _ in expected}


def test_readme_times_the_phase_diagram_as_the_results_page_measured_it():
    """The README's time for the command under its figure is the Results page's entry for the
    same command (with ``--markdown`` for ``--plot``), as ``python -m bench.results xor-phase-init``
    measured it: seconds, cores and date (issue 49: the README said 7-10 s where it took a minute)."""
    from bench.results import ENTRIES, FOLDER, command_line

    (entry,) = [e for e in ENTRIES if e.name == "xor-phase-init"]
    line = (FOLDER / f"{entry.name}.md").read_text(encoding="utf-8").splitlines()[1]
    found = re.search(r"\(measured (\S+) on (\d+) CPU cores, load average ([\d.]+) .*, ([\d.]+) s wall-clock\)$", line)
    assert found, line
    date, cores, load, seconds = found.groups()
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    command = command_line(entry).replace("--markdown", "--plot phase.png")
    assert f"`{command}`, in {round(float(seconds))} s on {cores} cores (load average {load}, measured {date}" in readme
