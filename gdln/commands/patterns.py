"""What ``gdln realizable`` and ``gdln lemma`` share: datapoint indices from the command line and
the task's inputs at the given parameter values."""

from __future__ import annotations

from gdln.derive.errors import SpecError


def datapoint_indices(text: str, source: str, bound: int, what: str) -> list[int]:
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


def numeric_inputs(task, args):
    from gdln.numeric.prediction import TaskPredictions

    values = task.values()
    inputs, _ = TaskPredictions(task).dataset([values[s] for s in task.parameters])
    return inputs
