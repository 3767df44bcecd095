"""gdln simulate: trains the ReLU network or a GDLN with explicit gates."""

from __future__ import annotations

from gdln.derive.words import plural
from gdln.verify.files import CURVES_SUFFIXES

from .arguments import add_training_arguments, load, training_settings, with_spec
from .output import check_output, emit, finite_text, number_text


def _render_simulate(report):
    print(
        f"model {report['model']}, {plural(report['seeds'], 'seed')}, {report['epochs']} epochs, {report['dtype']}, "
        f"{plural(report['devices'], 'device')}"
    )
    for k, (h, n, f) in enumerate(zip(report["t_half"], report["t_90"], report["loss_final"])):
        print(f"  seed {k}: t_half {number_text(h)}  t_90 {number_text(n)}  final loss {finite_text(f)}")


def cmd_simulate(args):
    from gdln.verify.simulation import simulate_report

    check_output(args.out, "--out", CURVES_SUFFIXES)  # before any work
    task = load(args)
    if args.model != "relu":
        task.network(args.model)
    report = simulate_report(task, args.model, seeds=args.seeds, epochs=args.epochs, out=args.out, dtype=args.dtype)
    emit(report, args.json, _render_simulate, fixed=task.fixed, training=training_settings(args))


def add_parser(sub) -> None:
    p = with_spec(sub, "simulate", "train the ReLU network or a GDLN with explicit gates")
    p.add_argument("--model", required=True, help="relu or a network name")
    p.add_argument("--out", metavar="FILE.npz", help="write the loss curves")
    p.add_argument(
        "--dtype",
        choices=["float64", "float32"],
        default="float64",
        help="what the ReLU network trains in (float32 follows float64 to 1e-4 of the initial loss on the papers' tasks: docs/performance.md)",
    )
    add_training_arguments(p)
    p.set_defaults(run=cmd_simulate)
