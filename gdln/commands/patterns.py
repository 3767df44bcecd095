"""gdln realizable and lemma: which gate patterns one ReLU unit can have."""

from __future__ import annotations

from gdln.derive.errors import SpecError

from ._common import (
    _emit,
    _load,
    _overrides,
    with_spec,
)


def _indices(text: str, source: str, bound: int, what: str) -> list[int]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise SpecError(source, what, "empty: give at least one datapoint index")
    indices = []
    for part in parts:
        if not part.lstrip("-").isdigit():
            raise SpecError(source, what, f"{part!r} is not an integer index")
        index = int(part)
        if not 0 <= index < bound:
            raise SpecError(source, what, f"index {index} out of range: there are {bound} datapoints (0..{bound - 1})")
        indices.append(index)
    return sorted(set(indices))


def _numeric_inputs(task, args):
    from gdln.numeric.prediction import TaskPredictions

    values = task.values(_overrides(args))
    inputs, _ = TaskPredictions(task).dataset([values[s] for s in task.parameters])
    return inputs


def cmd_realizable(args):
    from gdln.verify.realizability import realizable

    task = _load(args)
    pattern = _indices(args.pattern, "--pattern", task.num_datapoints, "pattern")
    ok, witness = realizable(_numeric_inputs(task, args), pattern)
    report = {"pattern": pattern, "realizable": ok, "witness": None if witness is None else [float(w) for w in witness]}
    _emit(
        report,
        args.json,
        lambda r: print(
            f"pattern {r['pattern']}: {'realizable, w = ' + str(r['witness']) if r['realizable'] else 'not realizable by one ReLU unit without bias'}"
        ),
    )


def cmd_lemma(args):
    import numpy as np

    from gdln.verify.realizability import MAX_LEMMA_DATAPOINTS, enumerate_patterns, pattern_classes

    task = _load(args)
    if task.num_datapoints > MAX_LEMMA_DATAPOINTS:
        raise SpecError(
            task.source,
            "data.inputs",
            f"{task.num_datapoints} datapoints; lemma enumerates at most {MAX_LEMMA_DATAPOINTS}",
        )
    inputs = np.asarray(_numeric_inputs(task, args))
    columns = (
        _indices(args.context_columns, "--context-columns", task.num_inputs, "context-columns")
        if args.context_columns
        else None
    )
    report = enumerate_patterns(inputs, pattern_classes(inputs, columns))
    _emit(
        report,
        args.json,
        lambda r: print(f"{r['realizable']} realizable patterns of {r['datapoints']} datapoints: {r['by_group']}"),
    )


def add_parser(sub) -> None:
    p = with_spec(sub, "realizable", "can one ReLU unit without bias be on exactly at these datapoints?")
    p.add_argument(
        "--pattern", required=True, metavar="I,J,...", help="datapoint indices (from 0) on which the gate is on"
    )
    p.set_defaults(run=cmd_realizable)
    p = with_spec(sub, "lemma", "enumerate and classify every realizable gate pattern (<= 16 datapoints)")
    p.add_argument("--context-columns", metavar="I,J,...", help="input columns that encode the context")
    p.set_defaults(run=cmd_lemma)
