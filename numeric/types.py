"""Array shapes of the numeric API (jaxtyping), named once.

``T`` is the number of sample times, ``modes`` the number of modes in ``derivation.mode_refs``
order, ``pathways`` the number of pathways, ``out``/``inp`` a pathway's output/input features.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxtyping import Array, ArrayLike, Float

#: epochs at which curves are sampled, shape ``(T,)``
Times = Float[ArrayLike, " T"]
#: parameter values in the order of ``derivation.parameters``
Values = Sequence[float]
#: one number (a 0-d array)
Scalar = Float[Array, ""]

__all__ = ["Array", "ArrayLike", "Float", "Scalar", "Times", "Values"]
