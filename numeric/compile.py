"""The one hand-off from SymPy expressions to jit-compiled JAX functions."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import sympy


def _names(symbols: Sequence[sympy.Symbol]) -> str:
    return ", ".join(s.name for s in symbols)


def compile_expressions(exprs, args: Sequence[sympy.Symbol], name: str = "compiled"):
    """Lambdify ``exprs`` over ``args`` with the JAX printer once, and jit once.

    The returned function takes the arguments positionally in the order of ``args``
    (written into its docstring) and returns a JAX array shaped like ``exprs``.
    Arguments may be arrays; use ``jax.vmap`` over the result to map over grids.
    """
    flat = list(exprs) if isinstance(exprs, (list, tuple)) else [exprs]
    # Exact algebraic numbers with no radical form (CRootOf) have no JAX printer: numbers start here.
    roots = set().union(*(sympy.sympify(e).atoms(sympy.CRootOf) for e in flat))
    if roots:
        numbers = {r: r.evalf(30) for r in roots}
        flat = [sympy.sympify(e).xreplace(numbers) for e in flat]
    raw = sympy.lambdify(list(args), flat, modules="jax", cse=True)
    single = not isinstance(exprs, (list, tuple))

    def evaluate(*values):
        results = [jnp.asarray(r, dtype=jnp.float64) for r in raw(*values)]
        shape = jnp.broadcast_shapes(*(r.shape for r in results))
        stacked = jnp.stack([jnp.broadcast_to(r, shape) for r in results])
        return stacked[0] if single else stacked

    evaluate.__name__ = name
    evaluate.__doc__ = f"{name}({_names(args)}) -> array of {len(flat)} expression(s)"
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
