"""The ``gdln`` command and ``python -m gdln``: the Ctrl-C handler first, then the command line.

:mod:`gdln.interrupt` is installed before :mod:`gdln.cli` and its imports load, so a Ctrl-C at
any moment after this module starts ends in one line and exit status 130 (what comes before, the
interpreter's own start, is stated in :mod:`gdln.interrupt`).
"""

import sys


def main() -> int:
    """Install the interrupt handler, then run ``gdln`` on the command line's arguments."""
    from gdln import interrupt

    interrupt.install()
    from gdln.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
