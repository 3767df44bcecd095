"""Words for the LaTeX export (:mod:`derive.latex`): escaping, plurals, lists and index ranges,
and the derivation's assumption messages restated in words (no Python reprs)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..words import join

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "{": r"\{",
    "}": r"\}",
    "~": r"\~{}",
    "^": r"\^{}",
}


def escape_text(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def name(text: str) -> str:
    """A pathway's or a network's name, as it reads in text and in math."""
    return "\\textsf{" + escape_text(text) + "}"


def ranges(indices: Iterable[int], base: int = 1) -> str:
    """Sorted indices as ranges, counted from ``base``: ``[0, 1, 2, 5] -> "1--3, 6"``."""
    values = sorted(set(indices))
    runs: list[list[int]] = []
    for i in values:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = []
    for run in runs:
        first, last = run[0] + base, run[-1] + base
        if first == last:
            parts.append(str(first))
        elif last == first + 1:
            parts.extend([str(first), str(last)])
        else:
            parts.append(f"{first}--{last}")
    return join(parts)


def counted(word: str, indices: Sequence[int], words: str | None = None) -> str:
    """``"row 3"``, ``"rows 1--8"``."""
    return f"{word if len(indices) == 1 else (words or word + 's')} {ranges(indices)}"


_DIAGONALISATION = re.compile(r"^pathway (['\"])(?P<name>.*)\1 mode (?P<mode>\d+): ")
_QUOTED = re.compile(r"(['\"])([^'\"]*)\1")
_LIST = re.compile(r"\[([^\]]*)\]")


def diagonalisation_failures(failures: Sequence[str]) -> tuple[dict[str, list[int]], list[str]]:
    """The derivation's Assumption 2.1.1 failures as ``{pathway: [mode, ...]}`` (modes from 0),
    and any message not of that form."""
    found: dict[str, list[int]] = {}
    other = []
    for failure in failures:
        match = _DIAGONALISATION.match(failure)
        if match:
            found.setdefault(match["name"], []).append(int(match["mode"]))
        else:
            other.append(failure)
    return found, other


_DRIVES = re.compile(
    r"^pathway (['\"])(?P<pathway>.*)\1: class (?P<j>\d+) of group \[(?P<group>[^\]]*)\] "
    r"drives it outside its own singular vectors$"
)


def in_words(message: str, numbers: dict[str, int] | None = None) -> str:
    """A derivation message in LaTeX text: pathways by their number in the document (``numbers``)
    or their name in sans serif, lists of names joined in words, classes and modes counted from 1
    (as the document counts them), ``Sigma`` as math."""
    numbers = numbers or {}
    drives = _DRIVES.match(message)
    if drives:
        group = [m.group(2) for m in _QUOTED.finditer(drives["group"])]
        sources = [str(numbers[n]) if n in numbers else name(n) for n in group]
        target = str(numbers[drives["pathway"]]) if drives["pathway"] in numbers else name(drives["pathway"])
        return (
            f"the modes of class {int(drives['j']) + 1} of {'pathway' if len(group) == 1 else 'pathways'} "
            f"{join(sources)} drive pathway {target} outside its own singular vectors"
        )

    def quoted(text: str) -> str:
        return f"\x05{numbers[text]}\x06" if text in numbers else f"\x01{text}\x02"

    def names_of(match: re.Match) -> str:
        inner = [m.group(2) for m in _QUOTED.finditer(match.group(1))]
        return "\x00" + join([quoted(n) for n in inner]) + "\x00" if inner else match.group(0)

    text = _LIST.sub(names_of, message)
    text = _QUOTED.sub(lambda m: quoted(m.group(2)), text)
    text = re.sub(r"\b(class|mode) (\d+)\b", lambda m: f"{m.group(1)} {int(m.group(2)) + 1}", text)
    text = text.replace("Sigma_yx", "\x03yx\x04").replace("Sigma_x", "\x03x\x04")
    text = escape_text(text.replace("\x00", ""))
    text = text.replace("\x01", "\\textsf{").replace("\x02", "}").replace("\x05", "").replace("\x06", "")
    return text.replace("\x03", "$\\Sigma^{").replace("\x04", "}$")
