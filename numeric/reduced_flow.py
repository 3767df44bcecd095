"""The exact reduced dynamics of a GDLN: gradient flow on each pathway's weight chain,
written with the effective correlations (THEORY Eq. 3-4) instead of the data.

Each pathway ``p`` keeps a chain of ``D_p`` matrices whose hidden width is ``min(|out_p|, |in_p|)``;
its map is ``W_p = W_D ... W_1``. With ``G_p = Sigma_yx(p) - sum_j E_p^T E_j W_j Sigma_x(j, p)``,
``tau dW_e/dt = W_after^T G_p W_before^T``. No alignment or shared basis is assumed: the
weights start balanced on the pathway's own modes, ``W_p(0) = a0_p sum_k u_k v_k^T`` (the
state silent alignment leaves from small random weights), and may rotate freely after.

:meth:`ReducedFlow.race` solves crossing times on the flow itself; seeds far below float range
start it at the analytic end of the linear phase (:meth:`ReducedFlow.start`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from derive.cache import key_of
from derive.derivation import NetworkDerivation

from .compile import compile_expressions
from .integrate import integrate_ode
from .race import RaceResult
from .types import Array, ArrayLike, Float, Times, Values

_RANK_TOLERANCE = 1e-10


class ReducedFlow:
    """Compiled effective correlations of one network, and its exact gradient flow.

    ``values`` are parameter values in the order of ``derivation.parameters``; ``a0`` has one
    initial strength per pathway; ``tau = 1/learning_rate``.
    """

    def __init__(self, derivation: NetworkDerivation):
        self.derivation = derivation
        self.pathways = derivation.network.pathways
        count = len(self.pathways)
        task = derivation.task
        # The hand-off is the data itself (N x (inputs + targets) expressions), not every pair of
        # effective correlations: a context task has hundreds of correlation blocks whose
        # lambdified form takes far longer to trace than the few gated sums below.
        self._data_shape = (task.num_datapoints, task.num_inputs, task.num_outputs)
        self._data = compile_expressions(
            [*task.inputs, *task.targets], list(derivation.parameters), f"data_{derivation.network.name}"
        )
        self._active = [np.isin(np.arange(task.num_datapoints), list(p.active)).astype(float) for p in self.pathways]
        self.overlaps = [
            [
                jnp.asarray(
                    np.equal.outer(np.asarray(self.pathways[p].outputs), np.asarray(self.pathways[j].outputs)).astype(
                        float
                    )
                )
                for j in range(count)
            ]
            for p in range(count)
        ]
        self.widths = [min(len(p.outputs), len(p.inputs)) for p in self.pathways]
        _, self._unravel = ravel_pytree(
            self._chains_from(
                lambda p: (
                    np.zeros(self.widths[p]),
                    np.zeros((len(self.pathways[p].outputs), self.widths[p])),
                    np.zeros((self.widths[p], len(self.pathways[p].inputs))),
                ),
                np.ones(count),
            )
        )
        self.ode = self._make_ode()

    @cached_property
    def _mode_values(self):
        """The derived modes ``(s, u, v)`` of every pathway, through the one hand-off: never an SVD
        of the data here. Compiled on first use, so a flow that never asks for its basis never
        derives modes."""
        derivation = self.derivation
        mode_exprs = [
            e for pathway_derivation in derivation.pathways for m in pathway_derivation.modes for e in (m.s, *m.u, *m.v)
        ]
        return compile_expressions(
            mode_exprs, list(derivation.parameters), f"modes_{derivation.network.name}", cache_key=key_of(derivation)
        )

    def correlations(self, values):
        """``(Sigma_yx[p], Sigma_x[j][p], tr<yy^T>)`` at ``values`` (THEORY Eq. 4), from the data.
        Values are concrete numbers, so the gated sums run in numpy once per set of values."""
        return self._at_values("_correlation_cache", self._correlations_at, values)

    def _at_values(self, slot: str, compute, values):
        """``compute(values)``, kept for the last set of values (callers ask many times at one point)."""
        key = tuple(float(v) for v in values)
        cache = self.__dict__.setdefault(slot, {})
        if key not in cache:
            cache.clear()
            cache[key] = compute(values)
        return cache[key]

    def _correlations_at(self, values):
        count, inputs, outputs = self._data_shape
        flat = np.asarray(self._data(*values), dtype=np.float64)
        x = flat[: count * inputs].reshape(count, inputs)
        y = flat[count * inputs :].reshape(count, outputs)
        sigma_yx, sigma_x = [], [[None] * len(self.pathways) for _ in self.pathways]
        for p, pathway in enumerate(self.pathways):
            xp, yp = x[:, list(pathway.inputs)], y[:, list(pathway.outputs)]
            sigma_yx.append(jnp.asarray((yp * self._active[p][:, None]).T @ xp / count))
            for j, other in enumerate(self.pathways):
                both = self._active[p] * self._active[j]
                sigma_x[j][p] = jnp.asarray((x[:, list(other.inputs)] * both[:, None]).T @ xp / count)
        return sigma_yx, sigma_x, jnp.float64(np.sum(y * y) / count)

    def maps(self, chains):
        """``W_p`` of every pathway from its weight chain (first layer first)."""
        out = []
        for chain in chains:
            product = chain[0]
            for w in chain[1:]:
                product = w @ product
            out.append(product)
        return out

    def gradients(self, maps, sigma_yx, sigma_x):
        """``G_p = Sigma_yx(p) - sum_j E_p^T E_j W_j Sigma_x(j, p)``."""
        count = len(self.pathways)
        return [
            sigma_yx[p] - sum(self.overlaps[p][j] @ maps[j] @ sigma_x[j][p] for j in range(count)) for p in range(count)
        ]

    def loss(self, maps, sigma_yx, sigma_x, power):
        """``L = 1/2 tr<yy^T> - sum_p tr(W_p Sigma_yx(p)^T) + 1/2 sum_jp tr(E_p^T E_j W_j Sigma_x(j, p) W_p^T)``."""
        count = len(self.pathways)
        linear = sum(jnp.sum(maps[p] * sigma_yx[p]) for p in range(count))
        quadratic = sum(
            jnp.sum((self.overlaps[p][j] @ maps[j] @ sigma_x[j][p]) * maps[p])
            for p in range(count)
            for j in range(count)
        )
        return power / 2 - linear + quadratic / 2

    def _make_ode(self):
        unravel = self._unravel

        def f(t, y, args):
            tau, sigma_yx, sigma_x = args
            chains = unravel(y)
            grads = self.gradients(self.maps(chains), sigma_yx, sigma_x)
            rates = []
            for chain, g in zip(chains, grads):
                layer_rates = []
                for e in range(len(chain)):
                    before = chain[0] if e > 0 else None
                    for w in chain[1:e]:
                        before = w @ before
                    after = chain[-1] if e < len(chain) - 1 else None
                    for w in reversed(chain[e + 1 : -1]):
                        after = after @ w
                    rate = g
                    if after is not None:
                        rate = after.T @ rate
                    if before is not None:
                        rate = rate @ before.T
                    layer_rates.append(rate / tau)
                rates.append(layer_rates)
            return ravel_pytree(rates)[0]

        f.__doc__ = (
            "f(t, y, args): d/dt of the flattened weight chains of every pathway.\n"
            "args = (tau, sigma_yx, sigma_x): tau = 1/learning_rate, Sigma_yx[p], Sigma_x[j][p]"
        )
        return f

    def _chains_from(self, modes_of, a0):
        chains = []
        for p, pathway in enumerate(self.pathways):
            mask, u, vt = modes_of(p)
            root = float(a0[p]) ** (1.0 / pathway.depth)
            chain = [jnp.asarray(root * mask[:, None] * vt)]
            chain += [jnp.asarray(root * np.eye(self.widths[p])) for _ in range(pathway.depth - 2)]
            chain.append(jnp.asarray(root * u * mask[None, :]))
            chains.append(chain)
        return chains

    def initial_chains(self, a0, values):
        """Balanced chains on each pathway's own (derived) modes: ``W_p(0) = a0_p sum_k u_k v_k^T``."""
        basis = self._basis(values)

        def modes_of(p):
            mask, u, _, vt, _ = basis[p]
            return mask, u, vt

        return self._chains_from(modes_of, a0)

    def solve(
        self,
        ts: Times,
        a0: Float[ArrayLike, " pathways"] | None,
        tau: float,
        values: Values,
        rtol: float = 1e-9,
        atol: float = 1e-14,
        log_a0: Float[ArrayLike, " pathways"] | None = None,
    ):
        """Weight chains at times ``ts`` (a pytree with a leading time axis).

        With ``log_a0`` (one ``log a0`` per pathway) instead of ``a0``, seeds far below float range
        start as :meth:`start` says, and times before its start come from the linear phase."""
        sigma_yx, sigma_x, _ = self.correlations(values)
        args = (jnp.float64(tau), sigma_yx, sigma_x)
        if log_a0 is None:
            y0, _ = ravel_pytree(self.initial_chains(a0, values))
            ys = integrate_ode(self.ode, y0, ts, args, rtol=rtol, atol=atol)
            return jax.vmap(self._unravel)(ys)
        ts = np.asarray(ts, dtype=np.float64)
        t0, y0, scale = self.start(log_a0, tau, values)
        early = ts < t0
        rows = [
            np.asarray(ravel_pytree(self._chains_at(self.linear_phase(log_a0, t, tau, values), values))[0])
            for t in ts[early]
        ]
        later = ts[~early]
        if len(later):
            grid = np.concatenate([[t0], later]) if later[0] > t0 else later
            solved = np.asarray(
                integrate_ode(
                    self.ode,
                    y0,
                    grid,
                    args,
                    rtol=rtol,
                    atol=atol,
                    dtmax=self._step_limit(scale, tau, values, rtol, atol),
                )
            )
            rows += list(solved[len(grid) - len(later) :])
        return jax.vmap(self._unravel)(jnp.asarray(np.stack(rows)))

    def trajectory(self, ts, a0, tau, values, **tolerances) -> FlowTrajectory:
        return FlowTrajectory(self, self.solve(ts, a0, tau, values, **tolerances), values)

    def loss_curve_from_log(
        self, ts: Times, log_a0: Float[ArrayLike, " pathways"], tau: float, values: Values
    ) -> Float[Array, " T"]:
        """Loss at epochs ``ts`` from ``log a0`` per pathway (as :meth:`numeric.race.CompiledNetwork.loss_curve_from_log`)."""
        return FlowTrajectory(self, self.solve(ts, None, tau, values, log_a0=log_a0), values).loss

    # --- seeds as logarithms; crossing times without a grid ---------------------------------
    #: the flow starts where the first mode reaches this fraction of its scale ``s / d_max``
    LINEAR_PHASE_END = 1e-10

    def _basis(self, values):
        """Per pathway: ``(mask, u, s, vt)`` of ``Sigma_yx(p)`` and the largest eigenvalue of ``Sigma_x(p, p)``."""
        return self._at_values("_basis_cache", self._compute_basis, values)

    def _compute_basis(self, values):
        """The derived modes at ``values``, padded with zero modes to each chain's hidden width."""
        _, sigma_x, _ = self.correlations(values)
        flat = np.asarray(self._mode_values(*values), dtype=np.float64)
        out, position = [], 0
        for p, pathway_derivation in enumerate(self.derivation.pathways):
            outputs, inputs, width = len(self.pathways[p].outputs), len(self.pathways[p].inputs), self.widths[p]
            u, s, vt = np.zeros((outputs, width)), np.zeros(width), np.zeros((width, inputs))
            for k, _ in enumerate(pathway_derivation.modes):
                s[k] = flat[position]
                u[:, k] = flat[position + 1 : position + 1 + outputs]
                vt[k] = flat[position + 1 + outputs : position + 1 + outputs + inputs]
                position += 1 + outputs + inputs
            u = u * np.where(s < 0, -1.0, 1.0)[None, :]  # s >= 0 by derivation; kept so if a value flips it
            s = np.abs(s)
            scale = max(float(np.max(s)) if width else 0.0, _RANK_TOLERANCE)
            mask = (s > _RANK_TOLERANCE * scale).astype(float)
            largest = float(np.max(np.linalg.eigvalsh(np.asarray(sigma_x[p][p])))) if sigma_x[p][p].size else 0.0
            out.append((mask, u * mask[None, :], s * mask, vt * mask[:, None], largest))
        return out

    def linear_phase(self, log_a0, t, tau, values):
        """Per pathway, ``log a`` of each hidden unit (one per mode of ``Sigma_yx(p)``) at time ``t``
        while every strength is tiny: each mode on its own, ``tau dr/dt = s r^(D-1)`` for its layer
        factor ``r = a^(1/D)``, i.e. ``log a = log a0 + 2 s t / tau`` at depth 2 and
        ``r^(2-D) = r0^(2-D) - (D-2) s t / tau`` deeper. The error terms are ``O(a d / s)``
        relative (the self-limitation ``- d a`` and the other pathways' ``O(a)`` share of the error)."""
        logs = []
        for p, (_, _, s, _, _) in enumerate(self._basis(values)):
            depth, start = self.pathways[p].depth, float(log_a0[p])
            if depth == 2:
                logs.append(start + 2.0 * s * t / tau)
                continue
            # log r^(2-D) = (2-D)/D log a0 + log1p(-(D-2) s t / tau r0^(D-2))
            power = (2 - depth) / depth * start
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                inner = np.log1p(-(depth - 2) * s * t / tau * np.exp(-power))
            logs.append(depth / (2 - depth) * (power + inner))
        return logs

    def _time_to(self, log_a0, targets, tau, values):
        """Per pathway, the time each mode needs in the linear phase to reach ``log a = targets[p]``."""
        times = []
        for p, (mask, _, s, _, _) in enumerate(self._basis(values)):
            depth, start = self.pathways[p].depth, float(log_a0[p])
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                if depth == 2:
                    time = tau * (targets[p] - start) / (2.0 * s)
                else:
                    power, goal = (2 - depth) / depth * start, (2 - depth) / depth * targets[p]
                    time = tau / ((depth - 2) * s) * np.exp(power) * -np.expm1(goal - power)
            times.append(np.where(mask > 0, time, np.inf))
        return times

    def _chains_at(self, logs, values):
        """Balanced chains with per-unit layer factors ``exp(log a / D)`` on each pathway's modes."""
        chains = []
        for p, (mask, u, _, vt, _) in enumerate(self._basis(values)):
            depth = self.pathways[p].depth
            roots = np.exp(np.asarray(logs[p], dtype=np.float64) / depth)
            chain = [jnp.asarray((roots * mask)[:, None] * vt)]
            chain += [jnp.asarray(np.diag(roots)) for _ in range(depth - 2)]
            chain.append(jnp.asarray(u * (roots * mask)[None, :]))
            chains.append(chain)
        return chains

    def start(self, log_a0, tau, values):
        """``(t0, y0, scale)``: where the integration of the exact flow starts, its flattened chains
        there, and the smallest nonzero layer factor (the solver's absolute tolerance is scaled to it).

        Seeds at or above ``LINEAR_PHASE_END`` times each mode's scale ``s / d_max`` start at
        ``t0 = 0`` from :meth:`initial_chains` exactly. Smaller seeds, which may lie far below float
        range, start at the first time ``t0`` at which a mode reaches that level, computed
        analytically from :meth:`linear_phase`; every mode is placed where the linear phase puts it
        then. Neglecting ``O(a d / s)`` up to ``t0`` shifts later times by about
        ``LINEAR_PHASE_END * tau / s``: far below 1e-6 relative."""
        log_a0 = np.asarray(log_a0, dtype=np.float64)
        basis = self._basis(values)
        targets = []
        for _, _, s, _, largest in basis:
            with np.errstate(divide="ignore"):
                targets.append(np.log(self.LINEAR_PHASE_END * s / max(largest, 1e-300)))
        times = self._time_to(log_a0, targets, tau, values)
        first = min((float(np.min(t)) for t in times if t.size), default=0.0)
        t0 = max(0.0, first) if np.isfinite(first) else 0.0
        if t0 == 0.0:
            logs = [np.full(len(b[0]), log_a0[p]) for p, b in enumerate(basis)]
        else:
            logs = self.linear_phase(log_a0, t0, tau, values)
        y0 = np.asarray(ravel_pytree(self._chains_at(logs, values))[0])
        roots = np.concatenate(
            [
                np.exp(np.asarray(l, dtype=np.float64) / self.pathways[p].depth)[b[0] > 0]
                for p, (l, b) in enumerate(zip(logs, basis))
            ]
        )
        roots = roots[roots > 0]
        return t0, y0, float(np.min(roots)) if roots.size else 1.0

    def _minimum_loss(self, values) -> float:
        """The least loss over all maps ``W_p`` (:meth:`loss` is quadratic in them). It separates
        by target feature ``o``: with ``z = (W_p[o, :])`` over the pathways that write ``o``,
        ``L_o = -sum_p z_p . Sigma_yx(p)[o, :] + 1/2 sum_jp z_j Sigma_x(j, p) z_p``, minimised by
        least squares one feature at a time."""
        sigma_yx, sigma_x, power = self.correlations(values)
        sigma_yx = [np.asarray(m) for m in sigma_yx]
        sigma_x = [[np.asarray(m) for m in row] for row in sigma_x]
        features = sorted({o for p in self.pathways for o in p.outputs})
        total = float(power) / 2
        for o in features:
            writers = [(p, pathway.outputs.index(o)) for p, pathway in enumerate(self.pathways) if o in pathway.outputs]
            linear = np.concatenate([sigma_yx[p][row] for p, row in writers])
            hessian = np.block([[sigma_x[j][p] for p, _ in writers] for j, _ in writers])
            best = np.linalg.lstsq(hessian, linear, rcond=None)[0]
            total += float(-linear @ best + best @ hessian @ best / 2)
        return total

    @cached_property
    def _loss_of_states(self):
        def loss(y, sigma_yx, sigma_x, power):
            return self.loss(self.maps(self._unravel(y)), sigma_yx, sigma_x, power)

        return jax.jit(jax.vmap(loss, in_axes=(0, None, None, None)))

    def race(
        self,
        log_a0: Float[ArrayLike, " pathways"],
        tau: float,
        values: Values,
        horizon: float,
        fractions: Sequence[float] = (0.5, 0.1),
        rtol: float = 1e-10,
        atol: float = 1e-14,
    ) -> RaceResult:
        """Epochs at which the loss of the exact flow falls to ``fractions`` of its initial loss, and
        the loss at ``horizon`` (:class:`numeric.race.RaceResult`), from ``log a0`` per pathway.

        The flow starts as :meth:`start` says and is read off by :func:`numeric.race.ode_race`:
        crossings by brentq within a solver step, no sampling grid; the run ends early once the
        loss is within ``SETTLED_TOLERANCE`` of the least loss over all maps."""
        from .race import RaceResult, ode_race

        sigma_yx, sigma_x, power = self.correlations(values)
        log_a0 = np.asarray(log_a0, dtype=np.float64)

        def loss_of_state(ys):
            return self._loss_of_states(ys, sigma_yx, sigma_x, power)

        initial_state = np.asarray(
            ravel_pytree(
                self._chains_at([np.full(len(b[0]), log_a0[p]) for p, b in enumerate(self._basis(values))], values)
            )[0]
        )
        initial = float(loss_of_state(jnp.asarray(initial_state)[None])[0])
        t0, y0, scale = self.start(log_a0, tau, values)
        if t0 >= horizon:
            # still in the linear phase at the horizon: within LINEAR_PHASE_END of the initial loss
            state = ravel_pytree(self._chains_at(self.linear_phase(log_a0, float(horizon), tau, values), values))[0]
            final = float(loss_of_state(jnp.asarray(state)[None])[0])
            return RaceResult(initial, {f: None for f in fractions}, final / initial, float(horizon))
        args = (jnp.float64(tau), sigma_yx, sigma_x)
        return ode_race(
            self.ode,
            y0,
            t0,
            args,
            loss_of_state,
            initial,
            fractions,
            float(horizon),
            lambda: self._minimum_loss(values),
            rtol=rtol,
            atol=atol,
            dtmax=self._step_limit(scale, tau, values, rtol, atol),
        )

    def _step_limit(self, scale, tau, values, rtol, atol):
        """``0.1 tau / s_max`` when some layer factor starts below ``atol / rtol``, else ``None``.

        Components below ``atol / rtol`` escape the solver's relative error control; while faster
        modes learn, their steps keep those components accurate, but near a minimum the steps grow
        to the stability limit and a slow tiny mode would grow with an uncontrolled error. At
        ``0.1 tau / s_max`` its growth per step is at most ``0.2``, and the crossings agree with
        ``0.02 tau / s_max`` to about 1e-11 (seeds 1e-30, measured)."""
        if scale >= atol / rtol:
            return None
        largest = max((float(np.max(b[2])) for b in self._basis(values) if b[2].size), default=0.0)
        return 0.1 * tau / largest if largest > 0 else None


class FlowTrajectory:
    """Loss and per-pathway singular values along one solved flow."""

    def __init__(self, flow: ReducedFlow, chains, values):
        self.flow = flow
        self.chains = chains
        self.values = values

    @cached_property
    def maps(self):
        return jax.vmap(self.flow.maps)(self.chains)

    @cached_property
    def loss(self):
        sigma_yx, sigma_x, power = self.flow.correlations(self.values)
        return jax.vmap(lambda maps: self.flow.loss(maps, sigma_yx, sigma_x, power))(self.maps)

    @cached_property
    def singular_values(self):
        """Per pathway: ``(times, k)`` singular values of ``W_p(t)``, largest first."""
        return [jnp.linalg.svd(m, compute_uv=False) for m in self.maps]


def loss_of_maps(flow: ReducedFlow, maps: dict, values):
    """Loss over time of the full network ``flow`` for per-pathway maps given by name."""
    sigma_yx, sigma_x, power = flow.correlations(values)
    ordered = [maps[p.name] for p in flow.pathways]
    return jax.vmap(lambda *ms: flow.loss(list(ms), sigma_yx, sigma_x, power))(*ordered)
