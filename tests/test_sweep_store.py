"""Checked sweeps that lose nothing (issue 51): each checked point is kept in the cache folder as
it finishes, so a rerun (after a completed or an interrupted run) reads it back, and a sweep cut
into job-array slices (``--shard I/N``) is assembled by a run without a slice. Every assembled
JSON is the uninterrupted run's, except ``timing`` (seconds, and how many points were resumed),
which the comparisons leave out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gdln.derive import cache
from gdln.derive.errors import GdlnError
from gdln.verify import sweep_store
from gdln.verify.sweep import parse_axis, sweep_grid
from gdln.verify.sweep_store import PointStore, Shard, slice_owners, slice_rows

from .helpers import XOR_SPEC, run_cli

#: seconds after which a sweep counts as hung (each takes seconds of CPU)
HANG_SECONDS = 300
#: a small checked XoR sweep: 4 points, 3 of them trained; 8 seeds make every trained point its
#: own batch on one device (numeric.training.SEED_CHUNK runs), so points are written one by one
SWEEP = [
    *("sweep", str(XOR_SPEC), "--grid", "Delta=0.5:2:4", "--check", "3", "--seeds", "8"),
    *("--set", "epochs=300", "--set", "hidden_units=16"),
]


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "GDLN_CACHE_DIR": str(folder), "JAX_PLATFORMS": "cpu"}


def _start(folder: Path, *flags: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "gdln", *SWEEP, *flags]
    return subprocess.Popen(argv, env=_env(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(run: subprocess.Popen) -> tuple[dict | None, str]:
    """The JSON report (``None`` where the run printed none) and stderr of a run that succeeded."""
    out, err = run.communicate(timeout=HANG_SECONDS)
    assert run.returncode == 0, err
    return (json.loads(out) if "--json" in run.args and out.strip() else None), err


def _sweep(folder: Path, *flags: str) -> tuple[dict | None, str]:
    return _finish(_start(folder, *flags))


def _without_timing(report: dict) -> dict:
    return {key: value for key, value in report.items() if key != "timing"}


def _resumed(err: str) -> tuple[int, int]:
    line = next(line for line in err.splitlines() if line.startswith("gdln: resumed "))
    words = line.split()
    return int(words[2]), int(words[4])


def _points(folder: Path) -> list[Path]:
    """The checked points' entries on disk (not the grid's theory, kept beside them)."""
    return sorted(p for p in (folder / cache.POINTS).glob("*.json") if not p.name.startswith("theory-"))


def _theories(folder: Path) -> list[Path]:
    return sorted((folder / cache.POINTS).glob("theory-*.json"))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The sweep computed from scratch (``--no-cache``: nothing read back, nothing written)."""
    folder = tmp_path_factory.mktemp("nothing")
    report, err = _sweep(folder, "--no-cache", "--json")
    assert not (folder / cache.POINTS).exists() and "resumed" not in err
    assert sum(p["checked"] is not None for p in report["points"]) == 3
    return _without_timing(report)


@pytest.mark.slow
def test_a_rerun_resumes_every_checked_point(tmp_path, uninterrupted):
    first, err = _sweep(tmp_path, "--json")
    assert _resumed(err) == (0, 3) and len(_points(tmp_path)) == 3
    again, err = _sweep(tmp_path, "--json")
    assert _resumed(err) == (3, 3) and again["timing"]["resumed"] == 3
    assert again["timing"]["training_s"] == 0.0  # nothing trained
    # nor the theory computed again: read back whole
    assert not first["timing"]["theory_resumed"] and again["timing"]["theory_resumed"]
    assert again["timing"]["aligned_s"] == 0.0 and len(_theories(tmp_path)) == 1
    assert _without_timing(first) == _without_timing(again) == uninterrupted
    # another seed count is another training: nothing of the above is read back
    _, err = _sweep(tmp_path, "--seeds", "7")
    assert _resumed(err) == (0, 3)


def _stop_after_first_point(run: subprocess.Popen, folder: Path, stop: signal.Signals) -> None:
    """Send ``stop`` once the first checked point is on disk (waiting on the file, not on a clock)."""
    deadline = time.monotonic() + HANG_SECONDS
    while not _points(folder) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    run.send_signal(stop)
    _, err = run.communicate(timeout=HANG_SECONDS)
    # SIGINT ends in gdln's one line and status 130 (gdln.interrupt)
    expected = -signal.SIGKILL if stop == signal.SIGKILL else 130
    assert run.returncode == expected, f"the sweep ended before it was stopped: {err}"


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path, uninterrupted, stop):
    """Stopped once the first point is on disk: the points written are whole, the rerun reads
    each back, and the grid's theory, and trains the rest, and equals the uninterrupted run."""
    _stop_after_first_point(_start(tmp_path, "--json"), tmp_path, stop)
    kept = len(_points(tmp_path))
    assert 1 <= kept <= 3
    report, err = _sweep(tmp_path, "--json")
    assert _resumed(err) == (kept, 3) and report["timing"]["resumed"] == kept
    assert report["timing"]["theory_resumed"]  # the theory is whole before any point is trained
    assert _without_timing(report) == uninterrupted
    assert not [p.name for p in (tmp_path / cache.POINTS).iterdir() if p.name.startswith(".")]  # no temporaries


@pytest.mark.slow
def test_three_concurrent_slices_assemble_to_the_single_run(tmp_path, uninterrupted):
    slices = [_start(tmp_path, "--shard", f"{k}/3", "--json") for k in (1, 2, 3)]
    said = [_finish(run) for run in slices]
    assert all(report is None for report, _ in said)  # a slice prints no report, even with --json
    assert [err.splitlines()[-1].split(" checked point")[0] for _, err in said] == [
        f"gdln: slice {k}/3: 1" for k in (1, 2, 3)
    ]
    assert len(_points(tmp_path)) == 3 and len(_theories(tmp_path)) == 1  # each slice's theory the same
    # one slice computed the theory; the others waited for it (or came after) and read it back
    assert sum("theory at 4 points read back from the cache" not in err for _, err in said) == 1
    report, err = _sweep(tmp_path, "--json")
    assert _resumed(err) == (3, 3) and report["timing"]["theory_resumed"]
    assert _without_timing(report) == uninterrupted


@pytest.mark.slow
def test_a_killed_slice_rerun_still_assembles_to_the_single_run(tmp_path, uninterrupted):
    """A slice of two killed once it has written a point, then run again: it trains what it had
    left, and the assembled sweep equals the single run."""
    _stop_after_first_point(_start(tmp_path, "--shard", "1/2"), tmp_path, signal.SIGKILL)
    _, err = _sweep(tmp_path, "--shard", "1/2")
    assert "there already" in err.splitlines()[-1], err
    _sweep(tmp_path, "--shard", "2/2")
    report, err = _sweep(tmp_path, "--json")
    assert _resumed(err) == (3, 3)
    assert _without_timing(report) == uninterrupted


# --- cheap: the keys, the slices' assignment, the flag ---------------------------------------


@pytest.fixture
def keys(xor_task, monkeypatch, tmp_path):
    """The key of a checked point of a one-axis XoR sweep, for a task and an axis."""
    monkeypatch.setattr(cache, "cache_root", lambda: tmp_path)

    def key(task, axis="Delta=0.5:2:4", agf=False, row=1):
        grid = sweep_grid(task, [parse_axis(axis, task)], {})
        return PointStore(task, grid, agf).key(row)

    return key


def test_a_point_s_key_covers_what_it_depends_on(xor_task, keys):
    """The same point of another grid shares its entry; another spec, seed count, training setting,
    point or --agf shares nothing."""
    base = keys(xor_task)
    assert keys(xor_task, "Delta=0.5:2:4") == base
    assert keys(xor_task, "Delta=0.5:2:7", row=2) == base  # Delta = 1.0 on both grids
    changed = [
        keys(xor_task.with_training(seeds=2)),
        keys(xor_task.with_training(epochs=1000)),
        keys(xor_task.with_training(learning_rate=0.02)),
        keys(xor_task.with_training(init_scale=1e-3)),
        keys(xor_task.with_training(hidden_units=64)),
        keys(xor_task, row=2),
        keys(xor_task, agf=True),
        keys(replace(xor_task, targets=-xor_task.targets)),
        keys(replace(xor_task, networks=xor_task.networks[:1])),
    ]
    assert len({base, *changed}) == len(changed) + 1


@pytest.fixture
def cache_in(tmp_path):
    """The disk cache on, in ``tmp_path``, for the test; as it was afterwards."""
    previous = cache.cache_root()
    assert cache.enable(tmp_path) == tmp_path
    yield tmp_path
    if previous is None:
        cache.disable()
    else:
        cache.enable(previous)


def test_a_grid_s_theory_is_kept_whole_and_read_back_exactly(xor_task, cache_in):
    """The theory's record through its JSON and back, NaN, None and every float exact; its key
    changes with any point's key (here a training setting)."""
    grid = sweep_grid(xor_task, [parse_axis("Delta=0.5:2:3", xor_task)], {})
    theory = sweep_store.GridTheory(
        t_half=np.array([[1 / 3, np.nan], [2.0, 1e-300], [np.pi, 7.0]]),
        t_90=np.full((3, 2), np.nan),
        final_loss=np.array([[0.1, 0.2], [0.3, 0.4], [0.5, np.nextafter(0.6, 1)]]),
        aligned_t_half=np.zeros((3, 2)),
        phase_epochs=np.array([[-1, 5], [6, 7], [8, 9]]),
        stable=[True, None, np.False_],
        predicted_validity=[None, {"hold": True, "parting": np.float64(0.1)}, None],
        predicted_follows=[{"network": "xor", "margin": 2.5, "decided": True}, None, None],
        exceptional=[None, "a = b", None],
        seconds=None,
    )
    store = sweep_store.TheoryStore(PointStore(xor_task, grid, False))
    assert store.read() is None
    store.write(theory)
    back = store.read()
    assert back is not None
    for name in ("t_half", "t_90", "final_loss", "aligned_t_half", "phase_epochs"):
        np.testing.assert_array_equal(getattr(back, name), getattr(theory, name))
    assert back.phase_epochs.dtype == np.int64
    assert back.stable == [True, None, False] and back.exceptional == theory.exceptional
    assert back.predicted_validity == [None, {"hold": True, "parting": 0.1}, None]
    assert back.predicted_follows == theory.predicted_follows
    task = xor_task.with_training(learning_rate=0.02)
    other = sweep_store.TheoryStore(PointStore(task, sweep_grid(task, [parse_axis("Delta=0.5:2:3", task)], {}), False))
    assert other.key != store.key and other.read() is None


#: a process holding the theory lock until it is killed
_HOLDER = """
import fcntl, os, sys, time
handle = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(3600)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl locks")
def test_a_process_waits_for_the_theory_lock_until_its_holder_is_gone(cache_in):
    """Slices started at once compute the grid's theory once: while another process holds the
    lock, one that asks for it says it waits and does not enter; once the holder is killed (the
    kernel releases its lock), it enters. Ordered by events, not by a clock."""
    import threading

    path = cache_in / cache.POINTS / "theory-test.lock"
    path.parent.mkdir(mode=0o700)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        told, entered = threading.Event(), threading.Event()

        def take() -> None:
            with cache.exclusive(path, waiting=told.set):
                entered.set()

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        assert told.wait(HANG_SECONDS) and not entered.is_set()
    finally:
        holder.kill()
        holder.wait()
    taker.join(HANG_SECONDS)
    assert entered.is_set()
    told.clear()
    with cache.exclusive(path, waiting=told.set):  # free now: taken at once
        assert not told.is_set()


def test_the_theory_lock_is_nothing_without_the_disk_cache(tmp_path):
    previous = cache.cache_root()
    cache.disable()
    try:
        with cache.exclusive(tmp_path / "theory.lock", waiting=lambda: pytest.fail("waited")):
            pass
        assert not (tmp_path / "theory.lock").exists()
    finally:
        if previous is not None:
            cache.enable(previous)


def test_slices_balance_the_cost_and_cover_every_point_once():
    assert slice_owners([1] * 7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]  # equal costs: round the slices
    costs = [64, 8, 8, 8, 8, 8, 8, 8, 8, 32, 32]
    owners = slice_owners(costs, 3)
    loads = [sum(c for c, o in zip(costs, owners) if o == k) for k in range(3)]
    assert max(loads) - min(loads) <= 8 and loads == [64, 64, 64]
    chosen, widths = np.array([2, 5, 7, 9]), np.array([128] * 8 + [16, 16])
    parts = [slice_rows(chosen, widths, Shard(k, 3)) for k in (1, 2, 3)]
    assert sorted(np.concatenate(parts).tolist()) == chosen.tolist()
    assert slice_rows(chosen, widths, None).tolist() == chosen.tolist()


def test_batches_are_one_width_and_whole_groups_of_runs(monkeypatch):
    monkeypatch.setattr(sweep_store, "device_count", lambda: 1)
    widths = np.array([16, 16, 32, 16, 32, 16])
    found = [b.tolist() for b in sweep_store.batches(np.arange(6), widths, seeds=4)]  # 2 points fill 8 runs
    assert found == [[0, 1], [3, 5], [2, 4]]
    assert [b.tolist() for b in sweep_store.batches(np.arange(3), widths[:3], seeds=3)] == [[0, 1], [2]]


@pytest.mark.parametrize(
    "shard, env, expected",
    [
        ("2/3", {}, (2, 3)),
        (" 3 / 3 ", {}, (3, 3)),
        ("auto/4", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0"}, (1, 4)),
        ("auto", {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "3"}, (3, 3)),
    ],
)
def test_shard_forms(shard, env, expected):
    from gdln.commands.sweep import parse_shard

    assert parse_shard(shard, env) == expected


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--shard", "4/3"], "--shard: 4/3 is not a slice I/N with I from 1 to N"),
        (["--shard", "0/3"], "--shard: 0/3 is not a slice"),
        (["--shard", "1/0"], "--shard: 1/0 is not a slice"),
        (["--shard", "x/3"], "is not I/N, auto/N or auto"),
        (["--shard", "3"], "is not I/N, auto/N or auto"),
        (["--shard", "auto/3"], "$SLURM_ARRAY_TASK_ID is not set"),
        (["--shard", "1/3", "--check", "0"], "give --check N"),
        (["--shard", "1/3", "--plot", "map.png"], "a slice writes no figure"),
        (["--shard", "1/3", "--no-cache"], "which is not in use"),
        (["--shard", "1/3", "--processes", "2", "--process-id", "0", "--coordinator", "localhost:1"], "one process"),
    ],
)
def test_bad_shards_are_one_line_errors(flags, message, capsys, monkeypatch):
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    code, _, err = run_cli(capsys, ["sweep", str(XOR_SPEC), "--grid", "Delta=0.5:2:4", "--check", "3", *flags])
    assert code == 2 and message in err, err


def test_shard_is_a_slice_from_one_to_n():
    with pytest.raises(GdlnError, match="I from 1 to N"):
        Shard(0, 2)
