"""Crossovers: parameter values where two networks learn equally fast (paper Appendix C)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import sympy

from .derivation import NetworkDerivation
from .modes import vanishes

_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Crossover:
    """``speed(first) == speed(second)`` at ``parameter = expr``; ``faster_below`` wins for smaller values."""

    networks: tuple[str, str]
    parameter: sympy.Symbol
    expr: sympy.Expr
    faster_below: str | None
    faster_above: str | None


def _numeric(expr, values):
    value = sympy.N(expr.subs(values), 30)
    return complex(value) if value.is_number else None


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
            for root in sympy.solve(sympy.Eq(sa, sb), parameter):
                point = _numeric(root, others)
                if point is None or abs(point.imag) > _TOLERANCE or point.real <= 0:
                    continue
                at_root = {**others, parameter: point.real}
                speed_a, speed_b = _numeric(sa, at_root), _numeric(sb, at_root)
                if speed_a is None or abs(speed_a - speed_b) > _TOLERANCE * max(1.0, abs(speed_a)):
                    continue
                if any(_numeric(c, at_root).real > speed_a.real + _TOLERANCE for c in first.speed_candidates):
                    continue
                if any(_numeric(c, at_root).real > speed_b.real + _TOLERANCE for c in second.speed_candidates):
                    continue
                if any(abs(complex(sympy.N(c.expr.subs(others))) - point.real) < 1e-9 for c in found):
                    continue
                below, above = _faster_on_each_side(first, second, parameter, at_root, point.real)
                found.append(Crossover((first.network.name, second.network.name), parameter, root, below, above))
    return sorted(found, key=lambda c: float(sympy.N(c.expr.subs(others))))


def _faster_on_each_side(first, second, parameter, at_root, value):
    def faster(x):
        point = {**at_root, parameter: x}
        a = max(_numeric(c, point).real for c in first.speed_candidates)
        b = max(_numeric(c, point).real for c in second.speed_candidates)
        if abs(a - b) < _TOLERANCE:
            return None
        return first.network.name if a > b else second.network.name

    step = 1e-4 * max(1.0, abs(value))
    return faster(value - step), faster(value + step)
