"""Derivation times of context tasks (issue: exact derivations at paper scale).

``python bench/bench_derive.py [--large]`` prints, for each task, the seconds spent on modes,
couplings, assumptions (symmetric groups and the group reduction) and race ODEs. ``--large``
adds K = 3 with 32 items (about half a minute)."""

from __future__ import annotations

import sys
import time

from gdln.derive import NetworkDerivation, task_from_dict
from gdln.derive.staged import StagedDerivation
from gdln.derive.tasks import context_subset_candidates, context_task


def derive_times(items: int, contexts: int, staged: bool = False) -> dict:
    spec = context_task(items, contexts, ["hierarchy"] * contexts, None)
    spec["network"] = [context_subset_candidates(items, contexts)[contexts - 2]]
    name = spec["network"][0]["name"]
    task = task_from_dict(spec, f"<K={contexts}, P={items}>")
    start = time.perf_counter()
    derivation = NetworkDerivation(task, name)
    _ = derivation.pathways  # each step is a cached property: touching it times it
    modes = time.perf_counter()
    _ = derivation.coupling
    coupling = time.perf_counter()
    _ = derivation.assumptions
    assumptions = time.perf_counter()
    _ = derivation.rates, derivation.reduced_system
    end = time.perf_counter()
    row = {
        "task": f"K={contexts} P={items}",
        "network": name,
        "modes": len(derivation.mode_refs),
        "modes_s": modes - start,
        "coupling_s": coupling - modes,
        "assumptions_s": assumptions - coupling,
        "rates_s": end - assumptions,
        "total_s": end - start,
    }
    if staged:
        begin = time.perf_counter()
        _ = StagedDerivation(task, name).second_stage.reduced_system
        row["staged_s"] = time.perf_counter() - begin
    return row


def main() -> None:
    cases = [(8, 3, False), (16, 3, False), (8, 10, True)]
    if "--large" in sys.argv:
        cases.append((32, 3, False))
    print(
        f"{'task':<12} {'network':<10} {'modes':>5} {'modes':>7} {'coupling':>9} {'assumptions':>12} {'ODEs':>6} {'total':>7} {'staged':>7}"
    )
    for items, contexts, staged in cases:
        r = derive_times(items, contexts, staged)
        extra = f"{r['staged_s']:7.2f}" if "staged_s" in r else ""
        print(
            f"{r['task']:<12} {r['network']:<10} {r['modes']:>5} {r['modes_s']:7.2f} {r['coupling_s']:9.2f} "
            f"{r['assumptions_s']:12.2f} {r['rates_s']:6.2f} {r['total_s']:7.2f} {extra}"
        )


if __name__ == "__main__":
    main()
