"""Integration of race ODEs with diffrax (Tsit5).

These ODEs are not stiff while they learn; near a minimum an explicit solver is held at its
stability limit (steps of about ``tau / s``), so long horizons are read off with an early stop
(:func:`numeric.race.ode_race`) rather than integrated step by step."""

from __future__ import annotations

from collections.abc import Callable

import diffrax
import jax.numpy as jnp
import numpy as np

from .types import ArrayLike, Float


def _solve(
    f, y0, t0, t1, args, saveat, rtol: float, atol: float, max_steps: int, dtmax: float | None, throw: bool = True
):
    """One Tsit5 solve of ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0`` to ``t1`` (x64, PID steps)."""
    return diffrax.diffeqsolve(
        diffrax.ODETerm(f),
        diffrax.Tsit5(),
        t0=jnp.float64(t0),
        t1=jnp.float64(t1),
        dt0=None,
        y0=jnp.asarray(y0, dtype=jnp.float64),
        args=args,
        saveat=saveat,
        stepsize_controller=diffrax.PIDController(
            rtol=rtol, atol=atol, dtmax=None if dtmax is None else jnp.float64(dtmax)
        ),
        max_steps=max_steps,
        throw=throw,
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
    return _solve(f, y0, ts[0], ts[-1], args, diffrax.SaveAt(ts=ts), rtol, atol, max_steps, dtmax).ys


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
    solution = _solve(f, y0, t0, t1, args, diffrax.SaveAt(steps=True), rtol, atol, steps, dtmax, throw=False)
    ts = np.asarray(solution.ts)
    keep = np.isfinite(ts)
    failed = not (solution.result == diffrax.RESULTS.successful or solution.result == diffrax.RESULTS.max_steps_reached)
    return ts[keep], np.asarray(solution.ys)[keep], failed


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
    return jnp.asarray(y)
