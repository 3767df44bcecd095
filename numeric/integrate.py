"""Integration of race ODEs with diffrax (Tsit5).

These ODEs are not stiff while they learn; near a minimum an explicit solver is held at its
stability limit (steps of about ``tau / s``), so long horizons are read off with an early stop
(:func:`numeric.race.ode_race`) rather than integrated step by step."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from .types import ArrayLike, Float

#: per vector field, its jit-compiled solves by configuration: one ``jax.jit`` around diffrax, so
#: a call goes through jit's dispatch rather than diffrax's ``filter_jit``, which partitions and
#: hashes every argument on each call (the search's races call it thousands of times).
_SOLVERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _solver(f, every_step: bool, rtol: float, atol: float, max_steps: int, bounded: bool, throw: bool):
    """``run(y0, t0, t1, args, ts, dtmax) -> (ts, ys, result)``: one Tsit5 solve of
    ``dy/dt = f(t, y, args)`` (x64, PID steps), saved at every accepted step or at ``ts``."""
    known = _SOLVERS.setdefault(f, {})
    key = (every_step, rtol, atol, max_steps, bounded, throw)
    if key not in known:

        def run(y0, t0, t1, args, ts, dtmax):
            solution = diffrax.diffeqsolve(
                diffrax.ODETerm(f),
                diffrax.Tsit5(),
                t0=t0,
                t1=t1,
                dt0=None,
                y0=y0,
                args=args,
                saveat=diffrax.SaveAt(steps=True) if every_step else diffrax.SaveAt(ts=ts),
                stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax if bounded else None),
                max_steps=max_steps,
                throw=throw,
            )
            return solution.ts, solution.ys, solution.result

        known[key] = jax.jit(run)
    return known[key]


def _solve(f, y0, t0, t1, args, ts, rtol: float, atol: float, max_steps: int, dtmax: float | None, throw: bool = True):
    """Solve from ``y0`` at ``t0`` to ``t1``; saved at ``ts``, or at every accepted step when ``ts`` is ``None``."""
    run = _solver(f, ts is None, float(rtol), float(atol), int(max_steps), dtmax is not None, throw)
    return run(
        np.asarray(y0, dtype=np.float64),
        jnp.float64(t0),
        jnp.float64(t1),
        args,
        jnp.zeros(1) if ts is None else ts,
        jnp.float64(0.0 if dtmax is None else dtmax),
    )


def integrate_ode(
    f: Callable,
    y0: Float[ArrayLike, " state"],
    ts: Float[ArrayLike, " T"],
    args,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    max_steps: int = 1_000_000,
    dtmax: float | None = None,
):
    """Solve ``dy/dt = f(t, y, args)`` from ``y0`` at ``ts[0]``; returns ``y`` at every ``ts`` (rows)."""
    ts = jnp.asarray(ts, dtype=jnp.float64)
    return _solve(f, y0, ts[0], ts[-1], args, ts, rtol, atol, max_steps, dtmax)[1]


_STEPS_PER_SEGMENT = 1024


def solver_steps(
    f,
    y0,
    t0,
    t1,
    args,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    steps: int = _STEPS_PER_SEGMENT,
    dtmax: float | None = None,
):
    """Up to ``steps`` accepted Tsit5 steps of ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0``
    towards ``t1``: ``(ts, ys)`` at the end of every accepted step (numpy, finite rows only).

    The step sequence depends only on ``f``, ``y0``, ``t0`` and the tolerances, never on
    ``t1`` beyond clipping the last step at it, so quantities read off these steps do not
    depend on the horizon. Call again from the last row to continue."""
    times, states, result = _solve(f, y0, t0, t1, args, None, rtol, atol, steps, dtmax, throw=False)
    ts = np.asarray(times)
    keep = np.isfinite(ts)
    failed = not (result == diffrax.RESULTS.successful or result == diffrax.RESULTS.max_steps_reached)
    return ts[keep], np.asarray(states)[keep], failed


def integrate_to(f, y0, t0, t1, args, rtol: float = 1e-10, atol: float = 1e-14, dtmax: float | None = None):
    """``y(t1)`` of ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0``.

    Runs through :func:`solver_steps`, segment by segment, so it reuses that solve's trace and
    compiled program instead of tracing a second diffrax solve per ODE (about a second each)."""
    t, y = float(t0), np.asarray(y0, dtype=np.float64)
    while t < t1:
        ts, ys, failed = solver_steps(f, y, t, t1, args, rtol, atol, dtmax=dtmax)
        if failed or not len(ts):
            raise RuntimeError(f"the solver failed between epochs {t:.6g} and {t1:.6g}")
        t, y = float(ts[-1]), ys[-1]
    return y
