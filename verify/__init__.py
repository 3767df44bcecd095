"""Cross-checks of theory against trained networks, and the reports behind the CLI."""

import jax

jax.config.update("jax_enable_x64", True)

from .initial_conditions import expected_initial_strengths, relu_initial_strengths, unit_shares  # noqa: E402
from .models import TaskModels  # noqa: E402
from .reports import derive_report, race_report, simulate_report, verify_report  # noqa: E402

__all__ = [
    "TaskModels",
    "derive_report",
    "expected_initial_strengths",
    "race_report",
    "relu_initial_strengths",
    "simulate_report",
    "unit_shares",
    "verify_report",
]
