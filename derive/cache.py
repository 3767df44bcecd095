"""Derivations kept across runs: in memory for the process, and on disk once an entry point
switches the disk cache on.

A derivation is keyed by a hash of what it depends on (the task's exact data, its parameters
and their defaults, the network's pathways or graph) together with gdln's version and a digest
of the source of ``derive`` and ``numeric``, so an edited checkout never reads a stale entry.
On disk an entry is the pickled derivation with every product computed so far (its cached
properties: modes, couplings, symmetric groups, the reduced system, ODEs, loss, speed),
behind a digest of the pickle; next to it the numbers ``numeric`` evaluated from it (``.npz``,
read with ``allow_pickle=False``) and JSON products such as ``derive``'s printed summary
(:func:`document`), each with what it was made for and a digest of its content. The modes of
its pathways are written once for all entries, in ``derivations/modes``, named by the digest of
their pickle, so a pathway that several networks share is read once. An entry that does not
match its digest, or was made for another key, is rebuilt, never trusted. Entries are only
ever written by gdln itself, under :func:`cache_root`; the pickles are gdln's own objects,
never user input.

The disk cache is off unless :func:`enable` is called: the CLI calls it (``--no-cache`` does not)
and :func:`flush` when a command ends; importing gdln touches no files.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import sys
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

_state: dict[str, Any] = {"root": None}
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


def enable(root: Path | None = None) -> Path:
    """Keep derivations on disk under ``root`` (default :func:`default_root`) from now on."""
    _state["root"] = Path(root) if root is not None else default_root()
    return _state["root"]


def disable() -> None:
    _state["root"] = None


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
    if folder is not None and (folder / "derivation.pickle").is_file():
        try:
            data = _unsealed((folder / "derivation.pickle").read_bytes())
            found = _loads(data, folder.parent / "modes")  # gdln's own entry, as written
            if key_of(found) != key:
                raise ValueError(f"the entry under {key} is another derivation's")
            _stored[key] = computed_products(found)
        except Exception:  # a truncated, garbled or foreign entry is rebuilt, never trusted
            found = None
    if found is None:
        _stored.pop(key, None)  # whatever is on disk is not this: the next flush writes it
        found = build()
    found.cache_key = key
    _memory[key] = found
    _touched.add(key)  # only once built: a build that raised leaves nothing for flush() to write
    return found


def arrays(key: str | None, name: str, compute: Callable[[], Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Numbers evaluated from the derivation with ``key``: kept in memory, and on disk as
    ``name.npz`` next to it when the disk cache is on."""
    if key is None:
        return {k: np.asarray(v) for k, v in compute().items()}
    if (key, name) in _arrays:
        return _arrays[(key, name)]
    folder = _folder(key)
    path = None if folder is None else folder / f"{name}.npz"
    result = None
    if path is not None and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as stored:
                result = {k: stored[k] for k in stored.files}
        except Exception:
            result = None
    if result is None:
        result = {k: np.asarray(v) for k, v in compute().items()}
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, lambda handle: np.savez(handle, **result))
    _arrays[(key, name)] = result
    return result


def document(key: str | None, name: str, depends: str, compute: Callable[[], Any]) -> Any:
    """A JSON-ready product of the derivation with ``key`` that also depends on ``depends`` (text
    naming whatever else went into it: values, other derivations, the code that builds it):
    kept in memory, and on disk as ``name-<digest of depends>.json`` next to the derivation
    when the disk cache is on. The file holds ``depends`` and a digest of its content; a file
    that cannot be read, was written for other ``depends``, or whose content does not match its
    digest is computed again and rewritten, never trusted."""
    if key is None:
        return compute()
    tag = hashlib.sha256(depends.encode()).hexdigest()[:16]
    if (key, name, tag) in _documents:
        return _documents[(key, name, tag)]
    folder = _folder(key)
    path = None if folder is None else folder / f"{name}-{tag}.json"
    found = _read_document(path, depends) if path is not None and path.is_file() else None
    if found is None:
        content = compute()
        text = _canonical(content)
        found = json.loads(text)  # as it will be read back: lists for tuples, string keys
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            entry = {"depends": depends, "digest": hashlib.sha256(text.encode()).hexdigest(), "content": found}
            write_bytes_atomically(path, json.dumps(entry).encode())
    _documents[(key, name, tag)] = found
    return found


def _canonical(content: Any) -> str:
    return json.dumps(content, sort_keys=True, allow_nan=True)


def _read_document(path: Path, depends: str) -> Any:
    """The content of a document file, or ``None`` when it is unreadable, for other ``depends``,
    or altered since it was written."""
    try:
        entry = json.loads(path.read_text())
        if not isinstance(entry, dict) or entry.get("depends") != depends or "content" not in entry:
            return None
        content = entry["content"]
        if hashlib.sha256(_canonical(content).encode()).hexdigest() != entry.get("digest"):
            return None
        return content
    except (OSError, ValueError, TypeError):  # unreadable, not UTF-8, not JSON
        return None


def flush() -> int:
    """Write every derivation of this process whose computed products grew since it was read;
    returns how many were written. Does nothing while the disk cache is off."""
    written = 0
    keys, root = sorted(_touched), cache_root()
    _touched.clear()
    if root is None:
        return 0
    for key in keys:
        folder = root / "derivations" / key
        products = computed_products(_memory[key])
        if _stored.get(key) == products:
            continue
        try:
            data = _dumps(_memory[key], root / "derivations" / "modes")
        except Exception:  # a product that cannot be pickled: this entry stays in memory only
            continue
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(folder / "derivation.pickle", _sealed(data))
        _stored[key] = products
        written += 1
    return written


def _sealed(data: bytes) -> bytes:
    """``data`` behind its SHA-256 digest, which :func:`_unsealed` checks."""
    return hashlib.sha256(data).digest() + data


def _unsealed(sealed: bytes) -> bytes:
    """The data of a :func:`_sealed` entry; ``ValueError`` when it does not match its digest (a
    truncated or garbled file)."""
    digest, data = sealed[:32], sealed[32:]
    if len(digest) < 32 or hashlib.sha256(data).digest() != digest:
        raise ValueError("a cache entry that does not match its digest")
    return data


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
            if not path.is_file():
                self.modes.mkdir(parents=True, exist_ok=True)
                write_bytes_atomically(path, data)
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
    else from its file in ``modes``."""

    def __init__(self, file, modes: Path):
        super().__init__(file)
        self.modes = modes

    def persistent_load(self, pid):
        kind, name = pid
        if kind != "mode" or not all(c in "0123456789abcdef" for c in name):
            raise pickle.UnpicklingError(f"unknown reference {pid!r}")
        if name not in _modes:
            path = self.modes / f"{name}.pickle"
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest()[:32] != name:  # named by its digest: garbled
                path.unlink(missing_ok=True)  # the next flush writes it again
                raise pickle.UnpicklingError(f"mode {name} does not match its digest")
            _modes[name] = pickle.loads(data)  # gdln's own entry
        _remember_mode(self.modes, name, _modes[name])
        return _modes[name]


#: modes read or written by this process, by the digest they are stored under
_modes: dict[str, Any] = {}
#: their names by modes folder and object identity, with the object (which keeps its identity
#: valid), so that the networks sharing a pathway (hundreds in the exhaustive search) do not
#: pickle its modes again for every entry
_mode_names: dict[tuple[Path, int], tuple[str, Any]] = {}


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


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader never sees half of it (gdln's cache entries,
    here and in :mod:`numeric.integrate`)."""
    _atomic_write(path, partial(_write_bytes, data))


def _write_bytes(data: bytes, handle) -> None:
    handle.write(data)


def _atomic_write(path: Path, write: Callable[[Any], Any]) -> None:
    """Write to a temporary name and rename, so a reader never sees half an entry. The cache is
    an optimisation: an entry that cannot be written (a full disk, a file-size limit, a folder
    without write permission) is left out, with nothing half-written left behind."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


def usage(root: Path | None = None) -> dict[str, Any]:
    """Path, number of files and bytes of each part of the cache folder."""
    root = Path(root) if root is not None else (cache_root() or default_root())
    parts = {}
    for part in ("derivations", "jax"):
        files = [f for f in (root / part).rglob("*") if f.is_file()] if (root / part).is_dir() else []
        parts[part] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}
    return {"path": str(root), **parts}


def clear(root: Path | None = None) -> None:
    """Remove the cache folder's derivations and compiled code, and forget this process's."""
    root = Path(root) if root is not None else (cache_root() or default_root())
    for part in ("derivations", "jax"):
        shutil.rmtree(root / part, ignore_errors=True)
    _memory.clear()
    _stored.clear()
    _touched.clear()
    _arrays.clear()
    _documents.clear()
    _modes.clear()
    _mode_names.clear()
