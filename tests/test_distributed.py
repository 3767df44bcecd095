"""Checked training shared over processes on JAX's multi-controller runtime (``gdln sweep
--processes``): two CPU processes on this machine give the JSON of one, and the options that
describe such a run are checked before any work."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys

import pytest

from gdln.commands.processes import COORDINATOR_ENV, PROCESS_ID_ENV, PROCESSES_ENV, ProcessSettings, process_settings
from gdln.derive.errors import GdlnError

from .helpers import XOR_SPEC, run_cli

#: seconds after which the processes of a run count as hung (each takes a few seconds of CPU)
HANG_SECONDS = 300


def _small_xor(tmp_path):
    """XoR with 3000 epochs of 32 units: the same kind of run as the spec's, in a few seconds."""
    text = XOR_SPEC.read_text(encoding="utf-8")
    text = text.replace("epochs = 12000", "epochs = 3000").replace("hidden_units = 128", "hidden_units = 32")
    assert "epochs = 3000" in text and "hidden_units = 32" in text
    spec = tmp_path / "xor.toml"
    spec.write_text(text, encoding="utf-8")
    return spec


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _environment() -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if key not in (PROCESSES_ENV, PROCESS_ID_ENV, COORDINATOR_ENV)
    }
    return {**env, "JAX_PLATFORMS": "cpu"}


@pytest.mark.slow
def test_two_processes_give_the_json_of_one(tmp_path):
    """Every checked number is exactly the one-process run's: each point is trained whole by one
    process, in the same program shape (a run's losses do not depend on which runs share its
    program, `numeric.training.train_relu_points`), predicted by the same code, and gathered as
    JSON text, which writes every float exactly. Only the timing differs."""
    spec = _small_xor(tmp_path)
    argv = [sys.executable, "-m", "gdln", "sweep", str(spec), "--grid", "Delta=0.5:2:3", "--check", "2", "--json"]
    coordinator = f"localhost:{_free_port()}"
    env = _environment()
    runs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        *(
            subprocess.Popen(
                [*argv, "--processes", "2", "--process-id", str(i), "--coordinator", coordinator],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in (0, 1)
        ),
    ]
    try:
        outputs = [run.communicate(timeout=HANG_SECONDS) for run in runs]
    finally:
        for run in runs:
            run.kill()
    for run, (_, err) in zip(runs, outputs):
        assert run.returncode == 0, err[-2000:]
    (one, _), (first, _), (second, second_err) = outputs
    assert second == "" and second_err == ""  # process 1 writes nothing
    alone, shared = json.loads(one), json.loads(first)
    assert alone["timing"]["processes"] == 1 and shared["timing"]["processes"] == 2
    checked = [p["checked"] for p in alone["points"] if p["checked"] is not None]
    assert len(checked) == 2 and all(c["follows"] is not None for c in checked)
    del alone["timing"], shared["timing"]
    assert shared == alone


def _arguments(**flags) -> argparse.Namespace:
    return argparse.Namespace(**{"processes": None, "process_id": None, "coordinator": None, **flags})


@pytest.fixture
def no_process_environment(monkeypatch):
    for name in (PROCESSES_ENV, PROCESS_ID_ENV, COORDINATOR_ENV):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_process_settings(no_process_environment):
    assert process_settings(_arguments()) is None
    assert process_settings(_arguments(processes="1")) is None
    assert process_settings(_arguments(processes="auto")) == ProcessSettings(None, None, None)
    two = _arguments(processes="2", process_id="1", coordinator="node7:1234")
    assert process_settings(two) == ProcessSettings("node7:1234", 2, 1)
    # the environment stands in for an absent flag, and a flag wins over it
    no_process_environment.setenv(PROCESSES_ENV, "4")
    no_process_environment.setenv(PROCESS_ID_ENV, "3")
    no_process_environment.setenv(COORDINATOR_ENV, "[::1]:99")
    assert process_settings(_arguments()) == ProcessSettings("[::1]:99", 4, 3)
    assert process_settings(_arguments(process_id="0")) == ProcessSettings("[::1]:99", 4, 0)


@pytest.mark.parametrize(
    ("flags", "environment", "named"),
    [
        ({"processes": "two"}, {}, "--processes"),
        ({"processes": "0"}, {}, "--processes"),
        ({}, {PROCESSES_ENV: "-1"}, PROCESSES_ENV),
        ({"processes": "2", "coordinator": "localhost:5000"}, {}, "--processes: 2 processes need --process-id"),
        ({"processes": "2", "process_id": "0"}, {}, "--processes: 2 processes need --coordinator"),
        ({"processes": "2", "process_id": "2", "coordinator": "localhost:5000"}, {}, "--process-id"),
        ({"processes": "2", "process_id": "x", "coordinator": "localhost:5000"}, {}, "--process-id"),
        ({"processes": "2", "process_id": "0", "coordinator": "localhost"}, {}, "--coordinator"),
        ({"processes": "2", "process_id": "0", "coordinator": "localhost:70000"}, {}, "--coordinator"),
        ({"processes": "2", "process_id": "0"}, {COORDINATOR_ENV: "host:"}, COORDINATOR_ENV),
        ({"process_id": "1"}, {}, "--process-id"),
        ({"processes": "auto", "coordinator": "localhost:5000"}, {}, "--coordinator"),
    ],
)
def test_bad_process_settings_name_the_option(no_process_environment, flags, environment, named):
    for name, value in environment.items():
        no_process_environment.setenv(name, value)
    with pytest.raises(GdlnError) as error:
        process_settings(_arguments(**flags))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(named if " " in named else f"{named}: ")


def test_a_process_without_its_coordinator_stops_in_one_line():
    """A process other than 0 looks for the coordinator before JAX's client registers with it
    (which, finding none, aborts the whole process without an exception)."""
    from gdln.numeric.processes import join_processes

    with pytest.raises(GdlnError, match=r"^no coordinator answers within 0.2 s \(.*\); process 0 starts it$"):
        join_processes(f"localhost:{_free_port()}", 2, 1, timeout=0.2)


def test_bad_process_options_end_the_command_in_one_line(capsys, no_process_environment):
    argv = ["sweep", str(XOR_SPEC), "--grid", "Delta=1:2:2", "--check", "1", "--processes", "2"]
    code, out, err = run_cli(capsys, [*argv, "--process-id", "0"])
    assert (code, out, err.strip()) == (
        2,
        "",
        "gdln: error: --processes: 2 processes need --coordinator (or $GDLN_COORDINATOR) too",
    )


@pytest.mark.slow
def test_processes_given_different_sweeps_stop_before_training(monkeypatch, xor_task, xor_models):
    """Process 0 chooses the checked points for all; a process whose sweep differs (here, as if
    process 1 had other seeds) would train other points than process 0 thinks, so every process
    stops in one line before training."""
    import gdln.verify.sweep as sweep

    def as_if_two_processes(value):
        other = {**value, "sweep": value["sweep"][::-1]}
        return [value, other]

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(sweep, "gather_json", as_if_two_processes)
    monkeypatch.setattr(sweep, "train_relu_points", no_training)
    with pytest.raises(GdlnError, match="^process 1 was given another sweep than process 0"):
        sweep.sweep_report(xor_task, [sweep.parse_axis("Delta=1:1:1", xor_task)], check=1, models=xor_models)
