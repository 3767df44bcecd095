"""The one hand-off from SymPy expressions to jit-compiled JAX functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from gdln.derive import cache, implicit
from gdln.derive.algebraic import CouplingNumber


def _names(symbols: Sequence[sympy.Symbol]) -> str:
    return ", ".join(s.name for s in symbols)


#: digits at which an exact constant is evaluated before it is rounded to float64. Mode vectors
#: with no radical form are polynomials in algebraic roots whose rational coefficients have
#: hundreds of digits; evaluated term by term in float64 they cancel (a unit vector of Section 4
#: came out with norm 0.80).
CONSTANT_DIGITS = 60


def algebraic_roots(expr: sympy.Basic) -> set[sympy.Expr]:
    """The ``CRootOf`` and named couplings (:class:`derive.algebraic.CouplingNumber`) in ``expr``,
    found without walking into their polynomials (``atoms`` does, and spends most of its time in
    their coefficients). Neither has a JAX printer: they enter compiled code as numbers."""
    found: set[sympy.Expr] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (sympy.CRootOf, CouplingNumber)):
            found.add(node)
        elif node.args:
            stack.extend(node.args)
    return found


def exact_constants(exprs: Sequence[sympy.Expr], digits: int = CONSTANT_DIGITS) -> np.ndarray:
    """Exact constants (no free symbols) rounded to float64 from a ``digits``-digit evaluation:
    each algebraic root is evaluated once, then every expression in multiple precision."""
    roots = set().union(*(algebraic_roots(sympy.sympify(e)) for e in exprs))
    numbers = {r: sympy.Float(r.evalf(digits), digits) for r in roots}
    return np.array([float(sympy.sympify(e).xreplace(numbers).evalf(digits // 2)) for e in exprs], dtype=np.float64)


#: integers beyond which compiled code receives a float: JAX reads a Python int as int64, and an
#: exact value fixed by ``--set`` (``0.8164965809277261`` is a ratio of 16-digit integers) gives
#: closed forms with integers far beyond it (``sqrt(807407407407407408627935019073569)``); one
#: rule with the numpy evaluators of :mod:`derive.implicit`
MAX_EXACT_INTEGER = implicit.MAX_EXACT_INTEGER
_in_float_range = implicit.in_float_range


def compile_expressions(
    exprs,
    args: Sequence[sympy.Symbol],
    name: str = "compiled",
    *,
    cache_key: str | None = None,
    backend: str = "jax",
):
    """Lambdify ``exprs`` over ``args`` once: with the JAX printer, jitted (``backend="jax"``, for
    compiled programs), or with numpy (``backend="numpy"``, for numbers on the host: no XLA
    compilation, which for large expressions takes seconds).

    The returned function takes the arguments positionally in the order of ``args``
    (written into its docstring) and returns an array shaped like ``exprs``, followed by the
    broadcast shape of the values (arguments may be arrays: every point of a grid in one call;
    or use ``jax.vmap`` over the JAX function). Expressions free of ``args`` are evaluated exactly
    first (:func:`exact_constants`), so their float64 values are correctly rounded whatever their
    form. With ``cache_key`` (a derivation's :func:`derive.cache.derivation_key`) those constants
    are kept under ``name`` in the derivation's cache entry, and a warm run evaluates nothing in
    SymPy.
    """
    if backend not in ("jax", "numpy"):
        raise ValueError(f"unknown backend {backend!r}")
    flat = [sympy.sympify(e) for e in (exprs if isinstance(exprs, (list, tuple)) else [exprs])]
    single = not isinstance(exprs, (list, tuple))
    memo_key = (tuple(flat), tuple(args), single, backend)
    if memo_key not in _COMPILED:
        _COMPILED[memo_key] = _compile(flat, args, single, name, cache_key, backend)
    return _COMPILED[memo_key]


#: compiled functions of this process by expressions, arguments and backend: networks that share
#: a pathway (the search's candidates, a task's networks and the data they all read) compile it once
_COMPILED: dict[tuple, Callable] = {}


def _compile(
    flat: list[sympy.Expr], args: Sequence[sympy.Symbol], single: bool, name: str, cache_key: str | None, backend: str
):

    def split():
        arguments = set(args)
        is_varying = np.array([bool(e.free_symbols & arguments) for e in flat], dtype=bool)
        constants = np.zeros(len(flat))
        constants[~is_varying] = exact_constants([e for e, v in zip(flat, is_varying) if not v])
        return {"constants": constants, "varying": np.flatnonzero(is_varying)}

    stored = cache.arrays(cache_key, f"constants_{name}", split)
    if len(stored["constants"]) != len(flat):  # the name was used for another set: never mix them
        stored = split()
    constants, varying = stored["constants"], [int(k) for k in stored["varying"]]
    # Exact algebraic numbers with no radical form (CRootOf) have no JAX printer: numbers start here.
    roots = set().union(*(algebraic_roots(flat[k]) for k in varying))
    numbers = {r: r.evalf(30) for r in roots}
    # Implicit roots of polynomials in the parameters (derive.implicit) are extra inputs, computed at
    # every point from their polynomial
    implicit_roots = sorted(set().union(*(implicit.roots_in(flat[k]) for k in varying)), key=sympy.default_sort_key)
    stand_ins = [sympy.Dummy(f"root{k}") for k in range(len(implicit_roots))]
    numbers.update(zip(implicit_roots, stand_ins))
    exprs = [_in_float_range(flat[k].xreplace(numbers)) for k in varying]
    raw = sympy.lambdify([*args, *stand_ins], exprs, modules=backend, cse=True)
    root_values = implicit.root_evaluator(implicit_roots, args, backend) if implicit_roots else None
    xp = jnp if backend == "jax" else np

    def evaluate(*values):
        extra = root_values(*values) if root_values is not None else []
        results = [xp.asarray(r, dtype=xp.float64) for r in raw(*values, *extra)] if varying else []
        shape = xp.broadcast_shapes(*(r.shape for r in results))
        if backend == "numpy":
            stacked = np.empty((len(flat), *shape))
            stacked[...] = constants.reshape(-1, *([1] * len(shape)))
            for k, r in zip(varying, results):
                stacked[k] = r
            return stacked[0] if single else stacked
        stacked = jnp.broadcast_to(jnp.asarray(constants), (*shape, len(flat)))
        if varying:
            stacked = stacked.at[..., jnp.asarray(varying)].set(
                jnp.stack([jnp.broadcast_to(r, shape) for r in results], -1)
            )
        stacked = jnp.moveaxis(stacked, -1, 0)
        return stacked[0] if single else stacked

    evaluate.__name__ = name
    evaluate.__doc__ = f"{name}({_names(args)}) -> array of {len(flat)} expression(s)"
    if backend == "numpy":

        def quiet(*values):
            with np.errstate(all="ignore"):  # a value with no finite number is NaN or inf, as in JAX
                return evaluate(*(np.asarray(v, dtype=np.float64) for v in values))

        quiet.__name__, quiet.__doc__ = evaluate.__name__, evaluate.__doc__
        return quiet
    return jax.jit(evaluate)


def generate_ode_function(
    rates: Sequence[sympy.Expr], state: Sequence[sympy.Symbol], args: Sequence[sympy.Symbol], name: str = "race_ode"
):
    """``f(t, y, args)`` for ``diffrax.ODETerm`` from ``dy/dt = rates(y; args)``.

    ``y`` holds ``state`` in order and ``args`` is a tuple in the order of ``args``;
    both orders are written into the function's docstring.
    """
    compiled = compile_expressions(list(rates), list(state) + list(args), name)

    def f(t, y, args_values):
        return compiled(*[y[i] for i in range(len(state))], *args_values)

    f.__name__ = name
    f.__doc__ = f"{name}(t, y, args): dy/dt of the race reduction.\ny = ({_names(state)})\nargs = ({_names(args)})"
    return f
