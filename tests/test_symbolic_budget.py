"""Zero tests within a budget (issue 36, point 5): expressions with a transcendental function of a
parameter, or larger than ``EXPAND_BUDGET``, are sampled at exact points instead of expanded
(an XoR input ``Delta/2 + sin(Delta)`` once made one group reduction expand for 40 s)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from scipy.optimize import brentq

from gdln.derive.modes import EXPAND_BUDGET, expands_within_budget, vanishes
from gdln.derive.spec import load_spec
from gdln.numeric.prediction import TaskPredictions

from .helpers import XOR_SPEC

D = sympy.Symbol("Delta", positive=True)


@pytest.mark.parametrize(
    ("expr", "zero"),
    [
        (sympy.sin(D) ** 2 + sympy.cos(D) ** 2 - 1, True),
        ((D + sympy.sin(D)) ** 2 - D**2 - 2 * D * sympy.sin(D) - sympy.sin(D) ** 2, True),
        (sympy.sin(D) - D, False),
        (sympy.log(D**2 * (D + 1)) - 2 * sympy.log(D) - sympy.log(D + 1), True),
        (sympy.sin(D) ** 2 - sympy.sin(D) ** 2 * (1 + sympy.Rational(1, 10**20)), False),
    ],
)
def test_transcendental_expressions_are_decided_by_sampling(expr, zero):
    assert not expands_within_budget(expr)
    assert vanishes(expr) is zero


def test_expressions_past_the_budget_are_sampled_and_decided():
    power = sum(D**k * (D + k) ** 2 for k in range(150))
    big = sympy.expand(power) - power
    assert sympy.count_ops(big) > EXPAND_BUDGET and not expands_within_budget(big)
    assert vanishes(big)
    assert not vanishes(big + D**-40)  # a term that cancels nothing
    small = (D + 1) ** 2 - D**2 - 2 * D - 1
    assert expands_within_budget(small) and vanishes(small)


def test_a_transcendental_input_derives_the_crossover_numpy_finds(tmp_path):
    """XoR with ``Delta/2 + sin(Delta)`` in its first input: the derived crossover of the two
    networks is the root of the difference of their speeds from numpy's SVD of the data."""
    text = XOR_SPEC.read_text(encoding="utf-8").replace('[[1, 1, "Delta/2"]', '[[1, 1, "Delta/2 + sin(Delta)"]')
    spec = tmp_path / "xor_sin.toml"
    spec.write_text(text, encoding="utf-8")
    task = load_spec(spec)
    models = TaskPredictions(task)
    values = task.values()
    (crossover,) = models.crossovers("linear", "xor", values)

    def speed(groups, delta):
        x = np.array([[1, 1, delta / 2 + np.sin(delta)], [1, -1, -delta / 2], [-1, 1, -delta / 2], [-1, -1, delta / 2]])
        y = np.array([[1.0], [-1.0], [-1.0], [1.0]])
        return max(np.linalg.svd(y[g].T @ x[g] / 4, compute_uv=False)[0] for g in groups)

    difference = lambda delta: speed([[0, 3], [1, 2]], delta) - speed([[0], [1], [2], [3]], delta)  # noqa: E731
    star = float(crossover.expr.subs(values))
    assert star == pytest.approx(brentq(difference, 0.5 * star, 1.5 * star), rel=1e-9)
