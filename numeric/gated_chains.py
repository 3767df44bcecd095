"""Depth-2 GDLNs written with their data and gates, vectorized over pathways.

The same dynamics as :class:`numeric.reduced_flow.ReducedFlow` for networks whose pathways
all have one hidden layer (THEORY Eq. 3), in the form that scales to hundreds of pathways
(the aligned GDLN of a context task has one per settled gate pattern): with gates
``g_pn``, ``yhat_n = sum_p g_pn W2_p W1_p x_n``, residual ``r = y - yhat`` and
``G_p = 1/N sum_n g_pn r_n x_n^T`` restricted to the pathway's outputs and inputs,

    W1_p <- W1_p + eta W2_p^T G_p,      W2_p <- W2_p + eta G_p W1_p^T

is one step of gradient descent on ``L = 1/2 mean ||y - yhat||^2``, and ``tau dW/dt`` the
same right-hand side is the flow. Each chain's hidden width is the largest ``min(|out_p|,
|in_p|)``; columns beyond a pathway's own width start at zero and stay there (a zero unit
is a fixed point of both updates).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property, partial

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.spec import Network

from .integrate import integrate_ode


class GatedChains:
    """One depth-2 network on one dataset: balanced starts from maps, descent and flow.

    ``inputs`` ``(N, in)`` and ``targets`` ``(N, out)`` are numbers; ``maps`` one
    ``(|out_p|, |in_p|)`` array per pathway; ``learning_rate`` the step (``tau = 1/eta``)."""

    def __init__(self, network: Network, inputs, targets):
        if any(p.depth != 2 for p in network.pathways):
            raise ValueError("GatedChains needs pathways with one hidden layer")
        self.network = network
        self.inputs = jnp.asarray(inputs, jnp.float64)
        self.targets = jnp.asarray(targets, jnp.float64)
        count, num_inputs = self.inputs.shape
        num_outputs = self.targets.shape[1]
        pathways = network.pathways
        self.gates = jnp.asarray(np.array([np.isin(np.arange(count), p.active) for p in pathways], dtype=float))
        self.input_masks = jnp.asarray(np.array([np.isin(np.arange(num_inputs), p.inputs) for p in pathways], float))
        self.output_masks = jnp.asarray(np.array([np.isin(np.arange(num_outputs), p.outputs) for p in pathways], float))
        self.width = max(min(len(p.inputs), len(p.outputs)) for p in pathways)
        #: shapes of the stacked chains ``(W1, W2)``; the flattened flow state is ``W1`` then ``W2``
        self.shapes = ((len(pathways), self.width, num_inputs), (len(pathways), num_outputs, self.width))

    def start(self, maps: Sequence[np.ndarray]) -> tuple[jax.Array, jax.Array]:
        """``(W1, W2)`` stacked ``(P, width, in)`` and ``(P, out, width)``: each map factored
        balanced, ``W_p = U S V^T``, ``W1 = S^(1/2) V^T``, ``W2 = U S^(1/2)``, embedded in the
        full input and output space. (The SVD is of given weight maps, not of the data.)"""
        w1, w2 = self.starts([np.asarray(m, dtype=np.float64)[None] for m in maps])
        return jnp.asarray(w1[0]), jnp.asarray(w2[0])

    def starts(self, maps: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`start` of many runs at once: ``maps`` one ``(runs, |out_p|, |in_p|)`` array per
        pathway; returns ``(runs, P, width, in)`` and ``(runs, P, out, width)`` on the host (numpy
        runs the SVD of a stack matrix by matrix, as it runs one)."""
        num_inputs, num_outputs = self.inputs.shape[1], self.targets.shape[1]
        runs = len(maps[0]) if len(maps) else 0
        w1 = np.zeros((runs, len(maps), self.width, num_inputs))
        w2 = np.zeros((runs, len(maps), num_outputs, self.width))
        for p, (pathway, m) in enumerate(zip(self.network.pathways, maps)):
            u, s, vt = np.linalg.svd(np.asarray(m, dtype=np.float64), full_matrices=False)
            k = min(s.shape[-1], self.width)
            root = np.sqrt(s[:, :k])
            first, last = w1[:, p], w2[:, p]  # views: one advanced index each keeps the axes in place
            first[:, :k, list(pathway.inputs)] = root[:, :, None] * vt[:, :k]
            last[:, list(pathway.outputs), :k] = u[:, :, :k] * root[:, None, :]
        return w1, w2

    def _residual(self, w1, w2, inputs, targets):
        hidden = jnp.einsum("pwi,ni->pnw", w1, inputs)
        output = jnp.einsum("pn,pow,pnw->no", self.gates, w2, hidden)
        return targets - output

    def loss(self, w1, w2):
        return self.loss_on(w1, w2, self.inputs, self.targets)

    def loss_on(self, w1, w2, inputs, targets):
        """The loss of chains ``(W1, W2)`` on data ``inputs``, ``targets`` (this network's gates)."""
        return 0.5 * jnp.mean(jnp.sum(self._residual(w1, w2, inputs, targets) ** 2, axis=1))

    def _rates(self, w1, w2):
        return self._rates_on(w1, w2, self.inputs, self.targets)

    def _rates_on(self, w1, w2, inputs, targets):
        """``(W2^T G, G W1^T)`` per pathway: minus the gradients, times ``N`` folded in ``G``."""
        residual = self._residual(w1, w2, inputs, targets)
        g = jnp.einsum("pn,no,ni->poi", self.gates, residual, inputs) / inputs.shape[0]
        g = g * self.output_masks[:, :, None] * self.input_masks[:, None, :]
        return jnp.einsum("pow,poi->pwi", w2, g), jnp.einsum("poi,pwi->pow", g, w1)

    def descent_step(self, state, operands):
        """One step of gradient descent: ``state = (W1, W2)``, ``operands = (learning_rate,
        inputs, targets)``; returns the new state and the loss before the step. The data are an
        operand, not this object's own, so one compiled step serves every point of a sweep
        (:func:`numeric.sweep.aligned_descent_chunks`)."""
        w1, w2 = state
        learning_rate, inputs, targets = operands
        d1, d2 = self._rates_on(w1, w2, inputs, targets)
        return (w1 + learning_rate * d1, w2 + learning_rate * d2), self.loss_on(w1, w2, inputs, targets)

    @cached_property
    def _descend(self):
        @partial(jax.jit, static_argnames=("steps",))
        def run(w1, w2, learning_rate, steps):
            operands = (learning_rate, self.inputs, self.targets)
            return jax.lax.scan(lambda state, _: self.descent_step(state, operands), (w1, w2), None, length=steps)[1]

        return run

    def descent_losses(self, w1, w2, learning_rate: float, steps: int) -> jax.Array:
        """The loss before each of ``steps`` steps of gradient descent."""
        return self._descend(w1, w2, float(learning_rate), int(steps))

    def _split(self, y):
        size = int(np.prod(self.shapes[0]))
        return y[:size].reshape(self.shapes[0]), y[size:].reshape(self.shapes[1])

    @cached_property
    def _flow_rhs(self):
        """``f(t, y, learning_rate)`` for ``diffrax.ODETerm``: ``y`` is ``W1`` then ``W2`` flattened.
        Built once, so every solve of this network reuses one compiled solver."""

        def f(t, y, learning_rate):
            d1, d2 = self._rates(*self._split(y))
            return learning_rate * jnp.concatenate([d1.ravel(), d2.ravel()])

        return f

    @cached_property
    def _losses_of_states(self):
        return jax.jit(jax.vmap(lambda y: self.loss(*self._split(y))))

    def flow_losses(self, w1, w2, learning_rate: float, ts) -> np.ndarray:
        """The loss of the gradient flow ``tau dW/dt = rates`` at epochs ``ts`` (from 0)."""
        grid = np.unique(np.concatenate([[0.0], np.asarray(ts, dtype=np.float64)]))
        y0 = jnp.concatenate([w1.ravel(), w2.ravel()])
        states = integrate_ode(self._flow_rhs, y0, jnp.asarray(grid), jnp.float64(learning_rate), rtol=1e-9, atol=1e-14)
        losses = np.asarray(self._losses_of_states(states))
        return losses[np.searchsorted(grid, np.asarray(ts, dtype=np.float64))]
