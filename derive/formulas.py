"""Closed forms of the race reduction, written once with the array backend injected.

The closed forms take ``xp``: the ``sympy`` module for derivations, ``jax.numpy``
(or ``numpy``) for numbers, so the symbolic and numeric versions cannot drift apart. The
initial strengths (:func:`expected_initial_strength`, :func:`initial_strength_from_weights`)
are numbers only and take none. Conventions follow THEORY.md: ``tau = 1/learning_rate`` so ``t``
counts epochs; a mode has singular value ``s``, input variance ``d`` and
strength ``a`` (the product of its balanced layer strengths).
"""

from __future__ import annotations


def depth_exponent(depth: int, xp):
    """Exponent ``2 - 2/D`` of ``a`` in the race ODE of a depth-``D`` balanced pathway."""
    if xp.__name__ == "sympy":
        return 2 - xp.Rational(2, depth)
    return 2.0 - 2.0 / depth


def mode_rate(a, drive, depth: int, tau, xp):
    """``da/dt`` of one mode: ``tau da/dt = D a^(2 - 2/D) * drive``.

    ``drive`` is ``s - d a`` for a lone mode and ``s - sum_j overlap_j a_j`` when
    modes of other pathways share its datapoints and outputs.
    """
    exponent = depth_exponent(depth, xp)
    growth = a if exponent == 1 else a**exponent
    return depth * growth * drive / tau


def mode_strength(s, d, a0, t, tau, xp):
    """Closed-form strength of a lone depth-2 mode (THEORY Eq. 7, paper Eq. 7)."""
    return (s / d) / (1 + (s / (d * a0) - 1) * xp.exp(-2 * s * t / tau))


def expected_initial_strength(units, init_scale):
    """Expected effective ``a0`` of a mode served by ``units`` hidden units with i.i.d.
    weight entries of standard deviation ``init_scale`` (THEORY section 2)."""
    return units * init_scale**2 / 2


def initial_strength_from_weights(output_projection, input_projection, weight):
    """Effective ``a0 = sum_i w_i (b_i + c_i)^2 / 4`` after silent alignment, where
    ``b_i = u . W2[:, i]``, ``c_i = W1[i, :] . v`` and ``w_i`` the share of unit ``i``."""
    return (weight * (output_projection + input_projection) ** 2 / 4).sum()
