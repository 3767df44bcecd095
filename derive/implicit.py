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


def jax_root_values(roots, args):
    """A function ``f(*values) -> list of jax arrays``: each root of ``roots`` at the parameter
    values ``values`` (in the order of ``args``), broadcast over their shapes. Each polynomial's
    roots are the eigenvalues of its companion matrix, sorted (largest first) and polished by
    Newton steps on the polynomial in float64; one polynomial serves all of its roots."""
    import jax.numpy as jnp

    polynomials: dict[sympy.Expr, list[int]] = {}
    for position, root in enumerate(roots):
        polynomials.setdefault(root.polynomial, []).append(position)
    evaluators = []
    for polynomial, positions in polynomials.items():
        coefficients = sympy.Poly(polynomial, VARIABLE).all_coeffs()
        leading = coefficients[0]
        if leading.free_symbols:
            raise ValueError(f"{polynomial_name(polynomial)}: leading coefficient depends on the parameters")
        normalised = [sympy.expand(c / leading) for c in coefficients[1:]]
        compiled = sympy.lambdify(list(args), normalised, modules="jax")
        evaluators.append((compiled, len(normalised), positions, [roots[p].index for p in positions]))

    def evaluate(*values):
        results: list = [None] * len(roots)
        for compiled, degree, positions, indices in evaluators:
            raw = [jnp.asarray(c, dtype=jnp.float64) for c in compiled(*values)]
            shape = jnp.broadcast_shapes(*(c.shape for c in raw))
            c = jnp.stack([jnp.broadcast_to(r, shape) for r in raw], -1)  # (..., degree): z^n + c1 z^(n-1) + ...
            companion = jnp.zeros((*shape, degree, degree), dtype=jnp.float64)
            companion = companion.at[..., 0, :].set(-c)
            if degree > 1:
                companion = companion.at[..., jnp.arange(1, degree), jnp.arange(degree - 1)].set(1.0)
            found = jnp.sort(jnp.real(jnp.linalg.eigvals(companion)), axis=-1)[..., ::-1]
            full = jnp.concatenate([jnp.ones((*shape, 1)), c], -1)
            for _ in range(3):  # Newton on the polynomial: full float64 accuracy for simple roots
                value = jnp.zeros_like(found)
                slope = jnp.zeros_like(found)
                for k in range(degree + 1):
                    slope = slope * found + value
                    value = value * found + full[..., k : k + 1]
                step = jnp.where(slope != 0, value / jnp.where(slope != 0, slope, 1.0), 0.0)
                found = found - step
            for position, index in zip(positions, indices):
                results[position] = found[..., index]
        return results

    return evaluate


def numpy_evaluator(expr: sympy.Expr, symbols):
    """``f(*arrays) -> array``: ``expr`` (holding implicit roots) evaluated in float64 with numpy,
    vectorised over the parameter arrays. Each root comes from the eigenvalues of its
    polynomial's companion matrix at every point, sorted, polished by Newton steps."""
    import numpy as np

    roots = sorted(roots_in(expr), key=sympy.default_sort_key)
    dummies = [sympy.Dummy(f"r{k}") for k in range(len(roots))]
    body = sympy.lambdify([*symbols, *dummies], expr.xreplace(dict(zip(roots, dummies))), modules="numpy")
    coefficient_functions = []
    for root in roots:
        coefficients = sympy.Poly(root.polynomial, VARIABLE).all_coeffs()
        normalised = [sympy.expand(c / coefficients[0]) for c in coefficients[1:]]
        coefficient_functions.append((sympy.lambdify(list(symbols), normalised, modules="numpy"), root.index))

    def evaluate(*values):
        arrays = [np.asarray(v, dtype=np.float64) for v in values]
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        root_values = []
        for function, index in coefficient_functions:
            c = np.stack([np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in function(*arrays)], -1)
            degree = c.shape[-1]
            companion = np.zeros((*shape, degree, degree))
            companion[..., 0, :] = -c
            companion[..., np.arange(1, degree), np.arange(degree - 1)] = 1.0
            found = np.sort(np.linalg.eigvals(companion).real, axis=-1)[..., ::-1]
            full = np.concatenate([np.ones((*shape, 1)), c], -1)
            for _ in range(3):
                value, slope = np.zeros_like(found), np.zeros_like(found)
                for k in range(degree + 1):
                    slope = slope * found + value
                    value = value * found + full[..., k : k + 1]
                found = found - np.divide(value, slope, out=np.zeros_like(value), where=slope != 0)
            root_values.append(found[..., index])
        with np.errstate(all="ignore"):
            return np.asarray(body(*arrays, *root_values), dtype=np.float64)

    return evaluate
