"""Symbolic side of gdln (SymPy only): specs, effective datasets, modes, race ODEs,
closed forms, crossovers and LaTeX. Nothing here computes floating-point numbers
except where a parameter-free block is diagonalised at high precision, and in the float64
derivation of large numeric data (:mod:`derive.float_modes`, numpy's SVD)."""

from .crossover import Crossover, crossovers
from .derivation import TAU, TIME, ModeRef, NetworkDerivation, PathwayDerivation
from .errors import DerivationError, GdlnError, SpecError
from .expressions import parse_expression
from .modes import Mode, find_modes, vanishes
from .spec import Network, Pathway, Task, Training, load_spec, task_from_dict

__all__ = [
    "Crossover",
    "DerivationError",
    "GdlnError",
    "Mode",
    "ModeRef",
    "Network",
    "NetworkDerivation",
    "Pathway",
    "PathwayDerivation",
    "SpecError",
    "TAU",
    "TIME",
    "Task",
    "Training",
    "crossovers",
    "find_modes",
    "load_spec",
    "parse_expression",
    "task_from_dict",
    "vanishes",
]
