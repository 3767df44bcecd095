"""The sweep's solver tolerance, measured: ``python -m bench.bench_tolerance [--markdown]``.

``gdln sweep`` solves race ODEs and reduced flows at ``numeric.sweep.SWEEP_RTOL``, where
``gdln race`` uses 1e-10; the issue asks for the sweep's crossing times within 1e-6 relative of
race's. For each relative tolerance this reports:

- accuracy: over every shipped example's candidates that race on an ODE (each reduced flow,
  and the race ODE of each closed-form candidate), at 12 init scales from 1e-8 to 3e-2 with
  the spec's other settings, the largest relative error of a crossing time (``t_half``,
  ``t_90``) and the largest error of a final loss (a fraction of the initial loss) against
  solves at rtol 1e-12;
- cost: Section 4's width-seeded race over 32 init scales from 1e-6 to 1e-2 (as
  :mod:`bench.bench_sweep` times it, once compiled), and how much cheaper per point it is than
  one Section 4 training run measured in this run.

It shows what a looser tolerance would buy, and what it would cost in accuracy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from bench.tables import Table, print_report

ROOT = Path(__file__).resolve().parent.parent
SECTION4 = ROOT / "examples" / "section4_context.toml"
#: the tolerances compared, the loosest first; the reference solves use REFERENCE_RTOL
TOLERANCES = (1e-6, 1e-7, 1e-8, 1e-10)
REFERENCE_RTOL = 1e-12
ACCURACY_GRID = "init_scale=1e-8:3e-2:12:log"
COST_GRID = "init_scale=1e-6:1e-2:32:log"
FRACTIONS = (0.5, 0.1)


def _engines(models):
    """``(name, engine, prediction)`` of every candidate racing on an ODE: its reduced flow, or
    the race ODE of its closed forms."""
    from gdln.numeric.prediction import CLOSED_FORM

    for network in models.task.networks:
        prediction = models.prediction(network.name)
        engine = prediction.compiled if prediction.kind == CLOSED_FORM else prediction.engine
        yield network.name, engine, prediction


def accuracy(tolerances=TOLERANCES) -> dict:
    """The largest crossing and final-loss errors at each tolerance, per example, against
    solves at :data:`REFERENCE_RTOL`."""
    from gdln.derive.spec import load_spec
    from gdln.numeric.prediction import TaskPredictions
    from gdln.numeric.sweep import ode_race_points
    from gdln.verify.sweep import parse_axis, sweep_grid, width_seeds

    found = {}
    for path in sorted((ROOT / "examples").glob("*.toml")):
        task = load_spec(path)
        models = TaskPredictions(task)
        grid = sweep_grid(task, [parse_axis(ACCURACY_GRID, task)], {})
        rows = np.arange(grid.size)
        tau = 1.0 / grid.learning_rate[rows]
        errors = {rtol: [0.0, 0.0, 0] for rtol in tolerances}
        names = []
        for name, engine, prediction in _engines(models):
            names.append(name)
            logs = width_seeds(prediction, grid.init_scale[rows])

            def race(rtol, engine=engine, logs=logs):
                return ode_race_points(engine, grid.values[rows], logs, tau, task.training.epochs, FRACTIONS, rtol=rtol)

            reference = race(REFERENCE_RTOL)
            for rtol in tolerances:
                got = race(rtol)
                # a level crossed by one solve and not the other (near the horizon)
                missed = int(np.sum(np.isnan(got.crossings) != np.isnan(reference.crossings)))
                crossing = np.nanmax(np.abs(got.crossings / reference.crossings - 1), initial=0.0)
                final = np.nanmax(np.abs(got.final_loss - reference.final_loss), initial=0.0)
                worst = errors[rtol]
                errors[rtol] = [max(worst[0], float(crossing)), max(worst[1], float(final)), worst[2] + missed]
        found[path.name] = {"candidates": names, "errors": errors}
    return found


def cost(tolerances=TOLERANCES) -> dict:
    """Seconds of Section 4's width-seeded race over :data:`COST_GRID` at each tolerance, and of
    one training run."""
    from bench.bench_race import timed, training_seconds
    from gdln.derive.spec import load_spec
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.simulation import train_network
    from gdln.verify.sweep import parse_axis, sweep_grid, width_race

    task = load_spec(SECTION4)
    models = TaskPredictions(task)
    grid = sweep_grid(task, [parse_axis(COST_GRID, task)], {})
    rows = np.arange(grid.size)
    seconds = {}
    for rtol in tolerances:
        width_race(models, grid, rows, rtol=rtol)  # compile
        seconds[rtol] = timed(lambda rtol=rtol: width_race(models, grid, rows, rtol=rtol), repeat=3)
    run = training_seconds(lambda: train_network(task, "relu", seeds=1, models=models)[0].losses)
    return {"points": int(grid.size), "seconds": seconds, "training_run_seconds": run}


def tolerance_tables(found: dict, costs: dict) -> list[Table]:
    from gdln.numeric.sweep import SWEEP_RTOL

    def label(rtol: float) -> str:
        own = {SWEEP_RTOL: " (the sweep's)", 1e-10: " (`gdln race`'s)"}.get(rtol, "")
        return f"rtol {rtol:.0e}{own}"

    tables = []
    for example, entry in found.items():
        rows = [
            (
                label(rtol),
                f"crossings within {crossing:.1e} relative, final losses within {final:.1e}"
                + (f"; {missed} crossing(s) found by only one of the two solves" if missed else ""),
            )
            for rtol, (crossing, final, missed) in entry["errors"].items()
        ]
        title = f"{example} ({', '.join(entry['candidates'])}): against rtol {REFERENCE_RTOL:.0e}, {ACCURACY_GRID}"
        tables.append(Table(title, rows))
    run, points = costs["training_run_seconds"], costs["points"]
    rows = [
        (label(rtol), f"{seconds:.2f} s, {run / (seconds / points):.0f}x cheaper per point than a run")
        for rtol, seconds in costs["seconds"].items()
    ]
    rows.append(("one Section 4 training run (best of three after compiling)", f"{run:.2f} s"))
    tables.append(Table(f"Section 4's width-seeded race, {COST_GRID}, once compiled", rows))
    return tables


def main(argv: list[str]) -> int:
    from gdln.numeric.precision import use_x64

    use_x64()
    measured = {"accuracy": accuracy(), "cost": cost()}
    print_report(measured, lambda m: tolerance_tables(m["accuracy"], m["cost"]), markdown="--markdown" in argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
