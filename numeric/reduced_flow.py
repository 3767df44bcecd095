"""The exact reduced dynamics of a GDLN: gradient flow on each pathway's weight chain,
written with the effective correlations (THEORY Eq. 3-4) instead of the data.

Each pathway ``p`` keeps a chain of ``D_p`` matrices whose hidden width is ``min(|out_p|, |in_p|)``;
its map is ``W_p = W_D ... W_1``. With ``G_p = Sigma_yx(p) - sum_j E_p^T E_j W_j Sigma_x(j, p)``,
``tau dW_e/dt = W_after^T G_p W_before^T``. No alignment or shared basis is assumed: the
weights start balanced on the pathway's own modes, ``W_p(0) = a0_p sum_k u_k v_k^T`` (the
state silent alignment leaves from small random weights), and may rotate freely after.
"""

from __future__ import annotations

from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from derive.correlations import output_overlap, target_power
from derive.derivation import NetworkDerivation

from .compile import compile_expressions
from .integrate import integrate_ode

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
        self._shapes = []
        exprs = []
        for p in range(count):
            matrix = derivation.pathways[p].sigma_yx
            self._shapes.append(matrix.shape)
            exprs += list(matrix)
        for j in range(count):
            for p in range(count):
                matrix = derivation.correlation_between(j, p)
                self._shapes.append(matrix.shape)
                exprs += list(matrix)
        exprs.append(target_power(derivation.task))
        self._correlations = compile_expressions(exprs, list(derivation.parameters), f"correlations_{derivation.network.name}")
        self.overlaps = [[jnp.asarray(np.array(output_overlap(self.pathways[p], self.pathways[j]), dtype=float)) for j in range(count)] for p in range(count)]
        self.widths = [min(len(p.outputs), len(p.inputs)) for p in self.pathways]
        _, self._unravel = ravel_pytree(self._chains_from(lambda p: (np.zeros(self.widths[p]), np.zeros((len(self.pathways[p].outputs), self.widths[p])), np.zeros((self.widths[p], len(self.pathways[p].inputs)))), np.ones(count)))
        self.ode = self._make_ode()

    def correlations(self, values):
        """``(Sigma_yx[p], Sigma_x[j][p], tr<yy^T>)`` at ``values``."""
        flat = self._correlations(*values)
        matrices, position = [], 0
        for rows, cols in self._shapes:
            matrices.append(jnp.reshape(flat[position : position + rows * cols], (rows, cols)))
            position += rows * cols
        count = len(self.pathways)
        sigma_yx = matrices[:count]
        sigma_x = [matrices[count + j * count : count + (j + 1) * count] for j in range(count)]
        return sigma_yx, sigma_x, flat[-1]

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
        return [sigma_yx[p] - sum(self.overlaps[p][j] @ maps[j] @ sigma_x[j][p] for j in range(count)) for p in range(count)]

    def loss(self, maps, sigma_yx, sigma_x, power):
        """``L = 1/2 tr<yy^T> - sum_p tr(W_p Sigma_yx(p)^T) + 1/2 sum_jp tr(E_p^T E_j W_j Sigma_x(j, p) W_p^T)``."""
        count = len(self.pathways)
        linear = sum(jnp.sum(maps[p] * sigma_yx[p]) for p in range(count))
        quadratic = sum(jnp.sum((self.overlaps[p][j] @ maps[j] @ sigma_x[j][p]) * maps[p]) for p in range(count) for j in range(count))
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
        """Balanced chains on each pathway's own modes: ``W_p(0) = a0_p sum_k u_k v_k^T``."""
        sigma_yx, _, _ = self.correlations(values)

        def modes_of(p):
            u, s, vt = np.linalg.svd(np.asarray(sigma_yx[p]), full_matrices=False)
            return (s > _RANK_TOLERANCE * max(s[0], _RANK_TOLERANCE)).astype(float), u, vt

        return self._chains_from(modes_of, a0)

    def solve(self, ts, a0, tau, values, rtol: float = 1e-9, atol: float = 1e-14):
        """Weight chains at times ``ts`` (a pytree with a leading time axis)."""
        chains = self.initial_chains(a0, values)
        y0, _ = ravel_pytree(chains)
        sigma_yx, sigma_x, _ = self.correlations(values)
        ys = integrate_ode(self.ode, y0, ts, (jnp.float64(tau), sigma_yx, sigma_x), rtol=rtol, atol=atol)
        return jax.vmap(self._unravel)(ys)

    def trajectory(self, ts, a0, tau, values, **tolerances) -> "FlowTrajectory":
        return FlowTrajectory(self, self.solve(ts, a0, tau, values, **tolerances), values)


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


def staged_maps(staged, ts, a0: dict, tau, values) -> dict:
    """Per pathway name, ``W_p(t)`` of the staged approximation: the first pathway's exact flow
    alone on the task, the others' exact flow on its converged residual, both from ``t = 0``."""
    maps = {}
    for derivation in (staged.first_stage, staged.second_stage):
        flow = ReducedFlow(derivation)
        chains = flow.solve(ts, [a0[p.name] for p in flow.pathways], tau, values)
        for pathway, m in zip(flow.pathways, jax.vmap(flow.maps)(chains)):
            maps[pathway.name] = m
    return maps


def loss_of_maps(flow: ReducedFlow, maps: dict, values):
    """Loss over time of the full network ``flow`` for per-pathway maps given by name."""
    sigma_yx, sigma_x, power = flow.correlations(values)
    ordered = [maps[p.name] for p in flow.pathways]
    return jax.vmap(lambda *ms: flow.loss(list(ms), sigma_yx, sigma_x, power))(*ordered)
