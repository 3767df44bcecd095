"""Symmetries of a dataset, and orbits of candidate networks under them.

An automorphism is a permutation ``pi`` of the datapoints together with permutations
``sigma`` of the input features and ``rho`` of the target features that leave the data as it
is: ``X[pi(n), sigma(i)] = X[n, i]`` and ``Y[pi(n), rho(o)] = Y[n, o]`` for every ``n, i, o``.
Entries are compared as SymPy expressions, exactly and structurally, so a symmetry found here
holds at every parameter value. A network maps to another by moving each pathway's gate,
inputs and outputs; networks that map onto each other form an orbit, and learn identically
(the race is invariant under a relabelling of the data).

Only permutations are searched. Orthogonal symmetries such as sign flips of input features
(XoR's ``x -> diag(-1, -1, 1) x``) are not: networks related only by one land in different
orbits and tie in the race, so a uniqueness verdict errs towards "not unique".
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import permutations, product

import sympy

from .errors import SpecError
from .spec import Network, Task

#: the most automorphisms enumerated; a larger group is refused with a one-line error
MAX_AUTOMORPHISMS = 100_000


@dataclass(frozen=True)
class Automorphism:
    """``datapoints[n] = pi(n)``, ``inputs[i] = sigma(i)``, ``outputs[o] = rho(o)``."""

    datapoints: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def _codes(matrix: sympy.Matrix, table: dict) -> list[list[int]]:
    """Each entry as a small integer, equal exactly when the expressions are equal."""
    return [
        [table.setdefault(sympy.sympify(matrix[r, c]), len(table)) for c in range(matrix.cols)]
        for r in range(matrix.rows)
    ]


class _Columns:
    """Columns of one matrix split into classes by their entries on the datapoints assigned so
    far: a source column ``c`` (entries ``rows[n][c]``) may map only to a target column of the
    same class (entries ``rows[pi(n)][c']``). Refined one datapoint at a time."""

    def __init__(self, rows: list[list[int]]):
        self.rows = rows
        width = len(rows[0]) if rows else 0
        self.sources = [0] * width
        self.targets = [0] * width

    def refine(self, n: int, m: int) -> _Columns | None:
        """The classes after assigning ``pi(n) = m``; ``None`` if no column permutation fits."""
        labels: dict = {}
        refined = _Columns.__new__(_Columns)
        refined.rows = self.rows
        refined.sources = [labels.setdefault((k, self.rows[n][c]), len(labels)) for c, k in enumerate(self.sources)]
        refined.targets = [labels.setdefault((k, self.rows[m][c]), len(labels)) for c, k in enumerate(self.targets)]
        return refined if Counter(refined.sources) == Counter(refined.targets) else None

    def bijections(self) -> Iterator[tuple[int, ...]]:
        """Every column permutation that fits the complete assignment."""
        sources: dict = defaultdict(list)
        targets: dict = defaultdict(list)
        for c, (k, l) in enumerate(zip(self.sources, self.targets)):
            sources[k].append(c)
            targets[l].append(c)
        classes = [(sources[k], targets[k]) for k in sources]
        for choice in product(*(permutations(t) for _, t in classes)):
            sigma = [0] * len(self.sources)
            for (s, _), t in zip(classes, choice):
                for a, b in zip(s, t):
                    sigma[a] = b
            yield tuple(sigma)


def automorphisms(task: Task, *, limit: int = MAX_AUTOMORPHISMS) -> list[Automorphism]:
    """Every automorphism of the task's data (the identity first), by backtracking over the
    datapoints; the column classes prune every partial assignment no feature permutation fits."""
    table: dict = {}
    x = _Columns(_codes(task.inputs, table))
    y = _Columns(_codes(task.targets, table))
    count = task.num_datapoints
    row_keys = [
        (tuple(sorted(Counter(x.rows[n]).items())), tuple(sorted(Counter(y.rows[n]).items()))) for n in range(count)
    ]
    found: list[Automorphism] = []

    def extend(image: list[int], xs: _Columns, ys: _Columns) -> None:
        if len(image) == count:
            for sigma in xs.bijections():
                for rho in ys.bijections():
                    found.append(Automorphism(tuple(image), sigma, rho))
                    if len(found) > limit:
                        raise SpecError(
                            task.source, "data", f"more than {limit} automorphisms: too symmetric to enumerate"
                        )
            return
        n = len(image)
        for m in range(count):
            if m in image or row_keys[m] != row_keys[n]:
                continue
            x_next = xs.refine(n, m)
            y_next = ys.refine(n, m) if x_next is not None else None
            if x_next is not None and y_next is not None:
                image.append(m)
                extend(image, x_next, y_next)
                image.pop()

    extend([], x, y)
    return found


def _image(network: Network, g: Automorphism) -> tuple:
    """The network moved by ``g``, as a sorted tuple of its pathways' (gate, inputs, outputs, depth)."""
    return tuple(
        sorted(
            (
                tuple(sorted(g.datapoints[n] for n in p.active)),
                tuple(sorted(g.inputs[i] for i in p.inputs)),
                tuple(sorted(g.outputs[o] for o in p.outputs)),
                p.hidden_layers,
            )
            for p in network.pathways
        )
    )


def canonical_form(network: Network, group: Sequence[Automorphism]) -> tuple:
    """The least image of ``network`` over ``group``: equal exactly for networks in one orbit
    (widths are not part of it: they set the seed, not the structure)."""
    return min(_image(network, g) for g in group)


def network_orbits(networks: Sequence[Network], group: Sequence[Automorphism]) -> list[list[str]]:
    """The networks' names grouped by orbit, in the order each orbit first appears."""
    orbits: dict[tuple, list[str]] = {}
    for network in networks:
        orbits.setdefault(canonical_form(network, group), []).append(network.name)
    return list(orbits.values())


def datapoint_orbits(group: Sequence[Automorphism], count: int) -> list[list[int]]:
    """Orbits of the datapoints under ``group``."""
    seen: set[int] = set()
    orbits = []
    for n in range(count):
        if n not in seen:
            orbit = sorted({g.datapoints[n] for g in group})
            seen.update(orbit)
            orbits.append(orbit)
    return orbits
