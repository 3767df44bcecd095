"""64-bit JAX for gdln's computations, switched on by its entry points, never by an import.

The theory's times and losses need float64: closed forms evaluate ``exp(-2 s t / tau)`` over
thousands of epochs, and crossing times are read off curves that differ in the 4th digit. The
CLI (``gdln``), the benchmarks and the test suite call :func:`use_x64` once; library callers
do the same, or wrap their work in ``with x64(): ...``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jax

from gdln.derive.errors import GdlnError


def use_x64() -> None:
    """Switch JAX to 64-bit for the rest of the process."""
    jax.config.update("jax_enable_x64", True)


def start_backend() -> None:
    """Start JAX's backend now, where a platform that cannot start (``JAX_PLATFORMS=cuda`` without
    a GPU, ``tpu,cpu`` without a TPU, a name JAX does not know) is one line naming
    ``JAX_PLATFORMS``, not a traceback from deep inside the first computation. JAX raises a
    ``RuntimeError``, or for a platform whose plugin is not installed an ``AssertionError``."""
    try:
        jax.devices()
    except (RuntimeError, AssertionError) as error:
        platforms = os.environ.get("JAX_PLATFORMS", "")
        reason = str(error).split(" (set JAX_PLATFORMS", 1)[0].strip() or "no backend starts"
        raise GdlnError(
            f"JAX_PLATFORMS={platforms!r}: JAX cannot start a backend ({reason}); "
            "unset JAX_PLATFORMS, or set it to 'cpu' or to a platform this machine has"
        ) from None


@contextmanager
def x64() -> Iterator[None]:
    """64-bit JAX inside the block; the caller's setting is restored after it."""
    previous = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


#: compilations shorter than this are not written to the persistent cache. JAX's default of 1 s
#: keeps none of the theory's (its flows and closed forms compile in 0.01 to 0.3 s each), and on
#: Section 4 even 0.05 s left 35 of 42 programs to be compiled again on every run.
MIN_CACHED_COMPILE_SECONDS = 0.0


def use_compilation_cache(folder) -> None:
    """Keep XLA's compiled programs in ``folder`` across processes (JAX's persistent cache);
    ``None`` stops it. JAX runs the programs it reads from there unchecked, so a folder that
    another user owns or could write to (:func:`gdln.derive.cache.folder_problem`, the rule the
    derivation cache follows too) is not used: JAX's cache is then off, with one warning."""
    from jax.experimental.compilation_cache import compilation_cache

    from gdln.derive import cache

    if folder is not None:
        found = cache.make_folder(Path(folder))
        if found is not None:
            cache.warn(f"cache folder {folder}", found)
            folder = None
    compilation_cache.reset_cache()  # JAX keeps the folder it first used until told otherwise
    jax.config.update("jax_compilation_cache_dir", None if folder is None else str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_CACHED_COMPILE_SECONDS)
