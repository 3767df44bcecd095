"""Predicted against measured validity: ``python -m bench.validity [--quick] [--markdown]``.

At each task and training setting, ``gdln verify``'s report (3 seeds, the spec's width and
epochs): the theory's own verdict made before training (``predicted_validity``) beside the
measured one (the followed candidate's and the aligned network's largest deviation against
``verify.rules.VALIDITY``), and how often the two verdicts agree. About 4 minutes on one H200;
much longer on 2 CPU cores (``--quick`` runs XoR alone).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gdln.derive.spec import load_spec
from gdln.numeric.precision import use_x64

ROOT = Path(__file__).resolve().parent.parent
#: (spec, init scale, learning rate): XoR across its phase diagram's edge (init 3e-3), the
#: context tasks across init at lr 0.01, and Section 4 at other rates
SETTINGS = (
    *(("xor.toml", init, 0.01) for init in (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
    *(("section4_context.toml", init, 0.01) for init in (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)),
    ("section4_context.toml", 1e-5, 0.024),
    ("section4_context.toml", 1e-4, 0.003),
    ("section4_context.toml", 1e-4, 0.03),
    ("section4_context.toml", 1e-6, 0.003),
    *(("section5_k3.toml", init, 0.01) for init in (1e-6, 1e-4, 1e-3, 1e-2)),
)


def measure(spec: str, init: float, rate: float) -> dict:
    from gdln.verify.following import verify_report

    task = load_spec(ROOT / "examples" / spec).with_training(init_scale=init, learning_rate=rate)
    report = verify_report(task, representations=False).to_json()
    by_name = {n["name"]: n for n in report["networks"]}
    aligned = next(n for n in report["networks"] if n["from_alignment"])
    predicted = report["predicted_validity"]
    return {
        "spec": spec,
        "init_scale": init,
        "learning_rate": rate,
        "follows": report["follows"],
        "followed_deviation": by_name[report["follows"]]["max_deviation"] if report["follows"] else None,
        "measured_within": report["within_validity"],
        "aligned_deviation": aligned["max_deviation"],
        "aligned_within": aligned["within_validity"],
        "gates_move_at": predicted["gates_move_at"],
        "relu_gap": predicted["relu_gap"],
        "predicted_within": predicted["within_validity"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="XoR only")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    use_x64()
    rows = []
    for spec, init, rate in SETTINGS:
        if args.quick and spec != "xor.toml":
            continue
        rows.append(measure(spec, init, rate))
        print(json.dumps(rows[-1]), file=sys.stderr if args.markdown else sys.stdout, flush=True)
    agree = sum(r["predicted_within"] == r["measured_within"] for r in rows)
    agree_aligned = sum(r["predicted_within"] == r["aligned_within"] for r in rows)
    if args.markdown:
        print(
            "| task | init | lr | followed (max deviation) | aligned GDLN | gates move at | ReLU gap | predicted | measured |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(
                f"| {r['spec'].removesuffix('.toml')} | {r['init_scale']:g} | {r['learning_rate']:g} | "
                f"{r['follows']} ({r['followed_deviation']:.3f}) | {r['aligned_deviation']:.3f} | "
                f"{r['gates_move_at'] if r['gates_move_at'] is not None else 'never'} | {r['relu_gap']:.3f} | "
                f"{'within' if r['predicted_within'] else 'outside'} | {'within' if r['measured_within'] else 'outside'} |"
            )
    print(
        f"predicted agrees with measured (followed candidate) at {agree} of {len(rows)} settings; "
        f"with the aligned GDLN's at {agree_aligned} of {len(rows)}"
    )


if __name__ == "__main__":
    main()
