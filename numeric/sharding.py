"""Sweeps over seeds sharded across every JAX device.

Seeds are independent, so the seed axis of the initial weights is split over a one-axis
:class:`jax.sharding.Mesh` and the jit-compiled descent runs where its data lies (XLA's SPMD
partitioner splits the batched products along that axis). Each device computes exactly the
products it would compute unsharded, so results are the same seed for seed, bit for bit, whatever
the device count (``tests/test_training_speed.py`` checks with four CPU devices:
``XLA_FLAGS=--xla_force_host_platform_device_count=4``).

On several hosts, call ``jax.distributed.initialize()`` in every process before gdln's entry
point; ``jax.devices()`` then lists every host's devices and the same mesh spans them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def device_count(devices: int | None = None) -> int:
    """How many devices a sweep uses: ``devices``, else every JAX device."""
    available = jax.device_count()
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
    mesh = Mesh(np.array(jax.devices()[:used]), ("seeds",))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec("seeds"))), count


def shard_runs(tree, devices: int):
    """Arrays ``(groups, runs, ...)``, each group's runs split over ``devices`` devices (the run
    count divides evenly); the groups follow one another on every device. One device: as they are."""
    if devices == 1:
        return jax.tree_util.tree_map(jnp.asarray, tree)
    mesh = Mesh(np.array(jax.devices()[:devices]), ("runs",))
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(None, "runs")))
