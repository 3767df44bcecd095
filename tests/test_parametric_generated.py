"""Generated parametric context tasks (issue 36): random context sizes, a parameter ``g``
scaling one context's targets, candidates dense and per-context. Each pathway's singular values,
derived with ``g`` kept exact (closed forms or implicit roots), equal at three rational values
of ``g`` the derivation of the task with ``g`` fixed there (``Task.with_values``) and numpy's SVD
of ``Sigma_yx`` computed from the data; or the derivation ends in a one-line error that says
what to do. Never a traceback."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from gdln.derive.derivation import NetworkDerivation
from gdln.derive.errors import DerivationError
from gdln.derive.spec import task_from_dict
from gdln.numeric.compile import compile_expressions

from .helpers import FUZZ

VALUES = (Fraction(1, 2), Fraction(3, 2), Fraction(3))
RELATIVE = 1e-10


@st.composite
def context_tasks(draw):
    """Items one-hot, contexts one-hot; common targets (all items share one feature, and each
    item has its own), and per context a feature per item, scaled by g in one context."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3))
    scaled = draw(st.integers(0, len(sizes) - 1))
    items = max(sizes)
    inputs, targets, starts = [], [], []
    for c, size in enumerate(sizes):
        starts.append(len(inputs))
        for i in range(size):
            inputs.append([int(k == i) for k in range(items)] + [int(k == c) for k in range(len(sizes))])
            row = [1] + [int(k == i) for k in range(items)]
            for c2, s2 in enumerate(sizes):
                row += [("g" if c2 == scaled else 1) if (c2 == c and k == i) else 0 for k in range(s2)]
            targets.append(row)
    network = [
        {"name": "dense", "pathway": [{"name": "all"}]},
        {
            "name": "per-context",
            "pathway": [
                {"name": f"c{c}", "active": list(range(starts[c], starts[c] + size))} for c, size in enumerate(sizes)
            ],
        },
    ]
    return {
        "title": f"contexts of {sizes} items, g in context {scaled}",
        "parameters": {"g": 1},
        "data": {"inputs": inputs, "targets": targets},
        "network": network,
    }


def _numpy_singular_values(task, pathway):
    x, y = np.array(task.inputs, dtype=float), np.array(task.targets, dtype=float)
    rows = list(pathway.active)
    sigma = y[np.ix_(rows, pathway.outputs)].T @ x[np.ix_(rows, pathway.inputs)] / len(x)
    return np.linalg.svd(sigma, compute_uv=False)


@pytest.mark.slow
@settings(max_examples=4, **FUZZ)
@given(document=context_tasks())
def test_parametric_singular_values_are_the_fixed_task_s_and_numpy_s(document):
    task = task_from_dict(document)
    g = task.parameter("g")
    for network in task.networks:
        try:
            derivation = NetworkDerivation(task, network.name)
            pathways = derivation.pathways
        except DerivationError as error:  # a stated limit: one line, naming what to do
            assert "\n" not in str(error) and "--set" in str(error)
            continue
        for pathway, derived in zip(network.pathways, pathways):
            exprs = [m.s for m in derived.modes]
            at = compile_expressions(exprs, [g], "singular_values") if exprs else None
            for value in VALUES:
                fixed = task.with_values({"g": sympy.Rational(value.numerator, value.denominator)})
                fixed_pathways = NetworkDerivation(fixed, network.name).pathways
                bound = sorted(
                    (float(m.s) for m in fixed_pathways[network.pathways.index(pathway)].modes), reverse=True
                )
                found = sorted(np.atleast_1d(np.asarray(at(float(value)))).tolist(), reverse=True) if at else []
                assert found == pytest.approx(bound, rel=RELATIVE)
                expected = _numpy_singular_values(fixed, pathway)
                assert found == pytest.approx(expected[: len(found)].tolist(), rel=RELATIVE)
                assert np.all(expected[len(found) :] < 1e-12)
