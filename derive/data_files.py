"""Numeric data from a file named by a spec: ``[data] file = "data.npz"`` or ``"data.csv"``.

- ``.npz``: arrays ``inputs`` (N x inputs) and ``targets`` (N x targets) of real numbers,
  read with ``allow_pickle=False`` (an object array is refused, never unpickled).
- ``.csv``: a header row, then one row per datapoint. Columns whose name starts with ``x`` are
  inputs, those starting with ``y`` targets, each in file order; entries are decimal numbers,
  read exactly as the spec's own numbers are.

The path is resolved relative to the spec file. Entries then pass the same checks as inline
data (finite, magnitude, entry count); every error is one line naming the file and the array,
row or column.
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import numpy as np

from .errors import SpecError

#: size of a data file
MAX_DATA_FILE_BYTES = 64 * 2**20
DATA_SUFFIXES = (".npz", ".csv")


def resolve(name, spec_source: str, key: str = "data.file") -> Path:
    """``name`` relative to the folder of the spec file (the working folder for specs built in Python)."""
    if not isinstance(name, str) or not name.strip():
        raise SpecError(spec_source, key, "expected a file name (a string)")
    path = Path(name)
    if not path.is_absolute() and spec_source not in ("<python>", "") and not spec_source.startswith("<"):
        path = Path(spec_source).parent / path
    return path


def read_data_file(name, spec_source: str) -> tuple[list[list], list[list], str]:
    """``(inputs, targets, source)``: rows of Python numbers, and the name errors should give."""
    path = resolve(name, spec_source)
    source = str(path)
    if path.suffix.lower() not in DATA_SUFFIXES:
        raise SpecError(spec_source, "data.file", f"{name!r} is neither .npz nor .csv")
    try:
        size = path.stat().st_size
    except OSError as error:
        raise SpecError(source, "file", f"cannot read: {error.strerror or error}") from None
    if size > MAX_DATA_FILE_BYTES:
        raise SpecError(source, "file", f"{size} bytes, above the limit of {MAX_DATA_FILE_BYTES // 2**20} MiB")
    data = path.read_bytes()
    if path.suffix.lower() == ".npz":
        inputs, targets = _read_npz(data, source)
    else:
        inputs, targets = _read_csv(data, source)
    return inputs, targets, source


def _read_npz(data: bytes, source: str) -> tuple[list[list], list[list]]:
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as error:
        raise SpecError(source, "file", f"not a readable .npz archive: {error}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise SpecError(source, "file", "not an .npz archive (a single .npy array?)")
    with archive:
        arrays = {}
        for key in ("inputs", "targets"):
            if key not in archive.files:
                raise SpecError(source, key, f"missing array (the archive holds {', '.join(archive.files) or 'none'})")
            try:
                array = archive[key]
            except ValueError as error:  # an object array: pickled, refused
                raise SpecError(source, key, f"cannot be read without unpickling: {error}") from None
            if array.dtype.kind not in "biuf":
                raise SpecError(source, key, f"expected real numbers, got dtype {array.dtype}")
            if array.ndim != 2 or 0 in array.shape:
                raise SpecError(
                    source, key, f"expected a non-empty 2-d array (datapoints x features), got shape {array.shape}"
                )
            bad = np.argwhere(~np.isfinite(array)) if array.dtype.kind == "f" else np.zeros((0, 2), int)
            if len(bad):
                r, c = (int(i) for i in bad[0])
                raise SpecError(source, f"{key}[{r}][{c}]", f"non-finite number {array[r, c]}")
            arrays[key] = array.tolist()
    return arrays["inputs"], arrays["targets"]


def _read_csv(data: bytes, source: str) -> tuple[list[list], list[list]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(source, "file", "not UTF-8 text") from None
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise SpecError(source, "file", "expected a header row and at least one datapoint")
    header = [cell.strip() for cell in rows[0]]
    inputs = [c for c, name in enumerate(header) if name.startswith("x")]
    targets = [c for c, name in enumerate(header) if name.startswith("y")]
    if not inputs or not targets:
        raise SpecError(source, "header", "name input columns x... and target columns y... (at least one of each)")
    other = [name for name in header if not name.startswith(("x", "y"))]
    if other:
        raise SpecError(source, "header", f"column {other[0]!r} is neither an input (x...) nor a target (y...)")
    parsed = []
    for r, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise SpecError(source, f"row {r + 1}", f"{len(row)} entries, the header has {len(header)}")
        values = []
        for c, cell in enumerate(row):
            try:
                number = float(cell)
            except ValueError:
                raise SpecError(source, f"row {r + 1}, column {header[c]}", f"not a number: {cell.strip()!r}") from None
            values.append(_exact_text(cell.strip(), number))
        parsed.append(values)
    return [[row[c] for c in inputs] for row in parsed], [[row[c] for c in targets] for row in parsed]


def _exact_text(text: str, number: float):
    """An int for integer text, else the float (its decimal text is what the spec reads exactly)."""
    try:
        return int(text)
    except ValueError:
        return number
