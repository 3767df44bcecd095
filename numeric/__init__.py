"""JAX side of gdln: compiled closed forms, ODE integration, and network training (64-bit)."""

import jax

jax.config.update("jax_enable_x64", True)

from .compile import compile_expressions, generate_ode_function  # noqa: E402
from .data import NumericDataset  # noqa: E402
from .integrate import integrate_ode  # noqa: E402
from .race import CompiledNetwork, crossing_time  # noqa: E402
from .training import GdlnLayout, gdln_layout, train_gdln, train_relu  # noqa: E402

__all__ = [
    "CompiledNetwork",
    "GdlnLayout",
    "NumericDataset",
    "compile_expressions",
    "crossing_time",
    "gdln_layout",
    "generate_ode_function",
    "integrate_ode",
    "train_gdln",
    "train_relu",
]
