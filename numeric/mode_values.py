"""Every mode of a pathway at many parameter points at once, in float64 on the host.

A sweep asks for each pathway's modes ``(s, d, u, v)`` at every grid point; a derivation with
implicit roots (:mod:`derive.implicit`) writes an implicit mode's ``u``, ``v`` and ``d`` as long
expressions in its root, and lambdifying and compiling those took most of a sweep's time
(20 s of 47 on the three-context spec). Here the numbers come from the exact object in its
shortest form, for all points in one call:

- a mode with an implicit root ``r`` (``s = sqrt(r)``) is its unnormalised vector on the side of
  the Gram block (a column of ``adj(zI - B)``, a polynomial in ``r`` with coefficients in the
  parameters), written once per polynomial for a generic root and evaluated at each root, each
  root from its polynomial at every point (:func:`derive.implicit.root_evaluator`); normalised
  in float64, the other side's vector is ``Sigma_yx^T u / s`` (or ``Sigma_yx v / s``) and
  ``d = v^T Sigma_x v``, with the pathway's correlations at the point. These are the
  derivation's own formulas (``u = u_raw / |u_raw|``, ``v_raw = Sigma_yx^T u_raw`` reduced modulo
  the root's polynomial, which changes nothing at the root);
- every other mode is its closed forms, lambdified as they are.

Nothing is compiled by XLA (:func:`numeric.compile.compile_expressions` with numpy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gdln.derive import implicit
from gdln.derive.derivation import PathwayDerivation

from .compile import compile_expressions


@dataclass(frozen=True)
class ModeArrays:
    """One pathway's modes at ``points`` parameter points, in the order of the derivation:
    ``s`` and ``d`` ``(points, modes)``, ``u`` ``(points, outputs, modes)``, ``v``
    ``(points, inputs, modes)``."""

    s: np.ndarray
    d: np.ndarray
    u: np.ndarray
    v: np.ndarray


class PathwayModeValues:
    """``f(values) -> ModeArrays`` for one pathway, ``values`` ``(points, parameters)`` in the
    order of ``parameters``; lambdified once (see the module docstring)."""

    def __init__(self, derived: PathwayDerivation, parameters, name: str, cache_key: str | None = None):
        self.outputs, self.inputs = derived.sigma_yx.shape
        self.count = len(derived.modes)
        self.parameters = list(parameters)
        #: Gram block on the output side (``Sigma_yx Sigma_yx^T``) where there are no more outputs than inputs
        self.left = self.outputs <= self.inputs
        implicit_modes = [k for k, m in enumerate(derived.modes) if m.kind == "implicit"]
        self.closed = [k for k in range(self.count) if k not in implicit_modes]
        closed_exprs = [e for k in self.closed for m in (derived.modes[k],) for e in (m.s, m.d, *m.u, *m.v)]
        self._closed = (
            compile_expressions(closed_exprs, self.parameters, f"{name}.closed", cache_key=cache_key, backend="numpy")
            if closed_exprs
            else None
        )
        self._correlations = None
        # implicit modes: one function per distinct generic vector, evaluated at each of its roots
        self._generic: list[tuple[Callable, Callable, list[int]]] = []
        if implicit_modes:
            self._correlations = compile_expressions(
                [*derived.sigma_yx, *derived.sigma_x], self.parameters, f"{name}.correlations", backend="numpy"
            )
            by_vector: dict[tuple, list[tuple[int, implicit.ParametricRoot]]] = {}
            for k in implicit_modes:
                mode = derived.modes[k]
                (root,) = implicit.roots_in(mode.s)
                side = mode.u_raw if self.left else mode.v_raw
                assert side is not None  # an implicit mode keeps its raw vectors
                generic = tuple(e.xreplace({root: implicit.VARIABLE}) for e in side)
                by_vector.setdefault((root.polynomial, generic), []).append((k, root))
            for (_, generic), members in by_vector.items():
                vector = compile_expressions(
                    list(generic), [*self.parameters, implicit.VARIABLE], f"{name}.generic", backend="numpy"
                )
                roots = implicit.root_evaluator([root for _, root in members], self.parameters, "numpy")
                self._generic.append((vector, roots, [k for k, _ in members]))

    def __call__(self, values) -> ModeArrays:
        values = np.atleast_2d(np.asarray(values, dtype=np.float64))
        points = len(values)
        columns = list(values.T)
        s, d = np.zeros((points, self.count)), np.zeros((points, self.count))
        u, v = np.zeros((points, self.outputs, self.count)), np.zeros((points, self.inputs, self.count))
        if self._closed is not None:
            flat = _per_point(self._closed(*columns), points)
            size = 2 + self.outputs + self.inputs
            for position, k in enumerate(self.closed):
                block = flat[:, position * size : (position + 1) * size]
                s[:, k], d[:, k] = block[:, 0], block[:, 1]
                u[:, :, k] = block[:, 2 : 2 + self.outputs]
                v[:, :, k] = block[:, 2 + self.outputs :]
        if self._generic:
            assert self._correlations is not None
            flat = _per_point(self._correlations(*columns), points)
            split = self.outputs * self.inputs
            sigma_yx = flat[:, :split].reshape(points, self.outputs, self.inputs)
            sigma_x = flat[:, split:].reshape(points, self.inputs, self.inputs)
            with np.errstate(all="ignore"):  # a point where a block degenerates is NaN: its caller says so
                for vector, roots, modes in self._generic:
                    for k, root in zip(modes, roots(*columns)):
                        root = np.broadcast_to(root, (points,))
                        raw = _per_point(vector(*columns, root), points)
                        unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
                        s[:, k] = np.sqrt(root)
                        if self.left:  # u is the Gram side: v = Sigma_yx^T u / s
                            u[:, :, k] = unit
                            v[:, :, k] = np.einsum("poi,po->pi", sigma_yx, unit) / s[:, k, None]
                        else:  # v is the Gram side: u = Sigma_yx v / s
                            v[:, :, k] = unit
                            u[:, :, k] = np.einsum("poi,pi->po", sigma_yx, unit) / s[:, k, None]
                        d[:, k] = np.einsum("pi,pij,pj->p", v[:, :, k], sigma_x, v[:, :, k])
        return ModeArrays(s, d, u, v)


def _per_point(flat, points: int) -> np.ndarray:
    """Values of a compiled list of expressions ``(expressions, *shape)``, with ``shape`` ``()``
    where none depends on the point, as ``(points, expressions)``."""
    flat = np.asarray(flat, dtype=np.float64)
    return np.broadcast_to(flat.reshape(flat.shape[0], -1), (flat.shape[0], points)).T


def pathway_mode_values(derived: PathwayDerivation, parameters, name: str, cache_key: str | None = None):
    """The :class:`PathwayModeValues` of ``derived`` (one per pathway and parameters in a process:
    networks that share a pathway share it)."""
    key = (derived.sigma_yx, derived.sigma_x, derived.modes, tuple(parameters))
    if key not in _KNOWN:
        _KNOWN[key] = PathwayModeValues(derived, parameters, name, cache_key)
    return _KNOWN[key]


_KNOWN: dict[tuple, PathwayModeValues] = {}
