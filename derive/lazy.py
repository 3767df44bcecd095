"""Packages whose names are imported on first use: `gdln --help` and `gdln --version` must not
pay for SymPy and JAX, which a package's eager re-exports would load the moment any one of its
modules (the errors, the limits) is imported."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__``: each name of ``exports`` (name ->
    the submodule that defines it, relative to ``package``) is imported when first looked up,
    then kept on the package so the lookup happens once."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
