"""gdln simulate and verify: training, and theory against it."""

from __future__ import annotations

from gdln.verify.display import resolution_text
from gdln.verify.files import check_writable

from ._common import (
    _emit,
    _fmt,
    _load,
    _overrides,
    _parameters_line,
    _plural,
    with_spec,
)

TIME_FLAGS = {"descent": "gradient descent", "flow": "gradient flow"}


def _render_simulate(report):
    print(
        f"model {report['model']}, {_plural(report['seeds'], 'seed')}, {report['epochs']} epochs, {report['dtype']}, "
        f"{_plural(report['devices'], 'device')}"
    )
    for k, (h, n, f) in enumerate(zip(report["t_half"], report["t_90"], report["loss_final"])):
        print(f"  seed {k}: t_half {_fmt(h)}  t_90 {_fmt(n)}  final loss {f:.3g}")


def _render_verify(report):
    _parameters_line(report["parameters"])
    print(f"predictions start from: {report['initial_conditions']}; then {report['time_model']}")
    if report.get("alignment"):
        print(f"  alignment phase ends at epochs {report['alignment']['time']}")
    rows = [("network", "max deviation", "t_half predicted", "t_half ReLU")]
    rows += [
        (n["name"], f"{100 * n['max_deviation']:.2f}%", _fmt(n["t_half_predicted"]), _fmt(n["t_half_relu"]))
        for n in report["networks"]
    ]
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(
        "max deviation: the largest gap between a network's predicted loss and the ReLU network's (mean over "
        "seeds), in % of the initial loss; t_half: epochs until the loss falls to half its initial value"
    )
    print(f"the ReLU network follows: {report['follows']} (among the spec's networks)")
    said = resolution_text(report.get("resolution"))
    if said:
        print(f"  {said}")
    census = report.get("census")
    if census:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in sorted(census["fractions"].items(), key=lambda kv: -kv[1]))
        print(f"hidden units by gate pattern ({census['units']} learned units): {shares}")
        shares = ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(census["majority_fractions"].items(), key=lambda kv: -kv[1])
        )
        print(f"  counting a unit on in a context where it is on for most items: {shares}")
    if report.get("mds"):
        print(
            f"MDS: ReLU vs {report['mds']['network']} representations, Procrustes disparity {report['mds']['procrustes_disparity']:.4f}"
        )


def cmd_simulate(args):
    from gdln.verify.reports import simulate_report

    task = _load(args)
    if args.model != "relu":
        task.network(args.model)
    if args.out:
        check_writable(args.out, "--out")  # before training: a folder, or a folder that is missing
    report = simulate_report(task, args.model, _overrides(args), args.seeds, args.epochs, args.out, dtype=args.dtype)
    _emit(report, args.json, _render_simulate)


def cmd_verify(args):
    from gdln.verify.reports import verify_report

    task = _load(args)
    if any(network.shared for network in task.networks):
        from gdln.verify.graphs import graph_verify_report

        _emit(
            graph_verify_report(task, _overrides(args), args.seeds, args.epochs),
            args.json,
            _render_graph_verify,
            markdown=args.markdown,
        )
        return
    report = verify_report(
        task,
        _overrides(args),
        args.seeds,
        args.epochs,
        initial_conditions=args.initial_conditions,
        time_model=None if args.time is None else TIME_FLAGS[args.time],
    )
    _emit(report, args.json, _render_verify, markdown=args.markdown)


def _render_graph_verify(report):
    print(f"{_plural(report['seeds'], 'seed')}, {report['epochs']} epochs, learning rate {report['learning_rate']:g}")
    for n in report["networks"]:
        random = ", ".join(f"{d:.3f}" for d in n["max_deviation"])
        print(
            f"  {n['name']:<12} decoupled: max deviation {n['max_deviation_decoupled']:.2e}   random weights: {random}"
            f"   t_90 theory {_fmt(n['theory']['t_90'])}, trained {n['trained']['t_90']}"
        )
    print(
        f"ranking: theory {', '.join(report['ranking']['theory'])}; trained {', '.join(report['ranking']['trained'])}"
    )


def add_parser(sub) -> None:
    for name, help_text, run in (
        ("simulate", "train the ReLU network or a GDLN with explicit gates", cmd_simulate),
        ("verify", "train the ReLU network and say which candidate it follows", cmd_verify),
    ):
        p = with_spec(sub, name, help_text, markdown=name == "verify")
        if name == "simulate":
            p.add_argument("--model", required=True, help="relu or a network name")
            p.add_argument("--out", metavar="FILE.npz", help="write the loss curves")
            p.add_argument(
                "--dtype",
                choices=["float64", "float32"],
                default="float64",
                help="what the ReLU network trains in (float32 follows float64 to 1e-4 of the initial loss; README)",
            )
        p.add_argument("--seeds", type=int, help="number of seeds (0, 1, ...)")
        p.add_argument("--epochs", type=int, help="training epochs (default: the spec's training.epochs)")
        p.add_argument(
            "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
        )
        if name == "verify":
            p.add_argument(
                "--initial-conditions",
                choices=["alignment", "weights", "width"],
                default="alignment",
                help="where predictions start: the alignment phase (default), the initial weights, the widths",
            )
            p.add_argument(
                "--time",
                choices=sorted(TIME_FLAGS),
                help="follow gradient descent at the training step (default with alignment) or gradient flow",
            )
        p.set_defaults(run=run)
