"""Numbers from :class:`derive.shared.SharedReduction`: the Eq. 6 race on graphs with shared edges.

One hand-off: the rates and the loss are lambdified and jitted once per reduction. The state
``b`` is the reduction's ``strengths`` flattened edge by edge (``b[e * modes + k]``).

- :meth:`SharedFlow.descent`: the reduced system in discrete time, one gradient step per
  epoch, ``b <- b + eta tau db/dt``. Gradient descent from :meth:`decoupled_weights` stays
  decoupled, so this is the trained network's loss, epoch by epoch, up to rounding.
- :meth:`SharedFlow.flow_losses`: the continuous-time race (diffrax, Tsit5).

Initial strengths (``balanced_state``): every edge starts at ``b_e = init_scale sqrt(h_e / 2)``,
``h_e`` the size of its hidden end (the smaller one between two hidden nodes). At depth 2 this
is the module form's expected ``a0 = b_in b_out = h init_scale^2 / 2`` (THEORY section 2) shared
evenly by the two edges; deeper, it is the same expectation per edge, not a derivation of the
silent alignment of deep paths (the deviation from random weights is reported, not fitted).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property, partial

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive import formulas
from gdln.derive.shared import TAU, SharedReduction

from .compile import compile_expressions, generate_ode_function
from .integrate import integrate_ode
from .types import Float


class SharedFlow:
    """Compiled Eq. 6 of one network, with its bases as numbers."""

    def __init__(self, reduction: SharedReduction, values: Mapping | None = None):
        self.reduction = reduction
        self.graph = reduction.graph
        self.modes = reduction.num_modes
        state = [b for row in reduction.strengths for b in row]
        self.parameters = list(reduction.task.parameters)
        self._values = [float((values or reduction.task.parameters)[s]) for s in self.parameters]
        rates = [r for row in reduction.rates for r in row]
        self._ode = generate_ode_function(rates, state, [TAU, *self.parameters], name="shared_race")
        self._rates = compile_expressions(rates, state + [TAU, *self.parameters], "shared_rates")
        self._loss = compile_expressions(reduction.loss, state + self.parameters, "shared_loss")

    def loss(self, b: Float[jax.Array, " state"]):
        return self._loss(*b, *self._values)

    def balanced_state(self, init_scale: float) -> np.ndarray:
        strengths = []
        for edge in self.graph.edges:
            ends = [self.graph.node(n) for n in (edge.source, edge.target)]
            hidden = (
                min(node.size for node in ends if node.role == "hidden")
                if any(node.role == "hidden" for node in ends)
                else 1
            )
            strengths.append(np.sqrt(formulas.expected_initial_strength(hidden, init_scale)))
        return np.repeat(strengths, self.modes)

    def descent(self, b0, learning_rate: float, epochs: int) -> tuple[np.ndarray, np.ndarray]:
        """Loss at epochs ``0..epochs`` of the reduced system under gradient descent, and ``b``
        after the last step."""
        losses, final = _descend(self._rates, self._loss, jnp.asarray(b0), learning_rate, epochs, tuple(self._values))
        return np.asarray(losses), np.asarray(final)

    def flow_losses(self, b0, ts, learning_rate: float) -> np.ndarray:
        """Loss at epochs ``ts`` of the continuous-time race from ``b0`` at ``ts[0]``."""
        args = (1.0 / learning_rate, *self._values)
        states = integrate_ode(self._ode, jnp.asarray(b0), ts, args, rtol=1e-10, atol=1e-14)
        return np.asarray(jax.vmap(lambda b: self._loss(*b, *self._values))(states))

    @cached_property
    def _bases(self) -> dict[str, np.ndarray]:
        """``V_v`` and ``U_v`` as float arrays, by node name (evaluated once)."""
        exact = {**self.reduction.input_bases, **self.reduction.output_bases}
        return {name: np.array(matrix.evalf(30).tolist(), dtype=float) for name, matrix in exact.items()}

    def decoupled_weights(self, b) -> list[np.ndarray]:
        """``W_e = R_t diag(b_e) R_s^T`` per edge: ``R`` is ``V_v`` at input nodes, ``U_v`` at output
        nodes and the first unit vectors at hidden nodes (mode ``k`` on hidden unit ``k``)."""
        bases = self._bases
        b = np.asarray(b).reshape(len(self.graph.edges), self.modes)
        weights = []
        for e, edge in enumerate(self.graph.edges):
            sides = []
            for name in (edge.target, edge.source):
                node = self.graph.node(name)
                sides.append(bases[name] if node.role != "hidden" else np.eye(node.size, min(node.size, self.modes)))
            weights.append(sides[0] @ np.diag(b[e]) @ sides[1].T)
        return weights


@partial(jax.jit, static_argnums=(0, 1, 4, 5))
def _descend(rates, loss, b0, learning_rate, epochs, values):
    tau = 1.0 / learning_rate

    def step(b, _):
        return b + rates(*b, tau, *values), loss(*b, *values)  # dt = 1 epoch: b += eta G(b)

    final, history = jax.lax.scan(step, b0, None, length=epochs)
    return jnp.concatenate([history, loss(*final, *values)[None]]), final
