"""Output files written atomically, and JSON that is strictly finite.

Every file gdln writes (``simulate --out``, ``derive --latex``, figures) goes through
:func:`write_atomic`: the bytes go to a temporary file in the same folder, which then
replaces the target with ``os.replace``. A failed write leaves the old file as it was,
removes the temporary file and raises a one-line :class:`derive.errors.SpecError`.
"""

from __future__ import annotations

import io
import math
import os
import secrets
import stat
import threading
from pathlib import Path

from gdln.derive.errors import SpecError

#: the suffixes each kind of output may have: the file's name says its format
PLOT_SUFFIXES = (".png", ".pdf", ".svg")
LATEX_SUFFIXES = (".tex",)
CURVES_SUFFIXES = (".npz",)
SPEC_SUFFIXES = (".toml",)

# the temporary files of the writes under way: an interrupted process (gdln.interrupt) removes
# them before it ends, skipping the ``finally`` blocks that would. A name is registered before
# its file is created, and the lock (re-entrant: the interrupt may run inside it, in the same
# thread) keeps a write from creating a file once they are being removed.
_temporaries: set[str] = set()
_temporaries_lock = threading.RLock()
_removing = False


def remove_temporaries() -> None:
    """Remove the temporary files of every write under way; no write starts after this."""
    global _removing
    with _temporaries_lock:
        _removing = True
        for name in list(_temporaries):
            try:
                os.unlink(name)
            except OSError:
                pass
            _temporaries.discard(name)


def check_writable(path: str | os.PathLike, key: str = "output", suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse, before any work, an output path that cannot take the file: an empty name, a suffix
    that is not one of ``suffixes`` (when given), an existing target that is not a regular file (a
    folder, a device such as ``/dev/full``, a pipe or a symbolic link, which ``os.replace`` would
    replace by a regular file), a file that is not writable, and a folder that is missing, not
    writable or on a full disk. ``key`` is the option the user gave, which the error names."""
    if not str(path):
        raise SpecError(key, "''", "an empty name names no file")
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise SpecError(str(path), key, f"the name must end in {' or '.join(suffixes)} (the format written)")
    status = _existing(target, key)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(str(path), key, f"folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(str(path), key, f"folder {str(parent)!r} is not writable")
    if status is not None and not os.access(target, os.W_OK):
        raise SpecError(str(path), key, "file is not writable")
    try:
        space = os.statvfs(parent)
    except OSError:
        space = None
    # root may write into the blocks reserved for it, so only free blocks count there
    if space is not None and space.f_blocks and (space.f_bfree if os.geteuid() == 0 else space.f_bavail) == 0:
        raise SpecError(str(path), key, f"the disk of folder {str(parent)!r} is full")
    return target


def _existing(target: Path, key: str) -> os.stat_result | None:
    """The status of ``target`` itself (a link is not followed), ``None`` where there is none; a
    target that is not a regular file is refused."""
    try:
        status = os.lstat(target)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:  # ValueError: a NUL character in the name
        raise SpecError(str(target), key, f"cannot use: {getattr(error, 'strerror', None) or error}") from None
    if stat.S_ISDIR(status.st_mode):
        raise SpecError(str(target), key, "is a folder; give a file name")
    if not stat.S_ISREG(status.st_mode):
        raise SpecError(
            str(target), key, "exists and is not a regular file (a symbolic link, a device or a pipe): not replaced"
        )
    return status


def _create_temporary(target: Path) -> tuple[int, str]:
    """A new temporary file beside ``target``: its descriptor and name, registered before creation."""
    folder = target.parent if str(target.parent) else Path(".")
    for _ in range(100):
        name = str(folder / f".{target.name}.{secrets.token_hex(6)}.tmp")
        with _temporaries_lock:
            if _removing:
                raise SpecError(str(target), "output", "interrupted")
            _temporaries.add(name)
            try:
                return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), name
            except FileExistsError:
                _temporaries.discard(name)
            except OSError:
                _temporaries.discard(name)
                raise
    raise FileExistsError(f"no free temporary name beside {target.name}")


def write_atomic(
    path: str | os.PathLike, data: bytes | str, key: str = "output", suffixes: tuple[str, ...] = ()
) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file and ``os.replace``."""
    target = check_writable(path, key, suffixes)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    temporary = None
    try:
        handle, temporary = _create_temporary(target)
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        if target.exists():
            try:
                os.chmod(temporary, target.stat().st_mode & 0o7777)
            except OSError:
                pass
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        _existing(target, key)  # again: the target may have become a link or a pipe meanwhile
        os.replace(temporary, target)
        with _temporaries_lock:
            _temporaries.discard(temporary)
        temporary = None
    except OSError as error:
        raise SpecError(str(path), key, f"cannot write: {error.strerror or error}") from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            with _temporaries_lock:
                _temporaries.discard(temporary)
    return target


def save_figure(fig, path: str | os.PathLike, dpi: int = 120, key: str = "--out") -> Path:
    """A Matplotlib figure rendered in memory in the format its suffix names (PNG, PDF or SVG), and
    written atomically; ``key`` is the option that named the file."""
    target = check_writable(path, key, PLOT_SUFFIXES)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=target.suffix.lower().lstrip("."), dpi=dpi)
    return write_atomic(path, buffer.getvalue(), key, PLOT_SUFFIXES)


def finite_json(value, where: str = "") -> tuple[object, dict[str, str]]:
    """``value`` with every non-finite float replaced by ``None``, and the replaced places
    (``"networks[1].max_deviation": "nan"``), so that ``json.dump(..., allow_nan=False)`` holds."""
    replaced: dict[str, str] = {}

    def clean(item, at):
        if isinstance(item, float) and not math.isfinite(item):
            replaced[at or "."] = repr(float(item))
            return None
        if isinstance(item, dict):
            return {k: clean(v, f"{at}.{k}" if at else str(k)) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [clean(v, f"{at}[{n}]") for n, v in enumerate(item)]
        return item

    return clean(value, where), replaced
