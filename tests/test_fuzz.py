"""Fuzzing the command line with generated specs, valid and broken.

Every run must end in one of two ways: exit 0 with valid, finite JSON, or exit 2 with exactly
one line on stderr (``gdln: error: ...``). A traceback, a hang (each run is limited to 30 s of CPU time, tests.helpers),
NaN or Infinity in the JSON, or any other exit status fails the test. The strategies are
derandomized, so the examples are the same on every run.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gdln.derive.errors import SpecError
from gdln.derive.spec import parse_expression

from .helpers import FUZZ, HANG_SECONDS, cpu_seconds, run_cli, time_limit
from .spec_strategies import broken_spec, corrupted, expression_text, to_toml, valid_spec

# --- tests --------------------------------------------------------------------------------


@settings(max_examples=300, **FUZZ)
@given(expression_text())
def test_expressions_parse_or_fail_in_one_line_quickly(text):
    delta = __import__("sympy").Symbol("Delta", positive=True)
    start = cpu_seconds()
    with time_limit(HANG_SECONDS):
        try:
            parse_expression(text, {"Delta": delta}, "spec.toml", "data.inputs[0][0]")
        except SpecError as error:
            message = str(error)
            assert message.startswith("spec.toml: data.inputs[0][0]: ") and "\n" not in message
    assert cpu_seconds() - start < 5


@pytest.mark.slow
@settings(max_examples=60, **FUZZ)
@given(data=st.data())
def test_broken_specs_end_in_one_line_or_finite_json(capsys, tmp_path_factory, data):
    document = data.draw(broken_spec())
    text = data.draw(corrupted(to_toml(document)))
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_text(text, encoding="utf-8")
    run_cli(capsys, ["race", str(path), "--json"])


@pytest.mark.slow
@settings(max_examples=12, **FUZZ)
@given(
    document=valid_spec(),
    setting=st.sampled_from([None, "Delta=0.25", "Delta=3", "Delta=sqrt(-1)", "Delta=1e300", "Delta=0"]),
)
def test_valid_specs_race(capsys, tmp_path_factory, document, setting):
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_text(to_toml(document), encoding="utf-8")
    argv = ["race", str(path), "--json"] + (["--set", setting] if setting else [])
    run_cli(capsys, argv)


@settings(max_examples=40, **FUZZ)
@given(
    flag=st.sampled_from(["--seeds", "--epochs"]),
    value=st.one_of(
        st.integers(max_value=0),
        st.integers(min_value=10**8 + 1),
        st.sampled_from(["1e6", "abc", "", "100000000000000000000", "1001"]),
    ),
)
def test_out_of_range_flags_are_refused_before_any_work(capsys, flag, value):
    from .helpers import XOR_SPEC

    assume(not (flag == "--epochs" and value == "1001"))  # 1001 is above the seed limit only

    start = cpu_seconds()
    code, _, _ = run_cli(capsys, ["simulate", str(XOR_SPEC), "--model", "relu", flag, str(value), "--json"])
    assert code == 2
    assert cpu_seconds() - start < 5


@pytest.mark.slow
@settings(max_examples=8, **FUZZ)
@given(document=valid_spec(), command=st.sampled_from(["simulate", "verify", "derive"]))
def test_valid_specs_train_and_derive(capsys, tmp_path_factory, document, command):
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_text(to_toml(document), encoding="utf-8")
    argv = {
        "simulate": ["simulate", str(path), "--model", "relu", "--epochs", "50", "--seeds", "2", "--json"],
        "verify": ["verify", str(path), "--epochs", "50", "--seeds", "1", "--json"],
        "derive": ["derive", str(path), "--network", "n0", "--json"],
    }[command]
    run_cli(capsys, argv)


# 30 cases, about 10 a command (60 took 2-3 minutes of a CI run): the same broken-spec kinds
# reach `race` 60 times above, and most of a case's time here is compiling a training run
@pytest.mark.slow
@settings(max_examples=30, **FUZZ)
@given(data=st.data(), command=st.sampled_from(["derive", "simulate", "verify"]))
def test_broken_specs_other_commands(capsys, tmp_path_factory, data, command):
    document = data.draw(broken_spec())
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_text(to_toml(document), encoding="utf-8")
    argv = {
        "derive": ["derive", str(path), "--network", "n0", "--json"],
        "simulate": ["simulate", str(path), "--model", "relu", "--epochs", "50", "--seeds", "1", "--json"],
        "verify": ["verify", str(path), "--epochs", "50", "--seeds", "1", "--json"],
    }[command]
    run_cli(capsys, argv)
