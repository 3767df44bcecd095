"""Numbers from :class:`derive.shared.SharedReduction`: the Eq. 6 race on graphs with shared edges.

One hand-off: the reduction's numbers (each path's ``s_k(p)``, each pair's ``d_k(j, p)``, the
edges along each path) are evaluated once at the parameter values, and Eq. 6 and the loss are
array programs over them: ``b_{p,k}`` is a product along a row of edge indices, the drive of a
path a segment sum over its pairs. The symbolic rates and loss (:mod:`derive.shared`, which
``derive`` prints) are not lambdified: they hold every pair of paths into an output node, 10^6
terms for 1000 paths, which took minutes to build and ended in a ``RecursionError`` at 100. The
state ``b`` is the reduction's ``strengths`` flattened edge by edge (``b[e * modes + k]``).

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

import math
from collections.abc import Mapping
from functools import cached_property, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive import formulas
from gdln.derive.correlations import target_power
from gdln.derive.shared import SharedReduction
from gdln.derive.spec import EvaluationError, evaluate

from .integrate import integrate_ode
from .types import Float


class SharedFlow:
    """Compiled Eq. 6 of one network, with its bases as numbers."""

    def __init__(self, reduction: SharedReduction, values: Mapping | None = None):
        self.reduction = reduction
        self.graph = reduction.graph
        self.modes = reduction.num_modes
        self.parameters = list(reduction.task.parameters)
        at = values or reduction.task.parameters
        self._values = [float(at[s]) for s in self.parameters]
        self._arrays = _flow_arrays(reduction, dict(zip(self.parameters, self._values)))

    def loss(self, b: Float[jax.Array, " state"]):
        return _loss(self._arrays, b)

    def rates(self, b: Float[jax.Array, " state"], tau: float):
        """``db/dt`` of Eq. 6 at ``b`` (flattened as the state)."""
        return _rates(self._arrays, jnp.asarray(b), tau)

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
        losses, final = _descend(self._arrays, jnp.asarray(b0), learning_rate, epochs)
        return np.asarray(losses), np.asarray(final)

    def flow_losses(self, b0, ts, learning_rate: float) -> np.ndarray:
        """Loss at epochs ``ts`` of the continuous-time race from ``b0`` at ``ts[0]``."""
        states = integrate_ode(_ode, jnp.asarray(b0), ts, (1.0 / learning_rate, self._arrays), rtol=1e-10, atol=1e-14)
        return np.asarray(jax.vmap(lambda b: _loss(self._arrays, b))(states))

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


class FlowArrays(NamedTuple):
    """A reduction's numbers at one point, as the array programs read them: ``edges`` ``(paths,
    longest)`` the edges along each path, padded with the index one past the last edge (a
    strength of 1); ``singular`` ``(paths, modes)``, zero for a path without data; ``learns``
    ``(paths,)`` whether a path has data; ``kinds`` ``(paths,)`` each path's kind, and
    ``coupling`` ``(kinds, kinds, modes)`` the ``d_k(j, p)`` of
    :attr:`derive.shared.SharedReduction.variances` by the kinds of ``j`` and ``p`` (0 for a pair it
    does not hold); ``power`` ``tr <yy^T>``.

    A path's kind is its input and output nodes, features and datapoints: ``d_k(j, p)``, and
    whether the pair counts at all, depend on nothing else. The drives' sums over pairs are then
    sums over kinds: two layers of ten nodes make 100 paths of one kind, where pair by pair each
    step of descent summed 10^4 terms (10^6 at 1000 paths: 25 ms a step, minutes a race)."""

    edges: jax.Array
    singular: jax.Array
    learns: jax.Array
    kinds: jax.Array
    coupling: jax.Array
    power: jax.Array


def _flow_arrays(reduction: SharedReduction, values: Mapping) -> FlowArrays:
    """The numbers of ``reduction`` at ``values``; each distinct expression evaluated once (the
    reduction shares them between the paths and pairs whose features and datapoints agree)."""
    graph, modes = reduction.graph, reduction.num_modes
    known: dict[Any, float] = {}

    def number(expr) -> float:
        if expr not in known:
            try:
                known[expr] = evaluate(expr, values).real
            except EvaluationError:  # no value here (0/0 where a correlation vanishes): NaN, as lambdified
                known[expr] = math.nan
        return known[expr]

    paths = len(graph.paths)
    longest = max(len(path.edges) for path in graph.paths)
    edges = np.full((paths, longest), len(graph.edges), dtype=np.int32)
    for p, path in enumerate(graph.paths):
        edges[p, : len(path.edges)] = path.edges
    singular = np.zeros((paths, modes))
    learns = np.zeros(paths, dtype=bool)
    for p, s in reduction.singular_values.items():
        singular[p] = [number(v) for v in s]
        learns[p] = True
    found: dict[tuple, int] = {}
    kinds = np.zeros(paths, dtype=np.int32)
    for p, (path, pathway) in enumerate(zip(graph.paths, reduction.network.pathways)):
        key = (path.nodes[0], path.nodes[-1], pathway.inputs, pathway.outputs, pathway.active)
        kinds[p] = found.setdefault(key, len(found))
    coupling = np.zeros((len(found), len(found), modes))
    filled = np.zeros((len(found), len(found)), dtype=bool)
    for (j, p), d in reduction.variances.items():
        a, b = kinds[j], kinds[p]
        if not filled[a, b]:
            coupling[a, b] = [number(v) for v in d]
            filled[a, b] = True
    power = number(target_power(reduction.task))
    return FlowArrays(*(jnp.asarray(x) for x in (edges, singular, learns, kinds, coupling, power)))


def _along_paths(arrays: FlowArrays, b) -> jax.Array:
    """Each path's edge strengths, ``(paths, longest, modes)``, 1 past a path's end."""
    modes = arrays.singular.shape[1]
    padded = jnp.concatenate([jnp.reshape(b, (-1, modes)), jnp.ones((1, modes), dtype=b.dtype)])
    return padded[arrays.edges]


def _kind_sums(arrays: FlowArrays, strengths) -> jax.Array:
    """``sum_{j of kind c} b_{j,k}``, ``(kinds, modes)``, from the path strengths ``b_{p,k}``."""
    return jax.ops.segment_sum(strengths, arrays.kinds, num_segments=arrays.coupling.shape[0])


def _loss(arrays: FlowArrays, b) -> jax.Array:
    """``L = tr<yy^T>/2 - sum_{p,k} s_k(p) b_{p,k} + 1/2 sum_{j,p,k} b_{j,k} d_k(j,p) b_{p,k}``."""
    strengths = jnp.prod(_along_paths(arrays, b), axis=1)
    sums = _kind_sums(arrays, strengths)
    pairs = jnp.einsum("ak,abk,bk->", sums, arrays.coupling, sums)
    return arrays.power / 2 - jnp.sum(arrays.singular * strengths) + pairs / 2


def _rates(arrays: FlowArrays, b, tau) -> jax.Array:
    """Eq. 6: ``tau db_{e,k}/dt = sum_{p through e} b_{p without e,k} drive_k(p)``, over the paths
    with data. ``b_{p without e}`` is the product of the strengths before ``e`` times those after
    it (no division: a strength may be 0)."""
    along = _along_paths(arrays, b)
    ones = jnp.ones_like(along[:, :1])
    before = jnp.cumprod(jnp.concatenate([ones, along[:, :-1]], axis=1), axis=1)
    after = jnp.cumprod(jnp.concatenate([ones, along[:, :0:-1]], axis=1), axis=1)[:, ::-1]
    # drive_k(p) = s_k(p) - sum_j b_{j,k} d_k(j, p), summed by kind
    overlap = jnp.einsum("ak,abk->bk", _kind_sums(arrays, jnp.prod(along, axis=1)), arrays.coupling)[arrays.kinds]
    drives = jnp.where(arrays.learns[:, None], arrays.singular - overlap, 0.0)
    terms = before * after * drives[:, None, :]
    modes = arrays.singular.shape[1]
    total = jnp.zeros((b.shape[0] // modes + 1, modes), dtype=b.dtype).at[arrays.edges].add(terms)
    return jnp.ravel(total[:-1]) / tau


def _ode(t, b, args):
    tau, arrays = args
    return _rates(arrays, b, tau)


@partial(jax.jit, static_argnums=(3,))
def _descend(arrays: FlowArrays, b0, learning_rate, epochs):
    tau = 1.0 / learning_rate

    def step(b, _):
        return b + _rates(arrays, b, tau), _loss(arrays, b)  # dt = 1 epoch: b += eta G(b)

    final, history = jax.lax.scan(step, b0, None, length=epochs)
    return jnp.concatenate([history, _loss(arrays, final)[None]]), final
