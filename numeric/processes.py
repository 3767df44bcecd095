"""Work shared out over the processes of JAX's multi-controller runtime (several hosts, or
several processes on one host), each running the same ``gdln`` command.

:func:`join_processes` connects them through JAX's coordinator (``jax.distributed``); the CLI
calls it once, after switching 64-bit on and before JAX's backend starts, never an import.
Each process then takes its :func:`process_share` of the work, trains it on its own devices
(:mod:`numeric.sharding` uses the local devices only), and :func:`gather_json` hands every
process's results to all of them. In a process that joined no others, the share is everything
and the gather is the value itself: no collective runs.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time
from typing import Any

import jax
import numpy as np

from gdln.derive.errors import GdlnError

#: seconds a process waits for the coordinator (process 0) to answer, as JAX waits by default
JOIN_TIMEOUT_S = 300
#: JAX's variable for the address process 0's coordinator listens on
BIND_ENV = "JAX_COORDINATOR_BIND_ADDRESS"
#: seconds between two attempts to reach the coordinator
JOIN_RETRY_S = 0.5
#: seconds a process waits in :func:`gather_json` for the others to finish their share (one
#: week; the coordination service takes the wait in milliseconds, as a 32-bit integer)
GATHER_TIMEOUT_S = 7 * 24 * 3600
#: characters of JSON text in one entry of the key-value store
GATHER_PART_CHARS = 4 * 2**20
#: numbers the gathers of this process in order, so that each has its own keys
_GATHERS = itertools.count()


def split_address(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (an IPv6 host in brackets: ``[::1]:1234``).

    Raises:
        ValueError: for text that is not such an address."""
    host, sep, port = address.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} is not HOST:PORT with a port from 1 to 65535")
    return host, int(port)


def _wait_for_coordinator(address: str, timeout: float) -> None:
    """Return once a connection to ``address`` opens; a :class:`GdlnError` after ``timeout``
    seconds. JAX's own client aborts the whole process (no exception) when it cannot register
    with the coordinator, so a process other than 0 looks first."""
    host, port = split_address(address)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=JOIN_RETRY_S):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise GdlnError(f"no coordinator answers within {timeout:g} s ({error}); process 0 starts it") from None
            time.sleep(JOIN_RETRY_S)


def _bind(coordinator: str | None) -> str | None:
    """Where process 0 serves the coordinator: the address the run was given (``None``, JAX's
    choice, where JAX reads it from the cluster). JAX's default listens on every interface, and
    its coordination service authenticates no client: any host that reached the port could join
    as a process and post results. ``$JAX_COORDINATOR_BIND_ADDRESS``, JAX's own setting, still
    wins (a coordinator behind a forwarded port binds another address than the one dialled)."""
    if coordinator is None:
        return None
    return os.environ.get(BIND_ENV) or coordinator


def join_processes(
    coordinator: str | None = None,
    count: int | None = None,
    process_id: int | None = None,
    *,
    timeout: float = JOIN_TIMEOUT_S,
) -> None:
    """Join this process to the others of a multi-process run (``jax.distributed.initialize``).

    Args:
        coordinator: ``HOST:PORT`` of process 0, which serves the coordinator there, listening
            on that host's address only (:func:`_bind`).
        count: the number of processes.
        process_id: this process's number, from 0 to ``count - 1``.
        timeout: seconds a process waits for the coordinator.

    With all three ``None``, JAX reads them from the cluster environment it detects (SLURM,
    Open MPI, Kubernetes, Cloud TPU). Call before anything starts JAX's backend.

    Raises:
        GdlnError: one line, when the run cannot be joined (no cluster found, a port in use,
            no coordinator answering)."""
    explicit = (coordinator, count, process_id)
    if any(v is None for v in explicit) and any(v is not None for v in explicit):
        raise ValueError("give the coordinator, the process count and the process id together, or none of them")
    if process_id is not None and process_id > 0:
        _wait_for_coordinator(coordinator, timeout)  # type: ignore[arg-type]
    try:
        jax.distributed.initialize(
            coordinator,
            count,
            process_id,
            initialization_timeout=int(timeout),
            coordinator_bind_address=_bind(coordinator),
        )
    except (RuntimeError, ValueError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise GdlnError(f"cannot join the processes of the run ({reason})") from None


def process_share(count: int) -> np.ndarray:
    """The positions ``0 .. count - 1`` of the work this process takes: every
    ``jax.process_count()``-th, starting at its index. Shares differ in size by one at most,
    and whichever process takes an item, it is the same item, so a result that depends only on
    its item does not depend on the number of processes."""
    return share_of(jax.process_index(), jax.process_count(), count)


def share_of(process: int, processes: int, count: int) -> np.ndarray:
    """The positions of the work that ``process`` of ``processes`` takes (:func:`process_share`):
    what it must send back, and nothing else."""
    return np.arange(process, count, processes)


def is_first_process() -> bool:
    """Whether this process is process 0, the one that writes a multi-process run's output."""
    return jax.process_index() == 0


def _coordination_client():
    """The client of JAX's coordination service, whose key-value store carries the gathered
    results: it needs no collective on the devices (on CPU, the Gloo collectives that
    ``multihost_utils.process_allgather`` starts print to stdout, which carries the report).
    JAX has no public name for it; :func:`join_processes` made it."""
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("jax.distributed is not initialized: no coordination service to gather through")
    return client


def gather_json(value: Any) -> list[Any]:
    """Every process's ``value`` (anything ``json`` writes), in process order, on every process.

    Travels through the coordination service's key-value store as JSON text, in which a float
    is written as its shortest exact representation, so every number comes back bit for bit.
    Every process must call this the same number of times; each waits for the others up to
    :data:`GATHER_TIMEOUT_S` (a process that dies ends the run sooner: JAX stops the others
    when its heartbeats stop). One process: ``[value]`` read back from its JSON text, with no
    service, so that the values have the same types (lists, plain floats) whatever the number
    of processes. This process's own entry is always its ``value``, never what the store holds
    under its number; the others' are only well-formed JSON: the caller checks their content.

    Raises:
        GdlnError: one line naming the process, when its entry is not JSON text, or when this
            process's keys were written by another client first."""
    text = json.dumps(value)
    if jax.process_count() == 1:
        return [json.loads(text)]
    client = _coordination_client()
    call = next(_GATHERS)
    me = jax.process_index()
    _post(client, f"gdln/gather/{call}/{me}", text)
    found = []
    for process in range(jax.process_count()):
        found.append(json.loads(text) if process == me else _read(client, f"gdln/gather/{call}", process))
    return found


def _post(client, here: str, text: str) -> None:
    """``text`` under the keys ``here/0``, ``here/1``, ... and their number under ``here/parts``."""
    parts = [text[i : i + GATHER_PART_CHARS] for i in range(0, len(text), GATHER_PART_CHARS)] or [""]
    try:
        for k, part in enumerate(parts):
            client.key_value_set(f"{here}/{k}", part)
        client.key_value_set(f"{here}/parts", str(len(parts)))
    except RuntimeError as error:  # the store refuses to overwrite a key: someone else wrote it first
        reason = " ".join(str(error).split()) or type(error).__name__
        raise GdlnError(f"process {jax.process_index()} cannot post its results ({reason})") from None


def _read(client, call: str, process: int) -> Any:
    """The value that ``process`` posted under ``call`` (:func:`_post`), parsed."""
    timeout_ms = GATHER_TIMEOUT_S * 1000
    there = f"{call}/{process}"
    count = client.blocking_key_value_get(f"{there}/parts", timeout_ms)
    if not (count.isascii() and count.isdigit()) or int(count) < 1:
        raise GdlnError(f"process {process} posted {count[:40]!r} as its number of parts, not a positive integer")
    text = "".join(client.blocking_key_value_get(f"{there}/{k}", timeout_ms) for k in range(int(count)))
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise GdlnError(f"process {process} posted results that are not JSON text ({error})") from None
