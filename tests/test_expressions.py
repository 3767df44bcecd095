from fractions import Fraction

import pytest
import sympy
from hypothesis import given
from hypothesis import strategies as st

from gdln.derive.errors import SpecError
from gdln.derive.spec import parse_expression

DELTA = sympy.Symbol("Delta", positive=True)
PARAMS = {"Delta": DELTA}


def test_arithmetic_in_parameters_is_exact():
    assert parse_expression("-Delta/2 + 0.1", PARAMS, "f", "k") == -DELTA / 2 + sympy.Rational(1, 10)
    assert parse_expression("sqrt(2)*Delta**2", PARAMS, "f", "k") == sympy.sqrt(2) * DELTA**2


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("__import__('os').system('true')", "call"),
        ("Delta.__class__", "attribute access"),
        ("open('x')", "unknown function 'open'"),
        ("(lambda: 1)()", "call"),
        ("[1, 2][0]", "subscripting"),
        ("Gamma + 1", "unknown parameter 'Gamma'"),
        ("1/0", "division by zero"),
        ("'a' * 3", "constant"),
        ("2 ** 1000", "exponent larger than 64"),
        ("Delta if 1 else 2", "IfExp"),
        ("1 +", "not an arithmetic expression"),
    ],
)
def test_rejects_anything_but_arithmetic(text, fragment):
    with pytest.raises(SpecError) as caught:
        parse_expression(text, PARAMS, "spec.toml", "data.inputs[0][2]")
    message = str(caught.value)
    assert message.startswith("spec.toml: data.inputs[0][2]:")
    assert fragment in message
    assert "\n" not in message


_numbers = st.integers(min_value=-50, max_value=50)


@st.composite
def arithmetic(draw, depth=3):
    if depth == 0 or draw(st.booleans()):
        n = draw(_numbers)
        return str(n) if n >= 0 else f"({n})", Fraction(n)
    op = draw(st.sampled_from("+-*/"))
    (lt, lv), (rt, rv) = draw(arithmetic(depth=depth - 1)), draw(arithmetic(depth=depth - 1))
    if op == "/" and rv == 0:
        op = "+"
    value = {"+": lv + rv, "-": lv - rv, "*": lv * rv, "/": lv / rv if rv else None}[op]
    return f"({lt} {op} {rt})", value


@given(arithmetic())
def test_matches_exact_rational_arithmetic(expression):
    text, value = expression
    assert parse_expression(text, {}, "f", "k") == sympy.Rational(value.numerator, value.denominator)
