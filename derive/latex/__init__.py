"""LaTeX export of derivations, entered through one function, :func:`to_latex`.

The modules behind it: ``writer`` (the order of the paper's Appendices F and G), ``dynamics``
(reduced system, closed forms, loss, speed), ``matrices`` (structured matrices and named
blocks), ``document`` (numbering and the page), ``text`` and ``width`` (words and line widths).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .writer import derivation_latex, staged_latex

if TYPE_CHECKING:
    from ..crossover import Crossover
    from ..derivation import NetworkDerivation
    from ..staged import StagedDerivation

__all__ = ["to_latex"]


def to_latex(
    derived: NetworkDerivation | StagedDerivation, crossovers: Sequence[Crossover] = (), *, document: bool = False
) -> str:
    """The LaTeX of a derivation.

    Parameters:
        derived: a :class:`NetworkDerivation` (paper Appendix G) or a :class:`StagedDerivation`
            (Appendix F: the first pathway alone, then the others on its residual).
        crossovers: crossovers of a network derivation with the others, written in its speed
            section (a staged derivation has none).
        document: wrap the body into a document that plain ``pdflatex`` compiles; otherwise the
            body, to ``\\input`` into an article with ``amsmath``.

    Returns:
        The LaTeX text.
    """
    from ..staged import StagedDerivation

    if isinstance(derived, StagedDerivation):
        if crossovers:
            raise ValueError("a staged derivation is written without crossovers")
        return staged_latex(derived, document=document)
    return derivation_latex(derived, crossovers, document=document)
