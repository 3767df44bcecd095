"""The disk cache in hostile environments (issue 40): it never runs code it did not write (every
entry is authenticated by a key of the user's before it is read), and it is an optimisation,
never a failure (a cache or key folder that cannot be used costs one warning line, and the
answers are those of a working cache).

Tests run as root here, and root ignores file permissions: the unusable folders are ones that
fail for root too (a file in the way, ``/proc``, a name too long); the rule on owners and mode
bits is tested by the bits themselves, and a case that needs permissions to fail is skipped
under root."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdln.cli import main
from gdln.derive import cache
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.spec import load_spec
from gdln.numeric.precision import use_compilation_cache
from gdln.numeric.prediction import TaskPredictions

from .helpers import ROOT, XOR_SPEC, StoredSolve

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


class _Planted:
    """What a planted cache entry could do: unpickling it creates the folder ``marker``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _restore(previous: Path | None) -> None:
    if previous is None:
        cache.disable()
        use_compilation_cache(None)
    else:
        cache.enable(previous)
        use_compilation_cache(previous / "jax")


def _forget() -> None:
    """What a new process would not have: this process's derivations, modes and executables."""
    from gdln.numeric import integrate

    for kept in (cache._memory, cache._stored, cache._touched, cache._arrays, cache._documents, cache._modes):
        kept.clear()
    cache._mode_names.clear()
    integrate._EXECUTABLES.clear()


@pytest.fixture
def disk_cache(tmp_path):
    previous = cache.cache_root()
    _forget()
    folder = tmp_path / "cache"
    assert cache.enable(folder) == folder
    yield folder
    cache.clear(folder)
    _restore(previous)


def _run(argv, env: dict[str, str | None]) -> tuple[int, str, list[str]]:
    """``gdln argv`` in this process with ``env`` set (``None`` unsets): exit status, stdout and
    the warning lines on stderr."""
    saved = {name: os.environ.get(name) for name in env}
    out, err = io.StringIO(), io.StringIO()
    try:
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _forget()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return status, out.getvalue(), [line for line in err.getvalue().splitlines() if line.startswith("gdln: warning")]


@pytest.fixture(scope="module")
def working_race():
    """``gdln race xor.toml --json`` with a working cache: the answer every environment must give."""
    previous = cache.cache_root()
    with tempfile.TemporaryDirectory() as folder:
        status, out, warned = _run(["race", str(XOR_SPEC), "--json"], {cache.CACHE_ENV: folder})
        cache.clear(Path(folder))
    _restore(previous)
    assert status == 0 and warned == []
    return json.loads(out)


# ----------------------------------------------------------------------------------------------
# 1. The cache cannot run code it did not write


@pytest.mark.parametrize("seal", ["sha256", "another key", "none"])
def test_a_planted_derivation_pickle_is_never_unpickled(disk_cache, tmp_path, seal):
    """A pickle whose unpickling would run code, planted as a derivation's entry behind the plain
    SHA-256 of its bytes (what the cache checked before), behind an HMAC under another key, or
    bare: never unpickled, deleted when found, and the derivation rebuilt with the right answer."""
    task = load_spec(XOR_SPEC)
    built = TaskPredictions(task).derivation("linear")
    speed = built.speed
    assert cache.flush() >= 1
    key = cache.key_of(built)
    entry = disk_cache / "derivations" / key / "derivation.pickle"
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Planted(marker))
    if seal == "sha256":
        planted = hashlib.sha256(payload).digest() + payload
    elif seal == "another key":
        import hmac

        planted = hmac.new(b"k" * 32, f"derivation/{key}".encode() + b"\0" + payload, "sha256").digest() + payload
    else:
        planted = payload
    entry.write_bytes(planted)
    _forget()
    builds = []
    found = cache.derivation(key, lambda: builds.append(1) or NetworkDerivation(task, "linear"))
    assert not marker.exists()
    assert builds == [1] and found.speed == speed
    assert not entry.exists()  # deleted when found: the next flush writes gdln's own
    assert cache.flush() == 1 and entry.is_file() and entry.read_bytes() != planted


def test_a_planted_compiled_solve_is_never_unpickled(disk_cache, tmp_path):
    """The compiled solves under ``jax/executables`` are pickles too: one replaced by a planted
    pickle is never unpickled, and the race is the same, from a solve compiled and written again."""
    solve = StoredSolve(disk_cache)
    marker = tmp_path / "ran"
    planted = pickle.dumps((_Planted(marker), None, None))
    for path in solve.files:
        path.write_bytes(planted)
    again = solve.race_again()
    assert not marker.exists()
    assert solve.same_race(again)
    assert all(path.read_bytes() != planted for path in solve.files)


def _singular_values(derivation) -> list:
    return [mode.s for pathway in derivation.pathways for mode in pathway.modes]


def test_one_run_deletes_every_bad_mode_it_reads(disk_cache):
    """Every mode file garbled (a byte flipped): a process that reads the derivations deletes every
    bad mode they refer to, not only the first its unpickling met, and its flush leaves no bad
    file behind; the next process builds nothing. (Before, each run of Section 4's race repaired
    one or two of its 58 garbled modes: unpickling stopped at the first, and flush trusted any
    file that had a mode's name.)"""
    from gdln.derive.spec import context_task, task_from_dict

    task = task_from_dict(context_task(2, 3, ["hierarchy"] * 3, "context-subsets"))
    names = [n.name for n in task.networks]
    # the modes, which the mode files hold (a speed alone needs none)
    speeds = {name: _singular_values(TaskPredictions(task).derivation(name)) for name in names}
    assert cache.flush() == len(names)
    garbled = {}
    for path in (disk_cache / "derivations" / "modes").glob("*.pickle"):
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        garbled[path] = bytes(data)
    assert len(garbled) > len(names)  # more bad modes than derivations: one per read is not enough

    builds = []

    def read():
        _forget()
        again = TaskPredictions(task)
        real = NetworkDerivation.__init__

        def counting(self, *args, **kwargs):
            builds.append(1)
            real(self, *args, **kwargs)

        NetworkDerivation.__init__ = counting
        try:
            assert {name: _singular_values(again.derivation(name)) for name in names} == speeds
        finally:
            NetworkDerivation.__init__ = real
        cache.flush()

    read()
    assert builds
    left = [path for path, data in garbled.items() if path.exists() and path.read_bytes() == data]
    assert left == []
    builds.clear()
    read()
    assert builds == []  # all repaired in one run


def test_an_unauthenticated_document_or_array_is_recomputed(disk_cache):
    """The ``.npz`` numbers and JSON summaries are authenticated too: one rewritten by someone else
    (a plain ``.npz``, a summary behind the plain SHA-256 of its content) is computed again."""
    import numpy as np

    key = "0" * 32
    assert cache.arrays(key, "numbers", lambda: {"x": np.arange(3.0)})["x"].tolist() == [0.0, 1.0, 2.0]
    assert cache.document(key, "summary", "depends", lambda: {"a": 1}) == {"a": 1}
    folder = disk_cache / "derivations" / key
    buffer = io.BytesIO()
    np.savez(buffer, x=np.full(3, 9.0))
    (folder / "numbers.npz").write_bytes(buffer.getvalue())
    (document,) = folder.glob("summary-*.json")
    text = json.dumps({"a": 2}, sort_keys=True)
    document.write_text(
        json.dumps({"depends": "depends", "digest": hashlib.sha256(text.encode()).hexdigest(), "content": {"a": 2}})
    )
    _forget()
    assert cache.arrays(key, "numbers", lambda: {"x": np.arange(3.0)})["x"].tolist() == [0.0, 1.0, 2.0]
    assert cache.document(key, "summary", "depends", lambda: {"a": 1}) == {"a": 1}
    _forget()  # and what was written again is read back
    assert cache.arrays(key, "numbers", lambda: {"x": np.zeros(1)})["x"].tolist() == [0.0, 1.0, 2.0]
    assert cache.document(key, "summary", "depends", lambda: {"a": 0}) == {"a": 1}


def test_the_key_is_private_and_shared(tmp_path, monkeypatch):
    """The key is made on first use, owner-only (0600 in a 0700 folder), and read back by the next
    process; a key others could read, or of the wrong length, turns the cache off with a warning."""
    config = tmp_path / "config" / "gdln"
    monkeypatch.setenv(cache.CONFIG_ENV, str(config))
    previous = cache.cache_root()
    try:
        assert cache.enable(tmp_path / "cache") is not None
        key_file = config / cache.KEY_FILE
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(config.stat().st_mode) == 0o700
        key = key_file.read_bytes()
        assert len(key) == cache.KEY_BYTES
        assert cache.enable(tmp_path / "cache") is not None and key_file.read_bytes() == key
        for broken, reason in (
            (lambda: key_file.chmod(0o644), "readable or writable by others"),
            (lambda: key_file.write_bytes(b"short"), "not a gdln key"),
        ):
            broken()
            with pytest.warns(cache.CacheWarning, match=reason):
                assert cache.enable(tmp_path / "cache") is None
            assert cache.cache_root() is None
            key_file.write_bytes(key)
            key_file.chmod(0o600)
    finally:
        _restore(previous)


# ----------------------------------------------------------------------------------------------
# The one rule for a folder that may hold a cache or the key


def test_folder_rule(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o700)
    assert cache.folder_problem(folder) is None
    (tmp_path / "file").write_text("")
    assert cache.folder_problem(tmp_path / "file") == "not a folder"
    assert "No such file" in cache.folder_problem(tmp_path / "missing")
    folder.chmod(0o775)
    assert "writable by group or others" in cache.folder_problem(folder)
    folder.chmod(0o757)
    assert "writable by group or others" in cache.folder_problem(folder)
    folder.chmod(0o755)
    assert cache.folder_problem(folder) is None
    if IS_ROOT:
        os.chown(folder, 65534, 65534)
        assert "owned by another user" in cache.folder_problem(folder)
    else:
        assert "owned by another user" in cache.folder_problem(Path("/"))


def test_an_unsafe_cache_folder_is_not_read_and_jax_cache_is_skipped(tmp_path):
    """A cache folder that group or others can write to is not read (a planted entry there is not
    even looked at), with one warning; JAX's persistent cache goes by the same rule."""
    import jax

    previous = cache.cache_root()
    folder = tmp_path / "shared"
    try:
        assert cache.enable(folder) == folder
        folder.chmod(0o777)
        with pytest.warns(cache.CacheWarning, match="writable by group or others") as caught:
            assert cache.enable(folder) is None
            use_compilation_cache(folder / "jax")  # the warning was given: not again
        assert len(caught) == 1
        assert cache.cache_root() is None
        jax_folder = tmp_path / "jax"
        jax_folder.mkdir(mode=0o777)
        jax_folder.chmod(0o777)
        cache._state["warned"] = False
        with pytest.warns(cache.CacheWarning, match="writable by group or others"):
            use_compilation_cache(jax_folder)
        assert jax.config.values["jax_compilation_cache_dir"] is None
        jax_folder.chmod(0o700)
        use_compilation_cache(jax_folder)
        assert jax.config.values["jax_compilation_cache_dir"] == str(jax_folder)
    finally:
        _restore(previous)


# ----------------------------------------------------------------------------------------------
# 4. The cache is an optimisation, never a failure


def _location(kind: str, base: Path) -> Path:
    """A place to put a cache or key folder, of the given kind, under ``base``."""
    (base / "file").write_text("not a folder")
    if kind == "file":
        return base / "file"
    if kind == "under a file":
        return base / "file" / "sub"
    if kind == "/dev/null":
        return Path("/dev/null")
    if kind == "/proc/self":
        return Path("/proc/self")
    if kind == "long name":
        return base / ("x" * 300)
    if kind == "long path":
        return base.joinpath(*["y" * 200] * 25)
    if kind == "link to a file":
        (base / "link").symlink_to(base / "file")
        return base / "link"
    if kind == "dangling link":
        (base / "link").symlink_to(base / "nowhere")
        return base / "link"
    if kind == "link loop":
        (base / "loop").symlink_to(base / "loop")
        return base / "loop"
    if kind == "group-writable":
        (base / "open").mkdir()
        (base / "open").chmod(0o777)
        return base / "open"
    if kind == "missing parents":
        return base / "a" / "b" / "c"
    if kind == "link to a folder":
        (base / "real").mkdir(mode=0o700)
        (base / "link").symlink_to(base / "real")
        return base / "link"
    raise ValueError(kind)


#: kinds that cannot hold a folder at all (for root too), wherever they are put
BROKEN = ["file", "under a file", "/dev/null", "long name", "long path", "link to a file", "dangling link", "link loop"]
if Path("/proc/self").is_dir():
    BROKEN.append("/proc/self")
#: a folder fine as a parent (``$XDG_CACHE_HOME``), refused as the folder itself
UNSAFE = ["group-writable"]
FINE = ["missing parents", "link to a folder"]
#: where the location is put: the cache folder, or the folder above it, or the key's
PLACES = ["GDLN_CACHE_DIR", "XDG_CACHE_HOME", "GDLN_CONFIG_DIR", "XDG_CONFIG_HOME"]


@pytest.mark.slow
@settings(max_examples=14, deadline=None, derandomize=True)
@given(kind=st.sampled_from(BROKEN + UNSAFE + FINE), place=st.sampled_from(PLACES))
def test_race_answers_in_any_cache_environment(working_race, kind, place):
    """``gdln race xor.toml --json`` with its cache or key folder somewhere unusable: exit 0, the
    working cache's JSON, and one warning line (none where the folder is usable)."""
    previous = cache.cache_root()
    with tempfile.TemporaryDirectory() as base:
        base = Path(base)
        location = _location(kind, base)
        (base / "cache").mkdir(mode=0o700)
        (base / "config").mkdir(mode=0o700)
        env: dict[str, str | None] = {
            cache.CACHE_ENV: str(base / "cache"),
            cache.CONFIG_ENV: str(base / "config"),
            "XDG_CACHE_HOME": None,
            "XDG_CONFIG_HOME": None,
        }
        if place.startswith("XDG_"):  # the folder above gdln's: the GDLN_ variable is unset
            env[cache.CACHE_ENV if "CACHE" in place else cache.CONFIG_ENV] = None
        env[place] = str(location)
        try:
            status, out, warned = _run(["race", str(XOR_SPEC), "--json"], env)
        finally:
            cache.clear(base / "cache")
            _restore(previous)
            for folder in base.rglob("*"):  # let the temporary folder be removed
                if folder.is_dir() and not folder.is_symlink():
                    folder.chmod(0o700)
    assert status == 0
    assert json.loads(out) == working_race
    refused = kind in BROKEN or (kind in UNSAFE and place.startswith("GDLN_"))
    assert len(warned) == (1 if refused else 0), warned
    if refused:
        assert warned[0].startswith("gdln: warning: running without the cache: ")


@pytest.mark.parametrize("kind", BROKEN + UNSAFE)
def test_cache_command_says_why_a_folder_cannot_be_used(kind, tmp_path):
    location = _location(kind, tmp_path)
    status, out, warned = _run(["cache", "--json"], {cache.CACHE_ENV: str(location)})
    usage = json.loads(out)
    assert status == 0 and warned == []
    assert usage["usable"] is False and usage["problem"].startswith("cache folder ")
    status, out, _ = _run(["cache", "--json"], {cache.CACHE_ENV: str(tmp_path / "fine")})
    assert json.loads(out)["usable"] is True and json.loads(out)["problem"] is None


def test_a_full_disk_costs_one_warning_and_leaves_nothing_half_written(working_race, tmp_path, monkeypatch):
    """Every write failing as on a full disk: the race is the same, with one warning line naming
    the folder and the reason, not one per entry, and no temporary file left behind."""
    calls = []

    def full(data, handle):
        calls.append(1)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache, "_write_bytes", full)
    previous = cache.cache_root()
    try:
        status, out, warned = _run(["race", str(XOR_SPEC), "--json"], {cache.CACHE_ENV: str(tmp_path)})
    finally:
        _restore(previous)
    assert status == 0 and json.loads(out) == working_race
    assert len(calls) == 1  # the cache is off after the first failure: no write is tried again
    assert len(warned) == 1 and str(tmp_path) in warned[0] and os.strerror(errno.ENOSPC) in warned[0]
    assert not [p for p in (tmp_path / "derivations").rglob("*") if p.is_file()]


@pytest.mark.skipif(IS_ROOT, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder(working_race, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o500)
    previous = cache.cache_root()
    try:
        status, out, warned = _run(["race", str(XOR_SPEC), "--json"], {cache.CACHE_ENV: str(folder)})
    finally:
        _restore(previous)
        folder.chmod(0o700)
    assert status == 0 and json.loads(out) == working_race and len(warned) == 1


def test_warnings_are_not_errors_under_strict(tmp_path):
    """``--strict`` makes gdln's own warnings errors, never a cache's: it only saves time."""
    previous = cache.cache_root()
    try:
        with warnings.catch_warnings():
            status, out, warned = _run(["race", str(XOR_SPEC), "--json", "--strict"], {cache.CACHE_ENV: "/dev/null"})
    finally:
        _restore(previous)
    assert status == 0 and len(warned) == 1


@pytest.mark.slow
def test_two_processes_racing_on_one_cold_cache_agree(tmp_path):
    """Two ``gdln race`` processes started together on an empty cache folder and no key yet: both
    answer, the same, without a warning, and a third process reads what they wrote."""
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache"), cache.CONFIG_ENV: str(tmp_path / "config")}
    command = [sys.executable, "-m", "gdln", "race", str(XOR_SPEC), "--json"]
    racing = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [process.communicate(timeout=300) for process in racing]
    assert [process.returncode for process in racing] == [0, 0]
    assert not any("warning" in err for _, err in results)
    assert json.loads(results[0][0]) == json.loads(results[1][0])
    third = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and "warning" not in third.stderr
    assert json.loads(third.stdout) == json.loads(results[0][0])


# ----------------------------------------------------------------------------------------------
# 5. Every entry is checked before it is used; no open blocks; interrupted writes are cleaned up

REMOVED = "gdln: removed {} compiled {} that did not match {}; {} will be recompiled"


def _removed_line(count: int) -> str:
    if count == 1:
        return REMOVED.format(1, "entry", "its digest", "it")
    return REMOVED.format(count, "entries", "their digests", "they")


def _race(cache_folder: Path, config_folder: Path) -> subprocess.CompletedProcess:
    """``gdln race xor.toml --json`` in a new process on these folders; never left to hang."""
    env = {**os.environ, cache.CACHE_ENV: str(cache_folder), cache.CONFIG_ENV: str(config_folder)}
    command = [sys.executable, "-m", "gdln", "race", str(XOR_SPEC), "--json"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache folder (and key folder) that one ``gdln race`` filled, and its answer; each test
    works on a copy of the cache folder."""
    base = tmp_path_factory.mktemp("warm")
    done = _race(base / "cache", base / "config")
    assert done.returncode == 0 and done.stderr.count("gdln:") == 0, done.stderr
    assert (base / "cache" / "jax" / cache.MANIFEST).is_file()
    return base / "cache", base / "config", json.loads(done.stdout)


def _copy(warm_cache, tmp_path: Path) -> Path:
    import shutil

    folder = tmp_path / "cache"
    shutil.copytree(warm_cache[0], folder)
    return folder


def _compiled_entries(folder: Path) -> list[Path]:
    return sorted((folder / "jax").glob("*-cache"))


@pytest.mark.slow
def test_swapped_or_changed_compiled_entries_are_removed_and_recompiled(warm_cache, tmp_path):
    """JAX's compiled programs are run as read: two entries swapped (a ``JaxRuntimeError`` on every
    run) or one changed inside its payload and compressed again (so that JAX's own checks pass: a
    different answer, or a segmentation fault) are removed before JAX reads the folder, with one
    line, and recompiled: the same answer, and the next run finds everything as listed."""
    from jax._src.compilation_cache import compress_executable, decompress_executable

    folder, config, answer = _copy(warm_cache, tmp_path), warm_cache[1], warm_cache[2]
    entries = _compiled_entries(folder)
    assert len(entries) >= 3
    first, second = entries[0].read_bytes(), entries[1].read_bytes()
    entries[0].write_bytes(second)
    entries[1].write_bytes(first)
    payload = bytearray(decompress_executable(entries[2].read_bytes()))
    payload[len(payload) // 2] ^= 0x01
    before = entries[2].stat()
    entries[2].write_bytes(compress_executable(bytes(payload)))
    os.utime(entries[2], ns=(before.st_atime_ns, before.st_mtime_ns))  # as if untouched
    # not listed: another command's, still running (commands share a cache); left in place
    (folder / "jax" / "jit_planted-0123-cache").write_bytes(entries[3].read_bytes())

    done = _race(folder, config)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines().count(_removed_line(3)) == 1
    assert "Traceback" not in done.stderr and "warning" not in done.stderr
    assert json.loads(done.stdout) == answer
    assert (folder / "jax" / "jit_planted-0123-cache").exists()

    again = _race(folder, config)  # recompiled and listed: nothing more to remove
    assert again.returncode == 0 and "gdln:" not in again.stderr, again.stderr
    assert json.loads(again.stdout) == answer


def test_an_entry_that_is_not_a_regular_file_in_jax_folder_is_removed(disk_cache):
    """A named pipe, or a link, among JAX's entries is removed unread (JAX's read would block)."""
    jax_folder = disk_cache / "jax"
    jax_folder.mkdir(exist_ok=True)
    os.mkfifo(jax_folder / "jit_f-01-cache")
    (jax_folder / "jit_g-02-cache").symlink_to(jax_folder / "elsewhere")
    (jax_folder / "jit_h-03-cache").write_bytes(b"x")
    assert cache.write_manifest(jax_folder)
    assert json.loads(cache.read_sealed(jax_folder / cache.MANIFEST, cache.MANIFEST)).keys() == {"jit_h-03-cache"}
    assert cache.check_compiled(jax_folder) == 2
    assert sorted(p.name for p in jax_folder.iterdir()) == [cache.MANIFEST, "jit_h-03-cache"]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_named_pipe_at_the_key_path_does_not_hang(warm_cache, tmp_path):
    """The key is opened without blocking and refused as not a file: one warning, the answer."""
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    os.mkfifo(config / cache.KEY_FILE, 0o600)
    done = _race(tmp_path / "cache", config)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"gdln: warning: running without the cache: key {config / cache.KEY_FILE}: not a file"
    )
    assert done.stderr.count("gdln: warning") == 1
    assert json.loads(done.stdout) == warm_cache[2]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_named_pipe_at_a_derivation_pickle_does_not_hang(warm_cache, tmp_path):
    """A derivation's pickle that is a named pipe is not read (it would block): the derivation is
    built again and written in its place, without a warning."""
    folder = _copy(warm_cache, tmp_path)
    pickles = sorted((folder / "derivations").glob("*/derivation.pickle"))
    assert pickles
    for path in pickles:
        path.unlink()
        os.mkfifo(path, 0o600)
    done = _race(folder, warm_cache[1])
    assert done.returncode == 0 and "gdln:" not in done.stderr, done.stderr
    assert json.loads(done.stdout) == warm_cache[2]
    assert all(stat.S_ISREG(path.lstat().st_mode) for path in pickles)


def test_stale_temporaries_are_removed_by_the_next_run(tmp_path):
    """A write interrupted by SIGINT or SIGTERM leaves its temporary: the next run that enables
    the cache removes those of processes that no longer run, and any older than an hour; a
    running process's recent one stays."""
    previous = cache.cache_root()
    folder = tmp_path / "cache"
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(finished.stdout)  # a process that has ended
    try:
        assert cache.enable(folder) == folder
        for part in ("derivations/0123/", "derivations/modes/", "jax/executables/", "jax/"):
            (folder / part).mkdir(parents=True, exist_ok=True)
        stale = [
            folder / "derivations" / "0123" / f".derivation.pickle.{gone}.7",
            folder / "jax" / f".{cache.MANIFEST}.{gone}.7",
            folder / f".probe-{gone}-7",
            folder / "derivations" / "modes" / f".abc.pickle.{os.getpid()}.7",  # running, but old
        ]
        kept = [
            folder / "jax" / "executables" / f".abc.pickle.{os.getpid()}.8",  # running, recent
            folder / "derivations" / "modes" / "abc.pickle",  # not a temporary
        ]
        for path in stale + kept:
            path.write_bytes(b"half")
        os.utime(stale[-1], (0, 0))
        assert cache.enable(folder) == folder
        assert [path.exists() for path in stale + kept] == [False] * len(stale) + [True] * len(kept)
    finally:
        cache.clear(folder)
        _restore(previous)
