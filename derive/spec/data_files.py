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
import math
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..errors import SpecError
from .limits import MAX_DATA_ENTRIES, MAX_DATA_FILE_BYTES

DATA_SUFFIXES = (".npz", ".csv")
NPY_VERSIONS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
#: what a broken or hostile zip archive raises while it is opened or a member is read
ZIP_ERRORS = (ValueError, OSError, EOFError, RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error)


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
        status = path.stat()
    except (OSError, ValueError) as error:  # ValueError: a NUL character in the name
        raise SpecError(source, "file", f"cannot read: {getattr(error, 'strerror', None) or error}") from None
    # a device (/dev/zero), a pipe or a folder has no size to check: reading it could block or never end
    if not stat.S_ISREG(status.st_mode):
        raise SpecError(source, "file", "not a regular file (a folder, a device or a pipe)")
    if status.st_size > MAX_DATA_FILE_BYTES:
        raise SpecError(
            source, "file", f"{status.st_size} bytes, above the limit of {MAX_DATA_FILE_BYTES // 2**20} MiB"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DATA_FILE_BYTES + 1)  # a file that grew since stat() is still cut off
    except OSError as error:
        raise SpecError(source, "file", f"cannot read: {error.strerror or error}") from None
    if len(data) > MAX_DATA_FILE_BYTES:
        raise SpecError(source, "file", f"above the limit of {MAX_DATA_FILE_BYTES // 2**20} MiB")
    if path.suffix.lower() == ".npz":
        inputs, targets = _read_npz(data, source)
    else:
        inputs, targets = _read_csv(data, source)
    return inputs, targets, source


def _read_npz(data: bytes, source: str) -> tuple[list[list], list[list]]:
    """Read the two arrays, checking each one's .npy header (its dtype and shape) before its data:
    an object array is refused unread (never unpickled: allow_pickle=False besides), and a small
    compressed member that would expand to a huge array is refused before it expands."""
    if data.startswith(np.lib.format.MAGIC_PREFIX):
        raise SpecError(source, "file", "not an .npz archive (a single .npy array?)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except ZIP_ERRORS as error:
        raise SpecError(source, "file", f"not a readable .npz archive: {error}") from None
    with archive:
        members = archive.namelist()
        held = sorted(member.removesuffix(".npy") for member in members)
        arrays = {}
        for key in ("inputs", "targets"):
            if key in members:  # not written by np.savez, which names array NAME's member NAME.npy
                raise SpecError(source, key, f"member {key!r} is not a .npy array (np.savez writes {key}.npy)")
            if f"{key}.npy" not in members:
                raise SpecError(source, key, f"missing array (the archive holds {', '.join(held) or 'none'})")
            try:
                array = _read_npy_member(archive, f"{key}.npy", source, key)
            except ZIP_ERRORS as error:
                raise SpecError(source, key, f"not a readable .npy array: {error}") from None
            bad = np.argwhere(~np.isfinite(array)) if array.dtype.kind == "f" else np.zeros((0, 2), int)
            if len(bad):
                r, c = (int(i) for i in bad[0])
                raise SpecError(source, f"{key}[{r}][{c}]", f"non-finite number {array[r, c]}")
            arrays[key] = array.tolist()
    return arrays["inputs"], arrays["targets"]


def _read_npy_member(archive: zipfile.ZipFile, member: str, source: str, key: str) -> np.ndarray:
    with archive.open(member) as handle:
        version = np.lib.format.read_magic(handle)
        if version not in NPY_VERSIONS:
            raise SpecError(source, key, f".npy format version {version} is not 1.0 or 2.0")
        shape, _, dtype = NPY_VERSIONS[version](handle)
        if dtype.hasobject:  # the data would be a pickle
            raise SpecError(source, key, "cannot be read without unpickling: object arrays are refused")
        if dtype.kind not in "biuf" or dtype.itemsize > 8:
            raise SpecError(source, key, f"expected real numbers of at most 64 bits, got dtype {dtype}")
        if len(shape) != 2 or 0 in shape:
            raise SpecError(source, key, f"expected a non-empty 2-d array (datapoints x features), got shape {shape}")
        if math.prod(shape) > MAX_DATA_ENTRIES:
            raise SpecError(
                source, key, f"{shape[0]} x {shape[1]} = {math.prod(shape)} entries; the limit is {MAX_DATA_ENTRIES}"
            )
    # the header holds what it should: numpy reads the member, still without unpickling
    with archive.open(member) as handle:
        return np.lib.format.read_array(handle, allow_pickle=False)


def _read_csv(data: bytes, source: str) -> tuple[list[list], list[list]]:
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, as spreadsheets write, is not part of the header
    except UnicodeDecodeError:
        raise SpecError(source, "file", "not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text))
    try:
        rows = (row for row in reader if any(cell.strip() for cell in row))
        header = [cell.strip() for cell in next(rows, [])]
        inputs = [c for c, name in enumerate(header) if name.startswith("x")]
        targets = [c for c, name in enumerate(header) if name.startswith("y")]
        if not inputs or not targets:
            if not header:
                raise SpecError(source, "file", "expected a header row and at least one datapoint")
            raise SpecError(source, "header", "name input columns x... and target columns y... (at least one of each)")
        other = [name for name in header if not name.startswith(("x", "y"))]
        if other:
            raise SpecError(source, "header", f"column {other[0]!r} is neither an input (x...) nor a target (y...)")
        parsed = []
        for r, row in enumerate(rows):
            # the entry limit while reading: a 64 MiB file of short rows would hold millions
            for key, columns in (("inputs", inputs), ("targets", targets)):
                if (r + 1) * len(columns) > MAX_DATA_ENTRIES:
                    raise SpecError(source, key, f"more than {MAX_DATA_ENTRIES} entries")
            if len(row) != len(header):
                raise SpecError(source, f"row {r + 1}", f"{len(row)} entries, the header has {len(header)}")
            values = []
            for c, cell in enumerate(row):
                where = f"row {r + 1}, column {header[c]}"
                try:
                    number = float(cell)
                except ValueError:
                    raise SpecError(source, where, f"not a number: {cell.strip()[:40]!r}") from None
                if number == 0 and any(digit in "123456789" for digit in cell.lower().partition("e")[0]):
                    # 1e-400 is not 0: refused as any entry this small is (check_data), not read as 0
                    raise SpecError(
                        source, where, f"{cell.strip()[:40]} is too small for a float: it would be read as 0"
                    )
                values.append(_exact_text(cell.strip(), number))
            parsed.append(values)
    except csv.Error as error:  # e.g. an unclosed quote that runs on past the field size limit
        raise SpecError(source, f"line {reader.line_num}", f"malformed CSV: {error}") from None
    if not parsed:
        raise SpecError(source, "file", "expected a header row and at least one datapoint")
    return [[row[c] for c in inputs] for row in parsed], [[row[c] for c in targets] for row in parsed]


def _exact_text(text: str, number: float):
    """An int for integer text, else the float (its decimal text is what the spec reads exactly)."""
    try:
        return int(text)
    except ValueError:
        return number
