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
import tempfile
from pathlib import Path

from gdln.derive.errors import SpecError


def check_writable(path: str | os.PathLike, key: str = "output") -> Path:
    """Refuse, before any work, an output path that names a folder or lies in no writable folder."""
    target = Path(path)
    if target.is_dir():
        raise SpecError(str(path), key, "is a folder; give a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(str(path), key, f"folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(str(path), key, f"folder {str(parent)!r} is not writable")
    return target


def write_atomic(path: str | os.PathLike, data: bytes | str, key: str = "output") -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` through a temporary file and ``os.replace``."""
    target = check_writable(path, key)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else "."
        )
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
        os.replace(temporary, target)
        temporary = None
    except OSError as error:
        raise SpecError(str(path), key, f"cannot write: {error.strerror or error}") from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
    return target


def save_figure(fig, path: str | os.PathLike, dpi: int = 120) -> Path:
    """A Matplotlib figure as PNG, rendered in memory and written atomically."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return write_atomic(path, buffer.getvalue(), "--out")


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
