"""Effective datasets of pathways (THEORY Eq. 4), kept exact (in float64 for large numeric
data, see :mod:`derive.float_modes`).

A pathway sees only its active datapoints, its input features and its target
features. Correlations are averages over all N datapoints, gated: ``<g_p y x^T>``.
"""

from __future__ import annotations

import sympy

from .float_modes import as_sympy, derives_in_floats, float_sigma_x, float_sigma_yx, float_target_power
from .spec import Pathway, Task


def _tidy(matrix: sympy.Matrix) -> sympy.ImmutableMatrix:
    return sympy.ImmutableMatrix(matrix.applyfunc(sympy.expand))


def sigma_yx(task: Task, pathway: Pathway) -> sympy.ImmutableMatrix:
    """``Sigma_yx(p) = < g_p y[outputs] x[inputs]^T >``, shape (|outputs|, |inputs|)."""
    if derives_in_floats(task):
        return as_sympy(float_sigma_yx(task, pathway))
    total = sympy.zeros(len(pathway.outputs), len(pathway.inputs))
    for n in pathway.active:
        y = task.targets[n, list(pathway.outputs)].T
        x = task.inputs[n, list(pathway.inputs)]
        total += y * x
    return _tidy(total / task.num_datapoints)


def sigma_x(task: Task, pathway_j: Pathway, pathway_p: Pathway) -> sympy.ImmutableMatrix:
    """``Sigma_x(j, p) = < g_j g_p x[inputs_j] x[inputs_p]^T >``, shape (|inputs_j|, |inputs_p|)."""
    if derives_in_floats(task):
        return as_sympy(float_sigma_x(task, pathway_j, pathway_p))
    total = sympy.zeros(len(pathway_j.inputs), len(pathway_p.inputs))
    for n in sorted(set(pathway_j.active) & set(pathway_p.active)):
        xj = task.inputs[n, list(pathway_j.inputs)].T
        xp = task.inputs[n, list(pathway_p.inputs)]
        total += xj * xp
    return _tidy(total / task.num_datapoints)


def output_overlap(pathway_j: Pathway, pathway_p: Pathway) -> sympy.ImmutableMatrix:
    """``E_j^T E_p``: which target features of ``p`` are also written by ``j`` (|out_j| x |out_p|)."""
    return sympy.ImmutableMatrix(
        len(pathway_j.outputs), len(pathway_p.outputs), lambda a, b: int(pathway_j.outputs[a] == pathway_p.outputs[b])
    )


def target_power(task: Task) -> sympy.Expr:
    """``tr <y y^T>``: twice the loss of a network that outputs zero."""
    if derives_in_floats(task):
        return sympy.Float(float_target_power(task))
    return sympy.expand(
        sum((task.targets[n, :] * task.targets[n, :].T)[0, 0] for n in range(task.num_datapoints)) / task.num_datapoints
    )
