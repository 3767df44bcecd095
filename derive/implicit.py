"""Eigenvalues of parametric blocks that have no closed form, kept exact as implicit algebraic
functions of the parameters.

A symmetric Gram block ``B(g)`` whose entries are polynomials in the parameters has a
characteristic polynomial in ``z`` with coefficients in ``Q[g]``. :func:`derive.modes` factors it
over ``Q[g]``; a factor ``P(z; g)`` of degree 3 or more in ``z`` has no usable radical form, and
each of its roots is a :class:`ParametricRoot`: "the ``k``-th largest root of ``P(z; g)``", an
ordinary SymPy expression whose free symbols are the parameters. Every later expression
(``s``, ``d``, vectors, couplings, losses, speeds) is a SymPy expression in the parameters and
these roots, polynomial in each root of degree below ``deg P`` where it has been reduced
(:func:`reduce_roots`).

Numbers come from the exact object: ``expr.subs({g: value})`` leaves a root of a polynomial with
numeric coefficients, which ``evalf`` evaluates (an isolating ``CRootOf`` for rational values,
``mpmath.polyroots`` otherwise); compiled code (:mod:`numeric.compile`) takes each root as an
extra input computed per point from its polynomial (:func:`jax_root_values`).
"""

from __future__ import annotations

import functools
import hashlib

import mpmath
import sympy

#: the variable of every root's polynomial (bound: never a free symbol of a root)
VARIABLE = sympy.Symbol("z_implicit_root")


class ParametricRoot(sympy.Expr):
    """The ``index``-th largest (0-based) real root of ``polynomial`` in :data:`VARIABLE`, whose
    coefficients are polynomials in the parameters. All its roots are real (it divides the
    characteristic polynomial of a symmetric matrix)."""

    is_commutative = True
    # an atom for ``expand`` and friends: its polynomial is kept expanded and never walked again
    is_Atom = True
    is_real = True
    is_extended_real = True
    is_finite = True
    is_complex = True

    def __new__(cls, polynomial, index):
        polynomial = sympy.expand(sympy.sympify(polynomial))
        return super().__new__(cls, polynomial, sympy.Integer(index))

    @property
    def polynomial(self) -> sympy.Expr:
        return self.args[0]

    @property
    def index(self) -> int:
        return int(self.args[1])

    @property
    def poly(self) -> sympy.Poly:
        return sympy.Poly(self.polynomial, VARIABLE)

    @property
    def degree(self) -> int:
        return self.poly.degree()

    @property
    def free_symbols(self) -> set:
        return self.polynomial.free_symbols - {VARIABLE}

    @property
    def name(self) -> str:
        """``P`` and a short hash of the polynomial (the same polynomial, the same name)."""
        return polynomial_name(self.polynomial)

    def _hashable_content(self):
        return self.args

    def _eval_subs(self, old, new):
        if old == VARIABLE:
            return self
        return None

    def _eval_is_positive(self):
        return None

    def _eval_evalf(self, prec):
        if self.free_symbols:
            return None
        return _root_value(self.polynomial, self.index, mpmath.libmp.prec_to_dps(prec))

    def _sympystr(self, printer):
        return f"root{self.index + 1}({self.name})"

    def _latex(self, printer):
        return rf"\rho_{{{self.index + 1}}}\left(P_{{\mathrm{{{self.name[1:]}}}}}\right)"


@functools.lru_cache(maxsize=4096)
def _root_value(polynomial: sympy.Expr, index: int, digits: int) -> sympy.Float | None:
    """The ``index``-th largest real root of a parameter-free polynomial, to ``digits`` digits."""
    coefficients = sympy.Poly(polynomial, VARIABLE).all_coeffs()
    if all(c.is_Rational for c in coefficients):
        roots = sympy.Poly(coefficients, VARIABLE).real_roots()  # ascending, with multiplicity
        if len(roots) != len(coefficients) - 1:
            return None
        return sympy.Float(roots[len(roots) - 1 - index].evalf(digits + 5), digits)
    with mpmath.workdps(2 * digits + 10):
        numbers = [mpmath.mpf(str(sympy.N(c, 2 * digits + 10))) for c in coefficients]
        values = mpmath.polyroots(numbers, maxsteps=200, extraprec=8 * digits)
        reals = sorted((mpmath.re(v) for v in values), reverse=True)
        return sympy.Float(reals[index], digits)


def vanishes_exactly(expr: sympy.Expr) -> bool | None:
    """Whether ``expr``, which holds one root only, is identically zero: its numerator reduced
    modulo the root's (irreducible) polynomial is zero exactly when it vanishes at the root for
    every parameter value. ``None`` when ``expr`` holds several roots (relations between them,
    such as the sum of one polynomial's roots, are not used, so their normal form is not unique)."""
    roots = roots_in(expr)
    if len(roots) != 1:
        return None
    generators = {root: sympy.Dummy(f"r{k}") for k, root in enumerate(sorted(roots, key=sympy.default_sort_key))}
    numerator, _ = sympy.sympify(expr).xreplace(generators).as_numer_denom()
    if not numerator.is_polynomial(*numerator.free_symbols):  # radicals beside the root
        return None
    return _reduced(numerator, generators) == 0


@functools.lru_cache(maxsize=1024)
def polynomial_name(polynomial: sympy.Expr) -> str:
    text = sympy.srepr(sympy.Poly(polynomial, VARIABLE).as_expr())
    return "P" + hashlib.sha256(text.encode()).hexdigest()[:6]


def roots_in(expr) -> set[ParametricRoot]:
    """The :class:`ParametricRoot` in ``expr`` (without walking into their polynomials)."""
    found: set = set()
    stack = [sympy.sympify(expr)]
    while stack:
        node = stack.pop()
        if isinstance(node, ParametricRoot):
            found.add(node)
        elif isinstance(node, sympy.MatrixBase):
            stack.extend(node)
        elif getattr(node, "args", None):
            stack.extend(node.args)
    return found


def has_roots(expr) -> bool:
    return bool(roots_in(expr))


def reduce_roots(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with its numerator and denominator reduced modulo each root's polynomial (a normal
    form in each root alone: polynomials of degree below the polynomial's). Polynomial arithmetic
    over ``Q`` with each root as a generator."""
    expr = sympy.sympify(expr)
    roots = sorted(roots_in(expr), key=sympy.default_sort_key)
    if not roots:
        return sympy.expand(expr)
    generators = {root: sympy.Dummy(f"r{k}") for k, root in enumerate(roots)}
    numerator, denominator = expr.xreplace(generators).as_numer_denom()
    if not all(e.is_polynomial(*e.free_symbols) for e in (numerator, denominator)):
        return expr  # square roots of roots (singular values) or radicals: left as they are
    back = {x: root for root, x in generators.items()}
    top, bottom = (_reduced(e, generators) for e in (numerator, denominator))
    if bottom.is_Number:
        return (top / bottom).xreplace(back)
    return (top.xreplace(back)) / bottom.xreplace(back)


def _reduced(expr: sympy.Expr, generators: dict) -> sympy.Expr:
    for root, x in generators.items():
        if x not in expr.free_symbols:
            continue
        others = sorted((expr.free_symbols | root.free_symbols) - {x}, key=lambda s: s.name)
        poly = sympy.Poly(expr, x, *others, domain=sympy.QQ)
        if poly.degree(x) < root.degree:
            continue
        minimal = sympy.Poly(root.polynomial.xreplace({VARIABLE: x}), x, *others, domain=sympy.QQ)
        expr = poly.rem(minimal).as_expr()
    return sympy.expand(expr)


def monic_coefficients(polynomial: sympy.Expr) -> list[sympy.Expr]:
    """The coefficients of ``polynomial`` in :data:`VARIABLE` after the leading one, divided by it
    (``z^n + c_1 z^(n-1) + ... + c_n``): polynomials in the parameters."""
    coefficients = sympy.Poly(polynomial, VARIABLE).all_coeffs()
    leading = coefficients[0]
    if leading.free_symbols:
        raise ValueError(f"{polynomial_name(polynomial)}: leading coefficient depends on the parameters")
    return [sympy.expand(c / leading) for c in coefficients[1:]]


#: Newton steps that polish each eigenvalue of a companion matrix on its polynomial: full float64
#: accuracy for simple roots
NEWTON_STEPS = 3


def sorted_roots(c, xp):
    """Every root of ``z^n + c_1 z^(n-1) + ... + c_n`` (``c`` of shape ``(..., n)``, real roots),
    largest first, with the array module ``xp`` (numpy, or jax.numpy inside compiled code): the
    eigenvalues of the companion matrix, polished by :data:`NEWTON_STEPS` Newton steps on the
    polynomial."""
    shape, degree = c.shape[:-1], c.shape[-1]
    rows = xp.arange(1, degree)
    if xp.__name__ == "numpy":
        companion = xp.zeros((*shape, degree, degree))
        companion[..., 0, :] = -c
        companion[..., rows, rows - 1] = 1.0
        found = xp.sort(xp.linalg.eigvals(companion).real, axis=-1)[..., ::-1]
    else:
        companion = xp.zeros((*shape, degree, degree), dtype=c.dtype).at[..., 0, :].set(-c)
        companion = companion.at[..., rows, rows - 1].set(1.0)
        found = xp.sort(xp.real(xp.linalg.eigvals(companion)), axis=-1)[..., ::-1]
    full = xp.concatenate([xp.ones((*shape, 1), dtype=c.dtype), c], -1)
    for _ in range(NEWTON_STEPS):
        value, slope = xp.zeros_like(found), xp.zeros_like(found)
        for k in range(degree + 1):
            slope = slope * found + value
            value = value * found + full[..., k : k + 1]
        found = found - xp.where(slope != 0, value / xp.where(slope != 0, slope, 1.0), 0.0)
    return found


#: integers above this enter compiled and numpy code as floats (:func:`in_float_range`)
MAX_EXACT_INTEGER = 2**53
#: the digits such a number keeps (float64 rounds it anyway)
FLOAT_RANGE_DIGITS = 60


def in_float_range(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every rational whose numerator or denominator exceeds ``MAX_EXACT_INTEGER``
    as a ``FLOAT_RANGE_DIGITS``-digit float: float64 arithmetic rounds it anyway, and an int that
    overflows int64 is refused by JAX and numpy (``sin(1e20)`` in a spec's data: numpy's ``sin``
    of the int 10**20 was a ``TypeError``); a function of such a number becomes its value."""
    big = {
        q: sympy.Float(q, FLOAT_RANGE_DIGITS)
        for q in expr.atoms(sympy.Rational)
        if max(abs(q.p), q.q) > MAX_EXACT_INTEGER
    }
    return expr.xreplace(big) if big else expr


def root_evaluator(roots, args, module: str = "jax"):
    """A function ``f(*values) -> list of arrays``: each root of ``roots`` at the parameter values
    ``values`` (in the order of ``args``), broadcast over their shapes, computed with ``module``
    (``"jax"`` inside compiled code, ``"numpy"`` on the host) by :func:`sorted_roots`; one
    polynomial serves all of its roots."""
    import importlib

    xp = importlib.import_module("jax.numpy" if module == "jax" else "numpy")
    polynomials: dict[sympy.Expr, list[int]] = {}
    for position, root in enumerate(roots):
        polynomials.setdefault(root.polynomial, []).append(position)
    evaluators = []
    for polynomial, positions in polynomials.items():
        compiled = sympy.lambdify(
            list(args), [in_float_range(c) for c in monic_coefficients(polynomial)], modules=module
        )
        evaluators.append((compiled, positions, [roots[p].index for p in positions]))

    def evaluate(*values):
        results: list = [None] * len(roots)
        for compiled, positions, indices in evaluators:
            raw = [xp.asarray(c, dtype=xp.float64) for c in compiled(*values)]
            shape = xp.broadcast_shapes(*(c.shape for c in raw))
            found = sorted_roots(xp.stack([xp.broadcast_to(r, shape) for r in raw], -1), xp)
            for position, index in zip(positions, indices):
                results[position] = found[..., index]
        return results

    return evaluate


def jax_root_values(roots, args):
    """:func:`root_evaluator` in JAX, for compiled code."""
    return root_evaluator(roots, args, "jax")


def numpy_evaluator(expr: sympy.Expr, symbols):
    """``f(*arrays) -> array``: ``expr`` evaluated in float64 with numpy, vectorised over the
    parameter arrays, each implicit root from its polynomial (:func:`root_evaluator`); NaN (or
    inf) where it has no finite real value."""
    import numpy as np

    roots = sorted(roots_in(expr), key=sympy.default_sort_key)
    dummies = [sympy.Dummy(f"r{k}") for k in range(len(roots))]
    # algebraic numbers with no radical form have no numpy printer: they enter as their values
    numbers = {r: r.evalf(30) for r in expr.atoms(sympy.CRootOf)}
    body = sympy.lambdify(
        [*symbols, *dummies], in_float_range(expr.xreplace({**numbers, **dict(zip(roots, dummies))})), modules="numpy"
    )
    root_values = root_evaluator(roots, symbols, "numpy")

    def evaluate(*values):
        arrays = [np.asarray(v, dtype=np.float64) for v in values]
        with np.errstate(all="ignore"):
            return np.asarray(body(*arrays, *root_values(*arrays)), dtype=np.float64)

    return evaluate
