"""What the processes of a checked ``gdln sweep`` hand each other (:func:`numeric.processes.gather_json`),
checked before use.

JAX's coordination service authenticates no one: any client that reaches process 0's
coordinator can join as a process and post entries. A process therefore takes from another
only what that process was given to compute (its share of process 0's chosen points), and only
in the form gdln itself writes: the keys and types of a ``checked`` entry, its numbers finite
wherever the process's own would be. Anything else ends the run in one line naming the process;
it is never used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from gdln.derive.errors import GdlnError
from gdln.numeric.processes import share_of

#: ``reason`` of a checked entry (``verify.sweep._checked_entry``), where it is not ``None``
REASON = re.compile(r"diverged at epoch [0-9]{1,12}")
#: the keys of every checked entry; ``agf_deviation`` is added where the AGF model was asked for
ENTRY_KEYS = frozenset(
    "follows max_deviation deviations seeds lead seed_error lead_needed decided reason t_half".split()
)
AGF_KEY = "agf_deviation"


class MalformedEntry(ValueError):
    """What is wrong with one entry, to be told with the process that sent it."""


#: the end of a message about another process's malformed data
_TRUST = ": only the processes of this run may reach its coordinator"


def _finite(value: Any) -> bool:
    # JSON gives a float back as a float: an int or a bool where gdln wrote a float is not its entry
    return type(value) is float and math.isfinite(value)


def _deviation(value: Any) -> bool:
    """A gap as a fraction of the initial loss: at least 0, or not finite where a curve diverged
    (NaN, infinity) as in a process's own entry."""
    return type(value) is float and not value < 0


def _require(entry: dict, key: str, ok: bool, what: str) -> None:
    if not ok:
        raise MalformedEntry(f"{key} is {str(entry.get(key))[:40]!r}, not {what}")


def check_entry(entry: Any, names: Collection[str], seeds: int) -> None:
    """Raise :class:`MalformedEntry` unless ``entry`` is a checked entry as gdln writes it
    (``verify.sweep._checked_entry``), for the candidates ``names`` trained with ``seeds``
    seeds. A candidate's deviation, the seeds' error and the lead needed may be non-finite (a
    diverged curve), as in a process's own entry; the followed candidate's deviation, the lead
    and ``t_half`` are finite or ``None``."""
    if not isinstance(entry, dict) or not ENTRY_KEYS <= entry.keys() <= ENTRY_KEYS | {AGF_KEY}:
        raise MalformedEntry("not an object with a checked entry's keys")
    deviations, follows, reason = entry["deviations"], entry["follows"], entry["reason"]
    _require(entry, "follows", follows is None or follows in names, "a candidate's name or null")
    _require(
        entry, "max_deviation", (entry["max_deviation"] is None) == (follows is None), "null exactly where follows is"
    )
    for key in ("max_deviation", "lead", "t_half"):
        _require(entry, key, entry[key] is None or _finite(entry[key]), "a finite number or null")
    for key in ("seed_error", "lead_needed"):
        _require(entry, key, entry[key] is None or _deviation(entry[key]), "a number at least 0 or null")
    if AGF_KEY in entry:
        _require(entry, AGF_KEY, _deviation(entry[AGF_KEY]), "a number at least 0")
    every = isinstance(deviations, dict) and deviations.keys() == set(names)
    _require(entry, "deviations", every and all(map(_deviation, deviations.values())), "every candidate's deviation")
    _require(entry, "seeds", type(entry["seeds"]) is int and entry["seeds"] == seeds, f"{seeds}, the run's seeds")
    _require(entry, "decided", entry["decided"] is None or type(entry["decided"]) is bool, "true, false or null")
    _require(
        entry,
        "reason",
        reason is None or (isinstance(reason, str) and bool(REASON.fullmatch(reason))),
        "a divergence or null",
    )


def check_plans(plans: Sequence[Any], points: int, me: int) -> None:
    """Every other process's plan (the points it would check, and its sweep's digest) has the
    form this process's has: distinct grid indices below ``points``, and a text.

    Raises:
        GdlnError: one line naming the process whose plan is malformed."""
    for process, plan in enumerate(plans):
        chosen = plan.get("chosen") if isinstance(plan, dict) else None
        well_formed = (
            isinstance(chosen, list)
            and all(type(i) is int and 0 <= i < points for i in chosen)
            and len(set(chosen)) == len(chosen)
            and isinstance(plan.get("sweep"), str)
        )
        if process != me and not well_formed:
            raise GdlnError(f"process {process} sent a malformed plan of the checked points{_TRUST}")


def share_entries(
    shares: Sequence[Any], chosen: np.ndarray, names: Collection[str], seeds: int, me: int
) -> list[tuple[int, dict]]:
    """The ``(grid index, checked entry)`` pairs of every process's share. Another process's
    entries are exactly its share of the ``chosen`` points (:func:`numeric.processes.share_of`),
    so none overwrites this process's (``me``) or a third's, and each is well-formed
    (:func:`check_entry`); its seconds, a finite number at least 0. This process's own share
    is its own (:func:`numeric.processes.gather_json`), taken as it is.

    Raises:
        GdlnError: one line naming the process whose share is malformed."""
    found: list[tuple[int, dict]] = []
    for process, share in enumerate(shares):
        if process == me:
            found.extend((index, entry) for index, entry in share["entries"])
            continue
        try:
            found.extend(_share(share, chosen[share_of(process, len(shares), len(chosen))], names, seeds))
        except MalformedEntry as error:
            raise GdlnError(
                f"process {process} sent a malformed share of the checked points ({error}){_TRUST}"
            ) from None
    return found


def _share(share: Any, expected: np.ndarray, names: Collection[str], seeds: int) -> list[tuple[int, dict]]:
    """The pairs of one other process's share, checked (:func:`share_entries`)."""
    if not isinstance(share, dict) or share.keys() != {"entries", "seconds"}:
        raise MalformedEntry("not an object of entries and seconds")
    seconds, entries = share["seconds"], share["entries"]
    if not (_finite(seconds) and seconds >= 0):
        raise MalformedEntry(f"seconds is {str(seconds)[:40]!r}, not a finite number at least 0")
    if not isinstance(entries, list) or not all(isinstance(e, list) and len(e) == 2 for e in entries):
        raise MalformedEntry("entries is not a list of [grid index, entry] pairs")
    indices = [index for index, _ in entries]
    if not all(type(i) is int for i in indices) or sorted(indices) != sorted(expected.tolist()):
        raise MalformedEntry(
            f"its entries are for points {str(indices)[:60]}, not its share {str(expected.tolist())[:60]}"
        )
    for index, entry in entries:
        try:
            check_entry(entry, names, seeds)
        except MalformedEntry as error:
            raise MalformedEntry(f"point {index}: {error}") from None
    return [(index, entry) for index, entry in entries]
