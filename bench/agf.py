"""Alternating Gradient Flows against trained ReLU networks: ``python -m bench.agf [--quick] [--markdown]``.

At each task and training setting (3 seeds, the spec's width and epochs), from the runs' initial
weights alone: the AGF model (:mod:`numeric.agf`) at two neglected fractions (the alignment
phase's 0.01 and the default 0.001), the frozen-gate theory (the GDLN of the alignment phase's
settled patterns, reduced flow at the training step: ``gdln verify``'s ``aligned`` candidate) and
the ReLU network itself coarse-grained to 256 directions at the end of the alignment phase
(``examples/gate_motion.py``). Each column is the max |curve - mean ReLU loss| / initial loss over
every epoch. Then, for the AGF model at the default fraction:

- drops: a drop of a loss curve is a peak of its rate of fall per epoch (the seeds' mean curve)
  with a prominence of at least a tenth of the curve's fastest fall (``DROP_PROMINENCE``; a
  definition of the measurement, not fitted to anything); the drops of the AGF curve and of the
  ReLU network's are paired in order and the largest gap in epochs is printed, with the counts;
- activations: the units that activate within each AGF drop's span (between the slowest falls
  around it; the spans tile the horizon), averaged over seeds, and those never activated;
- where the model is worst: the epoch of its largest deviation and the drop it falls in;
- cost: the AGF model's seconds per point (all seeds, at the default fraction) against one ReLU
  training run of the same seeds, compilation included for both, measured in this run.

Context tasks take about 4 minutes a setting on 2 busy cores; ``--quick`` runs XoR alone.

``--frozen-active`` prints instead, per setting, the AGF model with each active unit's gates
frozen at its activation (only dormant units' gates move; ``numeric.agf.agf_losses``'
``freeze_active``) against the same trained networks: how much of the moving gates that the
frozen-gate theory misses are the active units' own, and how much the dormant units' realigning
before they activate.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from gdln.derive.spec import load_spec
from gdln.numeric.agf import NEGLECTED_FRACTION
from gdln.numeric.alignment import OUTPUT_FRACTION
from gdln.numeric.precision import use_x64

ROOT = Path(__file__).resolve().parent.parent
#: (spec, init scale, learning rate, epochs or None for the spec's): XoR as shipped, the context
#: tasks across init at lr 0.01, and the authors' setup (lr 0.024, init 0.005 / 700, 19200 epochs)
SETTINGS = (
    ("xor.toml", 1e-4, 0.01, None),
    *(
        (spec, init, 0.01, None)
        for spec in ("section4_context.toml", "section5_k3.toml")
        for init in (1e-6, 1e-5, 1e-4, 1e-3)
    ),
    *((spec, 0.005 / 700, 0.024, 19200) for spec in ("section4_context.toml", "section5_k3.toml")),
)
#: the two neglected fractions measured: the alignment phase's, and the model's default (last)
FRACTIONS = (OUTPUT_FRACTION, NEGLECTED_FRACTION)
#: a drop is a peak of the rate of fall whose prominence is at least this share of the fastest fall
DROP_PROMINENCE = 0.1
#: directions the coarse-grained ReLU network keeps (examples/gate_motion.py)
DIRECTIONS = 256


def drops(curve: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The epochs of a loss curve's drops (peaks of its rate of fall, module docstring) and the
    epochs each drop spans: from the slowest fall between it and the drop before (epoch 0 for
    the first) to the slowest fall between it and the next (the horizon for the last), so the
    spans tile the horizon."""
    from scipy.signal import find_peaks

    fall = -np.diff(curve)
    peaks, _ = find_peaks(fall, prominence=DROP_PROMINENCE * np.max(fall))
    bounds = [0, *(a + int(np.argmin(fall[a:b])) for a, b in zip(peaks[:-1], peaks[1:], strict=True)), len(curve)]
    return peaks, list(zip(bounds[:-1], bounds[1:], strict=True))


def coarse_grained(task, models, alignment, values) -> np.ndarray:
    """The seeds' mean loss of the ReLU network coarse-grained to :data:`DIRECTIONS` directions at
    the end of its alignment phase (``examples/gate_motion.py``'s merge)."""
    import jax.numpy as jnp

    from examples.gate_motion import continuation, direction_clusters, merged
    from gdln.verify.entries import parameter_vector

    training = task.training
    inputs, targets = (jnp.asarray(a) for a in models.dataset(parameter_vector(task, values)))
    curves = []
    for seed, end in enumerate(alignment.epochs):
        w1, w2 = alignment.w1[seed], alignment.w2[seed]
        units = min(DIRECTIONS, w1.shape[0])
        w1, w2 = merged(w1, w2, direction_clusters(w1, w2, units, seed))
        rest, _ = continuation(
            inputs, targets, training.learning_rate, jnp.asarray(w1), jnp.asarray(w2), training.epochs + 1 - int(end), 1
        )
        curves.append(np.concatenate([alignment.losses[seed, : int(end)], rest])[: training.epochs + 1])
    return np.mean(curves, axis=0)


def measure(spec: str, init: float, rate: float, epochs: int | None) -> dict:
    import jax

    from gdln.derive.derivation import NetworkDerivation
    from gdln.numeric.agf import agf_losses
    from gdln.numeric.prediction import REDUCED_FLOW, Prediction, TaskPredictions
    from gdln.numeric.training import train_relu
    from gdln.verify.entries import parameter_vector
    from gdln.verify.following import aligned_candidate, relu_alignment, relu_initial_weights

    task = load_spec(ROOT / "examples" / spec)
    task = task.with_training(init_scale=init, learning_rate=rate, **({"epochs": epochs} if epochs else {}))
    training = task.training
    models = TaskPredictions(task)
    values = task.values(None)
    vector = parameter_vector(task, values)
    inputs, targets = models.dataset(vector)
    initial = relu_initial_weights(task, training)
    seeds = range(training.seeds)

    def relu_run():
        run = train_relu(inputs, targets, training.hidden_units, training.init_scale, rate, training.epochs, seeds)
        return jax.block_until_ready(run.losses)

    def agf_run(fraction):
        w1s, w2s = initial
        return agf_losses(w1s, w2s, inputs, targets, rate, training.epochs, fraction=fraction)

    # each timed once, compilation included for both (a second run of each would double the cost)
    started = time.perf_counter()
    relu = np.mean(np.asarray(relu_run()), axis=0)
    relu_seconds = time.perf_counter() - started
    agf, agf_seconds = {}, 0.0
    for fraction in FRACTIONS:
        started = time.perf_counter()
        agf[fraction] = agf_run(fraction)
        agf_seconds = time.perf_counter() - started  # the last, the default fraction's
    default = agf[NEGLECTED_FRACTION]
    alignment = relu_alignment(models, initial, values, training)
    ts = np.arange(training.epochs + 1, dtype=float)
    frozen = Prediction(NetworkDerivation(task, aligned_candidate(models, alignment)), kind=REDUCED_FLOW)
    frozen_curve = frozen.aligned_loss_curve(ts, alignment, rate, vector)
    coarse = coarse_grained(task, models, alignment, values)

    def deviation(curve):
        return float(np.max(np.abs(np.asarray(curve) - relu)) / relu[0])

    model = np.mean(default.losses, axis=0)
    gap = np.abs(model - relu) / relu[0]
    worst = int(np.argmax(gap))
    relu_drops, _ = drops(relu)
    model_drops, intervals = drops(model)
    paired = min(len(relu_drops), len(model_drops))
    activated = default.activated_at
    per_drop = [float(np.mean(np.sum((activated >= a) & (activated < b), axis=1))) for a, b in intervals]
    worst_drop = next((k for k, (a, b) in enumerate(intervals) if a <= worst < b), None)
    return {
        "spec": spec,
        "init_scale": init,
        "learning_rate": rate,
        "epochs": training.epochs,
        "agf": {str(f): deviation(np.mean(run.losses, axis=0)) for f, run in agf.items()},
        "frozen_gates": deviation(frozen_curve),
        "coarse_grained": deviation(coarse),
        "worst_epoch": worst,
        "worst_drop": worst_drop,
        "relu_drops": [int(t) for t in relu_drops],
        "agf_drops": [int(t) for t in model_drops],
        "largest_drop_gap": int(np.max(np.abs(relu_drops[:paired] - model_drops[:paired]))) if paired else None,
        "activations_per_drop": per_drop,
        "never_activated": float(np.mean(np.sum(activated < 0, axis=1))),
        "agf_seconds": agf_seconds,
        "relu_seconds": relu_seconds,
    }


def measure_frozen_active(spec: str, init: float, rate: float, epochs: int | None) -> dict:
    """At one setting: the AGF model with and without the active units' gates frozen, against
    the mean ReLU loss (max deviation of the initial loss, and the epoch of the largest)."""
    from gdln.numeric.agf import agf_losses
    from gdln.numeric.prediction import TaskPredictions
    from gdln.numeric.training import train_relu
    from gdln.verify.entries import parameter_vector
    from gdln.verify.following import relu_initial_weights

    task = load_spec(ROOT / "examples" / spec)
    task = task.with_training(init_scale=init, learning_rate=rate, **({"epochs": epochs} if epochs else {}))
    training = task.training
    inputs, targets = TaskPredictions(task).dataset(parameter_vector(task, task.values(None)))
    w1s, w2s = relu_initial_weights(task, training)
    relu = np.mean(
        np.asarray(
            train_relu(
                inputs, targets, training.hidden_units, init, rate, training.epochs, range(training.seeds)
            ).losses
        ),
        axis=0,
    )
    found = {"spec": spec, "init_scale": init, "learning_rate": rate}
    for name, freeze in (("moving", False), ("frozen_active", True)):
        run = agf_losses(w1s, w2s, inputs, targets, rate, training.epochs, freeze_active=freeze)
        gap = np.abs(np.mean(run.losses, axis=0) - relu) / relu[0]
        found[name] = {"max_deviation": float(np.max(gap)), "epoch": int(np.argmax(gap))}
    return found


def markdown(rows: list[dict]) -> str:
    lines = [
        f"| task | init | lr | AGF, f = {OUTPUT_FRACTION:g} | AGF, f = {NEGLECTED_FRACTION:g} | frozen gates | 256 directions | worst (epoch, drop) "
        "| drops ReLU / AGF (largest gap, epochs) | units activated per drop (never) | AGF / training time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        drop = "none" if r["worst_drop"] is None else str(r["worst_drop"] + 1)
        lines.append(
            f"| {r['spec'].removesuffix('.toml')} | {r['init_scale']:.3g} | {r['learning_rate']:g} | "
            f"{r['agf'][str(OUTPUT_FRACTION)]:.4f} | {r['agf'][str(NEGLECTED_FRACTION)]:.4f} | {r['frozen_gates']:.4f} | {r['coarse_grained']:.4f} | "
            f"{r['worst_epoch']}, {drop} | {len(r['relu_drops'])} / {len(r['agf_drops'])} ({r['largest_drop_gap']}) | "
            f"{' / '.join(f'{n:.0f}' for n in r['activations_per_drop'])} ({r['never_activated']:.0f}) | {r['agf_seconds'] / r['relu_seconds']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="XoR only")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--frozen-active", action="store_true", help="the AGF model with the active units' gates frozen instead"
    )
    args = parser.parse_args()
    use_x64()
    rows = []
    for spec, init, rate, epochs in SETTINGS:
        if args.quick and spec != "xor.toml":
            continue
        rows.append((measure_frozen_active if args.frozen_active else measure)(spec, init, rate, epochs))
        print(json.dumps(rows[-1]), file=sys.stderr if args.markdown else sys.stdout, flush=True)
    if args.markdown and args.frozen_active:
        print("| task | init | lr | AGF (epoch of the largest) | AGF, active units' gates frozen (epoch) |")
        print("| --- | --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| {r['spec'].removesuffix('.toml')} | {r['init_scale']:.3g} | {r['learning_rate']:g} | "
                f"{r['moving']['max_deviation']:.4f} ({r['moving']['epoch']}) | "
                f"{r['frozen_active']['max_deviation']:.4f} ({r['frozen_active']['epoch']}) |"
            )
    elif args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()
