"""Reading arithmetic expressions from spec text without executing anything.

The reader walks Python's ``ast`` and accepts only numbers, declared parameter
names, ``+ - * / **``, unary signs, parentheses and calls to a short list of
functions. Every other construct is rejected with a message naming its location.
Decimal literals become exact rationals so that derived correlations stay exact.
"""

from __future__ import annotations

import ast
import cmath
import math
from collections.abc import Mapping
from fractions import Fraction

import sympy

from ..errors import SpecError

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

MAX_EXPRESSION_LENGTH = 500  # characters
MAX_EXPRESSION_DEPTH = 100  # levels of the syntax tree
MAX_EXPRESSION_NODES = 256  # nodes of the syntax tree
MAX_EXPONENT = 64  # |exponent| of any power
MAX_NUMBER_BITS = 1024  # numerators and denominators of exact numbers stay below 2**1024 (the float range)


class EvaluationError(ArithmeticError):
    """An expression that has no finite value at the given parameter values; the message says why."""


def plain_number(value):
    """``value``, or the Python number a NumPy scalar holds (``numpy.float64(1.5)`` -> ``1.5``,
    ``numpy.int64(3)`` -> ``3``, ``numpy.bool_`` -> ``bool``; ``float()`` of ``numpy.float64``
    alone would keep its type, whose ``repr`` is not a decimal). NumPy is not imported."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def exact_number(value, source: str, key: str) -> sympy.Expr:
    """An exact SymPy number for a TOML int or float (floats via their decimal text), or a Fraction;
    a NumPy scalar (``numpy.float64``, ``numpy.int64``) is read as the Python number it holds."""
    value = plain_number(value)
    if isinstance(value, bool):
        raise SpecError(source, key, f"expected a number, got {str(value).lower()}")
    if isinstance(value, int):
        if abs(value).bit_length() > MAX_NUMBER_BITS:
            raise SpecError(source, key, f"integer of {len(str(abs(value)))} digits is beyond float range")
        return sympy.Integer(value)
    if isinstance(value, Fraction):
        if max(abs(value.numerator).bit_length(), value.denominator.bit_length()) > MAX_NUMBER_BITS:
            raise SpecError(source, key, "fraction beyond float range")
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(source, key, f"non-finite number {value}")
        return exact_number(Fraction(repr(value)), source, key)
    raise SpecError(source, key, f"expected a number or an expression string, got {type(value).__name__}")


def parse_expression(text: str, parameters: Mapping[str, sympy.Symbol], source: str, key: str) -> sympy.Expr:
    """Parse ``text`` into a SymPy expression over ``parameters``; never evaluates code."""
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise SpecError(source, key, f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise SpecError(source, key, f"not an arithmetic expression: {text!r}") from None
    _check_tree_size(tree.body, source, key, text)
    result = _convert(tree.body, parameters, source, key, text)
    if result.has(sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
        raise SpecError(source, key, f"expression {text!r} is not finite")
    return result


def _check_tree_size(root, source, key, text) -> None:
    nodes, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_EXPRESSION_DEPTH:
            raise SpecError(source, key, f"expression nested deeper than {MAX_EXPRESSION_DEPTH} levels: {text!r}")
        if nodes > MAX_EXPRESSION_NODES:
            raise SpecError(source, key, f"expression has more than {MAX_EXPRESSION_NODES} parts: {text!r}")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _bits(number: sympy.Rational) -> int:
    return max(abs(int(number.p)).bit_length(), int(number.q).bit_length())


def _check_power(left, right, source, key, text) -> None:
    """Refuse a power before SymPy builds it: the exponent is at most MAX_EXPONENT in size, and
    the exact numbers it would produce stay within float range (both operands, so that towers
    like ((64**64)**64)**64 stop at the first level that leaves the range)."""
    if right.free_symbols:
        return
    exponent = evaluate(right)  # finite: every constant part was checked when it was built
    if abs(exponent) > MAX_EXPONENT:
        raise SpecError(source, key, f"exponent larger than {MAX_EXPONENT} in expression {text!r}")
    size = abs(exponent.real)
    if not left.free_symbols:
        base = evaluate(left)
        if base == 0:
            if exponent.real < 0:
                raise SpecError(source, key, f"division by zero (0 to a negative power) in expression {text!r}")
            return
        if size * abs(math.log2(abs(base))) > MAX_NUMBER_BITS:
            raise SpecError(source, key, f"power beyond float range in expression {text!r}")
    if any(_bits(number) * size > MAX_NUMBER_BITS for number in left.atoms(sympy.Rational)):
        raise SpecError(source, key, f"power beyond float range in expression {text!r}")


def _checked(result: sympy.Expr, source, key, text) -> sympy.Expr:
    """Every part built while reading stays small: exact numbers within float range, exponents at
    most MAX_EXPONENT, and constant parts finite as floats (so that SymPy never evaluates a
    number like exp(exp(100)) to decide a sign)."""
    if any(_bits(number) > MAX_NUMBER_BITS for number in result.atoms(sympy.Rational)):
        raise SpecError(source, key, f"number beyond float range in expression {text!r}")
    for power in result.atoms(sympy.Pow):
        if not power.exp.free_symbols and abs(evaluate(power.exp)) > MAX_EXPONENT:
            raise SpecError(source, key, f"exponent larger than {MAX_EXPONENT} in expression {text!r}")
    if not result.free_symbols:
        try:
            evaluate(result)
        except EvaluationError as error:
            raise SpecError(source, key, f"expression {text!r} has no finite value: {error}") from None
    return result


def _convert(node, parameters, source, key, text) -> sympy.Expr:
    return _checked(_build(node, parameters, source, key, text), source, key, text)


def _build(node, parameters, source, key, text) -> sympy.Expr:
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
        if isinstance(node.op, ast.Pow):
            _check_power(left, right, source, key, text)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_convert(node.operand, parameters, source, key, text))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            fail("a call to anything but a plain function name")
        assert isinstance(node.func, ast.Name)  # fail() raised otherwise; for the type checker
        if node.func.id not in ALLOWED_FUNCTIONS:
            raise SpecError(
                source,
                key,
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


def _real_power(base: float, exponent: float) -> complex:
    return complex(math.pow(base, exponent))


def _power(base: complex, exponent: complex) -> complex:
    if exponent == 0:
        return 1.0 + 0j
    if base == 0:
        if exponent.real > 0:
            return 0j
        raise EvaluationError("division by zero (0 to a negative power)")
    if base.imag == 0 and exponent.imag == 0 and (base.real > 0 or float(exponent.real).is_integer()):
        return _real_power(base.real, exponent.real)
    return base**exponent


_FLOAT_FUNCTIONS = {sympy.exp: cmath.exp, sympy.log: cmath.log, sympy.sin: cmath.sin, sympy.cos: cmath.cos}


def evaluate(expr, values: Mapping[sympy.Symbol, float] | None = None) -> complex:
    """The value of ``expr`` at ``values`` (by symbol) in double precision, as a complex number.

    Walks the expression with Python floats, so it never asks SymPy for high-precision
    numbers; raises :class:`EvaluationError` on division by zero, the log of zero, or a
    result beyond float range (an overflowing ``exp``, a power, a sum or a product)."""
    return _evaluate(sympy.sympify(expr), values or {})


def _evaluate(expr, values) -> complex:
    try:
        value = _evaluate_node(expr, values)
    except ZeroDivisionError:
        raise EvaluationError("division by zero") from None
    except OverflowError:
        raise EvaluationError("beyond float range") from None
    except ValueError:
        raise EvaluationError("log of zero") from None
    if not cmath.isfinite(value):
        raise EvaluationError("beyond float range")
    return value


def _evaluate_node(expr, values) -> complex:
    if expr.is_Symbol:
        if expr not in values:
            raise EvaluationError(f"no value for {expr}")
        return complex(float(values[expr]))
    if expr.is_Rational:
        return complex(int(expr.p) / int(expr.q))
    if expr.is_Float or expr.is_NumberSymbol:
        return complex(float(expr))
    if expr is sympy.I:
        return 1j
    if expr in (sympy.zoo, sympy.oo, -sympy.oo, sympy.nan):
        raise EvaluationError("not finite")
    if expr.is_Add:
        total = 0j
        for term in expr.args:
            total += _evaluate(term, values)
        return total
    if expr.is_Mul:
        product = 1.0 + 0j
        for factor in expr.args:
            product *= _evaluate(factor, values)
        return product
    if expr.is_Pow:
        return _power(_evaluate(expr.base, values), _evaluate(expr.exp, values))
    if isinstance(expr, sympy.Abs):
        return complex(abs(_evaluate(expr.args[0], values)))
    if expr.func in _FLOAT_FUNCTIONS:
        argument = _evaluate(expr.args[0], values)
        if expr.func is sympy.log and argument == 0:
            raise EvaluationError("log of zero")
        return _FLOAT_FUNCTIONS[expr.func](argument)
    # anything else a derivation may produce (CRootOf, Piecewise, Max, ...): SymPy at double precision
    number = expr.xreplace({s: sympy.Float(float(v)) for s, v in values.items() if s in expr.free_symbols}).evalf(17)
    if not number.is_number:
        raise EvaluationError(f"no value for {number}")
    return complex(number)
