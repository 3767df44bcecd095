"""Expressions a paper can take (issue 47, item 5): a mode's ``d`` with a parametric square root
is a rational function plus a rational function over (or times) the root, with integer
coefficients, not an expanded fraction of 25-digit numbers; a table entry too wide for the page
is named in the table and written below it, so the LaTeX stays within the margins."""

import random

import pytest
import sympy

from gdln.cli import main
from gdln.derive import modes
from gdln.derive.latex.width import split_sum, width

from .helpers import TREE_DATA, TREE_NETWORKS
from .test_latex import pdflatex

a, b = sympy.symbols("a b", positive=True)
RADICAND = 25 * a**4 + 24 * a**2 * b**2 + 14 * a**2 + 144 * b**4 + 744 * b**2 + 985
ROOT = sympy.sqrt(RADICAND)
#: the tree task's largest mode's d as ``derive`` printed it before (issue 47)
LONG_D = (
    9671406556917033397649408
    * (27 * (a**2 + 12 * b**2 + 31) * ROOT / 77371252455336267181195264 + 135 * RADICAND / 77371252455336267181195264)
    / (27 * RADICAND)
)
SHORT_D = sympy.Rational(5, 8) + (a**2 + 12 * b**2 + 31) / (8 * ROOT)

TREE_SPEC = TREE_DATA + TREE_NETWORKS["dense"]


def _agree(first: sympy.Expr, second: sympy.Expr, points: int = 5) -> bool:
    sampler = random.Random(47)
    for _ in range(points):
        point = {
            a: sympy.Rational(sampler.randint(1, 97), sampler.randint(1, 31)),
            b: sympy.Rational(sampler.randint(1, 97), sampler.randint(1, 31)),
        }
        if abs(sympy.N((first - second).xreplace(point), 40)) > sympy.Float(10) ** -30:
            return False
    return True


def test_short_d_is_the_long_one():
    assert _agree(SHORT_D, LONG_D)


def test_d_over_a_parametric_root_is_rational_plus_rational_over_the_root():
    """``v^T Sigma_x v / v^T v`` as ``find_modes`` builds it (unexpanded sums of products, small
    power-of-two denominators) comes back as ``5/8 + (a^2 + 12 b^2 + 31) / (8 sqrt(R))``."""
    x = sympy.Symbol("x")  # stands for the root while the sides are built
    m, n = 3 + a**2, b + 1  # v^T v = r (m + n r) / 2^23, unexpanded
    denominator = ROOT * (m + n * ROOT) / 8388608
    numerator = sum(
        (
            sympy.Rational(5, 8) * (m * x + n * RADICAND) / 8388608,
            (a**2 + 12 * b**2 + 31) * (m + n * x) / 67108864,
        ),
        sympy.Integer(0),
    ).xreplace({x: ROOT})
    d = modes._ratio(numerator, denominator, "parametric", None)
    assert sympy.srepr(d) == sympy.srepr(SHORT_D), d
    assert _agree(d, LONG_D)
    assert sympy.count_ops(d) <= 30 < sympy.count_ops(LONG_D)
    assert len(str(d)) <= 100 < len(str(LONG_D))
    # the smaller root's mode: the sign of the root flips
    flipped = modes._ratio(numerator.xreplace({ROOT: -ROOT}), denominator.xreplace({ROOT: -ROOT}), "parametric", None)
    assert sympy.expand(flipped - (sympy.Rational(5, 8) - (a**2 + 12 * b**2 + 31) / (8 * ROOT))) == 0


def test_long_sums_do_not_break_inside_tables():
    """A table whose cell holds a signed sum is one piece; and the width of a piece with an array
    left open is finite (it looped forever)."""
    table = "\\begin{array}{cc}\\text{class} & d \\\\ \\hline\n1 & " + " + ".join(f"x_{{{i}}}" for i in range(60))
    table += "\\end{array}"
    assert split_sum(table) == [table]
    assert width("\\begin{array}{cc} 1 & - \\frac{a}{b}") > 0


@pytest.mark.slow
def test_tree_dense_prints_the_short_d_and_its_document_fits_the_page(capsys, tmp_path):
    spec = tmp_path / "tree.toml"
    spec.write_text(TREE_SPEC)
    path = tmp_path / "tree.tex"
    assert main(["--no-cache", "derive", str(spec), "--network", "dense", "--latex", str(path)]) == 0
    text = capsys.readouterr().out
    root = "sqrt(25*a**4 + 24*a**2*b**2 + 14*a**2 + 144*b**4 + 744*b**2 + 985)"
    assert f"d = (a**2 + 12*b**2 + 31)/(8*{root}) + 5/8 = 0.75" in text
    assert f"d = -(a**2 + 12*b**2 + 31)/(8*{root}) + 5/8 = 0.5" in text
    assert "77371252455336267181195264" not in text
    tex = path.read_text()
    assert "& s_{1,4} &" in tex and "s_{1,4} = \\frac{\\sqrt{5 a^{2} + 12 b^{2} + \\sqrt{" in tex
    _, overfull = pdflatex(path)
    assert not overfull, overfull
