"""The theory in docs/ stays in step with the shared copy, and the equation map names real code."""

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
