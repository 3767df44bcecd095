"""Regenerate the papers' figures: ``gdln figures [--quick] [--out DIR]``."""

from __future__ import annotations

import os
from pathlib import Path

from gdln.derive.errors import SpecError
from gdln.verify.progress import progress

from .context_figures import figure3, figure4, figure5
from .figure2 import figure2
from .figure6 import figure6
from .gate_figures import figure8, figure9
from .routing_figures import routing_figure

FIGURES = {
    "figure2": figure2,
    "figure3": figure3,
    "figure4": figure4,
    "figure5": figure5,
    "figure6": figure6,
    "figure8": figure8,
    "figure9": figure9,
    "routing": routing_figure,
}

__all__ = [
    "FIGURES",
    "figure2",
    "figure3",
    "figure4",
    "figure5",
    "figure6",
    "figure8",
    "figure9",
    "output_folder",
    "regenerate",
    "routing_figure",
]


def output_folder(out: Path) -> Path:
    """Make the output folder (and its parents), or say in one line why it cannot be made."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SpecError(str(out), "--out", "exists and is not a folder") from None
    except OSError as error:
        raise SpecError(str(out), "--out", f"cannot create folder: {error.strerror or error}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise SpecError(str(out), "--out", "folder is not writable")
    return out


def regenerate(out: Path, quick: bool = False) -> list[Path]:
    """Write every figure as PNG into ``out`` (each atomically); returns the paths written. Each
    figure is a stage of the progress on stderr (a line each where stderr is not a terminal)."""
    output_folder(out)
    return [make(out, quick=quick) for _, make in progress(FIGURES.items(), "figures", label=lambda item: item[0])]
