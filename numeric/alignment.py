"""The early alignment phase of a bias-free ReLU layer at small initialization.

While the network's output is much smaller than its targets, the residual is the targets
themselves, ``r_n = y_n``. Each hidden unit ``i`` (input weights ``w_i``, output weights
``a_i``) then moves on its own under a fixed, known field: with its gate
``S_i = {n : w_i . x_n > 0}`` and ``M_S = 1/N sum_{n in S} y_n x_n^T``,

    a_i <- a_i + eta M_S w_i,        w_i <- w_i + eta M_S^T a_i,

one step of gradient descent on ``L = 1/2 mean ||y - yhat||^2`` with ``yhat`` dropped from
the residual (Maennel, Bousquet & Gelly 2018; Kumar & Haupt 2024). With the gate fixed this
is linear, so a unit grows like ``(1 + eta s_S)^k`` along the top singular pair of ``M_S``
and turns towards it; a gate changes when ``w_i . x_n`` crosses 0. Nothing here is fitted:
the phase starts from the actual initial weights and uses the data alone.

Stop rule (:data:`OUTPUT_FRACTION`): the phase ends at the first epoch at which the
network's output reaches that fraction of the targets, ``||yhat||_F >= f ||y||_F``, or at
the horizon if that comes first (``Alignment.ended`` says which). Until then the neglected
term ``yhat`` is at most that fraction of the residual. The gates at
that epoch are the units' settled patterns; the weights there seed the pathways
(:mod:`numeric.initial_conditions`).

The recursion is the one gradient descent takes at the training step ``eta``, so the phase
carries the discreteness of training with it (``1 + eta s`` per step, not ``exp(eta s)``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from gdln.derive.spec import Network, Pathway

from .sharding import shrunk_batch_size
from .types import ArrayLike, Float

#: the phase ends when the output norm reaches this fraction of the target norm
OUTPUT_FRACTION = 0.01
#: epochs run per compiled chunk while looking for the end of the phase
_CHUNK = 512


@dataclass(frozen=True)
class Alignment:
    """The end of the alignment phase, per seed.

    Attributes:
        epochs: ``(seeds,)`` the epoch at which the phase ends (an integer count of steps).
        ended: ``(seeds,)`` whether the output reached its fraction of the targets by then
            (``False``: the phase was cut at the horizon).
        gates: ``(seeds, N, units)`` each unit's settled gate pattern ``w_i . x_n > 0``.
        w1: ``(seeds, units, inputs)`` input weights at that epoch.
        w2: ``(seeds, outputs, units)`` output weights at that epoch.
        losses: ``(seeds, ...)`` the loss ``1/2 mean ||y - yhat||^2`` before every ``stride``-th
            epoch of the phase (``losses[:, j]`` at epoch ``j * stride``). :func:`align` keeps
            every epoch up to the last seed's end and sets a seed's entries after its own end
            to ``nan``; a phase diagram's runs (:func:`numeric.sweep.align_points`) keep them.
        stride: epochs between the kept losses.
    """

    epochs: np.ndarray
    ended: np.ndarray
    gates: np.ndarray
    w1: np.ndarray
    w2: np.ndarray
    losses: np.ndarray
    stride: int = 1

    def take(self, runs: np.ndarray) -> Alignment:
        """The phase of the seeds (or runs) ``runs``, in that order."""
        return Alignment(
            self.epochs[runs],
            self.ended[runs],
            self.gates[runs],
            self.w1[runs],
            self.w2[runs],
            self.losses[runs],
            self.stride,
        )

    def patterns(self, seed: int) -> Counter:
        """Settled patterns of one seed: ``{active datapoints (tuple): units}``, silent units
        (on at no datapoint) left out."""
        found: Counter = Counter()
        for column in self.gates[seed].T:
            active = tuple(int(n) for n in np.flatnonzero(column))
            if active:
                found[active] += 1
        return found


#: a run's weights are kept as ``2^exponent`` times weights whose largest entry lies in
#: ``[1/2, 1)``, renormalized by a power of two (exact) after every epoch: the recursion is
#: linear in the weights, so a run may stand for members whose init scales span any range that
#: float64 holds, each output compared and each loss formed in logarithms (:func:`_advance`)
_LARGEST_EXPONENT = 1021


def _power_of_two(exponent):
    """``2^exponent`` for integer ``exponent`` in ``[-1022, 1023]``, exactly (built from its bits:
    XLA's ``pow`` need not be exact)."""
    return jax.lax.bitcast_convert_type((exponent + 1023).astype(jnp.int64) << 52, jnp.float64)


def _normalized(w1, w2):
    """``(w1, w2)`` divided by the power of two that brings their largest entry into
    ``[1/2, 1)``, and that power's exponent (0 where every entry is 0)."""
    largest = jnp.maximum(jnp.max(jnp.abs(w1)), jnp.max(jnp.abs(w2)))
    exponent = jnp.clip(jnp.frexp(largest)[1].astype(jnp.int64), -_LARGEST_EXPONENT, _LARGEST_EXPONENT)
    scale = _power_of_two(-exponent)
    return w1 * scale, w2 * scale, exponent


@partial(jax.jit, static_argnames=("steps",))
def _advance(
    w1,
    w2,
    exponent,
    done,
    w1_end,
    w2_end,
    exponent_end,
    inputs,
    targets,
    learning_rate,
    log_threshold,
    log_squares,
    first,
    horizon,
    steps,
):
    """``steps`` epochs (``first``, ``first + 1``, ...) of the fixed-residual recursion.

    Every argument but ``first``, ``horizon`` and ``steps`` has a leading axis of runs, each with
    its own data, step and threshold. A run's weights are ``2^exponent (w1, w2)``, renormalized
    after every epoch (:func:`_normalized`). A run follows one trajectory for several members at
    once: member ``k`` has weights ``f_k`` times the run's. That is exact, because the recursion
    is linear in the weights while the gates ``w . x > 0`` do not change with their scale, so
    members that differ only in init scale share every gate and every step; member ``k``'s
    output is ``f_k^2`` times the run's. No member's number is formed here: with
    ``log_squares = 2 log2 f_k``, member ``k`` ends once ``log_squares + log2 ||yhat||_F`` (the
    run's output) reaches ``log_threshold``, whatever the spread of the factors; the run stops
    moving once all its members have ended, and at epoch ``horizon``. A larger factor never
    ends later, so the members end in a fixed order and the run's weights at an epoch where
    some end are kept once, in slot ``i`` of ``w1_end``, ``w2_end``, ``exponent_end`` for the
    ``i`` members ended before it (:func:`_member_slots`): one write an epoch, not one per member.

    Returns the new state and, per epoch, two numbers of the run's output before the step, from
    which every member's loss and end follow (:func:`_member_losses`, :func:`member_ends`):
    ``mean_n y_n . yhat_n / ||yhat||_F`` (0 where the output is 0; scale-free) and
    ``log2 ||yhat||_F``. Nothing per member leaves the loop."""

    def one_run(w1, w2, exponent, done, w1_end, w2_end, exponent_end, inputs, targets, rate, log_threshold, ls):
        field = targets / inputs.shape[0]  # r_n / N with r = y: the fixed residual

        def step(state, epoch):
            w1, w2, exponent, done, w1_end, w2_end, exponent_end = state
            pre = inputs @ w1.T
            hidden = jax.nn.relu(pre)
            output = hidden @ w2.T  # the run's output over 4^exponent
            norm = jnp.sqrt(jnp.sum(output**2))
            log_norm = 2 * exponent + jnp.log2(norm)
            ends = ~done & (ls + log_norm >= log_threshold)
            slot = jnp.sum(done)
            write = jnp.any(ends)
            w1_end = w1_end.at[slot].set(jnp.where(write, w1, w1_end[slot]))
            w2_end = w2_end.at[slot].set(jnp.where(write, w2, w2_end[slot]))
            exponent_end = exponent_end.at[slot].set(jnp.where(write, exponent, exponent_end[slot]))
            done = done | ends
            frozen = jnp.all(done) | (epoch >= horizon)
            gate = (pre > 0).astype(inputs.dtype)
            new_w2 = w2 + rate * field.T @ hidden
            new_w1 = w1 + rate * ((field @ w2) * gate).T @ inputs
            keep = frozen.astype(inputs.dtype)
            moved_w1, moved_w2, shift = _normalized(keep * w1 + (1 - keep) * new_w1, keep * w2 + (1 - keep) * new_w2)
            cross = jnp.mean(jnp.sum(targets * output, axis=1))
            ratio = jnp.where(norm > 0, cross / jnp.where(norm > 0, norm, 1.0), 0.0)
            state = (moved_w1, moved_w2, exponent + shift, done, w1_end, w2_end, exponent_end)
            return state, jnp.stack([ratio, log_norm])

        epochs = first + jnp.arange(steps)
        state, summaries = jax.lax.scan(step, (w1, w2, exponent, done, w1_end, w2_end, exponent_end), epochs)
        return *state, summaries.T

    return jax.vmap(one_run)(
        w1, w2, exponent, done, w1_end, w2_end, exponent_end, inputs, targets, learning_rate, log_threshold, log_squares
    )


def run_phase(w1, w2, inputs, targets, learning_rate, threshold, horizon: int, stride: int, factors=None):
    """The phase for every run (leading axis) and each of its members (``factors``, ``(runs,
    members)``; one member of factor 1 by default: see :func:`_advance`) until all have ended or
    the horizon has passed. Returns, as numpy arrays ``(runs, members, ...)``: each member's
    weights at its end (at the horizon for one that never ends), whether it ended within the
    horizon and the epoch it did (the horizon otherwise), and its loss before every
    ``stride``-th epoch (``0, stride, 2 stride, ...``; after a member's end the loss is that of
    its run's later weights, and may overflow).

    A run is carried at any scale: its weights and each factor may lie anywhere float64 holds
    (a member's end, weights and loss are formed from logarithms and powers of two, so a
    member's answer does not depend on the other members of its run, beyond the rounding of a
    logarithm, about ``1e-16`` of ``|log2|`` of its output norm relative).

    Runs go in chunks of epochs, and a run whose members have all ended leaves the batch
    (:func:`numeric.sharding.shrunk_batch_size`): phases that differ a hundredfold in length (a sweep over learning
    rates) no longer all run as long as the longest. A run that has left stands still, so its
    output, and the numbers of it recorded per epoch, stay as they were at its last epoch."""
    runs = w1.shape[0]
    factors = np.ones((runs, 1)) if factors is None else np.asarray(factors, np.float64)
    members = factors.shape[1]
    w1, w2, exponent = _normalized_on_host(np.asarray(w1, np.float64), np.asarray(w2, np.float64))
    log_threshold = np.log2(np.asarray(threshold, np.float64))
    log_squares = 2 * np.log2(factors)
    per_run = [jnp.asarray(x) for x in (inputs, targets, learning_rate, log_threshold, log_squares)]
    # the state of the runs in the batch stays on the device, built on the host (eager
    # jax.numpy constructors are each a program to compile); a run's rows come back when it leaves
    current = [
        jnp.asarray(w1),
        jnp.asarray(w2),
        jnp.asarray(exponent),
        jnp.asarray(np.zeros((runs, members), dtype=bool)),
        jnp.asarray(np.zeros((runs, members, *w1.shape[1:]))),
        jnp.asarray(np.zeros((runs, members, *w2.shape[1:]))),
        jnp.asarray(np.zeros((runs, members), dtype=np.int64)),
    ]
    state = [np.empty(x.shape, dtype=x.dtype) for x in current]
    chunk = -(-_CHUNK // stride) * stride  # whole strides per chunk, so the kept epochs line up
    summaries: list[np.ndarray] = []  # per chunk, (runs, 2, chunk)
    batch_runs = np.arange(runs)  # the run in each row of the batch (padding repeats live runs)
    live = np.ones(runs, dtype=bool)  # rows whose run still moves (a run's first row only)
    batch_data = per_run
    first = 0
    while True:
        moved = _advance(*current, *batch_data, first, int(horizon), chunk)
        current = list(moved[:7])
        rows = np.flatnonzero(live)
        summary = np.empty((runs, 2, chunk))
        summary[:] = summaries[-1][:, :, -1:] if summaries else 0.0  # runs that left stand still
        summary[batch_runs[rows]] = np.asarray(moved[7])[rows]
        summaries.append(summary)
        first += chunk
        over = first > horizon
        live[rows if over else rows[np.asarray(current[3])[rows].all(axis=1)]] = False
        if over or not live.any():
            break
        size = shrunk_batch_size(int(live.sum()), len(batch_runs))
        if size < len(batch_runs):
            _keep_rows(state, current, batch_runs, ~live)  # the runs that have left, before the batch drops them
            keep = np.resize(np.flatnonzero(live), size)
            current, batch_data = _take(current, keep, per_run, batch_runs[keep])
            batch_runs = batch_runs[keep]
            live = np.arange(size) < int(live.sum())
    _keep_rows(state, current, batch_runs, np.ones(len(batch_runs), dtype=bool))
    w1, w2, exponent, _, w1_end, w2_end, exponent_end = state
    ratio, log_norm = np.concatenate(summaries, axis=-1).transpose(1, 0, 2)
    ended, epochs = member_ends(log_norm[:, : horizon + 1], log_squares, log_threshold)
    slots = _member_slots(ended, epochs)
    w1_end = np.take_along_axis(w1_end, slots[..., None, None], axis=1)
    w2_end = np.take_along_axis(w2_end, slots[..., None, None], axis=1)
    exponent_end = np.take_along_axis(exponent_end, slots, axis=1)
    # a member that never ended stands where its run stopped, at the horizon
    stopped = ended[..., None, None]
    mantissa, shift = np.frexp(factors)
    scale = (shift + np.where(ended, exponent_end, exponent[:, None]))[..., None, None]
    with np.errstate(under="ignore"):
        w1_end = np.ldexp(mantissa[..., None, None] * np.where(stopped, w1_end, w1[:, None]), scale)
        w2_end = np.ldexp(mantissa[..., None, None] * np.where(stopped, w2_end, w2[:, None]), scale)
    losses = _member_losses(np.asarray(targets), ratio[:, ::stride], log_norm[:, ::stride], log_squares)
    return w1_end, w2_end, ended, epochs, losses


def _normalized_on_host(w1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_normalized` of every run (leading axis) on the host, where weights may be subnormal."""
    largest = np.maximum(np.abs(w1).max(axis=(1, 2)), np.abs(w2).max(axis=(1, 2)))
    exponent = np.frexp(largest)[1].astype(np.int64)
    return np.ldexp(w1, -exponent[:, None, None]), np.ldexp(w2, -exponent[:, None, None]), exponent


def _keep_rows(state: list[np.ndarray], current, batch_runs: np.ndarray, rows: np.ndarray) -> None:
    """Copy the batch's ``rows`` (a mask) of every state array into the runs' full arrays, indexed
    on the host (a device gather of each new count of rows would compile anew); a row that pads
    the batch holds the same as its run's first row."""
    for full, batch_rows in zip(state, current):
        full[batch_runs[rows]] = np.asarray(batch_rows)[rows]


@jax.jit
def _take(state, keep, data, runs):
    """The batch's state rows ``keep`` and the data of ``runs``, in one program per batch size
    (indexing each array alone compiles a gather per array and size)."""
    return [x[keep] for x in state], [x[runs] for x in data]


def member_ends(
    log_norm: np.ndarray, log_squares: np.ndarray, log_threshold: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per run and member, whether its output ``log_squares + log_norm`` (in ``log2``) reached
    ``log_threshold`` within the epochs recorded, and the first epoch it did (the last epoch
    recorded otherwise), by the same comparison :func:`_advance` makes. The run's running
    largest norm never falls, so each end is a bisection on it."""
    highest = np.maximum.accumulate(log_norm, axis=-1)
    count = highest.shape[-1]
    low = np.zeros(log_squares.shape, dtype=int)
    high = np.full(log_squares.shape, count)  # count: not reached within the epochs recorded
    while np.any(searching := low < high):
        middle = np.where(searching, (low + high) // 2, 0)  # below count wherever still searching
        reached = log_squares + np.take_along_axis(highest, middle, axis=-1) >= log_threshold[:, None]
        high = np.where(searching & reached, middle, high)
        low = np.where(searching & ~reached, middle + 1, low)
    ended = high < count
    return ended, np.where(ended, high, count - 1)


def _member_losses(targets: np.ndarray, ratio: np.ndarray, log_norm: np.ndarray, log_squares: np.ndarray) -> np.ndarray:
    """``1/2 mean_n ||y_n - c yhat_n||^2`` of every member (``c`` its factor squared) from the
    run's ``mean_n y_n . yhat_n / ||yhat||_F`` (``ratio``) and ``log2 ||yhat||_F``:
    ``(runs, members, samples)``. With the member's output norm ``nu = c ||yhat||_F`` and
    ``mean_n ||yhat_n||^2 = ||yhat||_F^2 / N``, the loss is ``base - nu ratio + nu^2 / 2N``;
    ``nu`` is below the threshold until the member's end, and may overflow after it."""
    base = 0.5 * np.mean(np.sum(targets**2, axis=-1), axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        nu = np.exp2(log_squares[:, :, None] + log_norm[:, None, :])
        return base[:, None, None] - nu * ratio[:, None, :] + 0.5 * nu**2 / targets.shape[-2]


def _member_slots(ended: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """Per run and member, the slot of :func:`_advance` holding the run's weights at the member's
    end: the number of the run's members that ended at an earlier epoch."""
    earlier = ended[..., None, :] & (epochs[..., None, :] < epochs[..., :, None])
    return np.where(ended, earlier.sum(axis=-1), 0)


def align(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    w1s: Float[ArrayLike, "seeds units inp"],
    w2s: Float[ArrayLike, "seeds out units"],
    learning_rate: float,
    *,
    output_fraction: float = OUTPUT_FRACTION,
    horizon: int = 10_000_000,
) -> Alignment:
    """Run the alignment phase from each seed's initial weights until its output reaches
    ``output_fraction`` of the targets, or until ``horizon`` epochs (see the module docstring)."""
    inputs = jnp.asarray(inputs, jnp.float64)
    targets = jnp.asarray(targets, jnp.float64)
    w1 = jnp.asarray(w1s, jnp.float64)
    seeds = w1.shape[0]
    threshold = float(output_fraction) * float(jnp.sqrt(jnp.sum(targets**2)))
    w1n, w2n, ended, epochs, losses_all = run_phase(
        w1,
        jnp.asarray(w2s, jnp.float64),
        jnp.broadcast_to(inputs, (seeds, *inputs.shape)),
        jnp.broadcast_to(targets, (seeds, *targets.shape)),
        jnp.full(seeds, float(learning_rate)),
        jnp.full(seeds, threshold),
        horizon,
        1,
    )
    w1n, w2n = w1n[:, 0], w2n[:, 0]
    ended, epochs, losses_all = ended[:, 0], epochs[:, 0], losses_all[:, 0, : horizon + 1]
    width = int(epochs.max()) + 1
    kept = np.where(np.arange(width)[None, :] <= epochs[:, None], losses_all[:, :width], np.nan)
    gates = np.asarray(inputs)[None] @ np.transpose(w1n, (0, 2, 1)) > 0
    return Alignment(
        epochs=epochs.astype(int), ended=np.asarray(ended, dtype=bool), gates=gates, w1=w1n, w2=w2n, losses=kept
    )


def aligned_network(alignment: Alignment, inputs: int, outputs: int, name: str = "aligned") -> Network:
    """The GDLN whose pathways are the settled patterns themselves: one pathway per distinct
    pattern over all seeds (most units first), on all inputs and outputs, one hidden layer, its
    width the most units any seed puts on it. Each seed's own units seed it
    (:func:`numeric.initial_conditions.aligned_mode_seeds`), so a pattern a seed lacks starts
    at zero there."""
    totals: Counter = Counter()
    widths: Counter = Counter()
    for seed in range(len(alignment.epochs)):
        for active, units in alignment.patterns(seed).items():
            totals[active] += units
            widths[active] = max(widths[active], units)
    ordered = sorted(totals, key=lambda active: (-totals[active], active))
    pathways = tuple(
        Pathway(
            name="on_" + "_".join(str(n) for n in active),
            active=active,
            inputs=tuple(range(inputs)),
            outputs=tuple(range(outputs)),
            hidden_layers=1,
            units=widths[active],
        )
        for active in ordered
    )
    return Network(name=name, pathways=pathways)
