"""Crossovers: parameter values where two networks learn equally fast (paper Appendix C)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import sympy

from . import implicit
from .derivation import NetworkDerivation
from .modes import vanishes

_TOLERANCE = 1e-9
SCAN_DECADES = 4  # a numeric root is searched between value / 10**4 and value * 10**4
SCAN_POINTS = 801
_TRANSCENDENTAL = (sympy.sin, sympy.cos, sympy.exp, sympy.log)


@dataclass(frozen=True)
class Crossover:
    """``speed(first) == speed(second)`` at ``parameter = expr``; ``faster_below`` wins for smaller values."""

    networks: tuple[str, str]
    parameter: sympy.Symbol
    expr: sympy.Expr
    faster_below: str | None
    faster_above: str | None
    note: str | None = None  # set where the root is numeric because SymPy could not solve the equation
    bracket: tuple[float, float] | None = None  # where the root is numeric: the sign change it was refined in


def _numeric(expr, values):
    value = sympy.N(expr.subs(values), 30)
    return complex(value) if value.is_number else None


def _real(expr, values):
    """The real value of ``expr`` at ``values``, or None where it is not a finite real number."""
    try:
        value = _numeric(expr, values)
    except (TypeError, ValueError, ArithmeticError):
        return None
    if value is None or not math.isfinite(value.real) or abs(value.imag) > _TOLERANCE * max(1.0, abs(value.real)):
        return None
    return value.real


def _scan_points(centre: float) -> np.ndarray:
    """``SCAN_POINTS`` values spaced evenly in log over ``SCAN_DECADES`` decades either side of ``centre``."""
    return np.array([centre * 10 ** (SCAN_DECADES * (2 * k / (SCAN_POINTS - 1) - 1)) for k in range(SCAN_POINTS)])


@functools.lru_cache(maxsize=1024)
def _speed_function(expr: sympy.Expr, symbols: tuple[sympy.Symbol, ...]):
    """``expr`` in float64 with numpy over ``symbols``, vectorised (implicit roots from their
    polynomials, :func:`derive.implicit.numpy_evaluator`): once per speed, whatever it is paired with."""
    return implicit.numpy_evaluator(expr, list(symbols))


def _difference(sa: sympy.Expr, sb: sympy.Expr, parameter: sympy.Symbol, values: Mapping[sympy.Symbol, float]):
    """``f(x) = speed a - speed b`` at ``parameter = x`` (an array or a number), the other
    parameters at ``values``; NaN where either has no finite real value."""
    others = {s: float(v) for s, v in values.items() if s != parameter and s in (sa.free_symbols | sb.free_symbols)}
    symbols = (parameter, *others)
    first, second = _speed_function(sa, symbols), _speed_function(sb, symbols)

    def f(x):
        with np.errstate(all="ignore"):
            return first(x, *others.values()) - second(x, *others.values())

    return f


def _polynomial_roots(numerator: sympy.Expr, parameter: sympy.Symbol) -> list:
    """The roots of a polynomial in ``parameter``: SymPy's ``solve`` where it finds them all in
    closed form (radicals); else, with rational coefficients, the real roots alone, exactly (as
    ``CRootOf``). ``solve`` there isolates every complex root too, which no crossover can be: for
    an input ``Delta**64`` (a polynomial of degree 128) that took 2 to 5 minutes, the real roots
    take a second, and the complex ones were dropped afterwards anyway (:func:`crossovers`)."""
    poly = sympy.Poly(numerator, parameter)
    closed = sympy.roots(poly, cubics=True, quartics=True, quintics=True)
    if sum(closed.values()) == poly.degree() or not (poly.domain.is_ZZ or poly.domain.is_QQ):
        return sympy.solve(numerator, parameter)
    return list(dict.fromkeys(poly.real_roots()))  # a multiple root once


def bracketed_roots(
    sa: sympy.Expr, sb: sympy.Expr, parameter: sympy.Symbol, values: Mapping[sympy.Symbol, float]
) -> list[tuple[float, tuple[float, float]]]:
    """Roots of ``sa - sb`` in ``parameter`` (others at ``values``), each with the bracket of the
    sign change it was refined in: a scan over ``SCAN_DECADES`` decades either side of the
    parameter's value, evaluated in float64 on the whole scan at once (:func:`_difference`), each
    sign change refined with brentq; a scan point where the difference is exactly zero is a root."""
    from scipy.optimize import brentq

    points = _scan_points(float(values.get(parameter, 1.0)))
    function = _difference(sa, sb, parameter, values)
    scan = np.asarray(function(points), dtype=np.float64)
    before, after = scan[:-1], scan[1:]
    with np.errstate(invalid="ignore"):
        changes = (
            np.isfinite(before) & np.isfinite(after) & (before != 0) & (after != 0) & ((before < 0) != (after < 0))
        )
    found: list[tuple[float, tuple[float, float]]] = []
    for k in np.flatnonzero((scan == 0) | np.concatenate([[False], changes])):
        if scan[k] == 0:
            found.append((float(points[k]), (float(points[k]), float(points[k]))))
            continue
        try:
            root = brentq(lambda x: float(function(x)), points[k - 1], points[k], xtol=1e-300, rtol=1e-15)
        except (ValueError, RuntimeError):
            continue
        found.append((root, (float(points[k - 1]), float(points[k]))))
    return found


def _solve(sa, sb, parameter, values):
    """Symbolic roots of ``sa = sb``; a numeric scan where SymPy cannot solve the equation
    (or finds nothing in a transcendental one). Returns the roots and a note for numeric ones."""
    # Speeds are nonnegative, so sa = sb exactly where sa^2 = sb^2. Squared speeds are rational
    # in the parameter whenever the pathways' Gram blocks are rank one; then the crossover is a
    # root of one polynomial (exact, and fast). A squared speed with radicals left in the
    # parameter (a parametric 2x2 block) would send SymPy into radical equations that can take
    # minutes, so those are solved numerically and said so.
    if implicit.has_roots(sa) or implicit.has_roots(sb):
        note = f"numeric root: the speeds hold implicit roots of polynomials in {parameter} (no closed form)"
        found = bracketed_roots(sa, sb, parameter, values)
        return [sympy.Float(r, 15) for r, _ in found], note, [b for _, b in found]
    squared = sympy.together(sympy.expand(sa**2 - sb**2))
    if not squared.is_rational_function(parameter):
        note = f"numeric root: the squared speeds are not rational functions of {parameter}"
        return [sympy.Float(r, 15) for r, _ in bracketed_roots(sa, sb, parameter, values)], note, None
    try:
        roots = _polynomial_roots(sympy.numer(squared), parameter)
    except (NotImplementedError, ValueError, TypeError, ArithmeticError, sympy.PolynomialError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        note = f"numeric root: SymPy cannot solve the equation in {parameter} ({reason})"
    else:
        difference = sa - sb
        if roots or not any(difference.has(f) for f in _TRANSCENDENTAL):
            return roots, None, None
        note = f"numeric root: SymPy found no root of the transcendental equation in {parameter}"
    return [sympy.Float(r, 15) for r, _ in bracketed_roots(sa, sb, parameter, values)], note, None


def crossovers(
    first: NetworkDerivation, second: NetworkDerivation, parameter: sympy.Symbol, values: Mapping[sympy.Symbol, float]
) -> list[Crossover]:
    """Solve ``speed(first) = speed(second)`` for ``parameter``, other parameters left symbolic.

    Each speed is a maximum over distinct singular values, so every pair of
    candidates is solved and a root is kept only where both candidates are the
    maxima of their networks at that point (other parameters at ``values``), and
    where it solves the unsquared equation (solving radicals can add roots).
    """
    others = {symbol: value for symbol, value in values.items() if symbol != parameter}
    found: list[Crossover] = []
    for sa in first.speed_candidates:
        for sb in second.speed_candidates:
            if vanishes(sa - sb) or parameter not in (sa - sb).free_symbols:
                continue
            roots, note, brackets = _solve(sa, sb, parameter, values)
            for position, root in enumerate(roots):
                point = _real(root, others)
                if point is None or point <= 0:
                    continue
                at_root = {**others, parameter: point}
                speed_a, speed_b = _real(sa, at_root), _real(sb, at_root)
                if speed_a is None or speed_b is None or abs(speed_a - speed_b) > _TOLERANCE * max(1.0, abs(speed_a)):
                    continue
                if any((_real(c, at_root) or 0.0) > speed_a + _TOLERANCE for c in first.speed_candidates):
                    continue
                if any((_real(c, at_root) or 0.0) > speed_b + _TOLERANCE for c in second.speed_candidates):
                    continue
                if any(abs(_real(c.expr, others) - point) < 1e-9 for c in found):
                    continue
                below, above = _faster_on_each_side(first, second, parameter, at_root, point)
                bracket = brackets[position] if brackets else None
                found.append(
                    Crossover((first.network.name, second.network.name), parameter, root, below, above, note, bracket)
                )
    return sorted(found, key=lambda c: _real(c.expr, others) or 0.0)


def _faster_on_each_side(first, second, parameter, at_root, value):
    def faster(x):
        point = {**at_root, parameter: x}
        a = max((_real(c, point) for c in first.speed_candidates), key=lambda v: -math.inf if v is None else v)
        b = max((_real(c, point) for c in second.speed_candidates), key=lambda v: -math.inf if v is None else v)
        if a is None or b is None or abs(a - b) < _TOLERANCE:
            return None
        return first.network.name if a > b else second.network.name

    step = 1e-4 * max(1.0, abs(value))
    return faster(value - step), faster(value + step)
