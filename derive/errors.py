"""Errors the toolkit reports to its users as one line, without a traceback."""


class GdlnError(Exception):
    """A problem the user can fix; its message is one line and names what is wrong."""


class SpecError(GdlnError):
    """A spec (file or Python dictionary) that cannot describe a task."""

    def __init__(self, source: str, key: str, problem: str):
        self.source, self.key, self.problem = source, key, problem
        super().__init__(f"{source}: {key}: {problem}")


class DerivationError(GdlnError):
    """A derivation step whose assumptions do not hold for this task."""
