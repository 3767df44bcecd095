"""Counts and lists in words, one way everywhere: the terminal text, the progress stages and the
LaTeX export use these (``"3 seeds"``, ``"a, b and c"``)."""

from __future__ import annotations

from collections.abc import Sequence


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 output"``, ``"3 outputs"``."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def join(items: Sequence[str], last: str = "and") -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]
