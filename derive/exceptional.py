"""Where a parametric derivation holds: its exceptional set, exactly.

A parametric derivation writes each pathway's modes for generic parameter values
(:mod:`derive.modes`): eigenvalues of a Gram block as roots of the factors of its characteristic
polynomial over ``Q[parameters]``, eigenvectors as columns of the adjugate of ``zI - B`` (or of a
rank-one block, or the closed form of a 2x2 block). Those formulas fail on a set of measure zero,
often at the values a theorist writes first (``a = 1``, ``a = b``):

- two eigenvalues of a block meet: the discriminant of a factor in ``z``, or the resultant of two
  factors, vanishes (the eigenvectors of either are then not determined by the formula);
- an eigenvalue meets zero (the rank changes): a factor's constant term vanishes;
- a factor drops degree: its leading coefficient vanishes;
- an eigenvector's formula vanishes (a vanishing normalisation): the adjugate column's diagonal
  entry at the root, the chosen column of a rank-one block, the off-diagonal entry of a 2x2 block,
  or a denominator or squared norm of an exact nullspace basis.

Each condition is a polynomial in the parameters (an expression, where the data are not
polynomial in them), split into its irreducible factors over Q: the set is their union of zero
sets. The generic derivation also assumes positive parameters (its symbols are positive, so
``sqrt(a**2) = a``); a value at or below zero is outside its domain. At a point in the set or
outside the domain, the toolkit derives at the point instead (``Task.with_values``, exact):
``numeric.prediction.TaskPredictions.at`` makes that choice, here decided once by
:func:`holds_at`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import sympy
from sympy.polys.matrices import DomainMatrix

from .modes import EIGENVALUE, is_rank_one, vanishes

#: a float point counts as on the set when its distance to a condition's zero set, estimated by
#: one Newton step (``|P| / |grad P|``), is within this fraction of the point's size (at least 1).
#: Near the set the generic formulas lose digits as two eigenvalues close in: on issue 47's task
#: (``dense`` at ``b = 3/2``) the generic route's loss curve is off the point's exact derivation
#: by about 2.6e-11 / |a - 1| relative (2.6e-8 at 1e-3, 1.7e-5 at 1e-6; tests/test_exceptional_points.py),
#: so inside this band the point is derived exactly instead, and outside it the routes agree to
#: about 3e-9
NEAR = 1e-2


def block_conditions(block: sympy.Matrix) -> list[sympy.Expr]:
    """The conditions (expressions that vanish there) where the generic eigen-formulas of one
    symmetric PSD block of a Gram matrix fail, as :func:`derive.modes._eigenspaces` writes them."""
    if block.rows == 1 or is_rank_one(block):
        column = next((j for j in range(block.cols) if not vanishes(block[j, j])), None)
        return [] if column is None else [block[column, column]]  # the chosen column, and the rank
    if not block.free_symbols:
        return []
    if block.rows == 2:
        a, b, c = block[0, 0], block[0, 1], block[1, 1]
        # the eigenvector (b, lambda - a); the zero eigenvalue; the two eigenvalues meeting
        return [b, a * c - b**2, (a - c) ** 2 + 4 * b**2]
    return _factor_conditions(block)


def _factor_conditions(block: sympy.Matrix) -> list[sympy.Expr]:
    symbols = sorted(block.free_symbols, key=lambda s: s.name)
    matrix = DomainMatrix.from_list_sympy(block.rows, block.cols, block.tolist())
    domain = matrix.domain
    if not domain.is_PolynomialRing:
        return []  # the derivation refuses such a block (derive.modes._no_structure)
    matrix = matrix.convert_to(sympy.QQ[tuple(symbols)])
    ring = matrix.domain
    z = EIGENVALUE
    charpoly = [ring.to_sympy(c) for c in matrix.charpoly()]
    _, factors = sympy.factor_list(sympy.Poly(charpoly, z).as_expr(), z, *symbols)
    polys = [sympy.Poly(f, z) for f, _ in factors]
    polys = [p for p in polys if p.degree() > 0 and not (p.degree() == 1 and p.nth(0) == 0)]
    conditions: list[sympy.Expr] = []
    for poly in polys:
        conditions.append(poly.LC())
        conditions.append(poly.nth(0))
        if poly.degree() == 1:
            conditions.extend(_nullspace_conditions(block, poly, symbols))
            continue
        conditions.append(sympy.discriminant(poly, z))
        for diagonal in _adjugate_diagonal(matrix, charpoly, poly, z):
            conditions.append(sympy.resultant(poly.as_expr(), diagonal, z))
    for k, first in enumerate(polys):
        for second in polys[k + 1 :]:
            conditions.append(sympy.resultant(first.as_expr(), second.as_expr(), z))
    return conditions


def _adjugate_diagonal(matrix: DomainMatrix, charpoly: list, poly: sympy.Poly, z: sympy.Symbol) -> list[sympy.Expr]:
    """The diagonal entries of ``adj(zI - B)`` modulo the factor, one per column the derivation may
    choose (:func:`derive.modes.adjugate_columns`): at a simple root ``r``,
    ``adj(rI - B) = c v v^T`` with ``c`` non-zero off the resultants, so column ``m`` vanishes
    exactly where ``v_m`` does, and its diagonal entry is ``c v_m^2``."""
    from .modes import adjugate_columns

    return [sympy.sympify(diagonal) for diagonal, column in adjugate_columns(matrix, charpoly, poly, z) if column]


def _nullspace_conditions(block: sympy.Matrix, poly: sympy.Poly, symbols) -> list[sympy.Expr]:
    """Denominators and squared norms of the exact eigenspace basis of a rational-function
    eigenvalue (:func:`derive.modes.rational_function_eigenspace`)."""
    from .modes import rational_function_eigenspace

    value = sympy.cancel(-poly.nth(0) / poly.nth(1))
    conditions: list[sympy.Expr] = []
    for space in rational_function_eigenspace(block, value, symbols):
        for vector in space.vectors:
            for entry in vector:
                conditions.append(sympy.denom(sympy.cancel(entry)))
            conditions.append(sympy.numer(sympy.cancel(sum(e**2 for e in vector))))
    return conditions


def irreducible_conditions(conditions: Sequence[sympy.Expr], symbols: Sequence[sympy.Symbol]) -> tuple[sympy.Expr, ...]:
    """The distinct irreducible factors over Q of ``conditions`` (primitive, positive leading
    coefficient), without constants and without factors that have no real zero (a sum of even
    powers with positive coefficients and a positive constant), sorted by degree then text."""
    found: dict[str, sympy.Expr] = {}
    for condition in conditions:
        condition = sympy.sympify(condition)
        if condition == 0 or not condition.free_symbols:
            continue  # identically zero: the generic derivation would have refused it
        # a rational function fails where its numerator vanishes and where its denominator does
        numerator, denominator = sympy.fraction(sympy.cancel(sympy.together(condition)))
        for part in (numerator, denominator):
            for factor in _factors(part, symbols):
                if not factor.free_symbols:
                    continue
                if factor.is_polynomial(*symbols):
                    poly = sympy.Poly(factor, *symbols)
                    _, poly = poly.primitive()
                    if poly.LC() < 0:
                        poly = -poly
                    if _no_real_zero(poly):
                        continue
                    factor = poly.as_expr()
                found.setdefault(sympy.srepr(factor), factor)
    return tuple(sorted(found.values(), key=lambda e: (sympy.total_degree(e) if e.is_polynomial() else 99, str(e))))


#: polynomials of a higher total degree are split into square-free factors only: factoring them
#: over Q is what costs (a degree-128 condition of XoR with ``Delta**-64`` in an input took 2 s),
#: and the zero set is the same
MAX_FACTORED_DEGREE = 24


def _factors(expr: sympy.Expr, symbols: Sequence[sympy.Symbol]) -> list[sympy.Expr]:
    if not expr.free_symbols:
        return []
    try:
        if expr.is_polynomial(*symbols) and sympy.Poly(expr, *symbols).total_degree() > MAX_FACTORED_DEGREE:
            return [f for f, _ in sympy.sqf_list(expr, *symbols)[1]]
        return [f for f, _ in sympy.factor_list(expr, *symbols)[1]]
    except sympy.PolynomialError:
        return [expr]


def _no_real_zero(poly: sympy.Poly) -> bool:
    terms = poly.terms()
    constant = dict(terms).get((0,) * len(poly.gens), 0)
    return constant > 0 and all(c > 0 and all(e % 2 == 0 for e in monomial) for monomial, c in terms)


def as_equation(condition: sympy.Expr) -> sympy.Equality:
    """A condition as a theorist writes it: ``a = 1``, ``a = b``, else ``P = 0``."""
    symbols = sorted(condition.free_symbols, key=lambda s: s.name)
    if condition.is_polynomial(*symbols) and sympy.Poly(condition, *symbols).total_degree() == 1:
        poly = sympy.Poly(condition, *symbols)
        lead = next(s for s in symbols if poly.coeff_monomial(s) != 0)
        solved = sympy.solve(condition, lead)
        if len(solved) == 1:
            return sympy.Eq(lead, solved[0], evaluate=False)
    return sympy.Eq(condition, 0, evaluate=False)


def describe(condition: sympy.Expr) -> str:
    """:func:`as_equation` as text: ``a = 1``, ``a = b``, ``a**2 - 3*b = 0``."""
    equation = as_equation(condition)
    return f"{equation.lhs} = {equation.rhs}"


def _exact(value) -> sympy.Expr:
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, float):
        return sympy.Rational(repr(value))  # the decimal text, as Task.with_values reads a float
    return sympy.Rational(Fraction(value))


@functools.lru_cache(maxsize=4096)
def _compiled(condition: sympy.Expr, modules: str):
    """``(symbols, f)``: ``f(*values)`` gives the condition's value and its gradient in the
    symbols, compiled once per condition (``modules``: ``cmath`` for one point, ``numpy`` for many)."""
    symbols = tuple(sorted(condition.free_symbols, key=lambda s: s.name))
    gradient = [sympy.diff(condition, s) for s in symbols]
    from .implicit import in_float_range

    exprs = [condition, *gradient]
    if modules != "cmath":  # numpy has no sin of an int past int64 (sin(1e20) in the data); cmath
        exprs = [in_float_range(e) for e in exprs]  # takes any int, and SymPy cannot print its floats
    return symbols, sympy.lambdify(symbols, exprs, modules=modules)


def _near(value, gradient, point_size):
    """Whether a condition of ``value`` and ``gradient`` there puts the point within :data:`NEAR`
    of its zero set (numpy or plain floats); a value that is not finite counts as near."""
    import numpy as np

    with np.errstate(all="ignore"):
        value = np.abs(np.asarray(value, dtype=np.complex128))
        slope = np.sqrt(sum(np.abs(np.asarray(g, dtype=np.complex128)) ** 2 for g in gradient))
        near = value <= NEAR * slope * np.maximum(point_size, 1.0)
        return near | ~np.isfinite(value) | ~np.isfinite(slope)


def on_condition(condition: sympy.Expr, point: Mapping[sympy.Symbol, float]) -> bool:
    """Whether ``point`` lies on ``condition``'s zero set exactly (the values as exact numbers,
    floats through their decimal text), or within :data:`NEAR` of it in float64."""
    at = condition.xreplace({s: _exact(point[s]) for s in condition.free_symbols})
    if at == 0:  # a polynomial at exact values: decided exactly
        return True
    symbols, function = _compiled(condition, "cmath")
    values = [float(point[s]) for s in symbols]
    try:
        value, *gradient = function(*values)
    except (ArithmeticError, ValueError):
        return True  # no finite verdict: derive at the point
    return bool(_near(value, gradient, math.sqrt(math.fsum(v * v for v in values))))


def outside_domain(point: Mapping[sympy.Symbol, float]) -> list[sympy.Symbol]:
    """The parameters whose value at ``point`` is outside the generic derivation's domain (its
    symbols are positive: ``sqrt(a**2)`` is ``a``)."""
    return [s for s, v in point.items() if s.is_positive and not float(v) > 0]


def fails_at_points(conditions: Sequence[sympy.Expr], parameters: Sequence[sympy.Symbol], values) -> list[bool]:
    """Per row of ``values`` (points x parameters, in ``parameters`` order), whether the generic
    derivation fails there, by the float test of :func:`on_condition` (within :data:`NEAR`) and the domain, at
    every row at once: a grid's generic rows are found in one pass, and the others then go
    through :func:`holds_at` one by one."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64).reshape(-1, len(parameters))
    failing = np.zeros(len(values), dtype=bool)
    for k, symbol in enumerate(parameters):
        if symbol.is_positive:
            failing |= ~(values[:, k] > 0)
    for condition in conditions:
        symbols, function = _compiled(condition, "numpy")
        columns = [values[:, list(parameters).index(s)] for s in symbols]
        with np.errstate(all="ignore"):
            value, *gradient = (np.broadcast_to(e, len(values)) for e in function(*columns))
        size = np.sqrt(sum(c**2 for c in columns))
        failing |= _near(value, gradient, size)
    return [bool(f) for f in failing]


def holds_at(conditions: Sequence[sympy.Expr], point: Mapping[sympy.Symbol, float]) -> str | None:
    """``None`` where the generic derivation holds at ``point``; otherwise why not, in words.
    Decided once per set and point: every curve and race at a point asks (``Prediction.at``), and
    the exact test substitutes exact numbers into each condition."""
    return _holds_at(tuple(conditions), tuple((s, float(v)) for s, v in point.items()))


@functools.lru_cache(maxsize=4096)
def _holds_at(conditions: tuple[sympy.Expr, ...], items: tuple[tuple[sympy.Symbol, float], ...]) -> str | None:
    point = dict(items)
    outside = outside_domain(point)
    if outside:
        return ", ".join(f"{s} = {point[s]:g}" for s in outside) + " (it is derived for positive values)"
    for condition in conditions:
        if on_condition(condition, point):
            return describe(condition)
    return None
