"""Which gate patterns one ReLU unit without bias can implement (THEORY section 4).

A pattern (the set of datapoints where the unit is on) is implementable exactly when
some ``w`` has ``w . x_n > 0`` on the pattern and ``w . x_n <= 0`` off it. Scaling ``w``
makes the strict inequalities ``w . x_n >= 1``: a linear feasibility problem (linprog).
"""

from __future__ import annotations

from itertools import product

import numpy as np
from scipy.optimize import linprog

from .reports import LemmaReport

MAX_LEMMA_DATAPOINTS = 16


def realizable(inputs, pattern) -> tuple[bool, np.ndarray | None]:
    """Whether the unit can be on exactly at ``pattern``; with a witness ``w`` when it can."""
    inputs = np.asarray(inputs, dtype=float)
    on = np.zeros(inputs.shape[0], dtype=bool)
    on[list(pattern)] = True
    # on:  -x.w <= -1 ; off: x.w <= 0
    a_ub = np.where(on[:, None], -inputs, inputs)
    b_ub = np.where(on, -1.0, 0.0)
    result = linprog(
        np.zeros(inputs.shape[1]), A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * inputs.shape[1], method="highs"
    )
    if result.status != 0:
        return False, None
    w = result.x
    scores = inputs @ w
    assert np.all(scores[on] > 0) and np.all(scores[~on] <= 1e-9)
    return True, w


def pattern_classes(inputs, context_columns: list[int] | None = None) -> dict[str, list[frozenset]]:
    """The classes of gate patterns that Lemma 4.1 names: ``single-datapoint`` patterns and,
    given the input columns that hold the context, ``context-only`` patterns (every union of
    the sets of datapoints that share a context)."""
    inputs = np.asarray(inputs)
    groups: dict[str, list[frozenset]] = {"single-datapoint": [frozenset([n]) for n in range(inputs.shape[0])]}
    if not context_columns:
        return groups
    keys = [tuple(row[context_columns]) for row in inputs]
    classes = {key: frozenset(n for n, k in enumerate(keys) if k == key) for key in keys}
    unions = [
        frozenset().union(*[c for k, c in enumerate(classes.values()) if mask >> k & 1])
        for mask in range(1, 2 ** len(classes))
    ]
    return {"context-only": unions, **groups}


def classify_pattern(pattern: frozenset, groups: dict[str, list[frozenset]]) -> str:
    """Name of the first group whose members include ``pattern``, else ``other``."""
    for name, members in groups.items():
        if pattern in members:
            return name
    return "other"


def enumerate_patterns(inputs, groups: dict[str, list[frozenset]] | None = None) -> LemmaReport:
    """Every non-empty gate pattern of a small dataset, each tested for realizability and
    classified by ``groups`` (e.g. functions of the context alone, single datapoints)."""
    inputs = np.asarray(inputs, dtype=float)
    n = inputs.shape[0]
    if n > MAX_LEMMA_DATAPOINTS:
        raise ValueError(f"{n} datapoints: enumeration is limited to {MAX_LEMMA_DATAPOINTS}")
    groups = groups or {}
    realizable_patterns = []
    for bits in product((0, 1), repeat=n):
        pattern = frozenset(k for k, b in enumerate(bits) if b)
        if pattern and realizable(inputs, pattern)[0]:
            realizable_patterns.append(pattern)
    counts: dict[str, int] = {}
    classified = []
    for pattern in realizable_patterns:
        group = classify_pattern(pattern, groups)
        counts[group] = counts.get(group, 0) + 1
        classified.append({"pattern": sorted(pattern), "group": group})
    return LemmaReport.from_json(
        {"datapoints": n, "realizable": len(realizable_patterns), "by_group": counts, "patterns": classified}
    )
