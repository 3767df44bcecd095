"""The figures build their tasks through the Python API; the shipped examples are the same tasks."""

import pytest

from gdln.derive.spec import context_task, load_spec, task_from_dict, to_toml, xor_task

from .helpers import ROOT


def _same_task(first, second):
    assert first.inputs == second.inputs and first.targets == second.targets
    assert first.parameters == second.parameters and first.training == second.training
    assert [(n.name, n.pathways) for n in first.networks] == [(n.name, n.pathways) for n in second.networks]


def test_xor_builder_is_the_xor_example():
    _same_task(task_from_dict(xor_task(), "xor_task"), load_spec(ROOT / "examples" / "xor.toml"))


@pytest.mark.parametrize(
    "name, blocks", [("section4_context", ["hierarchy", "ring", "cross"]), ("section5_k3", ["hierarchy"] * 3)]
)
def test_context_builder_writes_the_context_examples(name, blocks):
    assert to_toml(context_task(8, 3, blocks, "context-subsets")) == (ROOT / "examples" / f"{name}.toml").read_text()


def test_to_toml_keeps_the_parameters(tmp_path):
    """A spec written by to_toml reads back as the same task, its parameters included (they were
    dropped, and every expression in them refused)."""
    path = tmp_path / "xor.toml"
    path.write_text(to_toml(xor_task()))
    _same_task(load_spec(path), task_from_dict(xor_task(), "xor_task"))
