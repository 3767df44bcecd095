"""How wide a formula prints, roughly, and where a long sum breaks: the LaTeX export
(:mod:`derive.latex`) puts formulas side by side, or splits them, by these estimates."""

from __future__ import annotations

import re

#: printed symbols on one line of a display: 16 cm at 10 pt is 455pt, and :func:`width` estimates
#: 4.5 to 5.9 pt per symbol on the documents of the Section 4-5 tasks and XoR (checked with pdflatex)
MAX_LINE = 78

_MARKUP = re.compile(r"\\(left|right|tfrac|frac|mathbf|operatorname|text|dot|tilde|hat|bar|,)(?![a-zA-Z])")
#: extra width, in symbols, of spacing commands and of the space around relations and commas
_SPACES = {"\\qquad": 4, "\\quad": 2, "=": 1, "\\approx": 1, "+": 1, "-": 1, ",": 0.3}
_BEGIN, _END = "\\begin{array}", "\\end{array}"


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside arrays."""
    parts, depth, start, position = [], 0, 0, 0
    while position < len(text):
        if text.startswith(_BEGIN, position):
            depth += 1
        elif text.startswith(_END, position):
            depth -= 1
        elif depth == 0 and text.startswith(separator, position):
            parts.append(text[start:position])
            start = position + len(separator)
            position = start
            continue
        position += 1
    parts.append(text[start:])
    return parts


def _group(text: str, start: int) -> int:
    """The position after the brace group that opens at ``start``."""
    depth = 0
    for position in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[position], 0)
        if depth == 0:
            return position + 1
    return len(text)


def _fractions(text: str) -> str:
    """Each ``\\frac{a}{b}`` replaced by the wider of ``a`` and ``b``."""
    while (match := re.search(r"\\t?frac\{", text)) is not None:
        numerator_end = _group(text, match.end() - 1)
        denominator_end = _group(text, numerator_end)
        numerator, denominator = text[match.end() : numerator_end - 1], text[numerator_end + 1 : denominator_end - 1]
        wider = numerator if _flat(numerator) >= _flat(denominator) else denominator
        text = text[: match.start()] + "{" + wider + "}" + text[denominator_end:]
    return text


_WIDE_COMMANDS = re.compile(r"\\(Sigma|Delta|Gamma|Lambda|Omega|Phi|Psi|Theta|Pi|Xi|sqrt|sum|approx)\b")


def _flat(text: str) -> float:
    text = _fractions(text)
    scripts = 0.0  # sub- and superscripts print at about 0.7 of the size
    while (match := re.search(r"[_^]", text)) is not None:
        start = match.start()
        end = _group(text, start + 1) if text[start + 1 : start + 2] == "{" else start + 2
        command = re.match(r"\\[a-zA-Z]+", text[start + 1 :])
        if command is not None:
            end = start + 1 + len(command.group(0))
        scripts += 0.7 * _flat(text[start + 1 : end].strip("{}"))
        text = text[:start] + text[end:]
    extra = sum(text.count(token) * size for token, size in _SPACES.items()) + 0.8 * text.count("\\left")
    text = _MARKUP.sub("", text.replace("\\qquad", "").replace("\\quad", ""))
    wide = len(_WIDE_COMMANDS.findall(text))
    text = _WIDE_COMMANDS.sub("", text)
    text = re.sub(r"\\[a-zA-Z]+", "x", text)
    text = re.sub(r"[{}\s]", "", text)
    capitals = sum(1 for ch in text if ch.isupper())
    return len(text) + 0.6 * capitals + 1.6 * wide + scripts + extra


def _line_width(text: str) -> float:
    total = 0.0
    while (start := text.find(_BEGIN)) >= 0:
        depth, position = 0, start
        while position < len(text):  # an array left open (a piece of a split line) ends the text
            if text.startswith(_BEGIN, position):
                depth += 1
            elif text.startswith(_END, position):
                depth -= 1
                if depth == 0:
                    break
            position += 1
        inner = text[text.index("}", text.index("}", start) + 1) + 1 : position]
        rows = [_split_top(row, "&") for row in _split_top(inner, "\\\\")]
        # each column has 5pt of space on either side: about two symbols
        total += _flat(text[:start]) + max(sum(_line_width(c) for c in cells) + 2.4 * len(cells) for cells in rows)
        text = text[position + len(_END) :]
    return total + _flat(text)


def width(tex: str) -> float:
    """A rough count of the symbols on the widest printed line of a formula: arrays by their widest
    row, fractions by both parts, every other command one symbol, spacing by its width."""
    return max(_line_width(line) for line in _split_top(tex, "\\\\"))


def split_sum(tex: str, limit: int = MAX_LINE) -> list[str]:
    """A long sum broken before its top-level ``+`` and ``-`` into lines of at most ``limit`` symbols
    (never inside an array: a sign in one of its cells is not at the top level)."""
    pieces, depth, start = [], 0, 0
    position = 0
    while position < len(tex):
        opening = re.match(r"\\(left|[bB]igg?l)\b", tex[position:]) or tex.startswith(_BEGIN, position)
        closing = re.match(r"\\(right|[bB]igg?r)\b", tex[position:]) or tex.startswith(_END, position)
        if opening or tex[position] == "{":
            depth += 1
        elif closing or tex[position] == "}":
            depth -= 1
        elif depth == 0 and position > start and tex[position] in "+-" and tex[position - 1] == " ":
            pieces.append(tex[start:position])
            start = position
        position += 1
    pieces.append(tex[start:])
    lines: list[str] = []
    for piece in pieces:
        if lines and width(lines[-1] + piece) <= limit:
            lines[-1] += piece
        else:
            lines.append(piece)
    return [line.strip() for line in lines]
