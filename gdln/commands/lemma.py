"""gdln lemma: every realizable gate pattern of a small dataset, classified."""

from __future__ import annotations

from gdln.derive.errors import SpecError

from .arguments import load, training_settings, with_spec
from .output import emit
from .patterns import datapoint_indices, numeric_inputs


def cmd_lemma(args):
    import numpy as np

    from gdln.verify.realizability import MAX_LEMMA_DATAPOINTS, enumerate_patterns, pattern_classes

    task = load(args)
    if task.num_datapoints > MAX_LEMMA_DATAPOINTS:
        raise SpecError(
            task.source,
            "data.inputs",
            f"{task.num_datapoints} datapoints; lemma enumerates at most {MAX_LEMMA_DATAPOINTS}",
        )
    inputs = np.asarray(numeric_inputs(task, args))
    columns = (
        datapoint_indices(args.context_columns, "--context-columns", task.num_inputs, "context-columns")
        if args.context_columns
        else None
    )
    report = enumerate_patterns(inputs, pattern_classes(inputs, columns))
    emit(
        report,
        args.json,
        lambda r: print(f"{r['realizable']} realizable patterns of {r['datapoints']} datapoints: {r['by_group']}"),
        fixed=task.fixed,
        training=training_settings(args),
    )


def add_parser(sub) -> None:
    p = with_spec(sub, "lemma", "enumerate and classify every realizable gate pattern (<= 16 datapoints)")
    p.add_argument("--context-columns", metavar="I,J,...", help="input columns that encode the context")
    p.set_defaults(run=cmd_lemma)
