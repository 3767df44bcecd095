"""The race-reduction derivation of one candidate network, as SymPy objects.

:class:`NetworkDerivation` follows the style of ``sympy.physics.mechanics.KanesMethod``:
it is built from a task and a network, exposes symbolic results as properties and
methods, caches them, and never computes numbers. Numbers come from :mod:`numeric`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property, partial

import sympy

from . import algebraic, exceptional, formulas
from .correlations import output_overlap, sigma_x, sigma_yx, target_power
from .errors import DerivationError
from .float_modes import (
    FLOAT_DERIVATION_ENTRIES,
    as_sympy,
    derives_in_floats,
    float_modes,
    float_sigma_x,
    float_sigma_yx,
)
from .modes import (
    FLOAT_ZERO,
    PRECISION_DIGITS,
    Mode,
    connected_blocks,
    find_modes,
    gram_matrix,
    singular_values,
    tidy,
    vanishes,
)
from .spec import Network, Pathway, Task
from .symbols import TAU, TIME
from .symmetry import GroupReduction, Symmetry, product, scaled_hadamard
from .symmetry import entries as symmetry_entries

#: Couplings between two modes whose ``s^2`` have no radical form are exact polynomials in the two
#: roots when the product of their degrees is at most this: 36 terms at most (4-item chain and
#: cluster blocks give cubics and quartics, 8-item mixes degree 5 and 6 with quartics: about 9 KB of
#: text per coupling). Above it (degrees 8 and 7 on Section 4: 56 terms with rationals of hundreds
#: of digits, about 45 KB per coupling and 170 MB of JSON for common+2) each is a named exact number,
#: :class:`derive.algebraic.CouplingNumber`, defined by the two modes' exact vectors, and
#: ``assumptions.named_couplings`` says where.
MAX_EXACT_COUPLING_DEGREE = 36


@dataclass(frozen=True)
class PathwayDerivation:
    """Effective dataset and modes of one pathway."""

    pathway: Pathway
    sigma_yx: sympy.ImmutableMatrix
    sigma_x: sympy.ImmutableMatrix
    modes: tuple[Mode, ...]
    strengths: tuple[sympy.Symbol, ...]
    initial_strengths: tuple[sympy.Symbol, ...]

    @property
    def name(self) -> str:
        return self.pathway.name


#: per task (by identity, held weakly), the effective correlations and modes of each gate,
#: inputs and outputs already derived: networks that share a pathway (every candidate of the
#: exhaustive search shares its pathways with hundreds of others) derive it once
_DERIVED_PATHWAYS: dict[int, tuple[weakref.ref, dict]] = {}


def _forget_task(identity: int, _reference) -> None:
    _DERIVED_PATHWAYS.pop(identity, None)


def _derived(task: Task) -> dict:
    """What is derived of ``task``'s pathways so far (see :data:`_DERIVED_PATHWAYS`)."""
    identity = id(task)
    held = _DERIVED_PATHWAYS.get(identity)
    if held is None or held[0]() is not task:
        held = (weakref.ref(task, partial(_forget_task, identity)), {})
        _DERIVED_PATHWAYS[identity] = held
    return held[1]


def _pathway_key(task: Task, pathway: Pathway) -> tuple:
    # the float route is part of the key: it can be switched for one task
    return (derives_in_floats(task), pathway.active, pathway.inputs, pathway.outputs)


def _pathway_modes(
    task: Task, pathway: Pathway, where: str
) -> tuple[sympy.ImmutableMatrix, sympy.ImmutableMatrix, tuple]:
    """``(Sigma_yx, Sigma_x, modes)`` of ``pathway`` on ``task``: numpy's SVD of the float64
    correlations for large numeric data (:mod:`derive.float_modes`), exact modes otherwise."""
    derived = _derived(task)
    key = _pathway_key(task, pathway)
    if key not in derived:
        if key[0]:
            syx_array, sx_array = float_sigma_yx(task, pathway), float_sigma_x(task, pathway, pathway)
            derived[key] = (as_sympy(syx_array), as_sympy(sx_array), tuple(float_modes(syx_array, sx_array)))
        else:
            syx, sx = sigma_yx(task, pathway), sigma_x(task, pathway, pathway)
            derived[key] = (syx, sx, tuple(find_modes(syx, sx, where)))
    return derived[key]


def _pathway_singular_values(task: Task, pathway: Pathway, where: str) -> tuple[sympy.Expr, ...]:
    """The ``s`` of every mode of ``pathway`` (:func:`_pathway_modes`, in its order), from the
    modes where they are derived, else from the eigenvalues alone
    (:func:`derive.modes.singular_values`): a crossover with a network needs no more of it."""
    derived = _derived(task)
    key = _pathway_key(task, pathway)
    if key[0] or key in derived:
        return tuple(m.s for m in _pathway_modes(task, pathway, where)[2])
    if ("singular values", key) not in derived:
        derived[("singular values", key)] = tuple(singular_values(sigma_yx(task, pathway), where))
    return derived[("singular values", key)]


def _pathway_conditions(task: Task, pathway: Pathway) -> tuple[sympy.Expr, ...]:
    """The exceptional conditions of one pathway's modes (:mod:`derive.exceptional`), once per task."""
    derived = _derived(task)
    key = ("exceptional", _pathway_key(task, pathway))
    if key not in derived:
        gram, _ = gram_matrix(sigma_yx(task, pathway))
        found: list[sympy.Expr] = []
        for indices in connected_blocks(gram):
            block = gram.extract(indices, indices)
            if block.free_symbols and not all(vanishes(e) for e in block):
                found.extend(exceptional.block_conditions(block))
        derived[key] = tuple(found)
    return derived[key]


@dataclass(frozen=True)
class ModeRef:
    """Where a mode sits: pathway position and mode position within it."""

    pathway: int
    mode: int


class NetworkDerivation:
    """Effective datasets, modes, assumption checks, race ODEs, closed forms and loss of a network.

    Every part is an exact SymPy object computed on first use (cached properties).

    Args:
        task: the task whose data the network learns.
        network: one of the task's networks, or its name.
    """

    def _repr_latex_(self) -> str:
        """Jupyter shows a derivation as its LaTeX: the body that ``gdln derive --latex-fragment``
        writes, less the crossovers (they need the task's other networks)."""
        from .latex import to_latex

        return to_latex(self)

    def __init__(self, task: Task, network: Network | str):
        self.task = task
        self.network = task.network(network) if isinstance(network, str) else network
        if self.network.shared:
            graph = self.network.graph
            assert graph is not None  # shared implies a graph
            edge = graph.edges[graph.shared_edges[0]]
            raise DerivationError(
                f"network {self.network.name!r}: edge {edge.name} lies on {len(graph.paths_through[graph.shared_edges[0]])} "
                "paths; the module race reduction needs private chains (use the shared-edge reduction, derive.shared)"
            )

    # --- effective datasets and modes -------------------------------------------------
    @cached_property
    def pathways(self) -> tuple[PathwayDerivation, ...]:
        derived = []
        for pathway in self.network.pathways:
            syx, sx, modes = _pathway_modes(
                self.task, pathway, f"network {self.network.name!r} pathway {pathway.name!r}"
            )
            # plain names (no LaTeX braces) for JSON keys and text; SymPy's LaTeX printer still
            # writes a_{net.pathway.k} from the underscore
            tag = f"{self.network.name}.{pathway.name}"
            derived.append(
                PathwayDerivation(
                    pathway=pathway,
                    sigma_yx=syx,
                    sigma_x=sx,
                    modes=modes,
                    strengths=tuple(sympy.Symbol(f"a_{tag}.{k}", positive=True) for k in range(len(modes))),
                    initial_strengths=tuple(sympy.Symbol(f"a0_{tag}.{k}", positive=True) for k in range(len(modes))),
                )
            )
        return tuple(derived)

    @property
    def in_floats(self) -> bool:
        """Whether this derivation runs in float64 (large parameter-free data, :mod:`derive.float_modes`)."""
        return derives_in_floats(self.task)

    @cached_property
    def mode_refs(self) -> tuple[ModeRef, ...]:
        return tuple(
            ModeRef(p, k)
            for p, pathway_derivation in enumerate(self.pathways)
            for k in range(len(pathway_derivation.modes))
        )

    def mode(self, ref: ModeRef) -> Mode:
        return self.pathways[ref.pathway].modes[ref.mode]

    @property
    def strengths(self) -> tuple[sympy.Symbol, ...]:
        """State vector of the race ODE, in :attr:`mode_refs` order."""
        return tuple(self.pathways[r.pathway].strengths[r.mode] for r in self.mode_refs)

    @property
    def initial_strengths(self) -> tuple[sympy.Symbol, ...]:
        return tuple(self.pathways[r.pathway].initial_strengths[r.mode] for r in self.mode_refs)

    @property
    def parameters(self) -> tuple[sympy.Symbol, ...]:
        return tuple(self.task.parameters)

    @cached_property
    def exceptional_set(self) -> tuple[sympy.Expr, ...]:
        """Where the generic formulas fail: irreducible polynomials in the parameters (``P = 0``
        on the set), from every pathway's Gram blocks (:mod:`derive.exceptional`: eigenvalues that
        meet, a rank that changes, an eigenvector formula that vanishes). Empty for a derivation
        without parameters. At such a point the toolkit derives at the point instead."""
        if not self.parameters or self.in_floats:
            return ()
        conditions: list[sympy.Expr] = []
        for pathway in self.network.pathways:
            conditions.extend(_pathway_conditions(self.task, pathway))
        return exceptional.irreducible_conditions(conditions, self.parameters)

    # --- interactions ------------------------------------------------------------------
    @cached_property
    def cross_correlations(self) -> dict[tuple[int, int], sympy.ImmutableMatrix]:
        """``Sigma_x(j, p)`` for ordered pairs of distinct pathways that share datapoints and outputs."""
        pairs = {}
        pathways = self.network.pathways
        for p, pathway_p in enumerate(pathways):
            for j, pathway_j in enumerate(pathways):
                if j == p or not set(pathway_j.outputs) & set(pathway_p.outputs):
                    continue
                matrix = sigma_x(self.task, pathway_j, pathway_p)
                if any(not vanishes(e) for e in matrix):
                    pairs[(j, p)] = matrix
        return pairs

    @property
    def interacting_pairs(self) -> list[tuple[str, str]]:
        names = [p.name for p in self.network.pathways]
        return sorted({(min(names[j], names[p]), max(names[j], names[p])) for j, p in self.cross_correlations})

    def correlation_between(self, j: int, p: int) -> sympy.ImmutableMatrix:
        """``Sigma_x(j, p)`` for any two pathway positions (zero when they share no datapoint)."""
        if j == p:
            return self.pathways[p].sigma_x
        if (j, p) in self.cross_correlations:
            return self.cross_correlations[(j, p)]
        pathways = self.network.pathways
        return sympy.ImmutableMatrix.zeros(len(pathways[j].inputs), len(pathways[p].inputs))

    def output_overlap(self, p: int, q: int) -> sympy.ImmutableMatrix:
        """``E_p^T E_q``: which target features of ``q`` are also written by ``p`` (|out_p| x |out_q|)."""
        return output_overlap(self.network.pathways[p], self.network.pathways[q])

    @cached_property
    def symmetry(self) -> Symmetry:
        """Singular classes, symmetric groups and the group reduction (:mod:`derive.symmetry`)."""
        return Symmetry(self)

    @cached_property
    def coupling(self) -> sympy.ImmutableMatrix:
        """``C[k, l] = (u_k^T E_k^T E_l u_l)(v_l^T Sigma_x(l, k) v_k)``: how mode ``l`` enters the error
        that drives mode ``k`` (Eq. 6 projected on the modes). Its diagonal is ``d``.

        Computed one pathway pair at a time on the modes' exact unnormalised vectors,
        ``(U_p^T O U_q) o (V_p^T Sigma_x(q, p)^T V_q) / (n_k s_k n_l s_l)``: zero couplings are exactly 0.
        Between modes of two high-degree algebraic values each is a named exact number
        (:meth:`_name_couplings`)."""
        refs = self.mode_refs
        entries = sympy.zeros(len(refs), len(refs))
        offsets = [0]
        for pathway_derivation in self.pathways:
            offsets.append(offsets[-1] + len(pathway_derivation.modes))
        for k, ref in enumerate(refs):
            entries[k, k] = self.mode(ref).d
        for q, p in self.cross_correlations:
            modes_p, modes_q = self.pathways[p].modes, self.pathways[q].modes
            degree = self._algebraic_degree(p) * self._algebraic_degree(q)
            if degree > MAX_EXACT_COUPLING_DEGREE:
                self._name_couplings(entries, offsets, p, q)
                continue
            (u_p, v_p), (u_q, v_q) = self.symmetry.raw_vectors[p], self.symmetry.raw_vectors[q]
            output_products = product(u_p.transpose(), self.symmetry.overlap(p, q), u_q)
            input_products = product(v_p.transpose(), self.symmetry.correlation(q, p).transpose(), v_q)
            # with algebraic (CRootOf) modes: exact in their polynomial ring, 1/n_k as an element of Q(r_k)
            ring_entries = (
                scaled_hadamard(
                    output_products,
                    input_products,
                    [algebraic.reciprocal(m.raw_norm2) for m in modes_p],
                    [algebraic.reciprocal(m.raw_norm2) for m in modes_q],
                )
                if degree > 1
                else None
            )
            if ring_entries is not None:
                for k, mode_k in enumerate(modes_p):
                    for l, mode_l in enumerate(modes_q):
                        if ring_entries[k][l] != 0:
                            entries[offsets[p] + k, offsets[q] + l] = ring_entries[k][l] / (mode_k.s * mode_l.s)
                continue
            outputs, inputs = symmetry_entries(output_products), symmetry_entries(input_products)
            for k, mode_k in enumerate(modes_p):
                for l, mode_l in enumerate(modes_q):
                    numerator = outputs[k][l] * inputs[k][l]
                    if numerator == 0 or (self.in_floats and vanishes(numerator)):
                        continue
                    entries[offsets[p] + k, offsets[q] + l] = tidy(
                        numerator / (mode_k.raw_norm2 * mode_k.s * mode_l.raw_norm2 * mode_l.s)
                    )
        return sympy.ImmutableMatrix(entries)

    def _name_couplings(self, entries, offsets: list[int], p: int, q: int) -> None:
        """Couplings of pathway ``p``'s modes to ``q``'s above :data:`MAX_EXACT_COUPLING_DEGREE`:
        named exact numbers (:class:`derive.algebraic.CouplingNumber`), left out where their value
        at ``PRECISION_DIGITS`` digits is below ``10^-(PRECISION_DIGITS - 10)``. A pair of modes whose
        own degrees multiply to at most the cap (rational modes beside the algebraic ones) is
        expanded exactly instead."""
        overlap, correlation = self.output_overlap(p, q), self.correlation_between(q, p)
        bar = sympy.Float(10) ** (-(PRECISION_DIGITS - 10))
        for k, mode_k in enumerate(self.pathways[p].modes):
            for l, mode_l in enumerate(self.pathways[q].modes):
                row, column = offsets[p] + k, offsets[q] + l
                ingredients = (mode_k.u_raw, mode_k.v_raw, mode_l.u_raw, mode_l.v_raw, overlap, correlation)
                number = algebraic.CouplingNumber(row, column, ingredients)
                if abs(number.value(PRECISION_DIGITS)) < bar:
                    continue
                if mode_k.degree * mode_l.degree > MAX_EXACT_COUPLING_DEGREE:
                    entries[row, column] = number
                    continue
                # these two modes are of low degree (rational ones among them): expanded exactly
                assert mode_k.u_raw is not None and mode_l.u_raw is not None
                assert mode_k.v_raw is not None and mode_l.v_raw is not None
                output = (mode_k.u_raw.T * overlap * mode_l.u_raw)[0, 0]
                inner = (mode_l.v_raw.T * correlation * mode_k.v_raw)[0, 0]
                scale = algebraic.exact_product(
                    output, inner, algebraic.reciprocal(mode_k.raw_norm2), algebraic.reciprocal(mode_l.raw_norm2)
                )
                entries[row, column] = tidy(scale / (mode_k.s * mode_l.s))

    @property
    def symmetric_groups(self) -> tuple[tuple[int, ...], ...]:
        """Symmetric pathways (see :attr:`derive.symmetry.Symmetry.groups`)."""
        return self.symmetry.groups

    @property
    def group_reduction(self) -> GroupReduction:
        """The race reduction with every symmetric group sharing one trajectory per singular class
        (see :attr:`derive.symmetry.Symmetry.reduction`)."""
        return self.symmetry.reduction

    def group_variable(self, ref: ModeRef) -> int:
        """Position in :attr:`group_reduction` of the shared trajectory a mode follows."""
        return self.symmetry.variable_of(ref.pathway, ref.mode)

    # --- assumptions -------------------------------------------------------------------
    @cached_property
    def diagonalisation_failures(self) -> list[str]:
        """Modes whose input singular vector is not an eigenvector of the pathway's ``Sigma_x``."""
        failures = []
        for pathway_derivation in self.pathways:
            for k, mode in enumerate(pathway_derivation.modes):
                if mode.shares_input_vector is not None:  # implicit roots: decided in their ring
                    shares = mode.shares_input_vector
                else:
                    # on the unnormalised exact vector: zero exactly when the normalised residual is
                    residual = (pathway_derivation.sigma_x * mode.v_raw - mode.d * mode.v_raw).applyfunc(tidy)
                    shares = all(e == 0 or vanishes(e) for e in residual)
                if not shares:
                    failures.append(
                        f"pathway {pathway_derivation.name!r} mode {k}: Sigma_yx and Sigma_x do not share right singular vectors "
                        "(Assumption 2.1.1 fails)"
                    )
        return failures

    @property
    def has_closed_form(self) -> bool:
        """Closed forms exist for depth-2 pathways whose modes are mutually diagonalisable, and,
        when pathways interact, whose :attr:`group_reduction` is exact and decoupled."""
        if self.diagonalisation_failures or not all(
            pathway_derivation.pathway.depth == 2 for pathway_derivation in self.pathways
        ):
            return False
        return not self.cross_correlations or self.group_reduction.decoupled

    @property
    def assumptions(self) -> dict:
        return {
            "mutually_diagonalisable": not self.diagonalisation_failures,
            "failures": list(self.diagonalisation_failures),
            "pathways_interact": bool(self.cross_correlations),
            "interacting_pairs": [list(pair) for pair in self.interacting_pairs],
            "shared_basis": self.group_reduction.exact if self.cross_correlations else None,
            "shared_basis_failures": list(self.group_reduction.failures) if self.cross_correlations else [],
            "symmetric_groups": [[self.network.pathways[p].name for p in g] for g in self.symmetric_groups],
            "closed_form": self.has_closed_form,
            "arithmetic": self.arithmetic,
            "exact_modes": all(m.exact for pathway_derivation in self.pathways for m in pathway_derivation.modes),
            "algebraic_values": self.algebraic_values,
            "named_couplings": self.named_couplings,
            "reduced_system": self.reduced_system.kind,
        }

    @property
    def arithmetic(self) -> str:
        """``"exact"``, or the float64 route and why (see :mod:`derive.float_modes`)."""
        if not self.in_floats:
            return "exact"
        entries = self.task.num_datapoints * self.task.num_inputs
        return (
            f"float: {entries} parameter-free input entries (above {FLOAT_DERIVATION_ENTRIES}); modes from numpy's "
            f"SVD of the effective correlations, zero below {FLOAT_ZERO:g}"
        )

    def _algebraic_degree(self, p: int) -> int:
        """The largest degree of a ``CRootOf`` singular value of pathway ``p`` (1 if none)."""
        return max((m.degree for m in self.pathways[p].modes if m.kind == "algebraic"), default=1)

    @property
    def named_couplings(self) -> list[list[str]]:
        """Pathway pairs whose couplings are named exact numbers (:class:`derive.algebraic.CouplingNumber`)
        rather than expanded polynomials in the roots (see :data:`MAX_EXACT_COUPLING_DEGREE`)."""
        names = [pathway_derivation.name for pathway_derivation in self.pathways]
        return [
            [names[q], names[p]]
            for (q, p) in self.cross_correlations
            if self._algebraic_degree(p) * self._algebraic_degree(q) > MAX_EXACT_COUPLING_DEGREE
        ]

    @property
    def coupling_numbers(self) -> list[algebraic.CouplingNumber]:
        """The named couplings of :attr:`coupling`, in row-major order."""
        return [c for c in self.coupling if isinstance(c, algebraic.CouplingNumber)]

    @property
    def algebraic_values(self) -> list[dict]:
        """Singular values with no radical form: exact ``CRootOf`` algebraic numbers, one entry per
        pathway and polynomial, with the degree of ``s^2``'s minimal polynomial. Couplings with
        these modes are exact polynomials in the roots, or named exact numbers (:attr:`named_couplings`)."""
        found = []
        for pathway_derivation in self.pathways:
            degrees = sorted({m.degree for m in pathway_derivation.modes if m.kind == "algebraic"})
            for degree in degrees:
                count = sum(1 for m in pathway_derivation.modes if m.kind == "algebraic" and m.degree == degree)
                found.append({"pathway": pathway_derivation.name, "modes": count, "degree": degree})
        return found

    # --- dynamics ------------------------------------------------------------------------
    @cached_property
    def rates(self) -> tuple[sympy.Expr, ...]:
        """``da_k/dt`` for every mode: the neural race reduction in mode coordinates."""
        a = sympy.Matrix(self.strengths)
        rates = []
        for k, ref in enumerate(self.mode_refs):
            drive = self.mode(ref).s - (self.coupling[k, :] * a)[0, 0]
            depth = self.pathways[ref.pathway].pathway.depth
            rates.append(formulas.mode_rate(a[k], drive, depth, TAU, sympy))
        return tuple(rates)

    @cached_property
    def reduced_system(self) -> ReducedSystem:
        """The system the network really has: one equation per (symmetric group, singular class)
        when the group reduction is exact, otherwise one per mode with the coupling matrix."""
        return ReducedSystem.of(self)

    @property
    def odes(self) -> tuple[sympy.Equality, ...]:
        return tuple(
            sympy.Eq(sympy.Derivative(sympy.Function(a.name)(TIME), TIME), rate, evaluate=False)
            for a, rate in zip(self.strengths, self.rates)
        )

    @cached_property
    def closed_forms(self) -> tuple[sympy.Expr, ...] | None:
        """``a_k(t)`` for every mode, ``None`` without :attr:`has_closed_form`.

        Interacting symmetric pathways substitute one trajectory per group and singular class
        (Appendices F, G), which turns ``d`` into the diagonal of the group coupling; the
        result holds when the modes of a group's class start from equal strengths."""
        if not self.has_closed_form:
            return None
        if not self.cross_correlations:
            variances = [self.mode(ref).d for ref in self.mode_refs]
        else:
            coupling = self.group_reduction.coupling
            variances = [coupling[i, i] for i in map(self.group_variable, self.mode_refs)]
        return tuple(
            formulas.mode_strength(self.mode(ref).s, d, a0, TIME, TAU, sympy)
            for ref, d, a0 in zip(self.mode_refs, variances, self.initial_strengths)
        )

    @cached_property
    def initial_loss(self) -> sympy.Expr:
        """Loss of the network at zero weights, ``1/2 tr <y y^T>``."""
        return target_power(self.task) / 2

    @cached_property
    def loss_in_strengths(self) -> sympy.Expr:
        """``L(a) = 1/2 tr<yy^T> - sum_k s_k a_k + 1/2 sum_kl C_kl a_k a_l`` for aligned weights."""
        if not self.mode_refs:  # nothing to learn at these values (e.g. a pathway's inputs vanish)
            return self.initial_loss
        a = sympy.Matrix(self.strengths)
        s = sympy.Matrix([self.mode(ref).s for ref in self.mode_refs])
        return self.initial_loss - (s.T * a)[0, 0] + (a.T * self.coupling * a)[0, 0] / 2

    @cached_property
    def loss(self) -> sympy.Expr | None:
        """Loss over time from the closed forms, ``None`` when there is none."""
        if self.closed_forms is None:
            return None
        return self.loss_in_strengths.subs(dict(zip(self.strengths, self.closed_forms)), simultaneous=True)

    # --- race ------------------------------------------------------------------------------
    @cached_property
    def singular_values(self) -> tuple[sympy.Expr, ...]:
        return tuple(self.mode(ref).s for ref in self.mode_refs)

    @cached_property
    def speed_candidates(self) -> tuple[sympy.Expr, ...]:
        """The distinct singular values; the network's speed is their maximum. Where the modes are
        not derived yet (a crossover with another network asks), from the eigenvalues alone."""
        if "pathways" in self.__dict__:
            values = self.singular_values
        else:
            values = tuple(
                s
                for pathway in self.network.pathways
                for s in _pathway_singular_values(
                    self.task, pathway, f"network {self.network.name!r} pathway {pathway.name!r}"
                )
            )
        distinct: list[sympy.Expr] = []
        for s in values:
            if not any(vanishes(s - other) for other in distinct):
                distinct.append(s)
        return tuple(distinct)

    @cached_property
    def speed(self) -> sympy.Expr:
        """Learning speed: the leading singular value over all pathways (kept: SymPy's ``Max``
        compares algebraic numbers numerically, a tenth of a second per network)."""
        return sympy.Max(*self.speed_candidates) if self.speed_candidates else sympy.Integer(0)


@dataclass(frozen=True, eq=False)
class ReducedSystem:
    """The race reduction written in the variables the network really has.

    Attributes
    ==========
    kind : ``"groups"`` (exact group reduction: one shared trajectory ``b`` per symmetric group and
        singular class, Appendices F, G) or ``"modes"`` (one strength ``a`` per mode).
    variables : the state symbols.
    labels : per variable, the pathways and which of their singular classes it stands for.
    multiplicities : how many modes follow each variable.
    singular_values, depths : ``s`` and ``D`` per variable.
    coupling : ``C`` with ``tau dx_i/dt = D x_i^(2-2/D) (s_i - sum_j C_ij x_j)``; diagonal = ``d``.
    rates : the right-hand sides ``dx_i/dt``.
    closed_forms : ``x_i(t)`` when every equation is decoupled and ``D = 2``, else ``None``; they
        hold when the modes a variable stands for start alike.
    loss : the loss in the variables, ``L(x)``.
    """

    kind: str
    variables: tuple[sympy.Symbol, ...]
    initial: tuple[sympy.Symbol, ...]
    labels: tuple[str, ...]
    multiplicities: tuple[int, ...]
    singular_values: tuple[sympy.Expr, ...]
    depths: tuple[int, ...]
    coupling: sympy.ImmutableMatrix
    rates: tuple[sympy.Expr, ...]
    closed_forms: tuple[sympy.Expr, ...] | None
    loss: sympy.Expr

    @cached_property
    def odes(self) -> tuple[sympy.Equality, ...]:
        return tuple(
            sympy.Eq(sympy.Derivative(sympy.Function(x.name)(TIME), TIME), r, evaluate=False)
            for x, r in zip(self.variables, self.rates)
        )

    @property
    def nonzero_couplings(self) -> list[tuple[int, int, sympy.Expr]]:
        """Off-diagonal entries of :attr:`coupling` that do not vanish."""
        size = self.coupling.rows
        return [
            (i, j, self.coupling[i, j]) for i in range(size) for j in range(size) if i != j and self.coupling[i, j] != 0
        ]

    @staticmethod
    def of(derivation: NetworkDerivation) -> ReducedSystem:
        reduction = derivation.group_reduction
        names = [p.name for p in derivation.network.pathways]
        if reduction.exact and not derivation.diagonalisation_failures:
            variables, initial, labels, depths = [], [], [], []
            for g, j in reduction.variables:
                members = reduction.groups[g]
                tag = (names[members[0]] if len(members) == 1 else f"g{g + 1}") + f".{j}"
                variables.append(sympy.Symbol(f"b_{tag}", positive=True))
                initial.append(sympy.Symbol(f"b0_{tag}", positive=True))
                labels.append(f"class {j} of {', '.join(names[p] for p in members)}")
                depths.append(derivation.network.pathways[members[0]].depth)
            coupling = reduction.coupling
            substitution = {
                a: variables[derivation.group_variable(ref)]
                for a, ref in zip(derivation.strengths, derivation.mode_refs)
            }
            loss = sympy.expand(derivation.loss_in_strengths.xreplace(substitution))
            kind, multiplicities, singular_values = "groups", reduction.multiplicities, reduction.singular_values
        else:
            variables, initial = list(derivation.strengths), list(derivation.initial_strengths)
            labels = [f"mode {r.mode} of {names[r.pathway]}" for r in derivation.mode_refs]
            depths = [derivation.network.pathways[r.pathway].depth for r in derivation.mode_refs]
            coupling = derivation.coupling
            loss = derivation.loss_in_strengths
            kind, multiplicities, singular_values = "modes", (1,) * len(variables), derivation.singular_values
        x = sympy.Matrix(variables)
        rates = tuple(
            formulas.mode_rate(x[i], singular_values[i] - (coupling[i, :] * x)[0, 0], depths[i], TAU, sympy)
            for i in range(len(variables))
        )
        size = len(variables)
        decoupled = all(coupling[i, j] == 0 for i in range(size) for j in range(size) if i != j)
        closed = None
        if decoupled and all(depth == 2 for depth in depths) and not derivation.diagonalisation_failures:
            closed = tuple(
                formulas.mode_strength(singular_values[i], coupling[i, i], initial[i], TIME, TAU, sympy)
                for i in range(size)
            )
        return ReducedSystem(
            kind=kind,
            variables=tuple(variables),
            initial=tuple(initial),
            labels=tuple(labels),
            multiplicities=tuple(multiplicities),
            singular_values=tuple(singular_values),
            depths=tuple(depths),
            coupling=sympy.ImmutableMatrix(coupling),
            rates=rates,
            closed_forms=closed,
            loss=loss,
        )
