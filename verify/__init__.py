"""Cross-checks of theory against trained networks, and the reports behind the CLI.

Predictions and their initial conditions live in :mod:`numeric.prediction` and
:mod:`numeric.initial_conditions`. Importing this package leaves JAX's precision alone: see
:func:`numeric.use_x64`.
"""

from .derivation_report import derive_report
from .following import verify_report
from .race import race_report
from .simulation import simulate_report

__all__ = ["derive_report", "race_report", "simulate_report", "verify_report"]
