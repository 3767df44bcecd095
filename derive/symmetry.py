"""Symmetric pathways and the group reduction (paper Section 3, Appendices F and G), by exact
comparison.

Everything here is computed on the modes' unnormalised exact vectors
(``u v^T = u_raw v_raw^T / (raw_norm2 s)``, see :class:`derive.modes.Mode`) with SymPy's
``DomainMatrix``: for rational data the products stay in ``QQ`` and a coupling that vanishes is
exactly ``0``. Comparisons are between multisets, so nothing depends on the order of modes,
datapoints or outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import sympy
from sympy.polys.matrices import DomainMatrix

from . import algebraic
from .modes import PRECISION_DIGITS, has_parametric_radicals, tidy, vanishes

if TYPE_CHECKING:
    from .derivation import NetworkDerivation


def domain_matrix(matrix) -> DomainMatrix:
    """An exact ``DomainMatrix`` of a SymPy matrix in the smallest domain that holds its entries."""
    rows, cols = matrix.shape
    if rows == 0 or cols == 0:
        return DomainMatrix.zeros((rows, cols), sympy.QQ)
    matrix = sympy.Matrix(matrix)
    if not matrix.free_symbols and not matrix.has(sympy.Float) and not all(e.is_Rational for e in matrix):
        # algebraic numbers (CRootOf, rational radicals) as generators of a polynomial ring over Q
        # (see derive.algebraic): unifying two such rings is free, while unifying two number
        # fields Q(sqrt(a)), Q(sqrt(b)) builds their compositum for every entry
        substitution = algebraic.generators_of(matrix)
        converted = [[e.xreplace(substitution) for e in row] for row in matrix.tolist()]
        result = DomainMatrix.from_list_sympy(rows, cols, converted)
        if algebraic.is_generator_ring(result.domain) and result.domain.domain in (sympy.ZZ, sympy.QQ):
            return result.convert_to(algebraic.generator_ring(result.domain))
        try:  # nested radicals: an algebraic field is still far faster than SymPy expressions
            return DomainMatrix.from_list_sympy(rows, cols, matrix.tolist(), extension=True)
        except (sympy.polys.polyerrors.PolynomialError, NotImplementedError, ValueError):
            pass
    result = DomainMatrix.from_Matrix(matrix)
    # EX cancels after every operation, which takes minutes on parametric radicals; EXRAW keeps
    # the raw expressions, and whether a result vanishes is decided once, by ``vanishes``.
    return result.convert_to(sympy.EXRAW) if result.domain == sympy.EX else result


def product(*matrices: DomainMatrix) -> DomainMatrix:
    """The exact matrix product, with the operands' domains unified."""
    try:
        unified = matrices[0].unify(*matrices[1:])
    except (sympy.polys.polyerrors.UnificationFailed, sympy.polys.polyerrors.CoercionFailed, NotImplementedError):
        unified = [m.convert_to(sympy.EXRAW) for m in matrices]
    result = unified[0]
    for m in unified[1:]:
        result = result * m
    return result


def _to_sympy(domain, element) -> sympy.Expr:
    """A domain element as a SymPy expression, with algebraic generators back as numbers."""
    return algebraic.element_to_sympy(domain, element)


def scaled_hadamard(
    first: DomainMatrix, second: DomainMatrix, row_scales, column_scales
) -> list[list[sympy.Expr]] | None:
    """``first[k, l] * second[k, l] * row_scales[k] * column_scales[l]`` exactly, when the matrices
    hold algebraic generators (see :mod:`derive.algebraic`), in their polynomial ring and
    reduced there; an entry whose value is below ``10^-(PRECISION_DIGITS - 10)`` is exactly 0.
    ``None`` for other domains (the caller works on SymPy entries)."""
    if not (algebraic.is_generator_ring(first.domain) or algebraic.is_generator_ring(second.domain)):
        return None
    scales = [algebraic.to_generators(e) for e in (*row_scales, *column_scales)]
    extra = sympy.QQ.poly_ring(
        *sorted(set().union(*(e.free_symbols for e in scales)) or {sympy.Dummy()}, key=lambda s: s.name)
    )
    ring = algebraic.generator_ring(first.domain, second.domain, extra)
    a, b = first.convert_to(ring).to_list(), second.convert_to(ring).to_list()
    rows = [algebraic.element_from_sympy(ring, e) for e in row_scales]
    columns = [algebraic.element_from_sympy(ring, e) for e in column_scales]
    if any(e is None for e in (*rows, *columns)):
        return None
    result = []
    for k, (row_a, row_b) in enumerate(zip(a, b)):
        line = []
        for l, (x, y) in enumerate(zip(row_a, row_b)):
            value = x * y
            if value:
                value = algebraic.reduce_element(
                    algebraic.reduce_element(algebraic.reduce_element(value) * rows[k]) * columns[l]
                )
            if not value or algebraic.element_magnitude(value) < 10.0 ** (-(PRECISION_DIGITS - 10)):
                line.append(sympy.Integer(0))
            else:
                line.append(algebraic.element_to_sympy(ring, value))
        result.append(line)
    return result


def _rational_domain(domain) -> bool:
    """Whether ``domain`` is ``Z``, ``Q``, or polynomials or rational functions over them."""
    if domain.is_ZZ or domain.is_QQ:
        return True
    return (domain.is_PolynomialRing or domain.is_FractionField) and (domain.domain.is_ZZ or domain.domain.is_QQ)


def _pseudo_inverse(gram: DomainMatrix) -> DomainMatrix:
    """The Moore-Penrose pseudo-inverse of a symmetric matrix over a field, exactly: with ``P`` the
    orthogonal projector onto its null space, ``G^+ = (G + P)^-1 - P``."""
    null = gram.nullspace()
    if null.shape[0] == 0:
        return gram.inv()
    projector = null.transpose() * (null * null.transpose()).inv() * null
    return (gram + projector).inv() - projector


def entries(matrix: DomainMatrix) -> list[list[sympy.Expr]]:
    domain = matrix.domain
    return [[_to_sympy(domain, e) for e in row] for row in matrix.to_list()]


def inner(first: DomainMatrix, second: DomainMatrix) -> sympy.Expr:
    """Frobenius inner product ``sum_ij A_ij B_ij``, exact."""
    try:
        a, b = first.unify(second)
    except (sympy.polys.polyerrors.UnificationFailed, sympy.polys.polyerrors.CoercionFailed, NotImplementedError):
        a, b = first.convert_to(sympy.EXRAW), second.convert_to(sympy.EXRAW)
    domain = a.domain
    total = domain.zero
    for row_a, row_b in zip(a.to_list(), b.to_list()):
        for x, y in zip(row_a, row_b):
            total += x * y
    return _to_sympy(domain, total)


def same_multiset(first: Sequence, second: Sequence, equal=None) -> bool:
    """Whether two sequences are equal as multisets, with ``equal`` (default: the difference
    vanishes) as the comparison; independent of order and of ties."""
    equal = equal or (lambda a, b: vanishes(a - b))
    if len(first) != len(second):
        return False
    unused = list(second)
    for item in first:
        for position, other in enumerate(unused):
            if equal(item, other):
                del unused[position]
                break
        else:
            return False
    return True


@dataclass(frozen=True)
class SingularClass:
    """Modes of one pathway with one singular value ``s``; ``input_variance`` is the trace of
    ``Sigma_x`` on the class, divided by its multiplicity (the class's ``d``). Its map
    ``P = sum_k u_k v_k^T = R / s`` is :meth:`Symmetry.scaled_map`."""

    modes: tuple[int, ...]
    s: sympy.Expr
    input_variance: sympy.Expr

    @property
    def multiplicity(self) -> int:
        return len(self.modes)


@dataclass(frozen=True)
class GroupReduction:
    """One shared trajectory ``b`` per (symmetric group, singular class):
    ``tau db_i/dt = D b_i^(2-2/D) (s_i - sum_j coupling[i, j] b_j)``, exact when ``failures`` is
    empty. ``multiplicities[i]`` is the number of modes (over the group's pathways) that follow
    ``b_i``."""

    groups: tuple[tuple[int, ...], ...]
    variables: tuple[tuple[int, int], ...]
    singular_values: tuple[sympy.Expr, ...]
    multiplicities: tuple[int, ...]
    coupling: sympy.ImmutableMatrix
    failures: tuple[str, ...]

    @property
    def exact(self) -> bool:
        return not self.failures

    @property
    def decoupled(self) -> bool:
        """Exact, and each shared trajectory sees only itself: one logistic closed form each."""
        size = self.coupling.rows
        return self.exact and all(
            self.coupling[i, j] == 0 or vanishes(self.coupling[i, j])
            for i in range(size)
            for j in range(size)
            if i != j
        )


class Symmetry:
    """Singular classes, symmetric groups and the group reduction of one derivation."""

    #: what a pickle keeps (the derivation cache, :mod:`derive.cache`): the results, plain SymPy.
    #: The exact operands (``DomainMatrix`` over rings of this process's generator symbols, or
    #: over a ``RealField`` whose numbers belong to its own mpmath context) are rebuilt on demand.
    KEPT = ("derivation", "classes", "groups", "reduction")

    def __init__(self, derivation: NetworkDerivation):
        self.derivation = derivation

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items() if name in self.KEPT}

    # --- exact operands, built once ------------------------------------------------------------
    @cached_property
    def _overlaps(self) -> dict:
        return {}

    def overlap(self, p: int, q: int) -> DomainMatrix:
        """``E_p^T E_q`` as a sparse exact 0/1 matrix (|out_p| x |out_q|)."""
        if (p, q) not in self._overlaps:
            pathways = self.derivation.network.pathways
            rows_q = {o: r for r, o in enumerate(pathways[q].outputs)}
            sparse = {i: {rows_q[o]: sympy.QQ.one} for i, o in enumerate(pathways[p].outputs) if o in rows_q}
            self._overlaps[(p, q)] = DomainMatrix(
                sparse, (len(pathways[p].outputs), len(pathways[q].outputs)), sympy.QQ
            )
        return self._overlaps[(p, q)]

    @cached_property
    def _correlations(self) -> dict:
        return {}

    def correlation(self, q: int, p: int) -> DomainMatrix:
        """``Sigma_x(q, p)`` as an exact ``DomainMatrix``."""
        if (q, p) not in self._correlations:
            self._correlations[(q, p)] = domain_matrix(self.derivation.correlation_between(q, p))
        return self._correlations[(q, p)]

    # --- per pathway ---------------------------------------------------------------------
    @cached_property
    def raw_vectors(self) -> tuple[tuple[DomainMatrix, DomainMatrix], ...]:
        """Per pathway, ``(U_raw, V_raw)`` with one column per mode, exact."""
        return self._stacked(exact=True)

    @cached_property
    def comparison_vectors(self) -> tuple[tuple[DomainMatrix, DomainMatrix], ...]:
        """:attr:`raw_vectors`, except that modes with ``CRootOf`` values enter at
        ``PRECISION_DIGITS`` digits. Groups and the group reduction only compare these products
        (by :func:`vanishes`, which evaluates them anyway); exact products over several degree-8
        fields cost minutes on Section 4 there. The couplings use :attr:`raw_vectors`."""
        return self._stacked(exact=False)

    def _raw(self, mode, exact: bool):
        if exact or mode.kind != "algebraic":
            return mode.u_raw, mode.v_raw, mode.raw_norm2
        return tuple(sympy.N(x, PRECISION_DIGITS + 10) for x in (mode.u_raw, mode.v_raw, mode.raw_norm2))

    def _stacked(self, exact: bool) -> tuple[tuple[DomainMatrix, DomainMatrix], ...]:
        result = []
        for pathway_derivation in self.derivation.pathways:
            outputs, inputs = len(pathway_derivation.pathway.outputs), len(pathway_derivation.pathway.inputs)
            raws = [self._raw(m, exact) for m in pathway_derivation.modes]
            u = sympy.Matrix.hstack(*[r[0] for r in raws]) if raws else sympy.zeros(outputs, 0)
            v = sympy.Matrix.hstack(*[r[1] for r in raws]) if raws else sympy.zeros(inputs, 0)
            result.append((domain_matrix(u), domain_matrix(v)))
        return tuple(result)

    @cached_property
    def classes(self) -> tuple[tuple[SingularClass, ...], ...]:
        """Per pathway, its modes grouped by equal singular value, in order of first appearance."""
        result = []
        for pathway_derivation in self.derivation.pathways:
            members: list[list[int]] = []
            for k, mode in enumerate(pathway_derivation.modes):
                for group in members:
                    if vanishes(mode.s**2 - pathway_derivation.modes[group[0]].s ** 2):
                        group.append(k)
                        break
                else:
                    members.append([k])
            classes = []
            for group in members:
                modes = [pathway_derivation.modes[k] for k in group]
                variance = tidy(sum((m.d for m in modes), sympy.Integer(0)) / len(modes))
                classes.append(SingularClass(tuple(group), modes[0].s, variance))
            result.append(tuple(classes))
        return tuple(result)

    @cached_property
    def _scaled_maps(self) -> dict:
        return {}

    def scaled_map(self, p: int, j: int) -> DomainMatrix:
        """``R = s P`` of class ``j`` of pathway ``p``, with ``P = sum_k u_k v_k^T`` over its modes:
        exact (rational for rational data), modes with ``CRootOf`` values at ``PRECISION_DIGITS``."""
        if (p, j) not in self._scaled_maps:
            pathway_derivation = self.derivation.pathways[p]
            scaled = sympy.zeros(len(pathway_derivation.pathway.outputs), len(pathway_derivation.pathway.inputs))
            for k in self.classes[p][j].modes:
                u_raw, v_raw, raw_norm2 = self._raw(pathway_derivation.modes[k], exact=False)
                scaled += u_raw * v_raw.T / raw_norm2
            self._scaled_maps[(p, j)] = domain_matrix(scaled)
        return self._scaled_maps[(p, j)]

    # --- symmetric groups ------------------------------------------------------------------
    def _overlap_norms(self, p: int) -> tuple[list, list]:
        """Squared Frobenius norms of ``U_p^T E_p^T E_q U_q`` and ``V_p^T Sigma_x(q, p)^T V_q`` for
        every other pathway ``q``: they do not depend on the basis inside degenerate classes."""
        d = self.derivation
        outputs: list[sympy.Expr] = []
        inputs: list[sympy.Expr] = []
        implicit_roots = self._has_implicit(p) or any(self._has_implicit(q) for q in range(len(d.pathways)) if q != p)
        if implicit_roots and self._rational_data:
            for q in range(len(d.pathways)):
                if q != p:
                    norm_out, norm_in = self._span_norms(p, q)
                    outputs.append(norm_out)
                    inputs.append(norm_in)
            return outputs, inputs
        u_p, v_p = self.comparison_vectors[p]
        scale_p = [1 / self._raw(m, exact=False)[2] for m in d.pathways[p].modes]
        for q in range(len(d.pathways)):
            if q == p:
                continue
            u_q, v_q = self.comparison_vectors[q]
            modes_q = d.pathways[q].modes
            scale_q = [1 / self._raw(m, exact=False)[2] for m in modes_q]
            a_out = entries(product(u_p.transpose(), self.overlap(p, q), u_q))
            a_in = entries(product(v_p.transpose(), self.correlation(q, p).transpose(), v_q))
            s2_p = [m.s**2 for m in d.pathways[p].modes]
            s2_q = [m.s**2 for m in modes_q]
            norm_out = sum(
                a_out[k][l] ** 2 * scale_p[k] * scale_q[l] for k in range(len(scale_p)) for l in range(len(scale_q))
            )
            norm_in = sum(
                a_in[k][l] ** 2 * scale_p[k] * scale_q[l] / (s2_p[k] * s2_q[l])
                for k in range(len(scale_p))
                for l in range(len(scale_q))
            )
            for norm, found in ((norm_out, outputs), (norm_in, inputs)):
                # with algebraic (CRootOf) modes these sums only serve comparisons by ``vanishes``,
                # which evaluates them at PRECISION_DIGITS anyway: expanding them exactly is wasted
                found.append(sympy.N(norm, PRECISION_DIGITS + 10) if algebraic.has_roots(norm) else tidy(norm))
        return outputs, inputs

    def _has_implicit(self, p: int) -> bool:
        return any(m.kind == "implicit" for m in self.derivation.pathways[p].modes)

    def _span_norms(self, p: int, q: int) -> tuple[sympy.Expr, sympy.Expr]:
        """:meth:`_overlap_norms` of ``p`` and ``q`` without their modes' vectors:
        ``tr(E^T M_p E M_q)`` and ``tr(S^T N_p S N_q)`` with ``E = E_p^T E_q``,
        ``S = Sigma_x(q, p)^T`` and each pathway's :meth:`_span_maps`. With implicit roots the sums
        over a block's modes are symmetric functions of its polynomial's roots, rational in the
        parameters: here they are that rational function, exactly and at once."""
        m_p, n_p = self._span_maps(p)
        m_q, n_q = self._span_maps(q)
        overlap = self.overlap(p, q)
        correlation = self.correlation(q, p).transpose()

        def trace(matrix: DomainMatrix) -> sympy.Expr:
            domain = matrix.domain
            total = domain.zero
            for k in range(matrix.shape[0]):
                total += matrix[k, k].element
            return domain.to_sympy(total)

        return (
            trace(product(overlap.transpose(), m_p, overlap, m_q)),
            trace(product(correlation.transpose(), n_p, correlation, n_q)),
        )

    @cached_property
    def _rational_data(self) -> bool:
        """Whether every correlation of the network is a rational function of the parameters with
        rational coefficients, so that :meth:`_span_maps` are exact linear algebra over a field
        (an algebraic number taken as a generator would be treated as a free symbol)."""
        d = self.derivation
        count = len(d.pathways)
        matrices = [domain_matrix(pd.sigma_yx) for pd in d.pathways]
        matrices += [self.correlation(q, p) for p in range(count) for q in range(count) if q != p]
        return all(_rational_domain(m.domain) for m in matrices)

    @cached_property
    def _span_cache(self) -> dict:
        return {}

    def _span_maps(self, p: int) -> tuple[DomainMatrix, DomainMatrix]:
        """``(M, N)`` of pathway ``p``: ``M = sum_k u_raw u_raw^T / n_k`` and
        ``N = sum_k v_raw v_raw^T / (n_k s_k^2)`` over all its modes (``n_k`` the raw norm), the
        matrices whose traces against another pathway's are :meth:`_overlap_norms`, computed from
        ``A = Sigma_yx(p)`` alone, exactly over the field of its entries: with ``G`` the Gram matrix
        of the smaller side and ``G^+`` its pseudo-inverse, ``M = G G^+`` and ``N = A^T G^+ A``
        where ``G = A A^T`` (the modes' unit vectors span the range, ``n_k`` on the output side),
        ``M = A A^T`` and ``N = G^+`` where ``G = A^T A``."""
        if p not in self._span_cache:
            a = domain_matrix(self.derivation.pathways[p].sigma_yx).to_field()
            rows, cols = a.shape
            left = rows <= cols
            gram = a * a.transpose() if left else a.transpose() * a
            pseudo = _pseudo_inverse(gram)
            self._span_cache[p] = (gram * pseudo, a.transpose() * pseudo * a) if left else (a * a.transpose(), pseudo)
        return self._span_cache[p]

    @cached_property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        """Pathways with the same depth, the same singular classes (value, multiplicity and mean
        input variance) and the same overlaps with the rest of the network, all compared as
        multisets by exact equality: they share one trajectory when they start alike."""
        d = self.derivation

        def class_key(c: SingularClass):
            return (c.multiplicity, c.s, c.input_variance)

        def same_class(a, b):
            return a[0] == b[0] and vanishes(a[1] - b[1]) and vanishes(a[2] - b[2])

        signatures = [
            (pathway_derivation.pathway.depth, [class_key(c) for c in self.classes[p]])
            for p, pathway_derivation in enumerate(d.pathways)
        ]
        # the overlaps are the costly part of a signature (with implicit roots, sums over a block's
        # modes): computed only for a pathway whose depth and classes match another's
        norms: dict[int, tuple[list, list]] = {}

        def overlaps(p: int) -> tuple[list, list]:
            if p not in norms:
                norms[p] = self._overlap_norms(p)
            return norms[p]

        groups: list[list[int]] = []
        for p, sig in enumerate(signatures):
            for group in groups:
                other = signatures[group[0]]
                if (
                    sig[0] == other[0]
                    and same_multiset(sig[1], other[1], same_class)
                    and same_multiset(overlaps(p)[0], overlaps(group[0])[0])
                    and same_multiset(overlaps(p)[1], overlaps(group[0])[1])
                ):
                    group.append(p)
                    break
            else:
                groups.append([p])
        return tuple(tuple(g) for g in groups)

    # --- group reduction -------------------------------------------------------------------
    def _class_position(self, p: int, reference: int, j: int) -> int | None:
        """The class of pathway ``p`` that matches class ``j`` of the group's first pathway."""
        target = self.classes[reference][j]
        for position, c in enumerate(self.classes[p]):
            if c.multiplicity == target.multiplicity and vanishes(c.s**2 - target.s**2):
                return position
        return None

    @cached_property
    def reduction(self) -> GroupReduction:
        """Ansatz ``W_p(t) = sum_j b_{g(p), j}(t) P_p^j`` with ``P_p^j`` the class maps of
        pathway ``p``. It is exact (the flow keeps it) when, for every pathway ``p``, group ``g``
        and class ``j'``, ``sum_{q in g} E_p^T E_q P_q^{j'} Sigma_x(q, p)`` is a combination
        ``sum_j c_j P_p^j`` with the same coefficients for every ``p`` of a group; the rest is
        reported as a failure. With ``P = R / s``, the leak times ``s'^2`` is
        ``|T|^2 - sum_j <T, R_j>^2 / (s_j^2 m_j)`` for ``T = sum_q E_p^T E_q R_q Sigma_x(q, p)``:
        exact arithmetic on ``R``, rational for rational data."""
        groups = self.groups
        variables = [(g, j) for g, members in enumerate(groups) for j in range(len(self.classes[members[0]]))]
        position = {v: i for i, v in enumerate(variables)}
        coefficients = sympy.zeros(len(variables), len(variables))
        failure = self._coefficients(groups, position, coefficients)
        return GroupReduction(
            groups=groups,
            variables=tuple(variables),
            singular_values=tuple(self.classes[groups[g][0]][j].s for g, j in variables),
            multiplicities=tuple(self.classes[groups[g][0]][j].multiplicity * len(groups[g]) for g, j in variables),
            coupling=sympy.ImmutableMatrix(coefficients),
            failures=(failure,) if failure else (),
        )

    def _coefficients(self, groups, position, coefficients) -> str | None:
        d = self.derivation
        names = [p.name for p in d.network.pathways]
        for h, members in enumerate(groups):
            for p in members:
                classes_p = self.classes[p]
                for g, sources in enumerate(groups):
                    for j_source in range(len(self.classes[sources[0]])):
                        total = None
                        source_s = None
                        if self._alone(p, sources):
                            # only p itself drives p: T = R_j Sigma_x, in p's own classes exactly when
                            # its input vectors diagonalise Sigma_x with one d per class
                            failure = self._lone_class(p, members, position, coefficients, h, g, j_source)
                            if failure:
                                return failure
                            continue
                        for q in sources:
                            if q != p and (q, p) not in d.cross_correlations:
                                continue
                            jq = self._class_position(q, sources[0], j_source)
                            if jq is None:
                                return f"pathway {names[q]!r} has no class matching class {j_source} of its group"
                            source_s = self.classes[q][jq].s
                            term = product(self.overlap(p, q), self.scaled_map(q, jq), self.correlation(q, p))
                            total = term if total is None else (lambda a, b: a + b)(*total.unify(term))
                        if total is None or total.is_zero_matrix:
                            continue
                        projections = [inner(total, self.scaled_map(p, j)) for j in range(len(classes_p))]
                        leak = inner(total, total) - sum(
                            (x**2 / (c.s**2 * c.multiplicity) for x, c in zip(projections, classes_p)), sympy.Integer(0)
                        )
                        if not vanishes(leak):
                            group_names = [names[q] for q in sources]
                            return f"pathway {names[p]!r}: class {j_source} of group {group_names} drives it outside its own singular vectors"
                        jp_reference = [self._class_position(members[0], p, j) for j in range(len(classes_p))]
                        for j, (x, c) in enumerate(zip(projections, classes_p)):
                            value = x / (source_s * c.s * c.multiplicity)
                            if not value.free_symbols:
                                value = sympy.expand(value)
                            elif not has_parametric_radicals(value):
                                value = sympy.factor(sympy.cancel(value))
                            j_reference = jp_reference[j]
                            if j_reference is None:
                                return f"pathway {names[p]!r} has no class matching its group's"
                            row, column = position[(h, j_reference)], position[(g, j_source)]
                            if p == members[0]:
                                coefficients[row, column] = value
                            elif not vanishes(coefficients[row, column] - value):
                                return f"pathway {names[p]!r} is coupled unlike the rest of its group"
        return None

    def _alone(self, p: int, sources) -> bool:
        """Whether the group ``sources`` drives pathway ``p`` through ``p`` alone, and ``p`` has
        modes with implicit roots (:mod:`derive.implicit`): their class maps are only compared
        through exact facts already decided (shared input vectors, equal ``d``)."""
        d = self.derivation
        if p not in sources or any(q != p and (q, p) in d.cross_correlations for q in sources):
            return False
        return any(m.kind == "implicit" for m in d.pathways[p].modes)

    def _lone_class(self, p: int, members, position, coefficients, h: int, g: int, j_source: int) -> str | None:
        d = self.derivation
        names = [x.name for x in d.network.pathways]
        modes = d.pathways[p].modes
        jp = self._class_position(p, self.groups[g][0], j_source)
        if jp is None:
            return f"pathway {names[p]!r} has no class matching its group's"
        chosen = self.classes[p][jp]
        for k in chosen.modes:
            mode = modes[k]
            shares = mode.shares_input_vector
            if shares is None:
                residual = (d.pathways[p].sigma_x * mode.v_raw - mode.d * mode.v_raw).applyfunc(tidy)
                shares = all(e == 0 or vanishes(e) for e in residual)
            if not shares or not vanishes(mode.d - modes[chosen.modes[0]].d):
                return f"pathway {names[p]!r}: class {j_source} of group {[names[p]]} drives it outside its own singular vectors"
        j_reference = self._class_position(members[0], p, jp)
        if j_reference is None:
            return f"pathway {names[p]!r} has no class matching its group's"
        row, column = position[(h, j_reference)], position[(g, j_source)]
        value = chosen.input_variance
        if p == members[0]:
            coefficients[row, column] = value
        elif not vanishes(coefficients[row, column] - value):
            return f"pathway {names[p]!r} is coupled unlike the rest of its group"
        return None

    def variable_of(self, pathway: int, mode: int) -> int:
        """Position in :attr:`reduction` of the shared trajectory a mode follows."""
        reduction = self.reduction
        for g, members in enumerate(reduction.groups):
            if pathway in members:
                j = next(j for j, c in enumerate(self.classes[pathway]) if mode in c.modes)
                reference = self._class_position(members[0], pathway, j)
                return reduction.variables.index((g, reference))
        raise KeyError((pathway, mode))
