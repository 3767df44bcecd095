"""Checked training over processes: ``python -m bench.bench_distributed [--points N] [--markdown]``
(also part of ``python -m bench``).

``gdln sweep examples/section4_context.toml --grid init_scale=1e-5:1e-4:N:log --check N`` (the
spec's 3 seeds, 12000 epochs of 700 units: 3N training runs) once in one process and once shared
over two processes on this machine (``--processes 2``, JAX's multi-controller runtime, a free
local port). For each: training runs per second (the runs over ``timing.training_s``, the
longest any process trained), the GFLOP/s of their matrix products and their share of the
float64 matrix-multiply peak measured in this run, and the whole command's wall-clock time.

Every command runs twice and the second is measured: the first fills the derivation and
compilation caches (a temporary folder), whose programs differ in shape between one process and
two. Each process uses every core: on one machine, two processes gain only what one leaves idle.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.tables import add_output_options, distributed_tables, print_report

ROOT = Path(__file__).resolve().parent.parent
SECTION4 = ROOT / "examples" / "section4_context.toml"
#: checked points (and grid points) of the measured sweep: 3 seeds each
POINTS = 4


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def _sweep(points: int, processes: int, cache_folder: str) -> tuple[dict, float]:
    """The sweep's JSON (process 0's) and the wall-clock seconds until every process ended."""
    from gdln.derive.cache import CACHE_ENV

    argv = [
        sys.executable,
        "-m",
        "gdln",
        "sweep",
        str(SECTION4),
        "--grid",
        f"init_scale=1e-5:1e-4:{points}:log",
        "--check",
        str(points),
        "--json",
    ]
    env = {**os.environ, CACHE_ENV: cache_folder}
    commands = [argv]
    if processes > 1:
        coordinator = f"localhost:{_free_port()}"
        commands = [
            [*argv, "--processes", str(processes), "--process-id", str(i), "--coordinator", coordinator]
            for i in range(processes)
        ]
    start = time.perf_counter()
    runs = [subprocess.Popen(c, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    outputs = [run.communicate() for run in runs]
    seconds = time.perf_counter() - start
    for command, run, (_, err) in zip(commands, runs, outputs):
        if run.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed ({run.returncode}): {err.decode()[-2000:]}")
    return json.loads(outputs[0][0]), seconds


def distributed_benchmarks(points: int = POINTS) -> dict:
    import jax.numpy as jnp

    from bench.bench_race import matmul_peak, step_flops
    from gdln.derive.spec import load_spec

    task = load_spec(SECTION4)
    training = task.training
    flops = step_flops(task.num_datapoints, task.num_inputs, training.hidden_units, task.num_outputs)
    peak = matmul_peak(jnp.float64)
    found: dict = {"points": points, "seeds": training.seeds, "peak_gflops": peak, "runs": []}
    with tempfile.TemporaryDirectory() as folder:
        for processes in (1, 2):
            _sweep(points, processes, folder)  # fills the caches
            report, wall = _sweep(points, processes, folder)
            timing = report["timing"]
            runs = points * training.seeds
            gflops = runs * training.epochs * flops / timing["training_s"] / 1e9
            found["runs"].append(
                {
                    "processes": timing["processes"],
                    "training_runs": runs,
                    "training_seconds": timing["training_s"],
                    "runs_per_second": runs / timing["training_s"],
                    "gflops": gflops,
                    "share_of_peak": gflops / peak,
                    "command_seconds": wall,
                }
            )
    one, two = found["runs"]
    found["two_over_one"] = two["runs_per_second"] / one["runs_per_second"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_distributed", description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=POINTS, help=f"checked points, 3 seeds each (default {POINTS})")
    add_output_options(parser, "the table")
    args = parser.parse_args(argv)
    from gdln.numeric.precision import use_x64

    use_x64()
    print_report(distributed_benchmarks(args.points), distributed_tables, as_json=args.json, markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
