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

A slice of ``N`` (``--shard I/N``) needs the theory at every point, as every run does, so
that it chooses the same checked points; slices sharing a cache folder compute it once, under a
lock (:meth:`TheoryStore.computing`), the others reading it back; then each trains only its share of them
(:func:`slice_rows`) and writes them. A run without a slice on the same cache folder then reads
all of them back and trains whatever is missing. Slices may run at once on one cache folder:
each point is trained by one slice, and two processes writing the same entry write the same
bytes, each through its own temporary name.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

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


@dataclass(frozen=True)
class GridTheory:
    """The theory at every point of a sweep's grid, before any training: the part of a checked
    sweep that is computed for the whole grid at once, and kept whole (:class:`TheoryStore`).

    Attributes:
        t_half: ``(points, networks)`` each candidate's epochs to half its initial loss in the
            width-seeded race (NaN: not within the horizon, or not raced).
        t_90: ``(points, networks)`` the same to 90% of the way down.
        final_loss: ``(points, networks)`` the loss at the horizon over the initial loss.
        aligned_t_half: ``(points, networks)`` ``t_half`` in the alignment-seeded race.
        phase_epochs: ``(points, seeds)`` where each seed's alignment phase ends (-1: not run).
        stable: per point, whether its learning rate keeps descent stable (``None``: not judged).
        predicted_validity: per point, verify's prediction of where the theory holds, or ``None``.
        predicted_follows: per point, the network predicted to be followed, or ``None``.
        exceptional: per point, why it is derived where it lies (as ``race`` says it), or ``None``.
        seconds: ``theory_s``, ``aligned_s`` and ``predicted_validity_s`` spent computing it by
            this run; ``None`` as kept on disk (a run that reads it back spent none of them).
    """

    t_half: np.ndarray
    t_90: np.ndarray
    final_loss: np.ndarray
    aligned_t_half: np.ndarray
    phase_epochs: np.ndarray
    stable: list[bool | None]
    predicted_validity: list[dict[str, Any] | None]
    predicted_follows: list[dict[str, Any] | None]
    exceptional: list[str | None]
    seconds: dict[str, float] | None

    _ARRAYS: ClassVar[tuple[str, ...]] = ("t_half", "t_90", "final_loss", "aligned_t_half", "phase_epochs")

    def to_json(self) -> dict[str, Any]:
        """Lists and numbers (NaN kept: written with ``allow_nan``), every float exact."""
        entries = {name: np.asarray(getattr(self, name)).tolist() for name in self._ARRAYS}
        for name in ("stable", "predicted_validity", "predicted_follows", "exceptional", "seconds"):
            entries[name] = _plain(getattr(self, name))
        return entries

    @classmethod
    def from_json(cls, entries: Mapping[str, Any]) -> GridTheory:
        def array(name: str, dtype=np.float64) -> np.ndarray:
            return np.asarray(entries[name], dtype=dtype)

        return cls(
            t_half=array("t_half"),
            t_90=array("t_90"),
            final_loss=array("final_loss"),
            aligned_t_half=array("aligned_t_half"),
            phase_epochs=array("phase_epochs", np.int64),
            stable=list(entries["stable"]),
            predicted_validity=list(entries["predicted_validity"]),
            predicted_follows=list(entries["predicted_follows"]),
            exceptional=list(entries["exceptional"]),
            seconds=entries["seconds"],
        )


def _plain(value: Any) -> Any:
    """``value`` with numpy's scalars and arrays as Python's, for JSON."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class TheoryStore:
    """A sweep's :class:`GridTheory` on disk, one sealed entry for the whole grid, keyed by every
    point's key (:meth:`PointStore.key`: the spec, the point's values and training settings,
    gdln's code, the platform): a rerun of a sweep stopped while training reads the theory back
    instead of computing it again, and the slices of a job array, which all compute the same
    theory, leave it for the assembling run. The theory is computed for the whole grid at once
    (its solves are batched over the points), so it is kept whole or not at all: reading it back
    gives the same report as an uninterrupted run, to the bit. Off with the disk cache."""

    def __init__(self, points: PointStore):
        self.root = points.root
        if self.root is not None:
            rows = "\n".join(points.key(row) for row in range(points.grid.size))
            self.key = hashlib.sha256(f"theory\n{rows}".encode()).hexdigest()[:32]

    def _path(self) -> Path:
        assert self.root is not None
        return self.root / cache.POINTS / f"theory-{self.key}.json"

    def read(self) -> GridTheory | None:
        """The grid's theory where a run kept it, else ``None``."""
        if self.root is None:
            return None
        data = cache.read_sealed(self._path(), f"theory/{self.key}")
        if data is None:
            return None
        try:
            return GridTheory.from_json(json.loads(data))
        except (ValueError, KeyError, TypeError):  # sealed, but of another form
            return None

    def computing(self, waiting: Callable[[], None]) -> AbstractContextManager[None]:
        """Hold the grid's theory lock while computing the theory: of the slices of a job array
        started at once on one cache folder, one computes it and the others wait (``waiting`` is
        called once), then read it back. In a run of several processes, or without the disk cache,
        nothing is held (each process computes its own)."""
        if self.root is None or jax.process_count() > 1:
            return nullcontext()
        return cache.exclusive(self.root / cache.POINTS / f"theory-{self.key}.lock", waiting)

    def write(self, theory: GridTheory) -> None:
        """Keep ``theory``, whole or not at all."""
        if self.root is None or cache.cache_root() is None:
            return
        data = json.dumps(theory.to_json(), allow_nan=True).encode()
        cache.write_sealed(self._path(), f"theory/{self.key}", data)
