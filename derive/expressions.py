"""Reading arithmetic expressions from spec text without executing anything.

The reader walks Python's ``ast`` and accepts only numbers, declared parameter
names, ``+ - * / **``, unary signs, parentheses and calls to a short list of
functions. Every other construct is rejected with a message naming its location.
Decimal literals become exact rationals so that derived correlations stay exact.
"""

from __future__ import annotations

import ast
import math
from fractions import Fraction
from typing import Mapping

import sympy

from .errors import SpecError

ALLOWED_FUNCTIONS = {
    "sqrt": sympy.sqrt,
    "exp": sympy.exp,
    "log": sympy.log,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "abs": sympy.Abs,
}
ALLOWED_CONSTANTS = {"pi": sympy.pi, "E": sympy.E}

_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY = {ast.UAdd: lambda a: a, ast.USub: lambda a: -a}

MAX_EXPRESSION_LENGTH = 500


def exact_number(value, source: str, key: str) -> sympy.Expr:
    """An exact SymPy number for a TOML int or float (floats via their decimal text), or a Fraction."""
    if isinstance(value, bool):
        raise SpecError(source, key, f"expected a number, got {str(value).lower()}")
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(source, key, f"non-finite number {value}")
        return sympy.Rational(Fraction(repr(value)))
    raise SpecError(source, key, f"expected a number or an expression string, got {type(value).__name__}")


def parse_expression(
    text: str, parameters: Mapping[str, sympy.Symbol], source: str, key: str
) -> sympy.Expr:
    """Parse ``text`` into a SymPy expression over ``parameters``; never evaluates code."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise SpecError(source, key, f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise SpecError(source, key, f"not an arithmetic expression: {text!r}") from None
    result = _convert(tree.body, parameters, source, key, text)
    if result.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
        raise SpecError(source, key, f"expression {text!r} is not finite")
    return result


def _convert(node, parameters, source, key, text) -> sympy.Expr:
    def fail(what: str):
        raise SpecError(source, key, f"{what} is not allowed in expression {text!r}")

    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(f"constant {value!r}")
        return exact_number(value, source, key)
    if isinstance(node, ast.Name):
        if node.id in parameters:
            return parameters[node.id]
        if node.id in ALLOWED_CONSTANTS:
            return ALLOWED_CONSTANTS[node.id]
        raise SpecError(source, key, f"unknown parameter {node.id!r} in expression {text!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _convert(node.left, parameters, source, key, text)
        right = _convert(node.right, parameters, source, key, text)
        if isinstance(node.op, ast.Div) and right == 0:
            raise SpecError(source, key, f"division by zero in expression {text!r}")
        if isinstance(node.op, ast.Pow) and right.is_number and abs(right) > 64:
            raise SpecError(source, key, f"exponent larger than 64 in expression {text!r}")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_convert(node.operand, parameters, source, key, text))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            fail("a call to anything but a plain function name")
        if node.func.id not in ALLOWED_FUNCTIONS:
            raise SpecError(
                source, key,
                f"unknown function {node.func.id!r} in expression {text!r} "
                f"(allowed: {', '.join(sorted(ALLOWED_FUNCTIONS))})",
            )
        if node.keywords or len(node.args) != 1:
            fail(f"{node.func.id} with other than one positional argument")
        return ALLOWED_FUNCTIONS[node.func.id](_convert(node.args[0], parameters, source, key, text))
    if isinstance(node, ast.Attribute):
        fail("attribute access")
    if isinstance(node, ast.Subscript):
        fail("subscripting")
    fail(type(node).__name__)


def parse_value(value, parameters: Mapping[str, sympy.Symbol], source: str, key: str) -> sympy.Expr:
    """A spec entry that is either a TOML number or an expression string."""
    if isinstance(value, str):
        return parse_expression(value, parameters, source, key)
    return exact_number(value, source, key)
