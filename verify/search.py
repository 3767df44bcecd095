"""The exhaustive race of Proposition 4.2 (issue: the race over every ReLN a ReLU layer can
implement, part 2): every network of at most ``max_pathways`` pathways whose gates one ReLU unit
without bias can implement, pruned by the bounds of the paper's proof, one per orbit of the data's
automorphisms.

Every realizable pattern (:func:`verify.realizability.realizable`), every realizable union of
whole contexts, or every self-consistent pattern (:func:`self_consistent`: the gates the early
alignment phase reaches) gives one pathway with all inputs and outputs, as a ReLU unit sees them. Pruning, each step reported with its count:

- a pattern whose effective correlations ``Sigma_yx`` vanish is dropped: its pathway is never
  driven and stays at its seed;
- Appendix E's first step: the network learns first through its pathway of largest singular value,
  and interlacing (fewer inputs or outputs) and Perron-Frobenius (fewer datapoints, for
  nonnegative ``Sigma_yx``) bound which patterns attain the largest over all patterns. A candidate
  without such a pattern starts its first drop later than one with it and is not raced. The
  search checks the Perron-Frobenius bound on every nested pair it visits, and interlacing on
  every pattern with one input or one output dropped, and reports violations;
- networks in one orbit of the automorphisms learn identically: one is raced per orbit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from itertools import combinations, product
from math import comb
from typing import Any

import numpy as np

from gdln.derive.automorphisms import automorphisms
from gdln.derive.errors import SpecError
from gdln.derive.spec import Network, Pathway, Task
from gdln.numeric.data import NumericDataset

from .realizability import MAX_LEMMA_DATAPOINTS, realizable

#: relative tolerance of the singular-value comparisons (float64 SVD of exact data)
SPEED_TOLERANCE = 1e-9
#: at most this many networks are raced (after pruning and symmetry); more is refused with the count.
#: Section 5 at K = 5, P = 4 and 6 pathways races 2276 in about 10 minutes on 2 cores.
MAX_RACED_NETWORKS = 2500
#: at most this many candidate networks are enumerated (canonicalised in numpy, about 3 s per million)
MAX_CANDIDATES = 1_000_000


def _pattern_name(pattern: tuple[int, ...]) -> str:
    return "on-" + "-".join(map(str, pattern))


#: which gate patterns the search builds pathways from
PATTERN_SETS = ("all", "contexts", "self-consistent")


def self_consistent(inputs: np.ndarray, correlation: np.ndarray, pattern: tuple[int, ...]) -> bool | None:
    """Whether ``pattern`` is a fixed point of the early alignment phase: the leading input
    singular vector ``v`` of its correlation (``Sigma_yx`` of the pattern, the residual being the
    targets) switches a ReLU unit on exactly at ``pattern``, with ``w = v`` or ``w = -v`` (the
    output weights then take the sign, ``(-u)(-v)^T = u v^T``). A unit at small initialization
    turns towards such a direction (Maennel, Bousquet & Gelly 2018; Kumar & Haupt 2024), so these
    are the gates one ReLU layer reaches, a subset of the realizable ones (``v`` realizes them).
    ``None`` when the leading singular value is repeated and ``v`` is not determined."""
    if not correlation.size:
        return False
    _, values, right = np.linalg.svd(correlation)
    if values[0] <= 0:
        return False
    if len(values) > 1 and values[1] >= values[0] * (1 - SPEED_TOLERANCE):
        return None
    projections = inputs @ right[0]
    scale = SPEED_TOLERANCE * float(np.max(np.abs(projections)))
    on = tuple(int(n) for n in np.flatnonzero(projections > scale))
    off = tuple(int(n) for n in np.flatnonzero(-projections > scale))
    return tuple(pattern) in (on, off)


def _check_search(task: Task, max_pathways: int, patterns: str) -> None:
    """One-line errors for a search the task cannot run."""
    if patterns not in PATTERN_SETS:
        raise SpecError(task.source, "--patterns", f"expected one of {', '.join(PATTERN_SETS)}, got {patterns!r}")
    if patterns == "contexts" and task.contexts is None:
        raise SpecError(task.source, "data.contexts", "--patterns contexts needs data.contexts")
    if not 1 <= max_pathways <= 8:
        raise SpecError(task.source, "--max-pathways", f"must be between 1 and 8, got {max_pathways}")
    count = task.num_datapoints
    if patterns != "contexts" and count > MAX_LEMMA_DATAPOINTS:
        raise SpecError(
            task.source,
            "data",
            f"the search enumerates gate patterns of at most {MAX_LEMMA_DATAPOINTS} datapoints, got {count} "
            "(--patterns contexts has no such limit)",
        )


def _gate_sets(task: Task, patterns: str) -> list[tuple[int, ...]]:
    """The gate patterns the search considers: every nonempty set of datapoints, or with
    ``contexts`` every union of whole contexts."""
    if patterns == "contexts":
        labels = sorted(set(task.contexts or ()))
        return [
            tuple(n for n, c in enumerate(task.contexts or ()) if c in chosen)
            for size in range(1, len(labels) + 1)
            for chosen in combinations(labels, size)
        ]
    count = task.num_datapoints
    return [tuple(k for k, b in enumerate(bits) if b) for bits in product((0, 1), repeat=count) if any(bits)]


def _violations(driven: list, correlations: Mapping, speed: Mapping) -> tuple[list, list]:
    """The pairs of driven patterns that break Perron-Frobenius monotonicity (a pattern inside a
    nonnegative one yet faster), and the interlacing checks that fail (a pathway that loses one
    input or one output never gains a singular value): both empty where the theory holds."""
    violations = [
        [list(a), list(b)]
        for a in driven
        for b in driven
        if set(a) < set(b)
        and np.all(correlations[b] >= -SPEED_TOLERANCE)
        and speed[a] > speed[b] * (1 + SPEED_TOLERANCE)
    ]
    interlacing = [
        [list(p), side, k]
        for p in driven
        for side, axis in (("input", 1), ("output", 0))
        for k in range(correlations[p].shape[axis])
        if correlations[p].shape[axis] > 1
        and float(np.linalg.norm(np.delete(correlations[p], k, axis=axis), 2)) > speed[p] * (1 + SPEED_TOLERANCE)
    ]
    return violations, interlacing


def _orbits(
    task: Task, driven: list, leaders: set, max_pathways: int
) -> tuple[dict[tuple[int, int], list[tuple[tuple[int, ...], ...]]], int, int]:
    """The candidate networks of up to ``max_pathways`` driven patterns that contain a leader,
    grouped into orbits under the data's symmetries; with how many were considered and how many
    were pruned for having no leader."""
    total = sum(comb(len(driven), size) for size in range(1, max_pathways + 1))
    if total > MAX_CANDIDATES:
        raise SpecError(
            task.source,
            "--max-pathways",
            f"{total} candidate networks of {len(driven)} patterns (at most {MAX_CANDIDATES}); lower --max-pathways",
        )
    moves = _pattern_moves(driven, automorphisms(task))
    leading = np.array([p in leaders for p in driven])
    orbits: dict[tuple[int, int], list[tuple[tuple[int, ...], ...]]] = {}
    considered = without_leader = 0
    for size in range(1, max_pathways + 1):
        chosen = np.array(list(combinations(range(len(driven)), size)), dtype=np.int64).reshape(-1, size)
        considered += len(chosen)
        led = leading[chosen].any(axis=1)
        without_leader += int(np.count_nonzero(~led))
        chosen = chosen[led]
        for members, form in zip(chosen, _canonical_codes(chosen, moves)):
            orbits.setdefault((size, int(form)), []).append(tuple(driven[k] for k in members))
    if len(orbits) > MAX_RACED_NETWORKS:
        raise SpecError(
            task.source,
            "--max-pathways",
            f"{len(orbits)} orbits of candidate networks to race (at most {MAX_RACED_NETWORKS}); lower --max-pathways",
        )
    return orbits, considered, without_leader


def search_networks(
    task: Task, overrides: Mapping[str, float] | None, max_pathways: int, patterns: str = "all"
) -> tuple[tuple[Network, ...], dict[str, Any]]:
    """The networks the search races (one per orbit) and the search's account of itself.

    ``patterns`` is ``"all"`` (every realizable pattern), ``"contexts"`` (the realizable unions
    of whole contexts, ``data.contexts``: the patterns of the paper's candidates) or
    ``"self-consistent"`` (the patterns :func:`self_consistent` keeps: those the alignment phase
    reaches, with a repeated leading singular value kept too and reported)."""
    _check_search(task, max_pathways, patterns)
    count = task.num_datapoints
    values = task.values(overrides)
    inputs, targets = (np.asarray(a) for a in NumericDataset(task)([float(values[p]) for p in task.parameters]))
    gates = _gate_sets(task, patterns)
    found = [g for g in gates if realizable(inputs, frozenset(g))[0]]
    correlations = {p: targets[list(p)].T @ inputs[list(p)] / count for p in found}
    consistent = {p: self_consistent(inputs, correlations[p], p) for p in found}
    if patterns == "self-consistent":
        found = [p for p in found if consistent[p] is not False]
    speed = {p: float(np.linalg.norm(correlations[p], 2)) if correlations[p].size else 0.0 for p in found}
    scale = max(speed.values(), default=0.0)
    driven = [p for p in found if speed[p] > SPEED_TOLERANCE * max(scale, 1.0)]
    leaders = {p for p in driven if speed[p] >= scale * (1 - SPEED_TOLERANCE)}
    orbits, considered, without_leader = _orbits(task, driven, leaders, max_pathways)
    violations, interlacing = _violations(driven, correlations, speed)
    units = task.training.hidden_units
    networks = tuple(
        search_network(f"search-{k + 1}", members[0], task, units) for k, members in enumerate(orbits.values())
    )
    report = {
        "max_pathways": max_pathways,
        "pattern_set": patterns,
        "patterns": [
            {"active": list(p), "speed": speed[p], "leads": p in leaders, "self_consistent": consistent[p]}
            for p in found
        ],
        "unrealizable_patterns": len(gates) - len(found),
        "undriven_patterns": [list(p) for p in found if p not in driven],
        "candidates": considered,
        "pruned_without_leader": without_leader,
        "orbits_raced": len(networks),
        "orbit_sizes": [len(members) for members in orbits.values()],
        "perron_frobenius_violations": violations,
        "interlacing_violations": interlacing,
        "rule": (
            f"pathways: every {'self-consistent' if patterns == 'self-consistent' else 'realizable'} pattern"
            f"{' (union of contexts)' if patterns == 'contexts' else ''} with all inputs and outputs; "
            "dropped: patterns with Sigma_yx = 0; "
            "raced: networks containing a pattern of the largest singular value, one per orbit"
        ),
    }
    return networks, report


def _pattern_moves(patterns: list[tuple[int, ...]], group) -> np.ndarray:
    """How each automorphism moves the search's patterns, as index permutations (one row per
    distinct permutation). Every pathway has all inputs and outputs, so an automorphism moves a
    network by its datapoint permutation alone. The patterns are extended by their images (a union
    of contexts may map to a set that is none), which get the indices after ``patterns``."""

    def image(g, pattern):
        return tuple(sorted(g.datapoints[n] for n in pattern))

    index = {p: k for k, p in enumerate(patterns)}
    for p in patterns:
        for g in group:
            index.setdefault(image(g, p), len(index))
    closure = list(index)  # closed: an image of an image is an image under the product, in the group
    rows = {tuple(index[image(g, p)] for p in closure) for g in group}
    return np.array(sorted(rows), dtype=np.int64).reshape(-1, len(closure))


#: networks canonicalised at a time (memory: moves x chunk x size integers)
_CHUNK = 4096


def _canonical_codes(chosen: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """One integer per network (rows of pattern indices, one size): the least, over ``moves``, of
    its sorted moved indices read as digits base the number of patterns. Equal exactly for
    networks in one orbit, as :func:`derive.automorphisms.canonical_form` but vectorised."""
    count, size = moves.shape[1], chosen.shape[1]
    if count**size >= 2**62:
        raise ValueError(f"{count} patterns and {size} pathways do not fit one integer code")
    weights = count ** np.arange(size - 1, -1, -1, dtype=np.int64)
    codes = np.empty(len(chosen), dtype=np.int64)
    for start in range(0, len(chosen), _CHUNK):
        block = chosen[start : start + _CHUNK]
        images = np.sort(moves[:, block], axis=-1)  # moves x networks x size
        codes[start : start + _CHUNK] = (images @ weights).min(axis=0)
    return codes


def search_network(name: str, chosen: tuple[tuple[int, ...], ...], task: Task, units: int) -> Network:
    share = max(1, units // len(chosen))
    return Network(
        name=name,
        pathways=tuple(
            Pathway(
                name=_pattern_name(p),
                active=p,
                inputs=tuple(range(task.num_inputs)),
                outputs=tuple(range(task.num_outputs)),
                hidden_layers=1,
                units=share,
            )
            for p in chosen
        ),
    )


def searched_task(
    task: Task, overrides: Mapping[str, float] | None, max_pathways: int, patterns: str = "all"
) -> tuple[Task, dict]:
    """``task`` with its candidates replaced by the search's networks, and the search's report."""
    networks, report = search_networks(task, overrides, max_pathways, patterns)
    return replace(task, networks=networks), report
