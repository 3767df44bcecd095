"""Progress of gdln's long work on stderr: tqdm bars on a terminal, one line per stage anywhere else.

A log file, a pipe or a CI job gets a line as each stage begins (``figures 3/8: figure4 [41 s]``),
so a long command is never silent there; a terminal gets bars that vanish when the work is done.
Nested work (the race inside a figure) is indented under the stage it belongs to. Every loop that
reports progress goes through `progress`, and straight-line stages through `Stages`.

Progress is off unless asked for: a report called from Python prints nothing, the ``gdln``
command shows its stages inside ``with shown_progress():``, and a ``stream`` passed to
`Stages` or `progress` asks for progress there.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, TypeVar

from tqdm import tqdm

T = TypeVar("T")

#: the work now under way, outermost first: its depth indents nested lines (weak: work abandoned
#: by an exception leaves it when it is collected)
_OPEN: list[weakref.ref[Stages]] = []


#: whether work reports progress on stderr: the one switch, off for the library, on for the CLI
_SHOWN = [False]


@contextmanager
def shown_progress(shown: bool = True) -> Iterator[None]:
    """Inside the block, long work reports its stages on stderr.

    Args:
        shown: whether it does (``False`` silences the work inside a block that shows it).

    Returns:
        A context manager: ``with shown_progress(): report = gdln.race_report(task)``.
    """
    before = _SHOWN[0]
    _SHOWN[0] = shown
    try:
        yield
    finally:
        _SHOWN[0] = before


def _depth() -> int:
    _OPEN[:] = [ref for ref in _OPEN if ref() is not None and not ref().closed]  # type: ignore[union-attr]
    return len(_OPEN)


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal (a closed or file-less stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


class Stages:
    """The stages of one piece of work, each named as it begins::

        step = Stages("verify", total=3)
        step("alignment phase")
        ...
        step.close()

    On a terminal: one tqdm bar for the work, the current stage beside it. Elsewhere: one line per
    stage, with its number, the total and the time since the work began; the outermost work ends
    with a line saying how long it took. ``stream`` is read when the work begins (default
    ``sys.stderr``, written only inside `shown_progress`; a stream passed is always written)."""

    def __init__(self, desc: str, total: int | None = None, stream: IO[str] | None = None):
        self.desc, self.total, self.count = desc, total, 0
        self.shown = stream is not None or _SHOWN[0]
        self.stream = sys.stderr if stream is None else stream
        self.started = time.monotonic()
        self.closed = False
        self.depth = _depth()
        self.bar = (
            tqdm(total=total, desc=desc, unit="stage", leave=False, file=self.stream, dynamic_ncols=True)
            if self.shown and is_terminal(self.stream)
            else None
        )
        _OPEN.append(weakref.ref(self))

    def __call__(self, what: str = "") -> None:
        """Begin the next stage (the one before it is done)."""
        self.count += 1
        if self.bar is not None:
            self.bar.update(self.count - 1 - self.bar.n)
            self.bar.set_postfix_str(what)
            return
        if not self.shown:
            return
        counter = f"{self.count}/{self.total}" if self.total else f"{self.count}"
        line = f"{'  ' * self.depth}{self.desc} {counter}{': ' + what if what else ''} [{self.elapsed()}]"
        print(line, file=self.stream, flush=True)

    def elapsed(self) -> str:
        return _clock(time.monotonic() - self.started)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.bar is not None:
            self.bar.update(self.count - self.bar.n)
            self.bar.close()
        elif self.shown and self.depth == 0 and self.count:
            print(f"{self.desc}: done in {self.elapsed()}", file=self.stream, flush=True)

    def __del__(self) -> None:  # abandoned (an exception): no "done" line, the bar goes
        if not self.closed:
            self.closed = True
            if self.bar is not None:
                self.bar.close()

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress(
    items: Iterable[T], desc: str, label: Callable[[T], str] = str, stream: IO[str] | None = None
) -> Iterator[T]:
    """``items``, one stage each, named by ``label(item)``: where ``tqdm(items, desc=...)`` was."""
    total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
    step = Stages(desc, total, stream)
    try:
        for item in items:
            step(label(item))
            yield item
    finally:
        step.close()
