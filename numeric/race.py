"""Numbers from a :class:`derive.NetworkDerivation`: strengths, loss curves, crossing times."""

from __future__ import annotations

from functools import cached_property

import jax
import jax.numpy as jnp

from derive.derivation import TAU, TIME, NetworkDerivation

from .compile import compile_expressions, generate_ode_function
from .integrate import integrate_ode


class CompiledNetwork:
    """Jit-compiled closed forms and race ODE of one network; compiled once, evaluated anywhere.

    Argument conventions: ``values`` is a sequence of parameter values in the order of
    ``derivation.parameters``; ``a0`` holds one initial strength per mode in the order of
    ``derivation.mode_refs``; ``tau = 1/learning_rate``.
    """

    def __init__(self, derivation: NetworkDerivation):
        self.derivation = derivation
        self.parameters = derivation.parameters
        self.ode = generate_ode_function(derivation.rates, derivation.strengths, (TAU, *self.parameters), f"race_{derivation.network.name}")
        self._loss_of_strengths = compile_expressions(derivation.loss_in_strengths, [*derivation.strengths, *self.parameters], "loss_of_strengths")

    @cached_property
    def _closed_strengths(self):
        d = self.derivation
        return compile_expressions(list(d.closed_forms), [TIME, TAU, *self.parameters, *d.initial_strengths], "closed_strengths")

    @cached_property
    def _mode_values(self):
        d = self.derivation
        exprs = []
        for ref in d.mode_refs:
            mode = d.mode(ref)
            exprs += [mode.s, mode.d, *mode.u, *mode.v]
        return compile_expressions(exprs, list(self.parameters), "mode_values")

    def modes(self, values):
        """Numeric ``(s, d, u, v)`` of every mode at ``values``."""
        flat = self._mode_values(*values)
        out, position = [], 0
        for ref in self.derivation.mode_refs:
            mode = self.derivation.mode(ref)
            nu, nv = len(mode.u), len(mode.v)
            s, d = flat[position], flat[position + 1]
            u = flat[position + 2 : position + 2 + nu]
            v = flat[position + 2 + nu : position + 2 + nu + nv]
            out.append((s, d, u, v))
            position += 2 + nu + nv
        return out

    @property
    def uses_closed_form(self) -> bool:
        return self.derivation.closed_forms is not None

    def strengths(self, ts, a0, tau, values):
        """Mode strengths at times ``ts``, shape ``(len(ts), modes)``."""
        ts = jnp.asarray(ts, dtype=jnp.float64)
        a0 = jnp.asarray(a0, dtype=jnp.float64)
        if self.uses_closed_form:
            columns = self._closed_strengths(ts, tau, *values, *a0)
            return jnp.reshape(columns, (len(self.derivation.mode_refs), -1)).T
        return integrate_ode(self.ode, a0, ts, (jnp.float64(tau), *[jnp.float64(v) for v in values]))

    def loss_of_strengths(self, strengths, values):
        return self._loss_of_strengths(*[strengths[..., k] for k in range(strengths.shape[-1])], *values)

    def loss_curve(self, ts, a0, tau, values):
        """Predicted loss at times ``ts`` (epochs)."""
        return self.loss_of_strengths(self.strengths(ts, a0, tau, values), values)


@jax.jit
def _first_crossing(curve, level):
    below = curve <= level
    index = jnp.argmax(below)
    previous = jnp.maximum(index - 1, 0)
    span = curve[previous] - curve[index]
    fraction = jnp.where(span > 0, (curve[previous] - level) / jnp.where(span > 0, span, 1.0), 0.0)
    return jnp.where(jnp.any(below), previous + fraction * (index - previous), jnp.nan)


def crossing_time(ts, curve, fraction: float) -> float:
    """First time at which ``curve`` falls to ``fraction`` of its initial value (linear
    interpolation between samples); NaN if it never does within ``ts``."""
    ts = jnp.asarray(ts, dtype=jnp.float64)
    curve = jnp.asarray(curve, dtype=jnp.float64)
    position = _first_crossing(curve, fraction * curve[0])
    return float(jnp.interp(position, jnp.arange(ts.shape[0], dtype=jnp.float64), ts)) if jnp.isfinite(position) else float("nan")


def closed_form_maps(compiled: CompiledNetwork, ts, a0, tau, values) -> dict:
    """Per pathway name, ``W_p(t) = sum_k a_k(t) u_k v_k^T`` from the closed forms (or race ODE)."""
    strengths = compiled.strengths(ts, a0, tau, values)
    maps: dict = {}
    for column, (ref, (_, _, u, v)) in enumerate(zip(compiled.derivation.mode_refs, compiled.modes(values))):
        name = compiled.derivation.network.pathways[ref.pathway].name
        term = strengths[:, column, None, None] * jnp.outer(u, v)[None]
        maps[name] = maps[name] + term if name in maps else term
    return maps
