"""Exact arithmetic with algebraic numbers that have no radical form (``CRootOf``).

A mode whose ``s^2`` is a root ``r`` of an irreducible polynomial ``f`` of degree ``n`` (the
Section 4 ring block gives ``n = 8``) has exact vectors in ``Q(r)``: polynomials in ``r`` of
degree below ``n``. Couplings multiply vectors of two such modes, ``r1`` and ``r2``, often from
different fields. Building the compositum ``Q(r1, r2)`` (degree 56 on Section 4) takes SymPy
minutes, but none is needed: every product the derivation forms is bilinear in the two modes'
vectors, so it is a polynomial in ``(r1, r2)`` of degree below ``n1`` and ``n2``.

Here each ``CRootOf``, and each square root of a rational number beside it, is replaced by a
generator symbol of a polynomial ring over Q. Products are taken there, powers of one generator
are reduced modulo its minimal polynomial, and the generators are put back as the numbers they
stand for. The result is exact: no decimal appears. It is a normal form for each generator
alone; relations between generators (``sqrt(6) = sqrt(2) sqrt(3)``, or the sum of a polynomial's
roots) are not used, so whether a result is zero is decided by :func:`derive.modes.vanishes`.
"""

from __future__ import annotations

import mpmath
import sympy
from sympy.printing.str import StrPrinter

from . import implicit

_GENERATORS: dict[sympy.Expr, sympy.Dummy] = {}
_NUMBERS: dict[sympy.Dummy, sympy.Expr] = {}
_POWER_TABLES: dict[sympy.Dummy, list[dict[int, sympy.Rational]]] = {}


def _generator(number: sympy.Expr) -> sympy.Dummy:
    """The generator symbol standing for ``number`` (one per number, for the whole process)."""
    if number not in _GENERATORS:
        symbol = sympy.Dummy(f"r{len(_GENERATORS)}")  # a Dummy never equals a user's symbol
        _GENERATORS[number] = symbol
        _NUMBERS[symbol] = number
    return _GENERATORS[number]


_MINIMAL: dict[sympy.Dummy, sympy.Poly] = {}


def _minimal_polynomial(symbol: sympy.Dummy) -> sympy.Poly:
    if symbol not in _MINIMAL:
        number = _NUMBERS[symbol]
        if isinstance(number, sympy.CRootOf):
            _MINIMAL[symbol] = sympy.Poly(number.poly.as_expr().xreplace({number.poly.gen: symbol}), symbol)
        else:
            _MINIMAL[symbol] = sympy.Poly(symbol**number.exp.q - number.base**number.exp.p, symbol)
    return _MINIMAL[symbol]


def _is_rational_radical(expr: sympy.Expr) -> bool:
    return (
        isinstance(expr, sympy.Pow)
        and expr.base.is_Rational
        and expr.base > 0
        and expr.exp.is_Rational
        and not expr.exp.is_Integer
    )


def has_roots(expr) -> bool:
    """Whether ``expr`` holds a ``CRootOf`` number."""
    return bool(sympy.sympify(expr).atoms(sympy.CRootOf))


def describe(expr) -> dict | None:
    """What kind of algebraic number ``expr`` is, for text that gives its value instead of its
    ``CRootOf`` polynomials: ``None`` when it holds no ``CRootOf``; else ``{"form", "degrees"}``,
    ``form`` one of ``"root"`` (a ``CRootOf`` itself), ``"square root"`` (the square root of one: a
    singular value ``s`` whose ``s^2`` is the root) and ``"polynomial"`` (an expression in them,
    such as a mode's ``d`` in ``Q(s^2)``), ``degrees`` those of the roots' polynomials, largest first."""
    expr = sympy.sympify(expr)
    roots = expr.atoms(sympy.CRootOf)
    if not roots:
        return None
    if isinstance(expr, sympy.CRootOf):
        form = "root"
    elif isinstance(expr, sympy.Pow) and expr.exp == sympy.S.Half and isinstance(expr.base, sympy.CRootOf):
        form = "square root"
    else:
        form = "polynomial"
    return {"form": form, "degrees": sorted({root.poly.degree() for root in roots}, reverse=True)}


def to_generators(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every ``CRootOf`` and every rational radical replaced by its generator."""
    expr = sympy.sympify(expr)
    substitution = generators_of(expr)
    return expr.xreplace(substitution) if substitution else expr


def has_generators(expr: sympy.Expr) -> bool:
    return any(s in _NUMBERS for s in sympy.sympify(expr).free_symbols)


def generators_of(matrix) -> dict:
    """The substitution of generator symbols for the algebraic numbers in ``matrix``'s entries."""
    numbers = matrix.atoms(sympy.CRootOf) | {p for p in matrix.atoms(sympy.Pow) if _is_rational_radical(p)}
    return {number: _generator(number) for number in numbers}


def _generators_in(expr: sympy.Expr) -> list[sympy.Dummy]:
    return sorted((s for s in expr.free_symbols if s in _NUMBERS), key=lambda s: s.name)


def _powers(symbol: sympy.Dummy, highest: int) -> list[dict[int, sympy.Rational]]:
    """``symbol^e`` for every ``e <= highest`` in the basis ``1, symbol, ..., symbol^(n-1)``: one
    dict (exponent below ``n`` -> rational coefficient) per power, built once per generator."""
    minimal = _minimal_polynomial(symbol)
    degree = minimal.degree()
    table = _POWER_TABLES.setdefault(symbol, [])
    if not table:
        leading = minimal.LC()
        table.extend({e: sympy.Integer(1)} for e in range(degree))
        table.append({k: -c / leading for (k,), c in minimal.terms() if k < degree})
    lower = table[degree]
    while len(table) <= highest:
        current: dict[int, sympy.Rational] = {}
        for k, c in table[-1].items():  # times symbol, with symbol^degree rewritten
            if k + 1 < degree:
                current[k + 1] = current.get(k + 1, 0) + c
            else:
                for j, b in lower.items():
                    current[j] = current.get(j, 0) + c * b
        table.append({k: c for k, c in current.items() if c != 0})
    return table


def reduced(expr: sympy.Expr) -> sympy.Expr:
    """A polynomial in generator symbols reduced modulo each generator's minimal polynomial
    (:func:`reduce_element` on it as an element of a polynomial ring over its coefficients' field)."""
    symbols = _generators_in(sympy.sympify(expr))
    if not symbols:
        return sympy.expand(expr)
    poly = sympy.Poly(expr, *symbols)
    domain = poly.domain.get_field().poly_ring(*symbols)
    element = domain.ring.from_dict({m: domain.domain.convert(c, poly.domain) for m, c in poly.rep.to_dict().items()})
    return domain.to_sympy(reduce_element(element))


def from_generators(expr: sympy.Expr) -> sympy.Expr:
    """The reduced ``expr`` with its generator symbols put back as the numbers they stand for."""
    if not has_generators(expr):
        return expr
    expr = reduced(expr)
    symbols = _generators_in(expr)
    return expr.xreplace({s: _NUMBERS[s] for s in symbols}) if symbols else expr


def reciprocal(expr: sympy.Expr) -> sympy.Expr:
    """``1/expr`` as a polynomial in its one algebraic number ``r`` (the inverse in ``Q(r)``), or
    ``1/expr`` when ``expr`` holds none, several, or has parameters."""
    symbolic = to_generators(expr)
    symbols = _generators_in(symbolic)
    if not symbols or symbolic.free_symbols - set(symbols):
        return 1 / expr
    if len(symbols) > 1:  # an inverse would need the compositum: left as a quotient
        return 1 / expr
    (symbol,) = symbols
    inverse = sympy.invert(sympy.expand(symbolic), _minimal_polynomial(symbol).as_expr(), symbol)
    return from_generators(inverse)


def exact_product(*factors: sympy.Expr) -> sympy.Expr:
    """The product of ``factors``, each a polynomial in algebraic numbers (or free of them),
    reduced after every factor and written back with the numbers."""
    total = sympy.Integer(1)
    for factor in factors:
        total = reduced(total * to_generators(factor))
    return from_generators(total)


# --- the same arithmetic on elements of SymPy polynomial rings (DomainMatrix entries) ----------
def is_generator_ring(domain) -> bool:
    """Whether ``domain`` is a polynomial ring over Q or Z with at least one generator symbol."""
    return bool(getattr(domain, "is_PolynomialRing", False)) and any(s in _NUMBERS for s in domain.symbols)


def generator_ring(*domains):
    """``QQ[g...]`` over the generator symbols of ``domains`` and of nothing else."""
    symbols: set = set()
    for domain in domains:
        symbols |= set(getattr(domain, "symbols", ()))
    return sympy.QQ.poly_ring(*sorted(symbols, key=lambda s: s.name))


def reduce_element(element):
    """A ring element with every generator's degree below its minimal polynomial's."""
    ring = element.ring
    positions = [(i, s) for i, s in enumerate(ring.symbols) if s in _NUMBERS]
    degrees = {i: _minimal_polynomial(s).degree() for i, s in positions}
    if all(m[i] < degrees[i] for m in element.keys() for i, _ in positions):
        return element
    field = ring.domain
    tables = {}
    for i, symbol in positions:
        highest = max(m[i] for m in element.keys())
        tables[i] = [{k: field.from_sympy(b) for k, b in power.items()} for power in _powers(symbol, highest)]
    total: dict = {}
    for monomial, coefficient in element.items():
        partial = {monomial: coefficient}
        for i, _ in positions:
            if monomial[i] < degrees[i]:
                continue
            expansion = tables[i][monomial[i]]
            partial = {key[:i] + (k,) + key[i + 1 :]: c * b for key, c in partial.items() for k, b in expansion.items()}
        for key, c in partial.items():
            total[key] = total.get(key, field.zero) + c
    return ring.from_dict({k: c for k, c in total.items() if c})


def element_to_sympy(domain, element) -> sympy.Expr:
    """A ring element, reduced, as a SymPy expression in the algebraic numbers themselves."""
    if not is_generator_ring(domain):
        return domain.to_sympy(element)
    expr = domain.to_sympy(reduce_element(element))
    return expr.xreplace({s: _NUMBERS[s] for s in _generators_in(expr)})


def element_from_sympy(domain, expr: sympy.Expr):
    """``expr`` (a polynomial in algebraic numbers of ``domain``'s generators) as an element;
    ``None`` when it is not one."""
    try:
        return domain.from_sympy(sympy.expand(to_generators(expr)))
    except (sympy.polys.polyerrors.CoercionFailed, sympy.polys.polyerrors.PolynomialError):
        return None


_VALUES: dict = {}
_DIGITS = 60


def element_magnitude(element) -> float:
    """``|element|`` evaluated at ``_DIGITS`` digits with the generators' numerical values (to
    decide whether an element that is not the zero polynomial is the number 0)."""
    import mpmath

    ring = element.ring
    with mpmath.workdps(_DIGITS):
        values = []
        for symbol in ring.symbols:
            if symbol not in _VALUES:
                _VALUES[symbol] = mpmath.mpf(str(sympy.N(_NUMBERS[symbol], _DIGITS)))
            values.append(_VALUES[symbol])
        total = mpmath.mpf(0)
        for monomial, coefficient in element.items():
            term = mpmath.mpf(int(coefficient.numerator)) / int(coefficient.denominator)
            for value, exponent in zip(values, monomial):
                if exponent:
                    term *= value**exponent
            total += term
        return float(abs(total))


class _RootPrinter(StrPrinter):
    """SymPy's ``str`` printer, with each ``CRootOf`` printed once per process: its polynomial is
    put in ``lex`` order on every occurrence (a millisecond each, 23 000 occurrences in the
    Section 4 ``common+2`` report)."""

    def _print_ComplexRootOf(self, expr):
        if expr not in _ROOT_TEXT:
            _ROOT_TEXT[expr] = super()._print_ComplexRootOf(expr)
        return _ROOT_TEXT[expr]


_ROOT_TEXT: dict = {}


def as_text(expr) -> str:
    """``str(expr)``; for expressions with ``CRootOf`` numbers (or :class:`CouplingNumber`), in
    SymPy's stored term order: the printer's default order sorts terms by their numeric values,
    evaluating every ``CRootOf`` again and again (minutes on the Section 4 loss)."""
    if isinstance(expr, sympy.Basic) and (expr.has(sympy.CRootOf, CouplingNumber) or implicit.has_roots(expr)):
        return _RootPrinter({"order": "none"}).doprint(expr)
    return str(expr)


# --- couplings named rather than expanded ---------------------------------------------------
#: guard digits for evaluating a :class:`CouplingNumber` from its exact vectors; doubled until two
#: evaluations agree (the vectors' rational coefficients are long and their terms cancel)
_GUARD_DIGITS = 30
_MAX_GUARD_DIGITS = 2000
_TERMS: dict = {}
_NUMERIC_VECTORS: dict = {}
_GENERATOR_VALUES: dict = {}


def _terms(vector: sympy.ImmutableMatrix) -> tuple[tuple, list]:
    """Each entry of an exact vector as ``[(exponents, numerator, denominator), ...]`` over its
    generators (:func:`to_generators`), with the generators: precision-free, built once."""
    if vector not in _TERMS:
        symbolic = [to_generators(e) for e in vector]
        generators = tuple(sorted(set().union(*(_generators_in(e) for e in symbolic)), key=lambda g: g.name))
        entries = []
        for e in symbolic:
            # without generators the one monomial exponent pairs with no value below: a constant
            poly = sympy.Poly(e, *(generators or (sympy.Dummy(),)))
            entries.append([(m, int(c.p), int(c.q)) for m, c in poly.terms()])
        _TERMS[vector] = (generators, entries)
    return _TERMS[vector]


def _generator_value(symbol: sympy.Dummy, digits: int):
    key = (symbol, digits)
    if key not in _GENERATOR_VALUES:
        with mpmath.workdps(digits):
            _GENERATOR_VALUES[key] = mpmath.mpf(sympy.Float(sympy.N(_NUMBERS[symbol], digits), digits)._mpf_)
    return _GENERATOR_VALUES[key]


def _numeric_vector(vector: sympy.ImmutableMatrix, digits: int) -> list:
    """The entries of an exact vector (polynomials in ``CRootOf`` numbers and rational radicals)
    as mpmath numbers, computed at ``digits`` digits; kept per vector and precision."""
    key = (vector, digits)
    if key not in _NUMERIC_VECTORS:
        generators, entries = _terms(vector)
        with mpmath.workdps(digits):
            values = [_generator_value(g, digits) for g in generators]
            _NUMERIC_VECTORS[key] = [
                mpmath.fsum(mpmath.mpf(p) / q * mpmath.fprod(v**e for v, e in zip(values, m) if e) for m, p, q in terms)
                for terms in entries
            ]
    return _NUMERIC_VECTORS[key]


class CouplingNumber(sympy.Expr):
    """The coupling ``C[k, l]`` between two modes whose values have no radical form, kept as a named
    exact number instead of an expanded polynomial in their two roots.

    With ``u_k, v_k`` the exact unnormalised vectors of mode ``k`` (in ``Q(r_k)``), ``n_k`` their
    norm factor and ``s_k`` the singular value (:class:`derive.modes.Mode`),

        C[k, l] = (u_k^T E_p^T E_q u_l) (v_k^T Sigma_x(q, p)^T v_l) / (n_k s_k n_l s_l).

    It lies in ``Q(r_k, r_l)``, of degree at most ``deg r_k * deg r_l``. Expanded there it has up to
    that many terms with rationals of hundreds of digits (about 45 KB of text for degrees 8 and 7),
    so it is printed by name, ``c(k, l)`` (``c_{k,l}`` in LaTeX), and defined once by the vectors
    it is built from. Like ``CRootOf`` it is a number (no free symbols), and ``evalf`` evaluates it
    from the exact vectors to any precision asked for.

    Attributes:
        row, column: ``k`` and ``l``, the modes' positions in the derivation's mode order.
        ingredients: ``(u_k, v_k, u_l, v_l, overlap, correlation)``, exact: the modes' unnormalised
            vectors, ``E_p^T E_q`` and ``Sigma_x(q, p)``. Each mode's ``n s`` is ``|u_raw| |v_raw|``,
            so the vectors alone fix the number.
    """

    is_Atom = True
    is_number = True
    is_commutative = True
    is_extended_real = True
    is_real = True
    is_finite = True
    __slots__ = ("row", "column", "ingredients", "_values")

    def __new__(cls, row: int, column: int, ingredients: tuple):
        obj = sympy.Expr.__new__(cls)
        obj.row, obj.column, obj.ingredients = int(row), int(column), tuple(ingredients)
        obj._values = {}
        return obj

    def __reduce__(self):
        # the values computed so far travel with the number (the derivation cache): each costs
        # milliseconds of mpmath on the vectors' long rationals, and a report asks for hundreds
        return (_coupling_number, (self.row, self.column, self.ingredients, dict(self._values)))

    def _hashable_content(self):
        return (self.row, self.column, self.ingredients)

    @property
    def free_symbols(self) -> set:
        return set()

    def _compute(self, digits: int):
        u_k, v_k, u_l, v_l, overlap, correlation = self.ingredients
        uk, vk, ul, vl = (_numeric_vector(x, digits) for x in (u_k, v_k, u_l, v_l))
        with mpmath.workdps(digits):
            output = mpmath.fsum(uk[i] * ul[j] for (i, j), c in overlap.todok().items() if c)
            # Sigma_x(q, p) is |in_q| x |in_p|: v_k^T Sigma_x(q, p)^T v_l = v_l^T Sigma_x(q, p) v_k
            inner = mpmath.fsum(
                vl[i] * (mpmath.mpf(int(c.p)) / int(c.q)) * vk[j] for (i, j), c in correlation.todok().items()
            )
            # n s = |u_raw| |v_raw| for each mode (Mode.raw_norm2): the normalisation, from the vectors
            norms = [mpmath.sqrt(mpmath.fsum(x * x for x in vector)) for vector in (uk, vk, ul, vl)]
            return output * inner / mpmath.fprod(norms)

    def value(self, digits: int):
        """The number to ``digits`` significant digits, as an mpmath number (a value already
        known to more digits is rounded)."""
        more = [known for known in self._values if known > digits]
        if digits not in self._values and more:
            with mpmath.workdps(digits):
                return +self._values[min(more)]
        if digits not in self._values:
            guard = _GUARD_DIGITS
            with mpmath.workdps(digits + 10):
                while True:
                    low, high = self._compute(digits + guard), self._compute(digits + 2 * guard)
                    scale = max(abs(high), mpmath.mpf(10) ** -digits)
                    if abs(low - high) <= scale * mpmath.mpf(10) ** (-digits - 2) or guard > _MAX_GUARD_DIGITS:
                        break
                    guard *= 2
            self._values[digits] = high
        return self._values[digits]

    def _eval_evalf(self, prec):
        digits = max(mpmath.libmp.prec_to_dps(prec), 15)
        return sympy.Float(self.value(digits), digits)

    def _sympystr(self, printer) -> str:
        return f"c({self.row}, {self.column})"

    def _latex(self, printer) -> str:
        return f"c_{{{self.row},{self.column}}}"


def _coupling_number(row: int, column: int, ingredients: tuple, values: dict) -> CouplingNumber:
    """A pickled :class:`CouplingNumber` with the values it had computed."""
    number = CouplingNumber(row, column, ingredients)
    number._values.update(values)
    return number
