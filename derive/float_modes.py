"""The floating-point derivation, for large parameter-free numeric data (real datasets).

Exact modes of real data are roots of characteristic polynomials of high degree whose
coefficients run to hundreds of digits (ten digit classes: a degree-10 ``CRootOf`` per singular
value, a minute of SymPy): nothing a reader can use, and slow. Above
:data:`FLOAT_DERIVATION_ENTRIES` data entries, parameter-free data is therefore derived in
float64: the effective correlations are gated sums in numpy and the modes an SVD of
``Sigma_yx`` (numpy's LAPACK). Everything downstream (couplings, symmetric groups, the race
ODEs) is the same SymPy code on ``Float`` entries, where :func:`derive.modes.vanishes` compares
with :data:`derive.modes.FLOAT_ZERO`. The derivation says so in its ``assumptions``
(``"arithmetic": "float"``).
"""

from __future__ import annotations

import numpy as np
import sympy

from .modes import FLOAT_ZERO, Mode
from .spec import Pathway, Task

#: Parameter-free data with more than this many input entries (datapoints x input features) is
#: derived in floating point. The paper's tasks stay exact (Section 5 with K = 5 has 520); 3 digit
#: classes of 50 images (8250 entries) take 23 s exactly and give cubic ``CRootOf`` values of
#: 40-digit coefficients, 10 classes of 20 images 67 s and degree-10 ones.
FLOAT_DERIVATION_ENTRIES = 4096

#: Relative tolerance below which a singular value is zero, and two singular values are one
#: (degenerate) value: ``numpy.linalg.matrix_rank``'s default scale, with room for rounding.
RELATIVE_TOLERANCE = 1e-10


def derives_in_floats(task: Task) -> bool:
    """Whether ``task`` is derived in float64 (see :data:`FLOAT_DERIVATION_ENTRIES`)."""
    return not task.parameters and task.num_datapoints * task.num_inputs > FLOAT_DERIVATION_ENTRIES


# One float copy of the data per task: the correlations of every pathway pair read it. Keyed by
# the identity of the data matrices, kept alive by the entry itself.
_FLOAT_DATA: dict[tuple[int, int], tuple[object, object, np.ndarray, np.ndarray]] = {}


def float_data(task: Task) -> tuple[np.ndarray, np.ndarray]:
    """``(inputs, targets)`` of a parameter-free task as float64 arrays."""
    key = (id(task.inputs), id(task.targets))
    entry = _FLOAT_DATA.get(key)
    if entry is None or entry[0] is not task.inputs or entry[1] is not task.targets:
        if len(_FLOAT_DATA) >= 8:
            _FLOAT_DATA.clear()
        inputs = np.array(task.inputs.tolist(), dtype=np.float64).reshape(task.num_datapoints, task.num_inputs)
        targets = np.array(task.targets.tolist(), dtype=np.float64).reshape(task.num_datapoints, task.num_outputs)
        entry = _FLOAT_DATA[key] = (task.inputs, task.targets, inputs, targets)
    return entry[2], entry[3]


def float_sigma_yx(task: Task, pathway: Pathway) -> np.ndarray:
    """``<g_p y[outputs] x[inputs]^T>`` in float64 (THEORY Eq. 4)."""
    inputs, targets = float_data(task)
    rows = list(pathway.active)
    x = inputs[np.ix_(rows, list(pathway.inputs))]
    y = targets[np.ix_(rows, list(pathway.outputs))]
    return y.T @ x / task.num_datapoints


def float_sigma_x(task: Task, pathway_j: Pathway, pathway_p: Pathway) -> np.ndarray:
    """``<g_j g_p x[inputs_j] x[inputs_p]^T>`` in float64."""
    inputs, _ = float_data(task)
    rows = sorted(set(pathway_j.active) & set(pathway_p.active))
    xj = inputs[np.ix_(rows, list(pathway_j.inputs))]
    xp = inputs[np.ix_(rows, list(pathway_p.inputs))]
    return xj.T @ xp / task.num_datapoints


def float_target_power(task: Task) -> float:
    _, targets = float_data(task)
    return float(np.sum(targets**2) / task.num_datapoints)


def as_sympy(array: np.ndarray) -> sympy.ImmutableMatrix:
    """A float64 array as a SymPy matrix of double-precision ``Float`` (exact zeros stay ``0``)."""
    array = np.atleast_2d(array)
    return sympy.ImmutableMatrix(
        array.shape[0], array.shape[1], [sympy.Float(float(e)) if e != 0 else sympy.Integer(0) for e in array.flat]
    )


def float_modes(sigma_yx: np.ndarray, sigma_x: np.ndarray) -> list[Mode]:
    """The non-zero modes of one pathway's effective dataset from numpy's SVD, ``kind = "float"``.

    Within a degenerate singular value the basis is rotated so that it also diagonalises
    ``Sigma_x`` there (the float counterpart of the exact route's refinement): the SVD's choice
    inside a degenerate space is arbitrary, the race reduction's is not."""
    u, s, vt = np.linalg.svd(sigma_yx, full_matrices=False)
    if s.size == 0 or s[0] <= FLOAT_ZERO:
        return []
    keep = s > RELATIVE_TOLERANCE * max(sigma_yx.shape) * s[0]
    u, s, v = u[:, keep], s[keep], vt[keep].T
    start = 0
    while start < s.size:
        stop = start + 1
        while stop < s.size and s[start] - s[stop] <= RELATIVE_TOLERANCE * max(sigma_yx.shape) * s[0]:
            stop += 1
        if stop - start > 1:
            block = v[:, start:stop]
            _, rotation = np.linalg.eigh(block.T @ sigma_x @ block)
            v[:, start:stop] = block @ rotation
            u[:, start:stop] = u[:, start:stop] @ rotation
            s[start:stop] = np.mean(s[start:stop])
        start = stop
    modes = []
    for k in range(s.size):
        # a fixed sign (LAPACK's is arbitrary): the first non-zero entry of u is positive
        sign = np.sign(u[np.flatnonzero(np.abs(u[:, k]) > FLOAT_ZERO)[0], k])
        u_k, v_k = u[:, k] * sign, v[:, k] * sign
        d = float(v_k @ sigma_x @ v_k)
        modes.append(
            Mode(
                s=sympy.Float(float(s[k])),
                d=sympy.Float(d),
                u=as_sympy(u_k[:, None]),
                v=as_sympy(v_k[:, None]),
                kind="float",
                u_raw=as_sympy(u_k[:, None]),
                v_raw=as_sympy(v_k[:, None] * s[k]),
                raw_norm2=sympy.Integer(1),
            )
        )
    return modes
