"""Phase diagrams against training: ``python -m bench.bench_sweep [--quick]`` (also part of ``python -m bench``).

Every figure is a ratio of two times from this run:

- XoR, a Delta x init_scale grid (64 x 64, every candidate): the width-seeded race over the
  whole grid once compiled, per point, against one compiled 12000-epoch ReLU run of 128 units
  and one seed; and the alignment-seeded race per point against the same run;
- a warm ``gdln sweep`` process (the 64 x 64 grid, no training) against a warm
  ``gdln simulate --model relu --seeds 1`` process;
- Section 4, 32 values of init_scale: the race per point (every candidate's reduced flow, all
  points in batched solves, once compiled) against one Section 4 training run; and the
  alignment-seeded race per point (the phase of the seeds, then every candidate's weight
  chains by gradient descent to half the loss) against the same run;
- Section 4's race flow of ``common+1`` (1153 variables in its output span): one evaluation of
  its right-hand side, alone and per point of a vmapped batch, against the cost of one solver step of the batched race
  per point (identical points, so that none waits for another);
- training at checked points: XoR runs (points x seeds) per second, batched in one program,
  its GFLOP/s and their share of the float64 matrix-multiply peak measured in the same run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.processes import gdln_process

ROOT = Path(__file__).resolve().parent.parent
XOR = ROOT / "examples" / "xor.toml"
SECTION4 = ROOT / "examples" / "section4_context.toml"


def sweep_benchmarks(quick: bool = False) -> dict:
    import jax.numpy as jnp
    import numpy as np

    from bench.bench_race import matmul_peak, step_flops, timed, training_seconds
    from gdln.derive.spec import load_spec
    from gdln.numeric.prediction import TaskPredictions
    from gdln.numeric.training import initial_relu_weights, train_relu_points
    from gdln.verify.simulation import train_network
    from gdln.verify.sweep import aligned_race, finite_points, parse_axis, sweep_grid, width_race

    side = 16 if quick else 64
    xor = load_spec(XOR)
    models = TaskPredictions(xor)
    axes = [parse_axis(f"Delta=0.25:4:{side}", xor), parse_axis(f"init_scale=1e-6:1e-1:{side}:log", xor)]
    grid = sweep_grid(xor, axes, {})
    ok, inputs, targets = finite_points(models, grid)
    rows = np.flatnonzero(ok)
    width_race(models, grid, rows)  # compile
    theory = timed(lambda: width_race(models, grid, rows), repeat=3)
    aligned_race(models, grid, rows, (inputs, targets))  # compile
    aligned = timed(lambda: aligned_race(models, grid, rows, (inputs, targets)), repeat=1)
    run = lambda: train_network(xor, "relu", seeds=1, models=models)[0].losses  # noqa: E731
    training_run = training_seconds(run)

    # training at checked points: 24 points x the spec's seeds in one program
    chosen = rows[np.linspace(0, len(rows) - 1, 24).round().astype(int)]
    seeds = xor.training.seeds
    w1, w2 = (np.asarray(w) for w in initial_relu_weights(xor.training.hidden_units, 3, 1, 1.0, range(seeds)))
    scale = grid.init_scale[chosen][:, None, None, None]
    batch = (
        np.repeat(inputs[chosen], seeds, axis=0),
        np.repeat(targets[chosen], seeds, axis=0),
        (scale * w1[None]).reshape(-1, *w1.shape[1:]),
        (scale * w2[None]).reshape(-1, *w2.shape[1:]),
        np.repeat(grid.learning_rate[chosen], seeds),
    )
    train_relu_points(*batch, xor.training.epochs)
    checked = timed(lambda: train_relu_points(*batch, xor.training.epochs), repeat=1)
    flops = step_flops(xor.num_datapoints, xor.num_inputs, xor.training.hidden_units, xor.num_outputs)
    runs = len(chosen) * seeds
    checked_gflops = runs * xor.training.epochs * flops / checked / 1e9

    with tempfile.TemporaryDirectory() as folder:
        grid_flags = ["--grid", f"Delta=0.25:4:{side}", "--grid", f"init_scale=1e-6:1e-1:{side}:log"]
        sweep = ["sweep", str(XOR), *grid_flags, "--json"]
        simulate = ["simulate", str(XOR), "--model", "relu", "--seeds", "1", "--json"]
        gdln_process(sweep, folder)  # fills the caches: the second run is the warm one
        sweep_warm = gdln_process(sweep, folder).wall_s
        gdln_process(simulate, folder)
        simulate_warm = gdln_process(simulate, folder).wall_s

    section4 = load_spec(SECTION4)
    models4 = TaskPredictions(section4)
    values = 4 if quick else 32
    axes4 = [parse_axis(f"init_scale=1e-6:1e-2:{values}:log", section4)]
    grid4 = sweep_grid(section4, axes4, {})
    rows4 = np.arange(grid4.size)
    width_race(models4, grid4, rows4)  # compile
    section4_theory = timed(lambda: width_race(models4, grid4, rows4), repeat=1)
    # the alignment-seeded race: the phase of the 700-unit network, then each candidate's chains
    _, inputs4, targets4 = finite_points(models4, grid4)
    aligned_race(models4, grid4, rows4, (inputs4, targets4))  # compile
    section4_aligned = timed(lambda: aligned_race(models4, grid4, rows4, (inputs4, targets4)), repeat=1)
    costs = flow_step_costs(models4.prediction("common+1"), section4)
    run4 = lambda: train_network(section4, "relu", seeds=1, models=models4)[0].losses  # noqa: E731
    section4_run = training_seconds(run4)
    points = len(rows)
    return {
        "xor_points": points,
        "xor_theory_seconds": theory,
        "xor_training_run_seconds": training_run,
        "xor_theory_over_one_run": theory / training_run,
        "xor_cheaper_per_point": training_run / (theory / points),
        "xor_aligned_seconds": aligned,
        "xor_aligned_cheaper_per_point": training_run / (aligned / points),
        "sweep_warm_process_seconds": sweep_warm,
        "simulate_warm_process_seconds": simulate_warm,
        "checked_runs": runs,
        "checked_seconds": checked,
        "checked_runs_per_second": runs / checked,
        "checked_gflops": checked_gflops,
        # against the float64 matrix-multiply rate of this machine, measured in this run
        "checked_share_of_peak": checked_gflops / matmul_peak(jnp.float64),
        "section4_points": values,
        "section4_theory_seconds": section4_theory,
        "section4_training_run_seconds": section4_run,
        "section4_cheaper_per_point": section4_run / (section4_theory / values),
        "section4_aligned_seconds": section4_aligned,
        "section4_aligned_cheaper_per_point": section4_run / (section4_aligned / values),
        **costs,
    }


def flow_step_costs(prediction, task, evaluations: int = 500) -> dict:
    """One evaluation of the flow's right-hand side (``evaluations`` of them in one compiled loop,
    per evaluation), alone and per point of a vmapped batch as large as the batched race's; and
    one accepted step of the batched race (:func:`numeric.batched_race.ode_races`) per point, on
    a batch of identical points (the task's own init scale), crossings included, in one batch on
    one core."""
    import jax
    import jax.numpy as jnp

    from bench.bench_race import timed
    from gdln.numeric import sharding
    from gdln.numeric.batched_race import batch_size, ode_races
    from gdln.verify.sweep import FRACTIONS

    training = task.training
    problem = prediction.flow.race_ode(prediction.log_initial_strengths(training.init_scale), training.tau, [])
    size = batch_size(64, problem.y0.size, len(FRACTIONS))
    one = jnp.asarray(problem.y0)
    batch = jnp.stack([one] * size)
    stacked = jax.tree_util.tree_map(lambda a: jnp.stack([jnp.asarray(a)] * size), problem.args)

    def repeat(f):
        return jax.jit(
            lambda y, args: jax.lax.fori_loop(0, evaluations, lambda _, acc: acc + 1e-30 * f(0.0, acc, args), y)
        )

    alone, together = repeat(problem.f), repeat(jax.vmap(problem.f, in_axes=(None, 0, 0)))
    alone(one, problem.args)
    together(batch, stacked)
    rhs = timed(lambda: alone(one, problem.args)) / evaluations
    rhs_batched = timed(lambda: together(batch, stacked)) / evaluations / size
    problems = [problem] * size
    # one batch on one core, as the right-hand side is timed (the race itself runs a batch per core)
    cores, sharding.CORES = sharding.CORES, 1
    try:
        steps = int(ode_races(problems, FRACTIONS, training.epochs).steps[0])
        step = timed(lambda: ode_races(problems, FRACTIONS, training.epochs).final_loss) / size / steps
    finally:
        sharding.CORES = cores
    return {
        "flow_variables": int(problem.y0.size),
        "flow_batch": size,
        "flow_rhs_us": rhs * 1e6,
        "flow_rhs_batched_us": rhs_batched * 1e6,
        "flow_step_us": step * 1e6,
        "flow_steps": steps,
    }


if __name__ == "__main__":
    from gdln.numeric.precision import use_x64

    use_x64()
    from bench.tables import print_report, sweep_tables

    print_report(sweep_benchmarks("--quick" in sys.argv), sweep_tables)
