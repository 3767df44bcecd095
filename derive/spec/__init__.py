"""Reading a task: the spec layout and its validator, expressions, graphs of gated layers, data
files, the builders of the papers' tasks, and every limit a spec can meet.

Everything outside this package enters through the names re-exported here:

- ``reader``: :func:`load_spec`, :func:`task_from_dict` and the model they build
  (:class:`Task`, :class:`Training`, :class:`Network`, :class:`Pathway`);
- ``expressions``: the only reader of expressions in a spec (nothing in a spec is executed);
- ``graph``: networks written as graphs of gated nodes and edges;
- ``data_files``: inputs and targets from ``.npz`` or ``.csv`` files (``allow_pickle=False``);
- ``tasks``: the papers' tasks as spec dictionaries (context, routing, digits, Section 6, XoR);
- ``limits``: every size a spec can state, checked before any work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gdln.derive.lazy import lazy_exports

#: public name -> the submodule that defines it, imported on first use (derive.lazy)
_EXPORTS = {
    "EvaluationError": ".expressions",
    "evaluate": ".expressions",
    "parse_expression": ".expressions",
    "Graph": ".graph",
    "gate_at": ".graph",
    "module_graph": ".graph",
    "DATA_MAGNITUDE": ".limits",
    "MAX_ACTIVATIONS": ".limits",
    "MAX_EPOCHS": ".limits",
    "MAX_LOSS_VALUES": ".limits",
    "MAX_SEEDS": ".limits",
    "MAX_SWEEP_RUNS": ".limits",
    "MAX_SWEEP_TRAINING_RUNS": ".limits",
    "MAX_UNITS": ".limits",
    "MAX_WEIGHTS": ".limits",
    "Network": ".reader",
    "Pathway": ".reader",
    "Task": ".reader",
    "Training": ".reader",
    "load_spec": ".reader",
    "task_from_dict": ".reader",
    "training_value": ".reader",
    "STRUCTURES": ".tasks",
    "chain": ".tasks",
    "clusters": ".tasks",
    "context_subset_candidates": ".tasks",
    "context_task": ".tasks",
    "cross": ".tasks",
    "digits_routing_task": ".tasks",
    "digits_task": ".tasks",
    "hierarchy": ".tasks",
    "ring": ".tasks",
    "routing_task": ".tasks",
    "section6_task": ".tasks",
    "to_toml": ".tasks",
    "xor_task": ".tasks",
}

__all__ = [
    "DATA_MAGNITUDE",
    "MAX_ACTIVATIONS",
    "MAX_EPOCHS",
    "MAX_LOSS_VALUES",
    "MAX_SEEDS",
    "MAX_SWEEP_RUNS",
    "MAX_SWEEP_TRAINING_RUNS",
    "MAX_UNITS",
    "MAX_WEIGHTS",
    "STRUCTURES",
    "EvaluationError",
    "Graph",
    "Network",
    "Pathway",
    "Task",
    "Training",
    "chain",
    "clusters",
    "context_subset_candidates",
    "context_task",
    "cross",
    "digits_routing_task",
    "digits_task",
    "evaluate",
    "gate_at",
    "hierarchy",
    "load_spec",
    "module_graph",
    "parse_expression",
    "ring",
    "routing_task",
    "section6_task",
    "task_from_dict",
    "to_toml",
    "training_value",
    "xor_task",
]

if TYPE_CHECKING:
    from .expressions import EvaluationError, evaluate, parse_expression
    from .graph import Graph, gate_at, module_graph
    from .limits import (
        DATA_MAGNITUDE,
        MAX_ACTIVATIONS,
        MAX_EPOCHS,
        MAX_LOSS_VALUES,
        MAX_SEEDS,
        MAX_SWEEP_RUNS,
        MAX_SWEEP_TRAINING_RUNS,
        MAX_UNITS,
        MAX_WEIGHTS,
    )
    from .reader import Network, Pathway, Task, Training, load_spec, task_from_dict, training_value
    from .tasks import (
        STRUCTURES,
        chain,
        clusters,
        context_subset_candidates,
        context_task,
        cross,
        digits_routing_task,
        digits_task,
        hierarchy,
        ring,
        routing_task,
        section6_task,
        to_toml,
        xor_task,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
