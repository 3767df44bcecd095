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
from .correlations import output_overlap, sigma_x, sigma_yx, target_power
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

    @cached_property
    def coupling(self) -> sympy.ImmutableMatrix:
        """``C[k, l] = (u_k^T E_k^T E_l u_l)(v_l^T Sigma_x(l, k) v_k)``: how mode ``l`` enters the error
        that drives mode ``k`` (Eq. 6 projected on the modes). Its diagonal is ``d``."""
        refs = self.mode_refs
        size = len(refs)
        entries = sympy.zeros(size, size)
        for k, rk in enumerate(refs):
            mode_k = self.mode(rk)
            entries[k, k] = mode_k.d
            for l, rl in enumerate(refs):
                if rl.pathway == rk.pathway or (rl.pathway, rk.pathway) not in self.cross_correlations:
                    continue
                mode_l = self.mode(rl)
                overlap = output_overlap(self.network.pathways[rk.pathway], self.network.pathways[rl.pathway])
                output_part = (mode_k.u.T * overlap * mode_l.u)[0, 0]
                input_part = (mode_l.v.T * self.cross_correlations[(rl.pathway, rk.pathway)] * mode_k.v)[0, 0]
                entries[k, l] = sympy.expand(output_part * input_part)
        return sympy.ImmutableMatrix(entries)

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
        return (
            not self.diagonalisation_failures
            and not self.cross_correlations
            and all(pd.pathway.depth == 2 for pd in self.pathways)
        )

    @property
    def assumptions(self) -> dict:
        return {
            "mutually_diagonalisable": not self.diagonalisation_failures,
            "failures": list(self.diagonalisation_failures),
            "pathways_interact": bool(self.cross_correlations),
            "interacting_pairs": [list(pair) for pair in self.interacting_pairs],
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
        """``a_k(t)`` for every mode when the pathways do not interact; ``None`` otherwise."""
        if not self.has_closed_form:
            return None
        return tuple(
            formulas.mode_strength(self.mode(ref).s, self.mode(ref).d, a0, TIME, TAU, sympy)
            for ref, a0 in zip(self.mode_refs, self.initial_strengths)
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
