"""Modes (singular values and vectors) of effective datasets, found through structure and
exact arithmetic.

No general symbolic SVD. The Gram matrix of the smaller side is split into the connected
blocks of its sparsity pattern, and each block is diagonalised by the cheapest exact route:

- a block of rank one has its singular vector in any non-zero column (parametric or not);
- a parameter-free block with algebraic entries (rationals, radicals) is diagonalised over
  an exact field: its characteristic polynomial is factored over Q with SymPy's
  ``DomainMatrix`` and ``factor_list``; a factor of degree <= 4 whose roots are real radicals
  gives radical eigenvalues, any other factor gives ``CRootOf`` algebraic numbers; every
  eigenspace is an exact nullspace over ``Q`` or ``Q(lambda)`` with an orthogonal basis
  chosen inside it by Gram-Schmidt in the same field, refined where possible so that it also
  diagonalises ``Sigma_x`` there. Couplings that vanish are therefore exactly zero;
- a parametric 2x2 block has a closed-form eigensystem;
- a parameter-free block with transcendental entries (``pi``, ``exp(1)``) is the one case
  left to mpmath at ``PRECISION_DIGITS`` digits: a float appears only because the input
  itself is not algebraic, and the mode says so (``kind = "numeric"``).

Anything else is reported, not guessed.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Any

import mpmath
import sympy
from sympy.polys.constructor import construct_domain
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix

from . import implicit
from .errors import DerivationError

PRECISION_DIGITS = 40
#: Zero for parameter-free expressions holding double-precision ``Float`` (from the float
#: derivation of large numeric data, :mod:`derive.float_modes`). Float64 rounding of correlations
#: of data scaled to O(1) (``gdln task digits`` scales inputs to mean squared norm 1) is ~1e-16,
#: and singular vectors are good to ~1e-16 / (gap between singular values); real couplings can be
#: small (Section 4 has one of 1.6e-9), so the bar sits well below them.
FLOAT_ZERO = 1e-12
_DOUBLE_BITS = 53
_SAMPLE_POINTS = 3
# Radicals of cubics and quartics are kept only when they are real (no casus irreducibilis).
MAX_RADICAL_DEGREE = 4
EIGENVALUE = sympy.Dummy("lambda")


def has_parametric_radicals(expr: sympy.Expr) -> bool:
    """Whether ``expr`` holds a fractional power of an expression in the parameters: expanding
    products of those can grow without bound, so they are compared numerically instead."""
    return any(not p.exp.is_Integer and p.base.free_symbols for p in expr.atoms(sympy.Pow))


def tidy(expr: sympy.Expr) -> sympy.Expr:
    """``expand(expr)``, except for expressions with parametric radicals, which stay as they are."""
    expr = sympy.sympify(expr)
    if implicit.has_roots(expr):
        # kept as built (sums of products of vector entries): expanded and reduced modulo the roots'
        # polynomials they would hold coefficients of many digits that cancel in float64
        return expr
    return expr if has_parametric_radicals(expr) else sympy.expand(expr)


#: the size (SymPy's operation count) up to which a zero test expands an expression exactly;
#: past it, or with a transcendental function of a parameter, expansion can grow without bound
#: (an XoR input ``Delta/2 + sin(Delta)`` made one group reduction expand for 40 s), so the test
#: samples the expression instead, as it does for parametric radicals
EXPAND_BUDGET = 400


def transcendental_in_parameters(expr: sympy.Expr) -> bool:
    """Whether ``expr`` applies a function (``sin``, ``exp``, ``log``, ...) to a parameter:
    expansion and cancellation do not decide such expressions, and can take without limit."""
    return any(f.free_symbols for f in expr.atoms(sympy.Function))


def expands_within_budget(expr: sympy.Expr) -> bool:
    """Whether a zero test may expand ``expr`` exactly (:data:`EXPAND_BUDGET`)."""
    return not transcendental_in_parameters(expr) and sympy.count_ops(expr) <= EXPAND_BUDGET


def vanishes(expr: sympy.Expr) -> bool:
    """Whether ``expr`` is identically zero for positive parameters.

    Tries exact expansion first, within :data:`EXPAND_BUDGET`; expressions with radicals that
    expansion does not cancel, transcendental functions of the parameters, or beyond the budget
    are evaluated at a few fixed random positive rational points to ``PRECISION_DIGITS`` digits
    (deterministic: the sampler has a fixed seed).
    """
    expr = sympy.sympify(expr)
    if implicit.has_roots(expr):
        exact = implicit.vanishes_exactly(expr)
        if exact is not None:
            return exact
    if not expr.free_symbols or expands_within_budget(expr):
        expr = tidy(expr)
    if expr == 0:
        return True
    if expr.is_Rational:
        return False
    if not expr.free_symbols and any(f._prec <= _DOUBLE_BITS for f in expr.atoms(sympy.Float)):
        return abs(complex(expr)) <= FLOAT_ZERO
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    sampler = random.Random(20250121)
    points = [
        {s: sympy.Rational(sampler.randint(11, 97), sampler.randint(7, 31)) for s in symbols}
        for _ in range(_SAMPLE_POINTS if symbols else 1)
    ]
    for point in points:
        value = sympy.N(expr.xreplace(point), PRECISION_DIGITS)  # xreplace: subs is 10x slower here
        if not value.is_number or abs(value) > sympy.Float(10) ** (-(PRECISION_DIGITS - 10)):
            return False
    return True


@dataclass(frozen=True)
class Mode:
    """One mode of a pathway: ``Sigma_yx = sum s u v^T``, ``d = v^T Sigma_x v``.

    ``kind`` says how exact it is: ``"rational"`` (``s^2`` rational), ``"radical"``,
    ``"algebraic"`` (``s^2`` a ``CRootOf`` of an irreducible polynomial of degree
    ``degree``), ``"parametric"`` (exact in the parameters), ``"numeric"`` (mpmath floats,
    only for transcendental input) or ``"float"`` (float64, from the float derivation of large
    numeric data, :mod:`derive.float_modes`)."""

    s: sympy.Expr
    d: sympy.Expr
    u: sympy.ImmutableMatrix
    v: sympy.ImmutableMatrix
    kind: str = "rational"
    degree: int = 1
    u_raw: sympy.ImmutableMatrix | None = None
    v_raw: sympy.ImmutableMatrix | None = None
    raw_norm2: sympy.Expr = sympy.Integer(1)
    shares_input_vector: bool | None = None
    """For ``"implicit"`` modes: whether ``v`` is an eigenvector of ``Sigma_x`` (decided exactly in
    the polynomial ring of the generic root, :func:`_implicit_generic`); ``None`` for other kinds."""
    """Unnormalised exact vectors with ``u v^T = u_raw v_raw^T / (raw_norm2 s)``: ``raw_norm2`` is
    the squared norm of the vector on the side of the Gram matrix, the other side's is ``s^2``
    times it. Products of modes are computed on these, so rational data stays rational."""

    @property
    def exact(self) -> bool:
        return self.kind not in ("numeric", "float")


@dataclass(frozen=True)
class _Eigenspace:
    """An eigenvalue of a Gram block and an orthogonal (unnormalised) basis of its eigenspace."""

    value: sympy.Expr
    vectors: tuple[sympy.Matrix, ...]
    kind: str
    degree: int
    field: object = None
    elements: tuple = ()  # the vectors as elements of ``field`` (no round trip through SymPy)


def connected_blocks(gram: sympy.Matrix) -> list[list[int]]:
    size = gram.rows
    unseen, blocks = set(range(size)), []
    while unseen:
        stack = [min(unseen)]
        unseen.discard(stack[0])
        block = []
        while stack:
            i = stack.pop()
            block.append(i)
            for j in list(unseen):
                if gram[i, j] != 0:
                    unseen.discard(j)
                    stack.append(j)
        blocks.append(sorted(block))
    return blocks


def is_rank_one(block: sympy.Matrix) -> bool:
    n = block.rows
    return all(vanishes(block[i, i] * block[j, j] - block[i, j] ** 2) for i in range(n) for j in range(i + 1, n))


def _algebraic_domain(entries):
    """The exact field of parameter-free entries (``QQ`` or ``QQ<theta>``), or ``None`` when
    some entry is not algebraic."""
    try:
        domain, _ = construct_domain(list(entries), extension=True)
    except (sympy.polys.polyerrors.PolificationFailed, NotImplementedError, ValueError):
        return None
    if domain.is_ZZ:
        return QQ
    if domain.is_QQ or domain.is_AlgebraicField:
        return domain
    return None


def _eigenvalues(charpoly: sympy.Poly) -> list[tuple[sympy.Expr, str, int]]:
    """Non-zero real roots of ``charpoly`` (a polynomial over Q) with how they are written."""
    found = []
    for factor, _ in charpoly.factor_list()[1]:
        degree = factor.degree()
        if degree == 1:
            root = sympy.expand(-factor.as_expr().coeff(EIGENVALUE, 0) / factor.as_expr().coeff(EIGENVALUE, 1))
            if root != 0:
                found.append((root, "rational", 1))
            continue
        radicals = sympy.roots(factor, filter=None) if degree <= MAX_RADICAL_DEGREE else {}
        if radicals and sum(radicals.values()) == degree and not any(r.has(sympy.I) for r in radicals):
            found.extend((r, "radical", degree) for r in radicals)
        else:
            found.extend((sympy.CRootOf(factor.as_expr(), k), "algebraic", degree) for k in range(degree))
    return found


def _orthogonalised(vectors: list, inner) -> list:
    """Gram-Schmidt without normalisation (no square roots), in the vectors' own field."""
    basis: list = []
    for vector in vectors:
        for other in basis:
            scale = inner(vector, other) / inner(other, other)
            vector = [a - scale * b for a, b in zip(vector, other)]
        basis.append(vector)
    return basis


def _exact_eigenspaces(block: sympy.Matrix, domain) -> list[_Eigenspace] | None:
    """Non-zero eigenspaces of a parameter-free symmetric PSD block, exactly; ``None`` when
    an entry lies in an algebraic field and a factor of the characteristic polynomial over it
    is not linear (left to the numeric route)."""
    matrix = DomainMatrix.from_list_sympy(block.rows, block.cols, block.tolist()).convert_to(domain)
    coefficients = [domain.to_sympy(c) for c in matrix.charpoly()]
    if domain.is_QQ:
        charpoly = sympy.Poly(coefficients, EIGENVALUE, domain=QQ)
    else:
        charpoly = sympy.Poly(coefficients, EIGENVALUE, domain=domain)
        if any(f.degree() > 1 for f, _ in charpoly.factor_list()[1]):
            return None
    spaces = []
    for value, kind, degree in _eigenvalues(charpoly):
        field = domain if kind == "rational" or not domain.is_QQ else QQ.algebraic_field(value)
        shifted = matrix.convert_to(field) - DomainMatrix.eye(block.rows, field) * field.from_sympy(value)
        rows = shifted.nullspace().to_list()
        basis = _orthogonalised(rows, lambda a, b: sum((x * y for x, y in zip(a, b)), field.zero))
        vectors = tuple(sympy.Matrix([field.to_sympy(e) for e in vector]) for vector in basis)
        spaces.append(_Eigenspace(value, vectors, kind if domain.is_QQ else "radical", degree, field, tuple(basis)))
    return spaces


def _numeric_eigenspaces(block: sympy.Matrix) -> list[_Eigenspace]:
    with mpmath.workdps(PRECISION_DIGITS):
        values, vectors = mpmath.eigsy(mpmath.matrix(block.evalf(PRECISION_DIGITS).tolist()))
        spaces = []
        scale = max(abs(v) for v in values)
        for k in range(block.rows):
            if abs(values[k]) > scale * mpmath.mpf(10) ** (-(PRECISION_DIGITS - 10)):
                vector = sympy.Matrix([sympy.Float(vectors[i, k], PRECISION_DIGITS) for i in range(block.rows)])
                spaces.append(_Eigenspace(sympy.Float(values[k], PRECISION_DIGITS), (vector,), "numeric", 0))
        return spaces


def _eigenspaces(block: sympy.Matrix, where: str) -> list[_Eigenspace]:
    """Non-zero eigenspaces of a symmetric PSD block."""
    if block.rows == 1 or is_rank_one(block):
        column = next(j for j in range(block.cols) if not vanishes(block[j, j]))
        kind = "rational" if block.trace().is_Rational else ("parametric" if block.free_symbols else "radical")
        return [_Eigenspace(sympy.expand(block.trace()), (block[:, column],), kind, 1)]
    if not block.free_symbols:
        domain = _algebraic_domain(block)
        exact = _exact_eigenspaces(block, domain) if domain is not None else None
        return exact if exact is not None else _numeric_eigenspaces(block)
    if block.rows == 2:
        return _parametric_pair(block)
    return _parametric_eigenspaces(block, where)


def _no_structure(block: sympy.Matrix, where: str, why: str) -> DerivationError:
    return DerivationError(
        f"{where}: a {block.rows}x{block.rows} parametric block of the effective correlations has no "
        f"structure the derivation can use ({why}); fix its parameters "
        f"({', '.join(sorted(s.name for s in block.free_symbols))}) with --set NAME=VALUE to derive it "
        "exactly at that value (Task.with_values from Python)"
    )


def _parametric_eigenspaces(block: sympy.Matrix, where: str) -> list[_Eigenspace]:
    """Non-zero eigenspaces of a parametric symmetric block whose entries are polynomials (or
    rational functions) in the parameters with rational coefficients, any size.

    The characteristic polynomial in ``z`` (``DomainMatrix.charpoly`` over ``Q[g]``) is factored
    over ``Q[g]``. A linear factor gives a rational-function eigenvalue and its eigenspace is an
    exact nullspace over ``Q(g)`` (any multiplicity); a quadratic factor gives two closed forms
    with one square root; a factor of degree ``n >= 3`` gives ``n`` implicit roots
    (:class:`derive.implicit.ParametricRoot`). The eigenvector of a simple root ``r`` of a
    non-linear factor ``f`` is a column of ``adj(zI - B)`` reduced modulo ``f`` (polynomials in
    ``z`` of degree below ``deg f``), at ``z = r``."""
    symbols = sorted(block.free_symbols, key=lambda s: s.name)
    matrix = DomainMatrix.from_list_sympy(block.rows, block.cols, block.tolist())
    domain = matrix.domain
    if not (domain.is_PolynomialRing or domain.is_FractionField) or not (domain.domain.is_QQ or domain.domain.is_ZZ):
        raise _no_structure(block, where, f"entries are not rational functions of the parameters: {domain}")
    if domain.is_FractionField:  # clear denominators: the eigenvalues of c B are c times those of B
        raise _no_structure(block, where, "entries are rational functions, not polynomials, of the parameters")
    matrix = matrix.convert_to(QQ[tuple(symbols)])
    ring = matrix.domain
    z = EIGENVALUE
    coefficients = [ring.to_sympy(c) for c in matrix.charpoly()]
    charpoly = sympy.Poly(coefficients, z).as_expr()
    _, factors = sympy.factor_list(charpoly, z, *symbols)
    spaces: list[_Eigenspace] = []
    for factor, multiplicity in factors:
        poly = sympy.Poly(factor, z)
        degree = poly.degree()
        if degree == 0 or (degree == 1 and poly.nth(0) == 0):
            continue  # a content, or the zero eigenvalue
        if degree == 1:
            value = sympy.factor(sympy.cancel(-poly.nth(0) / poly.nth(1)))
            spaces.extend(rational_function_eigenspace(block, value, symbols))
            continue
        if multiplicity > 1:
            raise _no_structure(
                block, where, f"an irreducible factor of degree {degree} in z repeated {multiplicity} times"
            )
        columns = adjugate_columns(matrix, coefficients, poly, z)
        column = next(c for _, c in columns if c)
        if degree == 2:
            a, b, c = (poly.nth(k) for k in (2, 1, 0))
            radicand = sympy.expand(b**2 - 4 * a * c)
            r = sympy.sqrt(sympy.factor(radicand))
            if len(_square_roots(r)) > 1:  # one radical, not a product of several (see _rationalised)
                r = sympy.sqrt(radicand)
            for sign in (1, -1):
                value = sympy.expand((-b + sign * r) / (2 * a))
                vector = sympy.Matrix([sympy.expand(e.subs(z, value)) for e in column])
                spaces.append(_Eigenspace(value, (vector,), "parametric", 2))
            continue
        monic = sympy.expand(factor / poly.LC()).xreplace({z: implicit.VARIABLE})
        for k in range(degree):
            root = implicit.ParametricRoot(monic, k)
            # the column of adj(zI - B) with the largest diagonal entry at this root (at parameters 1):
            # the best conditioned in float64 (all non-zero columns are parallel there)
            at_one = {symbol: 1 for symbol in symbols}
            value = root.subs(at_one).evalf(30)

            def size(pair, value=value, at_one=at_one):
                diagonal = sympy.sympify(pair[0])
                return abs(float(diagonal.subs(at_one).subs(z, value))) if diagonal != 0 else 0.0

            best = max((pair for pair in columns if pair[1]), key=size)
            generic = tuple(e.xreplace({z: implicit.VARIABLE}) for e in best[1])
            vector = sympy.Matrix([e.xreplace({implicit.VARIABLE: root}) for e in generic])
            spaces.append(_Eigenspace(root, (vector,), "implicit", degree, None, generic))
    return spaces


def rational_function_eigenspace(block: sympy.Matrix, value: sympy.Expr, symbols) -> list[_Eigenspace]:
    """The eigenspace of a rational-function eigenvalue: an exact nullspace over ``Q(g)`` with an
    orthogonal basis by Gram-Schmidt in the same field."""
    field = QQ.frac_field(*symbols)
    matrix = DomainMatrix.from_list_sympy(block.rows, block.cols, block.tolist()).convert_to(field)
    shifted = matrix - DomainMatrix.eye(block.rows, field) * field.from_sympy(value)
    rows = shifted.nullspace().to_list()
    basis = _orthogonalised(rows, lambda a, b: sum((x * y for x, y in zip(a, b)), field.zero))
    vectors = tuple(sympy.Matrix([sympy.factor(field.to_sympy(e)) for e in vector]) for vector in basis)
    return [_Eigenspace(value, vectors, "parametric", 1)]


def adjugate_columns(matrix: DomainMatrix, charpoly: list, factor: sympy.Poly, z: sympy.Symbol) -> list:
    """The columns of ``adj(zI - B)`` reduced modulo ``factor``, each as ``(diagonal entry, column)``
    (``(0, None)`` where it is zero modulo ``factor``), entries expanded.

    With ``p(x) = sum_j c_j x^j`` the characteristic polynomial,
    ``adj(zI - B) = sum_i q_i(z) B^i`` with ``q_i(z) = sum_{j > i} c_j z^(j-1-i)``: a Krylov
    sequence per column. The arithmetic is in the polynomial ring ``Q[z, parameters]``, where
    reducing modulo ``factor`` (monic in ``z`` up to a sign: it divides a monic polynomial) is one
    division by it; SymPy expressions appear only at the end."""
    n = matrix.shape[0]
    ring = matrix.domain
    big = QQ[(z, *ring.symbols)] if ring.is_PolynomialRing else QQ[z]
    c = [big.from_sympy(sympy.sympify(e)) for e in reversed(charpoly)]  # c[j]: the coefficient of z^j
    variable = big.from_sympy(z)
    q = []
    for i in range(n):
        total = big.zero
        for j in range(n, i, -1):  # Horner in z: c_n z^(n-1-i) + ... + c_(i+1)
            total = total * variable + c[j]
        q.append(total)
    divisor = big.from_sympy(factor.as_expr())
    found: list = []
    for m in range(n):
        krylov = [DomainMatrix([[ring.one if i == m else ring.zero] for i in range(n)], (n, 1), ring)]
        for _ in range(n - 1):
            krylov.append(matrix * krylov[-1])
        powers = [[big.convert_from(row[0], ring) for row in k.to_list()] for k in krylov]
        column = []
        for i in range(n):
            entry = big.zero
            for power in range(n):
                if powers[power][i]:
                    entry += q[power] * powers[power][i]
            column.append(big.to_sympy(entry.rem(divisor)))
        found.append((column[m], column) if any(e != 0 for e in column) else (0, None))
    if not any(c for _, c in found):
        raise DerivationError("no column of the adjugate is non-zero at a simple eigenvalue (not a simple root)")
    return found


def _parametric_pair(block: sympy.Matrix) -> list[_Eigenspace]:
    """Eigenspaces of a parametric symmetric 2x2 block ``[[a, b], [b, c]]`` with ``b != 0`` (the
    block split keeps ``b``): ``lambda = (a + c)/2 +- r`` with ``r = sqrt((a - c)^2/4 + b^2)``
    and eigenvector ``(b, lambda - a)``. Written out by hand because SymPy's general
    ``eigenvects`` nests the radicals, which makes every later ratio slow to cancel."""
    a, b, c = block[0, 0], block[0, 1], block[1, 1]
    radicand = sympy.expand((a - c) ** 2 / 4 + b**2)
    r = sympy.sqrt(sympy.factor(radicand))  # factored: perfect squares leave no root
    if len(_square_roots(r)) > 1:  # one radical, not a product of several (see _rationalised)
        r = sympy.sqrt(radicand)
    spaces = []
    for sign in (1, -1):
        value = sympy.expand((a + c) / 2 + sign * r)
        if not vanishes(value):
            spaces.append(
                _Eigenspace(value, (sympy.Matrix([b, sympy.expand((c - a) / 2 + sign * r)]),), "parametric", 1)
            )
    return spaces


def _square_roots(expr: sympy.Expr) -> set:
    return {p for p in expr.atoms(sympy.Pow) if p.exp == sympy.S.Half and p.base.free_symbols}


def _in_root(expr: sympy.Expr, root: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr] | None:
    """``(p, q)`` with ``expr = p + q root``, polynomials in the parameters (``root`` a square
    root of one); ``None`` where the parts are not polynomials."""
    x = sympy.Dummy("r")
    poly = sympy.Poly(sympy.expand(expr.subs(root, x)), x)
    if not all(c.is_polynomial(*c.free_symbols) for c in poly.all_coeffs()):
        return None
    reduced = sympy.Poly(sympy.rem(poly.as_expr(), x**2 - sympy.expand(root.base), x), x)
    return sympy.expand(reduced.coeff_monomial(1)), sympy.expand(reduced.coeff_monomial(x))


def _sign_for_positive(poly: sympy.Expr) -> int:
    """``1`` or ``-1`` where every coefficient of the polynomial ``poly`` in its symbols (all of
    them positive) has that sign, so that ``poly`` has it wherever they do; ``0`` otherwise."""
    symbols = sorted(poly.free_symbols, key=str)
    if poly == 0 or not all(symbol.is_positive for symbol in symbols):
        return 0
    coefficients = sympy.Poly(poly, *symbols).coeffs() if symbols else [poly]
    for sign in (1, -1):
        if all(sign * c > 0 for c in coefficients):
            return sign
    return 0


def _without_cancellation(expr: sympy.Expr) -> sympy.Expr:
    """``expr``, written so that float64 keeps its digits where it is ``p + q r`` (``r`` a square
    root, ``p`` and ``q`` polynomials of opposite signs for all positive parameters): then the two
    terms cancel, and ``(p^2 - q^2 r^2) / (p - q r)`` (the first factored) equals it with none.
    A parametric vector's squared norm takes this form for the smaller root of a quadratic:
    ``ctx-only`` ``context-1``'s smallest mode in the three-context example, whose expanded norm
    lost 1e-7 of ``u`` at ``g = 1/2`` (its terms near 1e9, their sum near 1)."""
    roots = _square_roots(expr)
    if len(roots) != 1:
        return expr
    root = roots.pop()
    parts = _in_root(expr, root)
    if parts is None:
        return expr
    p, q = parts
    signs = _sign_for_positive(p), _sign_for_positive(q)
    if 0 in signs or signs[0] == signs[1]:
        return expr
    return sympy.factor(sympy.expand(p * p - q * q * root.base)) / (p - q * root)


def _in_root_ring(numerator: sympy.Expr, denominator: sympy.Expr, root: sympy.Expr) -> tuple | None:
    """``((p, q), (m, n), R, ring)`` with ``numerator = p + q r``, ``denominator = m + n r`` and
    ``R = r^2`` (``r = sqrt(R)``), polynomials in the parameters alone held in ``ring = Q[x, params]``;
    ``None`` where either side is not a polynomial in ``r`` and the parameters over ``Q``.

    The expressions are read into ``Q[x, params]`` as they are built (sums of products of vector
    entries), with each power ``R^(k/2)`` as ``x^k``, and reduced modulo ``x^2 - R`` there: no
    SymPy ``expand`` of the products (13 s for one mode of a two-parameter tree, 0.1 s so)."""
    x = sympy.Dummy("r")
    symbols = sorted((numerator.free_symbols | denominator.free_symbols | root.free_symbols), key=lambda s: s.name)
    ring = QQ[(x, *symbols)]
    base = root.base

    def element(expr):
        powers = {
            p: x ** int(2 * p.exp)
            for p in expr.atoms(sympy.Pow)
            if p.base == base and p.exp.is_Rational and p.exp.q == 2 and p.exp > 0
        }
        return ring.from_sympy(expr.xreplace(powers))

    try:
        radicand = ring.from_sympy(sympy.expand(base))
        top, bottom = element(numerator), element(denominator)
    except (sympy.polys.polyerrors.CoercionFailed, sympy.polys.polyerrors.GeneratorsError, ValueError):
        return None
    minimal = ring.gens[0] ** 2 - radicand

    def parts(value):
        constant, linear = {}, {}
        for monom, coefficient in value.rem(minimal).terms():
            (linear if monom[0] else constant)[(0, *monom[1:])] = coefficient
        return ring.ring.from_dict(constant), ring.ring.from_dict(linear)

    return parts(top), parts(bottom), radicand, ring


def _over_root(numerator: sympy.Expr, denominator: sympy.Expr, radicand: sympy.Expr) -> tuple[sympy.Expr, bool]:
    """``(numerator / denominator, False)`` factored, or ``(numerator / (denominator / R), True)``
    where the radicand ``R`` divides the denominator: ``q r / (R k)`` prints ``q / (k r)``."""
    if numerator != 0:
        quotient, remainder = sympy.div(denominator, radicand, *sorted(radicand.free_symbols, key=str))
        if remainder == 0:
            return sympy.factor(numerator / quotient), True
    return sympy.factor(numerator / denominator), False


def _rationalised(numerator: sympy.Expr, denominator: sympy.Expr) -> sympy.Expr | None:
    """``numerator / denominator`` written as ``A / C + (B / D) r`` (or ``A / C + B / (D' r)`` where
    ``D = D' R``): a rational function plus a rational function times (or over) a single square
    root ``r = sqrt(R)``, each cancelled and factored with integer coefficients, when both sides
    lie in ``Q[params][r]``; ``None`` otherwise. Polynomial arithmetic only (fast).

    For the tree task's ``dense`` network, ``d = 5/8 + (a^2 + 12 b^2 + 31) / (8 sqrt(R))``, where the
    expanded form held ``9671406556917033397649408 * (... / 77371252455336267181195264) / (27 R)``."""
    roots = _square_roots(numerator) | _square_roots(denominator)
    if len(roots) != 1:
        return None
    root = roots.pop()
    in_ring = _in_root_ring(numerator, denominator, root)
    if in_ring is not None:
        (p, q), (m, n), radicand, ring = in_ring
        # (p + q r)/(m + n r) = (p + q r)(m - n r)/(m^2 - n^2 r^2)
        whole, part, below = p * m - q * n * radicand, q * m - p * n, m * m - n * n * radicand
        if not below:
            return None
        # cancelled in the ring: SymPy's cancel of the expanded expressions takes 10x longer
        first, second = whole.cancel(below), part.cancel(below)
        rational = sympy.factor(ring.to_sympy(first[0]) / ring.to_sympy(first[1]))
        if not part:
            return rational
        top_part, bottom_part, radicand = (ring.to_sympy(e) for e in (*second, radicand))
    else:
        top, bottom = _in_root(numerator, root), _in_root(denominator, root)
        if top is None or bottom is None:
            return None
        (p, q), (m, n) = top, bottom
        radicand = sympy.expand(root.base)
        whole = sympy.expand(p * m - q * n * radicand)
        part = sympy.expand(q * m - p * n)
        below = sympy.expand(m * m - n * n * radicand)
        if below == 0:
            return None
        rational = sympy.factor(sympy.cancel(whole / below))
        if part == 0:
            return rational
        top_part, bottom_part = sympy.fraction(sympy.cancel(part / below))
    coefficient, over = _over_root(top_part, bottom_part, radicand)
    return rational + (coefficient / root if over else coefficient * root)


def _canonical(expr: sympy.Expr, field) -> sympy.Expr:
    """``expr`` reduced in ``field`` (polynomials in its generator modulo its minimal polynomial)."""
    if field is None and implicit.has_roots(expr):
        return implicit.reduce_roots(expr)
    expr = sympy.expand(expr)
    if field is None or field.is_QQ or expr.is_Rational:
        return expr
    try:
        return field.to_sympy(field.from_sympy(expr))
    except (sympy.polys.polyerrors.CoercionFailed, NotImplementedError):
        return expr


def _ratio(numerator: sympy.Expr, denominator: sympy.Expr, kind: str, field) -> sympy.Expr:
    if kind == "numeric":
        return sympy.expand(numerator / denominator)
    if kind == "implicit":  # each side a polynomial in the root of degree below its polynomial's
        return implicit.reduce_roots(numerator) / implicit.reduce_roots(denominator)
    if kind == "parametric" or field is None:
        if _square_roots(numerator) or _square_roots(denominator):
            rationalised = _rationalised(numerator, denominator)
            return rationalised if rationalised is not None else sympy.expand(numerator) / sympy.expand(denominator)
        return sympy.factor(sympy.cancel(sympy.expand(numerator / denominator)))
    try:
        return field.to_sympy(field.from_sympy(sympy.expand(numerator)) / field.from_sympy(sympy.expand(denominator)))
    except (sympy.polys.polyerrors.CoercionFailed, NotImplementedError):
        return sympy.cancel(sympy.expand(numerator / denominator))


def _root(value: sympy.Expr, kind: str) -> sympy.Expr:
    if kind == "numeric":
        return sympy.sqrt(value).evalf(PRECISION_DIGITS)
    if kind == "parametric":
        return sympy.sqrt(sympy.factor(value))
    return sympy.sqrt(value)


@functools.lru_cache(maxsize=4096)
def _factored(expr: sympy.Expr) -> sympy.Expr:
    """``factor(expr)``, once per expression: a vector's entries repeat (targets that copy a
    feature), and factoring an entry with a parametric radical takes tens of milliseconds."""
    return sympy.factor(expr)


def _normalised(vector: sympy.Matrix, kind: str, field) -> sympy.ImmutableMatrix:
    vector = vector.applyfunc(lambda e: _canonical(e, field))
    squared = _canonical((vector.T * vector)[0, 0], field)
    stable = _without_cancellation(squared) if kind == "parametric" else squared
    norm = _root(squared, kind) if stable is squared else sympy.sqrt(stable)
    if kind == "implicit":
        return sympy.ImmutableMatrix(vector.applyfunc(lambda e: e / norm if e != 0 else e))
    if kind == "parametric":
        return sympy.ImmutableMatrix(vector.applyfunc(lambda e: _factored(e / norm)))
    return sympy.ImmutableMatrix(vector.applyfunc(lambda e: e / norm if e != 0 else e))


def _diagonalise_inside(raw_v: list[sympy.Matrix], sigma_x: sympy.Matrix) -> list[sympy.Matrix] | None:
    """Within one degenerate eigenspace spanned by the orthogonal rational columns ``raw_v``,
    an orthogonal basis that also diagonalises ``Sigma_x`` there, when ``Sigma_x`` restricted to
    it has rational eigenvalues; ``None`` otherwise (the original basis is kept)."""
    count = len(raw_v)
    restricted = sympy.Matrix(count, count, lambda i, j: (raw_v[i].T * sigma_x * raw_v[j])[0, 0])
    if all(restricted[i, j] == 0 for i in range(count) for j in range(count) if i != j):
        return None
    if any(not e.is_Rational for e in restricted) or any(not e.is_Rational for v in raw_v for e in v):
        return None
    gram = [(v.T * v)[0, 0] for v in raw_v]
    # pencil restricted c = mu diag(gram) c: the same eigenvalues as diag(gram)^-1 restricted
    pencil = DomainMatrix.from_list_sympy(
        count, count, [[restricted[i, j] / gram[i] for j in range(count)] for i in range(count)]
    ).convert_to(QQ)
    charpoly = sympy.Poly(pencil.charpoly(), EIGENVALUE, domain=QQ)
    factors = charpoly.factor_list()[1]
    if any(f.degree() > 1 for f, _ in factors):
        return None
    basis = []
    for factor, _ in factors:
        mu = sympy.Rational(-factor.nth(0), factor.nth(1))
        rows = (pencil - DomainMatrix.eye(count, QQ) * QQ.from_sympy(mu)).nullspace().to_list()
        # orthogonal in the metric of the original basis, so the new vectors stay orthogonal
        rows = _orthogonalised(
            rows, lambda a, b: sum((x * y * QQ.from_sympy(g) for x, y, g in zip(a, b, gram)), QQ.zero)
        )
        for coefficients in rows:
            basis.append(sum((QQ.to_sympy(c) * v for c, v in zip(coefficients, raw_v)), sympy.zeros(raw_v[0].rows, 1)))
    return basis


def gram_matrix(sigma_yx: sympy.Matrix) -> tuple[sympy.Matrix, bool]:
    """The Gram matrix of the smaller side of ``sigma_yx``, and whether that is the output side."""
    rows, cols = sigma_yx.shape
    left = rows <= cols
    return (sigma_yx * sigma_yx.T if left else sigma_yx.T * sigma_yx).applyfunc(sympy.expand), left


def _spaces(gram: sympy.Matrix, where: str):
    """``(block indices, eigenspace)`` of every non-zero eigenspace of ``gram``, block by block."""
    for block_indices in connected_blocks(gram):
        block = gram.extract(block_indices, block_indices)
        if all(vanishes(e) for e in block):
            continue
        for space in _eigenspaces(block, where):
            yield block_indices, space


def singular_values(sigma_yx: sympy.Matrix, where: str) -> list[sympy.Expr]:
    """The ``s`` of every mode of :func:`find_modes`, in its order, without their vectors: what a
    crossover with another network needs (normalising parametric vectors is most of the work)."""
    gram, _ = gram_matrix(sigma_yx)
    return [_root(space.value, space.kind) for _, space in _spaces(gram, where) for _ in space.vectors]


def find_modes(sigma_yx: sympy.Matrix, sigma_x: sympy.Matrix, where: str) -> list[Mode]:
    """The non-zero modes of one pathway's effective dataset."""
    gram, left = gram_matrix(sigma_yx)
    modes = []
    for block_indices, space in _spaces(gram, where):
        if space.kind == "implicit":
            modes.append(_implicit_mode(sigma_yx, sigma_x, space, tuple(block_indices), left))
            continue
        in_field = _modes_in_field(sigma_yx, sigma_x, space, block_indices, left, gram.rows)
        if in_field is not None:
            modes.extend(in_field)
            continue
        raw_u, raw_v = [], []
        for block_vector in space.vectors:
            vector = sympy.zeros(gram.rows, 1)
            for position, index in enumerate(block_indices):
                vector[index] = block_vector[position]
            other = (sigma_yx.T * vector if left else sigma_yx * vector).applyfunc(sympy.expand)
            raw_u.append(vector if left else other)
            raw_v.append(other if left else vector)
        if len(raw_v) > 1 and space.kind == "rational":
            # v_raw = A c for the same rational change of basis c in both sides: rotate u alike
            refined = _diagonalise_inside(raw_v, sigma_x)
            if refined is not None:
                rotation = _coordinates(raw_v, refined)
                raw_u = [
                    sum((rotation[i][k] * raw_u[k] for k in range(len(raw_u))), sympy.zeros(raw_u[0].rows, 1))
                    for i in range(len(refined))
                ]
                raw_v = refined
        s = _root(space.value, space.kind)
        for u_raw, v_raw in zip(raw_u, raw_v):
            # d is a ratio of polynomials in the unnormalised vector: kept exact and short
            d = _ratio((v_raw.T * sigma_x * v_raw)[0, 0], (v_raw.T * v_raw)[0, 0], space.kind, space.field)
            u, v = _normalised(u_raw, space.kind, space.field), _normalised(v_raw, space.kind, space.field)
            raw_norm2 = _canonical(((u_raw if left else v_raw).T * (u_raw if left else v_raw))[0, 0], space.field)
            if space.kind == "numeric":  # keep the floats normalised: unit gram-side vector
                u_raw, v_raw, raw_norm2 = (u, v * s, sympy.Integer(1)) if left else (u * s, v, sympy.Integer(1))
            modes.append(
                Mode(
                    s=s,
                    d=d,
                    u=u,
                    v=v,
                    kind=space.kind,
                    degree=space.degree,
                    u_raw=sympy.ImmutableMatrix(u_raw.applyfunc(lambda e: _canonical(e, space.field))),
                    v_raw=sympy.ImmutableMatrix(v_raw.applyfunc(lambda e: _canonical(e, space.field))),
                    raw_norm2=raw_norm2,
                )
            )
    return modes


def _implicit_mode(sigma_yx, sigma_x, space: _Eigenspace, block_indices: tuple, left: bool) -> Mode:
    """The mode of an implicit root ``r`` (:class:`derive.implicit.ParametricRoot`): vectors, norms
    and ``d`` are computed once per polynomial as polynomials in a generic root ``x`` and the
    parameters (a polynomial ring over ``Q``, reduced modulo the root's polynomial), then ``x = r``."""
    root = space.value
    generic = _implicit_generic(sigma_yx, sigma_x, root.polynomial, space.elements, block_indices, left)
    *expressions, shares = generic
    u_raw, v_raw = (e.xreplace({implicit.VARIABLE: root}) for e in expressions[:2])
    # norms and d as sums of products of the vectors' entries, not expanded: each entry is a short
    # polynomial in the root, while the expanded and reduced forms hold coefficients of many digits
    # that cancel when evaluated in float64
    norm_u, norm_v = ((x.T * x)[0, 0] for x in (u_raw, v_raw))
    raw_norm2 = norm_u if left else norm_v
    d_top = (v_raw.T * sigma_x * v_raw)[0, 0]
    return Mode(
        s=sympy.sqrt(root),
        d=d_top / norm_v,
        u=sympy.ImmutableMatrix(u_raw.applyfunc(lambda e: e / sympy.sqrt(norm_u) if e != 0 else e)),
        v=sympy.ImmutableMatrix(v_raw.applyfunc(lambda e: e / sympy.sqrt(norm_v) if e != 0 else e)),
        kind="implicit",
        degree=space.degree,
        u_raw=u_raw,
        v_raw=v_raw,
        raw_norm2=raw_norm2,
        shares_input_vector=shares,
    )


_IMPLICIT_GENERIC: dict = {}


def _implicit_generic(sigma_yx, sigma_x, polynomial, column, block_indices, left):
    key = (sigma_yx, sigma_x, polynomial, column, block_indices, left)
    if key in _IMPLICIT_GENERIC:
        return _IMPLICIT_GENERIC[key]
    x = implicit.VARIABLE
    symbols = sorted(
        (sigma_yx.free_symbols | sigma_x.free_symbols | polynomial.free_symbols) - {x}, key=lambda s: s.name
    )
    ring = QQ[(x, *symbols)]
    minimal = ring.from_sympy(polynomial)

    def reduce(element):
        return element.rem(minimal) if element else element

    a = DomainMatrix.from_list_sympy(*sigma_yx.shape, sigma_yx.tolist()).convert_to(ring)
    c = DomainMatrix.from_list_sympy(*sigma_x.shape, sigma_x.tolist()).convert_to(ring)
    size = sigma_yx.rows if left else sigma_yx.cols
    entries = [ring.zero] * size
    for position, index in enumerate(block_indices):
        entries[index] = ring.from_sympy(column[position])
    gram_side = DomainMatrix([[e] for e in entries], (size, 1), ring)
    other = (a.transpose() * gram_side) if left else (a * gram_side)
    other = DomainMatrix([[reduce(row[0])] for row in other.to_list()], other.shape, ring)
    u, v = (gram_side, other) if left else (other, gram_side)

    def square(vector, middle=None):
        product = vector.transpose() * (middle * vector if middle is not None else vector)
        return reduce(product.to_list()[0][0])

    norm_u, norm_v = square(u), square(v)
    raw_norm2 = norm_u if left else norm_v
    d_top = square(v, c)

    def expr(element):
        return ring.to_sympy(element)

    def matrix(vector):
        return sympy.ImmutableMatrix([expr(row[0]) for row in vector.to_list()])

    # Sigma_x v = d v  <=>  |v|^2 Sigma_x v - (v^T Sigma_x v) v = 0 modulo the root's polynomial
    residual = c * v * DomainMatrix([[norm_v]], (1, 1), ring) - v * DomainMatrix([[d_top]], (1, 1), ring)
    shares = all(not reduce(row[0]) for row in residual.to_list())
    result = (matrix(u), matrix(v), expr(raw_norm2), expr(norm_u), expr(norm_v), expr(d_top), expr(norm_v), shares)
    _IMPLICIT_GENERIC[key] = result
    return result


def _modes_in_field(sigma_yx, sigma_x, space: _Eigenspace, block_indices, left: bool, size: int) -> list[Mode] | None:
    """Modes of an irrational eigenspace computed inside its number field ``Q(lambda)``: vectors,
    norms and ``d`` are field elements (reduced modulo the minimal polynomial), turned into SymPy
    expressions only at the end. ``None`` when the correlations are not in that field."""
    field: Any = space.field
    if field is None or field.is_QQ or not space.elements or sigma_yx.free_symbols or sigma_x.free_symbols:
        return None
    try:
        a = DomainMatrix.from_list_sympy(*sigma_yx.shape, sigma_yx.tolist()).convert_to(field)
        c = DomainMatrix.from_list_sympy(*sigma_x.shape, sigma_x.tolist()).convert_to(field)
        columns = []
        for block_vector in space.elements:
            full = [field.zero] * size
            for position, index in enumerate(block_indices):
                full[index] = block_vector[position]
            columns.append(DomainMatrix([[e] for e in full], (size, 1), field))
    except (sympy.polys.polyerrors.CoercionFailed, NotImplementedError):
        return None
    s = _root(space.value, space.kind)
    modes = []
    for gram_side in columns:
        other = (a.transpose() * gram_side) if left else (a * gram_side)
        u_raw, v_raw = (gram_side, other) if left else (other, gram_side)
        norm_gram = (gram_side.transpose() * gram_side).to_list()[0][0]
        norm_v = (v_raw.transpose() * v_raw).to_list()[0][0]
        d = (v_raw.transpose() * c * v_raw).to_list()[0][0] / norm_v
        norm_u = norm_gram if left else norm_gram * field.from_sympy(space.value)

        def to_matrix(column, norm=None):
            values = [field.to_sympy(e[0]) for e in column.to_list()]
            if norm is None:
                return sympy.ImmutableMatrix(values)
            root = sympy.sqrt(field.to_sympy(norm))
            return sympy.ImmutableMatrix([e / root if e != 0 else e for e in values])

        u, v = to_matrix(u_raw, norm_u), to_matrix(v_raw, norm_v)
        # exact for algebraic (CRootOf) values too: products with other modes are taken in
        # polynomial rings over Q by derive.algebraic, never in a compositum field
        raws = (to_matrix(u_raw), to_matrix(v_raw), field.to_sympy(norm_gram))
        modes.append(
            Mode(
                s=s,
                d=field.to_sympy(d),
                u=u,
                v=v,
                kind=space.kind,
                degree=space.degree,
                u_raw=raws[0],
                v_raw=raws[1],
                raw_norm2=raws[2],
            )
        )
    return modes


def _coordinates(basis: list[sympy.Matrix], vectors: list[sympy.Matrix]) -> list[list[sympy.Expr]]:
    """Coefficients of each of ``vectors`` in the orthogonal ``basis``."""
    norms = [(b.T * b)[0, 0] for b in basis]
    return [[(v.T * b)[0, 0] / n for b, n in zip(basis, norms)] for v in vectors]
