"""Values in the reports' JSON form: an expression with its value, floats or null, the parameter
vector, the epochs the theory is sampled at, and gates in words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np
import sympy

from gdln.derive import implicit
from gdln.derive.algebraic import as_text, describe
from gdln.derive.spec import Task


def number_at(expr: sympy.Expr, values: Mapping) -> float:
    return float(sympy.N(sympy.sympify(expr).subs(values), 17))


def value_entry(expr: sympy.Expr, values: Mapping) -> dict:
    """An expression's exact text and value; with ``algebraic`` (:func:`derive.algebraic.describe`)
    when it holds ``CRootOf`` numbers, so that text output can give the value and its kind; with
    ``implicit`` (the names of their polynomials) when it holds implicit roots
    (:mod:`derive.implicit`), so that text output can give a long expression in them by value."""
    entry: dict = {"expr": as_text(expr), "value": number_at(expr, values)}
    described = describe(expr)
    if described is not None:
        entry["algebraic"] = described
    roots = implicit.roots_in(expr)
    if roots:
        entry["implicit"] = sorted({root.name for root in roots})
    return entry


def finite_or_none(value: float):
    return None if value is None or not math.isfinite(value) else float(value)


def parameter_entry(values: Mapping) -> dict[str, float]:
    """The parameter values by name: every report's ``parameters``."""
    return {symbol.name: value for symbol, value in values.items()}


def parameter_vector(task: Task, values: Mapping) -> list[float]:
    return [float(values[symbol]) for symbol in task.parameters]


THEORY_POINTS = 1000


def epoch_grid(epochs: int, stride: int = 1) -> jnp.ndarray:
    """Epochs ``0, stride, 2 stride, ... <= epochs``; counted in integers, so exact for any ``epochs``."""
    return jnp.asarray(np.arange(int(epochs) // int(stride) + 1, dtype=np.float64) * float(stride))


def theory_stride(epochs: int) -> int:
    """Epochs between samples of predicted curves: about ``THEORY_POINTS`` samples per run."""
    return max(1, epochs // THEORY_POINTS)


def gate_description(task: Task, active: tuple[int, ...]) -> str:
    """Where a pathway's gate is on, in the task's own terms where it has them ("contexts 1, 2")."""
    if len(active) == task.num_datapoints:
        return "all datapoints"
    if task.contexts is not None:
        chosen = sorted({task.contexts[n] for n in active})
        if sorted(active) == [n for n, c in enumerate(task.contexts) if c in chosen]:
            return ("context " if len(chosen) == 1 else "contexts ") + ", ".join(str(c) for c in chosen)
    return "datapoints " + ", ".join(str(n) for n in active)
