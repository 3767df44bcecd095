"""The symbolic side of gdln, in rooms: :mod:`derive.spec` reads tasks (specs, expressions, graphs,
data files, limits); the algebra (``correlations``, ``modes``, ``algebraic``, ``derivation``,
``symmetry``, ``crossover``, ``staged``, ``shared``) builds exact SymPy objects from them;
:mod:`derive.latex` writes them for a paper; :mod:`derive.cache` keeps them on disk.

SymPy does the algebra. Floats enter only where a parameter-free block without radical form is
diagonalised at high precision (mpmath) and in the float64 derivation of large numeric data
(:mod:`derive.float_modes`, numpy's SVD); nothing here integrates or trains."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

#: public name -> the submodule that defines it, imported on first use (derive.lazy)
_EXPORTS = {
    "Crossover": ".crossover",
    "crossovers": ".crossover",
    "TAU": ".derivation",
    "TIME": ".derivation",
    "ModeRef": ".derivation",
    "NetworkDerivation": ".derivation",
    "PathwayDerivation": ".derivation",
    "DerivationError": ".errors",
    "GdlnError": ".errors",
    "SpecError": ".errors",
    "Mode": ".modes",
    "find_modes": ".modes",
    "vanishes": ".modes",
    "Network": ".spec",
    "Pathway": ".spec",
    "Task": ".spec",
    "Training": ".spec",
    "load_spec": ".spec",
    "parse_expression": ".spec",
    "task_from_dict": ".spec",
}

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

if TYPE_CHECKING:
    from .crossover import Crossover, crossovers
    from .derivation import TAU, TIME, ModeRef, NetworkDerivation, PathwayDerivation
    from .errors import DerivationError, GdlnError, SpecError
    from .modes import Mode, find_modes, vanishes
    from .spec import Network, Pathway, Task, Training, load_spec, parse_expression, task_from_dict

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
