"""The options of a command whose work several processes share on JAX's multi-controller
runtime (``gdln sweep --check``): ``--processes``, ``--process-id`` and ``--coordinator``,
each read from an environment variable when the flag is not given, and :func:`join_from_arguments`,
which the CLI calls once, after switching 64-bit on and before JAX's backend starts."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from gdln.derive.errors import GdlnError

PROCESSES_ENV = "GDLN_PROCESSES"
PROCESS_ID_ENV = "GDLN_PROCESS_ID"
COORDINATOR_ENV = "GDLN_COORDINATOR"
#: ``--processes auto``: the count, this process's id and the coordinator from the cluster
#: environment JAX detects (SLURM, Open MPI, Kubernetes, Cloud TPU)
AUTO = "auto"


def add_process_arguments(p) -> None:
    group = p.add_argument_group(
        "several processes",
        "share the checked points over processes on JAX's multi-controller runtime, one command"
        " per process; process 0 alone prints and writes",
    )
    group.add_argument(
        "--processes",
        metavar="N|auto",
        help="share the checked points over N processes, or 'auto': the number, this process's id and the"
        f" coordinator from the cluster environment JAX detects (SLURM, Open MPI); default ${PROCESSES_ENV}, else 1",
    )
    group.add_argument(
        "--process-id",
        metavar="I",
        help=f"this process's number, 0 to N-1, with --processes N (default ${PROCESS_ID_ENV})",
    )
    group.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        help="where process 0 serves the coordinator, listening on that host only, with --processes N"
        f" (default ${COORDINATOR_ENV}); JAX's coordinator authenticates no one: a trusted network only",
    )
    p.set_defaults(join_processes=join_from_arguments)


@dataclass(frozen=True)
class ProcessSettings:
    """How this process joins a run: all ``None`` to read them from the cluster environment."""

    coordinator: str | None
    count: int | None
    process_id: int | None


def _setting(args, flag: str, env: str) -> tuple[str | None, str]:
    """The flag's value, else the environment variable's, and the name to cite in an error."""
    value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
    if value is not None:
        return value, flag
    return os.environ.get(env) or None, env


def _integer(text: str, name: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise GdlnError(f"{name}: {text!r} is not {what}") from None


def process_settings(args) -> ProcessSettings | None:
    """How this process joins a run of several, from its flags and environment; ``None`` for a
    run of one process.

    Raises:
        GdlnError: one line naming the flag or environment variable, for values that do not
            describe a run (an id out of range, a coordinator that is not ``HOST:PORT``)."""
    from gdln.numeric.processes import split_address

    processes, processes_name = _setting(args, "--processes", PROCESSES_ENV)
    process_id, id_name = _setting(args, "--process-id", PROCESS_ID_ENV)
    coordinator, coordinator_name = _setting(args, "--coordinator", COORDINATOR_ENV)
    if processes is not None and processes.strip() == AUTO:
        for given, name in ((process_id, id_name), (coordinator, coordinator_name)):
            if given is not None:
                raise GdlnError(f"{name}: is read from the cluster environment with --processes {AUTO}")
        return ProcessSettings(None, None, None)
    count = 1 if processes is None else _integer(processes, processes_name, f"a positive integer or {AUTO!r}")
    if count < 1:
        raise GdlnError(f"{processes_name}: {count} is not a positive integer or {AUTO!r}")
    if count == 1:
        for given, name in ((process_id, id_name), (coordinator, coordinator_name)):
            if given is not None:
                raise GdlnError(f"{name}: needs --processes N with N above 1")
        return None
    if process_id is None or coordinator is None:
        missing = "--process-id" if process_id is None else "--coordinator"
        env = PROCESS_ID_ENV if process_id is None else COORDINATOR_ENV
        raise GdlnError(f"{processes_name}: {count} processes need {missing} (or ${env}) too")
    index = _integer(process_id, id_name, "an integer")
    if not 0 <= index < count:
        raise GdlnError(f"{id_name}: {index} is not between 0 and {count - 1}")
    try:
        split_address(coordinator)
    except ValueError as error:
        raise GdlnError(f"{coordinator_name}: {error}") from None
    return ProcessSettings(coordinator.strip(), count, index)


def join_from_arguments(args) -> None:
    """Join the run that ``args`` and the environment describe (:func:`process_settings`);
    nothing for a run of one process."""
    from gdln.numeric.processes import join_processes

    settings = process_settings(args)
    if settings is None:
        return
    if settings.process_id == 0:  # it blocks until every process joins: say for what, and how long
        _say_waiting(settings)
    try:
        join_processes(settings.coordinator, settings.count, settings.process_id)
    except GdlnError as error:
        if settings.coordinator is None:
            raise GdlnError(
                f"--processes {AUTO}: {error}; JAX reads the run from a SLURM, Open MPI, Kubernetes or Cloud TPU job"
            ) from None
        raise GdlnError(f"--coordinator {settings.coordinator}: {error}") from None


def _say_waiting(settings: ProcessSettings) -> None:
    from gdln.commands.arguments import printable
    from gdln.numeric.processes import JOIN_TIMEOUT_S

    print(
        f"gdln: process 0 serves the coordinator at {printable(str(settings.coordinator))}, waiting up to"
        f" {JOIN_TIMEOUT_S} s for the {settings.count} processes of the run to join",
        file=sys.stderr,
        flush=True,
    )
