"""The corpus of bad and extreme inputs that a hostile-user campaign found (issue 13), each as
a fixed case: exit 0 with valid, finite JSON, or exit 2 with one line naming the file and key;
never a traceback, never more than 30 s, never a partial file.

Cases that need a real process (file-size limits) run ``python -m gdln``; the rest run
the CLI in-process through :func:`tests.helpers.run_cli`, which enforces the contract."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from .helpers import ROOT, XOR_SPEC, run_cli

XOR_DATA = '[data]\ninputs = [[1, 1, "Delta/2"], [1, -1, "-Delta/2"], [-1, 1, "-Delta/2"], [-1, -1, "Delta/2"]]\ntargets = [[1], [-1], [-1], [1]]\n'
NETWORKS = (
    '[[network]]\nname = "linear"\n[[network.pathway]]\nname = "positive"\nactive = [0, 3]\n'
    '[[network.pathway]]\nname = "negative"\nactive = [1, 2]\n'
    '[[network]]\nname = "xor"\n'
    + "".join(f'[[network.pathway]]\nname = "point{n}"\nactive = [{n}]\n' for n in range(4))
)
TRAINING = "[training]\nlearning_rate = 0.01\ninit_scale = 1e-4\nepochs = 200\nhidden_units = 8\nseeds = 1\n"


def xor_spec(parameters: str = "Delta = 1.0", data: str = XOR_DATA, training: str = TRAINING) -> str:
    return f"[parameters]\n{parameters}\n{data}{training}{NETWORKS}"


def with_entry(entry: str, parameters: str = "Delta = 1.0") -> str:
    """The XoR spec with its first input entry replaced by ``entry`` (TOML text)."""
    data = XOR_DATA.replace("[[1, 1,", f"[[{entry}, 1,", 1)
    return xor_spec(parameters, data)


# name, spec text, extra arguments, expected exit status, a fragment of the error line
REFUSED = [
    ("integer beyond float range in data", with_entry(str(10**400)), [], "data.inputs[0][0]"),
    ("integer beyond float range in parameters", xor_spec(f"Delta = {10**400}"), [], "Delta"),
    ("exp overflow", with_entry('"exp(1000)"'), [], "data.inputs[0][0]"),
    ("exponent tower", with_entry('"((((64**64)**64)**64)**64)"'), [], "data.inputs[0][0]"),
    ("negative base to a fractional power", with_entry('"(-8)**(1/3)"'), [], "data.inputs[0][0]"),
    ("log of a negative", with_entry('"log(-Delta)"'), [], "data.inputs[0][0]"),
    ("sqrt of a negative parameter", with_entry('"sqrt(-Delta)"'), [], "data.inputs[0][0]"),
    ("zero to a negative power", with_entry('"0**-1"'), [], "data.inputs[0][0]"),
    ("division by zero that does not cancel", with_entry('"1/(Delta-1)"'), [], "data.inputs[0][0]"),
    ("complex data", with_entry('"sqrt(-1)"'), [], "data.inputs[0][0]"),
    ("complex --set", xor_spec(), ["--set", "Delta=sqrt(-1)"], "Delta"),
    ("NaN parameter", xor_spec("Delta = nan"), [], "Delta"),
    ("full-width t collides with t", xor_spec('"\uff54" = 1.0\nDelta = 1.0'), [], "t"),
    ("full-width Delta collides with Delta", xor_spec('"\uff24elta" = 1.0\nDelta = 1.0'), [], "Delta"),
    ("TOML nested 3000 deep", with_entry("[" * 3000 + "1" + "]" * 3000), [], ""),
]


@pytest.mark.parametrize("name, text, extra, fragment", REFUSED, ids=[case[0] for case in REFUSED])
def test_refused_in_one_line(capsys, tmp_path, name, text, extra, fragment):
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, ["race", str(path), "--json", *extra])
    assert code == 2, name
    assert fragment in err, err


ANSWERED = [
    ("float overflowing when squared", with_entry("1e200"), []),
    ("huge parameter", xor_spec(), ["--set", "Delta=1e300"]),
    ("crossover equation SymPy cannot solve", with_entry('"1 + sin(Delta)/10"'), []),
    ("all-zero targets", xor_spec(data=XOR_DATA.replace("[[1], [-1], [-1], [1]]", "[[0], [0], [0], [0]]")), []),
]


@pytest.mark.parametrize("name, text, extra", ANSWERED, ids=[case[0] for case in ANSWERED])
def test_answered_or_refused_never_a_traceback(capsys, tmp_path, name, text, extra):
    """Either outcome is allowed by the contract; run_cli checks exit 0 + finite JSON or exit 2 + one line."""
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    run_cli(capsys, ["race", str(path), "--json", *extra])


def test_unsolvable_crossover_falls_back_to_a_numeric_root(capsys, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(with_entry('"1 + sin(Delta)/10"'), encoding="utf-8")
    code, out, _ = run_cli(capsys, ["race", str(path), "--json"])
    assert code == 0
    report = json.loads(out)
    assert all(c["value"] is None or c["value"] > 0 for c in report["crossovers"])


@pytest.mark.parametrize("flag, value", [("--seeds", "100000000000000000000"), ("--epochs", str(10**30))])
def test_huge_counts_are_refused_before_any_work(capsys, flag, value):
    code, _, err = run_cli(capsys, ["simulate", str(XOR_SPEC), "--model", "relu", flag, value, "--json"])
    assert code == 2 and flag in err


def test_huge_hidden_layer_is_refused_not_aborted(capsys, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(
        xor_spec(training=TRAINING.replace("hidden_units = 8", "hidden_units = 1000000000000")), encoding="utf-8"
    )
    code, _, err = run_cli(capsys, ["simulate", str(path), "--model", "relu", "--json"])
    assert code == 2 and ("hidden_units" in err or "training" in err), err


def test_epochs_beyond_the_limit_are_refused_in_the_spec(capsys, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(xor_spec(training=TRAINING.replace("epochs = 200", f"epochs = {10**30}")), encoding="utf-8")
    code, _, err = run_cli(capsys, ["race", str(path), "--json"])
    assert code == 2 and "epochs" in err


def test_divergent_learning_rate_simulates_to_null_times(capsys, tmp_path):
    """A loss that is not finite from the start has no t_half or t_90 (not 0), and JSON stays strict."""
    path = tmp_path / "spec.toml"
    path.write_text(
        xor_spec(training=TRAINING.replace("learning_rate = 0.01", "learning_rate = 1e300")), encoding="utf-8"
    )
    code, out, _ = run_cli(capsys, ["simulate", str(path), "--model", "relu", "--json"])
    if code == 0:
        report = json.loads(out)
        assert report["t_half"] == [None] and report["t_90"] == [None], report
        assert report["notes"], report


def test_a_pathway_with_no_input_at_the_values_is_never_followed(capsys, tmp_path):
    """At Delta = 1 the pathway of network ``dead`` sees an all-zero input: its prediction is
    degenerate, so it must not be the network the ReLU network follows (or the run is refused)."""
    text = (
        '[parameters]\nDelta = 1.0\n[data]\ninputs = [["Delta-1", 0], [0, 1]]\ntargets = [[1], [1]]\n'
        + TRAINING
        + '[[network]]\nname = "dead"\n[[network.pathway]]\nname = "p"\nactive = [0]\n'
        + '[[network]]\nname = "alive"\n[[network.pathway]]\nname = "q"\n'
    )
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    code, out, _ = run_cli(capsys, ["verify", str(path), "--epochs", "200", "--seeds", "1", "--json"])
    if code == 0:
        assert json.loads(out)["follows"] != "dead"


def test_out_naming_a_folder_is_refused(capsys, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    code, _, err = run_cli(
        capsys,
        [
            "simulate",
            str(XOR_SPEC),
            "--model",
            "relu",
            "--epochs",
            "10",
            "--seeds",
            "1",
            "--out",
            str(folder),
            "--json",
        ],
    )
    assert code == 2 and "--out" in err
    assert not (tmp_path / "results.npz").exists()


@pytest.mark.parametrize("where", ["under a file", "unwritable"])
def test_figures_out_that_cannot_be_made_is_one_line(capsys, tmp_path, where):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "figures" if where == "under a file" else tmp_path / "locked" / "figures"
    if where == "unwritable":
        if os.geteuid() == 0:
            pytest.skip("root can write into any folder")
        (tmp_path / "locked").mkdir(mode=0o500)
    code, _, _ = run_cli(capsys, ["figures", "--quick", "--out", str(out)])
    assert code == 2


def _run_limited(argv: list[str], limit_bytes: int) -> subprocess.CompletedProcess:
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run(
        [sys.executable, "-m", "gdln", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=limit
    )


@pytest.mark.slow
def test_failed_write_keeps_the_old_file(tmp_path):
    """simulate --out at a file-size limit: exit 2 in one line, the old file intact, no leftovers."""
    target = tmp_path / "curves.npz"
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "gdln",
            "simulate",
            str(XOR_SPEC),
            "--model",
            "relu",
            "--epochs",
            "20",
            "--seeds",
            "1",
            "--out",
            str(target),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    before = target.read_bytes()
    failed = _run_limited(
        ["simulate", str(XOR_SPEC), "--model", "relu", "--epochs", "20000", "--seeds", "3", "--out", str(target)],
        len(before) + 1024,
    )
    assert failed.returncode == 2, failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curves.npz"]


@pytest.mark.slow
def test_failed_latex_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "xor.tex"
    failed = _run_limited(["derive", str(XOR_SPEC), "--network", "xor", "--latex", str(target)], 512)
    assert failed.returncode == 2, failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr
    assert list(tmp_path.iterdir()) == []
