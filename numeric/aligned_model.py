"""The aligned GDLN of many runs at once: the theory's best model of a trained ReLU network.

At the end of the alignment phase each hidden unit of a ReLU run has settled on a gate pattern
(:mod:`numeric.alignment`). The GDLN whose pathways are those patterns, each on all inputs and
outputs and started balanced from the map of its units (:func:`numeric.alignment.aligned_network`
and :meth:`numeric.gated_chains.GatedChains.starts`, as ``gdln verify`` builds it), is the model
:func:`verify.rules.predicted_follows` judges the candidates against. ``verify`` builds that
network anew for every run; a sweep has a different set of patterns at every point and seed, so
here the patterns are an operand: each run's chains are padded to the most patterns of any run
(a padded pattern gates nothing and starts at zero, so it stays zero), and one compiled step
(:func:`pattern_chain_step`) serves every run of every point
(:func:`numeric.sweep.aligned_descent_chunks`).

A pathway's chain is as wide as ``min(inputs, outputs)``: the map of a pattern's units has no
higher rank, and rows that start at zero stay at zero under gradient descent, so the wider
chains ``verify`` builds (one row per unit) give the same loss.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .alignment import Alignment


def pattern_chain_step(state, operands):
    """One step of gradient descent on every pattern's two-layer chain of one run: ``state =
    (W1 (P, r, in), W2 (P, out, r))``, ``operands = (learning_rate, inputs (N, in), targets (N,
    out), gates (P, N))``; returns the new state and the loss ``1/2 mean ||y - yhat||^2`` before
    the step. A module-level function: the jitted descent compiles once for every sweep."""
    w1, w2 = state
    learning_rate, inputs, targets, gates = operands
    hidden = jnp.einsum("pwi,ni->pnw", w1, inputs)
    residual = targets - jnp.einsum("pn,pow,pnw->no", gates, w2, hidden)
    loss = 0.5 * jnp.mean(jnp.sum(residual**2, axis=1))
    g = jnp.einsum("pn,no,ni->poi", gates, residual, inputs) / inputs.shape[0]
    d1 = jnp.einsum("pow,poi->pwi", w2, g)
    d2 = jnp.einsum("poi,pwi->pow", g, w1)
    return (w1 + learning_rate * d1, w2 + learning_rate * d2), loss


def pattern_count(phase: Alignment) -> int:
    """The most distinct non-empty settled patterns of any run of ``phase``."""
    return max((len(_patterns(gates)) for gates in np.asarray(phase.gates, dtype=bool)), default=0)


def pattern_chain_starts(phase: Alignment, runs: np.ndarray, patterns: int):
    """``((W1, W2), gates)`` of the runs ``runs`` of ``phase``: per run, each settled pattern's
    chain started balanced from the map ``sum_i a_i w_i^T`` of its units (``W2 = U sqrt(S)``,
    ``W1 = sqrt(S) V^T``), padded to ``patterns`` patterns; ``gates`` ``(runs, patterns, N)``."""
    all_gates = np.asarray(phase.gates, dtype=bool)
    outputs, inputs = phase.w2.shape[1], phase.w1.shape[2]
    rank = min(inputs, outputs)
    w1 = np.zeros((len(runs), patterns, rank, inputs))
    w2 = np.zeros((len(runs), patterns, outputs, rank))
    gates = np.zeros((len(runs), patterns, all_gates.shape[1]))
    for row, run in enumerate(runs):
        for p, (pattern, units) in enumerate(_patterns(all_gates[run]).items()):
            chosen = np.asarray(units)
            u, s, vt = np.linalg.svd(phase.w2[run][:, chosen] @ phase.w1[run][chosen], full_matrices=False)
            root = np.sqrt(s)
            w1[row, p] = root[:, None] * vt
            w2[row, p] = u * root[None, :]
            gates[row, p] = pattern
    return (w1, w2), gates


def _patterns(gates: np.ndarray) -> dict[tuple[bool, ...], list[int]]:
    """The units of each distinct non-empty pattern of ``gates`` ``(N, units)``."""
    found: dict[tuple[bool, ...], list[int]] = {}
    for unit, column in enumerate(np.asarray(gates, dtype=bool).T):
        if column.any():
            found.setdefault(tuple(bool(g) for g in column), []).append(unit)
    return found
