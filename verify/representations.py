"""What trained networks represent: a census of ReLU hidden units by gate pattern over
contexts, and classical MDS of hidden representations (paper Figure 4c)."""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np
from scipy.spatial import procrustes

from gdln.derive.spec import Task
from gdln.numeric.training import gdln_hidden, gdln_layout, relu_hidden

# a unit whose weight product is below this fraction of the largest one has not learned
SILENT_FRACTION = 1e-3


def context_pattern(on: np.ndarray, contexts: np.ndarray, majority: bool = False) -> str:
    """Name of a unit's gate pattern: ``all``, ``contexts-i-j``, ``none``, or ``mixed`` when
    the unit is on for some but not all items of a context. With ``majority``, a unit counts
    as on in a context where it is on for more than half of the items (never ``mixed``)."""
    labels = sorted(set(contexts.tolist()))
    active = []
    for c in labels:
        at = on[contexts == c]
        if (at.mean() > 0.5) if majority else at.all():
            active.append(c)
        elif at.any() and not majority:
            return "mixed"
    if not active:
        return "none"
    if len(active) == len(labels):
        return "all"
    return "contexts-" + "-".join(str(c) for c in active)


def gate_census(task: Task, inputs, w1s, w2s) -> dict | None:
    """Fractions of learned hidden units (pooled over seeds) per context pattern of their final
    gates; ``None`` when the spec gives no ``data.contexts``."""
    if task.contexts is None:
        return None
    contexts = np.asarray(task.contexts)
    inputs = np.asarray(inputs)
    counts: Counter = Counter()
    majority: Counter = Counter()
    for w1, w2 in zip(np.asarray(w1s), np.asarray(w2s)):
        size = np.linalg.norm(w2, axis=0) * np.linalg.norm(w1, axis=1)
        learned = size > SILENT_FRACTION * size.max()
        gates = inputs @ w1.T > 0
        counts.update(context_pattern(gates[:, i], contexts) for i in np.flatnonzero(learned))
        majority.update(context_pattern(gates[:, i], contexts, majority=True) for i in np.flatnonzero(learned))
    total = sum(counts.values())
    return {
        "units": int(total),
        "fractions": {k: counts[k] / total for k in sorted(counts)},
        "majority_fractions": {k: majority[k] / total for k in sorted(majority)},
    }


def classical_mds(representations: np.ndarray, dimensions: int = 2) -> np.ndarray:
    """Torgerson's classical MDS of rows (datapoints): deterministic, up to rotation and sign."""
    x = np.asarray(representations, dtype=float)
    squared = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    n = x.shape[0]
    centring = np.eye(n) - np.ones((n, n)) / n
    gram = -0.5 * centring @ squared @ centring
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1][:dimensions]
    return vectors[:, order] * np.sqrt(np.maximum(values[order], 0.0))


def mds_comparison(relu_hidden: np.ndarray, reln_hidden: np.ndarray) -> dict:
    """MDS coordinates of both representations and their Procrustes disparity (0 = same shape)."""
    relu, reln = classical_mds(relu_hidden), classical_mds(reln_hidden)
    _, _, disparity = procrustes(relu, reln)
    return {"relu": relu.tolist(), "reln": reln.tolist(), "procrustes_disparity": float(disparity)}


def hidden_layers(task: Task, relu_run, reln_run, network: str, inputs, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Final hidden layers of one seed of a trained ReLU network and of a trained GDLN ``network``."""

    def one(tree):
        return jax.tree_util.tree_map(lambda w: w[seed], tree)

    layout = gdln_layout(task.network(network), task.num_datapoints)
    return np.asarray(relu_hidden(one(relu_run.final), inputs)), np.asarray(
        gdln_hidden(one(reln_run.final), inputs, layout)
    )
