"""``gdln`` timed in a fresh process: the benchmarks that measure a command as a user runs it
(cold or warm caches) all start it here."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class ProcessTime(NamedTuple):
    """How long one ``gdln`` process took: wall-clock seconds, and CPU seconds (user and system,
    the process's own: a loaded machine stretches the first, not the second)."""

    wall_s: float
    cpu_s: float


def gdln_process(argv: list[str], cache_folder: str | None = None) -> ProcessTime:
    """``python -m gdln ARGV`` in a fresh process from the repository root, its output kept from
    the terminal, with its derivation and compilation caches in ``cache_folder`` (``None``: where
    the environment puts them); a command that fails raises ``CalledProcessError``."""
    from gdln.derive.cache import CACHE_ENV

    env = dict(os.environ) if cache_folder is None else {**os.environ, CACHE_ENV: cache_folder}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gdln", *argv], check=True, capture_output=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ProcessTime(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
