"""The ``gdln`` commands, one module each: its parser, its runner and its renderer together. The
modules that are no command hold what several share: ``arguments``, ``output``, ``patterns`` and
``processes`` (the options of a run shared over processes).

:data:`COMMANDS` lists them in the order ``gdln --help`` shows them."""

from . import (
    align,
    cache,
    derive,
    examples,
    figures,
    find_gates,
    lemma,
    race,
    realizable,
    simulate,
    sweep,
    task,
    union,
    unique,
    verify,
    zero_shot,
)

COMMANDS = [
    examples,
    derive,
    race,
    sweep,
    union,
    unique,
    simulate,
    verify,
    align,
    find_gates,
    realizable,
    lemma,
    task,
    zero_shot,
    cache,
    figures,
]
