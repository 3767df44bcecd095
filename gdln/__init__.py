"""gdln: exact learning dynamics of Gated Deep Linear Networks and the ReLU networks they imitate.

One import name, in layers that import one way only:
``gdln.cli -> gdln.figures -> gdln.verify -> gdln.numeric -> gdln.derive``.

- `gdln.derive` (SymPy): specs, effective correlations, modes, race ODEs, closed forms,
  crossovers and LaTeX, as exact expressions;
- `gdln.numeric` (JAX): the one hand-off to compiled functions, integration, training;
- `gdln.verify`: theory against trained networks, the reports behind the commands;
- `gdln.figures`: the papers' figures and the phase diagram.

The names below are the entry points most work starts from. They are imported on first use,
so ``import gdln`` is cheap and changes no global setting: call `use_x64` (the ``gdln``
command does) before computing, or work inside ``with x64(): ...``. The reports print nothing
while they work unless asked: ``with gdln.shown_progress(): ...`` shows their stages on stderr.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

#: public name -> the module that defines it
_EXPORTS = {
    "load_spec": "gdln.derive.spec",
    "task_from_dict": "gdln.derive.spec",
    "Task": "gdln.derive.spec",
    "NetworkDerivation": "gdln.derive.derivation",
    "StagedDerivation": "gdln.derive.staged",
    "crossovers": "gdln.derive.crossover",
    "SpecError": "gdln.derive.errors",
    "use_x64": "gdln.numeric.precision",
    "x64": "gdln.numeric.precision",
    "Prediction": "gdln.numeric.prediction",
    "TaskPredictions": "gdln.numeric.prediction",
    "derive_report": "gdln.verify.derivation_report",
    "race_report": "gdln.verify.race",
    "simulate_report": "gdln.verify.simulation",
    "verify_report": "gdln.verify.following",
    "sweep_report": "gdln.verify.sweep",
    "parse_axis": "gdln.verify.sweep",
    "Axis": "gdln.verify.sweep",
    "trained_points": "gdln.verify.sweep",
    "unique_report": "gdln.verify.uniqueness",
    "shown_progress": "gdln.verify.progress",
}

__all__ = [
    "Axis",
    "NetworkDerivation",
    "Prediction",
    "SpecError",
    "StagedDerivation",
    "Task",
    "TaskPredictions",
    "crossovers",
    "derive_report",
    "load_spec",
    "parse_axis",
    "race_report",
    "shown_progress",
    "simulate_report",
    "sweep_report",
    "task_from_dict",
    "trained_points",
    "unique_report",
    "use_x64",
    "verify_report",
    "x64",
]  # the keys of _EXPORTS (tested)

if TYPE_CHECKING:
    from gdln.derive.crossover import crossovers
    from gdln.derive.derivation import NetworkDerivation
    from gdln.derive.errors import SpecError
    from gdln.derive.spec import Task, load_spec, task_from_dict
    from gdln.derive.staged import StagedDerivation
    from gdln.numeric.precision import use_x64, x64
    from gdln.numeric.prediction import Prediction, TaskPredictions
    from gdln.verify.derivation_report import derive_report
    from gdln.verify.following import verify_report
    from gdln.verify.progress import shown_progress
    from gdln.verify.race import race_report
    from gdln.verify.simulation import simulate_report
    from gdln.verify.sweep import Axis, parse_axis, sweep_report, trained_points
    from gdln.verify.uniqueness import unique_report


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module 'gdln' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
