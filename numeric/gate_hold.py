"""How far the theory's frozen gates carry it, told by the theory alone (no network is trained).

The frozen-gate theory continues the settled units of the alignment phase with their gates
frozen: every unit ``i`` (input weights ``w_i``, output weights ``a_i``) keeps its settled pattern
``g_i`` and moves by gradient descent on ``L = 1/2 mean ||y - sum_i a_i g_in w_i . x_n||^2``, the
GDLN of the settled patterns at the resolution of its units. Its own weights tell when that stops
being self-consistent: a ReLU network holding them gates unit ``i`` on datapoint ``n`` by the sign
of ``w_i . x_n``, not by ``g_in``, and its loss ``L_relu`` parts from the theory's ``L``. The
**ReLU gap** ``|L_relu - L|`` is measured in the units of the validity threshold (a share of the
initial loss), so a gate that moves where its unit contributes little counts for little, and one
that moves where it carries the output counts in full. The **share of moved gates** (the fraction
of unit-datapoint pairs whose sign disagrees with the frozen gate, each unit weighted by its
strength ``|w_i| |a_i|``) is reported beside it: when the gates begin to move.

:func:`gate_hold` runs that continuation for many runs at once (leading axis: grid points times
seeds) until the ReLU gap passes a limit, the loss comes within a margin of the least loss the
frozen gates allow (:func:`gated_floor`), or a run's epochs are spent, whichever comes first.
The rule that turns this into a verdict is :func:`verify.rules.predicted_validity`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .sharding import shrunk_batch_size

#: epochs per compiled block of :func:`gate_hold`; every run stops at its own epoch inside a block
BLOCK = 256

#: why a run of :func:`gate_hold` stopped
PARTED, SETTLED, HORIZON = 0, 1, 2


@dataclass(frozen=True)
class GateHold:
    """Where each run of :func:`gate_hold` stopped.

    Attributes:
        epochs: ``(runs,)`` steps of the continuation taken before it stopped.
        losses: ``(runs,)`` the frozen model's loss there.
        floors: ``(runs,)`` the least loss the frozen gates allow (:func:`gated_floor`).
        reasons: ``(runs,)`` why it stopped: :data:`PARTED` (the ReLU gap passed its limit),
            :data:`SETTLED` (the loss came within the margin of its floor first) or
            :data:`HORIZON` (the run's epochs were spent first).
        gaps: ``(runs,)`` the largest ReLU gap ``|L_relu - L|`` up to and including the epoch it
            stopped at, in units of loss (a run stopped by :data:`PARTED` would part further).
        moved_at: ``(runs,)`` the first step at which the share of moved gates reached the level,
            ``-1`` where it did not before the run stopped.
    """

    epochs: np.ndarray
    losses: np.ndarray
    floors: np.ndarray
    reasons: np.ndarray
    gaps: np.ndarray
    moved_at: np.ndarray

    def take(self, rows) -> GateHold:
        """The runs ``rows`` (an index or slice) alone."""
        return GateHold(*(np.asarray(getattr(self, f))[rows] for f in _names(GateHold)))

    @staticmethod
    def concatenate(parts: list[GateHold]) -> GateHold:
        """Runs of several holds, one after another."""
        return GateHold(*(np.concatenate([getattr(p, f) for p in parts]) for f in _names(GateHold)))


def _names(cls) -> list[str]:
    return [f.name for f in fields(cls)]


def gated_floor(inputs: np.ndarray, targets: np.ndarray, gates: np.ndarray) -> float:
    """The least loss ``1/2 mean ||y - yhat||^2`` of any gated linear model whose units are gated
    as ``gates`` ``(N, units)``: the targets' least-squares residual on the features
    ``1[n in S] x_n`` of each distinct pattern ``S`` (units sharing a pattern sum to one map)."""
    patterns = np.unique(np.asarray(gates, dtype=bool).T, axis=0)  # (patterns, N)
    patterns = patterns[patterns.any(axis=1)]
    if len(patterns) == 0:
        return float(0.5 * np.mean(np.sum(targets**2, axis=1)))
    features = np.concatenate([inputs * p[:, None] for p in patterns], axis=1)
    coefficients, *_ = np.linalg.lstsq(features, targets, rcond=None)
    residual = targets - features @ coefficients
    return float(0.5 * np.mean(np.sum(residual**2, axis=1)))


@partial(jax.jit, static_argnames=("steps",))
def _block(state, inputs, targets, gates, learning_rate, level, gap_limit, stop_loss, limit, steps: int):
    """``steps`` epochs of every run (vmapped); a run stops moving at its first stop."""

    def one_run(state, inputs, targets, gates, rate, level, gap_limit, stop_loss, limit):
        count = inputs.shape[0]

        def step(state, _):
            w1, w2, epoch, loss_then, reason, gap, moved_at = state
            pre = inputs @ w1.T
            hidden = pre * gates
            residual = targets - hidden @ w2.T
            loss = 0.5 * jnp.mean(jnp.sum(residual**2, axis=1))
            relu_loss = 0.5 * jnp.mean(jnp.sum((targets - jnp.maximum(pre, 0.0) @ w2.T) ** 2, axis=1))
            strength = jnp.linalg.norm(w1, axis=1) * jnp.linalg.norm(w2, axis=0)
            moved = jnp.mean(jnp.abs((pre > 0).astype(inputs.dtype) - gates), axis=0)
            share = jnp.sum(moved * strength) / jnp.maximum(jnp.sum(strength), jnp.finfo(inputs.dtype).tiny)
            going = reason < 0
            gap = jnp.where(going, jnp.maximum(gap, jnp.abs(relu_loss - loss)), gap)
            moved_at = jnp.where(going & (moved_at < 0) & (share >= level), epoch, moved_at)
            stops = jnp.where(
                gap > gap_limit, PARTED, jnp.where(loss <= stop_loss, SETTLED, jnp.where(epoch >= limit, HORIZON, -1))
            )
            now = going & (stops >= 0)
            reason = jnp.where(now, stops, reason)
            loss_then = jnp.where(now, loss, loss_then)
            keep = (reason >= 0).astype(inputs.dtype)
            new_w1 = w1 + rate * (((residual @ w2) * gates).T @ inputs) / count
            new_w2 = w2 + rate * residual.T @ hidden / count
            w1 = keep * w1 + (1 - keep) * new_w1
            w2 = keep * w2 + (1 - keep) * new_w2
            return (w1, w2, epoch + (reason < 0), loss_then, reason, gap, moved_at), None

        return jax.lax.scan(step, state, None, length=steps)[0]

    return jax.vmap(one_run)(state, inputs, targets, gates, learning_rate, level, gap_limit, stop_loss, limit)


def gate_hold(
    inputs,
    targets,
    w1,
    w2,
    gates,
    learning_rate,
    epochs,
    initial_losses,
    *,
    level: float,
    gap_limit: float,
    margin: float,
) -> GateHold:
    """The frozen-gate continuation of every run until its ReLU gap passes ``gap_limit``, its loss
    settles or its epochs are spent.

    Args:
        inputs: ``(runs, N, inputs)`` each run's data.
        targets: ``(runs, N, outputs)``.
        w1: ``(runs, units, inputs)`` input weights where the continuation starts (the end of the
            alignment phase).
        w2: ``(runs, outputs, units)`` output weights there.
        gates: ``(runs, N, units)`` the frozen gates (the settled patterns, ``w1 . x > 0`` there).
        learning_rate: ``(runs,)`` the step of gradient descent.
        epochs: ``(runs,)`` steps each run may take (the horizon less the phase).
        initial_losses: ``(runs,)`` each run's loss at epoch 0, the unit of ``gap_limit`` and
            ``margin``.
        level: the share of moved gates at which the gates count as moved (``moved_at``).
        gap_limit: a run stops once its ReLU gap passes ``gap_limit`` times its initial loss
            (:data:`PARTED`).
        margin: a run also stops once its loss is within ``margin`` times its initial loss of its
            floor (:data:`SETTLED`).

    Returns:
        Where each run stopped (`GateHold`).
    """
    inputs, targets, w1, w2 = (np.asarray(a, dtype=np.float64) for a in (inputs, targets, w1, w2))
    gates = np.asarray(gates, dtype=np.float64)
    runs = len(w1)
    floors = np.array([gated_floor(inputs[r], targets[r], gates[r]) for r in range(runs)])
    initial = np.asarray(initial_losses, dtype=np.float64)
    stop_loss = floors + margin * initial
    limit = np.asarray(epochs, dtype=np.int64)
    # each row of the batch is a run (``batch_runs``); rows that stopped leave the batch
    # (numeric.sharding.shrunk_batch_size), so runs whose lengths differ tenfold (a sweep over
    # learning rates) do not all run as long as the longest
    state = [
        w1,
        w2,
        np.zeros(runs, np.int64),
        np.zeros(runs),  # the loss where the run stopped; read only once ``reason`` says it stopped
        np.full(runs, -1, np.int64),
        np.zeros(runs),
        np.full(runs, -1, np.int64),
    ]
    operands = [
        inputs,
        targets,
        gates,
        np.asarray(learning_rate, np.float64) * np.ones(runs),
        np.full(runs, level),
        gap_limit * initial,
        stop_loss,
        limit,
    ]
    taken, losses, reasons = np.zeros(runs, np.int64), np.full(runs, np.nan), np.full(runs, -1, np.int64)
    gaps, moved_at = np.zeros(runs), np.full(runs, -1, np.int64)
    batch_runs = np.arange(runs)
    on_device = tuple(jnp.asarray(x) for x in state)
    fixed = [jnp.asarray(x) for x in operands]
    # a run stops by its last epoch at the latest: one block more than the longest run
    for _ in range(int(limit.max(initial=0)) // BLOCK + 1):
        on_device = _block(on_device, *fixed, steps=BLOCK)
        now = [np.asarray(x) for x in on_device[2:]]
        # padding rows repeat a live run's row, so writing them again writes the same
        taken[batch_runs], losses[batch_runs], reasons[batch_runs], gaps[batch_runs], moved_at[batch_runs] = now
        live = np.flatnonzero(now[2] < 0)
        if len(live) == 0:
            break
        size = shrunk_batch_size(len(np.unique(batch_runs[live])), len(batch_runs))
        if size < len(batch_runs):
            keep = np.resize(live, size)
            # indexed on the host: a device gather would compile anew for each size
            on_device = tuple(jnp.asarray(np.asarray(x)[keep]) for x in on_device)
            fixed = [jnp.asarray(np.asarray(x)[keep]) for x in fixed]
            batch_runs = batch_runs[keep]
    return GateHold(epochs=taken, losses=losses, floors=floors, reasons=reasons, gaps=gaps, moved_at=moved_at)
