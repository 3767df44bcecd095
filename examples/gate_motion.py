"""How much of the ReLU network's departure from the theory is its gates moving (README, Accuracy
measured): the same alignment phase the predictions start from, then these continuations.

- ``moving gates``: the ReLU network itself, trained on from the phase's end state;
- ``frozen gates``: every unit keeps its settled gate pattern (a GDLN with one width-1 chain per
  unit, no balancing). It also prints when its units' own pre-activations start to disagree with
  the frozen gates (strength-weighted share of unit-datapoint pairs), which the model alone
  tells, next to when its deviation from the ReLU runs grows;
- ``re-gated every K``: gates read again from the weights every K epochs, frozen in between;
- ``one unit per pattern``: the ReLU network itself, each settled pattern's units merged into one
  (the merge below);
- ``coarse-grained to K units``: the ReLU network itself, with its units merged into K clusters
  of direction (k-means on each unit's unit-norm input and output weights, weighted by its
  strength ``|w| |a|``); a cluster becomes one unit, the top singular pair of its summed map
  ``sum a_j w_j^T``. Units that point the same way and are balanced move as one unit of their
  summed strength, so this is how many directions the moving gates need;
- ``all units, K directions``: every unit kept, projected on its cluster's direction: what the
  merge drops, without merging;
- ``all units, K cluster gates``: every unit kept whole, but gated as its cluster's summed input
  weights are: K pathways whose gates move with their own direction.

Each prints the max |curve - mean ReLU loss| / initial loss over the spec's epochs and seeds.
Run: ``python examples/gate_motion.py examples/section4_context.toml`` (about 4 minutes on 2 cores).
"""

from __future__ import annotations

import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.cluster import KMeans

from gdln.derive.spec import load_spec
from gdln.numeric.prediction import TaskPredictions
from gdln.verify.following import relu_alignment, relu_initial_weights
from gdln.verify.simulation import train_network

REGATING_INTERVALS = (250, 500, 1000, 2000)
COARSE_GRAINED_UNITS = (16, 32, 64, 128, 256)
SNAPPED_DIRECTIONS = (16, 64, 256)
CLUSTER_GATES = (16, 64, 256)
#: shares of (strength-weighted) unit-datapoint pairs at which the frozen gates are reported to
#: disagree with the units' own pre-activations, and deviations at which the frozen model is timed
DISAGREEMENT_LEVELS = (0.01, 0.05, 0.1)
DEVIATION_LEVELS = (0.005, 0.01, 0.02)


@partial(jax.jit, static_argnames=("live", "led"))
def _steps(w1, w2, frozen, length_mask, inputs, targets, learning_rate, live, led, members):
    """Steps of gradient descent while ``length_mask`` is on; the gates are ``frozen``, or, with
    ``live``, read from the weights at every step (the ReLU network itself), or, with ``led``,
    every unit gated as its cluster's summed input weights are (``members``: ``(units, K)``,
    one-hot). Per step: the loss, and the share of unit-datapoint pairs, weighted by the unit's
    strength ``|w| |a|``, whose pre-activation's sign disagrees with the frozen gates (0 with
    ``live`` or ``led``)."""
    count = inputs.shape[0]

    def step(state, keep):
        w1, w2 = state
        pre = inputs @ w1.T
        own = (pre > 0).astype(inputs.dtype)
        if led:
            gates = ((inputs @ (members.T @ w1).T) > 0).astype(inputs.dtype) @ members.T
        else:
            gates = own if live else frozen
        hidden = pre * gates
        if live or led:  # reported for frozen gates only
            disagreeing = jnp.zeros(())
        else:
            strength = jnp.linalg.norm(w1, axis=1) * jnp.linalg.norm(w2, axis=0)
            disagreeing = jnp.sum(jnp.mean(jnp.abs(own - gates), axis=0) * strength) / jnp.sum(strength)
        residual = targets - hidden @ w2.T
        loss = 0.5 * jnp.mean(jnp.sum(residual**2, axis=1))
        new_w1 = w1 + learning_rate * (((residual @ w2) * gates).T @ inputs) / count
        new_w2 = w2 + learning_rate * residual.T @ hidden / count
        return (jnp.where(keep, new_w1, w1), jnp.where(keep, new_w2, w2)), (loss, disagreeing)

    return jax.lax.scan(step, (w1, w2), length_mask)


def continuation(inputs, targets, learning_rate: float, w1, w2, epochs: int, interval: int | None, members=None):
    """The loss at each of ``epochs`` steps of gradient descent from ``(w1, w2)``, with gates read
    from the weights every ``interval`` epochs (every epoch: ``1``; never again: ``None``), or with
    ``members`` every epoch from the clusters' summed weights, and the weighted share of
    pre-activations that disagree with those gates (see ``_steps``)."""
    led = members is not None
    members = jnp.zeros((1, 1)) if members is None else jnp.asarray(members, jnp.float64)
    block = epochs if interval in (None, 1) else interval
    losses, shares = [], []
    done = 0
    while done < epochs:
        length = min(block, epochs - done)
        gates = (inputs @ w1.T > 0).astype(inputs.dtype)
        mask = jnp.arange(block) < length  # one compiled length for every block
        (w1, w2), (block_losses, block_shares) = _steps(
            w1, w2, gates, mask, inputs, targets, learning_rate, interval == 1, led, members
        )
        losses.append(np.asarray(block_losses)[:length])
        shares.append(np.asarray(block_shares)[:length])
        done += length
    return np.concatenate(losses), np.concatenate(shares)


def direction_clusters(w1: np.ndarray, w2: np.ndarray, units: int, seed: int) -> np.ndarray:
    """Each unit's cluster: k-means on its unit-norm input and output weights, weighted by its
    strength ``|w| |a|``."""
    strength = np.linalg.norm(w1, axis=1) * np.linalg.norm(w2, axis=0)
    directions = np.concatenate(
        [w1 / np.linalg.norm(w1, axis=1, keepdims=True), (w2 / np.linalg.norm(w2, axis=0)).T], 1
    )
    return KMeans(units, n_init=4, random_state=seed).fit(directions, sample_weight=strength).labels_


def pattern_clusters(gates: np.ndarray) -> np.ndarray:
    """Each unit's cluster: its settled gate pattern (``gates`` is ``(N, units)``)."""
    found: dict[bytes, int] = {}
    return np.array([found.setdefault(column.tobytes(), len(found)) for column in gates.T])


def merged(w1: np.ndarray, w2: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One unit per cluster: the top singular pair of the cluster's summed map ``sum a_j w_j^T``,
    on the side of the units' own gates."""
    merged_in, merged_out = [], []
    for cluster in np.unique(labels):
        members = labels == cluster
        left, values, right = np.linalg.svd(w2[:, members] @ w1[members])
        sign = 1.0 if right[0] @ w1[members].sum(axis=0) >= 0 else -1.0
        merged_in.append(sign * np.sqrt(values[0]) * right[0])
        merged_out.append(sign * np.sqrt(values[0]) * left[:, 0])
    return np.array(merged_in), np.array(merged_out).T


def snapped(w1: np.ndarray, w2: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every unit kept, with its weights projected on its cluster's top singular pair: what
    :func:`merged` drops (the units' components off that pair) without merging any unit."""
    w1, w2 = w1.copy(), w2.copy()
    for cluster in np.unique(labels):
        members = labels == cluster
        left, _, right = np.linalg.svd(w2[:, members] @ w1[members])
        w1[members] = np.outer(w1[members] @ right[0], right[0])
        w2[:, members] = np.outer(left[:, 0], left[:, 0] @ w2[:, members])
    return w1, w2


def main(path: str) -> None:
    jax.config.update("jax_enable_x64", True)
    task = load_spec(path)
    models = TaskPredictions(task)
    values = task.values(None)
    training = task.training
    initial = relu_initial_weights(task, training)
    alignment = relu_alignment(models, initial, values, training)
    inputs, targets = (jnp.asarray(a) for a in models.dataset([float(values[s]) for s in task.parameters]))
    run, _, _ = train_network(task, "relu", None, None, None, models)
    relu = np.mean(np.asarray(run.losses), axis=0)[: training.epochs + 1]
    # name: (re-gating interval, what is done to the units, number of direction clusters)
    models_to_run: dict[str, tuple[int | None, str, int]] = {
        "moving gates": (1, "every unit", 0),
        "frozen gates": (None, "every unit", 0),
        **{f"re-gated every {k}": (k, "every unit", 0) for k in REGATING_INTERVALS},
        "one unit per pattern": (1, "merged by pattern", 0),
        **{f"coarse-grained to {k} units": (1, "merged", k) for k in COARSE_GRAINED_UNITS},
        **{f"all units, {k} directions": (1, "snapped", k) for k in SNAPPED_DIRECTIONS},
        **{f"all units, {k} cluster gates": (1, "cluster gates", k) for k in CLUSTER_GATES},
    }
    clustered: dict[tuple[int, int], np.ndarray] = {}  # (seed, K): the same k-means for every model
    for name, (interval, reduction, clusters) in models_to_run.items():
        curves, disagreement = [], []
        for seed, end in enumerate(alignment.epochs):
            phase = alignment.losses[seed, : int(end)]
            w1, w2 = alignment.w1[seed], alignment.w2[seed]
            labels = None
            if clusters:
                if (seed, clusters) not in clustered:
                    clustered[seed, clusters] = direction_clusters(w1, w2, clusters, seed)
                labels = clustered[seed, clusters]
            members = None
            if reduction == "merged by pattern":
                w1, w2 = merged(w1, w2, pattern_clusters(alignment.gates[seed]))
            elif reduction == "merged":
                assert labels is not None  # the merged and snapped models are clustered
                w1, w2 = merged(w1, w2, labels)
            elif reduction == "snapped":
                assert labels is not None
                w1, w2 = snapped(w1, w2, labels)
            elif reduction == "cluster gates":
                members = np.eye(clusters)[labels]
            rest, shares = continuation(
                inputs,
                targets,
                training.learning_rate,
                jnp.asarray(w1),
                jnp.asarray(w2),
                training.epochs + 1 - int(end),
                interval,
                members,
            )
            curves.append(np.concatenate([phase, rest])[: training.epochs + 1])
            disagreement.append(np.concatenate([np.zeros(int(end)), shares])[: training.epochs + 1])
        deviation = (np.mean(curves, axis=0) - relu) / relu[0]
        worst = int(np.argmax(np.abs(deviation)))
        print(f"{name:<30} max deviation {abs(deviation[worst]):.4f} at epoch {worst}")
        if interval is None:  # where the frozen gates stop being the units' own, with no ReLU run needed
            share = np.mean(disagreement, axis=0)
            print(
                f"{'':<30} its own gates disagree on {', '.join(_first_epochs(share, DISAGREEMENT_LEVELS))}"
                f"; the deviation passes {', '.join(_first_epochs(np.abs(deviation), DEVIATION_LEVELS))}"
            )


def _first_epochs(curve: np.ndarray, levels: tuple[float, ...]) -> list[str]:
    """``"level from epoch E"`` for the first epoch at which ``curve`` reaches each level."""
    found = []
    for level in levels:
        above = np.flatnonzero(curve >= level)
        found.append(f"{level:g} from epoch {int(above[0])}" if len(above) else f"{level:g} never")
    return found


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "examples/section4_context.toml")
