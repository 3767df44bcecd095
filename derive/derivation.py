"""The race-reduction derivation of one candidate network, as SymPy objects.

:class:`NetworkDerivation` follows the style of ``sympy.physics.mechanics.KanesMethod``:
it is built from a task and a network, exposes symbolic results as properties and
methods, caches them, and never computes numbers. Numbers come from :mod:`numeric`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy

from . import formulas
from .correlations import sigma_x, sigma_yx, target_power
from .modes import Mode, eigen_residual, find_modes, vanishes
from .spec import Network, Pathway, Task

TIME = sympy.Symbol("t", nonnegative=True)
TAU = sympy.Symbol("tau", positive=True)


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


@dataclass(frozen=True)
class GroupReduction:
    """One shared trajectory ``b`` per (symmetric group, singular class):
    ``tau db_i/dt = D b_i^(2-2/D) (s_i - sum_j coupling[i, j] b_j)``, exact when ``failures`` is empty."""

    groups: tuple[tuple[int, ...], ...]
    variables: tuple[tuple[int, int], ...]
    singular_values: tuple[sympy.Expr, ...]
    coupling: sympy.ImmutableMatrix
    failures: tuple[str, ...]

    @property
    def exact(self) -> bool:
        return not self.failures

    @property
    def decoupled(self) -> bool:
        """Exact, and each shared trajectory sees only itself: one logistic closed form each."""
        size = self.coupling.rows
        return self.exact and all(vanishes(self.coupling[i, j]) for i in range(size) for j in range(size) if i != j)


@dataclass(frozen=True)
class ModeRef:
    """Where a mode sits: pathway position and mode position within it."""

    pathway: int
    mode: int


class NetworkDerivation:
    """Effective datasets, modes, assumption checks, race ODEs, closed forms and loss of a network."""

    def __init__(self, task: Task, network: Network | str):
        self.task = task
        self.network = task.network(network) if isinstance(network, str) else network

    # --- effective datasets and modes -------------------------------------------------
    @cached_property
    def pathways(self) -> tuple[PathwayDerivation, ...]:
        derived = []
        for pathway in self.network.pathways:
            syx = sigma_yx(self.task, pathway)
            sx = sigma_x(self.task, pathway, pathway)
            modes = tuple(find_modes(syx, sx, f"network {self.network.name!r} pathway {pathway.name!r}"))
            tag = f"{self.network.name}.{pathway.name}"
            derived.append(
                PathwayDerivation(
                    pathway=pathway,
                    sigma_yx=syx,
                    sigma_x=sx,
                    modes=modes,
                    strengths=tuple(sympy.Symbol(f"a_{{{tag}.{k}}}", positive=True) for k in range(len(modes))),
                    initial_strengths=tuple(sympy.Symbol(f"a0_{{{tag}.{k}}}", positive=True) for k in range(len(modes))),
                )
            )
        return tuple(derived)

    @cached_property
    def mode_refs(self) -> tuple[ModeRef, ...]:
        return tuple(ModeRef(p, k) for p, pd in enumerate(self.pathways) for k in range(len(pd.modes)))

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
        return sorted({tuple(sorted((names[j], names[p]))) for j, p in self.cross_correlations})

    def correlation_between(self, j: int, p: int) -> sympy.ImmutableMatrix:
        """``Sigma_x(j, p)`` for any two pathway positions (zero when they share no datapoint)."""
        if j == p:
            return self.pathways[p].sigma_x
        if (j, p) in self.cross_correlations:
            return self.cross_correlations[(j, p)]
        pathways = self.network.pathways
        return sympy.ImmutableMatrix.zeros(len(pathways[j].inputs), len(pathways[p].inputs))

    def _mode_matrices(self, p: int) -> tuple[sympy.Matrix, sympy.Matrix]:
        modes = self.pathways[p].modes
        pathway = self.network.pathways[p]
        u = sympy.Matrix.hstack(*[m.u for m in modes]) if modes else sympy.zeros(len(pathway.outputs), 0)
        v = sympy.Matrix.hstack(*[m.v for m in modes]) if modes else sympy.zeros(len(pathway.inputs), 0)
        return u, v

    @cached_property
    def coupling(self) -> sympy.ImmutableMatrix:
        """``C[k, l] = (u_k^T E_k^T E_l u_l)(v_l^T Sigma_x(l, k) v_k)``: how mode ``l`` enters the error
        that drives mode ``k`` (Eq. 6 projected on the modes). Its diagonal is ``d``.

        Computed one pathway pair at a time as ``(U_p^T O U_q) o (V_p^T Sigma_x(q, p)^T V_q)``."""
        refs = self.mode_refs
        entries = sympy.zeros(len(refs), len(refs))
        offsets = [0]
        for pd in self.pathways:
            offsets.append(offsets[-1] + len(pd.modes))
        for k, ref in enumerate(refs):
            entries[k, k] = self.mode(ref).d
        for (q, p), correlation in self.cross_correlations.items():
            u_p, v_p = self._mode_matrices(p)
            u_q, v_q = self._mode_matrices(q)
            outputs = u_p.T * self._onto_outputs(p, q, u_q)
            inputs = v_p.T * correlation.T * v_q
            for k in range(u_p.cols):
                for l in range(u_q.cols):
                    entries[offsets[p] + k, offsets[q] + l] = sympy.expand(outputs[k, l] * inputs[k, l])
        return sympy.ImmutableMatrix(entries)

    @staticmethod
    def _same(first, second) -> bool:
        return len(first) == len(second) and all(vanishes(a - b) for a, b in zip(first, second))

    @cached_property
    def symmetric_groups(self) -> tuple[tuple[int, ...], ...]:
        """Pathways with the same depth, the same singular values and input variances (sorted),
        and the same overlaps with the rest of the network (sorted norms of ``U_p^T E_p^T E_q U_q``
        and ``V_p^T Sigma_x(q, p)^T V_q``): they share one trajectory when they start alike
        (Appendices F, G)."""

        def numeric_sort(exprs):
            return sorted(exprs, key=lambda e: float(sympy.N(e.subs({s: 1 for s in e.free_symbols}))))

        pathways = self.network.pathways

        def squared_norm(matrix):
            return sympy.expand(sum(e**2 for e in matrix))

        def signature(p):
            # Frobenius norms do not depend on the basis chosen inside degenerate modes
            modes = self.pathways[p].modes
            u_p, v_p = self._mode_matrices(p)
            outputs, inputs = [], []
            for q in range(len(self.pathways)):
                if q != p:
                    u_q, v_q = self._mode_matrices(q)
                    outputs.append(squared_norm(u_p.T * self._onto_outputs(p, q, u_q)))
                    inputs.append(squared_norm(v_p.T * self.correlation_between(q, p).T * v_q))
            return (
                pathways[p].depth,
                numeric_sort([m.s for m in modes]),
                numeric_sort([m.d for m in modes]),
                numeric_sort(outputs),
                numeric_sort(inputs),
            )

        groups: list[list[int]] = []
        signatures = [signature(p) for p in range(len(self.pathways))]
        for p, sig in enumerate(signatures):
            for group in groups:
                other = signatures[group[0]]
                if sig[0] == other[0] and all(self._same(a, b) for a, b in zip(sig[1:], other[1:])):
                    group.append(p)
                    break
            else:
                groups.append([p])
        return tuple(tuple(g) for g in groups)

    def singular_classes(self, p: int) -> tuple[tuple[int, ...], ...]:
        """Modes of pathway ``p`` grouped by equal singular value, in order of first appearance."""
        return self._singular_classes[p]

    @cached_property
    def _singular_classes(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        result = []
        for pd in self.pathways:
            classes: list[list[int]] = []
            for k, mode in enumerate(pd.modes):
                for members in classes:
                    if vanishes(mode.s - pd.modes[members[0]].s):
                        members.append(k)
                        break
                else:
                    classes.append([k])
            result.append(tuple(tuple(c) for c in classes))
        return tuple(result)

    def _onto_outputs(self, p: int, q: int, matrix: sympy.Matrix) -> sympy.Matrix:
        """``E_p^T E_q matrix``: rows of ``q``'s outputs moved to ``p``'s (zero where ``p`` has none)."""
        rows_q = {o: r for r, o in enumerate(self.network.pathways[q].outputs)}
        zero = [0] * matrix.cols
        return sympy.Matrix([list(matrix.row(rows_q[o])) if o in rows_q else zero for o in self.network.pathways[p].outputs])

    def _class_map(self, p: int, j: int) -> sympy.Matrix:
        """``P = sum_k u_k v_k^T`` over singular class ``j``: basis-free inside degenerate modes."""
        return self._class_maps[p][j]

    @cached_property
    def _class_maps(self) -> tuple[tuple[sympy.Matrix, ...], ...]:
        maps = []
        for p, pd in enumerate(self.pathways):
            per_class = []
            for members in self.singular_classes(p):
                u = sympy.Matrix.hstack(*[pd.modes[k].u for k in members])
                v = sympy.Matrix.hstack(*[pd.modes[k].v for k in members])
                per_class.append((u * v.T).applyfunc(sympy.expand))
            maps.append(tuple(per_class))
        return tuple(maps)

    @cached_property
    def group_reduction(self) -> "GroupReduction":
        """The race reduction with every symmetric group sharing one trajectory per singular class.

        Ansatz: ``W_p(t) = sum_j b_{g(p), j}(t) P_p^j`` with ``P_p^j`` the class maps of pathway
        ``p``. It is exact (the flow keeps it) when, for every pathway ``p``, every group ``g``
        and class ``j'``, ``sum_{q in g} E_p^T E_q P_q^{j'} Sigma_x(q, p)`` is a combination
        ``sum_j c P_p^j`` with the same coefficients for every ``p`` of a group; what is left
        over is reported as a failure. No alignment of individual degenerate modes is needed."""
        groups = self.symmetric_groups
        variables = [(g, j) for g, members in enumerate(groups) for j in range(len(self.singular_classes(members[0])))]
        coefficients, failure = self._group_coefficients(groups, variables)
        return GroupReduction(
            groups=groups,
            variables=tuple(variables),
            singular_values=tuple(self.pathways[groups[g][0]].modes[self.singular_classes(groups[g][0])[j][0]].s for g, j in variables),
            coupling=sympy.ImmutableMatrix(coefficients),
            failures=(failure,) if failure else (),
        )

    def _group_coefficients(self, groups, variables) -> tuple[sympy.Matrix, str | None]:
        """Coefficients of the group reduction, or the first reason it is not exact."""
        pathways = self.network.pathways
        position = {v: i for i, v in enumerate(variables)}
        coefficients = sympy.zeros(len(variables), len(variables))
        for h, members in enumerate(groups):
            for p in members:
                classes_p = self.singular_classes(p)
                maps_p = self._class_maps[p]
                for g, sources in enumerate(groups):
                    for j_source in range(len(self.singular_classes(sources[0]))):
                        term = sympy.zeros(len(pathways[p].outputs), len(pathways[p].inputs))
                        for q in sources:
                            if q != p and (q, p) not in self.cross_correlations:
                                continue
                            term += self._onto_outputs(p, q, self._class_map(q, j_source) * self.correlation_between(q, p))
                        term = term.applyfunc(sympy.expand)
                        if all(e == 0 for e in term):
                            continue
                        projections = [
                            sympy.expand(sum(a * b for a, b in zip(term, class_map)) / len(members_j))
                            for class_map, members_j in zip(maps_p, classes_p)
                        ]
                        leak = sympy.expand(sum(e**2 for e in term)) - sum(c**2 * len(m) for c, m in zip(projections, classes_p))
                        if not vanishes(leak):
                            names = [pathways[q].name for q in sources]
                            return coefficients, f"pathway {pathways[p].name!r}: class {j_source} of group {names} drives it outside its own singular vectors"
                        for j, value in enumerate(projections):
                            row, column = position[(h, j)], position[(g, j_source)]
                            if p == members[0]:
                                coefficients[row, column] = value
                            elif not vanishes(coefficients[row, column] - value):
                                return coefficients, f"pathway {pathways[p].name!r} is coupled unlike the rest of its group"
        return coefficients, None

    def group_variable(self, ref: ModeRef) -> int:
        """Position in :attr:`group_reduction` of the shared trajectory a mode follows."""
        reduction = self.group_reduction
        for g, members in enumerate(reduction.groups):
            if ref.pathway in members:
                j = next(j for j, c in enumerate(self.singular_classes(ref.pathway)) if ref.mode in c)
                return reduction.variables.index((g, j))
        raise KeyError(ref)

    # --- assumptions -------------------------------------------------------------------
    @cached_property
    def diagonalisation_failures(self) -> list[str]:
        """Modes whose input singular vector is not an eigenvector of the pathway's ``Sigma_x``."""
        failures = []
        for pd in self.pathways:
            for k, mode in enumerate(pd.modes):
                if not all(vanishes(e) for e in eigen_residual(pd.sigma_x, mode)):
                    failures.append(
                        f"pathway {pd.name!r} mode {k}: Sigma_yx and Sigma_x do not share right singular vectors "
                        "(Assumption 2.1.1 fails)"
                    )
        return failures

    @property
    def has_closed_form(self) -> bool:
        """Closed forms exist for depth-2 pathways whose modes are mutually diagonalisable, and,
        when pathways interact, whose :attr:`group_reduction` is exact and decoupled."""
        if self.diagonalisation_failures or not all(pd.pathway.depth == 2 for pd in self.pathways):
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
            "exact_modes": all(m.exact for pd in self.pathways for m in pd.modes),
        }

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

    @property
    def odes(self) -> tuple[sympy.Equality, ...]:
        return tuple(sympy.Eq(sympy.Derivative(sympy.Function(a.name)(TIME), TIME), rate) for a, rate in zip(self.strengths, self.rates))

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
        """The distinct singular values; the network's speed is their maximum."""
        distinct: list[sympy.Expr] = []
        for s in self.singular_values:
            if not any(vanishes(s - other) for other in distinct):
                distinct.append(s)
        return tuple(distinct)

    @property
    def speed(self) -> sympy.Expr:
        """Learning speed: the leading singular value over all pathways."""
        return sympy.Max(*self.speed_candidates) if self.speed_candidates else sympy.Integer(0)
