"""The race over a grid of points, each piece one compiled program over all points.

A phase diagram asks the same questions at thousands of parameter values. Here each question
is asked once for the whole batch (leading axis: grid points, or grid points times seeds):

- :func:`closed_form_race`: the width-seeded race of a network with closed forms. The logistics
  (:func:`numeric.race.strength_from_factors`) are evaluated at every point at once and each
  crossing is bisected on them to the last bit, so a point's ``t_half`` and ``t_90`` are those
  of :meth:`numeric.race.CompiledNetwork.race` (brentq on the same function).
- :func:`ode_race_points`: the width-seeded race of a network without closed forms (the race
  ODE or the exact reduced flow): every point's ODE in batched solves
  (:func:`numeric.batched_race.ode_races`), crossings solved on fresh solves as
  :func:`numeric.race.ode_race` solves them, to the sweep's own tolerance (:data:`SWEEP_RTOL`).
- :func:`align_points`: the alignment phase (:mod:`numeric.alignment`) of every point's ReLU
  runs from their initial weights, no training.
- :func:`aligned_descent` and :func:`aligned_descent_chunks`: each candidate from the settled
  units (balanced modes, or each pathway's weight chain where pathways interact or run
  deeper), followed by gradient descent at the training step, exactly as
  :meth:`numeric.prediction.Prediction.aligned_loss_curve` does for one point.
- :func:`numeric.training.train_relu_points` trains the checked points (elsewhere).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.spec import Network

from . import sharding
from .alignment import OUTPUT_FRACTION, Alignment, run_phase
from .batched_race import ode_races
from .prediction import Prediction, balanced_descent_step
from .race import CompiledNetwork, logistic_factors, strength_from_factors
from .reduced_flow import ReducedFlow
from .types import ArrayLike, Float

#: bisection steps of a crossing time on ``[0, horizon]``: 2^-64 of the horizon is below
#: float64's resolution of any crossing after the first 1e-3 epochs (horizons up to 1e7), so the
#: bisection ends on adjacent floats
BISECTION_STEPS = 64

#: the relative tolerance of the sweep's ODE races, looser than ``race``'s 1e-10: a map needs
#: crossings within 1e-6 of race's (tested), and at 1e-8 Section 4's race at 32 init scales
#: (1e-6 to 1e-2) came within 5e-10 of a solve at 1e-12 in 296 steps a point, where 1e-10
#: took 651 (within 7e-12); ``python -m bench.bench_tolerance`` measures every shipped example
SWEEP_RTOL = 1e-8


def _closed_form_program(compiled: CompiledNetwork):
    """The jitted batched race of ``compiled`` (one per network, kept on the object)."""
    program = compiled.programs.get("batched_race")
    if program is not None:
        return program
    count = len(compiled.derivation.mode_refs)
    logistic = compiled.logistic_values
    loss_of_strengths = compiled.loss_of_mode_strengths

    def one(values, log_a0, tau, horizon, fractions):
        flat = logistic(*values)
        # the logistics' factors once; each evaluation of the loss is then one exponential per mode
        factors = logistic_factors(flat[:count], flat[count:], log_a0, tau)

        def loss_at(t):
            a = strength_from_factors(factors, t)
            return loss_of_strengths(*[a[k] for k in range(count)], *values)

        initial, final = loss_at(0.0), loss_at(horizon)

        def crossing(level):
            def halve(_, bounds):
                low, high = bounds
                middle = 0.5 * (low + high)
                below = loss_at(middle) <= level
                return jnp.where(below, low, middle), jnp.where(below, middle, high)

            _, high = jax.lax.fori_loop(0, BISECTION_STEPS, halve, (jnp.zeros(()), horizon))
            # the loss decreases monotonically: not crossed within the horizon is -1 here (not NaN,
            # on which JAX_DEBUG_NANS would stop), NaN on the host, read as None
            return jnp.where(final <= level, high, -1.0)

        return initial, jax.vmap(crossing)(fractions * initial), final / initial

    program = jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None, None)))
    compiled.programs["batched_race"] = program
    return program


@dataclass(frozen=True)
class BatchedRace:
    """A network's race at every point: ``crossings`` ``(points, fractions)`` in epochs (NaN
    where not crossed within the horizon or not finite), ``final_loss`` ``(points,)`` at the
    horizon over the initial loss."""

    initial_loss: np.ndarray
    crossings: np.ndarray
    final_loss: np.ndarray


def closed_form_race(
    compiled: CompiledNetwork,
    values: Float[ArrayLike, "points parameters"],
    log_a0: Float[ArrayLike, "points modes"],
    tau: Float[ArrayLike, " points"],
    horizon: float,
    fractions=(0.5, 0.1),
) -> BatchedRace:
    """:meth:`numeric.race.CompiledNetwork.race` of a closed-form network at every point at once."""
    # the closed forms are checked to be the logistics in (s, d) once, at the first point
    compiled.logistic_parameters(tuple(float(v) for v in np.asarray(values)[0]), float(np.asarray(tau)[0]))
    values = jnp.asarray(values, jnp.float64)
    initial, crossings, final = _closed_form_program(compiled)(
        values,
        jnp.asarray(log_a0, jnp.float64),
        jnp.asarray(tau, jnp.float64),
        jnp.float64(horizon),
        jnp.asarray(fractions, jnp.float64),
    )
    initial, crossings, final = (np.array(x, dtype=np.float64) for x in (initial, crossings, final))
    bad = ~(np.isfinite(initial) & (initial > 0) & np.isfinite(final))
    crossings[bad] = np.nan
    crossings[crossings < 0] = np.nan  # not crossed within the horizon
    final[bad] = np.nan
    return BatchedRace(initial, crossings, final)


def ode_race_points(
    engine: CompiledNetwork | ReducedFlow,
    values: Float[ArrayLike, "points parameters"],
    log_a0: Float[ArrayLike, "points seeds"],
    tau: Float[ArrayLike, " points"],
    horizon: float,
    fractions=(0.5, 0.1),
    *,
    rtol: float = SWEEP_RTOL,
    singly: bool = False,
) -> BatchedRace:
    """``engine.race`` (the race ODE of a :class:`numeric.race.CompiledNetwork` without closed
    forms, or a :class:`numeric.reduced_flow.ReducedFlow`) at every point, its ODEs solved to
    ``rtol`` in batched solves (:func:`numeric.batched_race.ode_races`). Two kinds of points are
    ``engine.race`` itself: a flow still in its linear phase at the horizon (it needs no solve),
    and a point whose batched solve stopped short of the horizon unsettled (a step budget spent,
    a loss that is not finite, a collapsed step), so that it is what ``race`` says there. With
    ``singly`` every point is ``engine.race`` alone: a sweep's points on a derivation's exceptional
    set, each derived where it lies, are then what ``race --set`` says, to the bit."""
    values, log_a0, tau = (np.asarray(x, dtype=np.float64) for x in (values, log_a0, tau))
    count = len(tau)
    if singly:
        problems = []
    elif isinstance(engine, ReducedFlow):
        engine.prepare(values)  # every point's correlations and modes in one vectorised evaluation
        problems = engine.race_odes(log_a0, tau, values, rtol)
    else:
        problems = [engine.race_ode(log_a0[k], float(tau[k]), values[k], rtol) for k in range(count)]
    initial, crossings, final = np.empty(count), np.full((count, len(fractions)), np.nan), np.full(count, np.nan)
    solved = [] if singly else [k for k in range(count) if problems[k].t0 < horizon]
    alone = sorted(set(range(count)) - set(solved))
    if solved:
        batch = ode_races([problems[k] for k in solved], fractions, horizon)
        initial[solved], crossings[solved], final[solved] = batch.initial_loss, batch.crossings, batch.final_loss
        alone += [k for k, stopped in zip(solved, batch.stopped_at) if np.isfinite(stopped)]
    for k in alone:
        result = engine.race(log_a0[k], float(tau[k]), values[k], horizon, fractions)
        initial[k], final[k] = result.initial_loss, result.final_loss
        crossings[k] = [np.nan if c is None else c for c in (result.crossings[f] for f in fractions)]
    return BatchedRace(initial, crossings, final)


#: the fewest runs of the alignment phase worth a thread of their own
_PHASE_PART = 64


def align_points(inputs, targets, w1s, w2s, learning_rates, horizon: int, stride: int, factors=None) -> Alignment:
    """:func:`numeric.alignment.align` for every run at once, each with its own data
    ``(runs, N, ...)`` and step; nothing is trained. With ``factors`` ``(runs, members)``, each
    run stands for members started from ``factor`` times its weights (init scales that share
    everything else: :func:`numeric.alignment.run_phase`), listed run by run, members within."""
    inputs = np.asarray(inputs, np.float64)
    targets = np.asarray(targets, np.float64)
    thresholds = OUTPUT_FRACTION * np.sqrt(np.sum(targets**2, axis=(1, 2)))
    per_run = [
        np.asarray(w1s, np.float64),
        np.asarray(w2s, np.float64),
        inputs,
        targets,
        np.asarray(learning_rates, np.float64),
        thresholds,
        None if factors is None else np.asarray(factors, np.float64),
    ]
    # the runs are independent: a part per core, each its own batch
    parts = np.array_split(np.arange(len(thresholds)), max(1, min(sharding.CORES, len(thresholds) // _PHASE_PART)))

    def phase_of(rows):
        w1, w2, x, y, rates, limits, scale = (None if a is None else a[rows] for a in per_run)
        return run_phase(w1, w2, x, y, rates, limits, horizon, stride, scale)

    outputs = list(sharding.on_cores(phase_of, parts))
    w1, w2, ended, epochs = (np.concatenate([piece[k] for piece in outputs]) for k in range(4))
    # a part whose runs all ended sooner recorded fewer samples: a run that has ended stands
    # still, as it would in one batch (run_phase), so its last loss repeats
    length = max(piece[4].shape[-1] for piece in outputs)
    losses = np.concatenate(
        [
            np.pad(piece[4], [(0, 0)] * (piece[4].ndim - 1) + [(0, length - piece[4].shape[-1])], mode="edge")
            for piece in outputs
        ]
    )
    members = w1.shape[1]
    w1, w2 = w1.reshape(-1, *w1.shape[2:]), w2.reshape(-1, *w2.shape[2:])
    ended, epochs, losses = ended.ravel(), epochs.ravel(), losses.reshape(-1, losses.shape[-1])
    gates = np.matmul(np.repeat(inputs, members, axis=0), np.swapaxes(w1, 1, 2)) > 0
    return Alignment(epochs.astype(int), ended, gates, w1, w2, losses, stride)


def starting_units_batch(network: Network, gates: np.ndarray) -> np.ndarray:
    """:func:`numeric.initial_conditions.starting_units` for every run: ``(pathways, runs, units)``."""
    wanted = np.zeros((len(network.pathways), gates.shape[1]), dtype=bool)
    for index, pathway in enumerate(network.pathways):
        wanted[index, list(pathway.active)] = True
    distances = np.stack([np.sum(gates != row[None, :, None], axis=1) for row in wanted])
    nearest = distances.min(axis=0)
    return (distances == nearest[None]) & np.any(gates, axis=1)[None]


def aligned_mode_seeds_batch(network: Network, modes, phase: Alignment) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numeric.initial_conditions.aligned_mode_seeds` for every run: ``(P, Q)`` each
    ``(runs, modes)``; ``modes`` lists ``(pathway index, u (runs, out), v (runs, in))``."""
    matched = starting_units_batch(network, phase.gates)
    ps, qs = [], []
    for index, u, v in modes:
        pathway = network.pathways[index]
        # batched matrix products: numpy's einsum loops in C without BLAS, ten times slower here
        b = np.matmul(u[:, None, :], _part(phase.w2, 1, pathway.outputs))[:, 0]
        c = np.matmul(_part(phase.w1, 2, pathway.inputs), v[:, :, None])[..., 0]
        ps.append(np.sum(matched[index] * (b + c) ** 2, axis=1))
        qs.append(np.sum(matched[index] * (b - c) ** 2, axis=1))
    return np.stack(ps, axis=1), np.stack(qs, axis=1)


def _part(array: np.ndarray, axis: int, indices) -> np.ndarray:
    """``array`` at ``indices`` along ``axis``: the array itself (no copy of the 12288 runs'
    weights) where they are all of it in order."""
    indices = np.asarray(indices, dtype=int)
    if np.array_equal(indices, np.arange(array.shape[axis])):
        return array
    return np.take(array, indices, axis=axis)


@partial(jax.jit, static_argnames=("step", "samples", "stride"))
def _descent_from_starts(step, state, starts, operands, first, samples: int, stride: int):
    """Per run, gradient descent on an absolute clock: ``step(state, operands) -> (state, loss
    before the step)`` of one run (``state`` and ``operands`` pytrees, leading axis the runs); a
    run stands still until epoch ``starts`` and steps once an epoch from there; the loss before
    epochs ``0, stride, ...`` (``samples`` of them). The runs step together, a block of ``stride``
    epochs at a time from sample ``first`` (at or before every start: the blocks before it would
    hold every run still); samples before ``first`` are 0 (inside every run's phase)."""

    def run_block(state, start, operands, first):
        def tick(state, epoch):
            moved, loss = step(state, operands)
            waiting = epoch < start
            return jax.tree_util.tree_map(lambda old, new: jnp.where(waiting, old, new), state, moved), loss

        state, losses = jax.lax.scan(tick, state, first + jnp.arange(stride))
        return state, losses[0]

    blocks = jax.vmap(run_block, in_axes=(0, 0, 0, None))
    runs = starts.shape[0]

    def going(carry):
        return carry[0] < samples

    def advance(carry):
        j, state, losses = carry
        state, loss = blocks(state, starts, operands, j * stride)
        return j + 1, state, losses.at[:, j].set(loss)

    losses = jnp.zeros((runs, samples))  # not NaN: JAX_DEBUG_NANS would stop on it
    return jax.lax.while_loop(going, advance, (first, state, losses))[2]


#: runs per compiled call of the descent: large enough to fill the vector units, small enough
#: that a few chunks' states and curves are all that is held at once
DESCENT_CHUNK = 768
#: at most this many floats of descent state per compiled call (fewer runs than
#: :data:`DESCENT_CHUNK` where a run's state is large): a run of Section 4's chains holds 3000
#: to 5500 floats, and a step of ``common+all`` cost about the same per run in batches of 1 to
#: 18 runs and more above (measured on 2 busy cores: 42-55 us a run-step up to 18 runs, 65 us
#: at 48, 90 us at 96), so small chunks cost nothing per step
DESCENT_STATE = 16_384

#: ``start(runs) -> (state, operands)`` of the runs ``runs``, leading axis the runs
Start = Callable[[np.ndarray], tuple[Any, Any]]


def aligned_descent_chunks(
    step: Callable,
    start: Start,
    phase: Alignment,
    epochs: int,
    *,
    groups: np.ndarray | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per run, the loss at epochs ``0, stride, ...`` (``<= epochs``): the phase's own loss until
    it ends, then gradient descent by ``step`` (one run's step, ``step(state, operands) ->
    (state, loss before)``, hashable: one compilation per step) from ``start(runs)``, its clock
    started at the phase's end (:meth:`numeric.prediction.Prediction.aligned_loss_curve`;
    :func:`aligned_descent` gives ``step`` and ``start`` of a candidate). Yields ``(runs,
    curves)`` a chunk of runs at a time, ``curves`` of shape ``(len(runs), samples)``: whole
    groups (``groups``, a label per run, for instance the seeds of one point whose curves are
    averaged) in each chunk, each group's runs together and in their order. A chunk's starts are
    built when it runs, so no more than a few chunks' states are held at once; a caller that
    wants less than every curve (each group's mean) reduces each chunk as it comes and never
    holds every run's curve (12288 curves of 1001 samples on the XoR grid)."""
    stride = phase.stride
    samples = epochs // stride + 1
    ts = np.arange(samples) * stride
    runs = len(phase.epochs)
    # only the samples before the latest end of a phase need the phase's own loss
    phase_samples = min(samples, int(np.max(phase.epochs, initial=0)) // stride + 1)
    index = np.clip(np.arange(phase_samples), 0, phase.losses.shape[1] - 1)
    early = phase.losses[:, index]
    before_start = ts[None, :phase_samples] < phase.epochs[:, None]
    state_size = sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(start(np.zeros(1, dtype=int))[0]))
    size = int(np.clip(DESCENT_STATE // max(state_size, 1), 1, DESCENT_CHUNK))
    chunks = _chunks_of_groups(runs, groups, size)
    width = max(len(c) for c in chunks)

    def descend(chunk):
        padded = np.resize(chunk, width)  # one shape for every chunk: one compilation
        state, operands = start(padded)
        on_device = partial(jax.tree_util.tree_map, lambda x: jnp.asarray(x, jnp.float64))
        part = _descent_from_starts(
            step,
            on_device(state),
            jnp.asarray(phase.epochs[padded], jnp.float64),
            on_device(operands),
            jnp.asarray(np.min(phase.epochs[padded]) // stride, jnp.int32),
            samples,
            stride,
        )
        curves = np.array(part)[: len(chunk)]
        curves[:, :phase_samples] = np.where(before_start[chunk], early[chunk], curves[:, :phase_samples])
        return chunk, curves

    # the first chunk alone compiles the descent; the others run a chunk per core at a time
    yield from sharding.on_cores(descend, chunks, first_alone=True)


def aligned_descent(
    prediction: Prediction, phase: Alignment, learning_rates, values, inputs, targets
) -> tuple[Callable, Start]:
    """``(step, start)`` of :func:`aligned_descent_chunks` for one candidate at every run of
    ``phase`` (each run's learning rate, parameter ``values`` and data ``inputs``, ``targets``,
    leading axis the runs), as :meth:`numeric.prediction.Prediction.aligned_loss_curve` follows
    it for one seed, with gradient descent at the training step:

    - balanced depth-2 modes: each mode's exact one-step recursion in ``(P, Q)`` from the
      settled units (:func:`aligned_mode_seeds_batch`);
    - depth-2 chains (interacting pathways, :class:`numeric.gated_chains.GatedChains`): each
      pathway's chain started balanced from the map of its units (:func:`aligned_maps_batch`),
      one descent step an epoch, the data an operand of the step;
    - deeper chains (:class:`numeric.reduced_flow.ReducedFlow`): each unit of a chain from its
      mode's ``P / 4``, one step of the reduced system an epoch."""
    network = prediction.derivation.network
    learning_rates = np.asarray(learning_rates, np.float64)
    values = np.asarray(values, np.float64)
    if prediction.uses_mode_recursion:
        compiled = prediction.compiled
        p0, q0 = aligned_mode_seeds_batch(network, mode_vectors(compiled, values), phase)
        return _mode_step(compiled), lambda runs: ((p0[runs], q0[runs]), (learning_rates[runs], values[runs]))
    if all(p.depth == 2 for p in network.pathways):
        chains = prediction.gated_chains

        def chain_start(runs):
            state = chains.starts(aligned_maps_batch(network, phase.take(runs)))
            return state, (learning_rates[runs], inputs[runs], targets[runs])

        return chains.descent_step, chain_start
    flow = prediction.flow
    # the units' modes at each run's values (a point's seeds share them: one basis a point)
    rows, where = np.unique(values, axis=0, return_inverse=True)
    where = where.ravel()
    per_row = [flow.unit_modes(row) for row in rows]
    modes = [
        (
            index,
            np.stack([row_modes[k][1] for row_modes in per_row])[where],
            np.stack([row_modes[k][2] for row_modes in per_row])[where],
        )
        for k, (index, _, _) in enumerate(per_row[0])
    ]
    p0, _ = aligned_mode_seeds_batch(network, modes, phase)
    # the flow keeps its correlations and basis for the last values it saw: the chunks' threads
    # build their starts one at a time
    one_at_a_time = threading.Lock()

    def flow_start(runs):
        states, operands = [], []
        with one_at_a_time:
            for run in runs:
                tau, written, blocks = flow.ode_args(1.0 / learning_rates[run], values[run])
                states.append(flow.state_from_strengths(p0[run] / 4, values[run]))  # a balanced unit: a = P/4
                operands.append(((tau, written, blocks), flow.operands(values[run])[2]))
        stacked = jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *operands)
        return np.stack(states), stacked

    return flow.structure.descent_step, flow_start


def _mode_step(compiled: CompiledNetwork) -> Callable:
    """One run's step of balanced-mode descent, operands ``(learning_rate, values)``: one object
    per network, so the jitted descent compiles once per network (a static argument)."""
    found = compiled.programs.get("sweep_step")
    if found is None:

        def found(state, operands):
            learning_rate, values = operands
            step = balanced_descent_step(lambda a: compiled.loss_of_strengths(a, values), learning_rate)
            return step(state, None)

        compiled.programs["sweep_step"] = found
    return found


def aligned_maps_batch(network: Network, phase: Alignment) -> list[np.ndarray]:
    """:func:`numeric.initial_conditions.aligned_maps` for every run: per pathway the map of the
    units that start it, ``(runs, |out_p|, |in_p|)``."""
    matched = starting_units_batch(network, phase.gates)
    maps = []
    for index, pathway in enumerate(network.pathways):
        w2 = _part(phase.w2, 1, pathway.outputs) * matched[index][:, None, :]
        maps.append(np.matmul(w2, _part(phase.w1, 2, pathway.inputs)))
    return maps


def _chunks_of_groups(runs: int, groups: np.ndarray | None, size: int = DESCENT_CHUNK) -> list[np.ndarray]:
    """Runs in chunks of about ``size``, whole groups each, groups in the order of their labels."""
    groups = np.arange(runs) if groups is None else np.asarray(groups)
    _, group_of = np.unique(groups, return_inverse=True)
    group_of = group_of.ravel()
    order = np.argsort(group_of, kind="stable")
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group_of[order])) + 1, [runs]])
    chunks: list[list[int]] = [[]]
    for first, last in zip(starts[:-1], starts[1:]):
        if chunks[-1] and len(chunks[-1]) + last - first > size:
            chunks.append([])
        chunks[-1].extend(order[first:last].tolist())
    return [np.array(c, dtype=int) for c in chunks]


def mode_vectors(compiled: CompiledNetwork, values: np.ndarray):
    """``(pathway index, u (points, out), v (points, in))`` of every mode at every point."""
    flat = np.asarray(compiled.mode_values(*jnp.asarray(values, jnp.float64).T), dtype=np.float64)
    if flat.ndim == 1:  # no parameter: the same vectors at every point
        flat = np.repeat(flat[:, None], len(values), axis=1)
    found, position = [], 0
    for ref in compiled.derivation.mode_refs:
        mode = compiled.derivation.mode(ref)
        nu, nv = len(mode.u), len(mode.v)
        u = flat[position + 2 : position + 2 + nu].T
        v = flat[position + 2 + nu : position + 2 + nu + nv].T
        found.append((ref.pathway, u, v))
        position += 2 + nu + nv
    return found
