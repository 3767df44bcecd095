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
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gdln.commands.processes import COORDINATOR_ENV, PROCESS_ID_ENV, PROCESSES_ENV, ProcessSettings, process_settings
from gdln.derive.errors import GdlnError
from gdln.numeric.processes import BIND_ENV

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
        key: value
        for key, value in os.environ.items()
        if key not in (PROCESSES_ENV, PROCESS_ID_ENV, COORDINATOR_ENV, BIND_ENV)
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
    import gdln.verify.sweep_training as training

    def as_if_two_processes(value):
        other = {**value, "sweep": value["sweep"][::-1]}
        return [value, other]

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(training, "gather_json", as_if_two_processes)
    monkeypatch.setattr(training, "train_relu_points", no_training)
    with pytest.raises(GdlnError, match="^process 1 was given another sweep than process 0"):
        sweep.sweep_report(xor_task, [sweep.parse_axis("Delta=1:1:1", xor_task)], check=1, models=xor_models)


def test_process_0_binds_its_coordinator_where_told(monkeypatch):
    """JAX's coordinator listens on every interface unless told a bind address: process 0 tells
    it the host of ``--coordinator`` (JAX's own variable still wins), and JAX's choice stays
    where JAX reads the run from the cluster."""
    import jax

    from gdln.numeric import processes

    given = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda *args, **kwargs: given.append(kwargs))
    monkeypatch.delenv(BIND_ENV, raising=False)
    processes.join_processes("127.0.0.1:29977", 2, 0)
    processes.join_processes(None, None, None)
    monkeypatch.setenv(BIND_ENV, "[::1]:29978")
    processes.join_processes("127.0.0.1:29977", 2, 0)
    assert [kwargs["coordinator_bind_address"] for kwargs in given] == ["127.0.0.1:29977", None, "[::1]:29978"]


def _listeners(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net writes them) of the TCP sockets listening on ``port``."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path("/proc/net", table).read_text().splitlines()[1:]:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp6").exists(), reason="reads the listening sockets from Linux's /proc/net")
def test_process_0_listens_on_the_coordinators_host_only(tmp_path):
    """Started with a coordinator on 127.0.0.1 and no partner, process 0 says what it waits for
    and listens on 127.0.0.1 alone, not on every interface (``[::]``, JAX's default)."""
    port = _free_port()
    argv = [sys.executable, "-m", "gdln", "sweep", str(XOR_SPEC), "--grid", "Delta=1:1:1", "--check", "1"]
    argv += ["--processes", "2", "--process-id", "0", "--coordinator", f"127.0.0.1:{port}"]
    run = subprocess.Popen(argv, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while not (listening := _listeners(port)) and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        run.kill()
        _, err = run.communicate()
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, and as IPv6 maps it
    assert listening and listening <= loopback, (listening, err[-2000:])
    assert (
        f"gdln: process 0 serves the coordinator at 127.0.0.1:{port}, waiting up to 300 s for the 2 processes"
        " of the run to join" in err.splitlines()
    )


class _Store:
    """A stand-in for the coordination service's key-value store, holding what process 1 posted."""

    def __init__(self, posted: dict[str, str]):
        self.values = dict(posted)

    def key_value_set(self, key, value, allow_overwrite=False):
        if key in self.values and not allow_overwrite:
            raise RuntimeError(f"ALREADY_EXISTS: {key}")
        self.values[key] = value

    def blocking_key_value_get(self, key, timeout_ms):
        return self.values[key]


def _as_process_0_of_2(monkeypatch, posted: dict[str, str]) -> _Store:
    from types import SimpleNamespace

    from gdln.numeric import processes

    store = _Store(posted)
    monkeypatch.setattr(processes, "jax", SimpleNamespace(process_count=lambda: 2, process_index=lambda: 0))
    monkeypatch.setattr(processes, "_coordination_client", lambda: store)
    monkeypatch.setattr(processes, "_GATHERS", iter([7]))
    return store


def test_a_gather_keeps_this_processs_own_entry(monkeypatch):
    """Process 0's entry is its own value, whatever the store holds under its number; another
    client that wrote process 0's keys first stops the run in one line, and so do entries that
    are not JSON text."""
    from gdln.numeric.processes import gather_json

    rogue = {"gdln/gather/7/1/parts": "1", "gdln/gather/7/1/0": '{"mine": 2}'}
    _as_process_0_of_2(monkeypatch, rogue)
    assert gather_json({"mine": 1}) == [{"mine": 1}, {"mine": 2}]
    first = {**rogue, "gdln/gather/7/0/0": '{"mine": 3}'}
    _as_process_0_of_2(monkeypatch, first)
    with pytest.raises(GdlnError, match=r"^process 0 cannot post its results \(ALREADY_EXISTS: gdln/gather/7/0/0\)$"):
        gather_json({"mine": 1})
    for parts, text, why in (("1", "{nan", "not JSON text"), ("x", "{}", "'x' as its number of parts")):
        _as_process_0_of_2(monkeypatch, {"gdln/gather/7/1/parts": parts, "gdln/gather/7/1/0": text})
        with pytest.raises(GdlnError, match=f"^process 1 posted .*{why}"):
            gather_json({"mine": 1})


def _honest_entry(task, losses) -> dict:
    """A checked entry as ``verify.sweep_training`` writes it, for ReLU ``losses`` ``(seeds, samples)``,
    read back from JSON as another process's would be."""
    import gdln.verify.sweep_training as sweep

    ts = np.arange(losses.shape[1], dtype=float)
    curves = {network.name: np.linspace(1.0, 0.1 * (k + 1), len(ts)) for k, network in enumerate(task.networks)}
    point = sweep.TrainedPoint(0, {}, task.training, None, ts, losses, curves)
    diverged = None if np.isfinite(losses).all() else 2
    return json.loads(json.dumps(sweep.checked_entry(replace(point, diverged_at=diverged))))


def test_gdlns_own_checked_entries_are_well_formed(xor_task):
    """The form another process's entries are held to is the one gdln writes: a trained point's
    entry, and a diverged one's, whose deviations are not finite."""
    from gdln.verify.sweep_shares import check_entry

    names = [network.name for network in xor_task.networks]
    seeds = xor_task.training.seeds
    losses = np.linspace(1.0, 0.1, 5)[None] * np.linspace(1.0, 1.1, seeds)[:, None]
    check_entry(_honest_entry(xor_task, losses), names, seeds)
    diverged = losses.copy()
    diverged[0, 2:] = np.nan
    entry = _honest_entry(xor_task, diverged)
    assert entry["follows"] is None and all(np.isnan(d) for d in entry["deviations"].values())
    check_entry(entry, names, seeds)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"max_deviation": float("nan")}, "max_deviation is 'nan', not a finite number or null"),
        ({"t_half": float("inf")}, "t_half is 'inf', not a finite number or null"),
        ({"lead": "0.5"}, "lead is '0.5', not a finite number or null"),
        ({"follows": "sneaky"}, "follows is 'sneaky', not a candidate's name or null"),
        ({"max_deviation": None}, "max_deviation is 'None', not null exactly where follows is"),
        ({"deviations": {}}, "deviations is '{}', not every candidate's deviation"),
        ({"seeds": 1}, "seeds is '1', not 3, the run's seeds"),
        ({"reason": "\x1b[2J"}, "reason is '\\x1b[2J', not a divergence or null"),
        ({"seed_error": -1.0}, "seed_error is '-1.0', not a number at least 0 or null"),
        ({"extra": 1}, "not an object with a checked entry's keys"),
    ],
)
def test_another_processs_malformed_entry_stops_the_run(xor_task, change, said):
    from gdln.verify.sweep_shares import share_entries

    names = [network.name for network in xor_task.networks]
    losses = np.linspace(1.0, 0.1, 5)[None] * np.linspace(1.0, 1.1, 3)[:, None]
    entry = _honest_entry(xor_task, losses)
    assert entry["follows"] is not None
    chosen = np.array([4, 9])
    own = {"entries": [[4, entry]], "seconds": 1.0}
    honest = {"entries": [[9, entry]], "seconds": 2.0}
    assert share_entries([own, honest], chosen, names, 3, 0) == [(4, entry), (9, entry)]
    bad = {"entries": [[9, {**entry, **change}]], "seconds": 2.0}
    with pytest.raises(GdlnError) as error:
        share_entries([own, bad], chosen, names, 3, 0)
    assert str(error.value) == (
        f"process 1 sent a malformed share of the checked points (point 9: {said}): only the processes of this run"
        " may reach its coordinator"
    )


@pytest.mark.parametrize(
    ("share", "said"),
    [
        ({"entries": [[4, None]], "seconds": 2.0}, "its entries are for points [4], not its share [9]"),
        ({"entries": [], "seconds": 2.0}, "its entries are for points [], not its share [9]"),
        ({"entries": [[9, None], [9, None]], "seconds": 2.0}, "its entries are for points [9, 9], not its share [9]"),
        ({"entries": [[9, None]], "seconds": float("nan")}, "seconds is 'nan', not a finite number at least 0"),
        ({"entries": [9], "seconds": 2.0}, "entries is not a list of [grid index, entry] pairs"),
        ([], "not an object of entries and seconds"),
    ],
)
def test_another_process_sends_only_its_own_share(share, said):
    """Process 1's share of the chosen points [4, 9] is [9]: an entry for process 0's point 4 (as
    a rogue client's overwrote it before) or a repeated one stops the run, before any is used."""
    from gdln.verify.sweep_shares import share_entries

    with pytest.raises(GdlnError) as error:
        share_entries([{"entries": [], "seconds": 0.0}, share], np.array([4, 9]), ["a"], 3, 0)
    assert str(error.value) == (
        f"process 1 sent a malformed share of the checked points ({said}): only the processes of this run may"
        " reach its coordinator"
    )


@pytest.mark.parametrize(
    "plan", [None, {"chosen": [0, 0], "sweep": "x"}, {"chosen": [5], "sweep": "x"}, {"chosen": []}]
)
def test_another_processs_malformed_plan_stops_the_run(plan):
    from gdln.verify.sweep_shares import check_plans

    check_plans([{"chosen": [1, 4], "sweep": "x"}, {"chosen": [4, 1], "sweep": "y"}], 5, 0)
    with pytest.raises(GdlnError, match="^process 1 sent a malformed plan of the checked points: only"):
        check_plans([{"chosen": [1, 4], "sweep": "x"}, plan], 5, 0)


@pytest.mark.slow
def test_another_processs_entry_never_overwrites_process_0s(monkeypatch, xor_task, xor_models):
    """The attack of issue 51: a client joined as process 1 posts an entry for a point that is
    process 0's to check. The sweep stops in one line naming process 1; nothing it sent is used."""
    import gdln.verify.sweep as sweep
    import gdln.verify.sweep_training as training

    losses = np.linspace(1.0, 0.1, 5)[None] * np.linspace(1.0, 1.1, 3)[:, None]
    forged = {**_honest_entry(xor_task, losses), "max_deviation": 0.0001}

    def as_if_two_processes(value):
        if "chosen" in value:
            return [value, value]
        return [value, {"entries": [[point, forged] for point in chosen], "seconds": 0.0}]

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    chosen = []
    monkeypatch.setattr(training, "gather_json", as_if_two_processes)
    monkeypatch.setattr(training, "process_share", lambda count: chosen.extend(range(count)) or np.arange(0))
    monkeypatch.setattr(training, "train_relu_points", no_training)
    with pytest.raises(GdlnError) as error:
        sweep.sweep_report(xor_task, [sweep.parse_axis("Delta=1:1:1", xor_task)], check=1, models=xor_models)
    assert str(error.value).startswith(
        "process 1 sent a malformed share of the checked points (its entries are for points [0], not its share [])"
    )
