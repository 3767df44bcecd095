"""Modes (singular values and vectors) of effective datasets, found through structure.

No general symbolic SVD: the Gram matrix of the smaller side is split into the
connected blocks of its sparsity pattern; a block of rank one has its singular
vector in any non-zero column (exact, parametric); a parameter-free block is
diagonalised numerically with mpmath at high precision; a parametric 2x2 block
has a closed-form eigensystem. Anything else is reported, not guessed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import mpmath
import sympy

from .errors import DerivationError

PRECISION_DIGITS = 40
_SAMPLE_POINTS = 3


def vanishes(expr: sympy.Expr) -> bool:
    """Whether ``expr`` is identically zero for positive parameters.

    Tries exact expansion first; expressions with radicals that expansion does not
    cancel are evaluated at a few fixed random positive rational points to
    ``PRECISION_DIGITS`` digits (deterministic: the sampler has a fixed seed).
    """
    expr = sympy.expand(expr)
    if expr == 0:
        return True
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    sampler = random.Random(20250121)
    points = [{s: sympy.Rational(sampler.randint(11, 97), sampler.randint(7, 31)) for s in symbols} for _ in range(_SAMPLE_POINTS if symbols else 1)]
    for point in points:
        value = sympy.N(expr.subs(point), PRECISION_DIGITS)
        if not value.is_number or abs(value) > sympy.Float(10) ** (-(PRECISION_DIGITS - 10)):
            return False
    return True


@dataclass(frozen=True)
class Mode:
    """One mode of a pathway: ``Sigma_yx = sum s u v^T``, ``d = v^T Sigma_x v``."""

    s: sympy.Expr
    d: sympy.Expr
    u: sympy.ImmutableMatrix
    v: sympy.ImmutableMatrix
    exact: bool


def _blocks(gram: sympy.Matrix) -> list[list[int]]:
    size = gram.rows
    unseen, blocks = set(range(size)), []
    while unseen:
        stack = [min(unseen)]
        unseen.discard(stack[0])
        block = []
        while stack:
            i = stack.pop()
            block.append(i)
            for j in list(unseen):
                if gram[i, j] != 0:
                    unseen.discard(j)
                    stack.append(j)
        blocks.append(sorted(block))
    return blocks


def _rank_one(block: sympy.Matrix) -> bool:
    n = block.rows
    return all(vanishes(block[i, i] * block[j, j] - block[i, j] ** 2) for i in range(n) for j in range(i + 1, n))


def _eigenpairs(block: sympy.Matrix, where: str) -> list[tuple[sympy.Expr, sympy.Matrix, bool]]:
    """Non-zero eigenpairs (eigenvalue, eigenvector, exact) of a symmetric PSD block."""
    if block.rows == 1 or _rank_one(block):
        column = next(j for j in range(block.cols) if not vanishes(block[j, j]))
        return [(sympy.expand(block.trace()), block[:, column], True)]
    if not block.free_symbols:
        with mpmath.workdps(PRECISION_DIGITS):
            values, vectors = mpmath.eigsy(mpmath.matrix(block.evalf(PRECISION_DIGITS).tolist()))
            pairs = []
            scale = max(abs(v) for v in values)
            for k in range(block.rows):
                if abs(values[k]) > scale * mpmath.mpf(10) ** (-(PRECISION_DIGITS - 10)):
                    vector = sympy.Matrix([sympy.Float(vectors[i, k], PRECISION_DIGITS) for i in range(block.rows)])
                    pairs.append((sympy.Float(values[k], PRECISION_DIGITS), vector, False))
            return pairs
    if block.rows == 2:
        pairs = []
        for value, _, vectors in block.eigenvects(simplify=False):
            if not vanishes(value):
                pairs.extend((value, vec, True) for vec in vectors)
        return pairs
    raise DerivationError(
        f"{where}: a {block.rows}x{block.rows} parametric block of the effective correlations has no "
        "structure the derivation can use (not rank one, not parameter-free); fix the parameters "
        "with --set to derive it numerically"
    )


def _root(value: sympy.Expr, exact: bool) -> sympy.Expr:
    return sympy.sqrt(sympy.factor(value)) if exact else sympy.sqrt(value).evalf(PRECISION_DIGITS)


def _normalised(vector: sympy.Matrix, exact: bool) -> sympy.ImmutableMatrix:
    norm = _root(sympy.expand((vector.T * vector)[0, 0]), exact)
    return sympy.ImmutableMatrix((vector / norm).applyfunc(sympy.factor if exact else sympy.expand))


def find_modes(sigma_yx: sympy.Matrix, sigma_x: sympy.Matrix, where: str) -> list[Mode]:
    """The non-zero modes of one pathway's effective dataset."""
    rows, cols = sigma_yx.shape
    left = rows <= cols
    gram = (sigma_yx * sigma_yx.T if left else sigma_yx.T * sigma_yx).applyfunc(sympy.expand)
    modes = []
    for block_indices in _blocks(gram):
        block = gram.extract(block_indices, block_indices)
        if all(vanishes(e) for e in block):
            continue
        for value, block_vector, exact in _eigenpairs(block, where):
            vector = sympy.zeros(gram.rows, 1)
            for position, index in enumerate(block_indices):
                vector[index] = block_vector[position]
            if left:
                u_raw = vector
                v_raw = (sigma_yx.T * vector).applyfunc(sympy.expand)
            else:
                v_raw = vector
                u_raw = (sigma_yx * vector).applyfunc(sympy.expand)
            u, v = _normalised(u_raw, exact), _normalised(v_raw, exact)
            s = _root(value, exact)
            # d is a ratio of polynomials in the unnormalised vector: cancel keeps it exact and short
            d = (v_raw.T * sigma_x * v_raw)[0, 0] / (v_raw.T * v_raw)[0, 0]
            d = sympy.cancel(sympy.expand(d)) if exact else sympy.expand(d)
            modes.append(Mode(s=s, d=d, u=u, v=v, exact=exact))
    return modes


def eigen_residual(sigma_x: sympy.Matrix, mode: Mode) -> sympy.Matrix:
    """``Sigma_x v - d v``: zero exactly when ``v`` diagonalises ``Sigma_x`` (Assumption 2.1.1)."""
    return (sigma_x * mode.v - mode.d * mode.v).applyfunc(sympy.expand)
