"""The reduced flow as an exported system: what ``gdln derive`` writes (text, JSON, LaTeX) where
the mode strengths do not reduce exactly, so that it is the system ``gdln race`` integrates.

Where Assumption 2.1.1 fails, or pathways interact without a closed form, the race follows the
exact gradient flow on each pathway's weight chain written with the effective correlations
(THEORY Eq. 3-4; ``numeric.reduced_flow``), not the race reduction of the mode strengths
(THEORY Eq. 6). :func:`integrates_reduced_flow` is that choice (``numeric.prediction.Prediction``
makes it through this function); the rest names the flow's parts as exact matrices:

- per pathway ``p`` (:class:`FlowPathway`): its depth ``D_p``, the ``units`` its seed counts, the
  target features it writes (``E_p`` places them among all target features), its data block
  ``Sigma_yx(p)`` and its modes ``U(p)``, ``V(p)`` (``Sigma_yx(p) = U(p) diag(s) V(p)^T``);
- the coupling blocks ``Sigma_x(q, p)`` (:class:`FlowBlock`): each pathway's own ``Sigma_x(p, p)``
  and the cross correlations of pathways that share datapoints and target features; every other
  pair contributes nothing (``E_p^T E_q = 0`` or ``Sigma_x(q, p) = 0``).

The chain of pathway ``p`` has one hidden unit per mode (``width``): the flow that ``race``
integrates keeps ``min(outputs, inputs)`` units, and the units beyond the modes start at zero and
stay there (``numeric.reduced_flow.ReducedFlow._kept_units``), so the two are the same flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from .correlations import target_power

#: the flow, in the names of :data:`EQUATION_TERMS`
EQUATION = (
    "tau dW(p,e)/dt = (W(p,D_p) ... W(p,e+1))^T G(p) (W(p,e-1) ... W(p,1))^T for e = 1 ... D_p, "
    "G(p) = Sigma_yx(p) - sum_q E_p^T E_q W(q) Sigma_x(q, p), W(q) = W(q,D_q) ... W(q,1)"
)
#: the initial condition, balanced on each pathway's modes (THEORY section 2)
INITIAL = (
    "W(p,1)(0) = r_p V(p)^T, W(p,e)(0) = r_p I for 1 < e < D_p, W(p,D_p)(0) = r_p U(p), "
    "r_p = a0(p)^(1/D_p), a0(p) = units(p) init_scale^2 / 2; so W(p)(0) = a0(p) U(p) V(p)^T"
)
#: the loss of a state
LOSS = "L = 1/2 tr<yy^T> - sum_p tr(W(p)^T Sigma_yx(p)) + 1/2 sum_(q,p) tr(W(p)^T E_p^T E_q W(q) Sigma_x(q, p))"


def integrates_reduced_flow(derivation) -> bool:
    """Whether a network's dynamics are the reduced flow rather than its mode strengths' race
    reduction: where Assumption 2.1.1 fails (the race ODE would drop the input directions outside
    the modes), and where pathways interact without a closed form (no shared basis need exist)."""
    return bool(
        derivation.diagonalisation_failures or (derivation.cross_correlations and not derivation.has_closed_form)
    )


def reason(derivation) -> str:
    """Why the mode strengths do not reduce exactly, in a line (for a derivation whose
    :func:`integrates_reduced_flow` holds)."""
    failures = derivation.diagonalisation_failures
    if failures:
        modes = [failure.split(":", 1)[0] for failure in failures]
        listed = ", ".join(modes[:3]) + (f" and {len(modes) - 3} more" if len(modes) > 3 else "")
        return f"Assumption 2.1.1 fails for {listed}"
    return "pathways interact and have no closed form: their modes need not keep a shared basis"


@dataclass(frozen=True)
class FlowPathway:
    """One pathway's part of the flow: ``u`` is ``U(p)`` (its outputs x ``width``), ``v`` is
    ``V(p)`` (its inputs x ``width``), one column per mode."""

    name: str
    depth: int
    units: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    sigma_yx: sympy.ImmutableMatrix
    u: sympy.ImmutableMatrix
    v: sympy.ImmutableMatrix

    @property
    def width(self) -> int:
        return self.u.cols

    def layer_shapes(self) -> list[tuple[int, int]]:
        """``(rows, columns)`` of ``W(p,1) ... W(p,D_p)``."""
        width = self.width
        return [(width, len(self.inputs))] + [(width, width)] * (self.depth - 2) + [(len(self.outputs), width)]


@dataclass(frozen=True)
class FlowBlock:
    """The coupling block ``Sigma_x(row, column)`` (``row``'s inputs x ``column``'s inputs), by
    pathway position."""

    row: int
    column: int
    matrix: sympy.ImmutableMatrix


def _columns(vectors, rows: int) -> sympy.ImmutableMatrix:
    if not vectors:
        return sympy.ImmutableMatrix.zeros(rows, 0)
    return sympy.ImmutableMatrix.hstack(*vectors)


def flow_pathways(derivation) -> list[FlowPathway]:
    """Every pathway's :class:`FlowPathway`, in the network's order."""
    found = []
    for pathway_derivation in derivation.pathways:
        pathway = pathway_derivation.pathway
        modes = pathway_derivation.modes
        found.append(
            FlowPathway(
                name=pathway.name,
                depth=pathway.depth,
                units=pathway.units,
                inputs=tuple(pathway.inputs),
                outputs=tuple(pathway.outputs),
                sigma_yx=pathway_derivation.sigma_yx,
                u=_columns([m.u for m in modes], len(pathway.outputs)),
                v=_columns([m.v for m in modes], len(pathway.inputs)),
            )
        )
    return found


def flow_blocks(derivation) -> list[FlowBlock]:
    """The coupling blocks: each pathway's own ``Sigma_x(p, p)`` and every cross correlation
    ``Sigma_x(q, p)`` of two pathways that share datapoints and target features, by row, then column."""
    count = len(derivation.pathways)
    blocks = [FlowBlock(p, p, derivation.pathways[p].sigma_x) for p in range(count)]
    blocks += [FlowBlock(q, p, matrix) for (q, p), matrix in derivation.cross_correlations.items()]
    return sorted(blocks, key=lambda b: (b.row, b.column))


def flow_target_power(derivation) -> sympy.Expr:
    """``tr<yy^T>``, twice the loss at zero weights."""
    return target_power(derivation.task)
