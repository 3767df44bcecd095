"""The one object that predicts how a network learns, and the per-task cache of them.

:class:`Prediction` owns the choice of dynamics for a derivation, made here and nowhere else:

- ``"closed form"``: every mode follows its own logistic (paper Eq. 7), or each symmetric
  group's shared trajectory does (Appendices F, G);
- ``"race ODE"``: the neural race reduction (THEORY Eq. 6) integrated numerically, for
  modes that share a basis but have no closed form (depth > 2, couplings);
- ``"reduced flow"``: the exact gradient flow on each pathway's weight chain (THEORY Eq. 3),
  for interacting pathways without a closed form, where no shared basis need exist, and for
  pathways whose ``Sigma_x`` does not share the modes' input vectors (Assumption 2.1.1 fails,
  as on real data): there the race ODE would drop the input directions outside the modes.

Initial conditions come from :mod:`numeric.initial_conditions`: the pathway width and the init
scale, a ReLU network's initial weights, or the end of its alignment phase
(:mod:`numeric.alignment`); never fitted. After the alignment phase the prediction follows
either gradient descent at the training step (:data:`GRADIENT_DESCENT`: the exact one-step
recursion of each balanced mode, or of each pathway's weight chain) or gradient flow
(:data:`GRADIENT_FLOW`). The staged approximation (the first
pathway alone, then the rest on its converged residual) has one definition,
:func:`staged_loss_curve`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
import sympy
from jaxtyping import Array, Float

from gdln.derive import cache, exceptional
from gdln.derive.crossover import Crossover, crossovers
from gdln.derive.derivation import NetworkDerivation
from gdln.derive.spec import Network, Task
from gdln.derive.staged import StagedDerivation

from .alignment import Alignment
from .data import NumericDataset
from .gated_chains import GatedChains
from .initial_conditions import (
    aligned_maps,
    aligned_mode_seeds,
    expected_log_initial_strengths,
    pathway_log_initial_strengths,
    relu_initial_strengths,
)
from .integrate import integrate_ode
from .mode_values import pathway_mode_values
from .options import Dynamics, TimeModel
from .race import CompiledNetwork, RaceResult
from .reduced_flow import ReducedFlow, loss_of_maps
from .types import ArrayLike, Times, Values

CLOSED_FORM, RACE_ODE, REDUCED_FLOW = Dynamics.CLOSED_FORM, Dynamics.RACE_ODE, Dynamics.REDUCED_FLOW
GRADIENT_DESCENT, GRADIENT_FLOW = TimeModel.GRADIENT_DESCENT, TimeModel.GRADIENT_FLOW
TIME_MODELS = tuple(TimeModel)


class PredictionEngine(Protocol):
    """What computes a prediction (`Prediction.engine`): a compiled network (closed forms or the
    race ODE, `numeric.race.CompiledNetwork`) or the reduced flow
    (`numeric.reduced_flow.ReducedFlow`). Seeds are ``log a0``, one per mode for the first and
    one per pathway for the second (`Prediction.log_initial_strengths`)."""

    def loss_curve_from_log(self, ts: Times, log_a0: ArrayLike, tau: float, values: Values) -> Float[Array, " T"]:
        """The predicted loss.

        Args:
            ts: epochs, shape ``(T,)``.
            log_a0: the seeds, ``log a0``.
            tau: ``1 / learning_rate``.
            values: the parameter values, in the order of the derivation's parameters.

        Returns:
            The loss at ``ts``, shape ``(T,)``."""
        ...

    def race(
        self, log_a0: ArrayLike, tau: float, values: Values, horizon: float, fractions: Sequence[float] = ...
    ) -> RaceResult:
        """The race without a sampling grid.

        Args:
            log_a0: the seeds, ``log a0``.
            tau: ``1 / learning_rate``.
            values: the parameter values, in the order of the derivation's parameters.
            horizon: the last epoch raced.
            fractions: the fractions of the initial loss whose crossing epochs are solved.

        Returns:
            The epochs at which the loss falls to each of ``fractions`` of its initial loss, and
            the loss at ``horizon`` (`numeric.race.RaceResult`)."""
        ...


#: both engines offer the protocol (checked by the type checker here)
ENGINES: tuple[type[PredictionEngine], ...] = (CompiledNetwork, ReducedFlow)


#: discrete runs are compiled for lengths rounded up to a multiple of this (one compile serves all seeds)
_STEP_BUCKET = 2048


class Prediction:
    """Predicted learning dynamics of one network, from its derivation.

    Seeds enter as ``log a0`` so init scales whose ``a0`` underflows still give the right curves.

    Args:
        derivation: the network's derivation.
        kind: the dynamics to follow: ``closed form``, ``race ODE`` or ``reduced flow``
            (default: the first the derivation allows, as `kind` says).
    """

    def __init__(self, derivation: NetworkDerivation, *, kind: Dynamics | str | None = None):
        self.derivation = derivation
        self._chosen_kind = kind
        self._at_points: dict[tuple[str, ...], Prediction] = {}
        if kind is not None:  # chosen by the caller: the aligned GDLN is always the reduced flow
            if kind not in tuple(Dynamics):
                raise ValueError(f"unknown dynamics {kind!r}")
            self.__dict__["kind"] = Dynamics(kind)

    @cached_property
    def kind(self) -> Dynamics:
        """``"closed form"``, ``"race ODE"`` or ``"reduced flow"`` (see the module docstring)."""
        d = self.derivation
        if d.diagonalisation_failures or (d.cross_correlations and not d.has_closed_form):
            return REDUCED_FLOW
        return CLOSED_FORM if d.has_closed_form else RACE_ODE

    @property
    def uses_flow(self) -> bool:
        return self.kind == REDUCED_FLOW

    def at(self, values: Sequence[float]) -> tuple[Prediction, Sequence[float]]:
        """``(prediction, values)`` to use at ``values``: this one where the generic derivation
        holds, else that of the network derived with the parameters fixed to these values
        (exact, as ``--set``), with no values left (:func:`derive.exceptional.holds_at`: on
        the derivation's exceptional set, or outside its domain). Every method taking ``values``
        asks this first, so a point where eigenvalues meet gives the specialised answer."""
        parameters = self.derivation.parameters
        if not parameters:
            return self, values
        floats = [float(v) for v in np.asarray(values, dtype=np.float64).ravel()]
        point = dict(zip(parameters, floats))
        if exceptional.holds_at(self.derivation.exceptional_set, point) is None:
            return self, values
        key = tuple(repr(v) for v in floats)
        if key not in self._at_points:
            task = self.derivation.task.with_values({s.name: v for s, v in point.items()})
            self._at_points[key] = Prediction(cached_derivation(task, self.derivation.network), kind=self._chosen_kind)
        return self._at_points[key], []

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
        """What computes this prediction: the reduced flow or the compiled network, each a
        `PredictionEngine` (the batched races take either, as it is)."""
        return self.flow if self.uses_flow else self.compiled

    def log_initial_strengths(self, init_scale: float) -> Float[Array, " seeds"]:
        """``log a0`` from the widths and ``init_scale``: per pathway for the reduced flow, per
        mode (in ``derivation.mode_refs`` order) otherwise."""
        if self.uses_flow:
            return pathway_log_initial_strengths(self.derivation.network, init_scale)
        return expected_log_initial_strengths(self.compiled, init_scale)

    def loss_curve(self, ts: Times, init_scale: float, tau: float, values: Sequence[float]) -> np.ndarray:
        """The predicted loss, every pathway started from its width.

        Args:
            ts: epochs, shape ``(T,)``.
            init_scale: the standard deviation of the initial weights.
            tau: ``1 / learning_rate``.
            values: the parameter values, in the order of ``derivation.parameters``.

        Returns:
            The loss at ``ts``, shape ``(T,)``.
        """
        target, values = self.at(values)
        if target is not self:
            return target.loss_curve(ts, init_scale, tau, values)
        return np.asarray(self.engine.loss_curve_from_log(ts, self.log_initial_strengths(init_scale), tau, values))

    def race(
        self,
        init_scale: float,
        tau: float,
        values: Sequence[float],
        horizon: float,
        fractions: Sequence[float] = (0.5, 0.1),
    ) -> RaceResult:
        """Times to reach ``fractions`` of the initial loss, solved on the dynamics (no grid).

        Args:
            init_scale: the standard deviation of the initial weights.
            tau: ``1 / learning_rate``.
            values: the parameter values, in the order of ``derivation.parameters``.
            horizon: the last epoch raced; a crossing after it is infinite.
            fractions: the fractions of the initial loss whose crossings are solved.

        Returns:
            The crossings (fraction -> epoch), the loss at the horizon over the initial loss, and
            where an ODE stopped short of the horizon, if one did.
        """
        target, values = self.at(values)
        if target is not self:
            return target.race(init_scale, tau, values, horizon, fractions)
        return self.engine.race(self.log_initial_strengths(init_scale), tau, values, horizon, fractions)

    def relu_loss_curve(
        self, ts, initial_weights, inputs, init_scale: float, tau: float, values: Sequence[float]
    ) -> np.ndarray:
        """The prediction for ReLU runs with ``initial_weights = (w1s, w2s)`` (one per seed).

        With a shared basis, each mode starts from the seed's initial weights projected on it
        (:func:`numeric.initial_conditions.relu_initial_strengths`), averaged over seeds. The
        reduced flow starts every pathway from its width and ``init_scale``."""
        target, values = self.at(values)
        if target is not self:
            return target.relu_loss_curve(ts, initial_weights, inputs, init_scale, tau, values)
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

    # --- after the alignment phase ---------------------------------------------------------
    @property
    def uses_mode_recursion(self) -> bool:
        """Whether modes evolve on their own basis at depth 2, so that each one's exact
        one-step recursion applies; otherwise each pathway's weight chain is followed."""
        return not self.uses_flow and all(p.depth == 2 for p in self.derivation.network.pathways)

    def aligned_loss_curve(
        self,
        ts: Times,
        alignment: Alignment,
        learning_rate: float,
        values: Sequence[float],
        *,
        time: str = GRADIENT_DESCENT,
    ) -> np.ndarray:
        """The prediction for ReLU runs from the end of their alignment phase, averaged over seeds.

        Before a seed's phase ends (epoch ``T``) its curve is the phase's own loss. From ``T`` on,
        every pathway starts from the units whose settled gates are its gate
        (`numeric.initial_conditions.aligned_mode_seeds`) and the clock runs from ``T``.
        Nothing here sees a trained loss.

        Args:
            ts: epochs, shape ``(T,)``; whole epochs with gradient descent.
            alignment: the seeds' alignment phase (`numeric.alignment`).
            learning_rate: the training's learning rate.
            values: the parameter values, in the order of ``derivation.parameters``.
            time: ``GRADIENT_DESCENT`` (at the training step) or ``GRADIENT_FLOW``.

        Returns:
            The seeds' mean predicted loss at ``ts``, shape ``(T,)``.

        Raises:
            ValueError: for a ``time`` that is neither.
        """
        target, values = self.at(values)
        if target is not self:
            return target.aligned_loss_curve(ts, alignment, learning_rate, values, time=time)
        if time not in TIME_MODELS:
            raise ValueError(f"time must be one of {TIME_MODELS}, not {time!r}")
        ts = np.asarray(ts, dtype=np.float64)
        tau = 1.0 / learning_rate
        curves = []
        for seed, start in enumerate(int(e) for e in alignment.epochs):
            offsets = np.maximum(ts - start, 0.0)
            if self.uses_mode_recursion:
                p0, q0 = self._mode_seeds(alignment, seed, values)
                if time == GRADIENT_DESCENT:
                    later = self._mode_descent(p0, q0, offsets, learning_rate, values)
                else:
                    later = np.asarray(self.compiled.loss_curve_from_log(offsets, _log(p0 / 4), tau, values))
            else:
                later = self._chain_curve(alignment, seed, offsets, learning_rate, values, time)
            early = alignment.losses[seed][np.clip(ts.astype(int), 0, start)]
            curves.append(np.where(ts < start, early, later))
        return np.mean(np.stack(curves), axis=0)

    def _mode_seeds(self, alignment: Alignment, seed: int, values) -> tuple[np.ndarray, np.ndarray]:
        modes = [
            (ref.pathway, np.asarray(u), np.asarray(v))
            for ref, (_, _, u, v) in zip(self.derivation.mode_refs, self.compiled.modes(values))
        ]
        return aligned_mode_seeds(self.derivation.network, modes, alignment, seed)

    @cached_property
    def _mode_steps(self):
        """Jitted run of the exact one-step recursion of balanced depth-2 modes under gradient
        descent: with ``a = b . c``, ``b' = b + eta g c`` and ``c' = c + eta g b`` for
        ``g = -dL/da``, so ``P = |b + c|^2`` and ``Q = |b - c|^2`` obey ``P' = P (1 + eta g)^2``,
        ``Q' = Q (1 - eta g)^2`` and ``a = (P - Q)/4``. Returns the loss before each step."""
        compiled = self.compiled

        def run(p0, q0, learning_rate, values, steps):
            step = balanced_descent_step(lambda a: compiled.loss_of_strengths(a, values), learning_rate)
            return jax.lax.scan(step, (p0, q0), None, length=steps)[1]

        return jax.jit(run, static_argnames=("steps",))

    def _mode_descent(self, p0, q0, offsets, learning_rate, values) -> np.ndarray:
        steps = _bucket(int(np.max(offsets)) + 1)
        losses = self._mode_steps(
            jnp.asarray(p0), jnp.asarray(q0), float(learning_rate), jnp.asarray(values, dtype=jnp.float64), steps
        )
        return np.asarray(losses)[offsets.astype(int)]

    @cached_property
    def gated_chains(self) -> GatedChains:
        """The network's depth-2 chains with their gates, for steps that take the data as an
        operand (`numeric.gated_chains.GatedChains.descent_step`): one object, so one
        compiled descent, for every point of a sweep. Its own data are zeros of the task's shape."""
        task = self.derivation.task
        shape = (task.num_datapoints, task.num_inputs), (task.num_datapoints, task.num_outputs)
        return GatedChains(self.derivation.network, *(np.zeros(s) for s in shape))

    @cached_property
    def _dataset(self) -> NumericDataset:
        return NumericDataset(self.derivation.task)

    def _chain_curve(self, alignment: Alignment, seed: int, offsets, learning_rate, values, time) -> np.ndarray:
        """Each pathway's weight chain started, balanced, from the map of the units whose settled
        gates are its gate (``W_p = sum_i W2[:, i] W1[i, :]``), then gradient descent (one step a
        step) or the flow. Depth-2 networks run vectorized over pathways
        (:class:`numeric.gated_chains.GatedChains`); deeper ones on the reduced flow, each mode
        started balanced at ``a0 = P/4``."""
        network = self.derivation.network
        if all(p.depth == 2 for p in network.pathways):
            chains = GatedChains(network, *self._dataset(values))
            w1, w2 = chains.start(aligned_maps(network, alignment, seed))
            if time == GRADIENT_DESCENT:
                losses = chains.descent_losses(w1, w2, learning_rate, _bucket(int(np.max(offsets)) + 1))
                return np.asarray(losses)[offsets.astype(int)]
            return chains.flow_losses(w1, w2, learning_rate, offsets)
        flow = self.flow
        p0, _ = aligned_mode_seeds(network, flow.unit_modes(values), alignment, seed)
        y0 = jnp.asarray(flow.state_from_strengths(p0 / 4, values))
        args = flow.ode_args(1.0 / learning_rate, values)
        if time == GRADIENT_DESCENT:
            losses = flow.structure.descent_losses(
                y0, args, flow.operands(values)[2], _bucket(int(np.max(offsets)) + 1)
            )
            return np.asarray(losses)[offsets.astype(int)]
        grid = np.unique(np.concatenate([[0.0], offsets]))  # the chain starts at offset 0
        states = integrate_ode(flow.ode, y0, jnp.asarray(grid), args, rtol=1e-9, atol=1e-14)
        sampled = np.asarray(flow.losses_of_states(states, values))
        return sampled[np.searchsorted(grid, offsets)]

    def maps(
        self, ts: Times, init_scale: float, tau: float, values: Sequence[float]
    ) -> dict[str, Float[Array, "T out in"]]:
        """Per pathway name, its map ``W_p(t)`` at epochs ``ts``."""
        target, values = self.at(values)
        if target is not self:
            return target.maps(ts, init_scale, tau, values)
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


def balanced_descent_step(loss: Callable, learning_rate):
    """One step of gradient descent on balanced depth-2 modes in ``(P, Q)`` (see
    :attr:`Prediction._mode_steps`), for ``jax.lax.scan``: ``(P, Q) -> (P', Q')``, and the loss
    ``loss(a)`` before the step."""
    loss_and_gradient = jax.value_and_grad(loss)

    def step(state, _):
        p, q = state
        value, gradient = loss_and_gradient((p - q) / 4)
        g = -gradient
        return (p * (1 + learning_rate * g) ** 2, q * (1 - learning_rate * g) ** 2), value

    return step


def _log(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(values, dtype=np.float64))


def _bucket(steps: int) -> int:
    return -(-steps // _STEP_BUCKET) * _STEP_BUCKET


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


def cached_derivation(task: Task, network: Network) -> NetworkDerivation:
    """The derivation of ``network`` on ``task`` through the derivation cache: from this process,
    else from disk, else derived (and written when the command ends, `gdln.derive.cache.flush`).
    A candidate's, or a network built from the candidates (the union)."""
    return cache.derivation(cache.derivation_key(task, network), lambda: NetworkDerivation(task, network))


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
        self._mode_scales: dict[str, list[Callable | None]] = {}
        self._at_points: dict[tuple[str, ...], TaskPredictions] = {}

    @cached_property
    def exceptional_set(self) -> tuple[sympy.Expr, ...]:
        """The union of the networks' exceptional sets (:mod:`derive.exceptional`)."""
        found: dict[sympy.Expr, None] = {}
        for network in self.task.networks:
            found.update(dict.fromkeys(self.derivation(network.name).exceptional_set))
        return tuple(found)

    def at(self, values: Mapping[sympy.Symbol, float]) -> tuple[TaskPredictions, dict, str | None]:
        """``(models, values, why)`` to use at ``values`` (by parameter): these predictions, the
        values and ``None`` where every network's generic derivation holds; else those of the task
        with its parameters fixed exactly to the values (as ``--set``), no values left, and why
        (:func:`derive.exceptional.holds_at`, e.g. ``a = b``). One choice for the whole task, so
        that a race compares its networks on one footing."""
        point = {s: float(values[s]) for s in self.task.parameters}
        if not point:
            return self, dict(values), None
        why = exceptional.holds_at(self.exceptional_set, point)
        if why is None:
            return self, dict(values), None
        key = tuple(repr(v) for v in point.values())
        if key not in self._at_points:
            self._at_points[key] = TaskPredictions(self.task.with_values({s.name: v for s, v in point.items()}))
        return self._at_points[key], {}, why

    def by_derivation(self, values) -> list[tuple[TaskPredictions, np.ndarray, str | None]]:
        """The rows of ``values`` (points x parameters, in ``task.parameters`` order) grouped by
        the predictions to use there (:meth:`at`), each group with why it is not the generic one:
        the rows where the generic derivation holds with these predictions (``None``), then each
        other point's rows with the task derived at it. The generic rows are found in one
        vectorised pass."""
        values = np.asarray(values, dtype=np.float64)
        rows = np.arange(len(values))
        if not self.task.parameters:
            return [(self, rows, None)]
        failing = np.array(exceptional.fails_at_points(self.exceptional_set, tuple(self.task.parameters), values))
        groups: list[tuple[TaskPredictions, np.ndarray, str | None]] = []
        if (~failing).any():
            groups.append((self, rows[~failing], None))
        special: dict[int, tuple[TaskPredictions, list[int], str | None]] = {}
        for row in rows[failing]:
            here, _, why = self.at(dict(zip(self.task.parameters, values[row])))
            if why is None:  # the float test alone flagged it, the exact test clears it
                here = self
            special.setdefault(id(here), (here, [], why))[1].append(int(row))
        groups.extend((here, np.array(found), why) for here, found, why in special.values())
        return groups

    @cached_property
    def dataset(self) -> NumericDataset:
        return NumericDataset(self.task)

    def derivation(self, name: str) -> NetworkDerivation:
        if name not in self._derivations:
            self._derivations[name] = cached_derivation(self.task, self.task.network(name))
        return self._derivations[name]

    def mode_scales(self, name: str, values: Sequence[float]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per pathway of ``name``, its modes' singular values ``s`` and input variances ``d`` at
        ``values`` (float64; exact constants correctly rounded, kept in the derivation's cache)."""
        derivation = self.derivation(name)
        if name not in self._mode_scales:
            # one function per pathway: networks that share a pathway share it
            self._mode_scales[name] = [
                pathway_mode_values(p, derivation.parameters, f"mode_scales_{name}.{p.name}", cache.key_of(derivation))
                if p.modes
                else None
                for p in derivation.pathways
            ]
        out = []
        for compiled in self._mode_scales[name]:
            if compiled is None:
                out.append((np.zeros(0), np.zeros(0)))
                continue
            modes = compiled(np.asarray(values, dtype=np.float64)[None])
            out.append((modes.s[0], modes.d[0]))
        return out

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
