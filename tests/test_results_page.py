"""The Results page (docs/results.md): every table is what its command printed, and the quick
commands still print the same numbers.

The files under docs/results/ are written by ``python -m bench.results``; here each is checked
to name its command and to be on the page, and the quick entries are run again and compared
cell by cell: text exactly, numbers to ``RTOL`` (the race and the orbits are exact theory; a
verify run trains, so it gets ``TRAINED_RTOL``, ``TRAINED_ATOL`` for another machine's
floating point)."""

import re
import subprocess
import sys

import pytest

from bench.results import ENTRIES, FOLDER, HEADER, command_line

from .helpers import ROOT

PAGE = ROOT / "docs" / "results.md"
RTOL = 1e-6
TRAINED_RTOL, TRAINED_ATOL = 1e-3, 1e-4
QUICK = ["xor-race", "xor-unique"]
TRAINED = ["xor-verify-0.5"]
BY_NAME = {entry.name: entry for entry in ENTRIES}


def _body(text: str) -> list[list[str]]:
    """The output below the command line, as lines of cells (a table row's cells, or a
    line's words), numbers as they are printed."""
    lines = text.strip().splitlines()[2:]
    return [
        [cell.strip() for cell in line.strip("|").split("|")] if line.startswith("|") else line.split()
        for line in lines
        if line.strip()
    ]


def _number(cell: str) -> float | None:
    try:
        return float(cell.rstrip(",;%)").lstrip("("))
    except ValueError:
        return None


def _same(stored: str, fresh: str, rtol: float, atol: float) -> None:
    old, new = _body(stored), _body(fresh)
    assert len(old) == len(new)
    for old_line, new_line in zip(old, new):
        assert len(old_line) == len(new_line), (old_line, new_line)
        for a, b in zip(old_line, new_line):
            x, y = _number(a), _number(b)
            if x is None or y is None:
                assert a == b
            else:
                assert y == pytest.approx(x, rel=rtol, abs=atol), (old_line, new_line)


def _run(entry) -> str:
    result = subprocess.run(entry.argv(), cwd=ROOT, capture_output=True, text=True, check=True)
    return f"{HEADER}\n`{command_line(entry)}`\n\n{result.stdout.strip()}\n"


def test_every_entry_is_on_the_page_and_nothing_else():
    included = re.findall(r'--8<-- "results/([^"]+)\.md"', PAGE.read_text(encoding="utf-8"))
    names = sorted(BY_NAME)
    assert sorted(included) == names
    assert sorted(path.stem for path in FOLDER.glob("*.md")) == names


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda entry: entry.name)
def test_each_table_names_the_command_that_printed_it(entry):
    lines = (FOLDER / f"{entry.name}.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == HEADER
    assert lines[1].startswith(f"`{command_line(entry)}` (measured ")
    assert sum(line.startswith("| --- |") for line in lines) >= 1  # at least one table


def test_the_comparison_sees_a_changed_number():
    stored = (FOLDER / "xor-race.md").read_text(encoding="utf-8")
    changed = stored.replace("| 2953 |", "| 2954 |")
    assert changed != stored
    with pytest.raises(AssertionError):
        _same(stored, changed, RTOL, 0.0)


@pytest.mark.parametrize("name", QUICK)
def test_quick_entries_print_the_same_numbers_again(name):
    entry = BY_NAME[name]
    _same((FOLDER / f"{name}.md").read_text(encoding="utf-8"), _run(entry), RTOL, 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("name", TRAINED)
def test_trained_entries_print_the_same_numbers_again(name):
    entry = BY_NAME[name]
    _same((FOLDER / f"{name}.md").read_text(encoding="utf-8"), _run(entry), TRAINED_RTOL, TRAINED_ATOL)


def test_the_regenerator_refuses_an_unknown_entry():
    result = subprocess.run(
        [sys.executable, "-m", "bench.results", "no-such-entry"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "no-such-entry" in result.stderr
