"""gdln align: the alignment phase of the ReLU network."""

from __future__ import annotations

from gdln.derive.spec import MAX_SEEDS
from gdln.verify.files import SPEC_SUFFIXES

from .arguments import load, training_settings, with_spec
from .output import append_network, check_output, emit


def _render_align(report):
    print(f"alignment phase: ends at epochs {report['time']} (output at {report['output_fraction']:g} of the targets)")
    for p in report["patterns"]:
        print(f"  on at datapoints {p['active']}: units per seed {p['units']}")
    for name, counts in report["unmatched_units"].items():
        print(f"  units matching no pathway of {name}: {counts}")


def cmd_align(args):
    from gdln.verify.following import align_report

    check_output(args.write_spec, "--write-spec", SPEC_SUFFIXES)  # before any work
    task = load(args)
    report, network_toml = align_report(task, seeds=args.seeds)
    report = append_network(args, network_toml, report)
    emit(report, args.json, _render_align, fixed=task.fixed, training=training_settings(args))


def add_parser(sub) -> None:
    p = with_spec(sub, "align", "the alignment phase of the ReLU network: settled gate patterns (no training)")
    p.add_argument("--seeds", type=int, help=f"number of seeds (1 to {MAX_SEEDS}; default: the spec's)")
    p.add_argument("--write-spec", metavar="FILE", help="write the spec with the patterns' GDLN added as a network")
    p.set_defaults(run=cmd_align)
