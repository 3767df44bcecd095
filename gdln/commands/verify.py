"""gdln verify: trains the ReLU network and says which candidate it follows, and how closely."""

from __future__ import annotations

from gdln.derive.words import plural
from gdln.numeric.options import InitialConditions, TimeModel
from gdln.verify.reports import (
    agf_text,
    predicted_follows_text,
    predicted_validity_text,
    resolution_text,
    validity_text,
)

from .arguments import add_training_arguments, load, training_settings, with_spec
from .output import NOT_FINITE, emit, number_text, parameters_line, percent

#: the CLI's words for the time models and the initial conditions, read onto their types here only
TIME_FLAGS = {"descent": TimeModel.GRADIENT_DESCENT, "flow": TimeModel.GRADIENT_FLOW}


def _render_verify(report):
    parameters_line(report["parameters"], report.get("exceptional_point"))
    print(f"predictions start from: {report['initial_conditions']}; then {report['time_model']}")
    if report.get("alignment"):
        print(f"  alignment phase ends at epochs {report['alignment']['time']}")
    rows = [("network", "max deviation", "t_half predicted", "t_half ReLU")]
    rows += [
        (
            n["name"],
            percent(n["max_deviation"], ".2f", missing=NOT_FINITE),
            number_text(n["t_half_predicted"]),
            number_text(n["t_half_relu"]),
        )
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
    verdict = validity_text(report["follows"], report["networks"], report["validity"])
    if verdict:
        print(f"  validity: {verdict}")
    if report.get("predicted_validity") is not None:
        print(f"  predicted before training: {predicted_validity_text(report['predicted_validity'])}")
    if report.get("predicted_follows") is not None:
        print(f"  predicted to be followed, before training: {predicted_follows_text(report['predicted_follows'])}")
    if report.get("agf") is not None:
        print(f"  {agf_text(report['agf'])}")
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


def cmd_verify(args):
    from gdln.verify.following import verify_report
    from gdln.verify.graphs import shared_edges

    task = load(args)
    if shared_edges(task):
        from gdln.verify.graphs import graph_verify_report

        emit(
            graph_verify_report(task, seeds=args.seeds, epochs=args.epochs),
            args.json,
            _render_graph_verify,
            markdown=args.markdown,
            fixed=task.fixed,
            training=training_settings(args),
        )
        return
    report = verify_report(
        task,
        seeds=args.seeds,
        epochs=args.epochs,
        initial_conditions=InitialConditions(args.initial_conditions),
        time_model=None if args.time is None else TIME_FLAGS[args.time],
        agf=args.agf,
    )
    emit(report, args.json, _render_verify, markdown=args.markdown, fixed=task.fixed, training=training_settings(args))


def _render_graph_verify(report):
    print(f"{plural(report['seeds'], 'seed')}, {report['epochs']} epochs, learning rate {report['learning_rate']:g}")
    for n in report["networks"]:
        random = ", ".join(f"{d:.3f}" for d in n["max_deviation"])
        print(
            f"  {n['name']:<12} decoupled: max deviation {n['max_deviation_decoupled']:.2e}   random weights: {random}"
            f"   t_90 theory {number_text(n['theory']['t_90'])}, trained {n['trained']['t_90']}"
        )
    print(
        f"ranking: theory {', '.join(report['ranking']['theory'])}; trained {', '.join(report['ranking']['trained'])}"
    )


def add_parser(sub) -> None:
    p = with_spec(sub, "verify", "train the ReLU network and say which candidate it follows", markdown=True)
    add_training_arguments(p)
    p.add_argument(
        "--initial-conditions",
        choices=[str(option) for option in InitialConditions],
        default=str(InitialConditions.ALIGNMENT),
        help="where predictions start: the alignment phase (default), the initial weights, the widths",
    )
    p.add_argument(
        "--time",
        choices=sorted(TIME_FLAGS),
        help="follow gradient descent at the training step (default with alignment) or gradient flow",
    )
    p.add_argument(
        "--agf",
        action="store_true",
        help="also predict by the Alternating Gradient Flows model of the ReLU network (as 'agf' in the JSON)",
    )
    p.set_defaults(run=cmd_verify)
