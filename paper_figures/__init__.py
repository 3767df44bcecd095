"""Regenerate the papers' figures: ``gdln figures [--quick] [--out DIR]``."""

from __future__ import annotations

from pathlib import Path

from .context_figures import figure3, figure4, figure5
from .figure2 import figure2

FIGURES = {"figure2": figure2, "figure3": figure3, "figure4": figure4, "figure5": figure5}

__all__ = ["FIGURES", "figure2", "figure3", "figure4", "figure5", "regenerate"]


def regenerate(out: Path, quick: bool = False) -> list[Path]:
    """Write every figure as PNG into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    return [make(out, quick=quick) for make in FIGURES.values()]
