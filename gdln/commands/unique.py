"""gdln unique: orbits of the candidates under the data's symmetries."""

from __future__ import annotations

import math

from gdln.derive.errors import SpecError
from gdln.derive.words import plural

from .arguments import load, training_settings, with_spec
from .output import emit, number_text


def cmd_unique(args):
    from gdln.verify.uniqueness import unique_report

    if args.patterns != "all" and args.max_pathways is None:
        raise SpecError(args.spec, "--patterns", "chooses the search's patterns: give --max-pathways too")

    def render(report):
        print(f"{plural(report['automorphisms'], 'automorphism')} of the data; candidates: {report['candidates']}")
        search = report.get("search")
        if search:
            print(
                f"search: {len(search['patterns'])} realizable patterns, {search['candidates']} networks of at most "
                f"{search['max_pathways']} pathways, {search['pruned_without_leader']} without a fastest pattern, "
                f"{search['orbits_raced']} orbits raced"
            )
        for k, orbit in enumerate(report["orbits"][: 10 if search else None]):
            gates = "; ".join(",".join(map(str, p)) for p in orbit["pathways"][0]) if search else ""
            print(
                f"  orbit {k + 1}: {', '.join(orbit['networks'])}  t_90 {number_text(orbit['t_90'])}"
                + (f"  pathways on datapoints {gates}" if gates else "")
            )
        margin = report["margin"]
        verdict = "unique" if report["unique"] else "not unique"
        orbits = report["orbits"]
        basis = "t_90" if orbits and orbits[0]["t_90"] is not None else "final loss"
        if len(orbits) == 1:
            why = "one orbit"
        elif margin is None:
            why = "no finite prediction to compare"
        else:
            lead = "only it reaches 10%" if margin == math.inf else f"{100 * margin:.3g}% of its {basis}"
            why = f"lead over the next orbit: {lead}; unique above {100 * report['tolerance']:g}%"
        print(f"fastest orbit: {verdict} ({why})")
        print("t_90: epochs until the loss falls to 10% of its initial value")

    task = load(args)
    emit(
        unique_report(task, max_pathways=args.max_pathways, patterns=args.patterns),
        args.json,
        render,
        markdown=args.markdown,
        fixed=task.fixed,
        training=training_settings(args),
    )


def add_parser(sub) -> None:
    p = with_spec(
        sub,
        "unique",
        "orbits of the candidates under the data's symmetries, and whether the winner is unique",
        markdown=True,
    )
    p.add_argument(
        "--max-pathways",
        type=int,
        help="race every network of at most N realizable gate patterns instead of the spec's (with --patterns all: at "
        "most 16 datapoints)",
    )
    p.add_argument(
        "--patterns",
        choices=["all", "contexts", "self-consistent"],
        default="all",
        help="with --max-pathways: every realizable pattern, the unions of whole contexts (data.contexts), or the "
        "patterns the alignment phase reaches (the leading singular vector of the pattern's correlation gates a ReLU "
        "unit exactly on it)",
    )
    p.set_defaults(run=cmd_unique)
