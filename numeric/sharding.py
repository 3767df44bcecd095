"""Sweeps over seeds sharded across every JAX device, and independent programs run one per core
(:func:`on_cores`).

Seeds are independent, so the seed axis of the initial weights is split over a one-axis
:class:`jax.sharding.Mesh` and the jit-compiled descent runs where its data lies (XLA's SPMD
partitioner splits the batched products along that axis). Each device computes exactly the
products it would compute unsharded, so results are the same seed for seed, bit for bit, whatever
the device count (``tests/test_training_speed.py`` checks with four CPU devices:
``XLA_FLAGS=--xla_force_host_platform_device_count=4``).

Only this process's own devices are used (``jax.local_devices()``): in a run of several
processes (:mod:`numeric.processes`), each shards its own share of the work over its devices,
and the processes exchange results, not arrays.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

#: the cores this process may run on
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def on_cores(
    function: Callable[[_Item], _Result], items: Iterable[_Item], *, first_alone: bool = False
) -> Iterator[_Result]:
    """``function(item)`` of every item, yielded in order, run in threads one per core
    (:data:`CORES`) at a time: JAX releases the interpreter while a program runs, and on 2 CPU
    cores one batch's program alone kept about 1.3 of them busy. At most one result more than
    there are cores waits for the caller, so a caller that reduces each result as it comes never
    holds them all. With ``first_alone`` the first item runs before any other starts (it compiles
    the program the others share). With one core, or one item, no thread is started."""
    items = list(items)
    if first_alone and items:
        yield function(items[0])
        items = items[1:]
    if CORES == 1 or len(items) <= 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(min(CORES, len(items))) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) > CORES:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def device_count(devices: int | None = None) -> int:
    """How many devices a sweep uses: ``devices``, else every device of this process."""
    available = jax.local_device_count()
    if devices is None:
        return available
    if not 1 <= devices <= available:
        raise ValueError(f"devices must be between 1 and {available}, got {devices}")
    return devices


def pad_seeds(tree, multiple: int):
    """Arrays whose leading axis is the seed, padded with copies of the first seed to a multiple
    of ``multiple`` seeds (the copies' results are dropped by the caller)."""
    count = int(jax.tree_util.tree_leaves(tree)[0].shape[0])
    extra = -(-count // multiple) * multiple - count
    if extra == 0:
        return tree
    return jax.tree_util.tree_map(
        lambda a: np.concatenate([np.asarray(a), np.repeat(np.asarray(a)[:1], extra, axis=0)]), tree
    )


def shard_seeds(tree, devices: int | None = None):
    """``(tree, count)``: arrays whose leading axis is the seed, split over ``devices`` devices.

    A seed count that does not divide evenly is padded with copies of the first seed (their
    results are dropped: slice every output to ``[:count]``). With one device nothing moves."""
    leaves = jax.tree_util.tree_leaves(tree)
    count = int(leaves[0].shape[0])
    used = device_count(devices)
    if used == 1:
        return tree, count
    tree = pad_seeds(tree, used)
    mesh = Mesh(np.array(jax.local_devices()[:used]), ("seeds",))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec("seeds"))), count


def shard_runs(tree, devices: int):
    """Arrays ``(groups, runs, ...)``, each group's runs split over ``devices`` devices (the run
    count divides evenly); the groups follow one another on every device. One device: as they are."""
    if devices == 1:
        return jax.tree_util.tree_map(jnp.asarray, tree)
    mesh = Mesh(np.array(jax.local_devices()[:devices]), ("runs",))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(None, "runs")))


#: a batch of runs that shrinks as its runs finish (:func:`shrunk_batch_size`) never shrinks below
#: this many: a smaller one saves little arithmetic, and each new size is one more program to
#: compile (or read back from the cache) per process
SMALLEST_BATCH = 64


def shrunk_batch_size(alive: int, size: int) -> int:
    """Runs per compiled call when ``alive`` runs are still moving in a batch of ``size``: the
    same size until the live runs fill at most a quarter of it, then halved for as long as they
    fit in half (never below :data:`SMALLEST_BATCH`). A batch that only loses a few runs keeps its
    compiled program; one that loses most of them moves to a smaller one, so runs that differ
    tenfold in length no longer all run as long as the longest."""
    if alive > size // 4:
        return size
    while alive <= size // 2 and size // 2 >= SMALLEST_BATCH:
        size //= 2
    return size
