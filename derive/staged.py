"""The staged derivation (paper Appendix F): the first pathway learns alone, the others
learn on its converged residual. An approximation; its error against the exact reduced
flow is measured in :mod:`verify`, never assumed.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

import sympy

from .derivation import NetworkDerivation
from .errors import DerivationError
from .spec import Network, Pathway, Task


def default_first_pathway(network: Network) -> Pathway:
    """The pathway that sees the most: most active datapoints, then most inputs and outputs."""
    return max(network.pathways, key=lambda p: (len(p.active), len(p.inputs), len(p.outputs)))


class StagedDerivation:
    """Stage one: ``first`` alone on the task. Stage two: the remaining pathways on the
    residual ``y - W_first(inf) x`` left by stage one's converged map."""

    def __init__(self, task: Task, network: Network | str, first: str | None = None):
        self.task = task
        self.network = task.network(network) if isinstance(network, str) else network
        if len(self.network.pathways) < 2:
            raise DerivationError(f"network {self.network.name!r}: the staged derivation needs at least two pathways")
        if first is None:
            self.first = default_first_pathway(self.network)
        else:
            try:
                self.first = self.network.pathway(first)
            except KeyError:
                known = ", ".join(p.name for p in self.network.pathways)
                raise DerivationError(
                    f"network {self.network.name!r} has no pathway {first!r} (known: {known})"
                ) from None
        self.rest = tuple(p for p in self.network.pathways if p.name != self.first.name)

    @cached_property
    def first_stage(self) -> NetworkDerivation:
        return NetworkDerivation(self.task, Network(f"{self.network.name}[{self.first.name}]", (self.first,)))

    @cached_property
    def converged_map(self) -> sympy.ImmutableMatrix:
        """``W_first(inf) = Sigma_yx Sigma_x^+``: where gradient flow from small weights ends
        (the minimum-norm least-squares map of the pathway's effective dataset)."""
        pathway_derivation = self.first_stage.pathways[0]
        return sympy.ImmutableMatrix(
            (pathway_derivation.sigma_yx * pathway_derivation.sigma_x.pinv()).applyfunc(sympy.expand)
        )

    @cached_property
    def residual_task(self) -> Task:
        targets = sympy.Matrix(self.task.targets)
        outputs, inputs = list(self.first.outputs), list(self.first.inputs)
        for n in self.first.active:
            x = self.task.inputs[n, inputs].T
            prediction = self.converged_map * x
            for row, column in enumerate(outputs):
                targets[n, column] = sympy.expand(targets[n, column] - prediction[row])
        return replace(
            self.task,
            title=f"{self.task.title} (residual of {self.first.name})",
            targets=sympy.ImmutableMatrix(targets),
            networks=(Network(f"{self.network.name}-{self.first.name}", self.rest),),
        )

    @cached_property
    def second_stage(self) -> NetworkDerivation:
        return NetworkDerivation(self.residual_task, self.residual_task.networks[0])
