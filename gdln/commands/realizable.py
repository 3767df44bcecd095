"""gdln realizable: can one bias-free ReLU unit be on exactly at the given datapoints?"""

from __future__ import annotations

from .arguments import load, training_settings, with_spec
from .output import emit
from .patterns import datapoint_indices, numeric_inputs


def cmd_realizable(args):
    from gdln.verify.realizability import realizable

    task = load(args)
    pattern = datapoint_indices(args.pattern, "--pattern", task.num_datapoints, "pattern")
    ok, witness = realizable(numeric_inputs(task, args), pattern)
    report = {"pattern": pattern, "realizable": ok, "witness": None if witness is None else [float(w) for w in witness]}
    emit(
        report,
        args.json,
        lambda r: print(
            f"pattern {r['pattern']}: {'realizable, w = ' + str(r['witness']) if r['realizable'] else 'not realizable by one ReLU unit without bias'}"
        ),
        fixed=task.fixed,
        training=training_settings(args),
    )


def add_parser(sub) -> None:
    p = with_spec(sub, "realizable", "can one ReLU unit without bias be on exactly at these datapoints?")
    p.add_argument(
        "--pattern", required=True, metavar="I,J,...", help="datapoint indices (from 0) on which the gate is on"
    )
    p.set_defaults(run=cmd_realizable)
