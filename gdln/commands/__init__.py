"""The ``gdln`` commands, one module each: its parser, its runner and its renderer together.

:data:`COMMANDS` lists them in the order ``gdln --help`` shows them."""

from . import (
    align,
    cache,
    derive,
    examples,
    figures,
    find_gates,
    patterns,
    race,
    sweep,
    task,
    training,
    union,
    unique,
    zero_shot,
)

COMMANDS = [
    examples,
    derive,
    race,
    sweep,
    union,
    unique,
    training,
    align,
    find_gates,
    patterns,
    task,
    zero_shot,
    cache,
    figures,
]
