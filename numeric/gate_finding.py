"""Gate patterns from trained ReLU networks: paper Appendix B, Algorithm 1.

Each hidden unit's binary activity over the datapoints, ``w_i . x_n > 0``, is sampled at
evenly spaced epochs of several trainings; every sample is one row (a "unit" gating the data);
rows off at every datapoint are left out (they are no pathway).
k-means (scikit-learn, fixed ``random_state`` and ``n_init``) clusters the rows, and each
centroid, rounded at 1/2, is the gate pattern of one GDLN pathway.

Identical rows are clustered once with their count as the sample weight: Lloyd's iterations,
and so the clusters, are those of the rows repeated (k-means++ seeding draws from the same
weighted distribution), and binary rows over a few dozen datapoints repeat a great deal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .training import gradient_steps, mean_squared_loss, relu_forward
from .types import ArrayLike, Float

#: k-means restarts and seed: the clustering is reproducible run to run
KMEANS_RESTARTS = 10
KMEANS_SEED = 0
#: a centroid entry at or above this is an active datapoint of the rounded gate
ROUNDING = 0.5


@dataclass(frozen=True)
class GateSnapshots:
    """Hidden activity sampled through training.

    Attributes:
        epochs: ``(T,)`` the epochs sampled (before that epoch's update).
        gates: ``(seeds, T, units, N)`` whether unit ``i`` is on at datapoint ``n``.
        losses: ``(seeds, epochs + 1)`` the ReLU network's loss, as :func:`numeric.training.train_relu`.
    """

    epochs: np.ndarray
    gates: np.ndarray
    losses: np.ndarray

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct binary rows over datapoints that are on somewhere, and how often each
        was sampled. A unit off at every datapoint gates nothing and carries nothing: it is no
        pathway, and left in it would take a cluster of its own (on Section 4 a tenth of the
        units are such rows at every snapshot)."""
        distinct, counts = np.unique(self.gates.reshape(-1, self.gates.shape[-1]), axis=0, return_counts=True)
        on = distinct.any(axis=1)
        return distinct[on], counts[on]

    @property
    def silent_rows(self) -> int:
        """Sampled rows off at every datapoint (left out of the clustering)."""
        return int(np.sum(~self.gates.any(axis=-1)))


@partial(jax.jit, static_argnames=("every", "count"))
def _snapshots(w1s, w2s, inputs, targets, learning_rate, every, count):
    def one(w1, w2):
        loss_fn = lambda p: mean_squared_loss(relu_forward(p, inputs), targets)  # noqa: E731

        def chunk(p, _):
            gates = inputs @ p[0].T > 0  # (N, units) at the start of the chunk
            p, losses = gradient_steps(loss_fn, p, learning_rate, every)
            return p, (gates.T, losses)

        final, (gates, losses) = jax.lax.scan(chunk, (w1, w2), None, length=count)
        return gates, jnp.concatenate([losses.reshape(-1), loss_fn(final)[None]])

    return jax.vmap(one)(w1s, w2s)


def relu_gate_snapshots(
    inputs: Float[ArrayLike, "N inp"],
    targets: Float[ArrayLike, "N out"],
    initial_weights: tuple[Float[ArrayLike, "seeds units inp"], Float[ArrayLike, "seeds out units"]],
    learning_rate: float,
    epochs: int,
    snapshots: int,
) -> GateSnapshots:
    """Train the ReLU network once per seed from ``initial_weights = (W1s, W2s)`` (as
    :func:`numeric.training.initial_relu_weights` draws them, so the runs are
    :func:`numeric.training.train_relu`'s with the same seeds), sampling its gates at
    ``snapshots`` evenly spaced epochs ``0, e, 2e, ...`` with ``e = epochs // snapshots``; the
    run lasts ``snapshots * e`` epochs."""
    every = max(epochs // snapshots, 1)
    inputs = jnp.asarray(inputs, jnp.float64)
    targets = jnp.asarray(targets, jnp.float64)
    w1s, w2s = (jnp.asarray(w, jnp.float64) for w in initial_weights)
    gates, losses = _snapshots(w1s, w2s, inputs, targets, float(learning_rate), every, snapshots)
    return GateSnapshots(np.arange(snapshots) * every, np.asarray(gates), np.asarray(losses))


@dataclass(frozen=True)
class Clustering:
    """k-means of the sampled rows into ``k`` clusters.

    Attributes:
        centroids: ``(k, N)`` the mean activity of each cluster's rows, in [0, 1].
        gates: ``(k, N)`` the centroids rounded at :data:`ROUNDING`.
        share: ``(k,)`` the fraction of sampled rows in each cluster.
        inertia: k-means' sum of squared distances to the centroids, over all rows.
    """

    centroids: np.ndarray
    gates: np.ndarray
    share: np.ndarray
    inertia: float


def cluster_rows(rows: np.ndarray, counts: np.ndarray, k: int) -> Clustering:
    """k-means of ``rows`` (each repeated ``counts`` times) into ``k`` clusters, ordered by
    their share of the rows, largest first."""
    from sklearn.cluster import KMeans

    k = min(k, len(rows))
    model = KMeans(n_clusters=k, n_init=KMEANS_RESTARTS, random_state=KMEANS_SEED)
    labels = model.fit_predict(rows.astype(np.float64), sample_weight=counts.astype(np.float64))
    share = np.bincount(labels, weights=counts, minlength=k) / counts.sum()
    order = np.argsort(-share, kind="stable")
    centroids = np.clip(model.cluster_centers_[order], 0.0, 1.0)
    return Clustering(centroids, centroids >= ROUNDING, share[order], float(model.inertia_))
