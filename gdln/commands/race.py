"""gdln race: rank the candidate networks and find crossovers."""

from __future__ import annotations

from gdln.verify.reports import predicted_follows_text, predicted_validity_text

from .arguments import load, training_settings, with_spec
from .output import ALGEBRAIC_NOTE, emit, has_algebraic, number_text, parameters_line, percent, value_text


def _speed_text(entry) -> str:
    """A network's speed as text: a maximum over several singular values (a parametric network's
    speed, one line of every candidate) by its value, any other as :func:`value_text` gives it."""
    if _is_maximum(entry):
        return f"{entry['value']:.6g} (a maximum)"
    return value_text(entry, "s")


def _is_maximum(entry) -> bool:
    return entry["expr"].startswith("Max(")


def _race_rows(report) -> tuple[list[tuple[str, ...]], str | None]:
    """The race's columns as text, and the speed they share when every network has the same."""
    networks = report["networks"]
    shared = networks[0]["speed"] if len({n["speed"]["expr"] for n in networks}) == 1 and len(networks) > 1 else None
    rows = [("network", *(() if shared else ("speed",)), "t_half", "t_90", "final loss", "dynamics")]
    for n in networks:
        speed = () if shared else (_speed_text(n["speed"]),)
        rows.append(
            (
                n["name"],
                *speed,
                number_text(n["t_half"]),
                number_text(n["t_90"]),
                percent(n["final_loss"]),
                n["dynamics"],
            )
        )
    return rows, None if shared is None else _speed_text(shared)


def _render_race(report):
    parameters_line(report["parameters"], report.get("exceptional_point"))
    rows, shared = _race_rows(report)
    if shared:
        print(f"every network has the same speed (largest singular value s): {shared}")
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  " + "   ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if any(_is_maximum(n["speed"]) for n in report["networks"]):
        print("a maximum: the largest of the network's singular values, each in the parameters (--json gives them)")
    print(
        f"t_half, t_90: epochs until the loss falls to 50% and 10% of its initial value; final loss: at epoch "
        f"{report['horizon']:g}, in % of the initial loss"
    )
    for n in report["networks"]:
        # a race stopped short of the horizon: its never and final loss are read where it stopped
        if n.get("stopped_at") is not None:
            print(f"  {n['name']}: stopped at epoch {n['stopped_at']:.6g}: {'; '.join(n.get('notes', []))}")
    for n in report["networks"]:
        if "staged" in n:
            st = n["staged"]
            kind = "closed form" if st["rest_closed_form"] else "reduced flow"
            print(
                f"  {n['name']} staged ({st['first']} first, the rest on its residual, {kind}): "
                f"max deviation {percent(st['max_deviation'])} of the initial loss"
            )
    print(f"ranking: {', '.join(report['ranking'])}")
    print(f"winner: {report['winner']}")
    for c in report["crossovers"]:
        a, b = c["networks"]
        print(
            f"crossover {a} / {b}: {c['parameter']}* = {value_text(c)} (faster below: {c['faster_below']}, above: {c['faster_above']})"
        )
    if has_algebraic(report):
        print(ALGEBRAIC_NOTE)
    if report.get("predicted_validity") is not None:
        print(f"predicted validity (no training): {predicted_validity_text(report['predicted_validity'])}")
    if report.get("predicted_follows") is not None:
        print(f"predicted to be followed (no training): {predicted_follows_text(report['predicted_follows'])}")


def cmd_race(args):
    from gdln.verify.graphs import shared_edges
    from gdln.verify.race import race_report

    task = load(args)
    if shared_edges(task):
        from gdln.verify.graphs import shared_race_report

        emit(
            shared_race_report(task),
            args.json,
            _render_shared_race,
            markdown=args.markdown,
            fixed=task.fixed,
            training=training_settings(args),
        )
        return
    emit(
        race_report(task, staged=args.staged, predict_validity=args.predicted_validity),
        args.json,
        _render_race,
        markdown=args.markdown,
        fixed=task.fixed,
        training=training_settings(args),
    )


def _render_shared_race(report):
    print("race of the shared-edge reduction (Eq. 6) in gradient-descent time")
    for n in report["networks"]:
        print(
            f"  {n['name']:<16} {n['paths']} paths, {n['modes']} modes   t_half {number_text(n['t_half'])}   t_90 {number_text(n['t_90'])}"
            f"   final loss {n['final_loss']:.3g}"
        )
    print(f"ranking: {', '.join(report['ranking'])}")
    print(f"winner: {report['winner']}")


def add_parser(sub) -> None:
    p = with_spec(sub, "race", "rank the candidate networks and find crossovers", markdown=True)
    p.add_argument(
        "--staged",
        action="store_true",
        help="also report the staged approximation (first pathway, then the rest on its residual) and its error",
    )
    p.add_argument(
        "--predicted-validity",
        action="store_true",
        help="also say where the theory holds, from the alignment phase of the spec's ReLU seeds and its "
        "frozen gates (no training; as gdln verify says it)",
    )
    p.add_argument(
        "--strict", action="store_true", help="treat warnings (e.g. a learning rate that diverges) as errors"
    )
    p.set_defaults(run=cmd_race)
