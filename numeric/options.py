"""The options of a prediction as typed values: where it starts, how it runs in time, and the
dynamics it follows. Each member is its own text as well (a ``str``): JSON writes it as the text,
and a text given in its place (the CLI's flag, a caller's string) compares equal to it. This
module imports nothing heavy, so the CLI reads its flags onto these types without loading JAX.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Dynamics", "InitialConditions", "TimeModel"]


class InitialConditions(StrEnum):
    """Where the prediction of a trained network starts (``gdln verify --initial-conditions``).
    Each is its own text as well (a ``str``), so JSON and the CLI read it unchanged."""

    #: the end of the ReLU runs' alignment phase: each pathway from its settled units
    ALIGNMENT = "alignment"
    #: the runs' initial weights, projected on each pathway's modes
    WEIGHTS = "weights"
    #: each pathway from its width alone, ``a0 = units init_scale^2 / 2`` (the paper's race)
    WIDTH = "width"


class Dynamics(StrEnum):
    """The dynamics a prediction follows (``dynamics`` in the reports); each is its own text."""

    #: every mode's logistic in closed form (decoupled pathways)
    CLOSED_FORM = "closed form"
    #: the race ODE of the mode strengths, integrated (pathways that interact, no closed form)
    RACE_ODE = "race ODE"
    #: the exact reduced flow on each pathway's weight chain (where the mode strengths do not reduce)
    REDUCED_FLOW = "reduced flow"


class TimeModel(StrEnum):
    """How a prediction runs in time (``gdln verify --time``); each is its own text."""

    #: gradient descent at the training step, from the alignment phase
    GRADIENT_DESCENT = "gradient descent"
    #: gradient flow, time measured in epochs as ``t / tau``
    GRADIENT_FLOW = "gradient flow"
