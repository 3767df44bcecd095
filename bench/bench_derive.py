"""Derivation times of context tasks (issue: exact derivations at paper scale), and of
``gdln derive`` cold and warm (the derivation cache).

``python bench/bench_derive.py [--large]`` prints, for each task, the seconds spent on modes,
couplings, assumptions (symmetric groups and the group reduction) and race ODEs. ``--large``
adds K = 3 with 32 items (about half a minute). ``--cache`` prints ``gdln derive`` on Section 4's
``common+2`` in a fresh process, with an empty cache and again with the cache it left;
``--transcendental`` the same for XoR with ``sin(Delta)`` in an input."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.processes import gdln_process
from gdln.derive import NetworkDerivation, task_from_dict
from gdln.derive.spec import context_subset_candidates, context_task
from gdln.derive.staged import StagedDerivation


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


ROOT = Path(__file__).resolve().parent.parent
SECTION4 = ROOT / "examples" / "section4_context.toml"


def derive_process_times(spec: Path = SECTION4, network: str = "common+2") -> dict:
    """Seconds of ``gdln derive SPEC --network NETWORK`` (its default text) in a fresh process:
    ``cold`` with an empty cache folder, ``warm`` again with what the first left there."""
    argv = ["derive", str(spec), "--network", network]
    with tempfile.TemporaryDirectory() as folder:
        cold = gdln_process(argv, folder).wall_s
        warm = gdln_process(argv, folder).wall_s
    return {"spec": spec.name, "network": network, "cold_s": cold, "warm_s": warm}


def transcendental_derive_times() -> dict:
    """``gdln derive`` cold and warm of XoR with ``Delta/2 + sin(Delta)`` in its first input (issue
    36: 42-44 s before zero tests had a budget, ``derive.modes.EXPAND_BUDGET``; the aim is under 5 s)."""
    text = (ROOT / "examples" / "xor.toml").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "xor_sin.toml"
        spec.write_text(text.replace('[[1, 1, "Delta/2"]', '[[1, 1, "Delta/2 + sin(Delta)"]'), encoding="utf-8")
        return derive_process_times(spec, "xor")


def main() -> None:
    if "--transcendental" in sys.argv:
        r = transcendental_derive_times()
        print(f"gdln derive XoR with sin(Delta) --network xor: cold {r['cold_s']:.1f} s, warm {r['warm_s']:.2f} s")
        return
    if "--cache" in sys.argv:
        r = derive_process_times()
        print(f"gdln derive {r['spec']} --network {r['network']}: cold {r['cold_s']:.1f} s, warm {r['warm_s']:.2f} s")
        return
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
