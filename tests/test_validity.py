"""Every verdict states validity (issue 39, point 5): one threshold, ``verify.rules.VALIDITY``,
judges the followed candidate and the aligned network in ``verify`` and the sweep's checks."""

from __future__ import annotations

import json

import pytest

from gdln.verify import rules
from gdln.verify.reports import validity_text

from .helpers import XOR_SPEC, run_cli


@pytest.mark.parametrize(
    ("deviation", "within"), [(0.0, True), (rules.VALIDITY, True), (rules.VALIDITY * 1.0001, False), (None, None)]
)
def test_within_validity_is_the_one_threshold(deviation, within):
    assert rules.within_validity(deviation) is within
    assert rules.within_validity(float("nan")) is None


def test_the_sweep_judges_by_the_same_threshold():
    from gdln.verify import sweep, sweep_checks

    assert sweep.VALIDITY is rules.VALIDITY
    assert not hasattr(sweep_checks, "VALIDITY")  # no second copy to drift


def test_the_verdict_in_words_names_both_levels_and_the_threshold():
    networks = [
        {"name": "common+2", "max_deviation": 0.0708, "within_validity": False, "from_alignment": False},
        {"name": "common+1", "max_deviation": 0.2, "within_validity": False, "from_alignment": False},
        {"name": "aligned", "max_deviation": 0.0257, "within_validity": True, "from_alignment": True},
    ]
    said = validity_text("common+2", networks, 0.05)
    assert "common+2 (followed): max deviation 7.08% of the initial loss, outside where the theory holds (5%)" in said
    assert "aligned (the GDLN of the settled gates): max deviation 2.57% of the initial loss, within" in said
    assert "common+1" not in said


def test_verify_states_validity_in_json_text_and_markdown(capsys):
    argv = ["verify", str(XOR_SPEC), "--seeds", "1", "--epochs", "3000"]
    code, out, _ = run_cli(capsys, [*argv, "--json"])
    report = json.loads(out)
    assert code == 0 and report["validity"] == rules.VALIDITY
    followed = next(n for n in report["networks"] if n["name"] == report["follows"])
    assert report["within_validity"] is (followed["max_deviation"] <= rules.VALIDITY)
    for network in report["networks"]:
        assert network["within_validity"] is rules.within_validity(network["max_deviation"])
    code, out, _ = run_cli(capsys, argv)
    assert f"{report['follows']} (followed): max deviation" in out and "where the theory holds (5%)" in out
    code, out, _ = run_cli(capsys, [*argv, "--markdown"])
    assert "where the theory holds (5%)" in out
