"""Every benchmark in one process: ``python -m bench [--quick] [--json | --markdown]``.

Each figure is a ratio of two times measured in this same run, so a busy machine still
compares like with like:

- simulation: the Section 4 ReLU network (11-700-60, 24 datapoints), full-batch gradient
  descent in float64 with 1, 8 and 32 seeds vmapped; achieved GFLOP/s counted from its matrix
  products, against this machine's float64 matrix-multiply rate measured here, and the
  speed-up over a reference loop (one jit-compiled step called from Python per seed and epoch);
- theory against training: ``gdln race`` on Section 4 in a fresh process (cold), and the
  evaluation of every candidate's loss curve once compiled, against one ReLU training run of
  12000 epochs;
- derivation scaling: ``derive`` of the context task for several K and P, with the fitted
  growth exponent;
- the derivation cache: ``gdln derive`` on Section 4's ``common+2`` in a fresh process, cold
  (empty cache) and warm (target: under 5 s warm);
- phase diagrams: ``gdln sweep``'s theory over a grid against training
  (:mod:`bench.bench_sweep`);
- checked training on Section 4 in one process and shared over two (``gdln sweep --processes``,
  :mod:`bench.bench_distributed`);
- parametric specs: the three-context spec with ``g`` symbolic, derived cold and swept over
  ``g`` against one training run, and Section 5 with ``g`` scaling its context blocks
  (:mod:`bench.bench_parametric`);
- figures: ``gdln figures --quick`` end to end.

Speed targets live here, not in the tests.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bench.bench_distributed import POINTS, distributed_benchmarks
from bench.bench_parametric import parametric_benchmarks
from bench.bench_race import matmul_peak, step_flops, timed, training_seconds  # best of a few runs, blocked until ready
from bench.bench_sweep import sweep_benchmarks
from bench.processes import gdln_process
from bench.tables import add_output_options, print_report, report_tables
from gdln.numeric.precision import use_x64

ROOT = Path(__file__).resolve().parent.parent
SECTION4 = ROOT / "examples" / "section4_context.toml"


def simulation(epochs: int, seed_counts: tuple[int, ...]) -> dict:
    from gdln.derive.spec import load_spec
    from gdln.numeric.data import NumericDataset
    from gdln.numeric.training import RELU_LAYOUTS, TRAINING_DTYPES, init_relu, relu_forward, train_relu

    task = load_spec(SECTION4)
    inputs, targets = NumericDataset(task)([])
    hidden = task.training.hidden_units
    flops = step_flops(task.num_datapoints, task.num_inputs, hidden, task.num_outputs)

    def loss(params):
        kind = params[0].dtype
        residual = targets.astype(kind) - relu_forward(params, inputs.astype(kind))
        return 0.5 * jnp.mean(jnp.sum(residual**2, axis=1))

    @jax.jit
    def step(params):
        grads = jax.grad(loss)(params)
        return jax.tree_util.tree_map(lambda w, g: w - jnp.asarray(0.01, w.dtype) * g, params, grads)

    initial = init_relu(jax.random.PRNGKey(0), hidden, task.num_inputs, task.num_outputs, 1e-4)
    loop_epochs = min(epochs, 500)
    per_seed_epoch = {}
    for name, kind in TRAINING_DTYPES.items():  # the reference: one seed at a time, in the same dtype
        params = tuple(w.astype(kind) for w in initial)
        step(params)

        def loop(params=params):
            p = params
            for _ in range(loop_epochs):
                p = step(p)
            return p[0]

        per_seed_epoch[name] = timed(loop, repeat=2) / loop_epochs
    peaks = {name: matmul_peak(kind) for name, kind in TRAINING_DTYPES.items()}
    rows = []
    for dtype in TRAINING_DTYPES:
        for layout in RELU_LAYOUTS:
            for seeds in seed_counts:

                def run(seeds=seeds, dtype=dtype, layout=layout):
                    return train_relu(
                        inputs, targets, hidden, 1e-4, 0.01, epochs, range(seeds), dtype=dtype, layout=layout
                    ).losses

                run()
                elapsed = timed(run, repeat=2)
                achieved = flops * epochs * seeds / elapsed / 1e9
                rows.append(
                    {
                        "dtype": dtype,
                        "layout": layout,
                        "seeds": seeds,
                        "seconds": elapsed,
                        "gflops": achieved,
                        "fraction_of_peak": achieved / peaks[dtype],
                        "speedup_over_loop": per_seed_epoch[dtype] * epochs * seeds / elapsed,
                    }
                )
    return {
        "network": f"{task.num_inputs}-{hidden}-{task.num_outputs}, {task.num_datapoints} datapoints",
        "epochs": epochs,
        "step_mflop": flops / 1e6,
        "peak_gflops": peaks,
        "loop_seconds_per_seed_epoch": per_seed_epoch,
        "runs": rows,
    }


def _race_process(cache_folder: str) -> float:
    """Seconds of ``gdln race`` on Section 4 in a fresh process, caches in ``cache_folder``."""
    return gdln_process(["race", str(SECTION4), "--json"], cache_folder).wall_s


def theory_against_training() -> dict:
    from gdln.derive.spec import load_spec
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.entries import epoch_grid, theory_stride
    from gdln.verify.race import race_report
    from gdln.verify.simulation import train_network

    with tempfile.TemporaryDirectory() as folder:
        cold = _race_process(folder)  # empty caches: derivation, evaluation and compilation
        warm = _race_process(folder)  # derivations, their numbers and compiled programs on disk
    task = load_spec(SECTION4)
    models = TaskPredictions(task)
    race_report(task, models=models)
    in_process = timed(lambda: race_report(task, models=models), repeat=1)  # nothing left to derive or compile
    training = task.training
    ts = epoch_grid(training.epochs, theory_stride(training.epochs))
    predictions = [models.prediction(n.name) for n in task.networks]

    def curves():
        return [p.loss_curve(ts, training.init_scale, training.tau, []) for p in predictions]

    curves()
    evaluation = timed(curves, repeat=2)
    runs = {}
    for dtype in ("float64", "float32"):
        run = lambda dtype=dtype: train_network(task, "relu", seeds=1, models=models, dtype=dtype)[0].losses  # noqa: E731
        runs[dtype] = training_seconds(run)
    training_run = runs["float64"]
    return {
        "race_cold_process_seconds": cold,
        "race_warm_process_seconds": warm,
        "race_in_process_seconds": in_process,
        "curves_compiled_seconds": evaluation,
        "relu_training_seconds": training_run,
        "relu_training_float32_seconds": runs["float32"],
        "race_cold_over_training": cold / training_run,
        "race_warm_over_training": warm / training_run,
        "race_in_process_over_training": in_process / training_run,
        "training_over_compiled_curves": training_run / evaluation,
    }


def derivation_scaling(quick: bool) -> dict:
    from bench.bench_derive import derive_times

    def derive_time(items: int, contexts: int) -> float:
        """Derive ``common+(K-1)`` of the context task, every step (as ``bench/bench_derive.py``)."""
        return float(derive_times(items, contexts)["total_s"])

    contexts = (3, 4, 6) if quick else (3, 4, 6, 8, 10)
    items = (8, 16) if quick else (8, 16, 32)
    by_k = [(k, derive_time(8, k)) for k in contexts]
    by_p = [(p, derive_time(p, 3)) for p in items]

    def exponent(points):
        xs, ys = np.log([p[0] for p in points]), np.log([p[1] for p in points])
        return float(np.polyfit(xs, ys, 1)[0])

    return {
        "by_contexts_P8": [{"K": k, "seconds": t} for k, t in by_k],
        "exponent_in_K": exponent(by_k),
        "by_items_K3": [{"P": p, "seconds": t} for p, t in by_p],
        "exponent_in_P": exponent(by_p),
    }


def figures() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        return {"figures_quick_seconds": gdln_process(["figures", "--quick", "--out", folder]).wall_s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs and smaller derivations; no figures")
    add_output_options(parser)
    args = parser.parse_args(argv)
    use_x64()
    from bench.bench_derive import derive_process_times

    report = {
        "simulation": simulation(500 if args.quick else 2000, (1, 8, 32)),
        "theory_against_training": theory_against_training(),
        "derivation_scaling": derivation_scaling(args.quick),
        "derive_cache": derive_process_times(),
        "sweep": sweep_benchmarks(args.quick),
        "processes": distributed_benchmarks(2 if args.quick else POINTS),
        "parametric": parametric_benchmarks(args.quick),
    }
    if not args.quick:
        report["figures"] = figures()
    print_report(report, report_tables, as_json=args.json, markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
