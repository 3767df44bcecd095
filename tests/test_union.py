"""The union network: every candidate pathway trained together by the exact reduced flow."""

import json

import pytest

from gdln.cli import main
from gdln.derive.spec import context_task, task_from_dict
from gdln.verify.union import union_network, union_report


def _small():
    return task_from_dict(context_task(4, 3, ["hierarchy"] * 3, "context-subsets"), "<small>")


def test_union_lists_each_distinct_pathway_once():
    task = _small()
    names = [p.name for p in union_network(task).pathways]
    assert names == ["common", "contexts-1", "contexts-2", "contexts-3", "contexts-1-2", "contexts-1-3", "contexts-2-3"]


@pytest.mark.slow
def test_pair_pathways_outgrow_single_context_pathways(tmp_path, capsys):
    """On 4 items x 3 contexts with hierarchies, the two-context pathways end far stronger than
    the one-context pathways (which still grow well above their seed: they do not stay there)."""
    report = union_report(_small())
    assert report["dynamics"] == "reduced flow" and report["final_loss"] < 0.05
    by_name = {p["name"]: p for p in report["pathways"]}
    for single in ("contexts-1", "contexts-2", "contexts-3"):
        for pair in ("contexts-1-2", "contexts-1-3", "contexts-2-3"):
            assert by_name[pair]["final"] > 10 * by_name[single]["final"]
        assert by_name[single]["log10_growth"] > 1
    spec = tmp_path / "small.toml"
    from gdln.derive.spec import to_toml

    spec.write_text(to_toml(context_task(4, 3, ["hierarchy"] * 3, "context-subsets")))
    assert main(["union", str(spec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["grow"] == report["grow"]


def test_union_names_apart_distinct_pathways_that_share_a_name():
    """Two networks may each call a different pathway ``context-1`` (the three-context example:
    one reads the items, the other every input); the union keeps both, named apart."""
    from gdln.derive.spec import load_spec

    from .helpers import ROOT

    task = load_spec(ROOT / "examples" / "three_contexts.toml")
    pathways = union_network(task).pathways
    names = [p.name for p in pathways]
    assert len(set(names)) == len(names) == 7
    assert "context-1" in names and "context-1 (ctx-only)" in names
    ours = next(p for p in pathways if p.name == "context-1 (ctx-only)")
    assert ours.inputs == task.network("ctx-only").pathways[0].inputs != task.network("common+ctx").pathways[1].inputs
