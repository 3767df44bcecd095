"""gdln find-gates: the gates of trained ReLU networks (Appendix B)."""

from __future__ import annotations

from gdln.derive.errors import SpecError
from gdln.derive.words import plural
from gdln.verify.files import SPEC_SUFFIXES

from .arguments import load, printable, training_settings, with_spec
from .output import append_network, check_output, emit, finite_text

MAX_CLUSTERS = 64


def _cluster_counts(text: str, source: str) -> list[int]:
    """``A..B`` or ``K,K,...`` as positive integers."""
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split(".."))
            counts = list(range(low, high + 1))
        else:
            counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SpecError(source, "--clusters", f"expected A..B or a comma-separated list, got {text!r}") from None
    if not counts or min(counts) < 1 or max(counts) > MAX_CLUSTERS:
        raise SpecError(source, "--clusters", f"expected cluster counts between 1 and {MAX_CLUSTERS}, got {text!r}")
    return counts


def cmd_find_gates(args):
    from gdln.verify.find_gates import find_gates_report

    check_output(args.write_spec, "--write-spec", SPEC_SUFFIXES)  # before any work
    task = load(args)
    counts = _cluster_counts(args.clusters, task.source)
    report, network_toml = find_gates_report(
        task, clusters=counts, seeds=args.seeds, snapshots=args.snapshots, epochs=args.epochs
    )
    report = append_network(args, network_toml, report)
    emit(report, args.json, _render_find_gates, fixed=task.fixed, training=training_settings(args))


def _render_find_gates(report):
    print(
        f"{plural(report['seeds'], 'training run')}, {len(report['snapshots'])} snapshots, {report['distinct_rows']} distinct rows"
    )
    for entry in report["clusters"]:
        print(f"  k = {entry['k']}: {plural(entry['pathways'], 'pathway')}, mse {finite_text(entry['mse'])}")
        for pattern in entry["patterns"]:
            gates = "".join(str(g) for g in pattern["gates"])
            mark = {True: "", False: "  (not realizable by one ReLU unit)", None: "  (empty)"}[pattern["realizable"]]
            print(f"      {gates}  units {pattern['units']:.1f}{mark}")
    print(f"elbow: {report['elbow']} ({report['elbow_rule']})")
    if report.get("written"):
        print(f"wrote {printable(str(report['written']))}")  # escaped, as in errors


def add_parser(sub) -> None:
    p = with_spec(sub, "find-gates", "gate patterns of the trained ReLU network by k-means (Appendix B) and the elbow")
    p.add_argument("--clusters", default="2..8", metavar="A..B|K,K,...", help="cluster counts (default 2..8)")
    p.add_argument("--seeds", type=int, help="number of trainings sampled (default: the spec's)")
    p.add_argument("--epochs", type=int, help="training epochs (default: the spec's)")
    p.add_argument("--snapshots", type=int, help="samples per training, evenly spaced (default: every 100 epochs)")
    p.add_argument("--write-spec", metavar="FILE", help="write the spec with the elbow's network added")
    p.set_defaults(run=cmd_find_gates)
