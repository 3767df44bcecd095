"""Numbers from a :class:`derive.NetworkDerivation`: strengths, loss curves, crossing times.

Crossing times of predictions are solved on the dynamics, never read off a sampling grid
(:meth:`CompiledNetwork.race`, :func:`ode_race`); seeds enter as ``log a0`` so that init scales
whose ``a0 = units init^2 / 2`` underflows still give the right answer. :func:`crossing_time`
stays for sampled curves (trained networks)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import sympy

from gdln.derive.cache import key_of
from gdln.derive.derivation import TAU, TIME, NetworkDerivation

from .compile import compile_expressions, generate_ode_function
from .integrate import integrate_ode, integrate_to, solver_steps
from .types import Array, ArrayLike, Float, Scalar, Times, Values

#: brentq's relative tolerance on crossing times (its floor is 4 machine epsilons)
CROSSING_RTOL = 1e-13
#: an ODE race stops before its horizon once the loss is this close (relative to the initial
#: loss) to the least loss the network can reach: the loss decreases monotonically, so it stays
#: within this of its value there until the horizon
SETTLED_TOLERANCE = 1e-10
#: accepted solver steps an ODE race may take before it gives up short of its horizon
STEP_BUDGET = 200_000


def log_mode_strength(s, d, log_a0, t, tau, xp=jnp):
    """:func:`derive.formulas.mode_strength` with ``a0 = exp(log_a0)``, for seeds below float range.

    ``mode_strength = (s/d) / (1 + c e^(-x))`` with ``c = s/(d a0) - 1`` and ``x = 2 s t / tau``
    (:func:`logistic_factors` and :func:`strength_from_factors`). ``xp`` is the array backend,
    written once for both: ``jax.numpy`` inside compiled programs, ``numpy`` for a few host values
    (each eager ``jax.numpy`` operation is a program of its own to compile)."""
    return strength_from_factors(logistic_factors(s, d, log_a0, tau, xp), t, xp)


def logistic_factors(s, d, log_a0, tau, xp=jnp):
    """What a mode's logistic needs of its parameters, once for every ``t``: ``(s/d, r, 2 s / tau)``
    with ``r = log(s/d) - log a0``, formed without ``a0`` or ``s/(d a0)``, which underflow or
    overflow for ``a0`` near or below 1e-308 (``r = inf`` for ``a0 = 0``)."""
    ratio = s / d
    return ratio, xp.log(ratio) - log_a0, 2 * s / tau


def strength_from_factors(factors, t, xp=jnp):
    """The logistic ``(s/d) / (1 + c e^(-x))`` from :func:`logistic_factors`, ``c = e^r - 1``,
    ``x = 2 s t / tau``, as ``(s/d) / (-expm1(-x) + e^(r - x))``: the same number, a sum of two
    terms that are never negative for ``t >= 0``, so nothing cancels. Forming ``1 + c e^(-x)``
    cancels where the seed lies above ``s/d`` (``c`` in ``(-1, 0)``): ``1 + c`` loses every digit
    once ``a0 d/s`` falls below 1e-16 of 1 minus it, and is 0 when ``e^r`` does (a data scale of 1e25
    gave ``s/d = 2e-25`` against ``a0 = 3e-7``: an infinite strength at ``t = 0``, a NaN loss, and
    every network raced as ``never``). Where ``e^(r - x)`` overflows the strength is 0, which is
    ``s/d`` times less than ``e^-709``. Nothing here is NaN for finite ``t >= 0``, under
    ``JAX_DEBUG_NANS`` either: no branch of a ``where`` is computed to be discarded."""
    ratio, r, rate = factors
    x = rate * t
    return ratio / (-xp.expm1(-x) + xp.exp(r - x))


@dataclass
class RaceResult:
    """When a network's predicted loss crosses fractions of its initial loss.

    ``crossings[f]`` is the epoch at which the loss first falls to ``f`` times the initial loss,
    ``None`` when that is not within ``horizon`` and NaN when the prediction is not finite;
    ``final_loss`` is the loss at the horizon over the initial loss (NaN when not finite).
    ``stopped_at`` is set when an ODE could not be followed to the horizon (step budget spent
    without settling, solver failure, a loss that stops being finite): crossings after it are
    unknown (``None``), ``final_loss`` is read there, and ``notes`` says why."""

    initial_loss: float
    crossings: dict
    final_loss: float
    horizon: float
    stopped_at: float | None = None
    notes: list = field(default_factory=list)


def _brentq(function, low: float, high: float) -> float:
    """SciPy's brentq at the race's tolerance, imported when a crossing is first solved: importing
    ``scipy.optimize`` costs every gdln process about 0.2 s, and closed-form races never need it."""
    from scipy.optimize import brentq

    return brentq(function, low, high, xtol=1e-300, rtol=CROSSING_RTOL, maxiter=500)


def monotone_crossing(loss_at: Callable[[float], float], level: float, scale: float, horizon: float):
    """First ``t`` in ``[0, horizon]`` with ``loss_at(t) = level``, for a loss that decreases
    monotonically from ``loss_at(0) > level``: bracketed by doubling from ``scale``, then brentq.
    ``None`` when the loss is still above ``level`` at the horizon, NaN when it is not finite."""
    low, high = 0.0, min(max(scale, 1e-300), horizon)
    while True:
        value = loss_at(high)
        if not math.isfinite(value):
            return math.nan
        if value <= level:
            break
        if high >= horizon:
            return None
        low, high = high, min(2 * high, horizon)
    if value == level:
        return high
    return _brentq(lambda t: loss_at(t) - level, low, high)


def ode_race(
    f,
    y0,
    t0: float,
    args,
    loss_of_state,
    initial_loss: float,
    fractions: Sequence[float],
    horizon: float,
    minimum_loss=None,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    budget: int = STEP_BUDGET,
) -> RaceResult:
    """Crossings of ``fractions * initial_loss`` by the loss along ``dy/dt = f(t, y, args)`` from
    ``y0`` at ``t0``, with no sampling grid.

    Tsit5 runs in segments of accepted steps (:func:`numeric.integrate.solver_steps`); the loss
    at each step end brackets a crossing within one step, and brentq solves it on fresh solves
    from that step's start, so each crossing is as exact as the solver's tolerances. The step
    sequence does not depend on the horizon, hence neither do the crossings. The loss of a
    gradient flow decreases monotonically, so the run stops before the horizon once the loss is
    within ``SETTLED_TOLERANCE * initial_loss`` of ``minimum_loss`` (the least loss the network can
    reach: a number, ``None`` if unknown, or a function computing it when first needed) and every
    pending level lies below that least loss; explicit solvers crawl at their stability limit near
    a minimum, which would make long horizons unaffordable otherwise."""
    result = RaceResult(float(initial_loss), {}, math.nan, float(horizon))
    if not (math.isfinite(initial_loss) and initial_loss > 0):
        result.crossings = {fraction: math.nan for fraction in fractions}
        result.notes.append("the initial loss is not finite and positive")
        return result
    pending = {fraction: fraction * initial_loss for fraction in fractions}
    least = [minimum_loss] if not callable(minimum_loss) else []

    def minimum():
        if not least:
            least.append(minimum_loss())
        return least[0]

    t, y, steps = float(t0), np.asarray(y0, dtype=np.float64), 0
    loss = float(loss_of_state(np.asarray(y)[None])[0])
    while t < horizon:
        ts, ys, failed = solver_steps(f, y, t, horizon, args, rtol, atol)
        losses = np.asarray(loss_of_state(np.asarray(ys))) if len(ts) else np.zeros(0)
        bad = ~np.isfinite(losses)
        if failed or bad.any():
            cut = int(np.argmax(bad)) if bad.any() else len(ts)
            ts, ys, losses = ts[:cut], ys[:cut], losses[:cut]
        for fraction, level in list(pending.items()):
            below = np.nonzero(losses <= level)[0]
            if len(below) == 0:
                continue
            i = int(below[0])
            t_start, y_start = (t, y) if i == 0 else (float(ts[i - 1]), ys[i - 1])

            def excess(time, t_start=t_start, y_start=y_start, level=level):
                if time <= t_start:
                    return float(loss_of_state(np.asarray(y_start)[None])[0]) - level
                state = integrate_to(f, y_start, t_start, time, args, rtol, atol)
                return float(loss_of_state(state[None])[0]) - level

            end = float(ts[i])
            result.crossings[fraction] = end if losses[i] == level else _brentq(excess, t_start, end)
            pending.pop(fraction)
        if len(ts):
            t, y, loss = float(ts[-1]), ys[-1], float(losses[-1])
            steps += len(ts)
        if bad.any():
            result.notes.append(f"the predicted loss is not finite after epoch {t:.6g}")
            result.stopped_at = t
            loss = math.nan
            break
        if failed:
            result.notes.append(f"the solver failed at epoch {t:.6g}")
            result.stopped_at = t
            break
        if not len(ts):
            # a whole segment of rejected steps: the step the tolerances ask for is below what the
            # solver can take here (a data value of 1e20 beside ones makes the flow stiff by 1e40).
            # Called again from the same state it does the same, so this loop spun forever
            result.notes.append(f"the solver could not take a step at epoch {t:.6g} (the flow is too stiff)")
            result.stopped_at = t
            break
        if t >= horizon:
            break
        if (
            minimum() is not None
            and loss - minimum() <= SETTLED_TOLERANCE * initial_loss
            and all(level < minimum() for level in pending.values())
        ):
            break  # settled: within the tolerance of the least loss, and the pending levels lie below it
        if steps >= budget:
            result.stopped_at = t
            result.notes.append(f"stopped after {steps} solver steps at epoch {t:.6g}, short of the horizon")
            break
    for fraction in pending:
        result.crossings[fraction] = None
    result.crossings = {fraction: result.crossings[fraction] for fraction in fractions}
    result.final_loss = loss / initial_loss
    return result


@dataclass
class RaceODE:
    """One point's race as :func:`ode_race` reads it: ``dy/dt = f(t, y, args)`` from ``y0`` at ``t0``,
    built by :meth:`CompiledNetwork.race_ode` and :meth:`numeric.reduced_flow.ReducedFlow.race_ode`.

    ``loss(y, *loss_args)`` is one state's loss (traceable: :func:`numeric.batched_race.ode_races`
    evaluates it inside its program), ``loss_of_states(ys)`` the loss of many rows on the host
    (:func:`ode_race`); ``minimum_loss()`` the least loss the network can reach (``None`` if
    unknown), computed when first needed; ``atol`` may differ from point to point (a flow scales
    it to its smallest starting component), ``rtol`` is one per program."""

    f: Callable
    y0: np.ndarray
    t0: float
    args: Any
    loss: Callable
    loss_args: Any
    loss_of_states: Callable
    initial_loss: float
    minimum_loss: Callable[[], float | None]
    rtol: float = 1e-10
    atol: float = 1e-14

    def race(self, fractions: Sequence[float], horizon: float, budget: int = STEP_BUDGET) -> RaceResult:
        """:func:`ode_race` of this point."""
        return ode_race(
            self.f,
            self.y0,
            self.t0,
            self.args,
            self.loss_of_states,
            self.initial_loss,
            fractions,
            horizon,
            self.minimum_loss,
            rtol=self.rtol,
            atol=self.atol,
            budget=budget,
        )


class CompiledNetwork:
    """Jit-compiled closed forms and race ODE of one network; compiled once, evaluated anywhere.

    Argument conventions: ``values`` is a sequence of parameter values in the order of
    ``derivation.parameters``; ``a0`` holds one initial strength per mode in the order of
    ``derivation.mode_refs``; ``tau = 1/learning_rate``.
    """

    def __init__(self, derivation: NetworkDerivation):
        self.derivation = derivation
        self.parameters = derivation.parameters
        self.ode = generate_ode_function(
            derivation.rates, derivation.strengths, (TAU, *self.parameters), f"race_{derivation.network.name}"
        )
        #: the loss from each mode's strength then each parameter, positionally (compiled)
        self.loss_of_mode_strengths = compile_expressions(
            derivation.loss_in_strengths, [*derivation.strengths, *self.parameters], "loss_of_strengths"
        )
        #: programs other modules build on this network (the sweep's batched race and its
        #: descent's loss), kept while the network lives: by the builder's name
        self.programs: dict[str, Any] = {}

    @cached_property
    def _closed_strengths(self):
        d = self.derivation
        return compile_expressions(
            list(d.closed_forms), [TIME, TAU, *self.parameters, *d.initial_strengths], "closed_strengths"
        )

    @cached_property
    def mode_values(self):
        d = self.derivation
        exprs = []
        for ref in d.mode_refs:
            mode = d.mode(ref)
            exprs += [mode.s, mode.d, *mode.u, *mode.v]
        return compile_expressions(exprs, list(self.parameters), "mode_values", cache_key=key_of(d))

    def modes(self, values: Values) -> list[tuple[Scalar, Scalar, Float[Array, " out"], Float[Array, " inp"]]]:
        """Numeric ``(s, d, u, v)`` of every mode at ``values``."""
        flat = self.mode_values(*values)
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

    def strengths(
        self, ts: Times, a0: Float[ArrayLike, " modes"], tau: float, values: Values
    ) -> Float[Array, "T modes"]:
        """Mode strengths at times ``ts``, shape ``(len(ts), modes)``."""
        ts = jnp.asarray(ts, dtype=jnp.float64)
        a0 = jnp.asarray(a0, dtype=jnp.float64)
        if self.uses_closed_form:
            columns = self._closed_strengths(ts, tau, *values, *a0)
            return jnp.reshape(columns, (len(self.derivation.mode_refs), -1)).T
        return integrate_ode(self.ode, a0, ts, (jnp.float64(tau), *[jnp.float64(v) for v in values]))

    def loss_of_strengths(self, strengths, values):
        return self.loss_of_mode_strengths(*[strengths[..., k] for k in range(strengths.shape[-1])], *values)

    def loss_curve(self, ts: Times, a0: Float[ArrayLike, " modes"], tau: float, values: Values) -> Float[Array, " T"]:
        """Predicted loss at times ``ts`` (epochs)."""
        return self.loss_of_strengths(self.strengths(ts, a0, tau, values), values)

    # --- seeds as logarithms; crossing times without a grid ---------------------------------
    @cached_property
    def logistic_values(self):
        d = self.derivation
        if d.cross_correlations:
            coupling = d.group_reduction.coupling
            variances = [coupling[d.group_variable(ref), d.group_variable(ref)] for ref in d.mode_refs]
        else:
            variances = [d.mode(ref).d for ref in d.mode_refs]
        return compile_expressions(
            [*[d.mode(ref).s for ref in d.mode_refs], *variances],
            list(self.parameters),
            "logistic_values",
            cache_key=key_of(d),
        )

    def logistic_parameters(self, values, tau: float = 1.0):
        """``(s, d)`` per mode with ``a_k(t) = formulas.mode_strength(s_k, d_k, a0_k, t, tau)`` the
        closed forms: ``d`` is the mode's input variance, or for interacting symmetric pathways the
        diagonal of the group coupling (as :attr:`derive.derivation.NetworkDerivation.closed_forms`).
        Checked against the compiled closed forms themselves at a representable seed, so that
        the log-space evaluation can never drift from the derivation."""
        count = len(self.derivation.mode_refs)
        flat = np.asarray(self.logistic_values(*values), dtype=np.float64)
        s, d = flat[:count], flat[count:]
        if np.all(np.isfinite(s / d)) and np.all(s > 0) and np.all(d > 0):
            a0 = s / d * 1e-3
            ts = jnp.array([0.0, 3.0 * tau / np.max(s), 5.0 * tau / np.min(s)])
            expected = np.asarray(self.strengths(ts, a0, tau, values))
            with np.errstate(over="ignore", divide="ignore"):  # inf and -inf where the device gives them too
                got = log_mode_strength(s, d, np.log(a0), np.asarray(ts)[:, None], tau, xp=np)
            if not np.allclose(got, expected, rtol=1e-8, atol=0.0):
                raise RuntimeError(
                    f"{self.derivation.network.name}: closed forms are not formulas.mode_strength in the (s, d) read off the derivation"
                )
        return s, d

    @cached_property
    def log_ode(self):
        """``f(t, y, args)`` of the race ODE in ``y_k = log a_k``: ``dy_k/dt = (da_k/dt) / a_k``,
        divided and rewritten with ``a = exp(y)`` symbolically, so ``a^(2-2/D) / a`` becomes
        ``exp((1-2/D) y)`` and nothing underflows for seeds far below float range. Exact: no
        linearisation and no shift in time."""
        d = self.derivation
        logs = [sympy.Symbol(f"y_{k}", real=True) for k in range(len(d.strengths))]
        as_exp = {a: sympy.exp(y) for a, y in zip(d.strengths, logs)}
        rates = [(rate / a).xreplace(as_exp) for rate, a in zip(d.rates, d.strengths)]
        return generate_ode_function(rates, logs, (TAU, *self.parameters), f"log_race_{d.network.name}")

    @cached_property
    def _loss_at_time(self):
        def loss(t, s, d, log_a0, tau, values):
            a = log_mode_strength(s, d, log_a0, t, tau)
            return self.loss_of_mode_strengths(*[a[k] for k in range(a.shape[0])], *values)

        return jax.jit(loss)

    def _loss_of_log_state(self, y, *values):
        """The loss of one state ``y = log a`` (:attr:`log_ode`) at ``values``."""
        return self.loss_of_mode_strengths(*[jnp.exp(y[k]) for k in range(y.shape[0])], *values)

    @cached_property
    def _loss_of_logs(self):
        return jax.jit(jax.vmap(lambda y, values: self._loss_of_log_state(y, *values), in_axes=(0, None)))

    def strengths_from_log(
        self, ts: Times, log_a0: Float[ArrayLike, " modes"], tau: float, values: Values
    ) -> Float[Array, "T modes"]:
        """Mode strengths at ``ts`` from ``log a0``: the closed forms in log space
        (:func:`log_mode_strength`), or the race ODE integrated in ``log a`` (:attr:`log_ode`)."""
        ts = jnp.asarray(ts, dtype=jnp.float64)
        log_a0 = jnp.asarray(log_a0, dtype=jnp.float64)
        if self.uses_closed_form:
            s, d = self.logistic_parameters(values, tau)
            return log_mode_strength(jnp.asarray(s), jnp.asarray(d), log_a0, ts[:, None], tau)
        return jnp.exp(integrate_ode(self.log_ode, log_a0, ts, (jnp.float64(tau), *[jnp.float64(v) for v in values])))

    def loss_curve_from_log(
        self, ts: Times, log_a0: Float[ArrayLike, " modes"], tau: float, values: Values
    ) -> Float[Array, " T"]:
        """Predicted loss at ``ts`` with seeds given as ``log a0`` (see :meth:`strengths_from_log`)."""
        return self.loss_of_strengths(self.strengths_from_log(ts, log_a0, tau, values), values)

    def minimum_loss(self, values) -> float | None:
        """The least loss of the quadratic ``L(a)`` when its minimiser has every ``a_k > 0`` (where a
        flow from positive seeds ends), else ``None``."""
        values = jnp.asarray([float(v) for v in values], dtype=jnp.float64)
        gradient, hessian = (np.asarray(x) for x in self._quadratic_terms(values))
        if not (np.all(np.isfinite(gradient)) and np.all(np.isfinite(hessian))):
            return None
        best = np.linalg.lstsq(hessian, -gradient, rcond=None)[0]
        return float(self._loss_of_strength_vector(jnp.asarray(best), values)) if np.all(best > 0) else None

    def _loss_of_strength_vector(self, a, values):
        return self.loss_of_mode_strengths(
            *[a[k] for k in range(a.shape[0])], *[values[k] for k in range(values.shape[0])]
        )

    @cached_property
    def _quadratic_terms(self):
        """``values -> (gradient, Hessian)`` of ``L(a)`` at ``a = 0``, compiled once (the sweep asks at every point)."""
        count = len(self.derivation.mode_refs)

        def terms(values):
            zero = jnp.zeros(count, dtype=jnp.float64)
            loss = lambda a: self._loss_of_strength_vector(a, values)  # noqa: E731
            return jax.grad(loss)(zero), jax.hessian(loss)(zero)

        return jax.jit(terms)

    def race_ode(self, log_a0: Float[ArrayLike, " modes"], tau: float, values: Values, rtol: float = 1e-10) -> RaceODE:
        """The race ODE in ``log a`` (:attr:`log_ode`) from seeds ``log a0``, as :func:`ode_race`
        reads it, solved to ``rtol``."""
        values = tuple(float(v) for v in values)
        log_a0 = np.asarray(log_a0, dtype=np.float64)
        loss_args = tuple(jnp.float64(v) for v in values)

        def loss_of_states(ys):
            return self._loss_of_logs(ys, values)

        return RaceODE(
            f=self.log_ode,
            y0=log_a0,
            t0=0.0,
            args=(jnp.float64(tau), *loss_args),
            loss=self._loss_of_log_state,
            loss_args=loss_args,
            loss_of_states=loss_of_states,
            initial_loss=float(loss_of_states(jnp.asarray(log_a0)[None])[0]),
            minimum_loss=lambda: self.minimum_loss(values),
            rtol=rtol,
        )

    def race(
        self,
        log_a0: Float[ArrayLike, " modes"],
        tau: float,
        values: Values,
        horizon: float,
        fractions: Sequence[float] = (0.5, 0.1),
    ) -> RaceResult:
        """Epochs at which the predicted loss falls to ``fractions`` of its initial loss, and the
        loss at ``horizon``, from seeds ``log a0`` and without a sampling grid.

        Closed forms: the loss is a function of ``t`` through the logistics (:func:`log_mode_strength`)
        and decreases monotonically, so each crossing is bracketed by doubling from the natural
        time scale ``min_k tau/(2 s_k) max(1, log(s_k/(d_k a0_k)))`` and solved by brentq to
        relative ``CROSSING_RTOL``; exact for any horizon and any seed. Race ODE: integrated in
        ``log a`` (:attr:`log_ode`) and read off by :func:`ode_race`."""
        values = tuple(float(v) for v in values)
        log_a0 = np.asarray(log_a0, dtype=np.float64)
        horizon = float(horizon)
        if not self.uses_closed_form:
            return self.race_ode(log_a0, tau, values).race(fractions, horizon)
        s, d = self.logistic_parameters(values, tau)
        s_j, d_j, log_j = jnp.asarray(s), jnp.asarray(d), jnp.asarray(log_a0)

        def loss_at(t):
            return float(self._loss_at_time(jnp.float64(t), s_j, d_j, log_j, jnp.float64(tau), values))

        initial = loss_at(0.0)
        result = RaceResult(initial, {}, loss_at(horizon) / initial if initial > 0 else math.nan, horizon)
        if not (math.isfinite(initial) and initial > 0 and math.isfinite(result.final_loss)):
            result.crossings = {fraction: math.nan for fraction in fractions}
            result.final_loss = math.nan
            result.notes.append("the predicted loss is not finite")
            return result
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = float(np.min(tau / (2 * s) * np.maximum(1.0, np.log(s / d) - log_a0)))
        if not (math.isfinite(scale) and scale > 0):
            scale = float(tau)
        result.crossings = {
            fraction: monotone_crossing(loss_at, fraction * initial, scale, horizon) for fraction in fractions
        }
        return result


def first_crossings(ts, curves, levels) -> np.ndarray:
    """Row by row, the first time at which ``curves`` ``(rows, samples)`` falls to ``levels``
    ``(rows,)`` (linear interpolation between the samples ``ts``); NaN where a row never does.
    Samples that are not finite never count as crossed."""
    ts = np.asarray(ts, dtype=np.float64)
    curves = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    levels = np.broadcast_to(np.asarray(levels, dtype=np.float64), curves.shape[:1])
    below = curves <= levels[:, None]
    index = np.argmax(below, axis=1)
    previous = np.maximum(index - 1, 0)
    rows = np.arange(curves.shape[0])
    before, after = curves[rows, previous], curves[rows, index]
    span = before - after
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(span > 0, (before - levels) / np.where(span > 0, span, 1.0), 0.0)
    times = ts[previous] + fraction * (ts[index] - ts[previous])
    return np.where(below.any(axis=1), times, np.nan)


def crossing_time(ts, curve, fraction: float) -> float:
    """First time at which ``curve`` falls to ``fraction`` of its initial value (linear
    interpolation between samples); NaN if it never does within ``ts``."""
    curve = np.asarray(curve, dtype=np.float64)
    return float(first_crossings(ts, curve[None], fraction * curve[0])[0])
