"""Integration of race ODEs with diffrax (Tsit5; these ODEs are not stiff)."""

from __future__ import annotations

import diffrax
import jax.numpy as jnp


def integrate_ode(f, y0, ts, args, rtol: float = 1e-10, atol: float = 1e-14, max_steps: int = 1_000_000):
    """Solve ``dy/dt = f(t, y, args)`` from ``y0`` at ``ts[0]``; returns ``y`` at every ``ts`` (rows)."""
    ts = jnp.asarray(ts, dtype=jnp.float64)
    solution = diffrax.diffeqsolve(
        diffrax.ODETerm(f),
        diffrax.Tsit5(),
        t0=ts[0],
        t1=ts[-1],
        dt0=None,
        y0=jnp.asarray(y0, dtype=jnp.float64),
        args=args,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=max_steps,
    )
    return solution.ys
