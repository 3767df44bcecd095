"""The neural race reduction on graphs whose paths share edges (THEORY.md section 3, Eq. 5-6).

:class:`SharedReduction` follows :class:`~derive.derivation.NetworkDerivation`: symbolic
products as cached properties, no numbers. It chooses one basis per input node (``V_v``) and
per output node (``U_v``) by propagating the modes of one path through the graph: from an input
basis, ``U_t[:, k] = Sigma_yx(p) v_k / ||Sigma_yx(p) v_k||`` for a path ``p`` into ``t``; from an
output basis, ``V_s[:, k] = Sigma_yx(p)^T u_k / ||...||``. It then checks exactly that every
path's correlations are diagonal in these bases (``U_t^T Sigma_yx(p) V_s = S(p)``, nothing of
``Sigma_yx(p)`` outside them, ``V_{s(j)}^T Sigma_x(j, p) = D(j, p) V_{s(p)}^T``) and reports the
first failure in :attr:`assumptions`. Where they hold, ``W_e = R_t B_e R_s^T`` with diagonal
``B_e`` is kept by the gradient flow, and each mode ``k`` has one scalar ``b`` per edge:

    tau db_{e,k}/dt = sum_{p in P(e)} b_{p\\e,k} [ s_k(p) - sum_{j in T(t(p))} b_{j,k} d_k(j, p) ]    (Eq. 6)

with ``b_{p,k}`` the product of the ``b_{e,k}`` along ``p`` and ``T(v)`` the paths into output node
``v``. Output nodes must hold disjoint target features; hidden nodes need a unit per mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sympy

from .correlations import sigma_x, sigma_yx, target_power
from .errors import DerivationError
from .modes import find_modes, tidy, vanishes
from .spec import Network, Task, module_graph
from .symbols import TAU


@dataclass(frozen=True)
class SharedAssumptions:
    """Whether the shared-edge reduction holds, and the first reason it does not."""

    holds: bool
    failures: tuple[str, ...]


class SharedReduction:
    """Bases, per-path mode strengths and the Eq. 6 ODEs of a network with shared edges.

    Attributes
    ----------
    paths : the graph's paths; ``sigma_yx[p]`` is ``Sigma_yx(p)`` (zero for paths with no data)
    input_bases, output_bases : ``V_v`` and ``U_v`` per input and output node (columns are modes)
    singular_values : ``s_k(p)`` per path and mode (``S(p)``'s diagonal)
    variances : ``d_k(j, p)`` for paths ``j, p`` into one output node that share datapoints
    strengths : the state, ``b_{e,k}`` for every edge and mode (``b_{edge}.{k}``)
    rates : ``db_{e,k}/dt`` of Eq. 6, with ``tau``
    loss : ``L`` as a function of the state
    """

    def __init__(self, task: Task, network: Network | str):
        self.task = task
        self.network = task.network(network) if isinstance(network, str) else network
        # a module form is a graph of private chains, one path per pathway in order
        self.graph = self.network.graph or module_graph(self.network.pathways)

    # --- effective datasets -------------------------------------------------------------
    @cached_property
    def sigma_yx(self) -> tuple[sympy.ImmutableMatrix, ...]:
        # paths with the same inputs, outputs and datapoints have the same correlation: each is
        # formed once (two layers of ten nodes make 100 paths and one correlation)
        found: dict[tuple, sympy.ImmutableMatrix] = {}
        for p in self.network.pathways:
            key = (p.inputs, p.outputs, p.active)
            if key not in found:
                found[key] = (
                    sigma_yx(self.task, p) if p.active else sympy.ImmutableMatrix.zeros(len(p.outputs), len(p.inputs))
                )
        return tuple(found[(p.inputs, p.outputs, p.active)] for p in self.network.pathways)

    @cached_property
    def paths_with_data(self) -> tuple[int, ...]:
        """Positions of the paths whose ``Sigma_yx`` is not zero (untrained routes have none)."""
        return tuple(p for p, matrix in enumerate(self.sigma_yx) if any(not vanishes(e) for e in matrix))

    def _ends(self, p: int) -> tuple[str, str]:
        path = self.graph.paths[p]
        return path.nodes[0], path.nodes[-1]

    # --- bases -----------------------------------------------------------------------
    @cached_property
    def _bases(self) -> tuple[dict[str, list[sympy.Matrix]], dict[str, list[sympy.Matrix]], list[str]]:
        inputs: dict[str, list[sympy.Matrix]] = {}
        outputs: dict[str, list[sympy.Matrix]] = {}
        failures: list[str] = []
        outputs_seen: dict[int, str] = {}
        for node in self.graph.nodes:
            if node.role == "output":
                for f in node.features:
                    if f in outputs_seen:
                        failures.append(f"output nodes {outputs_seen[f]} and {node.name} both write target feature {f}")
                    outputs_seen[f] = node.name
        pending = list(self.paths_with_data)
        if not pending:
            failures.append("no path sees a correlation between its inputs and targets")
        screened = self._numeric_screen() if pending and not failures else None
        if screened:
            # exact propagation through algebraic modes of high degree can take hours; a basis that
            # fails in floating point fails exactly too, so say so now (holding is checked exactly)
            failures.append(screened + " (found in floating point, at the parameters' default values)")
        while pending and not failures:
            # a new component of the input/output graph: its first path fixes the modes
            first = pending[0]
            source, target = self._ends(first)
            pathway = self.network.pathways[first]
            modes = find_modes(
                self.sigma_yx[first],
                sigma_x(self.task, pathway, pathway),
                f"network {self.network.name!r} path {pathway.name!r}",
            )
            inputs[source] = [sympy.Matrix(m.v) for m in modes]
            outputs[target] = [sympy.Matrix(m.u) for m in modes]
            progress = True
            while progress and not failures:
                progress = False
                for p in list(pending):
                    source, target = self._ends(p)
                    matrix = sympy.Matrix(self.sigma_yx[p])
                    if source in inputs and target not in outputs:
                        outputs[target] = self._propagate(matrix, inputs[source], p, failures)
                    elif target in outputs and source not in inputs:
                        inputs[source] = self._propagate(matrix.T, outputs[target], p, failures)
                    if source in inputs and target in outputs:
                        pending.remove(p)
                        progress = True
        return inputs, outputs, failures

    def _numeric_screen(self) -> str | None:
        """The first failure of the bases in float64 (relative tolerance 1e-8), or None."""
        import numpy as np

        values = dict(self.task.parameters)

        def number(matrix) -> np.ndarray:
            return np.array(sympy.Matrix(matrix).subs(values).evalf(17).tolist(), dtype=float)

        correlations = {p: number(self.sigma_yx[p]) for p in self.paths_with_data}
        scale = max(float(np.abs(m).max()) for m in correlations.values())
        tolerance = 1e-8 * scale
        first = self.paths_with_data[0]
        u, singular, vt = np.linalg.svd(correlations[first])
        rank = int(np.sum(singular > tolerance))
        inputs: dict[str, np.ndarray] = {self._ends(first)[0]: vt[:rank].T}
        outputs: dict[str, np.ndarray] = {self._ends(first)[1]: u[:, :rank]}
        pending = list(self.paths_with_data)
        progress = True
        while progress:
            progress = False
            for p in list(pending):
                source, target = self._ends(p)
                if source in inputs and target not in outputs:
                    image = correlations[p] @ inputs[source]
                    norms = np.linalg.norm(image, axis=0)
                    if np.any(norms <= tolerance):
                        return f"path {self.network.pathways[p].name} does not carry every mode of its neighbours"
                    outputs[target] = image / norms
                elif target in outputs and source not in inputs:
                    image = correlations[p].T @ outputs[target]
                    norms = np.linalg.norm(image, axis=0)
                    if np.any(norms <= tolerance):
                        return f"path {self.network.pathways[p].name} does not carry every mode of its neighbours"
                    inputs[source] = image / norms
                if source in inputs and target in outputs:
                    pending.remove(p)
                    progress = True
        for p in self.paths_with_data:
            source, target = self._ends(p)
            if source not in inputs or target not in outputs:
                continue  # another component: the exact pass handles it
            projected = outputs[target].T @ correlations[p] @ inputs[source]
            rest = correlations[p] - outputs[target] @ projected @ inputs[source].T
            off = projected - np.diag(np.diag(projected)) if projected.shape[0] == projected.shape[1] else projected
            if np.abs(off).max(initial=0.0) > tolerance or np.abs(rest).max(initial=0.0) > tolerance:
                return f"path {self.network.pathways[p].name}: Sigma_yx is not diagonal in the shared bases"
        return None

    def _propagate(self, matrix: sympy.Matrix, basis: list[sympy.Matrix], p: int, failures: list[str]):
        vectors = []
        for k, vector in enumerate(basis):
            image = (matrix * vector).applyfunc(tidy)
            norm2 = tidy((image.T * image)[0, 0])
            if vanishes(norm2):
                failures.append(f"path {self.network.pathways[p].name} does not carry mode {k} of its neighbours")
                return []
            vectors.append((image / sympy.sqrt(norm2)).applyfunc(tidy))
        return vectors

    @property
    def input_bases(self) -> dict[str, sympy.ImmutableMatrix]:
        return {n: sympy.ImmutableMatrix.hstack(*vs) for n, vs in self._bases[0].items()}

    @property
    def output_bases(self) -> dict[str, sympy.ImmutableMatrix]:
        return {n: sympy.ImmutableMatrix.hstack(*us) for n, us in self._bases[1].items()}

    @cached_property
    def num_modes(self) -> int:
        return max((len(vs) for vs in self._bases[0].values()), default=0)

    # --- per-path strengths and the checks --------------------------------------------
    @cached_property
    def _strengths_and_checks(self):
        inputs, outputs, failures = self._bases
        failures = list(failures)
        singular: dict[int, tuple[sympy.Expr, ...]] = {}
        variances: dict[tuple[int, int], tuple[sympy.Expr, ...]] = {}
        if failures:
            return singular, variances, failures
        if len({len(vs) for vs in inputs.values()}) > 1:
            failures.append("components of the graph have different numbers of modes")
        # the checks of a path, and of a pair of paths, depend only on their bases, features and
        # datapoints: each distinct one is done once. Done per path and per pair, they were the
        # SymPy products of every pair of paths into an output node, 10^4 pairs at 100 paths
        # (minutes) and 10^6 at the limit of 1000
        path_checks: dict[tuple, tuple[tuple[sympy.Expr, ...], bool, bool]] = {}
        for p in self.paths_with_data:
            source, target = self._ends(p)
            pathway = self.network.pathways[p]
            key = (source, target, pathway.inputs, pathway.outputs, pathway.active)
            if key not in path_checks:
                v, u = self.input_bases[source], self.output_bases[target]
                projected = (u.T * self.sigma_yx[p] * v).applyfunc(tidy)
                diagonal = all(
                    vanishes(projected[a, b]) for a in range(projected.rows) for b in range(projected.cols) if a != b
                )
                rest = (self.sigma_yx[p] - u * projected * v.T).applyfunc(tidy)
                inside = all(vanishes(e) for e in rest)
                path_checks[key] = (tuple(projected[k, k] for k in range(projected.rows)), diagonal, inside)
            values, diagonal, inside = path_checks[key]
            if not diagonal:
                failures.append(f"path {pathway.name}: Sigma_yx is not diagonal in the shared bases")
            if not inside:
                failures.append(f"path {pathway.name}: Sigma_yx has a part outside the shared modes")
            singular[p] = values
        into: dict[str, list[int]] = {}
        for j in range(len(self.graph.paths)):
            into.setdefault(self._ends(j)[1], []).append(j)
        on = [frozenset(pathway.active) for pathway in self.network.pathways]
        pair_checks: dict[tuple, tuple[tuple[sympy.Expr, ...], bool]] = {}
        for p in self.paths_with_data:
            for j in into[self._ends(p)[1]]:
                both = on[j] & on[p]
                if not both:
                    continue
                sj, sp = self._ends(j)[0], self._ends(p)[0]
                if sj not in inputs:
                    failures.append(
                        f"path {self.network.pathways[j].name} shares datapoints with a path that learns but has no modes"
                    )
                    continue
                pathway_j, pathway_p = self.network.pathways[j], self.network.pathways[p]
                key = (sj, sp, pathway_j.inputs, pathway_p.inputs, both)
                if key not in pair_checks:
                    vj, vp = self.input_bases[sj], self.input_bases[sp]
                    correlation = sigma_x(self.task, pathway_j, pathway_p)
                    d = (vj.T * correlation * vp).applyfunc(tidy)
                    leak = (vj.T * correlation - d * vp.T).applyfunc(tidy)
                    off = any(not vanishes(d[a, b]) for a in range(d.rows) for b in range(d.cols) if a != b)
                    pair_checks[key] = (
                        tuple(d[k, k] for k in range(d.rows)),
                        not off and all(vanishes(e) for e in leak),
                    )
                values, diagonal = pair_checks[key]
                if not diagonal:
                    failures.append(
                        f"paths {pathway_j.name}, {pathway_p.name}: Sigma_x(j, p) is not diagonal in the shared bases"
                    )
                variances[(j, p)] = values
        for node in self.graph.nodes:
            if node.role == "hidden" and node.size < self.num_modes:
                failures.append(f"hidden node {node.name} has {node.size} units for {self.num_modes} modes")
        return singular, variances, failures

    @property
    def assumptions(self) -> SharedAssumptions:
        failures = tuple(self._strengths_and_checks[2])
        return SharedAssumptions(not failures, failures)

    def _require(self) -> None:
        if not self.assumptions.holds:
            raise DerivationError(
                f"network {self.network.name!r}: the shared-edge reduction does not hold: {self.assumptions.failures[0]}"
            )

    @property
    def singular_values(self) -> dict[int, tuple[sympy.Expr, ...]]:
        self._require()
        return self._strengths_and_checks[0]

    @property
    def variances(self) -> dict[tuple[int, int], tuple[sympy.Expr, ...]]:
        self._require()
        return self._strengths_and_checks[1]

    # --- the reduced system -------------------------------------------------------------
    @cached_property
    def strengths(self) -> tuple[tuple[sympy.Symbol, ...], ...]:
        """``b_{e,k}``: one row per edge (``Graph.edges`` order), one column per mode."""
        return tuple(
            tuple(sympy.Symbol(f"b_{edge.name}.{k}", real=True) for k in range(self.num_modes))
            for edge in self.graph.edges
        )

    def path_strength(self, p: int, k: int, skip: int | None = None) -> sympy.Expr:
        """``b_{p,k}``: the product of ``b_{e,k}`` along path ``p`` (leaving out edge ``skip``)."""
        return sympy.Mul(*(self.strengths[e][k] for e in self.graph.paths[p].edges if e != skip))

    @cached_property
    def overlaps(self) -> dict[int, tuple[tuple[int, tuple[sympy.Expr, ...]], ...]]:
        """For each path ``p`` with data, ``(j, d(j, p))`` for the paths ``j`` into its output node
        that share datapoints with it (:attr:`variances` by its second path, in its order)."""
        found: dict[int, list[tuple[int, tuple[sympy.Expr, ...]]]] = {}
        for (j, p), d in self.variances.items():
            found.setdefault(p, []).append((j, d))
        return {p: tuple(pairs) for p, pairs in found.items()}

    def _drive(self, p: int, k: int) -> sympy.Expr:
        s = self.singular_values.get(p, (0,) * self.num_modes)[k]
        # one Add of every term: summed one by one, SymPy flattens the growing sum again at each
        return s - sympy.Add(*(self.path_strength(j, k) * d[k] for j, d in self.overlaps.get(p, ())))

    @cached_property
    def rates(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """``db_{e,k}/dt`` (Eq. 6), rows by edge and columns by mode."""
        self._require()
        # each path's drive once, shared by the rates of every edge on it
        drives = {(p, k): self._drive(p, k) for p in self.singular_values for k in range(self.num_modes)}
        rows = []
        for e in range(len(self.graph.edges)):
            row = []
            for k in range(self.num_modes):
                terms = [
                    self.path_strength(p, k, skip=e) * drives[(p, k)]
                    for p in self.graph.paths_through[e]
                    if p in self.singular_values
                ]
                row.append(sympy.Add(*terms) / TAU)
            rows.append(tuple(row))
        return tuple(rows)

    @cached_property
    def loss(self) -> sympy.Expr:
        """``L = tr<yy^T>/2 - sum_{p,k} s_k(p) b_{p,k} + 1/2 sum_{j,p,k} b_{j,k} d_k(j,p) b_{p,k}``."""
        self._require()
        terms = [target_power(self.task) / 2]
        for p, s in self.singular_values.items():
            terms += [-s[k] * self.path_strength(p, k) for k in range(self.num_modes)]
        for (j, p), d in self.variances.items():
            terms += [self.path_strength(j, k) * d[k] * self.path_strength(p, k) / 2 for k in range(self.num_modes)]
        return sympy.Add(*terms)

    def text(self) -> str:
        """The reduced system as text: bases' sizes, strengths per path, and the ODE of each ``b``."""
        lines = [f"network {self.network.name}: {len(self.graph.paths)} paths, {self.num_modes} modes"]
        for p, s in self.singular_values.items():
            lines.append(f"  path {self.network.pathways[p].name}: s = {list(s)}")
        for e, edge in enumerate(self.graph.edges):
            for k in range(self.num_modes):
                lines.append(f"  tau d b_{edge.name}.{k}/dt = {self.rates[e][k] * TAU}")
        return "\n".join(lines)

    def latex(self, document: bool = False) -> str:
        """The reduced system in LaTeX: each path's mode strengths and the ODE of every ``b``
        (a fragment to ``\\input``, or a complete amsmath document)."""
        lines = [
            f"Network \\texttt{{{self.network.name}}}: {len(self.graph.paths)} paths, {self.num_modes} modes; "
            "$W_e = R_{t(e)} B_e R_{s(e)}^T$ with diagonal $B_e$.",
            "",
        ]
        for p, s in self.singular_values.items():
            name = self.network.pathways[p].name.replace("_", "\\_")
            lines.append(f"Path \\texttt{{{name}}}: $S = \\mathrm{{diag}}({', '.join(sympy.latex(v) for v in s)})$.\n")
        lines.append("\\begin{align*}")
        rows = []
        for e in range(len(self.graph.edges)):
            for k in range(self.num_modes):
                state = sympy.latex(self.strengths[e][k])
                rows.append(f"\\tau \\frac{{d {state}}}{{dt}} &= {sympy.latex(sympy.expand(self.rates[e][k] * TAU))}")
        lines.append(" \\\\\n".join(rows))
        lines.append("\\end{align*}")
        body = "\n".join(lines) + "\n"
        if not document:
            return body
        return (
            "\\documentclass{article}\n\\usepackage{amsmath}\n\\usepackage[margin=2cm]{geometry}\n"
            "\\allowdisplaybreaks\n\\begin{document}\n" + body + "\\end{document}\n"
        )
