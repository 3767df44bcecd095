"""``gdln``: the command-line entry point.

Bad input ends with one line on stderr naming the file and key, and exit status 2; Ctrl-C, at
any moment, with ``gdln: interrupted`` and exit status 130 (:mod:`gdln.interrupt`).

This module imports only the standard library and :mod:`gdln.interrupt` when it loads: the
interrupt handler is installed before SymPy and JAX load (seconds), and ``gdln --version``
loads neither.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
import warnings

from gdln import interrupt


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gdln")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    from gdln.commands import COMMANDS
    from gdln.commands.arguments import Parser

    parser = Parser(prog="gdln", description="Exact learning dynamics of gated deep linear networks and ReLU networks.")
    parser.add_argument("--version", action="version", version=f"gdln {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    for subcommand in sub.choices.values():  # --no-cache before or after the command
        subcommand.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS, help=NO_CACHE_HELP)
    parser.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    return parser


#: the commands that compute nothing with JAX: they run where no JAX backend starts
WITHOUT_JAX = {"examples", "task", "cache"}

NO_CACHE_HELP = "derive and compile from scratch, reading and writing no cache on disk"


def _use_caches(args, first_process: bool = True) -> None:
    """Derivations and compiled code on disk, unless ``--no-cache`` (``gdln cache`` only looks).
    A cache folder or key that cannot be used leaves both off, with one warning. JAX's compiled
    entries are checked against the digests the last command listed (:func:`cache.flush`) before
    JAX is pointed at them; those that do not match are removed, with one line on stderr."""
    from gdln.derive import cache
    from gdln.numeric.precision import use_compilation_cache

    if args.no_cache or args.command == "cache":
        cache.disable()
        use_compilation_cache(None)
        return
    root = cache.enable()  # also removes the temporaries that interrupted runs left
    if root is not None:  # JAX runs what it reads unchecked: only entries that match their digests
        removed = cache.check_compiled(root / "jax")
        if removed and first_process:  # of several processes, process 0 alone says so
            print(
                f"gdln: removed {removed} compiled {'entry' if removed == 1 else 'entries'} that did not match "
                f"{'its digest; it' if removed == 1 else 'their digests; they'} will be recompiled",
                file=sys.stderr,
            )
        root = cache.cache_root()  # None when an entry could not be removed
    use_compilation_cache(None if root is None else root / "jax")


#: JAX's debugging switches gdln does not support, the error each raises, and why
_JAX_SWITCHES = (
    (
        "JAX_DEBUG_NANS",
        "FloatingPointError",
        "stopped the run at a NaN computed inside a compiled program: gdln computes none on its shipped"
        " examples, so this task or its settings made one (a diverging run, a value out of range);"
        " unset the switch to see the run's own account of it",
    ),
    (
        "JAX_NUMPY_DTYPE_PROMOTION",
        "TypePromotionError",
        "is not supported: gdln mixes integer and float arrays: unset it",
    ),
    (
        "JAX_TRANSFER_GUARD",
        "Disallowed",
        "is not supported: gdln moves arrays between the host and the device implicitly: unset it",
    ),
)


def _jax_switch(error: Exception) -> str | None:
    """One line for an error raised by one of JAX's debugging switches that is set
    (:data:`_JAX_SWITCHES`), else ``None``: the error is not the switch's."""
    from gdln.commands.arguments import printable

    text = f"{type(error).__name__}: {error}"
    for variable, sign, why in _JAX_SWITCHES:
        if os.environ.get(variable, "").strip().lower() not in ("", "0", "false", "standard", "allow") and sign in text:
            return f"{variable}={printable(os.environ[variable])} {why}"
    return None


def main(argv=None) -> int:
    """Run ``gdln`` with ``argv`` (default: the command line). Called without ``argv``, as the
    program's entry point, it keeps its Ctrl-C handler to the end of the process; called with
    ``argv``, from another program, it gives the caller's handler back when it returns."""
    installed = interrupt.install()  # first: a Ctrl-C from here on ends in one line, exit status 130
    try:
        if _asks_version(sys.argv[1:] if argv is None else argv):
            print(f"gdln {_version()}")  # without the parser, which loads the commands (SymPy, JAX)
            raise SystemExit(0)  # as argparse's --version action ends
        return _run(argv)
    finally:
        if installed and argv is not None:
            interrupt.uninstall()


def _asks_version(argv) -> bool:
    """Whether ``gdln``'s own options, before the command, include ``--version``."""
    for arg in argv:
        if arg == "--version":
            return True
        if arg == "--" or not arg.startswith("-"):
            return False
    return False


def _run(argv) -> int:
    args = build_parser().parse_args(argv)  # --help ends here, before SymPy and JAX load
    refused = _address_space_refused()  # before numpy loads OpenBLAS, which would hang under it
    if refused is not None:
        print(f"gdln: error: {refused}", file=sys.stderr)
        return 2

    from gdln.commands.arguments import printable
    from gdln.derive import cache
    from gdln.derive.errors import GdlnError
    from gdln.derive.spec import MAX_EPOCHS, MAX_SEEDS
    from gdln.numeric.precision import start_backend, use_x64
    from gdln.verify.checks import GdlnWarning
    from gdln.verify.progress import shown_progress

    use_x64()  # gdln computes in 64-bit; importing its packages does not switch it on
    first_process = True
    if args.command not in WITHOUT_JAX:
        try:
            join = getattr(args, "join_processes", None)
            if join is not None:  # a run of several processes starts its runtime before the backend
                join(args)
            start_backend()
        except GdlnError as error:
            print(f"gdln: error: {printable(_one_line(error))}", file=sys.stderr)
            return 2
        from gdln.numeric.processes import is_first_process

        first_process = is_first_process()  # of several, process 0 alone shows progress and warnings
    source = getattr(args, "spec", None) or "gdln"
    # warnings are printed after the output, one line each, and only when the command succeeds
    # (an error is always exactly one line); --strict makes gdln's own warnings errors, never a
    # cache's (it only saves time)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _use_caches(args, first_process)
        for flag, limit in (("seeds", MAX_SEEDS), ("epochs", MAX_EPOCHS)):
            value = getattr(args, flag, None)
            if value is not None and value < 1:
                print(f"gdln: error: --{flag} must be a positive integer, got {value}", file=sys.stderr)
                return 2
            if value is not None and value > limit:
                print(f"gdln: error: --{flag}: {value} is above the limit of {limit}", file=sys.stderr)
                return 2
        if getattr(args, "strict", False):
            warnings.simplefilter("error", GdlnWarning)
        try:
            with shown_progress(first_process):  # the library is silent unless asked; the command shows its stages
                args.run(args)
                sys.stdout.flush()  # a failure to write the output (a full disk) is raised here, not at exit
            cache.flush()
        except (GdlnError, GdlnWarning) as error:
            print(f"gdln: error: {printable(_one_line(error))}", file=sys.stderr)
            return 2
        except RecursionError:
            print(
                f"gdln: error: {printable(source)}: input nested too deeply to process (RecursionError)",
                file=sys.stderr,
            )
            return 2
        except MemoryError:  # the machine's memory or the process's limit, not a number in the spec
            print(f"gdln: error: {_out_of_memory()}", file=sys.stderr)
            return 2
        except OverflowError as error:
            print(
                f"gdln: error: {printable(source)}: numbers too large: {type(error).__name__}: "
                + printable(_one_line(error)),
                file=sys.stderr,
            )
            return 2
        except KeyboardInterrupt:  # SIGINT is handled by gdln.interrupt; a caller's own handler may raise this
            print(interrupt.MESSAGE, file=sys.stderr)
            return interrupt.EXIT_STATUS
        except BrokenPipeError:  # output piped into a reader that stopped early
            _drop_stdout()
            return 0
        except OSError as error:  # stdout on a full disk (ENOSPC), or another system call that failed
            if error.errno in _OUTPUT_ERRNOS:
                _drop_stdout()
                what = "cannot write the output"
            else:
                what = f"{printable(source)}: {type(error).__name__}"
            print(f"gdln: error: {what}: {printable(error.strerror or _one_line(error))}", file=sys.stderr)
            return 2
        # last: every error above keeps its own handler
        except Exception as error:  # a debugging switch of JAX's own that gdln does not support: one line
            said = _jax_switch(error)
            if said is None:
                raise
            print(f"gdln: error: {said}", file=sys.stderr)
            return 2
    shown = set()
    for warning in caught if first_process else ():
        text = _one_line(warning.message)
        if issubclass(warning.category, (GdlnWarning, cache.CacheWarning)) and text not in shown:
            shown.add(text)
            print(f"gdln: warning: {printable(text)}", file=sys.stderr)
    return 0


#: the least address space (``ulimit -v``) gdln starts under: below it the native libraries it
#: loads hang or abort before any Python code can answer (measured with ``ulimit -v``: at 0.67 and
#: 1.43 GiB OpenBLAS's start retries a failed allocation forever, at 1.53 and 1.62 GiB the process
#: aborts; from 1.72 GiB a race of XoR runs, and from 2 GiB its checked sweep)
MIN_ADDRESS_SPACE = 2 * 2**30


def _address_space_limit() -> int | None:
    """The process's address-space limit (``ulimit -v``) in bytes, ``None`` where there is none."""
    try:
        import resource
    except ImportError:  # not on every platform
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if limit == resource.RLIM_INFINITY else limit


def _limit_text(limit: int) -> str:
    return f"{limit / 2**30:.3g} GiB (ulimit -v {limit // 1024})"


def _address_space_refused() -> str | None:
    """Why gdln does not start under this process's address-space limit, ``None`` where it does."""
    limit = _address_space_limit()
    if limit is None or limit >= MIN_ADDRESS_SPACE:
        return None
    return (
        f"this process's address-space limit of {_limit_text(limit)} is under the "
        f"{MIN_ADDRESS_SPACE / 2**30:.3g} GiB gdln needs to start (the native libraries it loads hang or abort "
        "below it): raise the limit"
    )


def _out_of_memory() -> str:
    """What ran out when a command raised ``MemoryError``: the process's address-space limit
    (``ulimit -v``) where one is set, else the machine's memory."""
    limit = _address_space_limit()
    if limit is not None:
        return (
            f"out of memory under this process's address-space limit of {_limit_text(limit)}: "
            "raise the limit, or run fewer seeds, units or grid points"
        )
    return "out of memory (MemoryError): run fewer seeds, units or grid points, or on a larger machine"


#: the errors of a write to a file that cannot take more (a full disk, a quota, a size limit, a
#: failing device)
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _drop_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's flush at exit, of what could
    not be written, adds no second message ("Exception ignored ...") and no exit status 120."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a caller's own stdout object)
        pass


def _one_line(error) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return " ".join(lines) or type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
