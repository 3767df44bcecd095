"""The one object that predicts how a network learns, and the per-task cache of them.

:class:`Prediction` owns the choice of dynamics for a derivation, made here and nowhere else:

- ``"closed form"``: every mode follows its own logistic (paper Eq. 7), or each symmetric
  group's shared trajectory does (Appendices F, G);
- ``"race ODE"``: the neural race reduction (THEORY Eq. 6) integrated numerically, for
  modes that share a basis but have no closed form (depth > 2, couplings);
- ``"reduced flow"``: the exact gradient flow on each pathway's weight chain (THEORY Eq. 3),
  for interacting pathways without a closed form, where no shared basis need exist.

Initial conditions come from :mod:`numeric.initial_conditions`: the pathway width and the init
scale, or a ReLU network's initial weights; never fitted. The staged approximation (the first
pathway alone, then the rest on its converged residual) has one definition,
:func:`staged_loss_curve`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
import sympy
from jaxtyping import Array, Float

from derive.crossover import Crossover, crossovers
from derive.derivation import NetworkDerivation
from derive.spec import Task
from derive.staged import StagedDerivation

from .data import NumericDataset
from .initial_conditions import expected_log_initial_strengths, pathway_log_initial_strengths, relu_initial_strengths
from .race import CompiledNetwork, RaceResult
from .reduced_flow import ReducedFlow, loss_of_maps

CLOSED_FORM, RACE_ODE, REDUCED_FLOW = "closed form", "race ODE", "reduced flow"


class Prediction:
    """Predicted learning dynamics of one network, from its derivation.

    Arguments in every method: ``ts`` epochs, shape ``(T,)``; ``init_scale`` the standard
    deviation of the initial weights; ``tau = 1/learning_rate``; ``values`` the parameter
    values in the order of ``derivation.parameters``. Seeds enter as ``log a0`` so init scales
    whose ``a0`` underflows still give the right curves.
    """

    def __init__(self, derivation: NetworkDerivation):
        self.derivation = derivation

    @cached_property
    def kind(self) -> str:
        """``"closed form"``, ``"race ODE"`` or ``"reduced flow"`` (see the module docstring)."""
        d = self.derivation
        if d.cross_correlations and not d.has_closed_form:
            return REDUCED_FLOW
        return CLOSED_FORM if d.has_closed_form else RACE_ODE

    @property
    def uses_flow(self) -> bool:
        return self.kind == REDUCED_FLOW

    @cached_property
    def compiled(self) -> CompiledNetwork:
        """Closed forms, race ODE and numeric modes, compiled once."""
        return CompiledNetwork(self.derivation)

    @cached_property
    def flow(self) -> ReducedFlow:
        """The exact reduced flow, compiled once."""
        return ReducedFlow(self.derivation)

    @property
    def engine(self) -> CompiledNetwork | ReducedFlow:
        """What computes this prediction: both offer ``loss_curve_from_log`` and ``race``."""
        return self.flow if self.uses_flow else self.compiled

    def log_initial_strengths(self, init_scale: float) -> Float[Array, " seeds"]:
        """``log a0`` from the widths and ``init_scale``: per pathway for the reduced flow, per
        mode (in ``derivation.mode_refs`` order) otherwise."""
        if self.uses_flow:
            return pathway_log_initial_strengths(self.derivation.network, init_scale)
        return expected_log_initial_strengths(self.compiled, init_scale)

    def loss_curve(self, ts, init_scale: float, tau: float, values: Sequence[float]) -> np.ndarray:
        """Loss at epochs ``ts``, shape ``(T,)``, every pathway started from its width."""
        return np.asarray(self.engine.loss_curve_from_log(ts, self.log_initial_strengths(init_scale), tau, values))

    def race(
        self,
        init_scale: float,
        tau: float,
        values: Sequence[float],
        horizon: float,
        fractions: Sequence[float] = (0.5, 0.1),
    ) -> RaceResult:
        """Times to reach ``fractions`` of the initial loss, solved on the dynamics (no grid)."""
        return self.engine.race(self.log_initial_strengths(init_scale), tau, values, horizon, fractions)

    def relu_loss_curve(
        self, ts, initial_weights, inputs, init_scale: float, tau: float, values: Sequence[float]
    ) -> np.ndarray:
        """The prediction for ReLU runs with ``initial_weights = (w1s, w2s)`` (one per seed).

        With a shared basis, each mode starts from the seed's initial weights projected on it
        (:func:`numeric.initial_conditions.relu_initial_strengths`), averaged over seeds. The
        reduced flow starts every pathway from its width and ``init_scale``."""
        if self.uses_flow:
            return self.loss_curve(ts, init_scale, tau, values)
        w1s, w2s = initial_weights
        per_seed = [
            self.compiled.loss_curve(
                ts, relu_initial_strengths(self.compiled, w1s[k], w2s[k], inputs, values), tau, values
            )
            for k in range(len(w1s))
        ]
        return np.mean(np.stack([np.asarray(c) for c in per_seed]), axis=0)

    def maps(self, ts, init_scale: float, tau: float, values: Sequence[float]) -> dict[str, Float[Array, "T out in"]]:
        """Per pathway name, its map ``W_p(t)`` at epochs ``ts``."""
        if self.uses_flow:
            flow = self.flow
            chains = flow.solve(ts, None, tau, values, log_a0=self.log_initial_strengths(init_scale))
            return {p.name: m for p, m in zip(flow.pathways, jax.vmap(flow.maps)(chains))}
        compiled = self.compiled
        strengths = compiled.strengths_from_log(ts, self.log_initial_strengths(init_scale), tau, values)
        found: dict = {}
        for column, (ref, (_, _, u, v)) in enumerate(zip(self.derivation.mode_refs, compiled.modes(values))):
            name = self.derivation.network.pathways[ref.pathway].name
            term = strengths[:, column, None, None] * jnp.outer(u, v)[None]
            found[name] = found[name] + term if name in found else term
        return found

    def strength_curves(
        self, ts, init_scale: float, tau: float, values: Sequence[float]
    ) -> dict[str, Float[Array, "T k"]]:
        """Per pathway name, the singular values of ``W_p(t)`` (largest first): the mode
        strengths, shape ``(T, k)``."""
        return {name: jnp.linalg.svd(m, compute_uv=False) for name, m in self.maps(ts, init_scale, tau, values).items()}


def staged_maps(
    stages: Sequence[Prediction], ts, init_scale: float, tau: float, values: Sequence[float]
) -> dict[str, Float[Array, "T out in"]]:
    """Per pathway name, ``W_p(t)`` of the staged approximation: the first pathway's dynamics
    alone on the task, the others' on its converged residual (``stages``, the predictions of
    :class:`derive.staged.StagedDerivation`'s two stages), both from ``t = 0`` and from their
    widths."""
    found: dict = {}
    for stage in stages:
        found.update(stage.maps(ts, init_scale, tau, values))
    return found


def staged_loss_curve(
    stages: Sequence[Prediction], full: Prediction, ts, init_scale: float, tau: float, values: Sequence[float]
) -> np.ndarray:
    """The loss of the full network under the staged approximation: the one definition that
    ``race --staged`` and Figure 5 share."""
    return loss_of_staged_maps(full, staged_maps(stages, ts, init_scale, tau, values), values)


def loss_of_staged_maps(
    full: Prediction, maps: Mapping[str, Float[Array, "T out in"]], values: Sequence[float]
) -> np.ndarray:
    """The full network's loss for maps from :func:`staged_maps` (for callers that also draw them)."""
    return np.asarray(loss_of_maps(full.flow, dict(maps), values))


class TaskPredictions:
    """Cache of one task's derivations and predictions: each network is derived and compiled
    once, then evaluated at any parameter values."""

    def __init__(self, task: Task):
        self.task = task
        self._derivations: dict[str, NetworkDerivation] = {}
        self._predictions: dict[str, Prediction] = {}
        self._staged: dict[str, StagedDerivation] = {}
        self._stages: dict[str, tuple[Prediction, Prediction]] = {}
        self._crossovers: dict[tuple, list[Crossover]] = {}

    @cached_property
    def dataset(self) -> NumericDataset:
        return NumericDataset(self.task)

    def derivation(self, name: str) -> NetworkDerivation:
        if name not in self._derivations:
            self._derivations[name] = NetworkDerivation(self.task, name)
        return self._derivations[name]

    def prediction(self, name: str) -> Prediction:
        if name not in self._predictions:
            self._predictions[name] = Prediction(self.derivation(name))
        return self._predictions[name]

    def crossovers(self, first: str, second: str, values: Mapping[sympy.Symbol, float]) -> list[Crossover]:
        """Crossovers of two networks in each parameter, the others at ``values``; solved once per
        pair and values (``derive`` and its LaTeX export both ask)."""
        key = (first, second, tuple(sorted((s.name, float(v)) for s, v in values.items())))
        if key not in self._crossovers:
            pair = self.derivation(first), self.derivation(second)
            self._crossovers[key] = [c for p in self.task.parameters for c in crossovers(*pair, p, values)]
        return self._crossovers[key]

    def staged(self, name: str) -> StagedDerivation:
        if name not in self._staged:
            self._staged[name] = StagedDerivation(self.task, name)
        return self._staged[name]

    def stages(self, name: str) -> tuple[Prediction, Prediction]:
        """Predictions of the two stages of the staged approximation of ``name``."""
        if name not in self._stages:
            staged = self.staged(name)
            self._stages[name] = (Prediction(staged.first_stage), Prediction(staged.second_stage))
        return self._stages[name]

    def staged_loss_curve(self, name: str, ts, init_scale: float, tau: float, values: Sequence[float]) -> np.ndarray:
        return staged_loss_curve(self.stages(name), self.prediction(name), ts, init_scale, tau, values)
