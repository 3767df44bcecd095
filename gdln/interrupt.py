"""Ctrl-C ends ``gdln`` within a moment, at any point, with one line and exit status 130.

Python runs a signal handler only between bytecodes of the main thread, so a ``KeyboardInterrupt``
waits for a compiled JAX program to return (a minute into a sweep's training), prints a traceback
when it lands in an import, and is swallowed when it lands in a garbage-collection callback
(JAX's ``_xla_gc_callback``). So gdln raises none: the C-level handler that Python installs
with any Python handler writes the signal's number to a "wakeup" socket at once, whatever the
main thread is doing, and a watcher thread blocked on that socket ends the process. The watcher
needs the GIL only for a moment, and compiled JAX code and compilation run without it.

Ending the process with ``os._exit`` skips ``finally`` blocks, so the output files being written
(temporary files, :func:`verify.files.write_atomic`) are removed first: an interrupted command
leaves no partial output, and a target it had not yet replaced stays as it was.

This module imports nothing of gdln, JAX or SymPy: it is installed before any of them load.
The ``gdln`` command and ``python -m gdln`` start in :func:`gdln.__main__.main`, which installs
it before it imports the command line, and :func:`install` sets the Python-level handler before
it imports anything more (the socket module, the watcher thread). What comes before is the
interpreter's own start (its ``site`` imports) and the package's ``__init__``, which imports
only the standard library's ``importlib`` and ``typing``: a Ctrl-C there is Python's own, a
``KeyboardInterrupt`` or the default exit by signal. The watcher thread, the first thread the
process starts, is the sign from outside that the handler is in place.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

#: the exit status of a process ended by SIGINT, as a shell reports it (128 + 2)
EXIT_STATUS = 130
MESSAGE = "gdln: interrupted"

_ending = threading.Lock()  # whichever of the handler and the watcher takes it ends the process


def _end() -> None:
    if not _ending.acquire(blocking=False):
        if threading.current_thread() is threading.main_thread():
            threading.Event().wait()  # the watcher is ending the process; the main thread waits for it
        return
    # the partial output first: the temporary files of writes under way (none if no output module loaded)
    files = sys.modules.get("gdln.verify.files")
    if files is not None:
        try:
            files.remove_temporaries()
        except Exception:  # noqa: BLE001 - exiting anyway; a leftover temporary is hidden (dot-named)
            pass
    # os.write, not print: the main thread may be inside a write to sys.stderr and hold its lock
    line = ("\n" if _isatty(2) else "") + MESSAGE + "\n"
    try:
        os.write(2, line.encode())
    except OSError:
        pass
    os._exit(EXIT_STATUS)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _handler(signum, frame) -> None:  # runs in the main thread, between bytecodes
    _end()


def _watch(receiver) -> None:
    while True:
        try:
            data = receiver.recv(64)
        except OSError:  # closed by uninstall()
            return
        if not data:
            return
        if signal.SIGINT in data:  # the socket also hears the other signals Python handles (SIGALRM)
            _end()


class _Installed:
    def __init__(self):
        self.previous_handler = signal.signal(signal.SIGINT, _handler)  # first: a Ctrl-C from here on is ours
        import socket  # after the handler: its import (a few ms, more on a busy machine) is covered too

        self.receiver, sender = socket.socketpair()
        sender.setblocking(False)  # the C handler never blocks on a full socket
        self.sender = sender
        try:
            self.previous_fd = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
        except (ValueError, OSError):
            signal.signal(signal.SIGINT, self.previous_handler)
            self.receiver.close()
            sender.close()
            raise
        threading.Thread(target=_watch, args=(self.receiver,), name="gdln-interrupt", daemon=True).start()

    def uninstall(self) -> None:
        signal.set_wakeup_fd(self.previous_fd)
        signal.signal(signal.SIGINT, self.previous_handler)
        self.sender.close()
        import socket

        try:
            self.receiver.shutdown(socket.SHUT_RDWR)  # wakes the watcher's recv, which then returns
        except OSError:
            pass
        self.receiver.close()


_installed: _Installed | None = None


def install() -> bool:
    """Handle SIGINT as above from now on; ``False`` where it cannot be (not the main thread)."""
    global _installed
    if _installed is not None:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False  # signal handlers belong to the main thread; the caller's stay in place
    try:
        _installed = _Installed()
    except (ValueError, OSError):
        return False
    return True


def uninstall() -> None:
    """Give SIGINT back to the handler (and the wakeup descriptor) that was there before."""
    global _installed
    if _installed is not None:
        _installed.uninstall()
        _installed = None
