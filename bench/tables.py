"""The benchmark report as tables, written once and rendered two ways: as text for the terminal
(``python -m bench``) and as Markdown for the documentation's Results page
(``python -m bench --markdown``).

A table is a title and rows of ``(what was measured, the measurement)``; every ratio in a row
compares two times taken in the same run."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    title: str
    rows: list[tuple[str, str]]


def simulation_tables(sim: dict) -> list[Table]:
    peaks = ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in sim["peak_gflops"].items())
    loops = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in sim["loop_seconds_per_seed_epoch"].items())
    rows = [
        ("matrix-multiply peak, this run", peaks),
        ("reference loop: one jit-compiled step per seed and epoch", loops),
    ]
    for run in sim["runs"]:
        rows.append(
            (
                f"{run['dtype']}, {run['layout']}, {run['seeds']} seed(s)",
                f"{run['seconds']:.2f} s, {run['gflops']:.1f} GFLOP/s, {run['fraction_of_peak']:.0%} of peak, "
                f"{run['speedup_over_loop']:.1f}x the loop",
            )
        )
    title = f"Simulation: ReLU network {sim['network']}, {sim['epochs']} epochs, {sim['step_mflop']:.1f} MFLOP per step"
    return [Table(title, rows)]


def theory_tables(th: dict) -> list[Table]:
    run = f"{th['relu_training_seconds']:.1f} s"
    return [
        Table(
            "Theory against training, Section 4 (one float64 ReLU run of 12000 epochs)",
            [
                ("one ReLU training run, float64 / float32", f"{run} / {th['relu_training_float32_seconds']:.1f} s"),
                (
                    "`gdln race` in a fresh process, cold (empty caches)",
                    f"{th['race_cold_process_seconds']:.1f} s ({th['race_cold_over_training']:.2f}x a run)",
                ),
                (
                    "`gdln race` in a fresh process, warm caches",
                    f"{th['race_warm_process_seconds']:.1f} s ({th['race_warm_over_training']:.2f}x a run)",
                ),
                (
                    "the race again in the same process",
                    f"{th['race_in_process_seconds']:.2f} s ({th['race_in_process_over_training']:.3f}x a run)",
                ),
                (
                    "every candidate's loss curve, once compiled",
                    f"{th['curves_compiled_seconds'] * 1e3:.1f} ms ({th['training_over_compiled_curves']:.0f}x cheaper than a run)",
                ),
            ],
        )
    ]


def derivation_tables(ds: dict, dc: dict) -> list[Table]:
    by_k = ", ".join(f"K={r['K']} {r['seconds']:.1f} s" for r in ds["by_contexts_P8"])
    by_p = ", ".join(f"P={r['P']} {r['seconds']:.1f} s" for r in ds["by_items_K3"])
    return [
        Table(
            "Derivation",
            [
                (
                    "derive `common+(K-1)` of the context task, P = 8",
                    f"{by_k} (exponent {ds['exponent_in_K']:.2f} in K)",
                ),
                ("derive `common+2`, K = 3", f"{by_p} (exponent {ds['exponent_in_P']:.2f} in P)"),
                (
                    f"`gdln derive {dc['spec']} --network {dc['network']}`, fresh process",
                    f"cold {dc['cold_s']:.1f} s, warm {dc['warm_s']:.2f} s",
                ),
            ],
        )
    ]


def sweep_tables(r: dict) -> list[Table]:
    points = r["xor_points"]
    return [
        Table(
            f"Phase diagrams: XoR, {points} grid points (Delta x init_scale), every candidate",
            [
                (
                    "width-seeded race over the grid, once compiled",
                    f"{r['xor_theory_seconds'] * 1e3:.1f} ms: {r['xor_theory_over_one_run']:.2f}x one compiled "
                    f"12000-epoch ReLU run ({r['xor_training_run_seconds'] * 1e3:.1f} ms), "
                    f"{r['xor_cheaper_per_point']:.0f}x cheaper per point",
                ),
                (
                    "alignment-seeded race over the grid",
                    f"{r['xor_aligned_seconds']:.2f} s, {r['xor_aligned_cheaper_per_point']:.0f}x cheaper per point than a run",
                ),
                (
                    "warm processes: `gdln sweep` (no training) / `gdln simulate --seeds 1`",
                    f"{r['sweep_warm_process_seconds']:.1f} s / {r['simulate_warm_process_seconds']:.1f} s",
                ),
                (
                    "training at checked points, batched in one program",
                    f"{r['checked_runs']} runs in {r['checked_seconds']:.2f} s ({r['checked_runs_per_second']:.1f} runs/s, "
                    f"{r['checked_gflops']:.2f} GFLOP/s, {r['checked_share_of_peak']:.1%} of the float64 matrix-multiply peak)",
                ),
            ],
        ),
        Table(
            f"Phase diagrams: Section 4, {r['section4_points']} init scales (reduced flows in batched solves)",
            [
                (
                    "race over the points, once compiled",
                    f"{r['section4_theory_seconds']:.1f} s against one training run "
                    f"{r['section4_training_run_seconds']:.1f} s: {r['section4_cheaper_per_point']:.1f}x cheaper per point",
                ),
                (
                    "alignment-seeded race over the points, once compiled",
                    f"{r['section4_aligned_seconds']:.1f} s: {r['section4_aligned_cheaper_per_point']:.1f}x cheaper"
                    " per point than that run",
                ),
                (
                    f"the flow's right-hand side ({r['flow_variables']} variables)",
                    f"{r['flow_rhs_us']:.1f} us alone, {r['flow_rhs_batched_us']:.1f} us per point in a batch of {r['flow_batch']}",
                ),
                (
                    "one step of the batched race, per point",
                    f"{r['flow_step_us']:.1f} us ({r['flow_step_us'] / r['flow_rhs_batched_us']:.1f} right-hand sides; "
                    f"{r['flow_steps']} steps)",
                ),
            ],
        ),
    ]


def distributed_tables(r: dict) -> list[Table]:
    rows = [("float64 matrix-multiply peak, this run", f"{r['peak_gflops']:.1f} GFLOP/s")]
    for run in r["runs"]:
        rows.append(
            (
                f"{run['processes']} process{'es' if run['processes'] != 1 else ''}",
                f"{run['training_runs']} runs in {run['training_seconds']:.1f} s ({run['runs_per_second']:.2f} runs/s,"
                f" {run['gflops']:.2f} GFLOP/s, {run['share_of_peak']:.1%} of peak); the command {run['command_seconds']:.0f} s",
            )
        )
    rows.append(("two processes against one, runs per second", f"{r['two_over_one']:.2f}x"))
    title = (
        f"Checked training over processes: Section 4, {r['points']} checked points x {r['seeds']} seeds"
        " (`gdln sweep --check`, `--processes 2` on this machine)"
    )
    return [Table(title, rows)]


def parametric_tables(r: dict) -> list[Table]:
    def seconds(entry: dict) -> str:
        return f"{entry['cpu_s']:.1f} s CPU ({entry['wall_s']:.1f} s wall)"

    derive = r["three_contexts_derive"]
    sweep = r["three_contexts_sweep"]
    rows = [(f"`gdln derive --network {name}`, fresh process, empty cache", seconds(e)) for name, e in derive.items()]
    rows.append(
        (
            f"width-seeded race over {sweep['points']} values of g, once compiled",
            f"{sweep['theory_s']:.2f} s, {sweep['theory_per_point_s'] * 1e3:.1f} ms a point against one compiled "
            f"training run {sweep['training_run_s'] * 1e3:.1f} ms: {sweep['cheaper_per_point']:.1f}x cheaper per point",
        )
    )
    if "cheaper_per_point_cpu" in sweep:
        rows.append(
            (
                "the same in CPU time (user and system, every thread)",
                f"{sweep['theory_per_point_cpu_s'] * 1e3:.1f} ms a point against {sweep['training_run_cpu_s'] * 1e3:.1f} "
                f"ms a training run: {sweep['cheaper_per_point_cpu']:.1f}x cheaper per point",
            )
        )
    if "cold_process_8_points" in sweep:
        rows.append(
            ("`gdln sweep --grid g=0.25:4:8`, fresh process, empty caches", seconds(sweep["cold_process_8_points"]))
        )
    section5 = [
        (f"`gdln derive --network {name}`, fresh process, empty cache", seconds(e))
        for name, e in r["section5_k3_g_derive"].items()
    ]
    return [
        Table("Parametric specs: three contexts, g symbolic (implicit roots of two cubics)", rows),
        Table("Parametric specs: Section 5, K = 3, g scaling the context-specific targets", section5),
    ]


def report_tables(report: dict) -> list[Table]:
    """Every table of ``python -m bench``'s report, in its order; a part that did not run has none."""
    tables: list[Table] = []
    if "simulation" in report:
        tables += simulation_tables(report["simulation"])
    if "theory_against_training" in report:
        tables += theory_tables(report["theory_against_training"])
    if "derivation_scaling" in report:
        tables += derivation_tables(report["derivation_scaling"], report["derive_cache"])
    if "sweep" in report:
        tables += sweep_tables(report["sweep"])
    if "processes" in report:
        tables += distributed_tables(report["processes"])
    if "parametric" in report:
        tables += parametric_tables(report["parametric"])
    if "figures" in report:
        seconds = report["figures"]["figures_quick_seconds"]
        tables.append(Table("Figures", [("`gdln figures --quick` end to end", f"{seconds:.0f} s")]))
    return tables


def as_text(tables: list[Table]) -> str:
    lines = []
    for table in tables:
        lines.append(f"{table.title}:")
        lines += [f"  {what.replace('`', '')}: {measured}" for what, measured in table.rows]
    return "\n".join(lines)


def as_markdown(tables: list[Table]) -> str:
    blocks = []
    for table in tables:
        rows = "\n".join(f"| {what} | {measured} |" for what, measured in table.rows)
        blocks.append(f"**{table.title}**\n\n| measured | result |\n| --- | --- |\n{rows}")
    return "\n\n".join(blocks)


def add_output_options(parser: argparse.ArgumentParser, shown: str = "the tables") -> None:
    """``--json`` and ``--markdown``, one or the other, for `print_report`."""
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the measurements as JSON")
    output.add_argument("--markdown", action="store_true", help=f"print {shown} as Markdown (the Results page)")


def print_report(
    measured: dict, tables: Callable[[dict], list[Table]], *, as_json: bool = False, markdown: bool = False
) -> None:
    """Print a benchmark's measurements: as JSON, else as its ``tables`` in Markdown or text."""
    if as_json:
        print(json.dumps(measured, indent=2))
        return
    shown = tables(measured)
    print(as_markdown(shown) if markdown else as_text(shown))
