"""A checked sweep's points kept as they finish, and the slices of a job array.

Training ReLU networks at the checked points is most of a checked sweep's cost that is paid
point by point. Each point's ``checked`` entry (``verify.sweep._checked_entry``) is written to the
disk cache (:mod:`derive.cache`, its ``points`` part) as soon as its batch is trained, one sealed
file per point: written whole under a temporary name and renamed, so a process killed at any
moment leaves each entry whole or absent, and read back only when its keyed digest matches. An
entry's key covers everything the entry depends on: the spec's content, the point's parameter
values and training settings (learning rate, init scale, width, epochs, seeds), ``--agf``,
gdln's code (version and sources) and the JAX platform, device and precision. A sweep run again
reads back the points that are there and trains the rest; the answer is the same bit for bit,
because a point's training does not depend on the points trained beside it (JSON writes every
float exactly).

A slice of ``N`` (``--shard I/N``) computes the theory at every point, as every run does, so
that it chooses the same checked points; then trains only its share of them
(:func:`slice_rows`) and writes them. A run without a slice on the same cache folder then reads
all of them back and trains whatever is missing. Slices may run at once on one cache folder:
each point is trained by one slice, and two processes writing the same entry write the same
bytes, each through its own temporary name.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import jax
import numpy as np
import sympy

from gdln.derive import cache
from gdln.derive.errors import GdlnError
from gdln.derive.spec import Task
from gdln.numeric.sharding import device_count
from gdln.numeric.training import SEED_CHUNK

from .sweep_shares import MalformedEntry, check_entry

#: bump when an entry's form or meaning changes without a change in gdln's sources
ENTRY_FORMAT = "gdln checked sweep point 1"


@dataclass(frozen=True)
class Shard:
    """Slice ``index`` (1 to ``count``) of a checked sweep cut into ``count`` slices."""

    index: int
    count: int

    def __post_init__(self):
        if not (isinstance(self.count, int) and isinstance(self.index, int) and 1 <= self.index <= self.count):
            raise GdlnError(f"--shard: {self.index}/{self.count} is not a slice I/N with I from 1 to N")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def slice_owners(costs: Iterable[float], count: int) -> np.ndarray:
    """The slice (0 to ``count - 1``) of each item, balancing the slices' summed ``costs``: the
    costliest item first, each to the slice with the least so far (ties to the lowest index and
    the lowest slice). Depends only on the costs, in order, so every slice computes the same
    assignment; items of equal cost go round the slices in order."""
    costs = [float(c) for c in costs]
    loads = np.zeros(count)
    owners = np.empty(len(costs), dtype=int)
    for item in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        owner = int(np.argmin(loads))
        owners[item], loads[owner] = owner, loads[owner] + costs[item]
    return owners


def slice_rows(chosen: np.ndarray, hidden_units: np.ndarray, shard: Shard | None) -> np.ndarray:
    """The grid rows among ``chosen`` (sorted) that ``shard`` trains; all of them without one.
    A point's training costs its seeds times epochs times its width in steps of work; seeds and
    epochs are the same at every point, and a learning rate changes no step's work (training
    runs the spec's epochs whatever the rate), so a point costs its width."""
    if shard is None:
        return chosen
    return chosen[slice_owners(hidden_units[chosen], shard.count) == shard.index - 1]


def batches(rows: np.ndarray, hidden_units: np.ndarray, seeds: int) -> Iterator[np.ndarray]:
    """``rows`` in batches of one width, each trained (and then written) before the next: as few
    points as fill whole groups of :data:`numeric.training.SEED_CHUNK` runs on every device
    (``train_relu_points`` runs such groups one after another, so smaller programs cost no
    speed), so that an interrupted sweep keeps all but the batch it was in."""
    runs = SEED_CHUNK * device_count()
    size = math.lcm(seeds, runs) // seeds
    for width in np.unique(hidden_units[rows]):
        mine = rows[hidden_units[rows] == width]
        for start in range(0, len(mine), size):
            yield mine[start : start + size]


@lru_cache(maxsize=1)
def _verify_sources() -> str:
    """A digest of verify's sources (the predictions and rules an entry is judged by); derive's
    and numeric's are in :func:`derive.cache.code_version`."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def _platform() -> str:
    """Where the numbers are computed: another platform, device or precision may round otherwise."""
    device = jax.devices()[0]
    return f"{device.platform} {device.device_kind} x64={bool(jax.config.read('jax_enable_x64'))}"


def spec_content(task: Task) -> str:
    """The spec as the checked entries see it: data, defaults, contexts, fixed values, candidates."""
    return "\n".join(
        [
            sympy.srepr(task.inputs),
            sympy.srepr(task.targets),
            repr([(symbol.name, float(value)) for symbol, value in task.parameters.items()]),
            repr(task.contexts),
            repr(sorted((name, sympy.srepr(value)) for name, value in task.fixed.items())),
            repr(task.networks),
        ]
    )


class PointStore:
    """The checked entries of one sweep on disk; off (reads nothing, writes nothing) while the
    disk cache is, as under ``--no-cache`` or from Python unless :func:`derive.cache.enable` was
    called."""

    def __init__(self, task: Task, grid, agf: bool):
        self.root = cache.cache_root()
        self.task, self.grid = task, grid
        self.names = [network.name for network in task.networks]
        if self.root is not None:
            self.common = "\n".join(
                [ENTRY_FORMAT, cache.code_version(), _verify_sources(), _platform(), f"agf={agf}", spec_content(task)]
            )

    def key(self, row: int) -> str:
        """The key of the entry at grid row ``row``: everything it depends on, hashed."""
        grid = self.grid
        training = replace(
            self.task.training,
            learning_rate=float(grid.learning_rate[row]),
            init_scale=float(grid.init_scale[row]),
            hidden_units=int(grid.hidden_units[row]),
        )
        values = [float(v).hex() for v in grid.values[row]]
        return hashlib.sha256(f"{self.common}\n{training!r}\n{values}".encode()).hexdigest()[:32]

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / cache.POINTS / f"{key}.json"

    def read(self, rows: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The entries on disk among ``rows``, by row: only those gdln wrote, for this sweep's point."""
        if self.root is None:
            return {}
        found = {}
        for row in rows:
            entry = self._read_one(int(row))
            if entry is not None:
                found[int(row)] = entry
        return found

    def _read_one(self, row: int) -> dict[str, Any] | None:
        key = self.key(row)
        data = cache.read_sealed(self._path(key), f"point/{key}")
        try:
            entry = json.loads(data) if data is not None else None
            check_entry(entry, self.names, self.task.training.seeds)  # sealed, but written by another version's code?
        except (ValueError, MalformedEntry):  # MalformedEntry is a ValueError; so is a JSON error
            return None
        return entry

    def write(self, row: int, entry: Mapping[str, Any]) -> None:
        """Keep ``entry`` for grid row ``row``, whole or not at all (a cache that cannot be written
        is turned off with one warning; the sweep goes on)."""
        if self.root is None or cache.cache_root() is None:
            return
        key = self.key(row)
        cache.write_sealed(self._path(key), f"point/{key}", json.dumps(entry, allow_nan=True).encode())
