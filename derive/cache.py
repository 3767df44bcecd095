"""Derivations kept across runs: in memory for the process, and on disk once an entry point
switches the disk cache on.

A derivation is keyed by a hash of what it depends on (the task's exact data, its parameters
and their defaults, the network's pathways or graph) together with gdln's version and a digest
of the source of ``derive`` and ``numeric``, so an edited checkout never reads a stale entry.
On disk an entry is the pickled derivation with every product computed so far (its cached
properties: modes, couplings, symmetric groups, the reduced system, ODEs, loss, speed),
behind a keyed digest of the pickle; next to it the numbers ``numeric`` evaluated from it
(``.npz``, read with ``allow_pickle=False``) and JSON products such as ``derive``'s printed
summary (:func:`document`), each with what it was made for and a keyed digest of its content.
The modes of its pathways are written once for all entries, in ``derivations/modes``, named by
the digest of their pickle, so a pathway that several networks share is read once.

Every entry is authenticated before it is read: an HMAC-SHA256 under a key of this user's
(:func:`key_folder`, made on first use, readable by the owner only) covers the entry and what it
is stored under, so a file that gdln did not write (a planted pickle behind a plain digest, a
garbled byte, another entry's file) is deleted and rebuilt, never unpickled. A cache folder
that another user owns or that group or others can write to is not used at all
(:func:`folder_problem`, the one rule both this cache and JAX's compilation cache go by), as
ssh treats its keys.

The cache is an optimisation, never a failure: a folder or key that cannot be created, read or
written (a file in the way, a read-only or full disk, a name too long, another process racing)
turns the disk cache off with one :class:`CacheWarning` per process, and the answers are the
same. The disk cache is off unless :func:`enable` is called: the CLI calls it (``--no-cache``
does not) and :func:`flush` when a command ends; importing gdln touches no files.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import io
import json
import os
import pickle
import re
import secrets
import shutil
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from functools import lru_cache, partial
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import sympy
from sympy.polys.polytools import PurePoly
from sympy.polys.rings import PolyRing
from sympy.polys.rootoftools import ComplexRootOf

from .float_modes import derives_in_floats
from .modes import Mode

#: environment variable naming the cache folder (default: the platform's user cache folder)
CACHE_ENV = "GDLN_CACHE_DIR"
#: environment variable naming the folder of the cache's key (default: the user's config folder)
CONFIG_ENV = "GDLN_CONFIG_DIR"
#: the key's file in that folder, and its length
KEY_FILE = "cache-key"
KEY_BYTES = 32
#: the folders gdln writes under the cache folder: made owner-only, checked like the folder
PARTS = ("derivations", "derivations/modes", "jax", "jax/executables", "points")
#: the part holding a checked sweep's points (``verify.sweep_store``), one sealed file each
POINTS = "points"


class CacheWarning(UserWarning):
    """The disk cache is not used (or no longer written): the folder or the key cannot be used.
    Never an error, not even under ``--strict``: the cache only saves time."""


#: the folder in use, the key of its entries, and whether this process has warned already
_state: dict[str, Any] = {"root": None, "key": None, "warned": False}
#: derivations of this process by key, and which products each had when last read or written
_memory: dict[str, Any] = {}
_stored: dict[str, tuple] = {}
_arrays: dict[tuple[str, str], dict[str, np.ndarray]] = {}
_documents: dict[tuple[str, str, str], Any] = {}
#: keys asked for since the last flush: only these can have grown
_touched: set[str] = set()


def default_root() -> Path:
    """``$GDLN_CACHE_DIR``, else the platform's user cache folder followed by ``gdln``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gdln"


def key_folder() -> Path:
    """``$GDLN_CONFIG_DIR``, else the user's config folder followed by ``gdln``: where the key of
    the cache's entries lives, outside the cache folder so that whoever can write the cache
    cannot also read the key."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming"))
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "gdln"


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` may not hold gdln's caches or key, or ``None`` when it may: it must be a
    folder owned by this user that neither group nor others can write to (ssh's rule for
    ``~/.ssh``). Whoever can write there can plant entries: JAX runs the compiled programs it
    reads unchecked, and this cache's entries are only as safe as its key. The one rule for
    both caches and the key's folder. A symbolic link is followed: it is the folder that counts."""
    try:
        info = os.stat(folder)
    except OSError as error:
        return _reason(error)
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if hasattr(os, "geteuid"):  # POSIX; Windows has neither owners by number nor these mode bits
        if info.st_uid != os.geteuid():
            return f"owned by another user (uid {info.st_uid})"
        if info.st_mode & 0o022:
            return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o}; chmod go-w it)"
    return None


def _reason(error: BaseException) -> str:
    """An OS error in a few words: ``Not a directory``, ``File name too long``, ..."""
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def make_folder(folder: Path) -> str | None:
    """Create ``folder`` (owner-only) if it is missing; then why it may not be used, or ``None``."""
    try:
        _make_folders(folder)
    except FileExistsError as error:  # a file, or a link to one, in the way
        return (
            "not a folder" if Path(error.filename) == folder else f"cannot create it: {error.filename} is not a folder"
        )
    except OSError as error:
        return f"cannot create it: {_reason(error)}"
    return folder_problem(folder)


def _make_folders(folder: Path) -> None:
    """``folder`` and its missing parents, each made owner-only (``Path.mkdir(parents=True)``
    gives the parents the default mode, which a umask of 002 leaves group-writable)."""
    missing = []
    while not folder.is_dir() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)


def problem(root: Path) -> tuple[str, str] | None:
    """Why the disk cache cannot be used under ``root``, as what is at fault (``cache folder
    ...``, ``key ...``) and the reason, or ``None`` (see :func:`_check`)."""
    return _check(root)[0]


def _check(root: Path) -> tuple[tuple[str, str] | None, bytes | None]:
    """Why the disk cache cannot be used under ``root`` (what is at fault and the reason) and
    the key of its entries: the folder is created if missing (owner-only; its parts when first
    written), it and the parts that exist must pass :func:`folder_problem`, a file must be
    writable in it, and the key must be readable (made on first use). Checked once per process,
    so that a folder that cannot be used costs one warning, not one failure per entry."""
    found = make_folder(root)
    if found is not None:
        return (f"cache folder {root}", found), None
    for folder in (root / part for part in PARTS):
        found = folder_problem(folder) if os.path.lexists(folder) else None
        if found is not None:
            return (f"cache folder {folder}", found), None
    probe = root / f".probe-{os.getpid()}-{threading.get_ident()}"
    try:
        _create(probe).close()
        probe.unlink()
    except OSError as error:
        return (f"cache folder {root}", f"cannot write in it: {_reason(error)}"), None
    try:
        return None, _read_key(key_folder())
    except _KeyProblem as error:
        return (error.what, error.reason), None
    except (RuntimeError, KeyError) as error:  # no home folder to find the config folder in
        return ("key folder", _reason(error)), None


class _KeyProblem(Exception):
    """Why the key (``what``: its folder, or its file) cannot be used."""

    def __init__(self, what: str, reason: str):
        super().__init__(f"{what}: {reason}")
        self.what, self.reason = what, reason


def _read_key(folder: Path) -> bytes:
    """The key in ``folder``, made on first use (a file only its owner can read, in a folder only
    its owner can write); :class:`_KeyProblem` when it cannot be made or trusted."""
    found = make_folder(folder)
    if found is not None:
        raise _KeyProblem(f"key folder {folder}", found)
    path = folder / KEY_FILE
    try:
        try:
            return _key_in(path)
        except FileNotFoundError:
            _make_key(path)
            return _key_in(path)
    except OSError as error:
        raise _KeyProblem(f"key {path}", _reason(error)) from None


def _key_in(path: Path) -> bytes:
    handle = _open_regular(path)
    if handle is None:
        raise _KeyProblem(f"key {path}", "not a file")
    with handle:
        info = os.fstat(handle.fileno())
        data = handle.read(KEY_BYTES + 1)
    if hasattr(os, "geteuid"):  # as ssh treats a private key: only its owner may read it
        if info.st_uid != os.geteuid():
            raise _KeyProblem(f"key {path}", f"owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise _KeyProblem(
                f"key {path}", f"readable or writable by others (mode {stat.S_IMODE(info.st_mode):o}; chmod 600 it)"
            )
    if len(data) != KEY_BYTES:
        raise _KeyProblem(
            f"key {path}", f"not a gdln key ({len(data)} bytes, not {KEY_BYTES}; delete it to make a new one)"
        )
    return data


def _make_key(path: Path) -> None:
    """Write a new random key at ``path`` whole, owner-only; when another process made one
    meanwhile, theirs stays (a hard link never replaces a file), so both use the same key."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    handle = _create(temporary)
    try:
        with handle as file:
            file.write(secrets.token_bytes(KEY_BYTES))
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def enable(root: Path | None = None) -> Path | None:
    """Keep derivations on disk under ``root`` (default :func:`default_root`) from now on; the
    folder, or ``None`` (and one :class:`CacheWarning`) when it or the key cannot be used
    (:func:`problem`): then everything is computed as with ``--no-cache``."""
    disable()
    _state["warned"] = False  # a new command: its first trouble is worth a line
    try:
        root = Path(root) if root is not None else default_root()
    except (RuntimeError, KeyError, OSError) as error:  # no home folder to put it in
        _give_up("cache folder", _reason(error))
        return None
    found, key = _check(root)
    if found is not None:
        _give_up(*found)
        return None
    _state["root"], _state["key"] = root, key
    remove_stale(root)
    return root


#: the temporaries a write makes (``.<name>.<pid>.<thread>``, :func:`_atomic_write` and the
#: key's) and the writable-folder probe (``.probe-<pid>-<thread>``): named by their process
_TEMPORARY = re.compile(r"\.(?:.+\.(\d+)\.\d+|probe-(\d+)-\d+)")
#: a temporary older than this is stale whoever wrote it (a write takes well under a second)
STALE_SECONDS = 3600.0


def remove_stale(root: Path) -> int:
    """Remove the temporaries that writes interrupted by a signal (SIGINT, SIGTERM, a crash) left
    in the cache folder, its parts and the key's folder: those of a process that no longer runs,
    and any older than :data:`STALE_SECONDS`; returns how many. Called by :func:`enable`, so each
    run that uses the cache cleans up after the ones before it."""
    folders = [root, root / "jax", root / "jax" / "executables", root / "derivations", root / POINTS]
    with contextlib.suppress(OSError):
        folders += [Path(e.path) for e in os.scandir(root / "derivations") if e.is_dir(follow_symlinks=False)]
    with contextlib.suppress(RuntimeError, KeyError, OSError):  # no home folder: no key folder to look in
        folders.append(key_folder())
    removed, now = 0, time.time()
    for folder in folders:
        try:
            entries = [e for e in os.scandir(folder) if e.name.startswith(".")]
        except OSError:  # missing, or not a folder: nothing written there
            continue
        for entry in entries:
            found = _TEMPORARY.fullmatch(entry.name)
            if found is None:
                continue
            try:
                age = now - entry.stat(follow_symlinks=False).st_mtime
            except OSError:  # gone meanwhile
                continue
            if age > STALE_SECONDS or not _running(int(found.group(1) or found.group(2))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


def _running(pid: int) -> bool:
    """Whether a process with this id runs on this machine (``True`` when that cannot be told:
    on Windows, where ``os.kill`` would end it, only a temporary's age makes it stale)."""
    if pid == os.getpid() or sys.platform == "win32":
        return True
    if pid <= 0:  # no process's id (and os.kill(0, ...) would signal this process group)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): it runs
        return True
    return True


def disable() -> None:
    _state["root"] = None
    _state["key"] = None


def _give_up(folder, reason: str) -> None:
    """Turn the disk cache off for the rest of the process, warning once per process."""
    disable()
    warn(folder, reason)


def warn(folder, reason: str) -> None:
    """One :class:`CacheWarning` per process (per :func:`enable`): the first trouble found."""
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(CacheWarning(f"running without the cache: {folder}: {reason}"), stacklevel=3)


def cache_root() -> Path | None:
    """The folder in use, or ``None`` while the disk cache is off."""
    return _state["root"]


@lru_cache(maxsize=1)
def code_version() -> str:
    """gdln's version and a digest of the ``derive`` and ``numeric`` sources."""
    try:
        version = metadata.version("gdln")
    except metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256(version.encode())
    top = Path(__file__).resolve().parent.parent
    for package in ("derive", "numeric"):
        for source in sorted((top / package).glob("*.py")):
            digest.update(source.name.encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def source_digest(path: str | Path) -> str:
    """A digest of one source file (a module's ``__file__``): a document built by that module
    depends on it, so one written by other code is never read back (:func:`document`)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def derivation_key(task, network, kind: str = "network") -> str:
    """Hash of what a derivation of ``network`` on ``task`` depends on, and of the code;
    ``kind`` names the derivation (a network's, a shared-edge reduction's)."""
    parts = [
        code_version(),
        kind,
        f"floats={derives_in_floats(task)}",
        sympy.srepr(task.inputs),
        sympy.srepr(task.targets),
        repr(sorted((sympy.srepr(s), float(v)) for s, v in task.parameters.items())),
        repr(task.contexts),
        repr(network),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def key_of(derivation) -> str | None:
    """The cache key a derivation was stored under, or ``None`` for one built outside the cache."""
    return getattr(derivation, "cache_key", None)


def _folder(key: str) -> Path | None:
    root = cache_root()
    return None if root is None else root / "derivations" / key


def derivation(key: str, build: Callable[[], Any]) -> Any:
    """The derivation with ``key``: from this process, else from disk, else ``build()``."""
    if key in _memory:
        _touched.add(key)
        return _memory[key]
    folder = _folder(key)
    found = None
    if folder is not None:
        path = folder / "derivation.pickle"
        data = read_sealed(path, f"derivation/{key}")  # authenticated before anything is unpickled
        if data is not None:
            try:
                found = _loads(data, folder.parent / "modes")  # gdln's own entry, as written
                if key_of(found) != key:
                    raise ValueError(f"the entry under {key} is another derivation's")
                _stored[key] = computed_products(found)
            except Exception:  # a mode that is garbled, a stale class: rebuilt, never trusted
                found = None
                discard(path)
    if found is None:
        _stored.pop(key, None)  # whatever is on disk is not this: the next flush writes it
        found = build()
    found.cache_key = key
    _memory[key] = found
    _touched.add(key)  # only once built: a build that raised leaves nothing for flush() to write
    return found


def arrays(key: str | None, name: str, compute: Callable[[], Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Numbers evaluated from the derivation with ``key``: kept in memory, and on disk as
    ``name.npz`` next to it when the disk cache is on (authenticated like every entry)."""
    if key is None:
        return {k: np.asarray(v) for k, v in compute().items()}
    if (key, name) in _arrays:
        return _arrays[(key, name)]
    folder = _folder(key)
    path = None if folder is None else folder / f"{name}.npz"
    label = f"{key}/{name}"
    result = None
    data = None if path is None else read_sealed(path, label)
    if data is not None:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as stored:
                result = {k: stored[k] for k in stored.files}
        except Exception:  # authentic but unreadable (numpy changed): computed again
            result = None
    if result is None:
        result = {k: np.asarray(v) for k, v in compute().items()}
        if path is not None:
            buffer = io.BytesIO()
            np.savez(buffer, **result)
            write_sealed(path, label, buffer.getvalue())
    _arrays[(key, name)] = result
    return result


def document(key: str | None, name: str, depends: str, compute: Callable[[], Any]) -> Any:
    """A JSON-ready product of the derivation with ``key`` that also depends on ``depends`` (text
    naming whatever else went into it: values, other derivations, the code that builds it):
    kept in memory, and on disk as ``name-<digest of depends>.json`` next to the derivation
    when the disk cache is on. The file holds ``depends`` and a keyed digest of its content; a
    file that cannot be read, was written for other ``depends``, or whose content does not
    match its digest is computed again and rewritten, never trusted."""
    if key is None:
        return compute()
    tag = hashlib.sha256(depends.encode()).hexdigest()[:16]
    if (key, name, tag) in _documents:
        return _documents[(key, name, tag)]
    folder = _folder(key)
    path = None if folder is None else folder / f"{name}-{tag}.json"
    label = f"{key}/{name}/{depends}"
    found = _read_document(path, label, depends) if path is not None else None
    if found is None:
        content = compute()
        text = _canonical(content)
        found = json.loads(text)  # as it will be read back: lists for tuples, string keys
        if path is not None and cache_root() is not None:
            entry = {"depends": depends, "digest": _mac(label, text.encode()).hex(), "content": found}
            _atomic_write(path, partial(_write_bytes, json.dumps(entry).encode()))
    _documents[(key, name, tag)] = found
    return found


def _canonical(content: Any) -> str:
    return json.dumps(content, sort_keys=True, allow_nan=True)


def _read_document(path: Path, label: str, depends: str) -> Any:
    """The content of a document file, or ``None`` when it is missing, unreadable, for other
    ``depends``, or not what gdln wrote (deleted then)."""
    data = _read(path)
    if data is None or cache_root() is None:
        return None
    try:
        entry = json.loads(data)
        if isinstance(entry, dict) and entry.get("depends") == depends and "content" in entry:
            content = entry["content"]
            if hmac.compare_digest(_mac(label, _canonical(content).encode()).hex(), str(entry.get("digest"))):
                return content
    except (ValueError, TypeError):  # not UTF-8, not JSON
        pass
    discard(path)
    return None


def flush() -> int:
    """Write every derivation of this process whose computed products grew since it was read;
    returns how many were written. Does nothing while the disk cache is off, and stops when a
    write fails (the cache is then off, with one warning)."""
    written = 0
    keys, root = sorted(_touched), cache_root()
    _touched.clear()
    if root is None:
        return 0
    write_manifest(root / "jax")
    for key in keys:
        folder = root / "derivations" / key
        products = computed_products(_memory[key])
        if _stored.get(key) == products:
            continue
        try:
            data = _dumps(_memory[key], root / "derivations" / "modes")
        except Exception:  # a product that cannot be pickled: this entry stays in memory only
            continue
        if cache_root() is None:  # writing a mode failed: the cache is off
            break
        if not write_sealed(folder / "derivation.pickle", f"derivation/{key}", data):
            break
        _stored[key] = products
        written += 1
    return written


#: the sealed list of JAX's compiled entries in the ``jax`` folder, with their keyed digests
MANIFEST = "gdln-manifest"
#: what JAX rewrites as it reads (the last-used times and the lock of its size-limited cache):
#: never run, so neither listed nor checked
_JAX_BOOKKEEPING = re.compile(r"\..*|.*-atime")
#: the entries of the ``jax`` folder known to match their digests, by name: their size,
#: modification time, inode and digest (checked at the start, or written by this process)
_compiled: dict[str, tuple[int, int, int, str]] = {}


def check_compiled(folder: Path) -> int:
    """Remove from JAX's cache ``folder`` every entry that is not as gdln listed it when a command
    last ended (:func:`write_manifest`), before JAX is pointed there: JAX runs what it reads
    unchecked, and an entry swapped with another, or changed (even re-compressed so that JAX's
    own checks pass), could crash the process or give another answer. A listed entry whose keyed
    digest differs, or an entry that is not a regular file, is removed; JAX compiles it again. An
    entry not yet listed (another command's, still running) is left, and listed at this end. Returns how many were removed. Does nothing while the disk cache is off."""
    _compiled.clear()
    if cache_root() is None:
        return 0
    listed = _read_manifest(folder)
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder yet: nothing to check
        return 0
    for entry in entries:
        if entry.name == MANIFEST or entry.is_dir(follow_symlinks=False):  # executables: sealed one by one
            continue
        if _JAX_BOOKKEEPING.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            continue
        found = _compiled_digest(Path(entry.path))
        known = listed.get(entry.name)
        if found is not None and isinstance(known, dict) and hmac.compare_digest(found[3], str(known.get("digest"))):
            _compiled[entry.name] = found
            continue
        if found is not None and known is None:
            # written by a command still running, or one that ended without listing it (an error):
            # a regular file in the owner-only folder, listed when this command ends. Removing it
            # would make commands sharing a cache recompile each other's work, and say so on stderr
            continue
        try:
            os.unlink(entry.path)
            removed += 1
        except FileNotFoundError:  # removed by another process meanwhile
            pass
        except OSError:  # cannot be removed: JAX must not read this folder
            _give_up(f"cache folder {folder}", f"cannot remove {entry.name}, which does not match its digest")
            return removed
    return removed


def write_manifest(folder: Path) -> bool:
    """List every entry of JAX's cache ``folder`` with its keyed digest, sealed (what
    :func:`check_compiled` checks them against at the next start). An entry checked at the start,
    or listed by another process, and not changed since (same size and modification time) keeps
    its digest; one written since is read. ``False`` when nothing was written (the cache is off,
    no folder, or a write failed)."""
    if cache_root() is None:
        return False
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    listed = _read_manifest(folder)  # another process's entries: theirs, if unchanged
    kept: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name = entry.name
        if name == MANIFEST or _JAX_BOOKKEEPING.fullmatch(name) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        known, other = _compiled.get(name), listed.get(name)
        found: tuple[int, int, int, str] | None
        if known is not None and known[:3] == (info.st_size, info.st_mtime_ns, info.st_ino):
            found = known
        elif isinstance(other, dict) and [other.get("size"), other.get("mtime_ns")] == [info.st_size, info.st_mtime_ns]:
            found = (info.st_size, info.st_mtime_ns, info.st_ino, str(other.get("digest")))
        else:
            found = _compiled_digest(Path(entry.path))
        if found is None:
            continue
        _compiled[name] = found
        kept[name] = {"digest": found[3], "size": found[0], "mtime_ns": found[1]}
    return write_sealed(folder / MANIFEST, MANIFEST, json.dumps(kept, sort_keys=True).encode())


def _read_manifest(folder: Path) -> dict[str, Any]:
    """The entries listed in ``folder``'s manifest: empty when there is none or it is not gdln's."""
    data = read_sealed(folder / MANIFEST, MANIFEST)
    try:
        listed = json.loads(data) if data is not None else {}
    except ValueError:
        return {}
    return listed if isinstance(listed, dict) else {}


def _compiled_digest(path: Path) -> tuple[int, int, int, str] | None:
    """The size, modification time, inode and keyed digest (of its content and its name) of the
    regular file at ``path``, read without blocking; ``None`` when it is not one or cannot be read."""
    try:
        handle = _open_regular(path, follow=False)
        if handle is None:
            return None
        with handle:
            info = os.fstat(handle.fileno())
            digest = hmac.new(_state["key"], f"jax/{path.name}".encode() + b"\0", hashlib.sha256)
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except (OSError, TypeError):  # unreadable; or no key (the cache was turned off meanwhile)
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino, digest.hexdigest()


def _mac(label: str, data: bytes) -> bytes:
    """The keyed digest of ``data`` stored as ``label`` (a derivation's key, an executable's
    digest): only this user's key makes it, and an entry moved under another name fails it."""
    key = _state["key"]
    if key is None:
        raise RuntimeError("the disk cache is off: no key to authenticate its entries")
    return hmac.new(key, label.encode() + b"\0" + data, hashlib.sha256).digest()


def sealed(label: str, data: bytes) -> bytes:
    """``data`` behind its keyed digest (:func:`_mac`), which :func:`unsealed` checks."""
    return _mac(label, data) + data


def unsealed(label: str, entry: bytes) -> bytes:
    """The data of a :func:`sealed` entry; ``ValueError`` when it was not written under ``label``
    with this user's key (garbled, cut short, planted, or moved)."""
    digest, data = entry[:32], entry[32:]
    if len(digest) < 32 or not hmac.compare_digest(_mac(label, data), digest):
        raise ValueError("a cache entry that gdln did not write")
    return data


def read_sealed(path: Path, label: str) -> bytes | None:
    """The authenticated data of the entry at ``path``, or ``None`` when there is none or it
    fails :func:`unsealed`: such a file is deleted, so that one run repairs it. The data is
    checked before anything reads it: a planted pickle is never unpickled."""
    entry = _read(path)
    if entry is None or cache_root() is None:
        return None
    try:
        return unsealed(label, entry)
    except ValueError:
        discard(path)
        return None


def write_sealed(path: Path, label: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` behind its keyed digest, whole or not at all; ``False`` when it
    could not be written (the cache is then off, with one warning)."""
    if cache_root() is None:
        return False
    return _atomic_write(path, partial(_write_bytes, sealed(label, data)))


@contextlib.contextmanager
def exclusive(path: Path, waiting: Callable[[], None] | None = None):
    """Hold an exclusive lock on the file ``path`` (made if missing) for the ``with`` block, so
    that processes sharing the cache folder do one piece of work once: the others wait here and
    then read back what the holder wrote. ``waiting`` is called once if another process holds it.
    The kernel releases the lock when its holder ends, killed or not, so a lost holder never
    blocks the others. Where no lock can be taken (the disk cache off, a file system without
    locks, a system without ``fcntl``, something other than a regular file at ``path``) the
    block runs unlocked: the work is then done twice, never wrongly."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    handle = None
    if cache_root() is not None:
        with contextlib.suppress(OSError):
            _make_folders(path.parent)
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            handle = os.open(path, flags, 0o600)
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                os.close(handle)
                handle = None
    try:
        if handle is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None:
                    waiting()
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX)
                except OSError:  # no locks on this file system after all
                    pass
            except OSError:  # no locks on this file system (ENOLCK, EOPNOTSUPP)
                pass
        yield
    finally:
        if handle is not None:
            os.close(handle)  # releases the lock


#: how every file of the cache (and the key) is opened: never blocking (a named pipe or a
#: device in an entry's place opens at once, and is then refused as not a regular file)
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _open_regular(path: Path, follow: bool = True):
    """``path`` opened for reading without blocking, or ``None`` when it is not a regular file (a
    named pipe, a device, a socket, a folder; with ``follow=False`` a symbolic link too): such a
    file is never read, so it never hangs the command. ``OSError`` when it cannot be opened."""
    flags = _READ_FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        handle = os.open(path, flags)
    except OSError as error:
        if error.errno == getattr(errno, "ELOOP", None) and not follow:  # a link, refused
            return None
        raise
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            return None
        return os.fdopen(handle, "rb")
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(handle)
        raise


def _read(path: Path) -> bytes | None:
    """The bytes at ``path``, or ``None`` when they cannot be read (missing, a folder, a named
    pipe or other file that is not a regular file, no permission, a name too long): an entry
    that cannot be read is computed again."""
    try:
        handle = _open_regular(path)
        if handle is None:
            return None
        with handle:
            return handle.read()
    except OSError:
        return None


def discard(path: Path) -> None:
    """Delete an entry that is not what gdln wrote; one that cannot be deleted is overwritten by
    the next write, or left."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


class _Pickler(pickle.Pickler):
    """SymPy 1.14's ``PolyRing.__getstate__`` deletes keys from the dict it iterates over, so a
    ring cannot be pickled; it is rebuilt from what defines it (rings are cached by SymPy).

    With ``modes`` (a folder), every :class:`derive.modes.Mode` is written there once, named by a
    digest of its own pickle, and the derivation refers to it: the networks of a task share most
    of their pathways (Section 4's three share the common one), and a warm process unpickles
    each shared pathway's modes, most of a derivation's SymPy, once (:func:`_loads`)."""

    def __init__(self, file, modes: Path | None = None):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.modes = modes

    def reducer_override(self, obj):
        if isinstance(obj, PolyRing):
            return PolyRing, (obj.symbols, obj.domain, obj.order)
        if isinstance(obj, ComplexRootOf):
            return _complex_root, (obj.poly.as_expr(), obj.poly.domain, obj.index)
        if type(obj) in _AS_BUILT:
            return _as_built, (type(obj), obj.args)
        return NotImplemented

    def persistent_id(self, obj):
        if self.modes is None or not isinstance(obj, Mode):
            return None
        known = _mode_names.get((self.modes, id(obj)))
        name = known[0] if known is not None and known[1] is obj else None
        if name is None:  # a mode is frozen: once its pickle is in this folder, its name stays valid
            data = _dumps(obj)
            name = hashlib.sha256(data).hexdigest()[:32]
            path = self.modes / f"{name}.pickle"
            # a file of that name is checked, not trusted: one garbled or planted there is written
            # over, so that a rebuilt derivation never refers to a bad mode (before, such a file
            # stayed, and each run repaired only the mode its read had failed on)
            if read_sealed(path, _mode_label(name)) is None:
                write_sealed(path, _mode_label(name), data)
            _remember_mode(self.modes, name, obj)
        return ("mode", name)


#: SymPy's pickles rebuild these through their constructors, which sort and combine their
#: arguments again (most of the rest of a warm derivation's unpickling); the arguments
#: pickled are already in canonical order, so the object is rebuilt as it was. An equation
#: (``Eq``, the race ODEs) would otherwise be decided again: its sides evaluated, a CRootOf at a
#: time (20 s for Section 4's ``common+2``)
_AS_BUILT = (sympy.Add, sympy.Mul, sympy.Pow, sympy.Equality)


def _as_built(kind: type, args: tuple) -> sympy.Expr:
    """``kind(*args)`` without evaluation: equal to the pickled object (same class, same args)."""
    return kind(*args, evaluate=False)


def _complex_root(expr: sympy.Expr, domain, index: int) -> ComplexRootOf:
    """A root as SymPy built it, without factoring its polynomial again.

    ``CRootOf(f, k)`` factors ``f`` to find the irreducible factor that holds root ``k``: about
    6 ms for a degree-10 polynomial, most of a warm derivation's unpickling. A pickled root's
    polynomial is that factor already, so only its isolating intervals are computed, the step
    SymPy itself takes for an irreducible polynomial (``ComplexRootOf._indexed_root``)."""
    poly = PurePoly(expr, domain=domain)
    real_count = len(ComplexRootOf._get_reals([(poly, 1)]))
    if index >= real_count:
        ComplexRootOf._get_complexes([(poly, 1)])
    return ComplexRootOf._new(poly, index)


class _Unpickler(pickle.Unpickler):
    """Reads what :class:`_Pickler` wrote: a mode it refers to comes from this process's modes,
    else from its file in ``modes``.

    A mode file that is missing or not gdln's (deleted by :func:`read_sealed`) fails the read,
    but only at its end: the rest of the (authenticated) derivation is read on with ``None`` in
    place of its modes, so that every bad mode it refers to is found and deleted now. Stopping at
    the first left the others on disk, where the rebuilt derivation could refer to them again
    (a run repaired one or two of Section 4's garbled modes, not all it read)."""

    def __init__(self, file, modes: Path):
        super().__init__(file)
        self.modes = modes
        self.missing: list[str] = []

    def load(self):
        found = super().load()
        if self.missing:
            raise pickle.UnpicklingError(f"modes {', '.join(self.missing)} are missing or not gdln's")
        return found

    def persistent_load(self, pid):
        kind, name = pid
        if kind != "mode" or not all(c in "0123456789abcdef" for c in name):
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        if name not in _modes:
            data = read_sealed(self.modes / f"{name}.pickle", _mode_label(name))
            if data is None:  # missing, or not gdln's (deleted): the next flush writes it again
                self.missing.append(name)
            if data is None or self.missing:  # the read fails: only check the modes it names
                return None
            _modes[name] = pickle.loads(data)  # authenticated: gdln's own entry
        _remember_mode(self.modes, name, _modes[name])
        return _modes[name]


#: modes read or written by this process, by the digest they are stored under
_modes: dict[str, Any] = {}
#: their names by modes folder and object identity, with the object (which keeps its identity
#: valid), so that the networks sharing a pathway (hundreds in the exhaustive search) do not
#: pickle its modes again for every entry
_mode_names: dict[tuple[Path, int], tuple[str, Any]] = {}


def _mode_label(name: str) -> str:
    """What a mode's file is authenticated as: its name, the digest of its pickle."""
    return f"mode/{name}"


def _remember_mode(folder: Path, name: str, mode: Any) -> None:
    _modes.setdefault(name, mode)
    _mode_names[(folder, id(mode))] = (name, mode)


def _dumps(found, modes: Path | None = None) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, modes).dump(found)
    return buffer.getvalue()


def _loads(data: bytes, modes: Path) -> Any:
    return _Unpickler(io.BytesIO(data), modes).load()


def computed_products(found, depth: int = 3) -> tuple:
    """Names of the products computed so far (cached properties live in ``__dict__``), in the
    object and in the objects it holds, ``depth`` levels down: a derivation grows only by these."""
    if depth == 0:
        return ()
    if isinstance(found, (list, tuple)):
        return tuple(computed_products(item, depth - 1) for item in found)
    if not hasattr(found, "__dict__") or isinstance(found, sympy.Basic):
        return ()
    return tuple((name, computed_products(value, depth - 1)) for name, value in sorted(found.__dict__.items()))


def _write_bytes(data: bytes, handle) -> None:
    handle.write(data)


def _create(path: Path):
    """A new file at ``path`` (a temporary of this process's), open for writing: whatever was
    there (left by a process with the same id, or a named pipe, which would block the open) is
    removed first, and the file is created, never opened through what is in its place."""
    discard(path)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), "wb")


def _atomic_write(path: Path, write: Callable[[Any], Any]) -> bool:
    """Write to a temporary name (this process's and thread's) and rename, so a reader never
    sees half an entry; ``True`` when written. The cache is an optimisation: when an entry cannot
    be written (a full disk, a file-size limit, a folder removed or made read-only meanwhile)
    nothing half-written is left behind, and the disk cache is turned off with one warning
    rather than failing again for every entry."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        _make_folders(path.parent)
        with _create(temporary) as handle:
            write(handle)
        os.replace(temporary, path)
        return True
    except OSError as error:
        discard(temporary)
        _give_up(f"cache folder {cache_root() or path.parent}", f"cannot write {path.name}: {_reason(error)}")
        return False


def usage(root: Path | None = None) -> dict[str, Any]:
    """Path, number of files and bytes of each part of the cache folder, and whether a command
    can use it (``problem``: why not, naming the folder or key at fault, else ``None``)."""
    root = Path(root) if root is not None else (cache_root() or default_root())
    found = problem(root)
    parts = {}
    for part in ("derivations", "jax", POINTS):
        files, size = 0, 0
        try:
            for f in (root / part).rglob("*") if (root / part).is_dir() else ():
                if f.is_file():
                    files, size = files + 1, size + f.stat().st_size
        except OSError:  # unreadable, or changed while counted: what was counted
            pass
        parts[part] = {"files": files, "bytes": size}
    reason = None if found is None else f"{found[0]}: {found[1]}"
    return {"path": str(root), "usable": found is None, "problem": reason, **parts}


def clear(root: Path | None = None) -> None:
    """Remove the cache folder's derivations, compiled code and checked points, and forget this
    process's."""
    root = Path(root) if root is not None else (cache_root() or default_root())
    for part in ("derivations", "jax", POINTS):
        shutil.rmtree(root / part, ignore_errors=True)
    _memory.clear()
    _stored.clear()
    _touched.clear()
    _arrays.clear()
    _documents.clear()
    _modes.clear()
    _mode_names.clear()
    _compiled.clear()
