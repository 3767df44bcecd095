"""JAX side of gdln: compiled closed forms, ODE integration, and network training.

Computations are meant for 64-bit JAX; importing this package does not switch it on. Call
:func:`use_x64` (the CLI does) or work inside ``with x64(): ...``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gdln.derive.lazy import lazy_exports

#: public name -> the submodule that defines it, imported on first use (derive.lazy)
_EXPORTS = {
    "compile_expressions": ".compile",
    "generate_ode_function": ".compile",
    "NumericDataset": ".data",
    "Dynamics": ".options",
    "InitialConditions": ".options",
    "TimeModel": ".options",
    "GraphLayout": ".graph_network",
    "graph_flow_losses": ".graph_network",
    "graph_layout": ".graph_network",
    "path_flow": ".graph_network",
    "train_graph": ".graph_network",
    "integrate_ode": ".integrate",
    "use_x64": ".precision",
    "x64": ".precision",
    "Prediction": ".prediction",
    "TaskPredictions": ".prediction",
    "CompiledNetwork": ".race",
    "crossing_time": ".race",
    "GdlnLayout": ".training",
    "gdln_layout": ".training",
    "train_gdln": ".training",
    "train_relu": ".training",
}

__all__ = [
    "CompiledNetwork",
    "Dynamics",
    "GdlnLayout",
    "GraphLayout",
    "InitialConditions",
    "NumericDataset",
    "Prediction",
    "TaskPredictions",
    "TimeModel",
    "compile_expressions",
    "crossing_time",
    "gdln_layout",
    "generate_ode_function",
    "graph_flow_losses",
    "graph_layout",
    "integrate_ode",
    "path_flow",
    "train_gdln",
    "train_graph",
    "train_relu",
    "use_x64",
    "x64",
]

if TYPE_CHECKING:
    from .compile import compile_expressions, generate_ode_function
    from .data import NumericDataset
    from .graph_network import GraphLayout, graph_flow_losses, graph_layout, path_flow, train_graph
    from .integrate import integrate_ode
    from .options import Dynamics, InitialConditions, TimeModel
    from .precision import use_x64, x64
    from .prediction import Prediction, TaskPredictions
    from .race import CompiledNetwork, crossing_time
    from .training import GdlnLayout, gdln_layout, train_gdln, train_relu

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
