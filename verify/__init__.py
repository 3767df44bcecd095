"""Cross-checks of theory against trained networks, and the reports behind the CLI.

Predictions and their initial conditions live in :mod:`numeric.prediction` and
:mod:`numeric.initial_conditions`. Importing this package leaves JAX's precision alone: see
:func:`numeric.use_x64`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gdln.derive.lazy import lazy_exports

#: public name -> the submodule that defines it, imported on first use (derive.lazy)
_EXPORTS = {
    "derive_report": ".derivation_report",
    "verify_report": ".following",
    "race_report": ".race",
    "simulate_report": ".simulation",
}

__all__ = ["derive_report", "race_report", "simulate_report", "verify_report"]

if TYPE_CHECKING:
    from .derivation_report import derive_report
    from .following import verify_report
    from .race import race_report
    from .simulation import simulate_report

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
