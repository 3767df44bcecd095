"""The symbols every derivation shares: time ``t`` in epochs, and ``tau = 1/learning_rate``."""

import sympy

TIME = sympy.Symbol("t", nonnegative=True)
TAU = sympy.Symbol("tau", positive=True)
