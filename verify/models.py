"""One place that derives and compiles each network of a task once, for many parameter values."""

from __future__ import annotations

from functools import cached_property

from derive.derivation import NetworkDerivation
from derive.spec import Task
from numeric.data import NumericDataset
from derive.staged import StagedDerivation
from numeric.race import CompiledNetwork
from numeric.reduced_flow import ReducedFlow


class TaskModels:
    """Lazily built, cached derivations and compiled functions of a task's networks."""

    def __init__(self, task: Task):
        self.task = task
        self._derivations: dict[str, NetworkDerivation] = {}
        self._compiled: dict[str, CompiledNetwork] = {}
        self._flows: dict[str, ReducedFlow] = {}
        self._staged: dict[str, StagedDerivation] = {}

    @cached_property
    def dataset(self) -> NumericDataset:
        return NumericDataset(self.task)

    def derivation(self, name: str) -> NetworkDerivation:
        if name not in self._derivations:
            self._derivations[name] = NetworkDerivation(self.task, name)
        return self._derivations[name]

    def compiled(self, name: str) -> CompiledNetwork:
        if name not in self._compiled:
            self._compiled[name] = CompiledNetwork(self.derivation(name))
        return self._compiled[name]

    def flow(self, name: str) -> ReducedFlow:
        if name not in self._flows:
            self._flows[name] = ReducedFlow(self.derivation(name))
        return self._flows[name]

    def staged(self, name: str) -> StagedDerivation:
        if name not in self._staged:
            self._staged[name] = StagedDerivation(self.task, name)
        return self._staged[name]

    def uses_flow(self, name: str) -> bool:
        """Interacting pathways without closed forms follow the exact reduced flow."""
        derivation = self.derivation(name)
        return bool(derivation.cross_correlations) and not derivation.has_closed_form
