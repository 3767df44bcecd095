"""Parametric specs (issue 36): ``python -m bench.bench_parametric [--quick]`` (also part of
``python -m bench``).

- the three-context spec (``examples/three_contexts.toml``, ``g`` symbolic, 7x7 Gram blocks with
  implicit roots): ``gdln derive --network X`` in a fresh process with an empty cache, each
  network, in seconds of wall time and of CPU time (user and system, the process's own: a
  loaded machine stretches the first, not the second);
- its sweep over ``g``: the width-seeded race at 64 points (8 with ``--quick``) once compiled,
  per point, against one compiled training run of the spec (ReLU, one seed, the spec's epochs),
  in wall time and in CPU time (user and system, the process's, every thread: on a machine
  shared with other work the wall times of the two stretch unevenly, the CPU times hardly); and
  ``gdln sweep --grid g=0.25:4:8`` in a fresh process with empty caches;
- Section 5's K = 3 context task with ``g`` scaling every context-specific target: ``gdln
  derive --network X`` cold, each network (``common+1`` only with ``--quick``).
"""

from __future__ import annotations

import sys
import tempfile
import time
import tomllib
from pathlib import Path

from bench.processes import ProcessTime, gdln_process

ROOT = Path(__file__).resolve().parent.parent
THREE_CONTEXTS = ROOT / "examples" / "three_contexts.toml"
SECTION5_K3 = ROOT / "examples" / "section5_k3.toml"
#: target features of Section 5's common block (an 8-item hierarchy); the rest are context-specific
SECTION5_COMMON_FEATURES = 15


def cold_process(argv: list[str]) -> ProcessTime:
    """``gdln ARGV`` in a fresh process with empty caches."""
    with tempfile.TemporaryDirectory() as folder:
        return gdln_process(argv, folder)


def cpu_seconds(fn, repeat: int = 3) -> float:
    """The least CPU time (user and system, this process, every thread) of ``repeat`` calls of ``fn``."""
    from bench.bench_race import timed

    return timed(fn, repeat, clock=time.process_time)


def section5_with_g(folder: Path) -> Path:
    """Section 5's K = 3 spec with ``g`` for every non-zero context-specific target, written to ``folder``."""
    from gdln.derive.spec import task_from_dict, to_toml

    document = tomllib.loads(SECTION5_K3.read_text(encoding="utf-8"))
    document["parameters"] = {"g": 1.0}
    document["data"]["targets"] = [
        ["g" if k >= SECTION5_COMMON_FEATURES and entry else entry for k, entry in enumerate(row)]
        for row in document["data"]["targets"]
    ]
    task_from_dict(document, "section5_k3 with g")  # refused here, not in the subprocess, if malformed
    path = folder / "section5_k3_g.toml"
    path.write_text(to_toml(document), encoding="utf-8")
    return path


def parametric_benchmarks(quick: bool = False) -> dict:
    import numpy as np

    from bench.bench_race import timed, training_seconds
    from gdln.derive.spec import load_spec
    from gdln.numeric.prediction import TaskPredictions
    from gdln.verify.simulation import train_network
    from gdln.verify.sweep import finite_points, parse_axis, sweep_grid, width_race

    task = load_spec(THREE_CONTEXTS)
    derive = {}
    for network in task.networks:
        wall, cpu = cold_process(["derive", str(THREE_CONTEXTS), "--network", network.name])
        derive[network.name] = {"wall_s": wall, "cpu_s": cpu}

    models = TaskPredictions(task)
    points = 8 if quick else 64
    grid = sweep_grid(task, [parse_axis(f"g=0.25:4:{points}", task)], {})
    ok, _, _ = finite_points(models, grid)
    rows = np.flatnonzero(ok)
    width_race(models, grid, rows)  # derive and compile
    theory = timed(lambda: width_race(models, grid, rows), repeat=2)
    theory_cpu = cpu_seconds(lambda: width_race(models, grid, rows), repeat=2)
    run = lambda: train_network(task, "relu", seeds=1, models=models)[0].losses  # noqa: E731
    training_run = training_seconds(run)
    training_cpu = cpu_seconds(run)
    sweep = {"points": int(len(rows)), "theory_s": theory, "training_run_s": training_run}
    sweep["theory_per_point_s"] = theory / len(rows)
    sweep["cheaper_per_point"] = training_run / sweep["theory_per_point_s"]
    sweep["theory_per_point_cpu_s"] = theory_cpu / len(rows)
    sweep["training_run_cpu_s"] = training_cpu
    sweep["cheaper_per_point_cpu"] = training_cpu / sweep["theory_per_point_cpu_s"]
    if not quick:
        wall, cpu = cold_process(["sweep", str(THREE_CONTEXTS), "--grid", "g=0.25:4:8", "--json"])
        sweep["cold_process_8_points"] = {"wall_s": wall, "cpu_s": cpu}

    section5 = {}
    with tempfile.TemporaryDirectory() as folder:
        spec = section5_with_g(Path(folder))
        for name in ("common+1",) if quick else ("common+1", "common+2", "common+all"):
            wall, cpu = cold_process(["derive", str(spec), "--network", name])
            section5[name] = {"wall_s": wall, "cpu_s": cpu}
    return {"three_contexts_derive": derive, "three_contexts_sweep": sweep, "section5_k3_g_derive": section5}


if __name__ == "__main__":
    from gdln.numeric.precision import use_x64

    use_x64()
    from bench.tables import parametric_tables, print_report

    print_report(parametric_benchmarks("--quick" in sys.argv), parametric_tables, markdown="--markdown" in sys.argv)
