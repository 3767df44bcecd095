"""Context-task builders and single-unit realizability (issue 3, first part)."""

import json

import numpy as np
import pytest

from gdln.cli import main
from gdln.derive.spec import context_task, cross, hierarchy, ring, to_toml
from gdln.verify.realizability import realizable


def test_structures_match_the_papers_data():
    assert hierarchy(4) == [
        [1, 1, 1, 1],
        [1, 1, 0, 0],
        [0, 0, 1, 1],
        [1, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 1],
    ]
    assert len(hierarchy(8)) == 15
    rows = ring(8)
    assert len(rows) == 15 and rows[0] == [1] * 8
    assert [float(v) for v in rows[1]] == [0, 0.33, 0.66, 1, 1, 0.66, 0.33, 0]
    assert rows[2] == rows[1][1:] + rows[1][:1]  # each shift one item left of the one before
    assert rows[9:] == rows[1:7]
    quarters = cross(8)[3:7]
    assert [tuple(np.flatnonzero(r) + 1) for r in quarters] == [(1, 3), (2, 4), (5, 7), (6, 8)]


def test_context_task_spec_round_trips_through_toml(tmp_path, capsys):
    assert (
        main(
            [
                "task",
                "context",
                "--items",
                "8",
                "--contexts",
                "3",
                "--blocks",
                "hierarchy,ring,cross",
                "--candidates",
                "context-subsets",
            ]
        )
        == 0
    )
    path = tmp_path / "s4.toml"
    path.write_text(capsys.readouterr().out)
    from gdln.derive.spec import load_spec

    task = load_spec(path)
    assert (task.num_datapoints, task.num_inputs, task.num_outputs) == (24, 11, 60)
    assert [n.name for n in task.networks] == ["common+1", "common+2", "common+all"]
    two = task.network("common+2")
    assert len(two.pathways) == 1 + 3 and all(
        len(p.active) == 16 and p.inputs == tuple(range(8)) for p in two.pathways[1:]
    )
    # item 2 in context 3 has the common hierarchy features and only the third block on
    row = [float(v) for v in task.targets.row(2 * 8 + 1)]
    assert row[:15] == [float(r[1]) for r in hierarchy(8)]
    assert not any(row[15:45]) and row[45:] == [float(r[1]) for r in cross(8)]


def test_realizability_witness_and_the_combined_gate_of_lemma_4_1():
    spec = context_task(2, 2, ["hierarchy", "hierarchy"])
    x = np.array(spec["data"]["inputs"], float)
    ok, w = realizable(x, [0, 1])  # context 1 only
    assert ok and np.all(x[[0, 1]] @ w > 0) and np.all(x[[2, 3]] @ w <= 1e-9)
    assert realizable(x, [0, 3]) == (False, None)  # item 1 in context 1 and item 2 in context 2


def test_lemma_enumeration_on_two_items_two_contexts(capsys, tmp_path):
    path = tmp_path / "c22.toml"
    path.write_text(to_toml(context_task(2, 2, ["hierarchy", "hierarchy"])))
    assert main(["lemma", str(path), "--context-columns", "2,3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Independent count: a pattern is realizable iff some w = (w_item1, w_item2, w_c1, w_c2) puts
    # exactly those datapoints above zero; checked here by brute force over a grid of w.
    grid = np.linspace(-2, 2, 9)
    x = np.array(context_task(2, 2, ["hierarchy", "hierarchy"])["data"]["inputs"], float)
    seen = {
        frozenset(np.flatnonzero(x @ np.array(w) > 0))
        for w in np.array(np.meshgrid(grid, grid, grid, grid)).reshape(4, -1).T
    }
    seen.discard(frozenset())
    assert report["realizable"] == len(seen) == 13
    assert report["by_group"] == {"single-datapoint": 4, "context-only": 3, "other": 6}
    others = {frozenset(p["pattern"]) for p in report["patterns"] if p["group"] == "other"}
    assert frozenset([1, 3]) in others  # item-only gates: realizable, ruled out by the lemma's second step
    assert not any(len(p) == 2 and p in ({0, 3}, {1, 2}) for p in others)  # combined gates: never


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["task", "context", "--items", "8", "--contexts", "1", "--blocks", "hierarchy"], "at least 2 contexts"),
        (
            ["task", "context", "--items", "8", "--contexts", "2", "--blocks", "hierarchy,nope"],
            "--blocks: nope: unknown structure",
        ),
        (
            ["task", "context", "--items", "5", "--contexts", "2", "--blocks", "clusters,chain"],
            "--items: hierarchy: needs a power of two items, got 5",
        ),
    ],
)
def test_task_bad_input(capsys, argv, fragment):
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err


def test_pattern_bad_input(capsys, tmp_path):
    path = tmp_path / "c22.toml"
    path.write_text(to_toml(context_task(2, 2, ["hierarchy", "hierarchy"])))
    assert main(["realizable", str(path), "--pattern", "0,4"]) == 2
    assert "index 4 out of range" in capsys.readouterr().err
    assert main(["realizable", str(path), "--pattern", ","]) == 2
    assert "empty" in capsys.readouterr().err


@pytest.mark.parametrize(
    "old, new, fragment",
    [
        ("contexts = [1, 1, 2, 2]", "contexts = [1, 1, 2]", "data.contexts: expected a list of 4 context labels"),
        (
            "contexts = [1, 1, 2, 2]",
            "contexts = [1, 1, 0, 2]",
            "data.contexts[2]: expected a context number >= 1, got 0",
        ),
    ],
)
def test_bad_context_labels(capsys, tmp_path, old, new, fragment):
    text = to_toml(context_task(2, 2, ["hierarchy", "hierarchy"], "context-subsets"))
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new))
    assert main(["race", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
