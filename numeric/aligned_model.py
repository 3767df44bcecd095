"""The aligned GDLN of many runs at once: the theory's best model of a trained ReLU network.

At the end of the alignment phase each hidden unit of a ReLU run has settled on a gate pattern
(:mod:`numeric.alignment`). The GDLN whose pathways are those patterns, each on all inputs and
outputs and started balanced from the map of its units (:func:`numeric.alignment.aligned_network`
and :meth:`numeric.gated_chains.GatedChains.starts`, as ``gdln verify`` builds it), is the model
:func:`verify.rules.predicted_follows` judges the candidates against. ``verify`` builds that
network anew for every run; a sweep has a different set of patterns at every point and seed, so
here the patterns are an operand, and one compiled step (:func:`pattern_chain_step`) serves every
run of every point (:func:`numeric.sweep.aligned_descent_chunks`).

Each pattern's chain is kept as rows, a row a virtual unit gated by its pattern (``W2 W1 =
sum_k w2_k w1_k^T``, and gradient descent on the chain is descent on its rows, coupled only by
the residual): ``min(units, inputs, outputs)`` rows a pattern, the rank its units' map can have.
Every run's rows are padded to the most of any run with rows that gate nothing and start at zero,
so stay at zero. A step then costs what a step of the ReLU network's own units costs, whatever
the number of patterns (at large init scales every unit has a pattern of its own); rows past a
map's rank start at its rounding-level singular values, as ``verify``'s chains do.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .alignment import Alignment


def pattern_chain_step(state, operands):
    """One step of gradient descent on every pattern's chain of one run, as rows: ``state = (W1
    (rows, in), W2 (out, rows))``, ``operands = (learning_rate, inputs (N, in), targets (N,
    out), gates (N, rows))``; returns the new state and the loss ``1/2 mean ||y - yhat||^2`` before
    the step. A module-level function: the jitted descent compiles once for every sweep."""
    w1, w2 = state
    learning_rate, inputs, targets, gates = operands
    hidden = (inputs @ w1.T) * gates
    residual = targets - hidden @ w2.T
    loss = 0.5 * jnp.mean(jnp.sum(residual**2, axis=1))
    d1 = ((residual @ w2) * gates).T @ inputs / inputs.shape[0]
    d2 = residual.T @ hidden / inputs.shape[0]
    return (w1 + learning_rate * d1, w2 + learning_rate * d2), loss


def pattern_rows(phase: Alignment) -> int:
    """The most rows of any run of ``phase``: per settled pattern, the rank its units' map can have."""
    rank = min(phase.w1.shape[2], phase.w2.shape[1])
    return max(
        (sum(min(len(units), rank) for units in _patterns(gates).values()) for gates in np.asarray(phase.gates, bool)),
        default=0,
    )


def pattern_chain_starts(phase: Alignment, runs: np.ndarray, rows: int):
    """``((W1, W2), gates)`` of the runs ``runs`` of ``phase``: per run, each settled pattern's
    chain started balanced from the map ``sum_i a_i w_i^T`` of its units (``W2 = U sqrt(S)``,
    ``W1 = sqrt(S) V^T``), as rows padded to ``rows``; ``W1`` ``(runs, rows, in)``, ``W2``
    ``(runs, out, rows)``, ``gates`` ``(runs, N, rows)``."""
    all_gates = np.asarray(phase.gates, dtype=bool)
    outputs, inputs = phase.w2.shape[1], phase.w1.shape[2]
    rank = min(inputs, outputs)
    w1 = np.zeros((len(runs), rows, inputs))
    w2 = np.zeros((len(runs), outputs, rows))
    gates = np.zeros((len(runs), all_gates.shape[1], rows))
    for row, run in enumerate(runs):
        first = 0
        for pattern, units in _patterns(all_gates[run]).items():
            chosen = np.asarray(units)
            u, s, vt = np.linalg.svd(phase.w2[run][:, chosen] @ phase.w1[run][chosen], full_matrices=False)
            k = min(len(units), rank)
            root = np.sqrt(s[:k])
            w1[row, first : first + k] = root[:, None] * vt[:k]
            w2[row, :, first : first + k] = u[:, :k] * root[None, :]
            gates[row, :, first : first + k] = np.asarray(pattern, dtype=float)[:, None]
            first += k
    return (w1, w2), gates


def _patterns(gates: np.ndarray) -> dict[tuple[bool, ...], list[int]]:
    """The units of each distinct non-empty pattern of ``gates`` ``(N, units)``."""
    found: dict[tuple[bool, ...], list[int]] = {}
    for unit, column in enumerate(np.asarray(gates, dtype=bool).T):
        if column.any():
            found.setdefault(tuple(bool(g) for g in column), []).append(unit)
    return found
