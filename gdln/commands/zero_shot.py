"""gdln zero-shot: the routing task's untrained routes."""

from __future__ import annotations

import math

from gdln.derive.errors import SpecError
from gdln.derive.words import plural

from .output import emit


def _numbers(text: str | None, flag: str, kind):
    if text is None:
        return None
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError("gdln zero-shot", flag, f"expected a comma-separated list of numbers, got {text!r}") from None
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise SpecError("gdln zero-shot", flag, f"expected positive finite numbers, got {text!r}")
    return values


def _mean(values) -> str:
    finite = [v for v in values if math.isfinite(v)]
    return f"{sum(finite) / len(finite):.3g}" if finite else "none"


def cmd_zero_shot(args):
    from gdln.verify.graphs import ZERO_SHOT_INIT_SCALES, zero_shot_report

    if args.domains is None or args.domains < 2:
        raise SpecError("gdln zero-shot", "--domains", "needs at least 2 domains")
    trained = _numbers(args.trained, "--trained", int)
    if trained and any(not 1 <= k <= args.domains for k in trained):
        raise SpecError("gdln zero-shot", "--trained", f"every K must lie in 1..{args.domains}")
    scales = _numbers(args.init_scales, "--init-scales", float) or list(ZERO_SHOT_INIT_SCALES)
    report = zero_shot_report(
        args.domains,
        trained,
        scales,
        scale_trained=args.scale_trained,
        data=args.data,
        # an option left out keeps the report's own default, which the help text states
        **{key: value for key, value in (("seeds", args.seeds), ("epochs", args.epochs)) if value is not None},
    )

    def render(r):
        print(
            f"{r['network']} on the routing task ({r['data']}), M = {r['domains']}, {plural(r['seeds'], 'seed')}: "
            "loss / zero-output loss"
        )
        for e in r["by_trained"]:
            print(f"  K = {e['trained_domains']}: trained {_mean(e['trained'])}, untrained {_mean(e['untrained'])}")
        for e in r["by_init_scale"]:
            print(f"  init {e['init_scale']:g}: trained {_mean(e['trained'])}, untrained {_mean(e['untrained'])}")

    emit(report, args.json, render)


def add_parser(sub) -> None:
    p = sub.add_parser("zero-shot", help="routing task: error on untrained routes against K/M and init scale")
    p.add_argument("--domains", type=int, required=True, help="number of input (and output) domains M")
    p.add_argument("--trained", help="K values, comma-separated (default 1..M-1)")
    p.add_argument("--init-scales", help="init scales, comma-separated")
    p.add_argument("--scale-trained", type=int, help="K of the init-scale sweep (default M // 2)")
    p.add_argument("--seeds", type=int, help="seeds per point (default 2)")
    p.add_argument("--epochs", type=int, help="training epochs (default 3000)")
    p.add_argument(
        "--data",
        choices=["hierarchy", "digits"],
        default="hierarchy",
        help="the slides' hierarchy items (Figure 5, default) or digits through per-domain rotations and "
        "label permutations (Figure 7)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_zero_shot)
