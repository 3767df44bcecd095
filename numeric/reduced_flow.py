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
from functools import cached_property, partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gdln.derive.cache import key_of
from gdln.derive.derivation import NetworkDerivation

from .compile import compile_expressions
from .integrate import integrate_ode
from .mode_values import pathway_mode_values
from .race import RaceODE, RaceResult
from .types import Array, ArrayLike, Float, Times, Values

_RANK_TOLERANCE = 1e-10


class FlowStructure:
    """What a reduced flow's compiled functions depend on: the number of target features and,
    per pathway, its depth, hidden width, number of inputs and its target features. Networks of
    one structure (Section 4's ``common+1`` and ``common+2``; the search's networks of equally
    many pathways) share one ``ode`` and one loss, so diffrax traces and XLA compiles them once.

    The operands (:meth:`ReducedFlow.operands`) gather every pathway in one product: with
    ``F = [E_1 W_1, ..., E_n W_n]`` (each map written into the rows of its target features) and
    ``S[j, p] = Sigma_x(j, p)`` the block matrix of all input correlations,
    ``E_p G_p = (Sigma_yx^E - F S)[:, p]`` and ``L = 1/2 tr<yy^T> - <F, Sigma_yx^E> + 1/2 <F, F S>``,
    where ``Sigma_yx^E`` holds each ``E_p Sigma_yx(p)`` in the columns of pathway ``p``: the
    gradients ``G_p = Sigma_yx(p) - sum_j E_p^T E_j W_j Sigma_x(j, p)`` and
    :meth:`ReducedFlow.loss` term by term."""

    def __init__(self, key):
        self.key = key
        self.num_outputs, layout = key
        self.outputs = [outputs for _, _, _, outputs in layout]
        self.widths = [width for _, width, _, _ in layout]  # min(outputs, inputs), set in the key
        sizes = [inputs for _, _, inputs, _ in layout]
        self.columns = [slice(start, start + size) for start, size in zip(np.cumsum([0, *sizes[:-1]]), sizes)]
        self.total_inputs = int(sum(sizes))
        # a pathway that writes every target feature in order needs no scatter or gather
        self._every = [outputs == tuple(range(self.num_outputs)) for outputs in self.outputs]
        template = [
            [np.zeros((width, inputs))]
            + [np.zeros((width, width)) for _ in range(depth - 2)]
            + [np.zeros((len(outputs), width))]
            for depth, width, inputs, outputs in layout
        ]
        self.shapes = [[layer.shape for layer in chain] for chain in template]
        flat, self.unravel = ravel_pytree(template)
        self.size = flat.size
        self.ode = self._make_ode()
        self.loss_of_states = jax.jit(jax.vmap(self.loss_of_state, in_axes=(0, None, None, None)))
        self.descent_losses = jax.jit(self._descent_losses, static_argnames=("steps",))

    _known: dict[tuple, FlowStructure] = {}

    #: the race's state is padded to a multiple of this many entries (float64 lanes of AVX-512)
    RACE_LANES = 8

    @cached_property
    def race_size(self) -> int:
        """The size of :attr:`race_ode`'s state: :attr:`size` padded with zeros to a multiple of
        :data:`RACE_LANES`. XLA's CPU code for a vector of another length ends in a scalar loop,
        which rounds the solver's updates differently from the vector loop that a batch of
        several points runs them in; padded, a point's race is the same bit for bit in a batch of
        one or of many (:mod:`numeric.batched_race`)."""
        return -(-self.size // self.RACE_LANES) * self.RACE_LANES

    @cached_property
    def race_ode(self):
        """:attr:`ode` on the padded state of :attr:`race_size` entries; the padding stays zero."""
        size, padding, ode = self.size, self.race_size - self.size, self.ode

        def f(t, y, args):
            return jnp.concatenate([ode(t, y[:size], args), jnp.zeros(padding, y.dtype)])

        f.__name__, f.__doc__ = "padded_reduced_flow", ode.__doc__
        f.persistent_key = f"padded {ode.persistent_key}"  # type: ignore[attr-defined]
        return f

    def race_loss(self, y, sigma_yx_written, sigma_x_blocks, power):
        """:meth:`loss_of_state` of a padded state (:attr:`race_size`)."""
        return self.loss_of_state(y[: self.size], sigma_yx_written, sigma_x_blocks, power)

    @cached_property
    def race_loss_of_each(self):
        """:meth:`race_loss` of many padded states, each at its own operands (rows), compiled once."""
        return jax.jit(jax.vmap(self.race_loss))

    @classmethod
    def of(cls, num_outputs: int, pathways) -> FlowStructure:
        return cls._of_key(
            (
                int(num_outputs),
                tuple(
                    (p.depth, min(len(p.outputs), len(p.inputs)), len(p.inputs), tuple(int(o) for o in p.outputs))
                    for p in pathways
                ),
            )
        )

    @classmethod
    def _of_key(cls, key) -> FlowStructure:
        """The one structure of ``key``, built on first use."""
        if key not in cls._known:
            cls._known[key] = cls(key)
        return cls._known[key]

    def reduced(self, rank: int | None, widths: Sequence[int], inputs: Sequence[int]) -> FlowStructure:
        """This structure with ``widths[p]`` hidden units and ``inputs[p]`` input coordinates in
        pathway ``p`` and, with ``rank``, every pathway writing ``rank`` output coordinates instead
        of the target features (see :meth:`ReducedFlow.race_ode`)."""
        layout = tuple(
            (depth, int(width), int(size), outputs if rank is None else tuple(range(rank)))
            for (depth, _, _, outputs), width, size in zip(self.key[1], widths, inputs)
        )
        return self._of_key((self.num_outputs if rank is None else int(rank), layout))

    def map_layers(self, y: np.ndarray, transform) -> np.ndarray:
        """The flattened state ``y`` (rows: states) with layer ``e`` of pathway ``p``'s chain
        replaced by ``transform(p, e, layer)`` (its shape may change), flattened again in the same
        order, on the host."""
        y = np.asarray(y, dtype=np.float64)
        parts, position = [], 0
        for p, chain in enumerate(self.shapes):
            for e, shape in enumerate(chain):
                size = int(np.prod(shape))
                layer = y[..., position : position + size].reshape(*y.shape[:-1], *shape)
                position += size
                parts.append(transform(p, e, layer).reshape(*y.shape[:-1], -1))
        return np.concatenate(parts, axis=-1)

    @staticmethod
    def maps(chains):
        """``W_p`` of every pathway from its weight chain (first layer first)."""
        out = []
        for chain in chains:
            product = chain[0]
            for w in chain[1:]:
                product = w @ product
            out.append(product)
        return out

    def written(self, maps):
        """``F = [E_1 W_1, ..., E_n W_n]``: every map in the rows of its target features."""
        blocks = []
        for p, m in enumerate(maps):
            if self._every[p]:
                blocks.append(m)
            else:
                blocks.append(
                    jnp.zeros((self.num_outputs, m.shape[1]), m.dtype).at[jnp.asarray(self.outputs[p])].set(m)
                )
        return jnp.concatenate(blocks, axis=1)

    def loss_of_state(self, y, sigma_yx_written, sigma_x_blocks, power):
        written = self.written(self.maps(self.unravel(y)))
        return power / 2 - jnp.sum(written * sigma_yx_written) + jnp.sum(written * (written @ sigma_x_blocks)) / 2

    def descent_step(self, y, operands):
        """One gradient-descent step ``y <- y + f(0, y, args)`` (the learning rate is ``1/tau``,
        inside ``f``), ``operands = (args, power)`` (:meth:`ReducedFlow.ode_args` and the
        ``tr<yy^T>`` of :meth:`ReducedFlow.operands`); returns the new state and the loss before it."""
        args, power = operands
        _, written, blocks = args
        return y + self.ode(0.0, y, args), self.loss_of_state(y, written, blocks, power)

    def _descent_losses(self, y0, args, power, steps: int):
        """Loss before each of ``steps`` gradient-descent steps (:meth:`descent_step`)."""
        return jax.lax.scan(lambda y, _: self.descent_step(y, (args, power)), y0, None, length=steps)[1]

    def _make_ode(self):
        unravel, columns, outputs, every = self.unravel, self.columns, self.outputs, self._every

        def f(t, y, args):
            tau, sigma_yx_written, sigma_x_blocks = args
            chains = unravel(y)
            error = sigma_yx_written - self.written(self.maps(chains)) @ sigma_x_blocks
            rates = []
            for p, chain in enumerate(chains):
                g = error[:, columns[p]]
                if not every[p]:
                    g = g[jnp.asarray(outputs[p])]
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

        f.__name__ = "reduced_flow"
        f.persistent_key = f"reduced_flow {self.key!r}"  # type: ignore[attr-defined]  # names its compiled solves on disk
        f.__doc__ = (
            "f(t, y, args): d/dt of the flattened weight chains of every pathway, y of shape "
            f"({self.size},).\nargs = (tau, sigma_yx_written, sigma_x_blocks): tau = 1/learning_rate, "
            f"E_p Sigma_yx(p) in pathway p's columns ({self.num_outputs}, {self.total_inputs}), and the "
            f"blocks Sigma_x(j, p) ({self.total_inputs}, {self.total_inputs}) (ReducedFlow.operands)"
        )
        return f


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
            [*task.inputs, *task.targets],
            list(derivation.parameters),
            f"data_{derivation.network.name}",
            backend="numpy",
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
        self.structure = FlowStructure.of(task.num_outputs, self.pathways)
        self.widths = self.structure.widths
        self._unravel = self.structure.unravel
        self.ode = self.structure.ode

    @cached_property
    def _mode_values(self):
        """The derived modes of every pathway at many points (:mod:`numeric.mode_values`), through
        the one hand-off: never an SVD of the data here. Built on first use, so a flow that never
        asks for its basis never derives modes; one function per pathway, shared by every network
        with that pathway."""
        derivation = self.derivation
        return [
            pathway_mode_values(
                pathway_derivation,
                derivation.parameters,
                f"modes_{derivation.network.name}.{pathway_derivation.name}",
                cache_key=key_of(derivation),
            )
            if pathway_derivation.modes
            else None
            for pathway_derivation in derivation.pathways
        ]

    def correlations(self, values):
        """``(Sigma_yx[p], Sigma_x[j][p], tr<yy^T>)`` at ``values`` (THEORY Eq. 4), from the data, in
        numpy."""
        return self._at_values("_correlation_cache", self._correlations_at, values)

    #: what the flow asks at a point (``slot``: computed for many points at once)
    _POINT_SLOTS = {
        "_correlation_cache": "_correlations_batch",
        "_operand_cache": "_operands_batch",
        "_basis_cache": "_basis_batch",
        "_output_basis_cache": "_output_basis_batch",
        "_input_basis_cache": "_input_basis_batch",
        "_minimum_cache": "_minimum_loss_batch",
    }

    def _at_values(self, slot: str, compute, values):
        """``compute(values)``, kept for the points :meth:`prepare` was given and for the last
        other set of values (callers ask many times at one point)."""
        key = tuple(float(v) for v in values)
        cache = self.__dict__.setdefault(slot, {})
        if key not in cache:
            prepared = self.__dict__.get("_prepared", set())
            for other in [k for k in cache if k not in prepared]:
                del cache[other]
            cache[key] = compute(values)
        return cache[key]

    def prepare(self, values: Float[ArrayLike, "points parameters"]) -> None:
        """Compute what the flow asks at each row of ``values`` (correlations, operands, modes,
        output basis, least loss) for all rows at once, in vectorised numpy: a sweep's points then
        cost no evaluation each. Replaces the points an earlier call prepared."""
        values = np.atleast_2d(np.asarray(values, dtype=np.float64))
        keys = [tuple(float(v) for v in row) for row in values]
        self.__dict__["_prepared"] = set(keys)
        for slot, batch in self._POINT_SLOTS.items():
            computed = getattr(self, batch)(values)
            self.__dict__[slot] = dict(zip(keys, computed))

    def _correlations_at(self, values):
        return self._correlations_batch(np.asarray(values, dtype=np.float64)[None])[0]

    def _data_batch(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs ``(points, N, in)`` and targets ``(points, N, out)`` at every row of ``values``."""
        count, inputs, outputs = self._data_shape
        points = len(values)
        flat = np.asarray(self._data(*values.T), dtype=np.float64)
        flat = np.broadcast_to(flat.reshape(flat.shape[0], -1), (flat.shape[0], points)).T
        return flat[:, : count * inputs].reshape(points, count, inputs), flat[:, count * inputs :].reshape(
            points, count, outputs
        )

    def _correlations_batch(self, values: np.ndarray) -> list:
        count = self._data_shape[0]
        x, y = self._data_batch(values)
        sigma_yx: list[np.ndarray] = []
        sigma_x: list[list[np.ndarray]] = [[np.zeros(0)] * len(self.pathways) for _ in self.pathways]
        for p, pathway in enumerate(self.pathways):
            xp, yp = x[:, :, list(pathway.inputs)], y[:, :, list(pathway.outputs)]
            sigma_yx.append(np.matmul(np.swapaxes(yp * self._active[p][None, :, None], 1, 2), xp) / count)
            for j, other in enumerate(self.pathways):
                both = self._active[p] * self._active[j]
                sigma_x[j][p] = (
                    np.matmul(np.swapaxes(x[:, :, list(other.inputs)] * both[None, :, None], 1, 2), xp) / count
                )
        power = np.sum(y * y, axis=(1, 2)) / count
        return [
            ([m[k] for m in sigma_yx], [[m[k] for m in row] for row in sigma_x], float(power[k]))
            for k in range(len(values))
        ]

    def maps(self, chains):
        """``W_p`` of every pathway from its weight chain (first layer first)."""
        return FlowStructure.maps(chains)

    def operands(self, values):
        """``(Sigma_yx^E, S, tr<yy^T>)`` at ``values``: the correlations as :class:`FlowStructure`'s
        one product takes them."""
        return self._at_values("_operand_cache", self._operands_at, values)

    def _operands_at(self, values):
        return self._operands_batch(np.asarray(values, dtype=np.float64)[None])[0]

    def _operands_batch(self, values: np.ndarray) -> list:
        found = []
        structure = self.structure
        for sigma_yx, sigma_x, power in self._correlations_batch_or_cached(values):
            written = np.zeros((structure.num_outputs, structure.total_inputs))
            blocks = np.zeros((structure.total_inputs, structure.total_inputs))
            for p, pathway in enumerate(self.pathways):
                written[np.asarray(pathway.outputs, dtype=int), structure.columns[p]] = sigma_yx[p]
                for j in range(len(self.pathways)):
                    blocks[structure.columns[j], structure.columns[p]] = sigma_x[j][p]
            found.append((written, blocks, power))
        return found

    def _correlations_batch_or_cached(self, values: np.ndarray) -> list:
        """The correlations at every row of ``values``, read where held (:meth:`prepare`)."""
        cache = self.__dict__.get("_correlation_cache", {})
        keys = [tuple(float(v) for v in row) for row in values]
        if all(key in cache for key in keys):
            return [cache[key] for key in keys]
        return self._correlations_batch(values)

    def ode_args(self, tau: float, values):
        """``args`` of :attr:`ode` at ``tau = 1/learning_rate`` and ``values``."""
        written, blocks, _ = self.operands(values)
        return (jnp.float64(tau), written, blocks)

    def losses_of_states(self, ys, values):
        """Loss of every flattened state in ``ys`` (rows), compiled once per structure and number
        of rows rounded up to a power of two (the race asks for every length up to a segment)."""
        return _losses(self.structure, ys, *self.operands(values))

    @cached_property
    def _output_rank(self) -> int | None:
        """How many output coordinates :meth:`output_basis` keeps: ``min(features, datapoints,
        inputs)``; ``None`` where that is every target feature, or where some pathway writes only
        some of them (its last layer's rows are fixed features, not free coordinates)."""
        structure = self.structure
        rank = min(structure.num_outputs, self._data_shape[0], structure.total_inputs)
        return None if rank >= structure.num_outputs or not all(structure._every) else rank

    def output_basis(self, values) -> np.ndarray | None:
        """An orthonormal basis ``Q`` (target features x r) whose span holds every column of
        ``Sigma_yx^E``, or ``None`` where :attr:`_output_rank` is.

        The flow never leaves that span: ``E_p G_p = (Sigma_yx^E - F S)[:, p]`` has its columns in
        the span of ``Sigma_yx^E`` and of ``F``, so last layers whose columns start there stay
        there (each pathway starts on its modes ``u_k``, which lie in the range of
        ``Sigma_yx(p)``). Written as ``W_D = Q M_D``, the gradient flow of ``M_D`` is the flow with
        ``Q^T Sigma_yx^E`` for ``Sigma_yx^E`` (``Q`` is an isometry), and every loss is the same.
        The span's dimension is at most ``min(features, datapoints, inputs)``, as each column is an
        average of ``y x^T`` over the data; ``r`` is that bound, fixed by the shapes, so every point
        of a sweep shares one compiled program. Section 4: 24 coordinates for 60 features."""
        rank = self._output_rank
        if rank is None:
            return None
        return self._at_values(
            "_output_basis_cache", lambda v: self._output_basis_batch(np.asarray(v, dtype=np.float64)[None])[0], values
        )

    def _output_basis_batch(self, values: np.ndarray) -> list:
        rank = self._output_rank
        if rank is None:
            return [None] * len(values)
        cache = self.__dict__.get("_operand_cache", {})
        keys = [tuple(float(v) for v in row) for row in values]
        written = np.stack(
            [(cache[key] if key in cache else self._operands_at(row))[0] for key, row in zip(keys, values)]
        )
        return list(_span_basis(written, rank))

    @cached_property
    def _input_ranks(self) -> list[int]:
        """Per pathway, how many input coordinates :meth:`input_bases` keeps: ``min(inputs, active
        datapoints)`` (at least one, so that no array is empty)."""
        return [max(1, min(len(p.inputs), int(np.sum(active)))) for p, active in zip(self.pathways, self._active)]

    @cached_property
    def _kept_units(self) -> list[int]:
        """Per pathway, the hidden units :meth:`race_ode` keeps: one per derived mode (at least
        one). A unit whose first-layer row and last-layer column are zero (the padding of
        :meth:`_basis_batch`) has zero rates in every layer, so it stays zero and adds nothing to
        the map; a middle layer's diagonal entry on it stays put and multiplies zeros."""
        return [
            max(1, min(width, len(derived.modes) if derived.modes else 0))
            for width, derived in zip(self.widths, self.derivation.pathways)
        ]

    def input_bases(self, values) -> list[np.ndarray | None]:
        """Per pathway ``p``, an orthonormal basis ``P_p`` (its inputs x :attr:`_input_ranks`) of the
        span of its active datapoints' inputs, or ``None`` where that rank is every input.

        The flow's first layers never leave these spans: ``Sigma_yx(p)`` and every ``Sigma_x(j,
        p)`` are averages of ``(...) x_p^T`` over datapoints active in ``p``, so the rows of the
        gradient ``G_p`` lie in the span, and each chain starts on its modes' ``v_k``, which lie in
        it too. Written as ``W_1 = M_1 P_p^T``, the flow of ``M_1`` is the flow with
        ``Sigma_yx(p) P_p`` and ``P_j^T Sigma_x(j, p) P_p``, every loss the same. Context
        pathways, active on a few datapoints of many inputs, shrink most: the three-context
        example's ``ctx-only`` has 4, 2 and 2 input coordinates for 7 inputs each."""
        return self._at_values(
            "_input_basis_cache", lambda v: self._input_basis_batch(np.asarray(v, dtype=np.float64)[None])[0], values
        )

    def _input_basis_batch(self, values: np.ndarray) -> list:
        x, _ = self._data_batch(values)
        per_pathway = []
        for p, pathway in enumerate(self.pathways):
            rank = self._input_ranks[p]
            if rank >= len(pathway.inputs):
                per_pathway.append([None] * len(values))
                continue
            rows = x[:, self._active[p] > 0][:, :, list(pathway.inputs)]  # (points, active datapoints, inputs)
            per_pathway.append(list(_span_basis(np.swapaxes(rows, 1, 2), rank)))
        return [[bases[k] for bases in per_pathway] for k in range(len(values))]

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

    def states(
        self,
        ts: Times,
        a0: Float[ArrayLike, " pathways"] | None,
        tau: float,
        values: Values,
        rtol: float = 1e-9,
        atol: float = 1e-14,
        log_a0: Float[ArrayLike, " pathways"] | None = None,
    ):
        """Flattened weight chains at times ``ts``, shape ``(T, structure.size)``.

        With ``log_a0`` (one ``log a0`` per pathway) instead of ``a0``, seeds far below float range
        start as :meth:`start` says, and times before its start come from the linear phase."""
        args = self.ode_args(tau, values)
        if log_a0 is None:
            y0, _ = ravel_pytree(self.initial_chains(a0, values))
            return integrate_ode(self.ode, y0, ts, args, rtol=rtol, atol=atol)
        ts = np.asarray(ts, dtype=np.float64)
        t0, y0, scale = self.start(log_a0, tau, values)
        early = ts < t0
        rows = [self._flat(self._chains_at(self.linear_phase(log_a0, t, tau, values), values)) for t in ts[early]]
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
                    atol=relative_floor(scale, rtol, atol),
                )
            )
            rows += list(solved[len(grid) - len(later) :])
        return jnp.asarray(np.stack(rows))

    def solve(self, ts: Times, a0, tau: float, values: Values, **options):
        """Weight chains at times ``ts`` (a pytree with a leading time axis); as :meth:`states`."""
        return jax.vmap(self._unravel)(self.states(ts, a0, tau, values, **options))

    def trajectory(self, ts, a0, tau, values, **tolerances) -> FlowTrajectory:
        return FlowTrajectory(self, self.solve(ts, a0, tau, values, **tolerances), values)

    def loss_curve_from_log(
        self, ts: Times, log_a0: Float[ArrayLike, " pathways"], tau: float, values: Values
    ) -> Float[Array, " T"]:
        """Loss at epochs ``ts`` from ``log a0`` per pathway (as :meth:`numeric.race.CompiledNetwork.loss_curve_from_log`)."""
        return self.losses_of_states(self.states(ts, None, tau, values, log_a0=log_a0), values)

    # --- seeds as logarithms; crossing times without a grid ---------------------------------
    #: the flow starts where the first mode reaches this fraction of its scale ``s / d_max``
    LINEAR_PHASE_END = 1e-10

    def _basis(self, values):
        """Per pathway: ``(mask, u, s, vt)`` of ``Sigma_yx(p)`` and the largest eigenvalue of ``Sigma_x(p, p)``."""
        return self._at_values("_basis_cache", self._compute_basis, values)

    def _compute_basis(self, values):
        return self._basis_batch(np.asarray(values, dtype=np.float64)[None])[0]

    def _basis_batch(self, values: np.ndarray) -> list:
        """The derived modes at every row of ``values``, padded with zero modes to each chain's
        hidden width."""
        points = len(values)
        correlations = self._correlations_batch_or_cached(values)
        per_pathway = []
        for p, values_of in enumerate(self._mode_values):
            outputs, inputs, width = len(self.pathways[p].outputs), len(self.pathways[p].inputs), self.widths[p]
            u, s, vt = np.zeros((points, outputs, width)), np.zeros((points, width)), np.zeros((points, width, inputs))
            if values_of is not None:
                modes = values_of(values)
                count = modes.s.shape[1]
                s[:, :count], u[:, :, :count] = modes.s, modes.u
                vt[:, :count] = np.swapaxes(modes.v, 1, 2)
            u = u * np.where(s < 0, -1.0, 1.0)[:, None, :]  # s >= 0 by derivation; kept so if a value flips it
            s = np.abs(s)
            scale = np.maximum(np.max(s, axis=1, initial=0.0), _RANK_TOLERANCE)
            mask = (s > _RANK_TOLERANCE * scale[:, None]).astype(float)
            diagonal = np.stack([c[1][p][p] for c in correlations])
            largest = np.max(np.linalg.eigvalsh(diagonal), axis=1) if diagonal.shape[1] else np.zeros(points)
            per_pathway.append((mask, u * mask[:, None, :], s * mask, vt * mask[:, :, None], largest))
        return [
            [(mask[k], u[k], s[k], vt[k], float(largest[k])) for mask, u, s, vt, largest in per_pathway]
            for k in range(points)
        ]

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

    def unit_modes(self, values) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """``(pathway index, u, v)`` of every hidden unit of every chain at ``values``, in the
        order of the flattened state: each pathway's derived modes, padded with zero modes to its
        chain's width (:meth:`state_from_strengths` takes one strength per entry)."""
        basis = self._basis(values)
        return [(p, basis[p][1][:, k], basis[p][3][k]) for p in range(len(basis)) for k in range(len(basis[p][0]))]

    def state_from_strengths(self, strengths, values) -> np.ndarray:
        """The flattened balanced chains (host numbers) whose units, in :meth:`unit_modes`' order,
        have strengths ``strengths`` (``a``; 0 gives a unit at zero)."""
        strengths = np.asarray(strengths, dtype=np.float64)
        with np.errstate(divide="ignore"):
            logs = np.log(strengths)
        bounds = np.cumsum([0, *self.widths])
        return self._flat(self._chains_at([logs[bounds[p] : bounds[p + 1]] for p in range(len(self.widths))], values))

    def _chains_at(self, logs, values):
        """Balanced chains with per-unit layer factors ``exp(log a / D)`` on each pathway's modes."""
        chains = []
        for p, (mask, u, _, vt, _) in enumerate(self._basis(values)):
            depth = self.pathways[p].depth
            roots = np.exp(np.asarray(logs[p], dtype=np.float64) / depth)
            chain = [(roots * mask)[:, None] * vt]
            chain += [np.diag(roots) for _ in range(depth - 2)]
            chain.append(u * (roots * mask)[None, :])
            chains.append(chain)
        return chains

    @staticmethod
    def _flat(chains) -> np.ndarray:
        """``chains`` (numpy) flattened as ``ravel_pytree`` flattens them, on the host: a batched
        race builds a start at every point, and device ops would dispatch one by one."""
        return np.concatenate(
            [np.ravel(np.asarray(leaf, dtype=np.float64)) for leaf in jax.tree_util.tree_leaves(chains)]
        )

    def start(self, log_a0, tau, values):
        """``(t0, y0, scale)``: where the integration of the exact flow starts, its flattened chains
        there, and the smallest nonzero layer factor (the solver's absolute tolerance is scaled to it:
        :func:`relative_floor`).

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
        y0 = self._flat(self._chains_at(logs, values))
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
        return self._minimum_loss_batch(np.asarray(values, dtype=np.float64)[None])[0]

    def _minimum_loss_batch(self, values: np.ndarray) -> list[float]:
        """:meth:`_minimum_loss` at every row of ``values``: features written by the same pathways
        share one Hessian, whose pseudo-inverse (at ``lstsq``'s cutoff) serves them all."""
        correlations = self._correlations_batch_or_cached(values)
        sigma_yx = [np.stack([c[0][p] for c in correlations]) for p in range(len(self.pathways))]
        total = np.array([c[2] for c in correlations], dtype=np.float64) / 2
        writers_of: dict[tuple, list[tuple[int, ...]]] = {}
        for o in sorted({o for p in self.pathways for o in p.outputs}):
            writers = tuple(p for p, pathway in enumerate(self.pathways) if o in pathway.outputs)
            writers_of.setdefault(writers, []).append(tuple(self.pathways[p].outputs.index(o) for p in writers))
        for writers, rows in writers_of.items():
            hessian = np.stack([np.block([[c[1][j][p] for p in writers] for j in writers]) for c in correlations])
            cutoff = np.finfo(np.float64).eps * hessian.shape[-1]
            inverse = np.linalg.pinv(hessian, rtol=cutoff, hermitian=True)
            # (points, features, n): each feature's Sigma_yx rows, pathway after pathway
            linear = np.stack(
                [np.concatenate([sigma_yx[p][:, row] for p, row in zip(writers, feature)], axis=1) for feature in rows],
                axis=1,
            )
            best = np.einsum("pij,pfj->pfi", inverse, linear)
            total += np.sum(
                -np.sum(linear * best, axis=2) + np.einsum("pfi,pij,pfj->pf", best, hessian, best) / 2, axis=1
            )
        return [float(x) for x in total]

    def race_ode(
        self,
        log_a0: Float[ArrayLike, " pathways"],
        tau: float,
        values: Values,
        rtol: float = 1e-10,
        atol: float = 1e-14,
        *,
        compress: bool = True,
    ) -> RaceODE:
        """The exact flow from ``log a0`` per pathway as :func:`numeric.race.ode_race` reads it:
        started as :meth:`start` says, its initial loss that of the chains at ``log a0`` (before
        the linear phase), its least loss that over all maps, its absolute tolerance :func:`relative_floor`.

        With ``compress`` (the default) the flow is written where it stays, the same race in
        fewer variables: the last layers in :meth:`output_basis`, the first layers in
        :meth:`input_bases`, and only the units of the derived modes (:attr:`_kept_units`).
        Section 4's flow of 2413 variables became one of 1153 in the output span alone; the
        three-context example's flows of 98, 249 and 315 variables (``dense``, ``common+ctx``,
        ``ctx-only``, already in the output span) become 84, 178 and 88."""
        row = np.asarray(values, dtype=np.float64).reshape(1, -1)
        return self.race_odes(
            np.asarray(log_a0, dtype=np.float64)[None], np.array([tau]), row, rtol, atol, compress=compress
        )[0]

    def race_odes(
        self,
        log_a0: Float[ArrayLike, "points pathways"],
        tau: Float[ArrayLike, " points"],
        values: Float[ArrayLike, "points parameters"],
        rtol: float = 1e-10,
        atol: float = 1e-14,
        *,
        compress: bool = True,
    ) -> list[RaceODE]:
        """:meth:`race_ode` at every row (a sweep's points): their operands on the host and their
        initial losses in one compiled call, where a device call per point took most of a
        sweep's setup."""
        log_a0, tau = np.asarray(log_a0, dtype=np.float64), np.asarray(tau, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64).reshape(len(tau), -1)
        parts = [
            self._race_parts(logs, float(t), tuple(float(v) for v in row), compress)
            for logs, t, row in zip(log_a0, tau, values)
        ]
        if not parts:
            return []
        structure = parts[0][0]
        initial = _losses_of_each(structure, *(np.stack([part[k] for part in parts]) for k in range(1, 5)))
        problems = []
        for (_, _, written, blocks, power, y0, t0, scale, row), t, loss in zip(parts, tau, initial):
            problems.append(
                RaceODE(
                    f=structure.race_ode,
                    y0=y0,
                    t0=t0,
                    args=(np.float64(t), written, blocks),
                    loss=structure.race_loss,
                    loss_args=(written, blocks, power),
                    loss_of_states=partial(_padded_losses, structure, written, blocks, power),
                    initial_loss=float(loss),
                    minimum_loss=partial(self._at_values, "_minimum_cache", self._minimum_loss, row),
                    rtol=rtol,
                    atol=relative_floor(scale, rtol, atol),
                )
            )
        return problems

    def _race_parts(self, log_a0: np.ndarray, tau: float, values: tuple, compress: bool):
        """What :meth:`race_odes` needs of one point, on the host: ``(structure, initial state,
        written, blocks, power, y0, t0, scale, values)``; the structure is the same at every
        point (the output rank is fixed by the shapes)."""
        written, blocks, power = self.operands(values)
        full, count = self.structure, len(self.pathways)
        basis = self.output_basis(values) if compress else None
        inputs = self.input_bases(values) if compress else [None] * count
        units = self._kept_units if compress else self.widths
        sizes = [len(p.inputs) if b is None else b.shape[1] for p, b in zip(self.pathways, inputs)]
        structure = full.reduced(None if basis is None else basis.shape[1], units, sizes)
        # one block-diagonal change of input coordinates for every pathway at once
        change = np.zeros((full.total_inputs, structure.total_inputs))
        for p, b in enumerate(inputs):
            change[full.columns[p], structure.columns[p]] = np.eye(sizes[p]) if b is None else b
        written = np.asarray(written) @ change
        if basis is not None:
            written = basis.T @ written
        blocks = change.T @ np.asarray(blocks) @ change

        def reduce_layer(p, e, layer):
            kept, last = units[p], len(full.shapes[p]) - 1
            if e == 0:
                layer = layer[..., :kept, :]
                return layer if inputs[p] is None else layer @ inputs[p]
            if e < last:
                return layer[..., :kept, :kept]
            layer = layer[..., :kept]
            return layer if basis is None else np.einsum("or,...oh->...rh", basis, layer)

        def coordinates(y):
            reduced = full.map_layers(y, reduce_layer)
            return np.concatenate([reduced, np.zeros((*reduced.shape[:-1], structure.race_size - structure.size))], -1)

        initial_state = self._flat(
            self._chains_at([np.full(len(b[0]), log_a0[p]) for p, b in enumerate(self._basis(values))], values)
        )
        t0, y0, scale = self.start(log_a0, tau, values)
        return (
            structure,
            coordinates(initial_state),
            written,
            blocks,
            np.float64(power),
            coordinates(y0),
            t0,
            scale,
            values,
        )

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

        The flow starts as :meth:`start` says and is read off by :func:`numeric.race.ode_race`
        (:meth:`race_ode`): crossings by brentq within a solver step, no sampling grid; the run ends
        early once the loss is within ``SETTLED_TOLERANCE`` of the least loss over all maps."""
        log_a0 = np.asarray(log_a0, dtype=np.float64)
        problem = self.race_ode(log_a0, tau, values, rtol, atol)
        if problem.t0 >= horizon:
            # still in the linear phase at the horizon: within LINEAR_PHASE_END of the initial loss
            state = self._flat(self._chains_at(self.linear_phase(log_a0, float(horizon), tau, values), values))
            final = float(self.losses_of_states(np.asarray(state)[None], values)[0])
            return RaceResult(
                problem.initial_loss,
                {f: None for f in fractions},
                final / problem.initial_loss,
                float(horizon),
            )
        return problem.race(fractions, float(horizon))


def relative_floor(scale: float, rtol: float, atol: float) -> float:
    """The absolute tolerance of a flow whose smallest starting layer factor is ``scale``: ``atol``,
    lowered to ``rtol * scale`` where that is smaller, so that every component is under the
    solver's relative error control.

    A component below ``atol / rtol`` would escape it: while faster modes learn, their steps keep
    it accurate, but near a minimum the steps grow to the stability limit and a slow tiny mode
    would grow with an uncontrolled error. (A step limit of ``0.1 tau / s_max`` guarded against
    this before: Section 4's points below init 1e-5 took 1430 steps; under relative control they
    take 765-812, their crossings within 5e-12 of the step-limited ones.)"""
    return min(float(atol), float(rtol) * float(scale))


def _losses(structure: FlowStructure, ys, written, blocks, power) -> np.ndarray:
    """Loss of every flattened state in ``ys`` (rows) of ``structure``, padded on the host to a
    power of two rows (eager device ops compile per shape too)."""
    ys = np.asarray(ys, dtype=np.float64)
    rows = len(ys)
    padded = np.zeros((1 << max(rows - 1, 0).bit_length(), ys.shape[1]))
    padded[:rows] = ys
    return np.asarray(structure.loss_of_states(padded, written, blocks, power))[:rows]


def _padded_losses(structure: FlowStructure, written, blocks, power, ys) -> np.ndarray:
    """:func:`_losses` of padded states (:attr:`FlowStructure.race_size`)."""
    return _losses(structure, np.asarray(ys)[..., : structure.size], written, blocks, power)


def _losses_of_each(structure: FlowStructure, ys, written, blocks, power) -> np.ndarray:
    """The loss of each padded state in ``ys`` (rows) at its own operands (rows of ``written``,
    ``blocks`` and ``power``), in one call, padded to a power of two rows as :func:`_losses`."""
    rows = len(ys)
    size = 1 << max(rows - 1, 0).bit_length()
    padded = [np.concatenate([x, np.repeat(x[:1], size - rows, axis=0)]) for x in (ys, written, blocks, power)]
    return np.asarray(structure.race_loss_of_each(*padded))[:rows]


def _span_basis(matrix: np.ndarray, rank: int) -> np.ndarray:
    """``rank`` orthonormal columns whose span holds the columns of ``matrix`` (whose rank is at
    most ``rank``; a stack of matrices alike): its leading left singular vectors."""
    return np.linalg.svd(matrix, full_matrices=True)[0][..., :rank]


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
