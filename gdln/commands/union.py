"""gdln union: every candidate pathway trained together."""

from __future__ import annotations

from .arguments import load, training_settings, with_spec
from .output import emit


def cmd_union(args):
    from gdln.verify.union import union_report

    def render(report):
        print(
            f"union of every candidate pathway ({report['dynamics']}, {report['epochs']} epochs; {report['growth_rule']}):"
        )
        for p in report["pathways"]:
            verdict = "grows" if p["grows"] else "stays"
            print(
                f"  {p['name']}: {verdict}, {p['relative']:.3f} of the strongest, 10^{p['log10_growth']:.1f} x its seed"
            )

    task = load(args)
    emit(union_report(task, epochs=args.epochs), args.json, render, fixed=task.fixed, training=training_settings(args))


def add_parser(sub) -> None:
    p = with_spec(sub, "union", "train every candidate pathway together (exact reduced flow): which ones grow")
    p.add_argument("--epochs", type=int, help="horizon (default: the spec's training.epochs)")
    p.set_defaults(run=cmd_union)
