"""A reference with no moving gates to explain: data symmetric under x -> -x with odd targets.

Zhang, Saxe & Latham (TMLR 2025) report that a bias-free ReLU network on such data learns as a
linear network does, up to a time rescaling. Each unit is on at exactly one point of every pair
``(x, -x)``, so while the residual is odd its gradient is exactly half a linear unit's
(``tests/test_agf.py`` checks that on generated datasets); what breaks the identity is the even
part of the network's output, ``W2 |W1 x| / 2``, which starts at the initial weights' size.

For generated datasets (``PAIRS`` pairs of normal inputs in 3 dimensions, normal odd targets in 2,
a seed each; 128 units, init 1e-4, lr 0.01, 8000 epochs, 3 seeds), this prints the largest
|loss - mean ReLU loss| / initial loss of:

- ``linear, half speed``: the linear network ``W2 W1 x / 2`` from the same initial weights over
  sqrt 2, by gradient descent at half the step (the identity above, per seed, then averaged);
- ``frozen gates``: gdln's aligned GDLN (``gdln verify``'s ``aligned``);
- ``AGF``: the Alternating Gradient Flows model (``gdln verify --agf``).

Nothing is fitted. Run: ``python examples/symmetric_data.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import jax
import numpy as np

from gdln.derive.spec import task_from_dict
from gdln.numeric.precision import use_x64
from gdln.numeric.training import descend, initial_relu_weights, mean_squared_loss, train_relu
from gdln.verify.following import verify_report

DATASETS = (100, 101, 102, 103)
PAIRS = 4
LEARNING_RATE = 0.01
INIT_SCALE = 1e-4
EPOCHS = 8000
UNITS = 128
SEEDS = 3
TRAINING = {
    "learning_rate": LEARNING_RATE,
    "init_scale": INIT_SCALE,
    "epochs": EPOCHS,
    "hidden_units": UNITS,
    "seeds": SEEDS,
}


def symmetric_dataset(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs, targets = rng.normal(size=(PAIRS, 3)), rng.normal(size=(PAIRS, 2))
    return np.concatenate([inputs, -inputs]), np.concatenate([targets, -targets])


def linear_at_half_speed(inputs, targets) -> np.ndarray:
    """Per seed, the loss of ``W2 W1 x`` from the ReLU runs' initial weights over sqrt 2, at half the step."""
    w1s, w2s = initial_relu_weights(UNITS, inputs.shape[1], targets.shape[1], INIT_SCALE, range(SEEDS))

    def one(w1, w2):
        loss = lambda p: mean_squared_loss(inputs @ p[0].T @ p[1].T, targets)  # noqa: E731
        return descend(loss, (w1 / np.sqrt(2), w2 / np.sqrt(2)), LEARNING_RATE / 2, EPOCHS)[1]

    return np.asarray(jax.vmap(one)(w1s, w2s))


def main() -> None:
    use_x64()
    for seed in DATASETS:
        inputs, targets = symmetric_dataset(seed)
        relu = np.asarray(
            train_relu(inputs, targets, UNITS, INIT_SCALE, LEARNING_RATE, EPOCHS, range(SEEDS)).losses
        ).mean(axis=0)
        linear = linear_at_half_speed(inputs, targets).mean(axis=0)
        task = task_from_dict(
            {
                "data": {"inputs": inputs.tolist(), "targets": targets.tolist()},
                "training": TRAINING,
                "network": [{"name": "linear", "pathway": [{"name": "all"}]}],
            }
        )
        report = verify_report(task, representations=False, agf=True)
        aligned = next(n for n in report.networks if n["from_alignment"])
        assert report.agf is not None
        print(
            f"dataset {seed}: linear, half speed {np.max(np.abs(linear - relu)) / relu[0]:.4f}; "
            f"frozen gates {aligned['max_deviation']:.4f}; AGF {report.agf['max_deviation']:.4f}; "
            f"final loss {relu[-1] / relu[0]:.3f} of the initial"
        )


if __name__ == "__main__":
    main()
